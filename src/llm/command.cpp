// CommandModel: an external proposer (`--proposer-cmd`). Runs `/bin/sh -c COMMAND` in its
// own process group, feeds it the prompt on stdin while reading its stdout and stderr
// (one poll loop, so neither side can block the other), enforces the time limit on the
// whole group, and always reaps it. Written here rather than reusing build/process.cpp:
// that helper has no stdin and merges stderr into stdout, and llm must not depend on the
// build stage.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "llm/llm.h"
#include "support/error.h"

extern char** environ;

namespace ollie::llm {
namespace {

using Clock = std::chrono::steady_clock;

// A proposer prints one kernel; more than this is a runaway loop, not an answer.
constexpr size_t kMaxStdout = size_t{16} << 20;
// Enough stderr for the end of a traceback or a compiler's complaint.
constexpr size_t kStderrKeep = size_t{64} << 10;
// Between SIGTERM and SIGKILL on a timeout: time to flush and clean up temporary files.
constexpr double kGraceSeconds = 1.0;
// After the group was killed, how long to wait for the end of its output: a process that
// left the group (setsid) could hold the pipe open for ever.
constexpr double kDrainSeconds = 1.0;

// At most ~30 years, so an enormous --proposer-timeout cannot overflow the clock.
Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(s, 1e9)));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// Writing to a pipe whose reader is gone raises SIGPIPE on the writing thread, which
// would end ollie. No process-wide handler (other threads, other libraries): the signal
// is blocked on this thread for the call, and one our writes raised is taken off again.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlock() {
    if (raised && !was_pending_) {
      timespec zero{};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  bool raised = false;  // a write failed with EPIPE

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

struct Outcome {
  int spawn_error = 0;         // errno: the command could not be started
  std::string spawn_what;      // which call failed
  bool timed_out = false;
  bool too_much = false;       // stdout passed kMaxStdout
  bool exited = false;         // else killed by `signal`
  int exit_code = -1;
  int signal = 0;
  std::string out;
  std::string err;             // the tail of stderr
};

// Reads what `fd` has now into `into` (at most `cap` bytes kept; `keep_tail`: the last
// `cap`, else the first). Returns false at end of file or on an error.
bool read_available(int fd, std::string& into, size_t cap, bool keep_tail, bool* overflow) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      if (keep_tail) {
        into.append(buffer, static_cast<size_t>(n));
        if (into.size() > 2 * cap) into.erase(0, into.size() - cap);
      } else if (into.size() + static_cast<size_t>(n) <= cap) {
        into.append(buffer, static_cast<size_t>(n));
      } else {
        *overflow = true;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// posix_spawn* return an errno value instead of setting errno.
bool spawn_call(int rc, const char* what, Outcome& o) {
  if (rc == 0) return true;
  o.spawn_error = rc;
  o.spawn_what = what;
  return false;
}

Outcome run(const std::string& command, const std::string& input, double timeout_seconds) {
  Outcome o;
  const auto start = Clock::now();
  SigpipeBlock sigpipe;

  // O_CLOEXEC: other threads spawn processes concurrently (compilers, runners, other
  // commands) and must not inherit these ends, or our reads would not see end of file.
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    spawn_call(errno, "pipe2", o);
    return o;
  }
  Fd in_read(in[0]), in_write(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    spawn_call(errno, "pipe2", o);
    return o;
  }
  Fd out_read(out[0]), out_write(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    spawn_call(errno, "pipe2", o);
    return o;
  }
  Fd err_read(err[0]), err_write(err[1]);
  // Only our ends: the command gets ordinary blocking pipes.
  if (!set_nonblocking(in_write.get()) || !set_nonblocking(out_read.get()) || !set_nonblocking(err_read.get())) {
    spawn_call(errno, "fcntl", o);
    return o;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (!spawn_call(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init", o)) return o;
  if (!spawn_call(posix_spawnattr_init(&attr), "posix_spawnattr_init", o)) {
    posix_spawn_file_actions_destroy(&actions);
    return o;
  }
  struct Cleanup {
    posix_spawn_file_actions_t* a;
    posix_spawnattr_t* b;
    ~Cleanup() {
      posix_spawn_file_actions_destroy(a);
      posix_spawnattr_destroy(b);
    }
  } cleanup{&actions, &attr};
  // Its own process group, so a timeout reaches everything it started. The signal mask
  // is emptied (this thread blocks SIGPIPE) and signals ollie handles are reset.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM}) sigaddset(&defaults, s);
  if (!spawn_call(posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0), "adddup2", o) ||
      !spawn_call(posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1), "adddup2", o) ||
      !spawn_call(posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2), "adddup2", o) ||
      !spawn_call(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                      POSIX_SPAWN_SETSIGDEF),
                  "posix_spawnattr_setflags", o) ||
      !spawn_call(posix_spawnattr_setpgroup(&attr, 0), "posix_spawnattr_setpgroup", o) ||
      !spawn_call(posix_spawnattr_setsigmask(&attr, &none), "posix_spawnattr_setsigmask", o) ||
      !spawn_call(posix_spawnattr_setsigdefault(&attr, &defaults), "posix_spawnattr_setsigdefault", o))
    return o;

  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = -1;
  if (!spawn_call(posix_spawn(&pid, sh.c_str(), &actions, &attr, argv, environ), "posix_spawn /bin/sh", o))
    return o;
  in_read.reset();
  out_write.reset();
  err_write.reset();

  // A pidfd tells poll when the command exits; without one (kernels before 5.3) we look
  // every few milliseconds. Either way the pid stays ours until waitpid below, so
  // signalling its group (pgid == pid) cannot reach anyone else.
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const auto deadline = start + seconds(timeout_seconds);
  Clock::time_point kill_at = Clock::time_point::max();   // SIGKILL after the grace
  Clock::time_point drain_until = Clock::time_point::max();
  bool exited = false, killed = false;
  size_t written = 0;

  auto kill_group = [&](Clock::time_point now) {
    if (killed) return;
    ::kill(-pid, SIGKILL);
    killed = true;
    drain_until = now + seconds(kDrainSeconds);
  };

  for (;;) {
    const auto now = Clock::now();
    if (!exited && !pidfd.open()) {
      siginfo_t info{};  // WNOWAIT: look without reaping
      exited = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
    }
    // The command is done: whatever it left behind in its group goes too.
    if (exited || o.too_much) kill_group(now);
    if (!exited && !o.timed_out && now >= deadline) {
      o.timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + seconds(kGraceSeconds);
    }
    if (!exited && now >= kill_at) kill_group(now);
    if (in_write.open() && (written == input.size() || killed)) in_write.reset();
    if (exited && ((!out_read.open() && !err_read.open()) || now >= drain_until)) break;

    pollfd p[4];
    nfds_t n = 0;
    int i_in = -1, i_out = -1, i_err = -1, i_pid = -1;
    if (in_write.open()) p[i_in = static_cast<int>(n++)] = {in_write.get(), POLLOUT, 0};
    if (out_read.open()) p[i_out = static_cast<int>(n++)] = {out_read.get(), POLLIN, 0};
    if (err_read.open()) p[i_err = static_cast<int>(n++)] = {err_read.get(), POLLIN, 0};
    if (!exited && pidfd.open()) p[i_pid = static_cast<int>(n++)] = {pidfd.get(), POLLIN, 0};
    // The next thing to happen on time (a pidfd wakes us when the command exits).
    Clock::time_point next = exited ? drain_until : killed ? now + seconds(1) : o.timed_out ? kill_at : deadline;
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    wait_ms = std::clamp<int64_t>(wait_ms, 0, pidfd.open() || exited ? 1000 : 5);
    int r = ::poll(p, n, static_cast<int>(wait_ms));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (pidfd.open()) {  // e.g. a pidfd poll does not support: look with waitid instead
        pidfd.reset();
        continue;
      }
      kill_group(Clock::now());  // cannot happen with valid fds; do not spin
      exited = true;
      break;
    }
    if (i_in >= 0 && p[i_in].revents) {
      while (written < input.size()) {
        ssize_t w = ::write(in_write.get(), input.data() + written, std::min<size_t>(input.size() - written, 1 << 16));
        if (w > 0) {
          written += static_cast<size_t>(w);
        } else if (w < 0 && errno == EINTR) {
          continue;
        } else {
          if (w < 0 && errno == EPIPE) {  // it does not read its input: fine
            sigpipe.raised = true;
            in_write.reset();
          } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            in_write.reset();
          }
          break;
        }
      }
    }
    if (i_out >= 0 && p[i_out].revents && !read_available(out_read.get(), o.out, kMaxStdout, false, &o.too_much))
      out_read.reset();
    bool unused = false;
    if (i_err >= 0 && p[i_err].revents && !read_available(err_read.get(), o.err, kStderrKeep, true, &unused))
      err_read.reset();
    if (i_pid >= 0 && p[i_pid].revents) exited = true;
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    o.exited = true;
    o.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
  }
  if (o.err.size() > kStderrKeep) o.err.erase(0, o.err.size() - kStderrKeep);
  return o;
}

// What goes to the command's stdin.
std::string input_text(const ModelRequest& request) {
  std::string text;
  if (!request.system.empty()) {
    text = request.system;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    text += "\n\n";
  }
  text += request.user;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

std::string printable(std::string text) {
  for (char& c : text)
    if (!(c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f))) c = '?';
  return text;
}

// The last lines of stderr for a message.
std::string stderr_tail(const std::string& err) {
  constexpr int kLines = 20;
  constexpr size_t kChars = 4000;
  std::string t = err;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ' || t.back() == '\r')) t.pop_back();
  if (t.empty()) return "(nothing on stderr)";
  size_t at = t.size();
  for (int lines = 0; lines < kLines && at != std::string::npos && at > 0; ++lines) at = t.rfind('\n', at - 1);
  size_t from = at == std::string::npos ? 0 : at + 1;
  if (t.size() - from > kChars) from = t.size() - kChars;
  return (from > 0 ? "...\n" : "") + printable(t.substr(from));
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  const char* description = sigdescr_np(sig);
  return description ? name + " (" + description + ")" : name;
}

std::string format_seconds(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", s);
  return buffer;
}

}  // namespace

CommandModel::CommandModel(CommandConfig config) : config_(std::move(config)) {
  if (config_.command.find_first_not_of(" \t\n") == std::string::npos)
    throw UserError("--proposer-cmd is empty: give the command that reads a prompt on stdin and prints a kernel");
  if (!(config_.timeout_seconds > 0))
    throw UserError("--proposer-timeout must be a positive number of seconds (got " +
                    format_seconds(config_.timeout_seconds) + ")");
}

ModelAnswer CommandModel::complete(const ModelRequest& request) {
  const auto start = Clock::now();
  ModelAnswer a;
  a.attempts = 1;
  a.request = input_text(request);
  Outcome o = run(config_.command, a.request, config_.timeout_seconds);
  a.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::string shown = config_.command.size() > 200 ? config_.command.substr(0, 200) + "..." : config_.command;
  const std::string who = "--proposer-cmd '" + printable(shown) + "'";
  const std::string tail = stderr_tail(o.err);
  if (o.spawn_error != 0) {
    a.status = Status::CommandFailed;
    a.error = "cannot start /bin/sh for " + who + ": " + o.spawn_what + " failed: " + std::strerror(o.spawn_error);
  } else if (o.too_much) {
    a.status = Status::BadAnswer;
    a.error = who + " printed more than " + std::to_string(kMaxStdout >> 20) +
              " MiB on standard output and was stopped; a proposer prints one kernel";
  } else if (o.timed_out) {
    a.status = Status::Timeout;
    a.error = who + " did not finish within " + format_seconds(config_.timeout_seconds) +
              " s and was stopped with its process group (raise --proposer-timeout if it needs longer): " + tail;
  } else if (o.exited && o.exit_code == 0) {
    a.status = Status::Ok;
    a.text = o.out;
  } else {
    a.status = Status::CommandFailed;
    std::string how;
    if (!o.exited) {
      how = "was killed by " + signal_name(o.signal);
    } else {
      how = "exited with status " + std::to_string(o.exit_code);
      if (o.exit_code == 127) how += " (command not found: check the command and PATH)";
      if (o.exit_code == 126) how += " (found but not executable: check its permissions)";
      if (o.exit_code > 128 && o.exit_code < 128 + 65)
        how += " (what it ran was killed by " + signal_name(o.exit_code - 128) + ")";
    }
    a.error = who + " " + how + ": " + tail;
  }
  a.raw_answer = o.too_much ? o.out.substr(0, kStderrKeep) : o.out;
  if (!a.ok() && !o.err.empty()) a.raw_answer += "\n--- stderr (the end) ---\n" + o.err;
  return a;
}

}  // namespace ollie::llm
