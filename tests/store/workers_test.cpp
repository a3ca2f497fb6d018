// Workers of a shared run at the storage level (docs/distributed.md), with a stand-in
// evaluator (a short sleep, no compiling): claims exclusive until their worker stops or
// its heartbeat is a lease old, chains numbered per worker, the finalize marker set once
// (both backends); and against a real PostgreSQL server, worker processes that evaluate no
// candidate twice and lose nothing when one is killed with SIGKILL at random moments, or
// when the server is stopped for 10 s mid-run.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "pg_server.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::store;

namespace {

RunInfo sample_run() {
  RunInfo r;
  r.spec_path = "spec.py";
  r.spec_source = "def f(a: f32[N]):\n    return a + 1\n";
  r.spec_sha256 = sha256_hex(r.spec_source);
  r.entry = "f";
  r.dims_json = R"({"N": 64})";
  r.machine_json = R"({"fingerprint": "test"})";
  r.options_json = "{}";
  return r;
}

std::string kernel(int i) { return "// stand-in kernel " + std::to_string(i) + "\n"; }

Worker worker_named(const std::string& name, int chains) {
  Worker w;
  w.name = name;
  w.fingerprint = "test";
  w.machine_json = "{}";
  w.chains = chains;
  return w;
}

// Records a stand-in evaluation of `source` as the search does: the candidate, then its
// evaluation and an event in one transaction (a confirmed new best's shape).
void record(Store& s, const std::string& source) {
  Candidate c;
  c.source = source;
  c.proposer = "stand-in";
  const int64_t id = s.add_candidate(c);
  Evaluation e;
  e.candidate = id;
  e.verdict = "pass";
  e.median_seconds = 1e-3;
  auto tx = s.transaction();
  s.add_evaluation(e);
  s.add_event("stand-in", "evaluated");
  tx.commit();
}

// A fresh run's place: an SQLite file in `dir`, or a run of its own in the test server.
Location fresh_location(test::PgServer* server, const fs::path& dir) {
  static int counter = 0;
  ++counter;
  if (!server)
    return Location::parse("sqlite:" + (dir / ("run" + std::to_string(counter) + ".db")).string(),
                           "");
  Location where = Location::parse(
      server->url(), "w" + std::to_string(::getpid()) + "-" + std::to_string(counter));
  where.timeout_seconds = 60;
  return where;
}

void ClaimsAreExclusiveUntilTheHolderStopsOrFallsSilent(const Location& where) {
  Store a = Store::create(where, sample_run());
  Store b = Store::open(where);
  // A Store without a worker (one process on a file) never waits for anyone.
  EXPECT_EQ(b.claim(sha256_hex(kernel(0)), 60), Claim::Ours);
  const Worker wa = a.add_worker(worker_named("a", 2));
  const Worker wb = b.add_worker(worker_named("b", 3));
  EXPECT_EQ(wa.first_chain, 0);
  EXPECT_EQ(wb.first_chain, 2);  // after a's chains
  ASSERT_EQ(a.workers().size(), 2u);
  EXPECT_EQ(a.workers()[1].name, "b");

  const std::string h1 = sha256_hex(kernel(1));
  EXPECT_EQ(a.claim(h1, 60), Claim::Ours);
  EXPECT_EQ(b.claim(h1, 60), Claim::Evaluating);
  EXPECT_EQ(a.claim(h1, 60), Claim::Ours);  // its own claim again
  record(a, kernel(1));
  EXPECT_EQ(b.claim(h1, 60), Claim::Evaluated);
  EXPECT_EQ(a.claim(h1, 60), Claim::Evaluated);

  // Silent for longer than the lease: a's claim is b's.
  const std::string h2 = sha256_hex(kernel(2));
  EXPECT_EQ(a.claim(h2, 60), Claim::Ours);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  b.heartbeat();
  EXPECT_EQ(b.claim(h2, 60), Claim::Evaluating);
  if (!where.postgres()) {
    // (In PostgreSQL a server younger than the lease protects every claim: the server
    // was started by this test process moments ago; the process test below covers it.)
    EXPECT_EQ(b.claim(h2, 0.5), Claim::Ours);
    // a beat again: its next claim holds against a short lease.
    a.heartbeat();
    const std::string h3 = sha256_hex(kernel(3));
    EXPECT_EQ(a.claim(h3, 0.5), Claim::Ours);
    EXPECT_EQ(b.claim(h3, 0.5), Claim::Evaluating);
  }
  // A worker that stopped frees its claims at once.
  const std::string h4 = sha256_hex(kernel(4));
  EXPECT_EQ(b.claim(h4, 60), Claim::Ours);
  b.stop_worker();
  EXPECT_EQ(a.claim(h4, 60), Claim::Ours);
  EXPECT_TRUE(a.workers()[1].stopped);

  // The answer is written once.
  EXPECT_TRUE(a.set_once("finalized_by", "1"));
  EXPECT_FALSE(b.set_once("finalized_by", "2"));
}

void ANewWorkersChainsComeAfterEveryStepsChain(const Location& where) {
  Store s = Store::create(where, sample_run());
  const int64_t c = s.add_candidate([] {
    Candidate k;
    k.source = kernel(0);
    k.proposer = "baseline";
    return k;
  }());
  Step st;
  st.chain = 4;  // e.g. a run made by one process with 5 chains, then shared
  st.current = c;
  s.add_step(st);
  EXPECT_EQ(s.add_worker(worker_named("late", 2)).first_chain, 5);
}

// A stand-in evaluation of `source` at `seconds`, by the store's worker (if any).
int64_t timed(Store& s, const std::string& source, double seconds) {
  Candidate c;
  c.source = source;
  c.proposer = "stand-in";
  const int64_t id = s.add_candidate(c);
  Evaluation e;
  e.candidate = id;
  e.verdict = "pass";
  e.median_seconds = seconds;
  s.add_evaluation(e);
  return id;
}

// Workers of two machine kinds (--allow-mixed-machines): each kind's best is read from
// its own evaluations (times of two machines do not compare), and a candidate one kind
// evaluated is claimed again only to be timed on the other kind.
void MachineKindsKeepTheirOwnBests(const Location& where) {
  RunInfo info = sample_run();
  info.machine_json = R"({"fingerprint": "fast"})";
  Store a = Store::create(where, info);
  Store b = Store::open(where), b2 = Store::open(where), any = Store::open(where);
  Worker wa = worker_named("a", 1), wb = worker_named("b", 1), wb2 = worker_named("b2", 1);
  wa.fingerprint = "fast";
  wb.fingerprint = wb2.fingerprint = "slow";
  a.add_worker(wa);
  b.add_worker(wb);
  b2.add_worker(wb2);
  EXPECT_EQ(b.machine_kind(), "slow");
  EXPECT_EQ(any.machine_kind(), "");
  const int64_t k1 = timed(a, kernel(1), 1e-3);
  const int64_t k2 = timed(a, kernel(2), 2e-3);
  // Claims: evaluated somewhere, so not evaluated again as a new candidate; timed on the
  // slow kind by one of its workers at a time.
  const std::string h2 = sha256_hex(kernel(2));
  EXPECT_EQ(b.claim(h2, 60), Claim::Evaluated);
  EXPECT_EQ(b.claim(h2, 60, true), Claim::Ours);
  EXPECT_EQ(b2.claim(h2, 60, true), Claim::Evaluating);
  EXPECT_EQ(a.claim(h2, 60, true), Claim::Evaluated);
  timed(b, kernel(2), 20e-3);
  EXPECT_EQ(b2.claim(h2, 60, true), Claim::Evaluated);
  // Each kind's best is its own: the slow kind never sees the fast kind's 1 ms.
  const auto fast = a.best(5), slow = b.best(5);
  ASSERT_EQ(fast.size(), 2u);
  EXPECT_EQ(fast[0].first.id, k1);
  EXPECT_EQ(fast[1].second.median_seconds, 2e-3);  // its latest on the fast kind
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].first.id, k2);
  EXPECT_EQ(slow[0].second.median_seconds, 20e-3);
  EXPECT_EQ(b.best_on("fast", 1)[0].first.id, k1);
  EXPECT_EQ(b.evaluation_here(k2)->median_seconds, 20e-3);
  EXPECT_FALSE(b.evaluation_here(k1).has_value());
  EXPECT_EQ(a.evaluation_here(k2)->median_seconds, 2e-3);
  // Without a kind: every evaluation, each candidate's latest (as a run of one machine).
  const auto all = any.best(5);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].second.median_seconds, 20e-3);
  const auto kinds = any.machine_kinds();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0], std::make_pair(std::string("fast"), int64_t{2}));
  EXPECT_EQ(kinds[1], std::make_pair(std::string("slow"), int64_t{1}));
  // An evaluation without a worker was timed on the run's own machine.
  Evaluation e;
  e.candidate = k2;
  e.verdict = "pass";
  e.median_seconds = 0.5e-3;
  any.add_evaluation(e);
  EXPECT_EQ(a.best(1)[0].first.id, k2);
  EXPECT_EQ(b.best(1)[0].second.median_seconds, 20e-3);
}

// The checks above on one backend (one test per backend: ctest runs each test in a process
// of its own, which starts its own PostgreSQL server).
class WorkersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkersTest, ClaimsLeasesAndChains) {
  test::PgServer* server = nullptr;
  if (GetParam() == "postgresql") {
    OLLIE_REQUIRE_POSTGRES(pg);
    server = pg;
  }
  std::string pattern = (fs::temp_directory_path() / "ollie-workers-test.XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  {
    SCOPED_TRACE("claims");
    ClaimsAreExclusiveUntilTheHolderStopsOrFallsSilent(fresh_location(server, dir));
  }
  {
    SCOPED_TRACE("chains");
    ANewWorkersChainsComeAfterEveryStepsChain(fresh_location(server, dir));
  }
  {
    SCOPED_TRACE("machine kinds");
    MachineKindsKeepTheirOwnBests(fresh_location(server, dir));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkersTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// ---- worker processes against the server ----

constexpr int kPool = 400;
constexpr double kLease = 3;

// A worker process: registers, beats its heart from a thread, and evaluates the pool's
// candidates in its own random order (claim, then a 10 ms stand-in evaluation), until
// every candidate of the pool has an evaluation. Progress lines go to `log`.
[[noreturn]] void worker_process(Location where, const std::string& log, uint64_t seed) {
  int code = 0;
  try {
    std::ofstream out(log, std::ios::app);
    where.progress = [&out](const std::string& line) { out << line << std::endl; };
    Store s = Store::open(where);
    s.add_worker(worker_named("p" + std::to_string(::getpid()), 1));
    std::atomic<bool> done{false};
    std::thread beat([&] {
      while (!done) {
        try {
          s.heartbeat();
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
    std::mt19937_64 rng(seed);
    std::vector<int> order(kPool);
    for (int i = 0; i < kPool; ++i) order[static_cast<size_t>(i)] = i;
    while (true) {
      std::shuffle(order.begin(), order.end(), rng);
      int missing = 0;
      for (int i : order) {
        const std::string source = kernel(i);
        const std::string hash = sha256_hex(source);
        const Claim c = s.claim(hash, kLease);
        if (c == Claim::Evaluated) continue;
        ++missing;
        if (c != Claim::Ours) continue;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // "evaluating"
        record(s, source);
      }
      if (missing == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    s.stop_worker();
    done = true;
    beat.join();
    out << "finished" << std::endl;
  } catch (const std::exception& e) {
    std::ofstream(log, std::ios::app) << "error: " << e.what() << std::endl;
    code = 1;
  }
  ::_exit(code);
}

pid_t start_worker(const Location& where, const std::string& log, uint64_t seed) {
  const pid_t pid = ::fork();
  if (pid == 0) worker_process(where, log, seed);
  return pid;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The rows of a table of the run, counted by the server (not by the run's counters).
int64_t rows(const Location& where, const std::string& what) {
  PGconn* conn = PQconnectdb(where.url.c_str());
  const size_t cut = what.rfind(' ');  // "EXPRESSION TABLE"
  const std::string sql = "SELECT count(" + what.substr(0, cut) + ") FROM \"" + where.run + "\"." +
                          what.substr(cut + 1);
  PGresult* r = PQexec(conn, sql.c_str());
  const int64_t n = PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoll(PQgetvalue(r, 0, 0)) : -1;
  if (n < 0) ADD_FAILURE() << sql << ": " << PQerrorMessage(conn);
  PQclear(r);
  PQfinish(conn);
  return n;
}

// Every candidate of the pool has exactly one evaluation; the run's counters (what
// counts() reads on PostgreSQL) are its rows, whatever the kills cut off.
void expect_each_evaluated_once(const Location& where) {
  Store s = Store::open(where);
  const Counts n = s.counts();
  EXPECT_EQ(n.candidates, kPool);
  EXPECT_EQ(n.evaluations, kPool) << "a candidate was evaluated twice (or one was lost)";
  EXPECT_EQ(n.candidates, rows(where, "* candidates"));
  EXPECT_EQ(n.evaluations, rows(where, "* evaluations"));
  EXPECT_EQ(n.passes, rows(where, "DISTINCT candidate evaluations"));
  EXPECT_EQ(n.events, rows(where, "* events"));
  for (int i = 0; i < kPool; ++i) {
    const auto c = s.candidate_by_hash(sha256_hex(kernel(i)));
    ASSERT_TRUE(c) << "candidate " << i << " lost";
    EXPECT_TRUE(s.evaluation_of(c->id)) << "candidate " << i << " not evaluated";
  }
}

void ThreeWorkersOneKilledAtRandomMomentsEvaluateNothingTwice(const Location& where) {
  { Store::create(where, sample_run()); }
  const std::string log = (fs::temp_directory_path() / ("ollie-workers-" + where.run)).string();
  std::vector<pid_t> pids;
  for (uint64_t i = 0; i < 3; ++i) pids.push_back(start_worker(where, log, i + 1));
  std::mt19937_64 rng(7);
  int kills = 0;
  for (; kills < 20; ++kills) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 90)(rng)));
    const size_t victim = std::uniform_int_distribution<size_t>(0, 2)(rng);
    ::kill(pids[victim], SIGKILL);
    ::waitpid(pids[victim], nullptr, 0);
    pids[victim] = start_worker(where, log, 100 + static_cast<uint64_t>(kills));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  }
  EXPECT_EQ(kills, 20);
  expect_each_evaluated_once(where);
  fs::remove(log);
}

void TheServerStoppedForTenSecondsMidRunLosesNothing(const Location& where,
                                                     test::PgServer* server) {
  { Store::create(where, sample_run()); }
  const std::string log = (fs::temp_directory_path() / ("ollie-workers-" + where.run)).string();
  std::vector<pid_t> pids;
  for (uint64_t i = 0; i < 2; ++i) pids.push_back(start_worker(where, log, i + 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(server->stop(), "");
  std::this_thread::sleep_for(std::chrono::seconds(10));
  ASSERT_EQ(server->start(), "");
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(log);
  }
  const std::string lines = read_file(log);
  EXPECT_NE(lines.find("storage: the database server is unreachable"), std::string::npos) << lines;
  expect_each_evaluated_once(where);
  fs::remove(log);
}

void AWorkerStopsCleanlyAfterTheStorageTimeout(const Location& run, test::PgServer* server) {
  { Store::create(run, sample_run()); }
  Location where = run;
  where.timeout_seconds = 2;
  Store s = Store::open(where);
  ASSERT_EQ(server->stop(), "");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(s.add_event("x", "y"), StorageUnavailable);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(server->start(), "");
  EXPECT_GE(waited, 1.0);
  EXPECT_LT(waited, 10.0);
  // The connection comes back on the next call.
  s.add_event("x", "after the server came back");
  EXPECT_EQ(s.counts().events, 1);
}

// Worker processes against one server (one test: one server start).
TEST(WorkerProcesses, KilledWorkersAStoppedServerAndTheStorageTimeout) {
  OLLIE_REQUIRE_POSTGRES(server);
  {
    SCOPED_TRACE("SIGKILL");
    ThreeWorkersOneKilledAtRandomMomentsEvaluateNothingTwice(fresh_location(server, ""));
  }
  {
    SCOPED_TRACE("server stopped");
    TheServerStoppedForTenSecondsMidRunLosesNothing(fresh_location(server, ""), server);
  }
  {
    SCOPED_TRACE("storage timeout");
    AWorkerStopsCleanlyAfterTheStorageTimeout(fresh_location(server, ""), server);
  }
}

}  // namespace
