// The parent side of the runner protocol (documented in child/runner_main.cpp): writes the
// request into a memfd (its buffers laid out by buffers.cpp), spawns ollie-runner,
// enforces the timeout, turns how the child ended into an Outcome, reads results back.
#include "runner/runner.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <thread>
#include <tuple>

#include "runner/buffers.h"
#include "runner/child/protocol.h"
#include "support/error.h"
#include "support/process.h"
#include "support/random.h"
#include "support/sandbox.h"
#include "support/strings.h"

namespace ollie::runner {

namespace {

namespace proto = protocol;
using namespace detail;  // buffers.h
using process::Fd;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail_errno(const std::string& what) {
  throw UserError("runner: " + what + ": " + std::strerror(errno));
}

std::string default_runner_path() {
  std::vector<char> buf(4096);
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "ollie-runner";
  std::string exe(buf.data(), static_cast<size_t>(n));
  auto slash = exe.rfind('/');
  return slash == std::string::npos ? "ollie-runner" : exe.substr(0, slash + 1) + "ollie-runner";
}

// The entry symbol must be a C identifier: dlsym would accept anything, but nothing else
// can be an extern "C" function the adapter defined.
void check_entry_symbol(const std::string& name) {
  bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name)
    ok = ok &&
         (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
  if (!ok)
    throw UserError("runner: the entry symbol '" + name +
                    "' is not a C identifier; name an extern \"C\" function such as ollie_entry");
}

// The kernels a request names, with their .so paths in the runner's jail.
struct Named {
  std::string so_path;
  std::string entry_symbol;
};

// 64 random bits (never 0) that the child's report must carry back: a report the kernel
// forges lacks them (protocol.h).
uint64_t run_nonce() {
  uint64_t nonce = 0;
  while (nonce == 0)
    if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) fail_errno("getrandom");
  return nonce;
}

// Creates the memfd: the header, the inputs and poisoned outputs. `fill(base)` stores
// the request's values into the buffers, writing every byte of each buffer of role
// `filled`; every other byte after the header is 0xFF.
template <typename Fill>
Fd make_request(const std::vector<Named>& kernels, const Layout& layout,
                proto::RequestHeader header, const Options& options, Role filled,
                const Fill& fill) {
  Fd fd(memfd_create("ollie-buffers", MFD_CLOEXEC));
  if (fd.get() < 0) fail_errno("memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(layout.total_size)) != 0)
    fail_errno("cannot size the buffer memory");
  Mapping map(fd.get(), layout.total_size, /*populate=*/true);
  char* base = map.base();
  poison_around(base, layout, filled);

  std::memcpy(header.magic, proto::kRequestMagic, sizeof header.magic);
  header.version = proto::kVersion;
  header.n_dims = static_cast<uint32_t>(layout.dims.size() / layout.dims_groups);
  header.total_size = layout.total_size;
  header.header_size = layout.header_size;
  header.path_len = static_cast<uint32_t>(kernels[0].so_path.size());
  header.entry_len = static_cast<uint32_t>(kernels[0].entry_symbol.size());
  if (kernels.size() > 1) {
    header.path2_len = static_cast<uint32_t>(kernels[1].so_path.size());
    header.entry2_len = static_cast<uint32_t>(kernels[1].entry_symbol.size());
  }
  header.n_kernels = static_cast<uint32_t>(kernels.size());
  header.results_offset = layout.results_offset;
  header.flags = proto::kProtect | (options.sandbox ? proto::kSandbox : 0u) |
                 (options.sanitize ? proto::kSanitize : 0u) |
                 (layout.dims_groups > 1 ? proto::kDimsPerCall : 0u);
  if (options.sandbox) {
    header.memory_bytes = options.memory_bytes;
    // CPU time of all threads: the wall limit times the threads that may run, plus slack.
    const double threads =
        options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    header.cpu_seconds = static_cast<uint64_t>(std::ceil(options.timeout_seconds * threads)) + 1;
  }
  // No parent check: in its jail's PID namespace the runner's parent is bwrap, not us, and
  // bwrap's --die-with-parent ends the jail with us.
  header.parent_pid = 0;
  char* at = base;
  auto put = [&at](const void* src, size_t bytes) {
    if (bytes) std::memcpy(at, src, bytes);
    at += bytes;
  };
  put(&header, sizeof header);
  put(layout.buffers.data(), layout.buffers.size() * sizeof(proto::Buffer));
  put(layout.dims.data(), layout.dims.size() * sizeof(int64_t));
  for (const Named& k : kernels) {
    put(k.so_path.data(), k.so_path.size());
    put(k.entry_symbol.data(), k.entry_symbol.size());
  }
  fill(base);
  return fd;
}

// Where the child finds the runner and kernel k inside its jail (the request names the
// latter; the host paths are bound there read-only).
constexpr const char* kRunnerInJail = "/sandbox/runner";
std::string so_path_in_jail(size_t k) { return "/sandbox/k" + std::to_string(k) + ".so"; }
// The fd at which bwrap reads its options (sandbox::command_line_with_args_fd); it closes it
// before starting the runner.
constexpr int kJailArgsFd = proto::kReportFd + 1;

// OMP_NUM_THREADS from our environment when it is a plain count or list ("8", "8,2"), else "".
std::string inherited_thread_count() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (!v || !*v || std::strlen(v) > 64) return "";
  for (const char* c = v; *c; ++c)
    if (!(*c >= '0' && *c <= '9') && *c != ',') return "";
  return v;
}

// The child's whole environment, the same in every mode (verify, bench, sanitizer): nothing
// of ours (API keys live there) but OMP_NUM_THREADS (Options::threads, else ours when it is
// a plain count), the fixed OpenMP wait policy (threads spin between calls instead of
// sleeping, whatever the user's shell says; the placement variables are never set), and for
// a sanitizer run the runtime preloaded and its options (the child removes these three from
// its environment once the kernel is loaded).
std::vector<std::string> child_environment(const Options& options) {
  std::vector<std::string> env;
  const std::string threads =
      options.threads > 0 ? std::to_string(options.threads) : inherited_thread_count();
  if (!threads.empty()) env.push_back("OMP_NUM_THREADS=" + threads);
  env.push_back("OMP_WAIT_POLICY=active");
  if (options.sanitize) {
    const std::string exitcode = "exitcode=" + std::to_string(proto::kSanitizerExitCode);
    // ASan must come first in the library list; the runner itself is not instrumented.
    env.push_back("LD_PRELOAD=" + options.sanitizer_runtime);
    // No leak check (it stops the world with ptrace), no symbolizer (it opens files and
    // may spawn one): frames print as module+offset.
    env.push_back(
        "ASAN_OPTIONS=detect_leaks=0:symbolize=0:abort_on_error=0:disable_coredump=1:color=never:" +
        exitcode);
    env.push_back("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:symbolize=0:color=never:" +
                  exitcode);
  }
  return env;
}

// The runner's jail: the runner and each kernel bound read-only at neutral paths (a kernel
// that does not exist is left out: dlopen reports it), the sanitizer runtime where the jail
// does not show it already, a /proc of the jail's own processes (the runner reads
// /proc/self/statm, ASan /proc/self/maps), nothing else of ours.
sandbox::Jail runner_jail(const std::string& runner, const std::vector<std::string>& so_paths,
                          const Options& options) {
  sandbox::Jail jail;
  jail.read_only.push_back({runner, kRunnerInJail});
  for (size_t k = 0; k < so_paths.size(); ++k)
    jail.read_only_if_present.push_back({so_paths[k], so_path_in_jail(k)});
  if (options.sanitize && !sandbox::visible_in_every_jail(options.sanitizer_runtime))
    jail.read_only.push_back({options.sanitizer_runtime, options.sanitizer_runtime});
  jail.environment = child_environment(options);
  jail.cwd = "/tmp";
  jail.proc = true;
  return jail;
}

// Starts the runner in its jail (bwrap, in its own process group: a kill on timeout reaches
// bwrap, and with it, through --die-with-parent and the PID namespace, everything the kernel
// started) with exactly these fds and no others: 0 /dev/null, 1 our stderr, 2 our stderr or
// `stderr_fd`, the memfd and the report pipe at the protocol's numbers (bwrap passes them
// on; the fd of its options it closes).
pid_t spawn_child(const std::string& runner, const std::vector<std::string>& so_paths, int memfd,
                  int report_fd, int stderr_fd, const Options& options) {
  sandbox::check_available();
  sandbox::ArgsFd jailed = sandbox::command_line_with_args_fd(
      runner_jail(runner, so_paths, options), {kRunnerInJail}, kJailArgsFd);
  process::Command command;
  command.argv = jailed.argv;
  command.environment = std::vector<std::string>{};  // bwrap needs none; the jail has its own
  command.own_group = true;
  command.fds = {process::ChildFd::dev_null(0), process::ChildFd::dup(2, 1)};
  if (stderr_fd >= 0) command.fds.push_back(process::ChildFd::dup(stderr_fd, 2));
  command.fds.push_back(process::ChildFd::dup(memfd, proto::kMemFd));
  command.fds.push_back(process::ChildFd::dup(report_fd, proto::kReportFd));
  command.fds.push_back(process::ChildFd::dup(jailed.fd.get(), kJailArgsFd));
  command.close_from = kJailArgsFd + 1;
  const process::Started started = process::spawn(command);
  if (started.failure) {
    errno = started.failure.error;
    fail_errno("cannot start the runner '" + runner + "' in its sandbox (" + command.argv[0] + ")");
  }
  return started.pid;
}

// A pipe from the child: our reading end non-blocking, the child's end blocking.
process::Pipe child_pipe() {
  process::Pipe pipe;
  if (const process::Failure f = process::open_pipe(pipe, process::NonBlocking::Read)) {
    errno = f.error;
    fail_errno("pipe");
  }
  return pipe;
}

// The start of a sanitizer report in a child's stderr: the ERROR line (ASan) or the
// runtime error line (UBSan) and the lines after it, up to the shadow-byte dump (or the
// summary, or ASan's hints about its options), without
// the "==pid==" prefixes; of each stack, the first frame and those in the kernel's
// library `so_path` (frames print as library+offset: the runtime does not symbolize).
// Empty when there is no report.
std::string sanitizer_report(const std::string& text, const std::string& so_path) {
  size_t at = std::string::npos;
  for (const char* marker : {"ERROR: AddressSanitizer", "runtime error:", "AddressSanitizer",
                             "UndefinedBehaviorSanitizer"})
    if ((at = text.find(marker)) != std::string::npos) break;
  if (at == std::string::npos) return "";
  at = text.rfind('\n', at);
  at = at == std::string::npos ? 0 : at + 1;
  std::string out;
  int lines = 0;
  for (size_t end; at < text.size() && lines < 16 && out.size() < 2000; at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.rfind("Shadow bytes around", 0) == 0 || line.rfind("SUMMARY:", 0) == 0 ||
        line.rfind("HINT:", 0) == 0)
      break;
    if (line.size() > 2 && line[0] == '=' && line[1] == '=') {  // "==1234==ERROR: ..."
      const size_t close = line.find("==", 2);
      if (close != std::string::npos) line.erase(0, close + 2);
    }
    const size_t frame = line.find_first_not_of(' ');
    if (frame == std::string::npos || line.find_first_not_of('=') == std::string::npos) continue;
    const bool in_stack = line[frame] == '#';
    if (in_stack && line.compare(frame, 3, "#0 ") != 0 && line.find(so_path) == std::string::npos)
      continue;
    out += (out.empty() ? "" : "\n") + line;
    ++lines;
  }
  return out;
}

// Exactly one report, carrying the run's nonce (a BadRequest before the child read the
// header carries none). `bytes`: all the report pipe held.
bool genuine_report(const proto::Report& report, size_t bytes, uint64_t nonce) {
  if (bytes != sizeof report + report.message_len) return false;
  return report.nonce == nonce ||
         (report.nonce == 0 &&
          static_cast<proto::ReportStatus>(report.status) == proto::ReportStatus::BadRequest);
}

// Starts the runner on the request in `memfd`, waits for it within the timeout and turns
// how it ended into an Outcome: Ok (with the child's `seconds`) only when it reported
// success and exited cleanly. `what` names the kernel for load errors; `so_paths` are the
// kernels' libraries (the first one's frames a sanitizer report keeps); every report must
// carry `nonce`.
Outcome run_in_jail(const std::string& runner, const std::vector<std::string>& so_paths, int memfd,
                    uint64_t nonce, const std::string& what, const Options& options) {
  process::Pipe report = child_pipe();
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::max(0.0, options.timeout_seconds)));
  // What a sanitizer run's child writes to stderr: the first 64 KiB are kept, the rest
  // is read and dropped (so the child never blocks on a full pipe).
  process::Pipe stderr_pipe;
  if (options.sanitize) stderr_pipe = child_pipe();
  const pid_t pid =
      spawn_child(runner, so_paths, memfd, report.write.get(), stderr_pipe.write.get(), options);
  report.write.reset();
  stderr_pipe.write.reset();
  process::Capture capture(std::move(stderr_pipe.read), size_t{1} << 16);

  Outcome outcome;
  // When the child is gone or out of time, any helpers it forked go with it.
  process::Supervision rules;
  rules.deadline = deadline;
  rules.kill_group_on_exit = true;
  process::Capture* const captures[] = {&capture};
  const bool exited = !process::supervise(pid, nullptr, captures, rules);
  process::kill_group(pid, SIGKILL);
  int wait_status = 0;
  process::reap(pid, wait_status);
  wait_status = sandbox::wait_status_inside(wait_status);  // bwrap's 128 + N: signal N
  capture.read_available();
  // What a kernel writes to stderr ends up in messages and JSON certificates, which must
  // stay valid text.
  const std::string stderr_text = strings::printable(std::move(capture.text()));
  if (WIFEXITED(wait_status) && options.sanitize &&
      WEXITSTATUS(wait_status) == proto::kSanitizerExitCode) {
    outcome.status = Status::Sanitizer;
    outcome.message = sanitizer_report(stderr_text, so_path_in_jail(0));
    if (outcome.message.empty())
      outcome.message = "the runner exited with the sanitizer's exit code " +
                        std::to_string(proto::kSanitizerExitCode) +
                        " but printed no report (stderr: " + stderr_text.substr(0, 500) + ")";
    return outcome;
  }
  // Whatever else ends a sanitizer run badly, what the child printed says more.
  auto with_stderr = [&](Outcome& o) {
    if (options.sanitize && o.status != Status::Ok && !stderr_text.empty())
      o.message += "; its stderr: " + stderr_text.substr(0, 1000);
    return o;
  };
  if (!exited) {
    outcome.status = Status::Timeout;
    char text[128];
    std::snprintf(text, sizeof text, "the kernel did not finish within %g s and was killed",
                  options.timeout_seconds);
    outcome.message = text;
    return with_stderr(outcome);
  }

  // Whatever the child wrote to the report pipe (it has exited; never blocks).
  process::Capture report_capture(std::move(report.read), size_t{1} << 16);
  report_capture.read_available();
  const std::string& report_data = report_capture.text();
  const bool has_report = report_data.size() >= sizeof(proto::Report);
  proto::Report header{};
  if (has_report) std::memcpy(&header, report_data.data(), sizeof header);
  const size_t message_len =
      has_report ? std::min<size_t>(header.message_len, report_data.size() - sizeof header) : 0;
  const std::string message = has_report ? report_data.substr(sizeof header, message_len) : "";
  if (has_report && !genuine_report(header, report_data.size(), nonce)) {
    outcome.status = Status::Tampered;
    outcome.message =
        "the runner's report pipe held a report the runner did not write (a second report, or "
        "one without the run's nonce): the kernel wrote to the report pipe";
    return with_stderr(outcome);
  }

  if (WIFSIGNALED(wait_status)) {
    outcome.signal = WTERMSIG(wait_status);
    const std::string signal_text = process::signal_name(outcome.signal);
    if (outcome.signal == SIGSYS && options.sandbox) {
      outcome.status = Status::Forbidden;
      outcome.message =
          "the kernel made a forbidden system call (files, sockets, processes and exec are "
          "closed to kernels) and was killed by " +
          signal_text;
    } else if (outcome.signal == SIGXCPU && options.sandbox) {
      outcome.status = Status::Timeout;
      outcome.message = "the kernel used up its CPU time and was killed by " + signal_text;
    } else {
      outcome.status = Status::Crash;
      outcome.message = "the kernel was killed by " + signal_text;
    }
    return with_stderr(outcome);
  }
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  if (!has_report || header.magic != proto::kReportMagic) {
    outcome.status = code != 0 ? Status::Crash : Status::ProtocolError;
    outcome.message = "the runner exited with status " + std::to_string(code) +
                      " without reporting" +
                      (code != 0 ? " (the kernel called exit?)" : " (the kernel called exit(0)?)");
    return with_stderr(outcome);
  }
  switch (static_cast<proto::ReportStatus>(header.status)) {
    case proto::ReportStatus::LoadError:
      outcome.status = Status::LoadError;
      outcome.message = "cannot load " + what + ": " + message;
      return with_stderr(outcome);
    case proto::ReportStatus::BadRequest:
      outcome.status = Status::ProtocolError;
      outcome.message = message;
      return with_stderr(outcome);
    case proto::ReportStatus::OutOfMemory:
      outcome.status = Status::OutOfMemory;
      outcome.message = message;
      return with_stderr(outcome);
    case proto::ReportStatus::Tampered:
      outcome.status = Status::Tampered;
      outcome.message = message;
      return with_stderr(outcome);
    case proto::ReportStatus::Ok: break;
    default:
      outcome.status = Status::ProtocolError;
      outcome.message = "the runner sent an unknown report status " + std::to_string(header.status);
      return with_stderr(outcome);
  }
  if (code != 0) {
    outcome.status = Status::Crash;
    outcome.message =
        "the runner exited with status " + std::to_string(code) + " after the kernel returned";
    return with_stderr(outcome);
  }
  outcome.status = Status::Ok;
  outcome.seconds = header.seconds;
  outcome.message = "ok";
  return outcome;
}

// run_in_jail, its message naming the kernels by their paths here, not in the jail.
Outcome execute(const std::string& runner, const std::vector<std::string>& so_paths, int memfd,
                uint64_t nonce, const std::string& what, const Options& options) {
  Outcome outcome = run_in_jail(runner, so_paths, memfd, nonce, what, options);
  for (size_t k = 0; k < so_paths.size(); ++k) {
    const std::string inside = so_path_in_jail(k);
    for (size_t at = 0; (at = outcome.message.find(inside, at)) != std::string::npos;) {
      outcome.message.replace(at, inside.size(), so_paths[k]);
      at += so_paths[k].size();
    }
  }
  return outcome;
}

std::string find_runner(const Options& options) {
  const std::string runner =
      options.runner_path.empty() ? default_runner_path() : options.runner_path;
  if (access(runner.c_str(), X_OK) != 0)
    throw UserError("runner: no runner executable at '" + runner +
                    "'; build the ollie-runner target next to ollie, or set the runner path");
  if (options.sanitize &&
      (options.sanitizer_runtime.empty() || access(options.sanitizer_runtime.c_str(), R_OK) != 0))
    throw UserError("runner: a sanitizer run needs the AddressSanitizer runtime to preload, and '" +
                    options.sanitizer_runtime +
                    "' is not a readable file; install libasan for the compiler " +
                    "(its path is `g++ -print-file-name=libasan.so`)");
  return runner;
}

// Fresh mode's region after the times: per input its element bytes, then the log.
uint64_t fresh_region_bytes(const proto::RequestHeader& h) {
  return proto::fresh_log_offset(h) - h.fresh_offset +
         uint64_t{h.n_kernels} * h.check_calls * proto::fresh_entry_bytes(h);
}

// The inputs a fresh call saw: set `set` rotated, then the points from the next set.
std::vector<interp::Tensor> fresh_inputs(const std::vector<std::vector<interp::Tensor>>& staged,
                                         const CheckedCall& call) {
  std::vector<interp::Tensor> inputs = staged[static_cast<size_t>(call.set)];
  const auto& next = staged[(static_cast<size_t>(call.set) + 1) % staged.size()];
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto& data = inputs[i].data;
    std::rotate(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(call.rotation[i]),
                data.end());
    for (uint64_t p : call.points[i]) data[p] = next[i].data[p];
  }
  return inputs;
}

// Fresh mode's checked calls from the child's log and check slots (`staged`: the input
// sets as the child copied them), by kernel and round; an error message for a log the
// child cannot have written.
std::string read_checked(const char* base, const Layout& layout, const proto::RequestHeader& h,
                         const std::vector<std::vector<interp::Tensor>>& staged, uint32_t rounds,
                         std::vector<CheckedCall>& checked) {
  const size_t n_in = h.n_inputs, n_out = h.n_outputs, m = h.fresh_points;
  const size_t check0 = n_in + n_out + size_t{h.n_sets} * n_in;
  for (size_t slot = 0; slot < size_t{h.n_kernels} * h.check_calls; ++slot) {
    const char* entry = base + proto::fresh_log_offset(h) + slot * proto::fresh_entry_bytes(h);
    proto::FreshEntry head{};
    std::memcpy(&head, entry, sizeof head);
    if (!head.used) continue;
    if (head.kernel != slot / h.check_calls || head.set >= h.n_sets || head.round >= rounds)
      return "the runner's log of checked calls is corrupt (slot " + std::to_string(slot) + ")";
    CheckedCall call;
    call.kernel = static_cast<int>(head.kernel);
    call.round = static_cast<int>(head.round);
    call.set = static_cast<int>(head.set);
    call.rotation.resize(n_in);
    std::memcpy(call.rotation.data(), entry + sizeof head, n_in * sizeof(uint64_t));
    const char* points = entry + sizeof head + n_in * sizeof(uint64_t);
    for (size_t i = 0; i < n_in; ++i) {
      call.points.emplace_back(m);
      std::memcpy(call.points[i].data(), points + i * m * sizeof(uint64_t), m * sizeof(uint64_t));
      const uint64_t n = staged[0][i].data.size();
      if (n == 0) call.points[i].clear();  // nothing was changed
      bool ok = call.rotation[i] < std::max<uint64_t>(n, 1);
      for (uint64_t p : call.points[i]) ok = ok && p < n;
      if (!ok) return "the runner's log of checked calls names elements out of range";
    }
    call.inputs = fresh_inputs(staged, call);
    for (size_t r = 0; r < n_out; ++r)
      call.outputs.push_back(read_tensor(base, layout, check0 + slot * n_out + r));
    checked.push_back(std::move(call));
  }
  std::sort(checked.begin(), checked.end(), [](const CheckedCall& a, const CheckedCall& b) {
    return std::tie(a.kernel, a.round) < std::tie(b.kernel, b.round);
  });
  return "";
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::LoadError: return "load-error";
    case Status::Crash: return "crash";
    case Status::Timeout: return "timeout";
    case Status::ProtocolError: return "protocol-error";
    case Status::Forbidden: return "forbidden-syscall";
    case Status::OutOfMemory: return "out-of-memory";
    case Status::Sanitizer: return "sanitizer";
    case Status::Tampered: return "tampered";
  }
  return "unknown";
}

Outcome run(const std::string& so_path, const ir::Graph& graph,
            const std::vector<interp::Tensor>& inputs, const Options& options) {
  Outcome outcome =
      run_calls(so_path, graph, std::vector<const std::vector<interp::Tensor>*>{&inputs}, options);
  if (outcome.status == Status::Ok) outcome.outputs = std::move(outcome.call_outputs[0]);
  outcome.call_outputs.clear();
  return outcome;
}

Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<std::vector<interp::Tensor>>& calls, const Options& options) {
  std::vector<const std::vector<interp::Tensor>*> sets;
  for (const auto& inputs : calls) sets.push_back(&inputs);
  return run_calls(so_path, graph, sets, options);
}

Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options) {
  return run_calls(so_path, std::vector<const ir::Graph*>(calls.size(), &graph), calls, options);
}

Outcome run_calls(const std::string& so_path, const std::vector<const ir::Graph*>& graphs,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options) {
  const std::string runner = find_runner(options);
  check_entry_symbol(options.entry_symbol);
  if (calls.empty()) throw UserError("runner: no calls to make");
  if (graphs.size() != calls.size())
    throw UserError("runner: one graph per call (" + std::to_string(graphs.size()) + " for " +
                    std::to_string(calls.size()) + " calls)");
  const ir::Graph& graph = *graphs[0];
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), per_call = n_in + n_out;
  std::vector<Slot> slots;
  std::vector<int64_t> dims;
  bool same_dims = true;
  for (size_t c = 0; c < calls.size(); ++c) {
    const ir::Graph& g = *graphs[c];
    if (g.params.size() != n_in || g.results.size() != n_out || g.dims != graph.dims)
      throw UserError("runner: the calls' graphs must be one spec at other dims");
    check_inputs(g, *calls[c]);
    for (Slot& s : input_slots(g, Role::Input)) slots.push_back(std::move(s));
    for (Slot& s : output_slots(g, Role::Output)) slots.push_back(std::move(s));
    const std::vector<int64_t> d = bound_dims(g);
    same_dims = same_dims && (c == 0 || std::equal(d.begin(), d.end(), dims.begin()));
    dims.insert(dims.end(), d.begin(), d.end());
  }
  if (same_dims) dims.resize(dims.size() / calls.size());
  const size_t groups = same_dims ? 1 : calls.size();
  std::vector<Named> kernels;
  kernels.push_back({so_path_in_jail(0), options.entry_symbol});
  const Layout layout =
      plan(std::move(dims), groups, std::move(slots),
           sizeof(proto::RequestHeader) + kernels[0].so_path.size() + options.entry_symbol.size(),
           0, options.placement);
  proto::RequestHeader header{};
  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_outputs = static_cast<uint32_t>(n_out);
  header.n_calls = static_cast<uint32_t>(calls.size());
  header.nonce = run_nonce();
  Fd memfd = make_request(kernels, layout, header, options, Role::Input, [&](char* base) {
    for (size_t c = 0; c < calls.size(); ++c)
      for (size_t i = 0; i < n_in; ++i)
        store(base + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype,
              (*calls[c])[i].data);
    if (options.plausible_outputs) {
      // Finite, ordinary-looking values instead of the poison: a kernel that skips work
      // when its outputs already look written returns these, and fails.
      random::Xoshiro256 rng(0x5eed);
      for (size_t c = 0; c < calls.size(); ++c)
        for (size_t i = n_in; i < per_call; ++i) {
          const Slot& slot = layout.slots[c * per_call + i];
          std::vector<double> values(static_cast<size_t>(ir::element_count(slot.shape)));
          for (double& x : values)
            x = slot.dtype == ir::DType::Bool ? 1.0 : std::round(random::normal(rng) * 4) / 4;
          store(base + layout.buffers[c * per_call + i].offset, slot.dtype, values);
        }
    }
  });

  Outcome outcome =
      execute(runner, {so_path}, memfd.get(), header.nonce, "'" + so_path + "'", options);
  if (outcome.status != Status::Ok) return outcome;
  Mapping map(memfd.get(), layout.total_size);
  // The inputs are read-only to the kernel; that they still hold what was written here is
  // checked here, out of its reach.
  for (size_t c = 0; c < calls.size(); ++c)
    for (size_t i = 0; i < n_in; ++i)
      if (!holds(map.base() + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype,
                 (*calls[c])[i].data)) {
        outcome.status = Status::Tampered;
        outcome.message = "the kernel changed its read-only input '" + graph.params[i].name +
                          "' (call " + std::to_string(c + 1) + ")";
        return outcome;
      }
  if (std::string slack = check_slack(map.base(), layout, graph); !slack.empty()) {
    outcome.status = Status::Crash;
    outcome.message = slack;
    return outcome;
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<interp::Tensor> outputs;
    for (size_t r = 0; r < n_out; ++r)
      outputs.push_back(read_tensor(map.base(), layout, c * per_call + n_in + r));
    outcome.call_outputs.push_back(std::move(outputs));
  }
  return outcome;
}

TimedOutcome time_kernels(const std::vector<Kernel>& kernels, const ir::Graph& graph,
                          const std::vector<std::vector<interp::Tensor>>& input_sets,
                          const Options& options, const TimingOptions& timing) {
  const std::string runner = find_runner(options);
  if (kernels.empty() || kernels.size() > 2)
    throw UserError("runner: time one kernel, or two side by side (" +
                    std::to_string(kernels.size()) + " given)");
  if (input_sets.empty()) throw UserError("runner: timing needs at least one set of inputs");
  if (timing.max_rounds < 1 || timing.min_rounds < 1 || timing.min_rounds > timing.max_rounds ||
      timing.warmup_rounds < 0)
    throw UserError("runner: timing needs 1 <= min rounds <= max rounds and warm-up rounds >= 0");
  if (timing.fresh_inputs && (timing.check_calls < 1 || timing.check_calls > 1000 ||
                              timing.fresh_points < 0 || timing.fresh_points > 100000))
    throw UserError(
        "runner: fresh inputs need 1 to 1000 checked calls and 0 to 100000 points per input");
  std::vector<Named> named;
  uint64_t header_bytes = sizeof(proto::RequestHeader);
  for (const Kernel& k : kernels) {
    check_entry_symbol(k.entry_symbol);
    named.push_back({so_path_in_jail(named.size()), k.entry_symbol});
    header_bytes += named.back().so_path.size() + k.entry_symbol.size();
  }
  for (const auto& inputs : input_sets) check_inputs(graph, inputs);
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), n_sets = input_sets.size();
  std::vector<Slot> slots = input_slots(graph, Role::Input);
  for (Slot& s : output_slots(graph, Role::Output)) slots.push_back(std::move(s));
  for (size_t s = 0; s < n_sets; ++s)
    for (Slot& slot : input_slots(graph, Role::Staged)) slots.push_back(std::move(slot));
  proto::RequestHeader header{};
  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_kernels = static_cast<uint32_t>(kernels.size());
  header.fresh = timing.fresh_inputs ? 1 : 0;
  header.check_calls = timing.fresh_inputs ? static_cast<uint32_t>(timing.check_calls) : 0;
  header.fresh_points = timing.fresh_inputs ? static_cast<uint32_t>(timing.fresh_points) : 0;
  const size_t groups = timing.fresh_inputs ? header.check_calls : n_sets;
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t s = 0; s < groups; ++s)
      for (Slot& slot : output_slots(graph, Role::Check)) slots.push_back(std::move(slot));
  const uint64_t times_bytes =
      sizeof(proto::TimedResults) +
      kernels.size() * static_cast<uint64_t>(timing.max_rounds) * sizeof(double);
  const uint64_t results_bytes =
      times_bytes + (timing.fresh_inputs ? fresh_region_bytes(header) : 0);
  const Layout layout =
      plan(graph, std::move(slots), header_bytes, results_bytes, options.placement);
  if (timing.fresh_inputs) header.fresh_offset = layout.results_offset + times_bytes;

  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_outputs = static_cast<uint32_t>(n_out);
  header.n_calls = 0;
  header.n_sets = static_cast<uint32_t>(n_sets);
  header.warmup = static_cast<uint32_t>(timing.warmup_rounds);
  header.min_rounds = static_cast<uint32_t>(timing.min_rounds);
  header.max_rounds = static_cast<uint32_t>(timing.max_rounds);
  header.budget_seconds = timing.budget_seconds;
  header.flush_bytes = timing.cold ? timing.flush_bytes : 0;
  header.warm_call = timing.warm_call ? 1 : 0;
  header.nonce = run_nonce();
  Options child = options;
  child.steady_openmp = options.steady_openmp || timing.steady_openmp;
  Fd memfd = make_request(named, layout, header, child, Role::Staged, [&](char* base) {
    for (size_t s = 0; s < n_sets; ++s)
      for (size_t i = 0; i < n_in; ++i) {
        const size_t b = n_in + n_out + s * n_in + i;
        store(base + layout.buffers[b].offset, layout.slots[b].dtype, input_sets[s][i].data);
      }
    for (size_t i = 0; timing.fresh_inputs && i < n_in; ++i) {
      const auto bytes = static_cast<uint32_t>(ir::dtype_bytes(layout.slots[i].dtype));
      std::memcpy(base + header.fresh_offset + i * sizeof bytes, &bytes, sizeof bytes);
    }
  });

  std::string what;
  std::vector<std::string> so_paths;
  for (const Kernel& k : kernels) {
    what += (what.empty() ? "'" : " or '") + k.so_path + "' (" + k.entry_symbol + ")";
    so_paths.push_back(k.so_path);
  }
  TimedOutcome timed;
  static_cast<Outcome&>(timed) = execute(runner, so_paths, memfd.get(), header.nonce, what, child);
  if (timed.status != Status::Ok) return timed;
  Mapping map(memfd.get(), layout.total_size);
  // The staged sets the child refilled the live inputs from (and compared them with after
  // every call) are intact.
  for (size_t s = 0; s < n_sets; ++s)
    for (size_t i = 0; i < n_in; ++i) {
      const size_t b = n_in + n_out + s * n_in + i;
      if (!holds(map.base() + layout.buffers[b].offset, layout.slots[b].dtype,
                 input_sets[s][i].data)) {
        timed.status = Status::Tampered;
        timed.message = "the staged copy of input '" + graph.params[i].name + "' (set " +
                        std::to_string(s) + ") changed during the timed run";
        return timed;
      }
    }
  if (std::string slack = check_slack(map.base(), layout, graph); !slack.empty()) {
    timed.status = Status::Crash;
    timed.message = slack;
    return timed;
  }
  proto::TimedResults results{};
  std::memcpy(&results, map.base() + layout.results_offset, sizeof results);
  if (results.rounds > static_cast<uint32_t>(timing.max_rounds)) {
    timed.status = Status::ProtocolError;
    timed.message = "the runner reported more rounds than allowed";
    return timed;
  }
  if (results.fresh_errno != 0) {
    timed.status = Status::ProtocolError;
    timed.message = std::string("the runner could not draw fresh inputs (getrandom: ") +
                    std::strerror(static_cast<int>(results.fresh_errno)) + ")";
    return timed;
  }
  timed.warmup_seconds = results.warmup_seconds;
  const char* times = map.base() + layout.results_offset + sizeof results;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<double> seconds(results.rounds);
    std::memcpy(seconds.data(), times + k * static_cast<size_t>(timing.max_rounds) * sizeof(double),
                seconds.size() * sizeof(double));
    timed.rep_seconds.push_back(std::move(seconds));
    if (timing.fresh_inputs) continue;
    std::vector<std::vector<interp::Tensor>> per_set;
    for (size_t s = 0; s < n_sets; ++s) {
      std::vector<interp::Tensor> outputs;
      for (size_t r = 0; r < n_out; ++r)
        outputs.push_back(read_tensor(map.base(), layout,
                                      n_in + n_out + n_sets * n_in + (k * n_sets + s) * n_out + r));
      per_set.push_back(std::move(outputs));
    }
    timed.set_outputs.push_back(std::move(per_set));
  }
  if (timing.fresh_inputs) {
    // The sets as the child copied them (the dtype's rounding of input_sets).
    std::vector<std::vector<interp::Tensor>> staged(n_sets);
    for (size_t s = 0; s < n_sets; ++s)
      for (size_t i = 0; i < n_in; ++i)
        staged[s].push_back(read_tensor(map.base(), layout, n_in + n_out + s * n_in + i));
    header.results_offset = layout.results_offset;
    if (std::string bad =
            read_checked(map.base(), layout, header, staged, results.rounds, timed.checked);
        !bad.empty()) {
      timed.status = Status::ProtocolError;
      timed.message = bad;
      timed.checked.clear();
    }
  }
  return timed;
}

}  // namespace ollie::runner
