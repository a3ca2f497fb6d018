// The child-process helper (process.h): fds, pipes, spawning, reaping, captures.
#include "support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace ollie::process {
namespace {

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// posix_spawn* return an errno value instead of setting errno.
bool spawn_call(int rc, const char* call, Failure& failure) {
  if (rc == 0) return true;
  failure = {rc, call, false};
  return false;
}

// The attributes and file actions of one posix_spawn, destroyed with it.
class SpawnSetup {
 public:
  explicit SpawnSetup(Failure& failure) {
    actions_ok_ = spawn_call(posix_spawn_file_actions_init(&actions_),
                             "posix_spawn_file_actions_init", failure);
    attr_ok_ =
        actions_ok_ && spawn_call(posix_spawnattr_init(&attr_), "posix_spawnattr_init", failure);
  }
  ~SpawnSetup() {
    if (actions_ok_) posix_spawn_file_actions_destroy(&actions_);
    if (attr_ok_) posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  bool ok() const { return attr_ok_; }
  bool configure(const Command& command, Failure& failure);
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;

 private:
  bool actions_ok_ = false, attr_ok_ = false;
};

bool SpawnSetup::configure(const Command& command, Failure& failure) {
  for (const ChildFd& fd : command.fds) {
    const bool ok = fd.from < 0
                        ? spawn_call(posix_spawn_file_actions_addopen(&actions_, fd.to, "/dev/null",
                                                                      O_RDONLY, 0),
                                     "posix_spawn_file_actions_addopen", failure)
                        : spawn_call(posix_spawn_file_actions_adddup2(&actions_, fd.from, fd.to),
                                     "posix_spawn_file_actions_adddup2", failure);
    if (!ok) return false;
  }
  if (command.close_from >= 0 &&
      !spawn_call(posix_spawn_file_actions_addclosefrom_np(&actions_, command.close_from),
                  "posix_spawn_file_actions_addclosefrom_np", failure))
    return false;
  if (!command.cwd.empty() &&
      !spawn_call(posix_spawn_file_actions_addchdir_np(&actions_, command.cwd.c_str()),
                  "posix_spawn_file_actions_addchdir_np", failure))
    return false;
  short flags = 0;
  if (command.own_group) flags |= POSIX_SPAWN_SETPGROUP;
  if (command.default_signals) flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (!spawn_call(posix_spawnattr_setflags(&attr_, flags), "posix_spawnattr_setflags", failure))
    return false;
  if (command.own_group &&
      !spawn_call(posix_spawnattr_setpgroup(&attr_, 0), "posix_spawnattr_setpgroup", failure))
    return false;
  if (!command.default_signals) return true;
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM}) sigaddset(&defaults, s);
  return spawn_call(posix_spawnattr_setsigmask(&attr_, &none), "posix_spawnattr_setsigmask",
                    failure) &&
         spawn_call(posix_spawnattr_setsigdefault(&attr_, &defaults),
                    "posix_spawnattr_setsigdefault", failure);
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (auto& s : texts) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Failure open_pipe(Pipe& pipe, NonBlocking our_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {errno, "pipe2"};
  pipe.read.reset(fds[0]);
  pipe.write.reset(fds[1]);
  const int ours = our_end == NonBlocking::Read    ? fds[0]
                   : our_end == NonBlocking::Write ? fds[1]
                                                   : -1;
  if (ours >= 0 && !set_nonblocking(ours)) return {errno, "fcntl"};
  return {};
}

namespace {

// The child's fds are set up by dup2 in order, so a source that is also a target (or
// lands on one an earlier dup2 wrote) would be lost, and dup2(fd, fd) would keep its
// O_CLOEXEC: every source at or below the highest target is first duplicated above it
// (close-on-exec; `held` keeps the copies until the child has started).
bool sources_above_targets(Command& command, std::vector<Fd>& held, Failure& failure) {
  int highest = -1;
  for (const ChildFd& fd : command.fds) highest = std::max(highest, fd.to);
  for (ChildFd& fd : command.fds) {
    if (fd.from < 0 || fd.from > highest) continue;
    const int copy = fcntl(fd.from, F_DUPFD_CLOEXEC, highest + 1);
    if (copy < 0) {
      failure = {errno, "fcntl(F_DUPFD_CLOEXEC)"};
      return false;
    }
    held.emplace_back(copy);
    fd.from = copy;
  }
  return true;
}

}  // namespace

Started spawn(const Command& original) {
  Started started;
  if (original.argv.empty()) {
    started.failure = {EINVAL, "spawn (no program)"};
    return started;
  }
  Command command = original;
  std::vector<Fd> held;
  if (!sources_above_targets(command, held, started.failure)) return started;
  SpawnSetup setup(started.failure);
  if (!setup.ok() || !setup.configure(command, started.failure)) return started;
  std::vector<std::string> args = command.argv;
  std::vector<char*> argv = pointers(args);
  std::vector<std::string> env = command.environment.value_or(std::vector<std::string>{});
  std::vector<char*> envp = pointers(env);
  char** child_env = command.environment ? envp.data() : environ;
  const char* program = command.argv[0].c_str();
  const int rc = command.search_path ? posix_spawnp(&started.pid, program, &setup.actions_,
                                                    &setup.attr_, argv.data(), child_env)
                                     : posix_spawn(&started.pid, program, &setup.actions_,
                                                   &setup.attr_, argv.data(), child_env);
  if (rc != 0) {
    started.pid = -1;
    const std::string call = command.search_path ? "posix_spawnp " : "posix_spawn ";
    started.failure = {rc, call + command.argv[0], true};
  }
  return started;
}

void kill_group(pid_t pid, int signal) { ::kill(-pid, signal); }

bool has_exited(pid_t pid) {
  siginfo_t info{};  // WNOWAIT: look without reaping
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

bool reap(pid_t pid, int& status) {
  int got = 0;
  while (::waitpid(pid, &got, 0) < 0) {
    if (errno != EINTR) return false;
  }
  status = got;
  return true;
}

ExitStatus exit_status(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) {
    s.exited = true;
    s.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    s.signal = WTERMSIG(wait_status);
  }
  return s;
}

std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
  const char* description = sigdescr_np(signal);
  return description ? name + " (" + description + ")" : name;
}

void Capture::read_available() {
  char buffer[65536];
  while (fd_.open()) {
    const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
    if (n > 0) {
      const size_t got = static_cast<size_t>(n);
      if (keep_ == Keep::Tail) {
        text_.append(buffer, got);
        if (text_.size() > limit_) text_.erase(0, text_.size() - limit_);
      } else {
        const size_t room = limit_ - std::min(limit_, text_.size());
        text_.append(buffer, std::min(got, room));
        if (got > room) overflowed_ = true;
      }
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      // EAGAIN: nothing more for now. End of file: every writer is gone.
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) fd_.reset();
      return;
    }
  }
}

}  // namespace ollie::process
