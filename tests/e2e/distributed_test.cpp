// `ollie optimize` workers on one run in a real PostgreSQL server (docs/distributed.md;
// tests/store/pg_server.h): two workers search one run without evaluating a candidate
// twice and the last to stop writes the answer, a worker whose dims and options differ is
// refused with the differences named, --finalize writes the answer again, ollie export
// and import move the run, and --storage sqlite:PATH keeps a run in that file. One test:
// one PostgreSQL server and one machine calibration.
#include <libpq-fe.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../store/pg_server.h"
#include "e2e_util.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::shell;

// One number from a query on the test server.
int64_t count(const std::string& url, const std::string& sql) {
  PGconn* conn = PQconnectdb(url.c_str());
  PGresult* r = PQexec(conn, sql.c_str());
  const int64_t n = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                        ? std::atoll(PQgetvalue(r, 0, 0))
                        : -1;
  if (n < 0) ADD_FAILURE() << sql << ": " << PQerrorMessage(conn);
  PQclear(r);
  PQfinish(conn);
  return n;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ollie-e2e-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// --storage sqlite:PATH keeps a run in that file (the machine's calibration in `env`'s
// cache is the test above's: one calibration per test process).
void sqlite_storage_keeps_the_run_in_that_file(const fs::path& dir, const std::string& spec,
                                               const std::string& env) {
  const std::string db = (dir / "my.db").string();
  const CommandResult r = shell("OLLIE_CACHE_DIR=" + (dir / "cache").string() + " " + OLLIE_BINARY +
                                " optimize " + spec +
                                " --dims M=16,N=64 --evals 1 --bench-seconds 0.05 --no-tuning-db "
                                "--storage sqlite:" +
                                db + " -o " + (dir / "out").string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  ollie::store::Store s = ollie::store::Store::open(db);
  EXPECT_EQ(s.counts().candidates, 1);
  EXPECT_TRUE(fs::exists(dir / "out" / "softmax.cpp")) << r.out;
  const CommandResult bad = shell(std::string(OLLIE_BINARY) + " optimize " + spec +
                                  " --evals 1 --storage sqlite:" + db + " --run x 2>&1");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("an SQLite file holds one run"), std::string::npos) << bad.out;
}

TEST(Distributed, TwoWorkersShareARunEvaluateNothingTwiceAndOneWritesTheAnswer) {
  OLLIE_REQUIRE_POSTGRES(server);
  const fs::path dir = fresh_dir("distributed");
  const std::string spec = (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string();
  const std::string url = server->url();
  const std::string run = "softmax-e2e";
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  auto worker = [&](const std::string& out, const std::string& extra) {
    return env + " " + OLLIE_BINARY + " optimize " + spec +
           " --dims M=16,N=64 --evals 8 --bench-seconds 0.05 --no-tuning-db --storage '" + url +
           "' --run " + run + " -o " + (dir / out).string() + extra;
  };
  // Two workers at once; each one's output in a file.
  const CommandResult both =
      shell("(" + worker("a", "") + " > " + (dir / "a.log").string() + " 2>&1; echo a=$?) & (" +
            worker("b", "") + " > " + (dir / "b.log").string() + " 2>&1; echo b=$?); wait");
  const std::string logs =
      ollie_e2e::read_file(dir / "a.log") + "\n----\n" + ollie_e2e::read_file(dir / "b.log");
  EXPECT_NE(both.out.find("a=0"), std::string::npos) << both.out << logs;
  EXPECT_NE(both.out.find("b=0"), std::string::npos) << both.out << logs;
  // Exactly one of them wrote the answer.
  EXPECT_NE(fs::exists(dir / "a" / "softmax.cpp"), fs::exists(dir / "b" / "softmax.cpp")) << logs;
  const std::string q = "\"" + run + "\".";
  EXPECT_EQ(count(url, "SELECT count(*) FROM " + q + "workers"), 2);
  EXPECT_EQ(count(url, "SELECT count(*) FROM " + q + "workers WHERE stopped IS NULL"), 0);
  // --evals counts the run's candidates; two workers checking it at the same moment may
  // each add one more (docs/distributed.md, "Budgets").
  const int64_t candidates = count(url, "SELECT count(*) FROM " + q + "candidates");
  EXPECT_GE(candidates, 8);
  EXPECT_LE(candidates, 9);
  // No candidate evaluated twice: the only second rows are confirmations of a new best.
  EXPECT_EQ(
      count(url, "SELECT count(*) FROM " + q + "evaluations") -
          count(url, "SELECT count(*) FROM " + q + "candidates"),
      count(url, "SELECT count(*) FROM " + q + "events WHERE kind IN ('confirm', 'not-confirmed')"))
      << logs;
  EXPECT_EQ(count(url, "SELECT count(*) FROM " + q + "evaluations WHERE worker IS NULL"), 0);
  // Each worker's chains are its own: 0-1 and 2-3.
  EXPECT_EQ(count(url, "SELECT count(*) FROM " + q + "steps WHERE chain NOT IN (0, 1, 2, 3)"), 0);

  // A worker of another run is refused, naming what differs.
  const CommandResult refused =
      shell(env + " " + OLLIE_BINARY + " optimize " + spec +
            " --dims M=16,N=32 --chains 3 --evals 8 --no-tuning-db "
            "--storage '" +
            url + "' --run " + run + " -o " + (dir / "c").string() + " 2>&1");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("dim N: 32 here, 64 in the run"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("option chains: 3 here, 2 in the run"), std::string::npos)
      << refused.out;

  // --finalize writes the answer again, without searching.
  const CommandResult fin =
      shell(env + " " + OLLIE_BINARY + " optimize --storage '" + url + "' --run " + run +
            " --finalize -o " + (dir / "f").string() + " 2>&1");
  EXPECT_EQ(fin.exit_code, 0) << fin.out;
  EXPECT_TRUE(fs::exists(dir / "f" / "softmax.cpp")) << fin.out;
  EXPECT_EQ(count(url, "SELECT count(*) FROM " + q + "candidates"), candidates);

  // Export and import: the run as a file (for ollie report) and back as a new run.
  const std::string file = (dir / "exported.db").string();
  const CommandResult exported = shell(std::string(OLLIE_BINARY) + " export " + run +
                                       " --storage '" + url + "' -o " + file + " 2>&1");
  EXPECT_EQ(exported.exit_code, 0) << exported.out;
  {
    ollie::store::Store s = ollie::store::Store::open(file);
    EXPECT_EQ(s.counts().candidates, candidates);
  }
  const CommandResult report = shell(std::string(OLLIE_BINARY) + " report " + file + " -o " +
                                     (dir / "report.html").string() + " 2>&1");
  EXPECT_EQ(report.exit_code, 0) << report.out;
  const CommandResult imported = shell(std::string(OLLIE_BINARY) + " import " + file +
                                       " --storage '" + url + "' --run " + run + "-back 2>&1");
  EXPECT_EQ(imported.exit_code, 0) << imported.out;
  EXPECT_EQ(count(url, "SELECT count(*) FROM \"" + run + "-back\".candidates"), candidates);

  sqlite_storage_keeps_the_run_in_that_file(dir, spec, env);
  fs::remove_all(dir);
}

}  // namespace
