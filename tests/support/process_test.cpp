// Unit tests of support/process.h: capture, limits, stdin, time limits on whole process
// groups, exit and signal reporting, waits that signals interrupt, and the fds a child gets.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <thread>

#include "support/process.h"

namespace {

using namespace ollie;
using std::chrono::milliseconds;

process::RunOptions shell(const std::string& script) {
  process::RunOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.stdout_limit = size_t{1} << 20;
  o.stderr_tail = size_t{1} << 20;
  o.timeout_seconds = 30;
  return o;
}

// Whether `pid` is gone (or a zombie nobody has reaped yet: dead all the same).
bool dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
}

bool dies_soon(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (dead(pid)) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

TEST(Run, CapturesStdoutAndStderrApartOrInterleaved) {
  process::RunResult r = process::run(shell("echo out; echo err >&2"));
  EXPECT_FALSE(r.failure);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.exit_code, 0);
  EXPECT_FALSE(r.timed_out);

  process::RunOptions merged = shell("echo one; echo two >&2; echo three");
  merged.merge_stderr = true;
  r = process::run(merged);
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  EXPECT_EQ(r.err, "");
}

TEST(Run, SearchesPathAndRunsInTheDirectoryGiven) {
  process::RunOptions o;
  o.argv = {"pwd"};
  o.search_path = true;
  o.cwd = "/";
  o.stdout_limit = 100;
  o.timeout_seconds = 30;
  const process::RunResult r = process::run(o);
  EXPECT_EQ(r.out, "/\n");
  EXPECT_EQ(r.status.exit_code, 0);
}

TEST(Run, KeepsTheHeadOfStdoutAndTheTailOfStderr) {
  process::RunOptions o = shell("head -c 100000 /dev/zero; printf abcdefgh >&2");
  o.stdout_limit = 1000;
  o.stderr_tail = 3;
  const process::RunResult r = process::run(o);
  EXPECT_EQ(r.out, std::string(1000, '\0'));
  EXPECT_TRUE(r.overflowed);
  EXPECT_EQ(r.err, "fgh");
  EXPECT_TRUE(r.status.exited);  // read to the end and dropped: it was not stopped
  EXPECT_EQ(r.status.exit_code, 0);

  o = shell("head -c 1000 /dev/zero");
  o.stdout_limit = 1000;
  EXPECT_FALSE(process::run(o).overflowed);  // exactly the limit is no overflow
}

TEST(Run, StopsACommandThatPassesItsLimitWhenAsked) {
  process::RunOptions o = shell("yes");
  o.stdout_limit = 4096;
  o.kill_on_overflow = true;
  o.kill_group_on_exit = true;
  const process::RunResult r = process::run(o);
  EXPECT_TRUE(r.overflowed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.status.exited);
  EXPECT_EQ(r.status.signal, SIGKILL);
  EXPECT_EQ(r.out.size(), 4096u);
}

TEST(Run, FeedsStdin) {
  std::string input;
  for (int i = 0; i < 200000; ++i) input += "line " + std::to_string(i) + "\n";
  process::RunOptions o = shell("cat");
  o.input = input;
  o.stdout_limit = input.size() + 1;
  const process::RunResult r = process::run(o);
  EXPECT_EQ(r.out, input);
  EXPECT_EQ(r.status.exit_code, 0);
}

TEST(Run, ACommandThatDoesNotReadItsInputIsFine) {
  const std::string input(size_t{4} << 20, 'x');  // more than a pipe holds
  process::RunOptions o = shell("echo done");
  o.input = input;
  const process::RunResult r = process::run(o);  // no SIGPIPE ends this test
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.status.exit_code, 0);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
}

TEST(Run, ReportsExitStatusAndSignal) {
  process::RunResult r = process::run(shell("exit 7"));
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.exit_code, 7);
  r = process::run(shell("kill -SEGV $$"));
  EXPECT_FALSE(r.status.exited);
  EXPECT_EQ(r.status.signal, SIGSEGV);
  EXPECT_EQ(r.status.exit_code, -1);
}

TEST(SignalName, NamesAndDescribes) {
  EXPECT_EQ(process::signal_name(SIGSEGV), "SIGSEGV (Segmentation fault)");
  EXPECT_EQ(process::signal_name(1000), "signal 1000");
}

TEST(Run, ReportsAProgramThatCannotStart) {
  process::RunOptions o;
  o.argv = {"/nonexistent/program"};
  o.timeout_seconds = 5;
  const process::RunResult r = process::run(o);
  EXPECT_EQ(r.failure.error, ENOENT);
  EXPECT_TRUE(r.failure.in_spawn);
  EXPECT_EQ(r.failure.call, "posix_spawn /nonexistent/program");
}

TEST(Run, TimeoutKillsTheWholeGroupGrandchildrenToo) {
  // The grandchild keeps the pipe open: only killing the group ends the run.
  process::RunOptions o = shell("sleep 30 & echo $!; wait");
  o.timeout_seconds = 0.3;
  const auto start = process::Clock::now();
  const process::RunResult r = process::run(o);
  EXPECT_LT(process::Clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.status.exited);
  EXPECT_EQ(r.status.signal, SIGKILL);
  const pid_t grandchild = static_cast<pid_t>(std::stol(r.out));
  EXPECT_TRUE(dies_soon(grandchild));
}

TEST(Run, AGraceTimeLetsTheCommandHandleSigterm) {
  process::RunOptions o = shell("trap 'echo term; exit 3' TERM; sleep 30 & wait");
  o.timeout_seconds = 0.3;
  o.grace_seconds = 10;
  o.kill_group_on_exit = true;
  o.drain_seconds = 1;
  const process::RunResult r = process::run(o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.exit_code, 3);
  EXPECT_EQ(r.out, "term\n");
}

TEST(Run, AnExitedCommandsLeftoversAreKilledWhenAsked) {
  process::RunOptions o = shell("sleep 30 & echo $!");
  o.kill_group_on_exit = true;
  o.drain_seconds = 5;
  const auto start = process::Clock::now();
  const process::RunResult r = process::run(o);
  EXPECT_LT(process::Clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status.exit_code, 0);
  EXPECT_TRUE(dies_soon(static_cast<pid_t>(std::stol(r.out))));
}

void on_alarm(int) {}

TEST(Run, SignalsInterruptingTheWaitsChangeNothing) {
  struct sigaction action {
  }, old{};
  action.sa_handler = on_alarm;  // no SA_RESTART: poll, read and waitpid see EINTR
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGALRM, &action, &old), 0);
  itimerval every_ms{{0, 1000}, {0, 1000}}, off{};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every_ms, nullptr), 0);
  process::RunOptions o = shell("sleep 0.3; echo done");
  o.input = std::string(size_t{1} << 20, 'x');
  const process::RunResult r = process::run(o);
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  EXPECT_EQ(r.wait_error, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
}

TEST(Spawn, TheChildGetsExactlyTheFdsNamed) {
  process::Pipe out;
  ASSERT_FALSE(process::open_pipe(out, process::NonBlocking::Read));
  process::Fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int inheritable = ::fcntl(devnull.get(), F_DUPFD, 50);  // no O_CLOEXEC
  ASSERT_GE(inheritable, 50);
  process::Fd stray(inheritable);
  process::Fd extra(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  process::Command c;
  c.argv = {"/bin/sh", "-c", "cd /proc/self/fd && echo *; echo \"$GREETING\""};
  c.environment = std::vector<std::string>{"GREETING=hello", "PATH=/usr/bin:/bin"};
  c.own_group = true;
  c.fds = {process::ChildFd::dev_null(0), process::ChildFd::dup(out.write.get(), 1),
           process::ChildFd::dup(out.write.get(), 2), process::ChildFd::dup(extra.get(), 5)};
  c.close_from = 6;
  const process::Started started = process::spawn(c);
  ASSERT_FALSE(started.failure) << started.failure.call;
  out.write.reset();
  process::Capture capture(std::move(out.read), 4096);
  process::Capture* const captures[] = {&capture};
  process::Supervision rules;
  rules.deadline = process::Clock::now() + std::chrono::seconds(30);
  EXPECT_FALSE(process::supervise(started.pid, nullptr, captures, rules));
  int status = -1;
  ASSERT_TRUE(process::reap(started.pid, status));
  EXPECT_EQ(process::exit_status(status).exit_code, 0);
  // The shell's own fds: 0, 1, 2 and 5 (the glob may show the directory it reads, too).
  const std::string listed = capture.text().substr(0, capture.text().find('\n'));
  EXPECT_EQ(listed.rfind("0 1 2", 0), 0u) << listed;
  EXPECT_NE(listed.find(" 5"), std::string::npos) << listed;
  EXPECT_EQ(listed.find(" " + std::to_string(inheritable)), std::string::npos) << listed;
  EXPECT_EQ(capture.text().substr(capture.text().find('\n') + 1), "hello\n");
}

// Sources that sit where targets go: a close-on-exec fd whose number is its own target
// (dup2(fd, fd) would keep O_CLOEXEC), and one whose number an earlier target takes.
TEST(Spawn, SourcesAtTargetNumbersReachTheChild) {
  // Two pipes, their write ends moved to fds 200 and 201 (close-on-exec, numbers nothing
  // else here holds). The child gets the first at 200 (its own number) and at 201, and
  // the second at 202: in order, dup2(200, 201) would overwrite the second before
  // dup2(201, 202) reads it.
  for (int fd : {200, 201, 202}) ASSERT_EQ(::fcntl(fd, F_GETFD), -1) << fd << " is taken";
  process::Pipe a, b;
  ASSERT_FALSE(process::open_pipe(a, process::NonBlocking::Read));
  ASSERT_FALSE(process::open_pipe(b, process::NonBlocking::Read));
  ASSERT_EQ(::dup3(a.write.get(), 200, O_CLOEXEC), 200);
  ASSERT_EQ(::dup3(b.write.get(), 201, O_CLOEXEC), 201);
  process::Fd first(200), second(201);
  a.write.reset();
  b.write.reset();
  process::Command c;
  c.argv = {"/bin/bash", "-c", "echo one >&200; echo two >&202"};
  c.environment = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  c.fds = {process::ChildFd::dev_null(0), process::ChildFd::dup(200, 200),
           process::ChildFd::dup(200, 201), process::ChildFd::dup(201, 202)};
  c.close_from = 203;
  const process::Started started = process::spawn(c);
  ASSERT_FALSE(started.failure) << started.failure.call;
  first.reset();
  second.reset();
  int status = -1;
  ASSERT_TRUE(process::reap(started.pid, status));
  EXPECT_EQ(process::exit_status(status).exit_code, 0);
  char buf[16] = {};
  EXPECT_EQ(::read(a.read.get(), buf, sizeof buf), 4);
  EXPECT_EQ(std::string(buf, 4), "one\n");
  char buf2[16] = {};
  EXPECT_EQ(::read(b.read.get(), buf2, sizeof buf2), 4);
  EXPECT_EQ(std::string(buf2, 4), "two\n");
}

TEST(Spawn, HasExitedLooksWithoutReaping) {
  process::Command c;
  c.argv = {"/bin/sh", "-c", "exit 4"};
  c.fds = {process::ChildFd::dev_null(0)};
  const process::Started started = process::spawn(c);
  ASSERT_FALSE(started.failure);
  bool exited = false;
  for (int i = 0; i < 500 && !exited; ++i) {
    exited = process::has_exited(started.pid);
    if (!exited) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(exited);
  EXPECT_TRUE(process::has_exited(started.pid));  // still there to reap
  int status = -1;
  ASSERT_TRUE(process::reap(started.pid, status));
  EXPECT_EQ(process::exit_status(status).exit_code, 4);
  EXPECT_FALSE(process::reap(started.pid, status));  // reaped once only
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
