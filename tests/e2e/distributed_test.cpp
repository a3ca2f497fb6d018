// `ollie optimize` workers on one run in a real PostgreSQL server (docs/distributed.md;
// tests/store/pg_server.h): two workers search one run without evaluating a candidate
// twice and the last to stop writes the answer, a worker whose dims and options differ is
// refused with the differences named, --finalize writes the answer again, ollie export
// and import move the run, and --storage sqlite:PATH keeps a run in that file. One test:
// one PostgreSQL server and one machine calibration.
#include <libpq-fe.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "../store/pg_server.h"
#include "slurm_cluster.h"
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

// Two workers started by the Slurm recipe (deploy/slurm/workers.sbatch): a job array of two
// tasks on the test's one-node cluster (tests/e2e/slurm_cluster.h), or, with
// OLLIE_SKIP_SLURM_TESTS=1, the script itself run twice at once with a stand-in `srun` that
// runs its command. Every setting comes from the environment, as on a cluster. What each
// task printed, and whether both ran.
std::string run_the_slurm_recipe(const fs::path& dir, const std::string& env) {
  const std::string script = (fs::path(OLLIE_SOURCE_DIR) / "deploy/slurm/workers.sbatch").string();
  const std::string logs = (dir / "task-%a.log").string();
  std::string out;
  if (ollie::test::SlurmCluster* slurm = ollie::test::SlurmCluster::get()) {
    const CommandResult submitted =
        shell("cd " + dir.string() + " && " + env + " " + slurm->env() +
              "sbatch --parsable --array=0-1 --cpus-per-task=1 --output=" + logs + " " + script +
              " 2>&1");
    EXPECT_EQ(submitted.exit_code, 0) << submitted.out;
    std::string id = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
    EXPECT_TRUE(slurm->wait_for(id, 240)) << "the job array did not finish in 240 s";
  } else if (!ollie::test::SlurmCluster::skipped()) {
    return "";  // the cluster did not start: the test has failed with the reason
  } else {
    const fs::path stub = dir / "bin";
    fs::create_directories(stub);
    // srun's options, then the command.
    std::ofstream(stub / "srun") << "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; "
                                    "done\nexec \"$@\"\n";
    fs::permissions(stub / "srun", fs::perms::owner_all);
    auto task = [&](int i) {
      return "(cd " + dir.string() + " && PATH=" + stub.string() +
             ":$PATH SLURM_ARRAY_TASK_ID=" + std::to_string(i) + " SLURM_CPUS_PER_TASK=1 " + env +
             " bash " + script + " > " + (dir / ("task-" + std::to_string(i) + ".log")).string() +
             " 2>&1)";
    };
    shell(task(0) + " & " + task(1) + "; wait");
  }
  for (int i = 0; i < 2; ++i)
    out += ollie_e2e::read_file(dir / ("task-" + std::to_string(i) + ".log")) + "\n----\n";
  return out;
}

TEST(Distributed, TwoWorkersShareARunEvaluateNothingTwiceAndOneWritesTheAnswer) {
  OLLIE_REQUIRE_POSTGRES(server);
  const fs::path dir = fresh_dir("distributed");
  const std::string spec = (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string();
  const std::string url = server->url();
  const std::string run = "softmax-e2e";
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  // The recipe's settings: the database, the run, the spec and its options, the budget.
  const std::string recipe_env = env + " OLLIE='" + OLLIE_BINARY + "' OLLIE_STORAGE='" + url +
                                 "' OLLIE_RUN=" + run + " OLLIE_SPEC=" + spec +
                                 " OLLIE_ARGS='--dims M=16,N=64 --bench-seconds 0.05 "
                                 "--no-tuning-db' OLLIE_BUDGET='--evals 8' OLLIE_OUT=" +
                                 dir.string();
  const std::string logs = run_the_slurm_recipe(dir, recipe_env);
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs.find("worker 1 ("), std::string::npos) << logs;
  EXPECT_NE(logs.find("worker 2 ("), std::string::npos) << logs;
  // Exactly one of them wrote the answer.
  const bool first = fs::exists(dir / "task-0" / "softmax.cpp");
  EXPECT_NE(first, fs::exists(dir / "task-1" / "softmax.cpp")) << logs;
  // With its report (the run copied into a temporary file for it, and removed).
  EXPECT_TRUE(fs::exists(dir / (first ? "task-0" : "task-1") / "report.html")) << logs;
  for (const auto& e : fs::directory_iterator(dir / (first ? "task-0" : "task-1")))
    EXPECT_EQ(e.path().filename().string().rfind(".report-", 0), std::string::npos) << e.path();
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

  // A worker of another machine kind (a test kind: OLLIE_TEST_MACHINE_KIND) is refused
  // unless --allow-mixed-machines; with it, it times the baseline on its own machine.
  const std::string b_env = env + " OLLIE_TEST_MACHINE_KIND=b";
  auto b_worker = [&](const std::string& extra) {
    return shell(b_env + " " + OLLIE_BINARY + " optimize " + spec +
                 " --dims M=16,N=64 --bench-seconds 0.05 --no-tuning-db --threads 1 --evals 8 "
                 "--storage '" +
                 url + "' --run " + run + " -o " + (dir / "b").string() + extra + " 2>&1");
  };
  const CommandResult b_refused = b_worker("");
  EXPECT_EQ(b_refused.exit_code, 1) << b_refused.out;
  EXPECT_NE(b_refused.out.find("the machine differs"), std::string::npos) << b_refused.out;
  const CommandResult b_joined = b_worker(" --allow-mixed-machines");
  EXPECT_EQ(b_joined.exit_code, 0) << b_joined.out;
  EXPECT_EQ(count(url, "SELECT count(DISTINCT w.fingerprint) FROM " + q + "evaluations e JOIN " +
                           q + "workers w ON w.id = e.worker JOIN " + q +
                           "candidates c ON c.id = e.candidate WHERE c.proposer = 'baseline'"),
            2);

  // --finalize on a machine of kind b writes the best timed on kind b (its baseline: it
  // timed nothing else) and names the other kind, without searching; with the report.
  const CommandResult fin =
      shell(b_env + " " + OLLIE_BINARY + " optimize --storage '" + url + "' --run " + run +
            " --finalize -o " + (dir / "f").string() + " 2>&1");
  EXPECT_EQ(fin.exit_code, 0) << fin.out;
  EXPECT_TRUE(fs::exists(dir / "f" / "softmax.cpp")) << fin.out;
  EXPECT_TRUE(fs::exists(dir / "f" / "report.html")) << fin.out;
  const std::string summary = ollie_e2e::read_file(dir / "f" / "summary.md");
  EXPECT_NE(summary.find("- best: the baseline itself"), std::string::npos) << summary;
  EXPECT_NE(summary.find("- machine kinds: this answer was timed on "), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("| test kind b; the run's other kinds"), std::string::npos) << summary;
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
  // The report straight from the database (a temporary copy, removed).
  const CommandResult direct =
      shell(std::string(OLLIE_BINARY) + " report --storage '" + url + "' --run " + run + " -o " +
            (dir / "direct.html").string() + " 2>&1");
  EXPECT_EQ(direct.exit_code, 0) << direct.out;
  EXPECT_GT(fs::file_size(dir / "direct.html"), 1000u) << direct.out;
  const CommandResult imported = shell(std::string(OLLIE_BINARY) + " import " + file +
                                       " --storage '" + url + "' --run " + run + "-back 2>&1");
  EXPECT_EQ(imported.exit_code, 0) << imported.out;
  EXPECT_EQ(count(url, "SELECT count(*) FROM \"" + run + "-back\".candidates"), candidates);

  sqlite_storage_keeps_the_run_in_that_file(dir, spec, env);
  fs::remove_all(dir);
}

}  // namespace
