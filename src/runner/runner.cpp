// The parent side of the runner protocol (documented in child/runner_main.cpp): lays the
// buffers out in a memfd, spawns ollie-runner, enforces the timeout, reads results back.
#include "runner/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <thread>

#include "runner/child/protocol.h"
#include "support/error.h"
#include "support/random.h"

extern char** environ;

namespace ollie::runner {

namespace {

namespace proto = protocol;
using Clock = std::chrono::steady_clock;

// Owns one file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Owns one shared mapping.
class Mapping {
 public:
  // `populate`: fault every page in now, in one go (cheaper than a fault per page for
  // memory about to be written in full).
  Mapping(int fd, size_t bytes, bool populate = false) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    if (p == MAP_FAILED) throw UserError(std::string("runner: cannot map the buffer memory: ") + std::strerror(errno));
    base_ = static_cast<char*>(p);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { munmap(base_, bytes_); }
  char* base() const { return base_; }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
};

[[noreturn]] void fail_errno(const std::string& what) {
  throw UserError("runner: " + what + ": " + std::strerror(errno));
}

uint64_t round_up(uint64_t n, uint64_t page) { return (n + page - 1) / page * page; }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string default_runner_path() {
  std::vector<char> buf(4096);
  ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "ollie-runner";
  std::string exe(buf.data(), static_cast<size_t>(n));
  auto slash = exe.rfind('/');
  return slash == std::string::npos ? "ollie-runner" : exe.substr(0, slash + 1) + "ollie-runner";
}

// What a run needs, laid out: every buffer of the table (see protocol.h) with its dtype,
// shape, role and byte offset.
enum class Role { Input, Output, Staged, Check };

struct Slot {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  Role role = Role::Input;
  uint64_t bytes() const {
    return static_cast<uint64_t>(ir::element_count(shape)) * static_cast<uint64_t>(ir::dtype_bytes(dtype));
  }
};

struct Layout {
  std::vector<Slot> slots;                       // in buffer-table order
  std::vector<proto::Buffer> buffers;            // the same order
  std::vector<int64_t> dims;
  uint64_t header_size = 0;
  uint64_t results_offset = 0;                   // timed mode
  uint64_t total_size = 0;
};

// The entry symbol must be a C identifier: dlsym would accept anything, but nothing else
// can be an extern "C" function the adapter defined.
void check_entry_symbol(const std::string& name) {
  bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name)
    ok = ok && (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
  if (!ok)
    throw UserError("runner: the entry symbol '" + name +
                    "' is not a C identifier; name an extern \"C\" function such as ollie_entry");
}

// The dims values in graph.dims order; throws for an unbound dim.
std::vector<int64_t> bound_dims(const ir::Graph& graph) {
  std::vector<int64_t> dims;
  for (const auto& name : graph.dims) {
    auto it = graph.bound_dims.find(name);
    if (it == graph.bound_dims.end())
      throw UserError("runner: dim '" + name + "' has no value; bind it in DIMS or with --dims " + name + "=...");
    dims.push_back(it->second);
  }
  return dims;
}

// Checks one set of inputs against the graph's params at the bound dims.
void check_inputs(const ir::Graph& graph, const std::vector<interp::Tensor>& inputs) {
  if (inputs.size() != graph.params.size())
    throw UserError("runner: the kernel '" + graph.entry + "' takes " + std::to_string(graph.params.size()) +
                    " inputs but " + std::to_string(inputs.size()) + " were given; pass one tensor per parameter");
  for (size_t i = 0; i < graph.params.size(); ++i) {
    auto shape = ir::evaluate_shape(graph.params[i].shape, graph.bound_dims);
    if (shape != inputs[i].shape)
      throw UserError("runner: input '" + graph.params[i].name + "' has shape " + shape_text(inputs[i].shape) +
                      " but the kernel expects " + shape_text(shape) + " at the bound dims");
    if (static_cast<int64_t>(inputs[i].data.size()) != ir::element_count(shape))
      throw UserError("runner: input '" + graph.params[i].name + "' holds " + std::to_string(inputs[i].data.size()) +
                      " values but its shape " + shape_text(shape) + " needs " +
                      std::to_string(ir::element_count(shape)));
  }
}

std::vector<Slot> input_slots(const ir::Graph& graph, Role role) {
  std::vector<Slot> slots;
  for (const auto& p : graph.params) slots.push_back({p.dtype, ir::evaluate_shape(p.shape, graph.bound_dims), role});
  return slots;
}

std::vector<Slot> output_slots(const ir::Graph& graph, Role role) {
  std::vector<Slot> slots;
  for (const auto& r : graph.results) slots.push_back({r.dtype, ir::evaluate_shape(r.shape, graph.bound_dims), role});
  return slots;
}

// Places `slots` after a header of `header_bytes`: each buffer's pages are its own, with
// a guard page before and after; within its pages it sits at the start or at the end.
Layout plan(const ir::Graph& graph, std::vector<Slot> slots, uint64_t header_bytes, uint64_t results_bytes,
            Placement placement) {
  Layout layout;
  layout.dims = bound_dims(graph);
  layout.slots = std::move(slots);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  layout.header_size =
      round_up(header_bytes + layout.slots.size() * sizeof(proto::Buffer) + layout.dims.size() * sizeof(int64_t), page);
  uint64_t cursor = layout.header_size;
  for (const Slot& slot : layout.slots) {
    cursor += page;  // guard page before every buffer
    const uint64_t bytes = slot.bytes();
    const uint64_t span = round_up(std::max<uint64_t>(bytes, 1), page);
    const uint64_t offset =
        placement == Placement::End && bytes > 0 ? cursor + span - round_up(bytes, proto::kAlignment) : cursor;
    layout.buffers.push_back({offset, bytes});
    cursor += span;
  }
  cursor += page;  // and one after the last
  layout.results_offset = cursor;
  layout.total_size = cursor + round_up(results_bytes, page);
  return layout;
}

template <typename T>
void store_as(char* dst, const std::vector<double>& values) {
  auto* out = reinterpret_cast<T*>(dst);
  const double* in = values.data();
  const size_t n = values.size();
  size_t i = 0;
  // Blocks of a fixed size, which the compiler turns into vector conversions.
  for (; i + 16 <= n; i += 16)
    for (size_t j = 0; j < 16; ++j) out[i + j] = static_cast<T>(in[i + j]);
  for (; i < n; ++i) out[i] = static_cast<T>(in[i]);
}

void store(char* dst, ir::DType dtype, const std::vector<double>& values) {
  switch (dtype) {
    case ir::DType::F32: return store_as<float>(dst, values);
    case ir::DType::F64: return store_as<double>(dst, values);
    case ir::DType::I32: return store_as<int32_t>(dst, values);
    case ir::DType::I64: return store_as<int64_t>(dst, values);
    case ir::DType::Bool:
      for (size_t i = 0; i < values.size(); ++i) dst[i] = values[i] != 0 ? 1 : 0;
      return;
  }
}

template <typename T>
void load_as(const char* src, std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    values[i] = static_cast<double>(v);
  }
}

void load(const char* src, ir::DType dtype, std::vector<double>& values) {
  switch (dtype) {
    case ir::DType::F32: return load_as<float>(src, values);
    case ir::DType::F64: return load_as<double>(src, values);
    case ir::DType::I32: return load_as<int32_t>(src, values);
    case ir::DType::I64: return load_as<int64_t>(src, values);
    case ir::DType::Bool:
      // Anything but 0 or 1 (the poison, or garbage) must not pass as a truth value.
      for (size_t i = 0; i < values.size(); ++i) {
        const auto b = static_cast<unsigned char>(src[i]);
        values[i] = b <= 1 ? b : std::numeric_limits<double>::quiet_NaN();
      }
      return;
  }
}

interp::Tensor read_tensor(const char* base, const Layout& layout, size_t b) {
  interp::Tensor t;
  t.dtype = layout.slots[b].dtype;
  t.shape = layout.slots[b].shape;
  t.data.resize(static_cast<size_t>(ir::element_count(t.shape)));
  load(base + layout.buffers[b].offset, t.dtype, t.data);
  return t;
}

// A kernel that writes past either end of an output, into the rest of its pages, leaves
// the guard pages alone; the poison there shows it. Empty when every byte is intact.
std::string check_slack(const char* base, const Layout& layout, const ir::Graph& graph) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  size_t output = 0;
  for (size_t b = 0; b < layout.slots.size(); ++b) {
    if (layout.slots[b].role != Role::Output) continue;
    const proto::Buffer& buf = layout.buffers[b];
    const uint64_t first = buf.offset / page * page, end = buf.offset + buf.bytes;
    const uint64_t last = round_up(std::max(end, first + 1), page);
    auto intact = [&](uint64_t from, uint64_t to) {
      for (uint64_t i = from; i < to; ++i)
        if (static_cast<unsigned char>(base[i]) != 0xFF) return false;
      return true;
    };
    const std::string name = graph.results.size() > 1 ? "output " + std::to_string(output % graph.results.size())
                                                      : "the output";
    if (!intact(end, last))
      return "the kernel wrote past the end of " + name + " (into the bytes between its last element and the "
             "guard page after it)";
    if (!intact(first, buf.offset))
      return "the kernel wrote before the start of " + name + " (into the bytes between the guard page and its first element)";
    ++output;
  }
  return "";
}

// The kernels a request names, with their .so paths.
struct Named {
  std::string so_path;
  std::string entry_symbol;
};

// Creates the memfd: the header, the inputs and poisoned outputs. `fill(base)` stores
// the request's values into the buffers, writing every byte of each buffer of role
// `filled`; every other byte after the header is 0xFF.
template <typename Fill>
Fd make_request(const std::vector<Named>& kernels, const Layout& layout, proto::RequestHeader header,
                const Options& options, Role filled, const Fill& fill) {
  Fd fd(memfd_create("ollie-buffers", MFD_CLOEXEC));
  if (fd.get() < 0) fail_errno("memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(layout.total_size)) != 0) fail_errno("cannot size the buffer memory");
  Mapping map(fd.get(), layout.total_size, /*populate=*/true);
  char* base = map.base();
  // The poison, around the buffers that `fill` writes in full (plan() lays buffers out in
  // increasing order).
  uint64_t from = layout.header_size;
  for (size_t b = 0; b < layout.buffers.size(); ++b) {
    const proto::Buffer& buf = layout.buffers[b];
    if (layout.slots[b].role != filled || buf.bytes == 0) continue;
    OLLIE_CHECK(buf.offset >= from, "runner buffers out of order");
    std::memset(base + from, 0xFF, buf.offset - from);
    from = buf.offset + buf.bytes;
  }
  std::memset(base + from, 0xFF, layout.results_offset - from);

  std::memcpy(header.magic, proto::kRequestMagic, sizeof header.magic);
  header.version = proto::kVersion;
  header.n_dims = static_cast<uint32_t>(layout.dims.size());
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
                 (options.sanitize ? proto::kSanitize : 0u);
  if (options.sandbox) {
    header.memory_bytes = options.memory_bytes;
    // CPU time of all threads: the wall limit times the threads that may run, plus slack.
    const double threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    header.cpu_seconds = static_cast<uint64_t>(std::ceil(options.timeout_seconds * threads)) + 1;
  }
  header.parent_pid = static_cast<uint64_t>(getpid());
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

bool has_prefix(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

// The OpenMP settings that change how a kernel's threads wait and where they run: fixed
// for timing (Options::steady_openmp), not inherited.
constexpr const char* kOpenMpWaitAndPlacement[] = {"OMP_WAIT_POLICY=", "GOMP_SPINCOUNT=", "OMP_PROC_BIND=",
                                                   "OMP_PLACES=", "GOMP_CPU_AFFINITY=", "OMP_DYNAMIC="};

// The child's environment: ours, with OMP_NUM_THREADS replaced when asked, for timing
// the OpenMP wait policy fixed, and for a sanitizer run the runtime preloaded and its
// options set (inherited ones replaced).
std::vector<std::string> child_environment(const Options& options) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (options.threads > 0 && has_prefix(*e, "OMP_NUM_THREADS=")) continue;
    if (options.steady_openmp &&
        std::any_of(std::begin(kOpenMpWaitAndPlacement), std::end(kOpenMpWaitAndPlacement),
                    [&](const char* name) { return has_prefix(*e, name); }))
      continue;
    if (options.sanitize &&
        (has_prefix(*e, "LD_PRELOAD=") || has_prefix(*e, "ASAN_OPTIONS=") || has_prefix(*e, "UBSAN_OPTIONS=")))
      continue;
    env.emplace_back(*e);
  }
  if (options.threads > 0) env.push_back("OMP_NUM_THREADS=" + std::to_string(options.threads));
  if (options.steady_openmp) env.push_back("OMP_WAIT_POLICY=active");
  if (options.sanitize) {
    const std::string exitcode = "exitcode=" + std::to_string(proto::kSanitizerExitCode);
    // ASan must come first in the library list; the runner itself is not instrumented.
    env.push_back("LD_PRELOAD=" + options.sanitizer_runtime);
    // No leak check (it stops the world with ptrace), no symbolizer (it opens files and
    // may spawn one): frames print as module+offset.
    env.push_back("ASAN_OPTIONS=detect_leaks=0:symbolize=0:abort_on_error=0:disable_coredump=1:color=never:" +
                  exitcode);
    env.push_back("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:symbolize=0:color=never:" + exitcode);
  }
  return env;
}

pid_t spawn_child(const std::string& runner, int memfd, int report_fd, int stderr_fd, const Options& options) {
  Fd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (devnull.get() < 0) fail_errno("cannot open /dev/null");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a kill on timeout also reaches anything the kernel forked.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawn_file_actions_adddup2(&actions, devnull.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  posix_spawn_file_actions_adddup2(&actions, memfd, proto::kMemFd);
  posix_spawn_file_actions_adddup2(&actions, report_fd, proto::kReportFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, proto::kReportFd + 1);

  auto env = child_environment(options);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = runner;
  char* argv[] = {arg0.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, runner.c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    fail_errno("cannot start the runner '" + runner + "'");
  }
  return pid;
}

// What a sanitizer run's child writes to stderr: the first kMaxCaptured bytes are kept,
// the rest is read and dropped (so the child never blocks on a full pipe).
struct Capture {
  static constexpr size_t kMaxCaptured = size_t{1} << 16;
  Fd fd;  // the reading end, non-blocking; closed at end of file
  std::string text;

  // Reads what is there now.
  void read_available() {
    char buf[4096];
    while (fd.get() >= 0) {
      const ssize_t n = read(fd.get(), buf, sizeof buf);
      if (n > 0) {
        text.append(buf, std::min(static_cast<size_t>(n), kMaxCaptured - std::min(kMaxCaptured, text.size())));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n == 0) fd.reset();  // end of file: every writer is gone
        return;                  // EAGAIN: nothing more for now
      }
    }
  }
};

// Waits for `pid` to exit, at most until `deadline`, reading `capture` meanwhile when it
// is open. Returns true when it exited (not yet reaped: the pid stays ours until waitpid,
// so killing its group is safe).
bool wait_for_exit(pid_t pid, Clock::time_point deadline, Capture& capture) {
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (pidfd.get() >= 0) {
      pollfd p[2] = {{pidfd.get(), POLLIN, 0}, {capture.fd.get(), POLLIN, 0}};
      const nfds_t n = capture.fd.get() >= 0 ? 2 : 1;
      int r = poll(p, n, static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30))));
      if (r > 0 && n == 2 && p[1].revents) capture.read_available();
      if (r > 0 && p[0].revents) return true;
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) pidfd.reset();  // fall back to polling waitid below
      else return false;
    } else {
      // Without pidfds (old kernels): WNOWAIT looks without reaping.
      capture.read_available();
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
        return true;
      if (left <= 0) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 2)));
    }
  }
}

int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Reads whatever the child wrote to the report pipe (it has exited; never blocks).
std::string drain(int fd) {
  std::string data;
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      if (data.size() > 1 << 16) break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EOF, or EAGAIN when a leftover grandchild still holds the write end
    }
  }
  return data;
}

std::string signal_text(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  const char* description = sigdescr_np(sig);
  return description ? name + " (" + description + ")" : name;
}

// `text` with every byte that is not printable ASCII, a newline or a tab replaced by
// '?': what a kernel writes to stderr ends up in messages and JSON certificates, which
// must stay valid text.
std::string printable(std::string text) {
  for (char& c : text)
    if (!(c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f))) c = '?';
  return text;
}

// The start of a sanitizer report in a child's stderr: the ERROR line (ASan) or the
// runtime error line (UBSan) and the lines after it, up to the shadow-byte dump (or the
// summary, or ASan's hints about its options), without
// the "==pid==" prefixes; of each stack, the first frame and those in the kernel's
// library `so_path` (frames print as library+offset: the runtime does not symbolize).
// Empty when there is no report.
std::string sanitizer_report(const std::string& text, const std::string& so_path) {
  size_t at = std::string::npos;
  for (const char* marker :
       {"ERROR: AddressSanitizer", "runtime error:", "AddressSanitizer", "UndefinedBehaviorSanitizer"})
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
    if (line.rfind("Shadow bytes around", 0) == 0 || line.rfind("SUMMARY:", 0) == 0 || line.rfind("HINT:", 0) == 0)
      break;
    if (line.size() > 2 && line[0] == '=' && line[1] == '=') {  // "==1234==ERROR: ..."
      const size_t close = line.find("==", 2);
      if (close != std::string::npos) line.erase(0, close + 2);
    }
    const size_t frame = line.find_first_not_of(' ');
    if (frame == std::string::npos || line.find_first_not_of('=') == std::string::npos) continue;
    const bool in_stack = line[frame] == '#';
    if (in_stack && line.compare(frame, 3, "#0 ") != 0 && line.find(so_path) == std::string::npos) continue;
    out += (out.empty() ? "" : "\n") + line;
    ++lines;
  }
  return out;
}

// Starts the runner on the request in `memfd`, waits for it within the timeout and turns
// how it ended into an Outcome: Ok (with the child's `seconds`) only when it reported
// success and exited cleanly. `what` names the kernel for load errors; `so_path` is the
// library whose frames a sanitizer report keeps.
Outcome execute(const std::string& runner, int memfd, const std::string& what, const std::string& so_path,
                const Options& options) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) fail_errno("pipe");
  Fd report_read(pipe_fds[0]);
  Fd report_write(pipe_fds[1]);
  // The child's end blocks normally; only our reading end is non-blocking.
  fcntl(report_write.get(), F_SETFL, fcntl(report_write.get(), F_GETFL) & ~O_NONBLOCK);

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, options.timeout_seconds)));
  Capture capture;
  Fd capture_write;
  if (options.sanitize) {
    if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) fail_errno("pipe");
    capture.fd.reset(pipe_fds[0]);
    capture_write.reset(pipe_fds[1]);
    fcntl(capture_write.get(), F_SETFL, fcntl(capture_write.get(), F_GETFL) & ~O_NONBLOCK);
  }
  const pid_t pid = spawn_child(runner, memfd, report_write.get(), capture_write.get(), options);
  report_write.reset();
  capture_write.reset();

  Outcome outcome;
  const bool exited = wait_for_exit(pid, deadline, capture);
  kill(-pid, SIGKILL);  // the child is gone or out of time; take any forked helpers with it
  const int wait_status = reap(pid);
  capture.read_available();
  capture.text = printable(std::move(capture.text));
  if (WIFEXITED(wait_status) && options.sanitize && WEXITSTATUS(wait_status) == proto::kSanitizerExitCode) {
    outcome.status = Status::Sanitizer;
    outcome.message = sanitizer_report(capture.text, so_path);
    if (outcome.message.empty())
      outcome.message = "the runner exited with the sanitizer's exit code " +
                        std::to_string(proto::kSanitizerExitCode) + " but printed no report (stderr: " +
                        capture.text.substr(0, 500) + ")";
    return outcome;
  }
  // Whatever else ends a sanitizer run badly, what the child printed says more.
  auto with_stderr = [&](Outcome& o) {
    if (options.sanitize && o.status != Status::Ok && !capture.text.empty())
      o.message += "; its stderr: " + capture.text.substr(0, 1000);
    return o;
  };
  if (!exited) {
    outcome.status = Status::Timeout;
    char text[128];
    std::snprintf(text, sizeof text, "the kernel did not finish within %g s and was killed", options.timeout_seconds);
    outcome.message = text;
    return with_stderr(outcome);
  }

  const std::string report = drain(report_read.get());
  const bool has_report = report.size() >= sizeof(proto::Report);
  proto::Report header{};
  if (has_report) std::memcpy(&header, report.data(), sizeof header);
  const std::string message =
      has_report ? report.substr(sizeof header, std::min<size_t>(header.message_len, report.size() - sizeof header)) : "";

  if (WIFSIGNALED(wait_status)) {
    outcome.signal = WTERMSIG(wait_status);
    if (outcome.signal == SIGSYS && options.sandbox) {
      outcome.status = Status::Forbidden;
      outcome.message = "the kernel made a forbidden system call (files, sockets, processes and exec are "
                        "closed to kernels) and was killed by " + signal_text(outcome.signal);
    } else if (outcome.signal == SIGXCPU && options.sandbox) {
      outcome.status = Status::Timeout;
      outcome.message = "the kernel used up its CPU time and was killed by " + signal_text(outcome.signal);
    } else {
      outcome.status = Status::Crash;
      outcome.message = "the kernel was killed by " + signal_text(outcome.signal);
    }
    return with_stderr(outcome);
  }
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  if (!has_report || header.magic != proto::kReportMagic) {
    outcome.status = code != 0 ? Status::Crash : Status::ProtocolError;
    outcome.message = "the runner exited with status " + std::to_string(code) + " without reporting" +
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
    case proto::ReportStatus::Ok:
      break;
    default:
      outcome.status = Status::ProtocolError;
      outcome.message = "the runner sent an unknown report status " + std::to_string(header.status);
      return with_stderr(outcome);
  }
  if (code != 0) {
    outcome.status = Status::Crash;
    outcome.message = "the runner exited with status " + std::to_string(code) + " after the kernel returned";
    return with_stderr(outcome);
  }
  outcome.status = Status::Ok;
  outcome.seconds = header.seconds;
  outcome.message = "ok";
  return outcome;
}


std::string find_runner(const Options& options) {
  const std::string runner = options.runner_path.empty() ? default_runner_path() : options.runner_path;
  if (access(runner.c_str(), X_OK) != 0)
    throw UserError("runner: no runner executable at '" + runner +
                    "'; build the ollie-runner target next to ollie, or set the runner path");
  if (options.sanitize && (options.sanitizer_runtime.empty() || access(options.sanitizer_runtime.c_str(), R_OK) != 0))
    throw UserError("runner: a sanitizer run needs the AddressSanitizer runtime to preload, and '" +
                    options.sanitizer_runtime + "' is not a readable file; install libasan for the compiler " +
                    "(its path is `g++ -print-file-name=libasan.so`)");
  return runner;
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
  }
  return "unknown";
}

Outcome run(const std::string& so_path, const ir::Graph& graph, const std::vector<interp::Tensor>& inputs,
            const Options& options) {
  Outcome outcome = run_calls(so_path, graph, std::vector<const std::vector<interp::Tensor>*>{&inputs}, options);
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
                  const std::vector<const std::vector<interp::Tensor>*>& calls, const Options& options) {
  const std::string runner = find_runner(options);
  check_entry_symbol(options.entry_symbol);
  if (calls.empty()) throw UserError("runner: no calls to make");
  for (const auto* inputs : calls) check_inputs(graph, *inputs);
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), per_call = n_in + n_out;
  std::vector<Slot> slots;
  for (size_t c = 0; c < calls.size(); ++c) {
    for (Slot& s : input_slots(graph, Role::Input)) slots.push_back(std::move(s));
    for (Slot& s : output_slots(graph, Role::Output)) slots.push_back(std::move(s));
  }
  const std::vector<Named> kernels{{so_path, options.entry_symbol}};
  const Layout layout = plan(graph, std::move(slots), sizeof(proto::RequestHeader) + so_path.size() +
                                                          options.entry_symbol.size(), 0, options.placement);
  proto::RequestHeader header{};
  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_outputs = static_cast<uint32_t>(n_out);
  header.n_calls = static_cast<uint32_t>(calls.size());
  Fd memfd = make_request(kernels, layout, header, options, Role::Input, [&](char* base) {
    for (size_t c = 0; c < calls.size(); ++c)
      for (size_t i = 0; i < n_in; ++i)
        store(base + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype, (*calls[c])[i].data);
    if (options.plausible_outputs) {
      // Finite, ordinary-looking values instead of the poison: a kernel that skips work
      // when its outputs already look written returns these, and fails.
      random::Xoshiro256 rng(0x5eed);
      for (size_t c = 0; c < calls.size(); ++c)
        for (size_t i = n_in; i < per_call; ++i) {
          std::vector<double> values(static_cast<size_t>(ir::element_count(layout.slots[i].shape)));
          for (double& x : values)
            x = layout.slots[i].dtype == ir::DType::Bool ? 1.0 : std::round(random::normal(rng) * 4) / 4;
          store(base + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype, values);
        }
    }
  });

  Outcome outcome = execute(runner, memfd.get(), "'" + so_path + "'", so_path, options);
  if (outcome.status != Status::Ok) return outcome;
  Mapping map(memfd.get(), layout.total_size);
  if (std::string slack = check_slack(map.base(), layout, graph); !slack.empty()) {
    outcome.status = Status::Crash;
    outcome.message = slack;
    return outcome;
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<interp::Tensor> outputs;
    for (size_t r = 0; r < n_out; ++r) outputs.push_back(read_tensor(map.base(), layout, c * per_call + n_in + r));
    outcome.call_outputs.push_back(std::move(outputs));
  }
  return outcome;
}

TimedOutcome time_kernels(const std::vector<Kernel>& kernels, const ir::Graph& graph,
                          const std::vector<std::vector<interp::Tensor>>& input_sets, const Options& options,
                          const TimingOptions& timing) {
  const std::string runner = find_runner(options);
  if (kernels.empty() || kernels.size() > 2)
    throw UserError("runner: time one kernel, or two side by side (" + std::to_string(kernels.size()) + " given)");
  if (input_sets.empty()) throw UserError("runner: timing needs at least one set of inputs");
  if (timing.max_rounds < 1 || timing.min_rounds < 1 || timing.min_rounds > timing.max_rounds || timing.warmup_rounds < 0)
    throw UserError("runner: timing needs 1 <= min rounds <= max rounds and warm-up rounds >= 0");
  std::vector<Named> named;
  uint64_t header_bytes = sizeof(proto::RequestHeader);
  for (const Kernel& k : kernels) {
    check_entry_symbol(k.entry_symbol);
    named.push_back({k.so_path, k.entry_symbol});
    header_bytes += k.so_path.size() + k.entry_symbol.size();
  }
  for (const auto& inputs : input_sets) check_inputs(graph, inputs);
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), n_sets = input_sets.size();
  std::vector<Slot> slots = input_slots(graph, Role::Input);
  for (Slot& s : output_slots(graph, Role::Output)) slots.push_back(std::move(s));
  for (size_t s = 0; s < n_sets; ++s)
    for (Slot& slot : input_slots(graph, Role::Staged)) slots.push_back(std::move(slot));
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t s = 0; s < n_sets; ++s)
      for (Slot& slot : output_slots(graph, Role::Check)) slots.push_back(std::move(slot));
  const uint64_t results_bytes =
      sizeof(proto::TimedResults) + kernels.size() * static_cast<uint64_t>(timing.max_rounds) * sizeof(double);
  const Layout layout = plan(graph, std::move(slots), header_bytes, results_bytes, options.placement);

  proto::RequestHeader header{};
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
  Options child = options;
  child.steady_openmp = options.steady_openmp || timing.steady_openmp;
  Fd memfd = make_request(named, layout, header, child, Role::Staged, [&](char* base) {
    for (size_t s = 0; s < n_sets; ++s)
      for (size_t i = 0; i < n_in; ++i) {
        const size_t b = n_in + n_out + s * n_in + i;
        store(base + layout.buffers[b].offset, layout.slots[b].dtype, input_sets[s][i].data);
      }
  });

  std::string what;
  for (const Kernel& k : kernels) what += (what.empty() ? "'" : " or '") + k.so_path + "' (" + k.entry_symbol + ")";
  TimedOutcome timed;
  static_cast<Outcome&>(timed) = execute(runner, memfd.get(), what, kernels[0].so_path, child);
  if (timed.status != Status::Ok) return timed;
  Mapping map(memfd.get(), layout.total_size);
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
  timed.warmup_seconds = results.warmup_seconds;
  const char* times = map.base() + layout.results_offset + sizeof results;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<double> seconds(results.rounds);
    std::memcpy(seconds.data(), times + k * static_cast<size_t>(timing.max_rounds) * sizeof(double),
                seconds.size() * sizeof(double));
    timed.rep_seconds.push_back(std::move(seconds));
    std::vector<std::vector<interp::Tensor>> per_set;
    for (size_t s = 0; s < n_sets; ++s) {
      std::vector<interp::Tensor> outputs;
      for (size_t r = 0; r < n_out; ++r)
        outputs.push_back(read_tensor(map.base(), layout, n_in + n_out + n_sets * n_in + (k * n_sets + s) * n_out + r));
      per_set.push_back(std::move(outputs));
    }
    timed.set_outputs.push_back(std::move(per_set));
  }
  return timed;
}

}  // namespace ollie::runner
