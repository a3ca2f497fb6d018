// The API key and the command line, end to end through the `ollie` binary: a key given
// with --llm-key is erased from the process's command line (which every process of the
// user can read) and a warning names the alternatives; --llm-key-file reads it from a file
// instead, and its errors name the file, never a key.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "e2e_util.h"

#include "../llm/fake_model_server.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

CommandResult ollie(const fs::path& cache, const std::string& args) {
  const std::string cmd =
      "env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u OLLIE_LLM_MODEL -u OLLIE_LLM_BASE_URL -u "
      "OLLIE_LLM_PROTOCOL OLLIE_CACHE_DIR=" +
      cache.string() + " " + OLLIE_BINARY + " " + args + " 2>&1";
  return shell(cmd);
}

class Secrets : public ::testing::Test {
 protected:
  // One build cache for the suite: the runs compile the same baseline.
  static fs::path cache() {
    return fs::temp_directory_path() / ("ollie_secrets_cache_" + std::to_string(::getpid()));
  }
  static void TearDownTestSuite() { fs::remove_all(cache()); }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ollie_secrets_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string spec() const { return (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string(); }
  fs::path dir_;
};

TEST_F(Secrets, TheKeyIsErasedFromTheCommandLineWithAWarning) {
  // The proposer command runs as ollie's child: it copies ollie's /proc/PID/cmdline as it
  // is while the run goes on, then prints a kernel.
  fs::copy_file(fs::path(OLLIE_SOURCE_DIR) / "tests/e2e/kernels/softmax_rows.cpp",
                dir_ / "kernel.cpp");
  const std::string key = "sk-test-cmdline-0123456789";
  const CommandResult r = ollie(
      cache(), "optimize " + spec() +
                   " --dims M=16,N=64 --evals 2 --bench-seconds 0.05 --proposers "
                   "llm:1 --proposer-cmd 'tr \"\\0\" \" \" < /proc/$PPID/cmdline > " +
                   (dir_ / "cmdline.txt").string() + "; cat " + (dir_ / "kernel.cpp").string() +
                   "' --llm-key " + key + " -o " + (dir_ / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string cmdline = read_file(dir_ / "cmdline.txt");
  EXPECT_NE(cmdline.find("--llm-key"), std::string::npos) << cmdline;  // it is ollie's
  EXPECT_EQ(cmdline.find(key), std::string::npos) << cmdline;
  EXPECT_NE(r.out.find("warning: --llm-key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--llm-key-file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(key), std::string::npos) << r.out;
}

TEST_F(Secrets, AKeyFileReachesTheModel) {
  const std::string key = "sk-test-from-a-file-42";
  std::ofstream(dir_ / "key.txt") << key << "\n";
  ollie::llm::testing::FakeModelServer server(key);
  const CommandResult r =
      ollie(cache(), "optimize " + spec() +
                         " --dims M=16,N=64 --evals 2 --bench-seconds "
                         "0.05 --proposers llm:1 --llm-base-url " +
                         server.openai_base() + " --llm-model test-model --llm-key-file " +
                         (dir_ / "key.txt").string() + " -o " + (dir_ / "out").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto seen = server.requests();
  ASSERT_FALSE(seen.empty()) << r.out;
  EXPECT_EQ(seen[0].headers.at("Authorization"), "Bearer " + key);
  EXPECT_EQ(r.out.find(key), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

TEST_F(Secrets, KeyFileErrorsNameTheFile) {
  const std::string missing = (dir_ / "no-such-key").string();
  const CommandResult gone = ollie(cache(), "optimize " + spec() + " --llm-key-file " + missing +
                                                " -o " + (dir_ / "out").string());
  EXPECT_EQ(gone.exit_code, 1) << gone.out;
  EXPECT_NE(gone.out.find(missing), std::string::npos) << gone.out;
  std::ofstream(dir_ / "empty") << "\n";
  const CommandResult empty =
      ollie(cache(), "optimize " + spec() + " --llm-key-file " + (dir_ / "empty").string() +
                         " -o " + (dir_ / "out").string());
  EXPECT_EQ(empty.exit_code, 1) << empty.out;
  EXPECT_NE(empty.out.find("is empty"), std::string::npos) << empty.out;
  const CommandResult both =
      ollie(cache(), "optimize " + spec() + " --llm-key sk-x --llm-key-file " +
                         (dir_ / "empty").string() + " -o " + (dir_ / "out").string());
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_EQ(both.out.find("sk-x"), std::string::npos) << both.out;
}

}  // namespace
