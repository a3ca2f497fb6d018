// The supervision loop of process.h (feed stdin, read captures, deadline, kill the
// group, drain) and `run`, the one-shot form built on it.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "support/process.h"

namespace ollie::process {
namespace {

// At most ~30 years, so an enormous time limit cannot overflow the clock.
Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(s, 1e9)));
}

// Writing to a pipe whose reader is gone raises SIGPIPE on the writing thread, which
// would end the process. No process-wide handler (other threads, other libraries): the
// signal is blocked on this thread for the call, and one our writes raised is taken off
// again.
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
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;
  bool raised = false;  // a write failed with EPIPE

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

// Writes what the child's stdin takes now; closes it when the child closed its end.
void write_available(Feed& feed) {
  while (feed.written < feed.data.size()) {
    const size_t chunk = std::min<size_t>(feed.data.size() - feed.written, 1 << 16);
    const ssize_t w = ::write(feed.fd.get(), feed.data.data() + feed.written, chunk);
    if (w > 0) {
      feed.written += static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      if (w < 0 && errno == EPIPE) {  // it does not read its input: fine
        feed.broken_pipe = true;
        feed.fd.reset();
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        feed.fd.reset();
      }
      return;
    }
  }
}

}  // namespace

bool supervise(pid_t pid, Feed* feed, std::span<Capture* const> captures,
               const Supervision& rules) {
  // A pidfd tells poll when the child exits; without one (kernels before 5.3) we look
  // every few milliseconds. Either way the pid stays ours until it is reaped, so
  // signalling its group (pgid == pid) cannot reach anyone else.
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  Clock::time_point kill_at = Clock::time_point::max();  // SIGKILL after the grace
  Clock::time_point drain_until = Clock::time_point::max();
  bool exited = false, killed = false, timed_out = false;
  auto kill_now = [&](Clock::time_point now) {
    if (killed) return;
    kill_group(pid, SIGKILL);
    killed = true;
    drain_until = now + seconds(rules.drain_seconds);
  };
  auto overflowed = [&] {
    return rules.kill_on_overflow &&
           std::any_of(captures.begin(), captures.end(), [](Capture* c) { return c->overflowed(); });
  };
  auto all_read = [&] {
    return std::none_of(captures.begin(), captures.end(), [](Capture* c) { return c->open(); });
  };

  for (;;) {
    const auto now = Clock::now();
    if (!exited && !pidfd.open()) exited = has_exited(pid);
    // The child is done: whatever it left behind in its group goes too.
    if ((exited && rules.kill_group_on_exit) || overflowed()) kill_now(now);
    if (!timed_out && now >= rules.deadline && !(exited && killed)) {
      timed_out = true;
      if (rules.grace_seconds > 0) {
        kill_group(pid, SIGTERM);
        kill_at = now + seconds(rules.grace_seconds);
      } else {
        kill_now(now);
      }
    }
    if (!exited && now >= kill_at) kill_now(now);
    if (feed && feed->fd.open() && (feed->written == feed->data.size() || killed)) feed->fd.reset();
    if (exited && (all_read() || now >= drain_until)) break;

    // Each polled fd with what to do when it is ready.
    std::vector<pollfd> polled;
    std::vector<std::function<void()>> on_ready;
    if (feed && feed->fd.open()) {
      polled.push_back({feed->fd.get(), POLLOUT, 0});
      on_ready.push_back([feed] { write_available(*feed); });
    }
    for (Capture* c : captures) {
      if (!c->open()) continue;
      polled.push_back({c->fd(), POLLIN, 0});
      on_ready.push_back([c] { c->read_available(); });
    }
    if (!exited && pidfd.open()) {
      polled.push_back({pidfd.get(), POLLIN, 0});
      on_ready.push_back([&exited] { exited = true; });
    }
    // The next thing to happen on time (a pidfd wakes us when the child exits).
    Clock::time_point next = Clock::time_point::max();
    if (!timed_out) next = rules.deadline;
    else if (!killed) next = kill_at;
    if (killed && exited) next = std::min(next, drain_until);
    auto wait_ms = next == Clock::time_point::max()
        ? int64_t{1000} : std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    wait_ms = std::clamp<int64_t>(wait_ms, 0, pidfd.open() || exited ? 1000 : 5);
    const int r = ::poll(polled.data(), polled.size(), static_cast<int>(wait_ms));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (pidfd.open()) {  // e.g. a pidfd poll does not support: look with waitid instead
        pidfd.reset();
        continue;
      }
      kill_now(Clock::now());  // cannot happen with valid fds; do not spin
      break;
    }
    for (size_t i = 0; i < polled.size(); ++i)
      if (polled[i].revents) on_ready[i]();
  }
  return timed_out;
}

RunResult run(const RunOptions& options) {
  const auto start = Clock::now();
  RunResult result;
  std::optional<SigpipeBlock> sigpipe;
  if (options.input) sigpipe.emplace();

  // O_CLOEXEC: other threads spawn processes concurrently (compilers, runners, other
  // commands) and must not inherit these ends, or our reads would not see end of file.
  Pipe in, out, err;
  if (options.input && (result.failure = open_pipe(in, NonBlocking::Write))) return result;
  if ((result.failure = open_pipe(out, NonBlocking::Read))) return result;
  if (!options.merge_stderr && (result.failure = open_pipe(err, NonBlocking::Read))) return result;

  Command command;
  command.argv = options.argv;
  command.search_path = options.search_path;
  command.cwd = options.cwd;
  command.own_group = true;
  command.default_signals = true;
  command.fds = {options.input ? ChildFd::dup(in.read.get(), 0) : ChildFd::dev_null(0),
                 ChildFd::dup(out.write.get(), 1),
                 ChildFd::dup(options.merge_stderr ? out.write.get() : err.write.get(), 2)};
  const Started started = spawn(command);
  in.read.reset();
  out.write.reset();
  err.write.reset();
  if (started.failure) {
    result.failure = started.failure;
    return result;
  }

  Feed feed{std::move(in.write), options.input.value_or(std::string_view{})};
  Capture stdout_capture(std::move(out.read), options.stdout_limit);
  Capture stderr_capture(std::move(err.read), options.stderr_tail, Capture::Keep::Tail);
  std::vector<Capture*> captures{&stdout_capture};
  if (!options.merge_stderr) captures.push_back(&stderr_capture);
  Supervision rules;
  rules.deadline = start + seconds(options.timeout_seconds);
  rules.grace_seconds = options.grace_seconds;
  rules.kill_group_on_exit = options.kill_group_on_exit;
  rules.kill_on_overflow = options.kill_on_overflow;
  rules.drain_seconds = options.drain_seconds;
  result.timed_out = supervise(started.pid, options.input ? &feed : nullptr, captures, rules);
  if (sigpipe) sigpipe->raised = feed.broken_pipe;

  int status = 0;
  if (!reap(started.pid, status)) result.wait_error = errno;
  result.status = exit_status(status);
  result.overflowed = stdout_capture.overflowed();
  result.out = std::move(stdout_capture.text());
  result.err = std::move(stderr_capture.text());
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace ollie::process
