// Runs a child process for the build driver with posix_spawn: no shell, so source names
// and flags are never interpreted; output captured through one pipe; a hard time limit.
#include "build/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "support/error.h"

extern char** environ;

namespace ollie::build::detail {
namespace {

// A compiler that writes more than this is stuck in a template explosion; keeping the
// head of it is enough for feedback and keeps a batch of bad candidates from eating memory.
constexpr size_t kMaxOutput = size_t{16} << 20;

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// posix_spawn* return an errno value instead of setting errno.
void check_spawn_call(int rc, const char* what) {
  if (rc != 0) throw InternalError(std::string(what) + " failed: " + std::strerror(rc));
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& cwd,
                          double time_limit_seconds) {
  OLLIE_CHECK(!argv.empty(), "run_process needs a program");
  ProcessResult result;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();

  // O_CLOEXEC: other threads spawn compilers concurrently and must not inherit our write
  // end, or our read would not see EOF until their compiler exits too.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw InternalError(std::string("pipe2 failed: ") + std::strerror(errno));
  Fd read_end{fds[0]}, write_end{fds[1]};

  posix_spawn_file_actions_t actions;
  check_spawn_call(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
  posix_spawnattr_t attr;
  check_spawn_call(posix_spawnattr_init(&attr), "posix_spawnattr_init");
  struct Cleanup {
    posix_spawn_file_actions_t* a;
    posix_spawnattr_t* b;
    ~Cleanup() {
      posix_spawn_file_actions_destroy(a);
      posix_spawnattr_destroy(b);
    }
  } cleanup{&actions, &attr};

  check_spawn_call(posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0), "addopen");
  check_spawn_call(posix_spawn_file_actions_adddup2(&actions, write_end.fd, 1), "adddup2");
  check_spawn_call(posix_spawn_file_actions_adddup2(&actions, write_end.fd, 2), "adddup2");
  if (!cwd.empty())
    check_spawn_call(posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str()), "addchdir");
  // Own process group: g++ runs cc1plus and as as children; on a timeout the whole group
  // must die, or an orphaned cc1plus keeps the pipe open and the CPU busy.
  check_spawn_call(posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                       POSIX_SPAWN_SETSIGDEF),
                   "setflags");
  check_spawn_call(posix_spawnattr_setpgroup(&attr, 0), "setpgroup");
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  check_spawn_call(posix_spawnattr_setsigmask(&attr, &none), "setsigmask");
  check_spawn_call(posix_spawnattr_setsigdefault(&attr, &defaults), "setsigdefault");

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  write_end.reset();
  if (rc != 0) {
    result.spawn_errno = rc;
    return result;
  }

  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(time_limit_seconds));
  char buffer[65536];
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) {
      result.timed_out = true;
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd p{read_end.fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left + 1, 1000)));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InternalError(std::string("poll failed: ") + std::strerror(errno));
    }
    if (n == 0) continue;
    ssize_t got = ::read(read_end.fd, buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (got == 0) break;  // EOF: every writer (the child and its children) is done
    if (result.output.size() < kMaxOutput) {
      result.output.append(buffer, static_cast<size_t>(got));
    } else {
      result.truncated = true;
    }
  }
  if (result.timed_out) ::kill(-pid, SIGKILL);
  read_end.reset();

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError(std::string("waitpid failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace ollie::build::detail
