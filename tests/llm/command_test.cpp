// CommandModel (`--proposer-cmd`) against real shell commands: the prompt arrives intact on
// stdin (large ones too, and with a command that is chatty on stderr before it reads),
// a printed kernel is found by extract_code, failures and exit 127 name the command and
// show stderr, signals, timeouts (also a command that ignores SIGTERM) end quickly and
// leave nothing of the command's process group behind, nor does a command that leaves a
// background child, a command that ignores its input does not raise SIGPIPE here, too
// much output is cut short, and several calls run at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "llm/llm.h"
#include "support/error.h"

namespace ollie::llm {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

ModelAnswer run(const std::string& command, const ModelRequest& request, double timeout = 20) {
  return CommandModel(CommandConfig{command, timeout}).complete(request);
}

// Pids of the processes in process group `pgid` that are not zombies (a zombie is dead;
// reaping an orphan is init's job).
std::vector<int> live_members(int pgid) {
  std::vector<int> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (!(rest >> state >> ppid >> pgrp)) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') found.push_back(std::stoi(name));
  }
  return found;
}

// True when group `pgid` has no live member within a few seconds (SIGKILL is delivered
// asynchronously).
bool group_gone(int pgid) {
  auto start = Clock::now();
  while (since(start) < 5) {
    if (live_members(pgid).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The command's shell pid (== its process group), which the test commands print first.
int leading_pid(const std::string& text) {
  int pid = std::atoi(text.c_str());
  EXPECT_GT(pid, 1) << "the command did not print its pid first: " << text;
  return pid;
}

// Printable text of `size` bytes with varied lines (a corrupted or reordered chunk shows).
std::string big_text(size_t size, unsigned seed) {
  std::string s;
  s.reserve(size + 64);
  unsigned x = seed;
  for (int line = 0; s.size() < size; ++line) {
    s += std::to_string(line) + ": ";
    for (int i = 0; i < 60; ++i) {
      x = x * 1103515245u + 12345u;
      s += static_cast<char>('!' + (x >> 16) % 94);
    }
    s += '\n';
  }
  s.resize(size - 1);
  return s + "\n";
}

TEST(CommandModel, EchoGetsTheSystemPromptABlankLineAndTheUserMessage) {
  ModelRequest r{"You write fast kernels.\n",
                 "Spec:\n  out = 'x' * \"2\" $HOME `date` \\n\n\nBest: (none yet)"};
  ModelAnswer a = run("cat", r);
  ASSERT_TRUE(a.ok()) << a.error;
  const std::string expected =
      "You write fast kernels.\n\nSpec:\n  out = 'x' * \"2\" $HOME `date` \\n\n\nBest: (none "
      "yet)\n";
  EXPECT_EQ(a.request, expected);
  EXPECT_EQ(a.text, expected);
  EXPECT_EQ(a.raw_answer, expected);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_GT(a.seconds, 0);
  EXPECT_EQ(a.http_status, 0);
  EXPECT_TRUE(a.error.empty());
  EXPECT_STREQ(status_name(a.status), "ok");
}

TEST(CommandModel, WithoutASystemPromptOnlyTheUserMessage) {
  // An unbounded time limit is allowed (and does not overflow the clock).
  ModelAnswer a =
      run("cat", ModelRequest{"", "just this"}, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.text, "just this\n");
  EXPECT_EQ(a.request, "just this\n");
}

TEST(CommandModel, ALargePromptArrivesIntact) {
  // Far beyond a pipe's buffer both ways: writing all of it before reading would deadlock.
  ModelRequest r{"system", big_text(3 << 20, 1)};
  ModelAnswer a = run("cat", r);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.text.size(), a.request.size());
  EXPECT_TRUE(a.text == a.request) << "the echoed prompt differs";
}

TEST(CommandModel, AChattyCommandThatWritesStderrBeforeReadingDoesNotDeadlock) {
  // 2 MB on stderr before it reads a byte, then the 2 MiB prompt back on stdout.
  ModelRequest r{"", big_text(2 << 20, 2)};
  ModelAnswer a = run("head -c 2000000 /dev/zero | tr '\\0' x >&2; cat", r);
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_TRUE(a.text == a.request);
}

TEST(CommandModel, APrintedFencedKernelIsFoundByExtractCode) {
  const std::string kernel =
      "#include <cstdint>\n"
      "extern \"C\" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {\n"
      "  for (int64_t i = 0; i < dims[0]; ++i) { out0[i] = x[i] * 2; }\n"
      "}\n";
  const std::string path = ::testing::TempDir() + "/ollie_command_test_answer.md";
  {
    std::ofstream out(path);
    out << "Here is a faster kernel:\n\n```cpp\n" << kernel << "```\n\nIt doubles x.\n";
  }
  // Reads the prompt first, as a real proposer does.
  ModelAnswer a = run("cat >/dev/null; cat '" + path + "'", ModelRequest{"sys", "make it fast"});
  ASSERT_TRUE(a.ok()) << a.error;
  ExtractedCode code = extract_code(a.text);
  ASSERT_TRUE(code.found) << code.how;
  EXPECT_EQ(code.code, kernel);
  std::filesystem::remove(path);
}

TEST(CommandModel, NonZeroExitNamesTheCommandTheStatusAndStderr) {
  const std::string cmd =
      "echo 'partial answer'; echo 'first line' >&2; echo 'model refused: quota' >&2; exit 3";
  ModelAnswer a = run(cmd, ModelRequest{"", "p"});
  EXPECT_EQ(a.status, Status::CommandFailed);
  EXPECT_STREQ(status_name(a.status), "command_failed");
  EXPECT_NE(a.error.find("--proposer-cmd '" + cmd + "'"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("exited with status 3"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("first line\nmodel refused: quota"), std::string::npos) << a.error;
  EXPECT_TRUE(a.text.empty());
  // The run database keeps what it printed and why it failed.
  EXPECT_NE(a.raw_answer.find("partial answer"), std::string::npos);
  EXPECT_NE(a.raw_answer.find("model refused: quota"), std::string::npos);
}

TEST(CommandModel, OnlyTheLastLinesOfALongStderrAreShown) {
  ModelAnswer a = run("seq 1 5000 >&2; exit 1", ModelRequest{"", "p"});
  EXPECT_EQ(a.status, Status::CommandFailed);
  EXPECT_NE(a.error.find("\n5000"), std::string::npos) << a.error;
  EXPECT_EQ(a.error.find("\n10\n"), std::string::npos) << a.error;
  EXPECT_LT(a.error.size(), 5000u);
}

TEST(CommandModel, CommandNotFoundSaysSo) {
  ModelAnswer a = run("ollie-no-such-proposer --model x", ModelRequest{"", "p"});
  EXPECT_EQ(a.status, Status::CommandFailed);
  EXPECT_NE(a.error.find("status 127"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("command not found"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("ollie-no-such-proposer"), std::string::npos) << a.error;
}

TEST(CommandModel, DeathBySignalIsNamed) {
  ModelAnswer a = run("kill -SEGV $$", ModelRequest{"", "p"});
  EXPECT_EQ(a.status, Status::CommandFailed);
  EXPECT_NE(a.error.find("killed by SIGSEGV"), std::string::npos) << a.error;
}

TEST(CommandModel, TimeoutStopsTheWholeGroupQuickly) {
  auto start = Clock::now();
  ModelAnswer a = run("echo $$; sleep 30 & sleep 30", ModelRequest{"", "p"}, 0.5);
  const double took = since(start);
  EXPECT_EQ(a.status, Status::Timeout);
  EXPECT_STREQ(status_name(a.status), "timeout");
  EXPECT_NE(a.error.find("--proposer-timeout"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("sleep 30"), std::string::npos) << a.error;
  EXPECT_LT(took, 5);
  EXPECT_GE(a.seconds, 0.5);
  EXPECT_TRUE(group_gone(leading_pid(a.raw_answer)));
}

TEST(CommandModel, ACommandIgnoringSigtermIsKilledAfterTheGrace) {
  auto start = Clock::now();
  ModelAnswer a = run("trap '' TERM; echo $$; sleep 30 & sleep 30", ModelRequest{"", "p"}, 0.3);
  EXPECT_EQ(a.status, Status::Timeout);
  EXPECT_LT(since(start), 5);
  EXPECT_TRUE(group_gone(leading_pid(a.raw_answer)));
}

TEST(CommandModel, ABackgroundChildLeftBehindIsKilled) {
  // One holds stdout open (waiting for its end would take 30 s), one does not.
  auto start = Clock::now();
  ModelAnswer a = run("echo $$; sleep 30 & sleep 31 >/dev/null 2>&1 </dev/null & echo done",
                      ModelRequest{"", "p"});
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_NE(a.text.find("done\n"), std::string::npos);
  EXPECT_LT(since(start), 5);
  EXPECT_TRUE(group_gone(leading_pid(a.text)));
}

TEST(CommandModel, ACommandThatIgnoresItsInput) {
  ModelAnswer a = run("echo ok", ModelRequest{"", big_text(4 << 20, 3)});
  ASSERT_TRUE(a.ok()) << a.error;
  EXPECT_EQ(a.text, "ok\n");
  // SIGPIPE was neither left pending nor left blocked on this thread.
  sigset_t pending, mask;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  EXPECT_FALSE(sigismember(&mask, SIGPIPE));
}

TEST(CommandModel, TooMuchOutputIsCutShort) {
  auto start = Clock::now();
  ModelAnswer a = run("yes kernel", ModelRequest{"", "p"});
  EXPECT_EQ(a.status, Status::BadAnswer);
  EXPECT_NE(a.error.find("16 MiB"), std::string::npos) << a.error;
  EXPECT_LT(since(start), 15);
  EXPECT_LE(a.raw_answer.size(), size_t{1} << 16);
}

TEST(CommandModel, SeveralCallsAtOnce) {
  // The first line says whether to fail; the rest comes back.
  CommandModel model(CommandConfig{
      "read -r first; if [ \"$first\" = fail ]; then echo bad $first >&2; exit 2; fi; cat", 30});
  constexpr int kThreads = 8;
  std::vector<std::string> bodies;
  std::vector<ModelRequest> requests;
  for (int i = 0; i < kThreads; ++i) {
    bodies.push_back(big_text(200000 + 1000 * i, 10 + i));
    requests.push_back(ModelRequest{"", (i % 3 == 1 ? "fail\n" : "pass\n") + bodies.back()});
  }
  std::vector<ModelAnswer> answers(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] { answers[i] = model.complete(requests[i]); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    if (i % 3 == 1) {
      EXPECT_EQ(answers[i].status, Status::CommandFailed) << i;
      EXPECT_NE(answers[i].error.find("status 2: bad fail"), std::string::npos) << answers[i].error;
    } else {
      ASSERT_TRUE(answers[i].ok()) << i << ": " << answers[i].error;
      EXPECT_TRUE(answers[i].text == bodies[i])
          << i << ": got another call's answer or a damaged one";
    }
  }
}

TEST(CommandModel, EmptyCommandOrBadTimeoutIsAUserError) {
  EXPECT_THROW(CommandModel(CommandConfig{"  ", 10}), UserError);
  EXPECT_THROW(CommandModel(CommandConfig{"cat", 0}), UserError);
  EXPECT_THROW(CommandModel(CommandConfig{"cat", -1}), UserError);
}

}  // namespace
}  // namespace ollie::llm
