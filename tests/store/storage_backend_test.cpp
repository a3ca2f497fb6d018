// The storage test suite, run against both backends of the run database (an SQLite file
// and a run in a real PostgreSQL server, tests/store/pg_server.h): the same rows written
// and read back the same way, ids, NULLs, 64-bit integers and doubles kept exactly,
// candidates idempotent on their hash, transactions all or nothing, reopening, the errors
// of create and open, a newer schema refused, threads sharing one store, and
// Location::parse's messages.
#include <libpq-fe.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

#include "pg_server.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::store;

namespace {

template <class Fn>
void expect_user_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no UserError";
  } catch (const UserError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << p;
  }
}

RunInfo sample_run() {
  RunInfo r;
  r.spec_path = "examples/matmul.py";
  r.spec_source = "def matmul(a: f32[M, K], b: f32[K, N]):\n    return a @ b  # 'quoted' \"x\" é\n";
  r.spec_sha256 = sha256_hex(r.spec_source);
  r.entry = "matmul";
  r.dims_json = R"({"M": 512, "K": 256, "N": 128})";
  r.machine_json = R"({"cpu": "test", "cores": 2})";
  r.options_json = R"({"chains": 2})";
  r.seed = 0xFEDCBA9876543210ull;  // high bit set: survives signed 64-bit integers
  return r;
}

Candidate candidate_of(const std::string& source, int64_t parent = 0) {
  Candidate c;
  c.source = source;
  c.schedule = "tile i 32";
  c.parent = parent;
  c.proposer = "mutate";
  return c;
}

Evaluation evaluation_of(int64_t candidate, const std::string& verdict, double median) {
  Evaluation e;
  e.candidate = candidate;
  e.verdict = verdict;
  e.message = "m";
  e.certificate_json = "{}";
  e.median_seconds = median;
  e.min_seconds = median / 3;  // not exact in decimal: must round-trip bit for bit
  e.ratio_vs_baseline = 1.0 / 7.0;
  e.rounds = 9;
  e.cost = -1e-300;
  e.eval_seconds = 2.5;
  return e;
}

std::string kernel(int i) { return "// kernel " + std::to_string(i) + "\n"; }

// A fresh place for one check's run: an SQLite file in `dir`, or a run of its own in the
// test server's database.
Location fresh_location(const std::string& backend, test::PgServer* server, const fs::path& dir) {
  static int counter = 0;
  ++counter;
  if (backend == "sqlite")
    return Location::parse("sqlite:" + (dir / ("run" + std::to_string(counter) + ".db")).string(),
                           "");
  Location where = Location::parse(
      server->url(), "t" + std::to_string(::getpid()) + "-" + std::to_string(counter));
  where.timeout_seconds = 20;
  return where;
}

void RunInfoRoundTripsExactly(const Location& where) {
  const RunInfo in = sample_run();
  Store s = Store::create(where, in);
  const RunInfo out = s.run();
  EXPECT_EQ(out.spec_source, in.spec_source);
  EXPECT_EQ(out.spec_sha256, in.spec_sha256);
  EXPECT_EQ(out.dims_json, in.dims_json);
  EXPECT_EQ(out.options_json, in.options_json);
  EXPECT_EQ(out.seed, in.seed);
  EXPECT_FALSE(out.created.empty());
  EXPECT_EQ(s.shared(), where.postgres());
}

void CandidatesAreIdempotentOnTheirHashAndKeepNullParents(const Location& where) {
  Store s = Store::create(where, sample_run());
  const int64_t a = s.add_candidate(candidate_of(kernel(1)));
  Candidate child = candidate_of(kernel(2), a);
  child.predicted = -0.25;
  const int64_t b = s.add_candidate(child);
  EXPECT_GT(a, 0);
  EXPECT_GT(b, a);
  Candidate again = candidate_of(kernel(1), b);
  again.proposer = "llm";
  EXPECT_EQ(s.add_candidate(again), a);
  const auto ca = s.candidate(a);
  ASSERT_TRUE(ca);
  EXPECT_EQ(ca->parent, 0);  // NULL in the database, 0 in the API
  EXPECT_EQ(ca->proposer, "mutate");
  EXPECT_EQ(ca->hash, sha256_hex(kernel(1)));
  const auto cb = s.candidate_by_hash(sha256_hex(kernel(2)));
  ASSERT_TRUE(cb);
  EXPECT_EQ(cb->id, b);
  EXPECT_EQ(cb->parent, a);
  EXPECT_FALSE(s.candidate(b + 100));
  EXPECT_FALSE(s.candidate_by_hash("00"));
  EXPECT_EQ(s.counts().candidates, 2);
}

void EvaluationsRoundTripBitForBitAndTheLatestCounts(const Location& where) {
  Store s = Store::create(where, sample_run());
  const int64_t c = s.add_candidate(candidate_of(kernel(1)));
  EXPECT_FALSE(s.evaluation_of(c));
  const Evaluation first = evaluation_of(c, "wrong", 0);
  const Evaluation second = evaluation_of(c, "pass", 1.0 / 3.0 * 1e-3);
  const int64_t e1 = s.add_evaluation(first);
  const int64_t e2 = s.add_evaluation(second);
  EXPECT_GT(e2, e1);
  const auto got = s.evaluation_of(c);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, e2);
  EXPECT_EQ(got->verdict, "pass");
  EXPECT_EQ(got->median_seconds, second.median_seconds);
  EXPECT_EQ(got->min_seconds, second.min_seconds);
  EXPECT_EQ(got->ratio_vs_baseline, second.ratio_vs_baseline);
  EXPECT_EQ(got->cost, second.cost);
  EXPECT_EQ(got->rounds, 9);
  // A constraint broken by the caller is a bug: an evaluation of no candidate.
  EXPECT_THROW(s.add_evaluation(evaluation_of(c + 100, "pass", 1)), InternalError);
}

void StepsPerChainAndUniqueStepNumbers(const Location& where) {
  Store s = Store::create(where, sample_run());
  EXPECT_EQ(s.next_step(), 0);
  const int64_t c = s.add_candidate(candidate_of(kernel(1)));
  Step st;
  st.chain = 1;
  st.current = c;
  st.temperature = 0.04;
  st.cost_current = std::log(2.0);
  for (int64_t i : {0, 2, 5}) {
    st.step = i;
    st.accepted = i == 2;
    s.add_step(st);
  }
  st.chain = 0;
  st.step = 1;
  s.add_step(st);
  const auto last = s.last_step(1);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->step, 5);
  EXPECT_EQ(last->proposed, 0);
  EXPECT_EQ(last->current, c);
  EXPECT_EQ(last->cost_current, std::log(2.0));
  EXPECT_FALSE(s.last_step(7));
  EXPECT_EQ(s.next_step(), 6);
  st.chain = 1;
  st.step = 5;
  EXPECT_THROW(s.add_step(st), InternalError);
  const Counts n = s.counts();
  EXPECT_EQ(n.steps, 4);
  EXPECT_EQ(n.accepted_steps, 1);
}

void ModelCallsPageInOrderPerProposer(const Location& where) {
  Store s = Store::create(where, sample_run());
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ModelCall m;
    m.proposer = i % 2 ? "llm:b" : "llm";
    m.request = "request " + std::to_string(i);
    m.answer = "answer";
    m.status = "ok";
    m.tokens_in = int64_t{1} << 40;
    ids.push_back(s.add_model_call(m));
  }
  const auto all = s.model_calls("llm");
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].request, "request 0");
  EXPECT_EQ(all[2].request, "request 4");
  EXPECT_EQ(all[1].tokens_in, int64_t{1} << 40);
  const auto page = s.model_calls("llm", all[0].id, 1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, all[1].id);
  EXPECT_EQ(s.counts().model_calls, 5);
}

void BestPredictionsAndEvents(const Location& where) {
  Store s = Store::create(where, sample_run());
  const double times[] = {3e-3, 1e-3, 2e-3, 0.5e-3};
  for (int i = 0; i < 4; ++i) {
    Candidate c = candidate_of(kernel(i));
    c.predicted = -0.1 * i;
    const int64_t id = s.add_candidate(c);
    s.add_evaluation(evaluation_of(id, "pass", times[i]));
    if (i == 3) s.add_evaluation(evaluation_of(id, "wrong", 0));  // no longer passes
  }
  const auto best = s.best(2);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].second.median_seconds, 1e-3);
  EXPECT_EQ(best[1].second.median_seconds, 2e-3);
  EXPECT_EQ(best[0].first.source, kernel(1));
  EXPECT_EQ(s.predictions().size(), 3u);
  s.add_event("start", "hello");
  const Counts n = s.counts();
  EXPECT_EQ(n.events, 1);
  EXPECT_EQ(n.passes, 4);
  EXPECT_EQ(n.evaluations, 5);
}

void TransactionsAreAllOrNothing(const Location& where) {
  Store s = Store::create(where, sample_run());
  {
    auto tx = s.transaction();
    const int64_t c = s.add_candidate(candidate_of(kernel(1)));
    s.add_evaluation(evaluation_of(c, "pass", 1e-3));
    // destroyed without commit: rolled back
  }
  EXPECT_FALSE(s.candidate_by_hash(sha256_hex(kernel(1))));
  EXPECT_EQ(s.counts().evaluations, 0);
  {
    auto tx = s.transaction();
    const int64_t c = s.add_candidate(candidate_of(kernel(2)));
    s.add_evaluation(evaluation_of(c, "pass", 1e-3));
    tx.commit();
  }
  EXPECT_TRUE(s.candidate_by_hash(sha256_hex(kernel(2))));
  EXPECT_EQ(s.counts().evaluations, 1);
}

void ReopenedRunHasEverythingAndCreatingItAgainFails(const Location& where) {
  int64_t c = 0;
  {
    Store s = Store::create(where, sample_run());
    c = s.add_candidate(candidate_of(kernel(1)));
    s.add_evaluation(evaluation_of(c, "pass", 1e-3));
  }
  Store s = Store::open(where);
  EXPECT_EQ(s.run().seed, sample_run().seed);
  EXPECT_EQ(s.add_candidate(candidate_of(kernel(1))), c);
  EXPECT_TRUE(s.evaluation_of(c));
  EXPECT_EQ(s.integrity_check(), "ok");
  expect_user_error([&] { Store::create(where, sample_run()); }, {"exists"});
  bool created = true;
  Store joined = Store::create_or_open(where, sample_run(), created);
  EXPECT_FALSE(created);
  EXPECT_EQ(joined.counts().candidates, 1);
}

// Runs fixed SQL on the run's database directly (not through the store).
void raw_exec(const Location& where, const std::string& sql) {
  if (where.postgres()) {
    PGconn* conn = PQconnectdb(where.url.c_str());
    ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
    const std::string full = "SET search_path TO \"" + where.run + "\"; " + sql;
    PGresult* r = PQexec(conn, full.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(conn);
    PQclear(r);
    PQfinish(conn);
  } else {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(where.path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
}

// A run of schema 2 (before workers) gains the workers, the claims and evaluations.worker.
void ARunOfSchemaTwoIsMigrated(const Location& where) {
  {
    Store s = Store::create(where, sample_run());
    s.add_evaluation(evaluation_of(s.add_candidate(candidate_of(kernel(1))), "pass", 1e-3));
  }
  // (SQLite cannot drop a column with a foreign key: that file keeps evaluations.worker,
  // which the migration then leaves as it is.)
  // (A PostgreSQL run made before its counters gets them, counted from its rows.)
  raw_exec(where, std::string(where.postgres() ? "ALTER TABLE evaluations DROP COLUMN worker; "
                                                 "DROP TABLE claims; DROP TABLE workers; "
                                                 "DROP TABLE counters; "
                                               : "DROP TABLE claims; PRAGMA user_version = 2; ") +
                      "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  Store s = Store::open(where);
  Worker w;
  w.name = "after";
  w.fingerprint = "f";
  w.machine_json = "{}";
  w.chains = 1;
  s.add_worker(w);
  EXPECT_EQ(s.claim(sha256_hex(kernel(2)), 60), Claim::Ours);
  s.add_evaluation(evaluation_of(s.add_candidate(candidate_of(kernel(2))), "pass", 1e-3));
  EXPECT_EQ(s.counts().evaluations, 2);
  EXPECT_EQ(s.counts().candidates, 2);
  EXPECT_EQ(s.counts().passes, 2);
}

void ANewerSchemaIsRefusedSayingWhichOllieReadsIt(const Location& where) {
  { Store s = Store::create(where, sample_run()); }
  if (where.postgres()) {
    PGconn* conn = PQconnectdb(where.url.c_str());
    ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
    const std::string sql =
        "UPDATE \"" + where.run + "\".meta SET value = '99' WHERE key = 'schema_version'";
    PGresult* r = PQexec(conn, sql.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(conn);
    PQclear(r);
    PQfinish(conn);
  } else {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(where.path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  expect_user_error([&] { Store::open(where); }, {"newer ollie", "schema version 99"});
}

void OpeningAMissingRunSaysHowToStartOne(const Location& where) {
  Location missing = where;
  if (missing.postgres())
    missing.run += "-missing";
  else
    missing.path += ".missing";
  expect_user_error([&] { Store::open(missing); }, {"ollie optimize"});
}

void ThreadsMayShareOneStore(const Location& where) {
  Store s = Store::create(where, sample_run());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 10; ++i) {
        const int64_t c = s.add_candidate(candidate_of(kernel(t * 100 + i)));
        s.add_evaluation(evaluation_of(c, "pass", 1e-3));
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.counts().candidates, 40);
  EXPECT_EQ(s.counts().evaluations, 40);
}

void CopiesKeepEveryRowAndIdAndIdsGoOnAfterThem(const Location& where) {
  int64_t parent = 0, child = 0;
  {
    Store s = Store::create(where, sample_run());
    Worker w;
    w.name = "h:1";
    w.fingerprint = "f";
    w.machine_json = "{}";
    w.chains = 2;
    s.add_worker(w);
    parent = s.add_candidate(candidate_of(kernel(1)));
    Candidate c = candidate_of(kernel(2), parent);
    c.predicted = 0.125;
    child = s.add_candidate(c);
    s.add_evaluation(evaluation_of(child, "pass", 1e-3 / 3));
    Step st;
    st.step = 3;
    st.chain = 1;
    st.proposed = child;
    st.current = parent;
    s.add_step(st);
    s.add_event("start", "e");
    ModelCall m;
    m.proposer = "llm";
    m.request = "q";
    m.answer = "a";
    m.status = "ok";
    s.add_model_call(m);
  }
  const fs::path file = where.postgres()
                            ? fs::temp_directory_path() / ("ollie-copy-" + where.run + ".db")
                            : fs::path(where.path + ".copy.db");
  Location there = Location::parse("sqlite:" + file.string(), "");
  Location back = where;
  if (back.postgres())
    back.run += "-back";
  else
    back.path += ".back.db";
  Store::copy(where, there);
  Store::copy(there, back);
  for (const Location& l : {there, back}) {
    SCOPED_TRACE(l.describe());
    Store s = Store::open(l);
    const Counts n = s.counts();
    EXPECT_EQ(n.candidates, 2);
    EXPECT_EQ(n.evaluations, 1);
    EXPECT_EQ(n.steps, 1);
    EXPECT_EQ(n.events, 1);
    EXPECT_EQ(n.model_calls, 1);
    EXPECT_EQ(s.run().seed, sample_run().seed);
    ASSERT_EQ(s.workers().size(), 1u);
    EXPECT_EQ(s.workers()[0].chains, 2);
    const auto c = s.candidate(child);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->parent, parent);
    const Evaluation e = *s.evaluation_of(child), original = evaluation_of(child, "pass", 1e-3 / 3);
    EXPECT_EQ(e.min_seconds, original.min_seconds);
    EXPECT_EQ(e.ratio_vs_baseline, original.ratio_vs_baseline);
    EXPECT_EQ(e.message, original.message);
    EXPECT_EQ(e.certificate_json, original.certificate_json);
    EXPECT_EQ(e.rounds, original.rounds);
    EXPECT_EQ(s.last_step(1)->current, parent);
    EXPECT_EQ(s.model_calls("llm").size(), 1u);
    EXPECT_EQ(s.predictions().size(), 1u);
    // New rows get ids after the copied ones.
    EXPECT_GT(s.add_candidate(candidate_of(kernel(3))), child);
  }
  expect_user_error([&] { Store::copy(where, there); }, {"exists"});
  fs::remove(file);
}

// Every check above on one backend, each on a run of its own. One test per backend (not per
// check): ctest runs each test in a process of its own, and each process starts its own
// PostgreSQL server (about a CPU second).
class StorageTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StorageTest, TheStorageSuite) {
  test::PgServer* server = nullptr;
  if (GetParam() == "postgresql") {
    OLLIE_REQUIRE_POSTGRES(pg);
    server = pg;
  }
  std::string pattern = (fs::temp_directory_path() / "ollie-storage-test.XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  const std::pair<const char*, void (*)(const Location&)> checks[] = {
      {"RunInfoRoundTripsExactly", RunInfoRoundTripsExactly},
      {"CandidatesAreIdempotentOnTheirHashAndKeepNullParents",
       CandidatesAreIdempotentOnTheirHashAndKeepNullParents},
      {"EvaluationsRoundTripBitForBitAndTheLatestCounts",
       EvaluationsRoundTripBitForBitAndTheLatestCounts},
      {"StepsPerChainAndUniqueStepNumbers", StepsPerChainAndUniqueStepNumbers},
      {"ModelCallsPageInOrderPerProposer", ModelCallsPageInOrderPerProposer},
      {"BestPredictionsAndEvents", BestPredictionsAndEvents},
      {"TransactionsAreAllOrNothing", TransactionsAreAllOrNothing},
      {"ReopenedRunHasEverythingAndCreatingItAgainFails",
       ReopenedRunHasEverythingAndCreatingItAgainFails},
      {"ANewerSchemaIsRefusedSayingWhichOllieReadsIt",
       ANewerSchemaIsRefusedSayingWhichOllieReadsIt},
      {"OpeningAMissingRunSaysHowToStartOne", OpeningAMissingRunSaysHowToStartOne},
      {"ThreadsMayShareOneStore", ThreadsMayShareOneStore},
      {"ARunOfSchemaTwoIsMigrated", ARunOfSchemaTwoIsMigrated},
      {"CopiesKeepEveryRowAndIdAndIdsGoOnAfterThem", CopiesKeepEveryRowAndIdAndIdsGoOnAfterThem},
  };
  for (const auto& [name, check] : checks) {
    SCOPED_TRACE(name);
    check(fresh_location(GetParam(), server, dir));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, StorageTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(StorageLocation, ParseNamesTheFlagAndWhatToWrite) {
  const Location l = Location::parse("sqlite:/tmp/x/run.db", "");
  EXPECT_FALSE(l.postgres());
  EXPECT_EQ(l.path, "/tmp/x/run.db");
  const Location p = Location::parse("postgresql://u:secret@db.example/ollie", "mm-1");
  EXPECT_TRUE(p.postgres());
  EXPECT_EQ(p.run, "mm-1");
  EXPECT_EQ(p.describe().find("secret"), std::string::npos) << p.describe();
  expect_user_error([] { Location::parse("postgresql://h/db", ""); }, {"--run NAME"});
  expect_user_error([] { Location::parse("postgresql://h/db", "Bad Name"); },
                    {"--run", "lowercase"});
  expect_user_error([] { Location::parse("sqlite:/tmp/x.db", "r1"); }, {"--run r1"});
  expect_user_error([] { Location::parse("mysql://h/db", ""); },
                    {"--storage", "sqlite:PATH", "postgresql://"});
  expect_user_error([] { Location::parse("postgresql://u:pw@h/db?password=pw2", ""); }, {"***"});
}

TEST(StorageLocation, AnUnreachableServerStopsAfterTheStorageTimeout) {
  Location l = Location::parse("postgresql:///ollie?host=/nonexistent-ollie-socket-dir", "r1");
  l.timeout_seconds = 1;
  int lines = 0;
  l.progress = [&](const std::string&) { ++lines; };
  EXPECT_THROW(Store::open(l), StorageUnavailable);
  EXPECT_GE(lines, 1);
}

}  // namespace
