// Tests of support/sandbox.h: what a command sees inside the jail (the filesystem, the
// environment, the network, the processes), that a time limit ends everything it started,
// how bwrap's exit codes map back to signals, options passed through a memfd, and the
// probe's message when bubblewrap is missing or cannot work.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/error.h"
#include "support/process.h"
#include "support/sandbox.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-sandbox-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    sandbox::set_bwrap_path_for_testing("");
    fs::remove_all(dir_);
  }
  // Runs `script` by /bin/sh inside `jail`; stdout and stderr together.
  process::RunResult run(const sandbox::Jail& jail, const std::string& script,
                         double timeout = 30) {
    process::RunOptions o;
    o.argv = sandbox::command_line(jail, {"/bin/sh", "-c", script});
    o.merge_stderr = true;
    o.stdout_limit = size_t{1} << 20;
    o.timeout_seconds = timeout;
    process::RunResult r = process::run(o);
    r.status = sandbox::status_inside(r.status);
    return r;
  }
  fs::path dir_;
};

TEST_F(Sandbox, OptionsUnshareEverythingAndNameNoPathOfOurs) {
  sandbox::Jail jail;
  const std::vector<std::string> o = sandbox::options(jail);
  auto has = [&](const std::string& s) { return std::find(o.begin(), o.end(), s) != o.end(); };
  for (const char* flag : {"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
                           "--clearenv", "--cap-drop"})
    EXPECT_TRUE(has(flag)) << flag;
  for (const std::string& s : o)
    for (const char* ours : {"/home", "/root", "/work", "/etc/passwd"})
      EXPECT_EQ(s.rfind(ours, 0), std::string::npos) << s;
}

TEST_F(Sandbox, TheJailShowsUsrItsBindsAndNothingElse) {
  std::ofstream(dir_ / "visible.txt") << "seen\n";
  fs::create_directories(dir_ / "out");
  sandbox::Jail jail;
  jail.read_only = {{(dir_ / "visible.txt").string(), "/data/visible.txt"}};
  jail.writable = {{(dir_ / "out").string(), "/out"}};
  jail.environment = {"ONLY=this"};
  jail.cwd = "/out";
  ::setenv("OLLIE_SANDBOX_TEST_SECRET", "sk-secret", 1);
  const process::RunResult r =
      run(jail,
          "cat /data/visible.txt; ls /; env; pwd;"
          "test -e /etc/passwd && echo passwd-visible;"
          "test -e " +
              dir_.string() +
              " && echo dir-visible;"
              "echo hi > /data/visible.txt 2>/dev/null && echo ro-written;"
              "echo out > /out/written.txt; echo tmp > /tmp/t && echo tmp-ok;"
              "/usr/bin/true");
  ::unsetenv("OLLIE_SANDBOX_TEST_SECRET");
  ASSERT_TRUE(r.status.exited && r.status.exit_code == 0) << r.out;
  EXPECT_NE(r.out.find("seen\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ONLY=this"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OLLIE_SANDBOX_TEST_SECRET"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/out\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tmp-ok"), std::string::npos) << r.out;
  for (const char* leak : {"passwd-visible", "dir-visible", "ro-written", "home\n", "root\n"})
    EXPECT_EQ(r.out.find(leak), std::string::npos) << leak << "\n" << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "written.txt"));
}

TEST_F(Sandbox, ABindBelowAnotherIsMadeAfterIt) {
  fs::create_directories(dir_ / "tmp");
  std::ofstream(dir_ / "inner.txt") << "inner\n";
  sandbox::Jail jail;
  // Given child first: the bind at /tmp must not hide the one below it.
  jail.read_only = {{(dir_ / "inner.txt").string(), "/tmp/a/inner.txt"}};
  jail.writable = {{(dir_ / "tmp").string(), "/tmp"}};
  const process::RunResult r = run(jail, "cat /tmp/a/inner.txt && echo x > /tmp/outer.txt");
  ASSERT_TRUE(r.status.exited && r.status.exit_code == 0) << r.out;
  EXPECT_NE(r.out.find("inner\n"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "tmp" / "outer.txt"));
}

TEST_F(Sandbox, NoNetworkAndOnlyTheJailsOwnProcesses) {
  sandbox::Jail jail;
  jail.proc = true;
  // Only loopback exists, and it is down; PID 1 is bwrap's, we are 2; our pid is not there.
  const process::RunResult r =
      run(jail, "cat /proc/net/dev; echo pid=$$; ls /proc | grep -c '^[0-9]'; test -e /proc/" +
                    std::to_string(::getpid()) + " && echo parent-visible; true");
  ASSERT_TRUE(r.status.exited && r.status.exit_code == 0) << r.out;
  EXPECT_NE(r.out.find("lo:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pid=2\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("parent-visible"), std::string::npos) << r.out;
}

// Live processes whose command line holds `marker`.
int processes_with(const std::string& marker) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(marker) != std::string::npos) ++n;
  }
  return n;
}

TEST_F(Sandbox, ATimeLimitEndsEverythingStartedInside) {
  // A daemon in its own session (out of bwrap's process group) and a sleeper; the marker
  // is a sleep time nothing else uses.
  const std::string marker = std::to_string(900000 + ::getpid() % 99999);
  const auto start = std::chrono::steady_clock::now();
  const process::RunResult r =
      run(sandbox::Jail{}, "setsid sleep " + marker + " & sleep " + marker, 1);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (processes_with(marker) > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(processes_with(marker), 0);
}

TEST_F(Sandbox, TheCommandsEndAfterItsMainProcessExits) {
  const std::string marker = std::to_string(800000 + ::getpid() % 99999);
  const process::RunResult r = run(sandbox::Jail{}, "setsid sleep " + marker + " & exit 0");
  EXPECT_TRUE(r.status.exited && r.status.exit_code == 0) << r.out;
  EXPECT_EQ(processes_with(marker), 0);  // bwrap's PID 1 exited: the namespace is gone
}

TEST_F(Sandbox, ASignalInsideIsReportedAsThatSignal) {
  const process::RunResult segv = run(sandbox::Jail{}, "kill -SEGV $$");
  EXPECT_FALSE(segv.status.exited);
  EXPECT_EQ(segv.status.signal, SIGSEGV);
  const process::RunResult code = run(sandbox::Jail{}, "exit 3");
  EXPECT_TRUE(code.status.exited);
  EXPECT_EQ(code.status.exit_code, 3);
  // Raw wait statuses: exit 128 + N becomes "killed by N"; others stay.
  EXPECT_TRUE(WIFSIGNALED(sandbox::wait_status_inside(W_EXITCODE(128 + SIGSYS, 0))));
  EXPECT_EQ(WTERMSIG(sandbox::wait_status_inside(W_EXITCODE(128 + SIGSYS, 0))), SIGSYS);
  EXPECT_EQ(WEXITSTATUS(sandbox::wait_status_inside(W_EXITCODE(86, 0))), 86);
  EXPECT_EQ(WTERMSIG(sandbox::wait_status_inside(SIGKILL)), SIGKILL);
}

TEST_F(Sandbox, OptionsThroughAMemfdStayOffTheCommandLine) {
  sandbox::Jail jail;
  jail.environment = {"FROM_MEMFD=value-7f3a"};
  jail.proc = true;
  constexpr int kArgsFd = 5;
  sandbox::ArgsFd jailed = sandbox::command_line_with_args_fd(
      jail, {"/bin/sh", "-c", "echo $FROM_MEMFD; ls /proc/self/fd; tr '\\0' ' ' < /proc/1/cmdline"},
      kArgsFd);
  for (const std::string& a : jailed.argv) EXPECT_EQ(a.find("value-7f3a"), std::string::npos);
  process::Pipe out;
  ASSERT_FALSE(process::open_pipe(out, process::NonBlocking::None));
  process::Command c;
  c.argv = jailed.argv;
  c.environment = std::vector<std::string>{};
  c.fds = {process::ChildFd::dev_null(0), process::ChildFd::dup(out.write.get(), 1),
           process::ChildFd::dup(out.write.get(), 2),
           process::ChildFd::dup(jailed.fd.get(), kArgsFd)};
  c.close_from = kArgsFd + 1;
  const process::Started started = process::spawn(c);
  ASSERT_FALSE(started.failure);
  out.write.reset();
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out.read.get(), buf, sizeof buf)) > 0;) text.append(buf, n);
  int status = 0;
  ASSERT_TRUE(process::reap(started.pid, status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("value-7f3a\n"), std::string::npos) << text;
  // fds 0-2 and ls's own directory fd: bwrap closed the memfd.
  EXPECT_EQ(text.find("\n5\n"), std::string::npos) << text;
  // Not on PID 1's command line: the value appears once, echoed.
  EXPECT_EQ(text.find("value-7f3a"), text.rfind("value-7f3a")) << text;
}

TEST_F(Sandbox, ProbeWithoutBwrapSaysWhatToInstall) {
  const std::string missing = (dir_ / "no-such-bwrap").string();
  sandbox::set_bwrap_path_for_testing(missing);
  try {
    sandbox::check_available();
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bubblewrap"), std::string::npos) << m;
    EXPECT_NE(m.find(missing), std::string::npos) << m;
    EXPECT_NE(m.find("scripts/setup.sh"), std::string::npos) << m;
  }
  EXPECT_THROW(sandbox::check_available(), UserError);  // the answer is kept
}

TEST_F(Sandbox, ProbeShowsBwrapsOwnErrorAndTheSysctl) {
  // A bwrap that fails the way it does where user namespaces are off.
  const fs::path fake = dir_ / "bwrap";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "if [ \"$1\" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\n"
                         "echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  sandbox::set_bwrap_path_for_testing(fake.string());
  try {
    sandbox::check_available();
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("No permissions to create new namespace"), std::string::npos) << m;
    EXPECT_NE(m.find("kernel.unprivileged_userns_clone=1"), std::string::npos) << m;
  }
  sandbox::set_bwrap_path_for_testing("");
  EXPECT_NO_THROW(sandbox::check_available());
}

}  // namespace
