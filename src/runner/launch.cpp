// The runner's parent side of a run (see launch.h): the jail ollie-runner runs in, its
// environment, spawning it, the timeout, and turning how it ended and what it reported
// into an Outcome.
#include "runner/launch.h"

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
#include <cstdlib>
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

namespace ollie::runner::detail {

namespace proto = protocol;
using process::Fd;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail_errno(const std::string& what) {
  throw UserError("runner: " + what + ": " + std::strerror(errno));
}

std::string default_runner_path() {
  // A host process that is not `ollie` (the Python package) names the runner it ships.
  if (const char* named = std::getenv("OLLIE_RUNNER"); named != nullptr && *named != '\0')
    return named;
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

// 64 random bits (never 0) that the child's report must carry back: a report the kernel
// forges lacks them (protocol.h).
uint64_t run_nonce() {
  uint64_t nonce = 0;
  while (nonce == 0)
    if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) fail_errno("getrandom");
  return nonce;
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
    } else if (outcome.signal == SIGILL) {
      // Linux raises SIGILL at the first AMX tile instruction of a process that did not ask
      // for the tile state; a CPU without an instruction the kernel was built for does too.
      outcome.status = Status::Crash;
      outcome.message =
          "the kernel was killed by " + signal_text +
          ": an instruction this CPU lacks (built for another machine?), or AMX tiles used "
          "without first asking Linux for them with arch_prctl(ARCH_REQ_XCOMP_PERM, "
          "XFEATURE_XTILEDATA)";
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
  outcome.cpu_seconds = header.cpu_seconds;
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

}  // namespace ollie::runner::detail
