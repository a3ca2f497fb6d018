// One way to run a child process: posix_spawn with an explicit argv (no shell unless the
// caller runs /bin/sh itself), the child's fds set up in order, an optional process group
// of its own; a loop that feeds its stdin, captures its output up to a limit and kills its
// whole group at a deadline; and waitpid retried on EINTR. Every fd made here is O_CLOEXEC,
// so no other thread's child inherits it. `run` is the one-shot form (the build driver's
// compiler runs, the llm's external proposer); the runner keeps a child with extra fds and
// uses the parts (spawn, supervise, kill_group, reap) directly.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ollie::process {

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
  bool open() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A system call that failed: its errno and which call it was. `in_spawn`: posix_spawn
// itself failed (the program, its directory or a file action; the errno says which).
struct Failure {
  int error = 0;
  std::string call;
  bool in_spawn = false;
  explicit operator bool() const { return error != 0; }
};

// A pipe; both ends O_CLOEXEC. Our end of it may be made non-blocking (the child's end is
// an ordinary blocking pipe).
struct Pipe {
  Fd read, write;
};
enum class NonBlocking { None, Read, Write };
Failure open_pipe(Pipe& pipe, NonBlocking our_end);

// One fd of the child, set up in the order given: `from` duplicated onto `to`, or
// /dev/null opened read-only as `to`.
struct ChildFd {
  int from = -1;  // -1: /dev/null
  int to = 0;
  static ChildFd dup(int from, int to) { return {from, to}; }
  static ChildFd dev_null(int to) { return {-1, to}; }
};

struct Command {
  std::vector<std::string> argv;                        // argv[0]: the program
  bool search_path = false;                             // look argv[0] up in PATH (posix_spawnp)
  std::optional<std::vector<std::string>> environment;  // none: ours
  std::string cwd;                                      // empty: ours
  bool own_group = false;  // a new process group whose id is the child's pid
  // The signal mask emptied and SIGPIPE, SIGINT and SIGTERM back at their defaults
  // (otherwise the child inherits ours).
  bool default_signals = false;
  std::vector<ChildFd> fds;  // fds not named here are inherited only without O_CLOEXEC
  int close_from = -1;       // >= 0: every fd from this one up is closed in the child
};

// Starts `command`; pid -1 and the failure when it could not.
struct Started {
  pid_t pid = -1;
  Failure failure;
};
Started spawn(const Command& command);

// `signal` to every process of the group `pid` leads (the child was spawned with own_group
// and is not reaped yet, so the group id is still ours).
void kill_group(pid_t pid, int signal);

// Whether `pid` has exited, without reaping it and without blocking.
bool has_exited(pid_t pid);

// waitpid(pid), retried on EINTR. False (errno set) when it failed; `status` untouched then.
bool reap(pid_t pid, int& status);

// How a wait status ended: exited with exit_code, or killed by signal.
struct ExitStatus {
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
};
ExitStatus exit_status(int wait_status);

// "SIGSEGV (Segmentation fault)"; "signal N" for a number the C library does not name.
std::string signal_name(int signal);

// What is read from one of the child's pipes (our end non-blocking): at most `limit` bytes
// kept, the first ones (Head) or the last ones (Tail). The rest is read and dropped, so the
// child never blocks on a full pipe.
class Capture {
 public:
  enum class Keep { Head, Tail };
  Capture(Fd fd, size_t limit, Keep keep = Keep::Head)
      : fd_(std::move(fd)), limit_(limit), keep_(keep) {}
  // Reads what is there now; closes the fd at end of file (every writer gone) or on an error.
  void read_available();
  bool open() const { return fd_.open(); }
  int fd() const { return fd_.get(); }
  bool overflowed() const { return overflowed_; }  // more than `limit` bytes came
  std::string& text() { return text_; }

 private:
  Fd fd_;
  size_t limit_;
  Keep keep_;
  bool overflowed_ = false;
  std::string text_;
};

// What goes to the child's stdin (our end non-blocking), written as the child reads it.
struct Feed {
  Fd fd;
  std::string_view data;
  size_t written = 0;
  bool broken_pipe = false;  // the child closed its stdin early (a write failed with EPIPE)
};

struct Supervision {
  Clock::time_point deadline = Clock::time_point::max();
  // At the deadline: SIGTERM to the group and SIGKILL this much later; 0: SIGKILL at once.
  double grace_seconds = 0;
  // When the child exits, SIGKILL to what it left in its group.
  bool kill_group_on_exit = false;
  // When a capture passes its limit, SIGKILL to the group.
  bool kill_on_overflow = false;
  // After the group was killed, how long to wait for the end of its output: a process
  // that left the group could hold a pipe open for ever.
  double drain_seconds = 0;
};

// Feeds `feed` (may be null) and reads `captures` until the child `pid` has exited and
// every capture is at end of file (or, once the group was killed, the drain time is over),
// enforcing `rules`. The child is not reaped. Returns true when the deadline passed first.
bool supervise(pid_t pid, Feed* feed, std::span<Capture* const> captures, const Supervision& rules);

// The one-shot form: runs `argv` in its own process group with the default signals, stdin
// fed `input` (none: /dev/null), stdout and stderr captured, within a time limit.
struct RunOptions {
  std::vector<std::string> argv;
  bool search_path = false;
  std::string cwd;
  std::optional<std::string_view> input;
  bool merge_stderr = false;   // stderr into the stdout capture, interleaved
  size_t stdout_limit = 0;     // the first bytes kept
  size_t stderr_tail = 0;      // the last bytes kept (separate stderr only)
  double timeout_seconds = 0;  // at most about 30 years
  double grace_seconds = 0;    // see Supervision
  bool kill_group_on_exit = false;
  bool kill_on_overflow = false;
  double drain_seconds = 0;
};

struct RunResult {
  Failure failure;          // the command could not be started
  bool timed_out = false;   // the group was killed at the time limit
  bool overflowed = false;  // stdout passed stdout_limit
  ExitStatus status;
  int wait_error = 0;  // errno of a failed waitpid (status unknown)
  std::string out;
  std::string err;
  double seconds = 0;
};
RunResult run(const RunOptions& options);

}  // namespace ollie::process
