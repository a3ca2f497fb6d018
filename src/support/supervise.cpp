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

// One supervision: what has happened to the child so far, and what is due next.
class Supervisor {
 public:
  Supervisor(pid_t pid, Feed* feed, std::span<Capture* const> captures, const Supervision& rules)
      : pid_(pid),
        feed_(feed),
        captures_(captures),
        rules_(rules),
        // A pidfd tells poll when the child exits; without one (kernels before 5.3) we
        // look every few milliseconds. Either way the pid stays ours until it is reaped,
        // so signalling its group (pgid == pid) cannot reach anyone else.
        pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))) {}

  // Returns true when the deadline passed before the child exited.
  bool run() {
    for (;;) {
      const auto now = Clock::now();
      if (!exited_ && !pidfd_.open()) exited_ = has_exited(pid_);
      enforce(now);
      if (exited_ && (all_read() || now >= drain_until_)) return timed_out_;
      if (!wait_and_serve(now)) return timed_out_;
    }
  }

 private:
  // Kills and closes what the rules say is due at `now`.
  void enforce(Clock::time_point now) {
    // The child is done: whatever it left behind in its group goes too.
    if ((exited_ && rules_.kill_group_on_exit) || overflowed()) kill_now(now);
    if (!timed_out_ && now >= rules_.deadline && !(exited_ && killed_)) {
      timed_out_ = true;
      if (rules_.grace_seconds > 0) {
        kill_group(pid_, SIGTERM);
        kill_at_ = now + seconds(rules_.grace_seconds);
      } else {
        kill_now(now);
      }
    }
    if (!exited_ && now >= kill_at_) kill_now(now);
    if (feed_ && feed_->fd.open() && (feed_->written == feed_->data.size() || killed_))
      feed_->fd.reset();
  }

  void kill_now(Clock::time_point now) {
    if (killed_) return;
    kill_group(pid_, SIGKILL);
    killed_ = true;
    drain_until_ = now + seconds(rules_.drain_seconds);
  }

  bool overflowed() const {
    return rules_.kill_on_overflow && std::any_of(captures_.begin(), captures_.end(),
                                                  [](Capture* c) { return c->overflowed(); });
  }

  bool all_read() const {
    return std::none_of(captures_.begin(), captures_.end(), [](Capture* c) { return c->open(); });
  }

  // How long poll may sleep: until the next thing due on time, at most a second (or a
  // few milliseconds when there is no pidfd to wake us at the child's exit).
  int wait_ms(Clock::time_point now) const {
    Clock::time_point next = Clock::time_point::max();
    if (!timed_out_)
      next = rules_.deadline;
    else if (!killed_)
      next = kill_at_;
    if (killed_ && exited_) next = std::min(next, drain_until_);
    const int64_t ms = next == Clock::time_point::max()
                           ? 1000
                           : std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 0, pidfd_.open() || exited_ ? 1000 : 5));
  }

  // Polls the child's pipes and its exit once, feeding and reading what is ready.
  // False when supervision must stop (poll failed beyond repair).
  bool wait_and_serve(Clock::time_point now) {
    std::vector<pollfd> polled;
    std::vector<std::function<void()>> on_ready;  // one per polled fd
    if (feed_ && feed_->fd.open()) {
      polled.push_back({feed_->fd.get(), POLLOUT, 0});
      on_ready.push_back([this] { write_available(*feed_); });
    }
    for (Capture* c : captures_) {
      if (!c->open()) continue;
      polled.push_back({c->fd(), POLLIN, 0});
      on_ready.push_back([c] { c->read_available(); });
    }
    if (!exited_ && pidfd_.open()) {
      polled.push_back({pidfd_.get(), POLLIN, 0});
      on_ready.push_back([this] { exited_ = true; });
    }
    if (::poll(polled.data(), polled.size(), wait_ms(now)) < 0) {
      if (errno == EINTR) return true;
      if (pidfd_.open()) {  // e.g. a pidfd poll does not support: look with waitid instead
        pidfd_.reset();
        return true;
      }
      kill_now(Clock::now());  // cannot happen with valid fds; do not spin
      return false;
    }
    for (size_t i = 0; i < polled.size(); ++i)
      if (polled[i].revents) on_ready[i]();
    return true;
  }

  const pid_t pid_;
  Feed* const feed_;
  const std::span<Capture* const> captures_;
  const Supervision& rules_;
  Fd pidfd_;
  Clock::time_point kill_at_ = Clock::time_point::max();  // SIGKILL after the grace
  Clock::time_point drain_until_ = Clock::time_point::max();
  bool exited_ = false, killed_ = false, timed_out_ = false;
};

}  // namespace

bool supervise(pid_t pid, Feed* feed, std::span<Capture* const> captures,
               const Supervision& rules) {
  return Supervisor(pid, feed, captures, rules).run();
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
