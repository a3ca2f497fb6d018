// End-to-end tests of `ollie report` and `ollie serve` on a run database written through
// the store's API (tests/report/sample_run.h): the file written, the live page and its
// state.json fetched over HTTP, Ctrl-C stopping the server cleanly, and a port that is
// taken refused by name (by `serve` and by `optimize --serve`, before any search starts).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "../report/sample_run.h"
#include "e2e_util.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("ollie_e2e_report_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

CommandResult run_ollie(const std::string& args) {
  return shell(std::string(OLLIE_BINARY) + " " + args + " 2>&1");
}

// `ollie serve DB --port 0` as a child whose stdout this test reads.
struct ServeProcess {
  pid_t pid = -1;
  FILE* out = nullptr;
  int port = 0;
  std::string first_line;

  explicit ServeProcess(const std::string& db) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execl(OLLIE_BINARY, OLLIE_BINARY, "serve", db.c_str(), "--port", "0", nullptr);
      _exit(127);
    }
    close(fds[1]);
    out = fdopen(fds[0], "r");
    char line[1024] = {};
    if (out && fgets(line, sizeof line, out)) first_line = line;
    std::smatch m;
    if (std::regex_search(first_line, m, std::regex("http://127\\.0\\.0\\.1:([0-9]+)/")))
      port = std::stoi(m[1]);
  }
  // Ctrl-C; the exit status, or -1 when it did not exit by itself.
  int interrupt() {
    kill(pid, SIGINT);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid, &status, WNOHANG) == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      usleep(50000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  ~ServeProcess() {
    if (out) fclose(out);
  }
};

}  // namespace

TEST(ReportCli, WritesOneSelfContainedFileAndNamesAMissingDatabase) {
  const fs::path dir = temp_dir("report");
  const std::string db = (dir / "run.db").string();
  ollie_report_test::write_sample_run(db);
  const CommandResult r = run_ollie("report " + db + " -o " + (dir / "r.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = read_file(dir / "r.html");
  EXPECT_NE(html.find("<span id=\"best-time\">1 ms</span>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  const CommandResult missing = run_ollie("report " + (dir / "none.db").string());
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find((dir / "none.db").string() + "' not found"), std::string::npos)
      << missing.out;
}

// A run whose best is the baseline (one evaluation: nothing else was tried) says so, at 1x:
// its own side-by-side ratio is noise (on a busy machine 2.85 once read "0.35x faster").
TEST(ReportCli, ABaselineBestIsTheBaselineItselfAtItsOwnTime) {
  const fs::path dir = temp_dir("baseline_best");
  const CommandResult run = run_ollie(std::string("optimize ") + OLLIE_SOURCE_DIR +
                                      "/examples/softmax.py --dims M=8,N=32 --evals 1 "
                                      "--no-tuning-db -o " +
                                      dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string summary = read_file(dir / "summary.md");
  EXPECT_NE(summary.find("- best: the baseline itself, "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("x faster"), std::string::npos) << summary;
  const std::string page = read_file(dir / "report.html");
  const std::regex best("id=\"best-time\">([^<]+)<");
  std::smatch b;
  ASSERT_TRUE(std::regex_search(page, b, best)) << page.substr(0, 2000);
  EXPECT_NE(page.find("(1.00x faster)"), std::string::npos) << b[1];
}

TEST(ServeCli, ServesThePageLiveRefusesATakenPortAndStopsOnCtrlC) {
  const fs::path dir = temp_dir("serve");
  const std::string db = (dir / "run.db").string();
  ollie_report_test::write_sample_run(db);
  ServeProcess serve(db);
  ASSERT_GT(serve.port, 0) << serve.first_line;
  EXPECT_NE(serve.first_line.find("read-only"), std::string::npos) << serve.first_line;
  httplib::Client client("127.0.0.1", serve.port);
  const auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<span id=\"best-time\">1 ms</span>"), std::string::npos);
  const auto state = client.Get("/state.json");
  ASSERT_TRUE(state);
  EXPECT_NE(state->body.find("\"candidates\":3"), std::string::npos) << state->body;
  // The port is taken: `serve` and `optimize --serve` say which, and what to do.
  const std::string taken = "127.0.0.1:" + std::to_string(serve.port);
  const CommandResult again = run_ollie("serve " + db + " --port " + std::to_string(serve.port));
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find(taken + ": the port is taken"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("--port N"), std::string::npos) << again.out;
  const CommandResult opt =
      run_ollie("optimize " + std::string(OLLIE_SOURCE_DIR) + "/examples/softmax.py --evals 1 -o " +
                (dir / "opt").string() + " --serve --port " + std::to_string(serve.port));
  EXPECT_EQ(opt.exit_code, 1) << opt.out;
  EXPECT_NE(opt.out.find(taken + ": the port is taken"), std::string::npos) << opt.out;
  EXPECT_FALSE(fs::exists(dir / "opt" / "run.db"));  // refused before the run started
  EXPECT_EQ(serve.interrupt(), 0);
}
