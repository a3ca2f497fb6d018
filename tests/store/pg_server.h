// A real PostgreSQL server for the tests (docs/distributed.md, "Testing"): Debian's
// postgresql binaries run an unprivileged server in a temporary directory, reached only
// through a Unix socket in that directory (no TCP port to collide with). As root the
// server runs as the `postgres` user (the package creates it; postgres refuses root),
// otherwise as the user running the tests. A watchdog process stops the server and
// removes the directory when the test process ends, however it ends (even SIGKILL).
// Missing binaries fail the test with what to run (scripts/setup.sh), unless
// OLLIE_SKIP_POSTGRES_TESTS=1 is set, which skips the PostgreSQL tests instead.
// OLLIE_POSTGRES_BIN names the directory of initdb and pg_ctl when they are elsewhere.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace ollie::test {

class PgServer {
 public:
  // The server of this test process, started on first use. nullptr when the PostgreSQL
  // tests are skipped (OLLIE_SKIP_POSTGRES_TESTS=1) or the server cannot start (the test
  // has then failed with the reason). Use OLLIE_REQUIRE_POSTGRES below.
  static PgServer* get() {
    static std::unique_ptr<PgServer> server;
    static std::string error;
    if (skipped()) return nullptr;
    if (!server && error.empty()) {
      auto s = std::unique_ptr<PgServer>(new PgServer());
      error = s->start_first();
      if (error.empty()) server = std::move(s);
    }
    if (!server) ADD_FAILURE() << error;
    return server.get();
  }
  static bool skipped() {
    const char* s = std::getenv("OLLIE_SKIP_POSTGRES_TESTS");
    return s && std::string(s) == "1";
  }

  // A URL of the server's database `ollie` (libpq URI with the socket directory).
  std::string url() const { return "postgresql:///ollie?host=" + dir_ + "&user=ollie"; }

  // Stops the server (fast: open connections are cut) and starts it again: for the
  // fault tests. Both return "" or what went wrong.
  std::string stop() { return run(pg_ctl() + " -m fast -w stop"); }
  std::string start() { return run(pg_ctl() + " -w -t 60 -l " + dir_ + "/log start"); }

  ~PgServer() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (watchdog_fd_ >= 0) ::close(watchdog_fd_);
  }

 private:
  PgServer() = default;

  // $OLLIE_POSTGRES_BIN, else the newest /usr/lib/postgresql/VERSION/bin with an initdb.
  static std::string bin_dir() {
    if (const char* env = std::getenv("OLLIE_POSTGRES_BIN"))
      return std::filesystem::exists(std::string(env) + "/initdb") ? env : "";
    std::string best;
    double best_version = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      const double version = std::atof(e.path().filename().c_str());
      if (std::filesystem::exists(e.path() / "bin" / "initdb") && version > best_version) {
        best_version = version;
        best = (e.path() / "bin").string();
      }
    }
    return best;
  }

  // Runs `cmd` as the server's user; "" or its output on failure.
  std::string run(const std::string& cmd) const {
    const std::string full =
        (::geteuid() == 0 ? "runuser -u postgres -- " : "") + cmd + " > " + dir_ + "/cmd.out 2>&1";
    if (std::system(full.c_str()) == 0) return "";
    std::ifstream in(dir_ + "/cmd.out");
    std::stringstream out;
    out << in.rdbuf();
    return "`" + cmd + "` failed: " + out.str();
  }

  std::string pg_ctl() const {
    return bin_ + "/pg_ctl -D " + dir_ + "/data -o \"-k " + dir_ +
           " -c listen_addresses='' -p 5432 -c fsync=off -c max_connections=200\"";
  }

  std::string start_first() {
    bin_ = bin_dir();
    if (bin_.empty())
      return "the PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb, or "
             "$OLLIE_POSTGRES_BIN/initdb) are "
             "missing: run scripts/setup.sh (it installs Debian's postgresql), or set "
             "OLLIE_SKIP_POSTGRES_TESTS=1 to skip the PostgreSQL tests";
    if (::geteuid() == 0 && std::system("id -u postgres > /dev/null 2>&1") != 0)
      return "the tests run as root and there is no `postgres` user to run the server as: run "
             "scripts/setup.sh (Debian's postgresql package creates it)";
    std::string pattern = (std::filesystem::temp_directory_path() / "ollie-pg.XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return "cannot create a temporary directory";
    dir_ = pattern;
    ::chmod(dir_.c_str(), 0755);
    if (::geteuid() == 0 && std::system(("chown postgres " + dir_).c_str()) != 0)
      return "cannot give " + dir_ + " to the postgres user";
    start_watchdog();
    if (auto e = run(bin_ + "/initdb -D " + dir_ +
                     "/data -U ollie --auth=trust --no-sync -E UTF8 "
                     "--locale=C");
        !e.empty())
      return e;
    if (auto e = start(); !e.empty()) return e;
    return run(bin_ + "/createdb -h " + dir_ + " -p 5432 -U ollie ollie");
  }

  // A shell that waits for this process's end (the pipe's write end closes with it), then
  // stops the server and removes the directory.
  void start_watchdog() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    const std::string script = "cat > /dev/null; " +
                               std::string(::geteuid() == 0 ? "runuser -u postgres -- " : "") +
                               pg_ctl() + " -m immediate stop > /dev/null 2>&1; rm -rf " + dir_;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[0], 0);
      ::setsid();
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[0]);
    watchdog_fd_ = fds[1];
  }

  std::string bin_, dir_;
  int watchdog_fd_ = -1;
};

}  // namespace ollie::test

// The PostgreSQL server of this test process as `var`; returns from the test when there is
// none (skipped with OLLIE_SKIP_POSTGRES_TESTS=1, else already failed with the reason).
#define OLLIE_REQUIRE_POSTGRES(var)                                                        \
  ::ollie::test::PgServer* var = ::ollie::test::PgServer::get();                           \
  if (!var) {                                                                              \
    if (::ollie::test::PgServer::skipped()) GTEST_SKIP() << "OLLIE_SKIP_POSTGRES_TESTS=1"; \
    return;                                                                                \
  }
