// Tests of the run database: every row type written and read back, candidates idempotent
// on their hash, transactions (both rows or neither), the errors of create and open, a
// writer killed with SIGKILL at any moment (no committed row lost, nothing half-written),
// flat memory over a long run, and best()'s order and filtering.
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "build/build.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::store;

namespace {

RunInfo sample_run() {
  RunInfo r;
  r.spec_path = "examples/matmul.py";
  r.spec_source = "def matmul(a: f32[M, K], b: f32[K, N]):\n    return a @ b\n";
  r.spec_sha256 = sha256_hex(r.spec_source);
  r.entry = "matmul";
  r.dims_json = R"({"M": 512, "K": 256, "N": 128})";
  r.machine_json = R"({"cpu": "test", "cores": 2})";
  r.options_json = R"({"budget": "1h", "chains": 2})";
  r.seed = 0xFEDCBA9876543210ull;  // high bit set: survives SQLite's signed integers
  return r;
}

Candidate make_candidate(const std::string& source, int64_t parent = 0,
                         const std::string& proposer = "mutate") {
  Candidate c;
  c.source = source;
  c.schedule = "tile i 32; vectorize j";
  c.rewrites = "";
  c.parent = parent;
  c.proposer = proposer;
  return c;
}

Evaluation make_evaluation(int64_t candidate, const std::string& verdict, double median) {
  Evaluation e;
  e.candidate = candidate;
  e.verdict = verdict;
  e.message = verdict == "pass" ? "" : "max error 3.5 at [1, 2]";
  e.penalty = verdict == "pass" ? 0.0 : 0.75;
  e.certificate_json = R"({"suites": 6})";
  e.median_seconds = median;
  e.min_seconds = median * 0.9;
  e.mad_seconds = median * 0.01;
  e.ratio_vs_baseline = 0.5;
  e.rounds = 21;
  e.cost = 1.25;
  e.eval_seconds = 3.5;
  return e;
}

std::string kernel_source(int64_t i, size_t pad = 0) {
  return "// candidate " + std::to_string(i) + "\n" + std::string(pad, 'x') +
         "\nextern \"C\" void ollie_kernel() {}\n";
}

// Expects `fn` to throw a UserError whose message contains every one of `parts`.
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

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-store-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = (fs::path(dir_) / "run.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::string path_;
};

// ---- round trips ----

TEST_F(StoreTest, RunInfoRoundTrip) {
  RunInfo in = sample_run();
  {
    Store s = Store::create(path_, in);
    RunInfo out = s.run();
    EXPECT_EQ(out.spec_path, in.spec_path);
    EXPECT_EQ(out.seed, in.seed);
    EXPECT_TRUE(
        std::regex_match(out.created, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << out.created;
  }
  Store s = Store::open(path_);
  RunInfo out = s.run();
  EXPECT_EQ(out.spec_path, in.spec_path);
  EXPECT_EQ(out.spec_source, in.spec_source);
  EXPECT_EQ(out.spec_sha256, in.spec_sha256);
  EXPECT_EQ(out.entry, in.entry);
  EXPECT_EQ(out.dims_json, in.dims_json);
  EXPECT_EQ(out.machine_json, in.machine_json);
  EXPECT_EQ(out.options_json, in.options_json);
  EXPECT_EQ(out.seed, in.seed);
  EXPECT_EQ(s.path(), path_);
}

TEST_F(StoreTest, CandidateRoundTrip) {
  Store s = Store::create(path_, sample_run());
  Candidate base = make_candidate(kernel_source(0), 0, "baseline");
  base.rewrites = "online_softmax; reciprocal";
  int64_t id0 = s.add_candidate(base);
  // Sources are text with anything in them, including NUL bytes and quotes.
  static const char kOdd[] = "a\0b'\"; DROP TABLE candidates; --";
  std::string odd = kernel_source(1) + std::string(kOdd, sizeof kOdd - 1);
  int64_t id1 = s.add_candidate(make_candidate(odd, id0));
  EXPECT_GT(id0, 0);
  EXPECT_NE(id0, id1);

  auto c0 = s.candidate(id0);
  ASSERT_TRUE(c0);
  EXPECT_EQ(c0->id, id0);
  EXPECT_EQ(c0->hash, sha256_hex(base.source));
  EXPECT_EQ(c0->source, base.source);
  EXPECT_EQ(c0->schedule, base.schedule);
  EXPECT_EQ(c0->rewrites, base.rewrites);
  EXPECT_EQ(c0->parent, 0);
  EXPECT_EQ(c0->proposer, "baseline");
  EXPECT_FALSE(c0->created.empty());

  auto c1 = s.candidate_by_hash(sha256_hex(odd));
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->id, id1);
  EXPECT_EQ(c1->source, odd);
  EXPECT_EQ(c1->parent, id0);
  EXPECT_EQ(c1->proposer, "mutate");

  EXPECT_FALSE(s.candidate(12345));
  EXPECT_FALSE(s.candidate_by_hash(sha256_hex("no such source")));
  EXPECT_EQ(s.counts().candidates, 2);
}

TEST_F(StoreTest, AddCandidateIsIdempotentOnHash) {
  Store s = Store::create(path_, sample_run());
  int64_t a = s.add_candidate(make_candidate(kernel_source(7), 0, "llm"));
  Candidate again = make_candidate(kernel_source(7), a, "mutate");
  again.schedule = "something else";
  again.hash = sha256_hex(again.source);  // a correct hash may be given
  EXPECT_EQ(s.add_candidate(again), a);
  EXPECT_EQ(s.counts().candidates, 1);
  auto c = s.candidate(a);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->proposer, "llm");  // the first one stays
  EXPECT_EQ(c->parent, 0);
  EXPECT_NE(s.add_candidate(make_candidate(kernel_source(8))), a);
  EXPECT_EQ(s.counts().candidates, 2);

  Candidate wrong = make_candidate(kernel_source(9));
  wrong.hash = sha256_hex("another source");
  EXPECT_THROW(s.add_candidate(wrong), InternalError);
  // A parent that does not exist breaks a foreign key: a bug in the caller.
  EXPECT_THROW(s.add_candidate(make_candidate(kernel_source(10), 999)), InternalError);
  EXPECT_EQ(s.counts().candidates, 2);
}

TEST_F(StoreTest, EvaluationRoundTripAndLatest) {
  Store s = Store::create(path_, sample_run());
  int64_t c = s.add_candidate(make_candidate(kernel_source(1)));
  EXPECT_FALSE(s.evaluation_of(c));

  Evaluation first = make_evaluation(c, "wrong", 0);
  int64_t e1 = s.add_evaluation(first);
  Evaluation second = make_evaluation(c, "pass", 2.5e-4);
  second.certificate_json = R"({"suites": 12, "level": "full"})";
  int64_t e2 = s.add_evaluation(second);
  EXPECT_GT(e2, e1);

  auto e = s.evaluation_of(c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->id, e2);
  EXPECT_EQ(e->candidate, c);
  EXPECT_EQ(e->verdict, "pass");
  EXPECT_EQ(e->message, "");
  EXPECT_EQ(e->penalty, 0.0);
  EXPECT_EQ(e->certificate_json, second.certificate_json);
  EXPECT_EQ(e->median_seconds, second.median_seconds);
  EXPECT_EQ(e->min_seconds, second.min_seconds);
  EXPECT_EQ(e->mad_seconds, second.mad_seconds);
  EXPECT_EQ(e->ratio_vs_baseline, 0.5);
  EXPECT_EQ(e->rounds, 21);
  EXPECT_EQ(e->cost, 1.25);
  EXPECT_EQ(e->eval_seconds, 3.5);
  EXPECT_FALSE(e->created.empty());

  EXPECT_THROW(s.add_evaluation(make_evaluation(999, "pass", 1)), InternalError);
  EXPECT_EQ(s.counts().evaluations, 2);
}

TEST_F(StoreTest, StepRoundTripPerChain) {
  Store s = Store::create(path_, sample_run());
  EXPECT_EQ(s.next_step(), 0);
  EXPECT_FALSE(s.last_step(0));
  int64_t a = s.add_candidate(make_candidate(kernel_source(1)));
  int64_t b = s.add_candidate(make_candidate(kernel_source(2), a));

  Step st;
  st.step = s.next_step();
  st.chain = 0;
  st.proposed = b;
  st.current = b;
  st.accepted = true;
  st.temperature = 0.125;
  st.cost_current = 2.0;
  st.cost_proposed = 1.5;
  st.note = "accepted: faster";
  s.add_step(st);

  Step other = st;
  other.step = s.next_step();
  other.chain = 1;
  other.proposed = 0;  // a proposal that never became a candidate
  other.current = a;
  other.accepted = false;
  other.note = "rejected: the model's answer had no kernel";
  s.add_step(other);

  Step later = st;
  later.step = s.next_step();
  later.accepted = false;
  later.current = a;
  s.add_step(later);
  EXPECT_EQ(s.next_step(), 3);

  auto l0 = s.last_step(0);
  ASSERT_TRUE(l0);
  EXPECT_EQ(l0->step, 2);
  EXPECT_EQ(l0->chain, 0);
  EXPECT_EQ(l0->current, a);
  EXPECT_FALSE(l0->accepted);
  auto l1 = s.last_step(1);
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->step, 1);
  EXPECT_EQ(l1->chain, 1);
  EXPECT_EQ(l1->proposed, 0);
  EXPECT_EQ(l1->current, a);
  EXPECT_EQ(l1->temperature, 0.125);
  EXPECT_EQ(l1->cost_current, 2.0);
  EXPECT_EQ(l1->cost_proposed, 1.5);
  EXPECT_EQ(l1->note, other.note);
  EXPECT_FALSE(s.last_step(2));

  EXPECT_THROW(s.add_step(later), InternalError);  // step 2 of chain 0 again
  Counts n = s.counts();
  EXPECT_EQ(n.steps, 3);
  EXPECT_EQ(n.accepted_steps, 1);
}

TEST_F(StoreTest, EventsAndCounts) {
  Store s = Store::create(path_, sample_run());
  s.add_event("start", "2 chains, budget 1h");
  s.add_event("restart", "chain 1 restarted from the best");
  int64_t a = s.add_candidate(make_candidate(kernel_source(1)));
  int64_t b = s.add_candidate(make_candidate(kernel_source(2)));
  s.add_evaluation(make_evaluation(a, "pass", 1e-3));
  s.add_evaluation(make_evaluation(a, "pass", 1.1e-3));
  s.add_evaluation(make_evaluation(b, "crash", 0));
  Counts n = s.counts();
  EXPECT_EQ(n.candidates, 2);
  EXPECT_EQ(n.evaluations, 3);
  EXPECT_EQ(n.passes, 1);
  EXPECT_EQ(n.events, 2);
  EXPECT_EQ(n.steps, 0);
  EXPECT_EQ(n.model_calls, 0);
}

TEST_F(StoreTest, ModelCallsInOrderPerProposerWithoutSecrets) {
  Store s = Store::create(path_, sample_run());
  const char* secret = "sk-test-0123456789abcdef";
  setenv("OLLIE_STORE_TEST_API_KEY", secret, 1);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ModelCall m;
    m.proposer = i % 2 ? "cmd" : "llm";
    m.request = R"({"model": "m", "prompt": "call )" + std::to_string(i) + "\"}";
    m.answer = "kernel " + std::to_string(i);
    m.status = i == 4 ? "http_error" : "ok";
    m.http_status = i == 4 ? 429 : 200;
    m.tokens_in = 1000 + i;
    m.tokens_out = 200 + i;
    m.cost = 0.01 * i;
    m.seconds = 1.5 + i;
    if (i == 2) m.request += " Authorization: Bearer " + std::string(secret);
    ids.push_back(s.add_model_call(m));
  }
  unsetenv("OLLIE_STORE_TEST_API_KEY");

  auto llm = s.model_calls("llm");
  ASSERT_EQ(llm.size(), 3u);
  EXPECT_EQ(llm[0].id, ids[0]);
  EXPECT_EQ(llm[1].id, ids[2]);
  EXPECT_EQ(llm[2].id, ids[4]);
  EXPECT_EQ(llm[0].request, R"({"model": "m", "prompt": "call 0"})");
  EXPECT_EQ(llm[0].answer, "kernel 0");
  EXPECT_EQ(llm[0].status, "ok");
  EXPECT_EQ(llm[0].http_status, 200);
  EXPECT_EQ(llm[0].tokens_in, 1000);
  EXPECT_EQ(llm[0].tokens_out, 200);
  EXPECT_EQ(llm[0].cost, 0.0);
  EXPECT_EQ(llm[0].seconds, 1.5);
  EXPECT_FALSE(llm[0].created.empty());
  EXPECT_EQ(llm[2].status, "http_error");
  EXPECT_EQ(llm[2].http_status, 429);
  EXPECT_EQ(llm[1].request.find(secret), std::string::npos);
  EXPECT_NE(llm[1].request.find("[redacted]"), std::string::npos);

  auto cmd = s.model_calls("cmd");
  ASSERT_EQ(cmd.size(), 2u);
  EXPECT_EQ(cmd[1].answer, "kernel 3");
  // Paging: after the first llm call, one at a time.
  auto page = s.model_calls("llm", ids[0], 1);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, ids[2]);
  EXPECT_TRUE(s.model_calls("nobody").empty());
  EXPECT_EQ(s.counts().model_calls, 5);
}

TEST_F(StoreTest, BestIsPassingByMedianUsingLatestEvaluation) {
  Store s = Store::create(path_, sample_run());
  auto add = [&](int i, const std::string& verdict, double median) {
    int64_t c = s.add_candidate(make_candidate(kernel_source(i)));
    s.add_evaluation(make_evaluation(c, verdict, median));
    return c;
  };
  int64_t slow = add(1, "pass", 3e-3);
  int64_t fast = add(2, "pass", 1e-3);
  add(3, "wrong", 1e-5);  // fast but wrong: never best
  add(4, "pass", 0);      // passed, not timed: no median to rank
  int64_t mid = add(5, "pass", 2e-3);
  int64_t flip = add(6, "pass", 5e-4);  // passed once, later failed: out
  s.add_evaluation(make_evaluation(flip, "wrong", 0));
  int64_t fixed = add(7, "crash", 0);  // failed once, later passed: in
  s.add_evaluation(make_evaluation(fixed, "pass", 2.5e-3));
  s.add_candidate(make_candidate(kernel_source(8)));  // never evaluated

  auto best = s.best(10);
  ASSERT_EQ(best.size(), 4u);
  EXPECT_EQ(best[0].first.id, fast);
  EXPECT_EQ(best[1].first.id, mid);
  EXPECT_EQ(best[2].first.id, fixed);
  EXPECT_EQ(best[3].first.id, slow);
  EXPECT_EQ(best[0].second.candidate, fast);
  EXPECT_EQ(best[0].second.median_seconds, 1e-3);
  EXPECT_EQ(best[0].first.source, kernel_source(2));
  EXPECT_EQ(best[2].second.verdict, "pass");

  auto top2 = s.best(2);
  ASSERT_EQ(top2.size(), 2u);
  EXPECT_EQ(top2[1].first.id, mid);
  EXPECT_TRUE(s.best(0).empty());
}

// ---- transactions ----

TEST_F(StoreTest, TransactionGroupsRowsAllOrNothing) {
  Store s = Store::create(path_, sample_run());
  {
    auto tx = s.transaction();
    int64_t c = s.add_candidate(make_candidate(kernel_source(1)));
    s.add_evaluation(make_evaluation(c, "pass", 1e-3));
    Step st;
    st.step = s.next_step();
    st.proposed = st.current = c;
    st.accepted = true;
    s.add_step(st);
    EXPECT_TRUE(s.evaluation_of(c));  // the transaction reads its own rows
    tx.commit();
  }
  {
    auto tx = s.transaction();
    int64_t c = s.add_candidate(make_candidate(kernel_source(2)));
    s.add_evaluation(make_evaluation(c, "pass", 1e-3));
    // destroyed without commit: rolled back
  }
  try {
    auto tx = s.transaction();
    int64_t c = s.add_candidate(make_candidate(kernel_source(3)));
    s.add_evaluation(make_evaluation(c, "pass", 1e-3));
    throw std::runtime_error("evaluator died");
  } catch (const std::runtime_error&) {
  }
  {
    auto tx = s.transaction();
    EXPECT_THROW(s.transaction(), InternalError);  // no nesting
    tx.commit();
    EXPECT_THROW(tx.commit(), InternalError);
  }
  Counts n = s.counts();
  EXPECT_EQ(n.candidates, 1);
  EXPECT_EQ(n.evaluations, 1);
  EXPECT_EQ(n.steps, 1);
  EXPECT_FALSE(s.candidate_by_hash(sha256_hex(kernel_source(2))));
  EXPECT_FALSE(s.candidate_by_hash(sha256_hex(kernel_source(3))));
  // After all that the store still writes.
  EXPECT_GT(s.add_candidate(make_candidate(kernel_source(4))), 0);
  EXPECT_EQ(s.integrity_check(), "ok");
}

// counts() is read once and then kept by the add_* calls: after every kind of row, a
// second pass for a candidate, a rolled-back transaction and a reopened store, it says
// what counting the file says.
TEST_F(StoreTest, CountsKeptUpToDateAgreeWithCountingTheFile) {
  Store s = Store::create(path_, sample_run());
  auto recount = [&] { return Store::open(path_).counts(); };
  auto same = [](const Counts& a, const Counts& b) {
    return a.candidates == b.candidates && a.evaluations == b.evaluations && a.steps == b.steps &&
           a.accepted_steps == b.accepted_steps && a.passes == b.passes && a.events == b.events &&
           a.model_calls == b.model_calls;
  };
  EXPECT_EQ(s.counts().candidates, 0);  // primes the kept counts
  int64_t a = s.add_candidate(make_candidate(kernel_source(1)));
  int64_t b = s.add_candidate(make_candidate(kernel_source(2)));
  s.add_candidate(make_candidate(kernel_source(1)));  // already there: no new row
  s.add_evaluation(make_evaluation(a, "wrong", 0));
  s.add_evaluation(make_evaluation(a, "pass", 1e-3));
  s.add_evaluation(make_evaluation(a, "pass", 2e-3));  // a's second pass: still one candidate
  s.add_evaluation(make_evaluation(b, "crash", 0));
  Step st;
  st.step = s.next_step();
  st.proposed = st.current = a;
  st.accepted = true;
  s.add_step(st);
  st.step = s.next_step();
  st.accepted = false;
  s.add_step(st);
  s.add_event("start", "x");
  ModelCall m;
  m.proposer = "llm";
  s.add_model_call(m);
  Counts kept = s.counts();
  EXPECT_EQ(kept.candidates, 2);
  EXPECT_EQ(kept.evaluations, 4);
  EXPECT_EQ(kept.passes, 1);
  EXPECT_EQ(kept.steps, 2);
  EXPECT_EQ(kept.accepted_steps, 1);
  EXPECT_EQ(kept.events, 1);
  EXPECT_EQ(kept.model_calls, 1);
  EXPECT_TRUE(same(kept, recount()));
  {
    auto tx = s.transaction();
    int64_t c = s.add_candidate(make_candidate(kernel_source(3)));
    s.add_evaluation(make_evaluation(c, "pass", 1e-3));
    s.add_evaluation(make_evaluation(b, "pass", 1e-3));
    EXPECT_EQ(s.counts().passes, 3);  // inside: its own rows
    // destroyed without commit: rolled back
  }
  EXPECT_TRUE(same(s.counts(), kept));
  EXPECT_TRUE(same(s.counts(), recount()));
  {
    auto tx = s.transaction();
    s.add_evaluation(make_evaluation(b, "pass", 1e-3));
    tx.commit();
  }
  EXPECT_EQ(s.counts().passes, 2);
  EXPECT_TRUE(same(s.counts(), recount()));
}

TEST_F(StoreTest, ThreadsMayShareOneStore) {
  Store s = Store::create(path_, sample_run());
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 10; ++i) {
          auto tx = s.transaction();
          int64_t c = s.add_candidate(make_candidate(kernel_source(t * 100 + i)));
          s.add_evaluation(make_evaluation(c, "pass", 1e-3 * (i + 1)));
          tx.commit();
        }
      } catch (...) {
        ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  Counts n = s.counts();
  EXPECT_EQ(n.candidates, 40);
  EXPECT_EQ(n.evaluations, 40);
}

TEST_F(StoreTest, MovedStoreKeepsWorking) {
  Store a = Store::create(path_, sample_run());
  int64_t c = a.add_candidate(make_candidate(kernel_source(1)));
  Store b = std::move(a);
  EXPECT_TRUE(b.candidate(c));
  auto tx = b.transaction();
  b.add_evaluation(make_evaluation(c, "pass", 1e-3));
  tx.commit();
  EXPECT_EQ(b.counts().evaluations, 1);
}

// ---- create and open ----

TEST_F(StoreTest, ReopenedRunHasEverythingAndStaysIdempotent) {
  int64_t c = 0;
  {
    Store s = Store::create(path_, sample_run());
    c = s.add_candidate(make_candidate(kernel_source(1)));
    s.add_evaluation(make_evaluation(c, "pass", 1e-3));
    s.add_event("stop", "interrupted");
    // no checkpoint: the rows may live only in the WAL when the store closes
  }
  Store s = Store::open(path_);
  EXPECT_EQ(s.add_candidate(make_candidate(kernel_source(1))), c);
  auto e = s.evaluation_of(c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->median_seconds, 1e-3);
  Counts n = s.counts();
  EXPECT_EQ(n.candidates, 1);
  EXPECT_EQ(n.events, 1);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST_F(StoreTest, CheckpointEmptiesTheLog) {
  Store s = Store::create(path_, sample_run());
  for (int i = 0; i < 20; ++i) s.add_candidate(make_candidate(kernel_source(i, 3000)));
  ASSERT_TRUE(fs::exists(path_ + "-wal"));
  EXPECT_GT(fs::file_size(path_ + "-wal"), 0u);
  s.checkpoint();
  EXPECT_EQ(fs::file_size(path_ + "-wal"), 0u);
  EXPECT_EQ(s.counts().candidates, 20);
}

TEST_F(StoreTest, CreateOnExistingPathFails) {
  {
    Store s = Store::create(path_, sample_run());
    s.add_event("x", "y");
  }
  auto size = fs::file_size(path_);
  expect_user_error([&] { Store::create(path_, sample_run()); },
                    {"run database '" + path_ + "' exists; resume it with --resume " + path_ +
                     " or choose another -o"});
  EXPECT_EQ(fs::file_size(path_), size);
  EXPECT_EQ(Store::open(path_).counts().events, 1);  // untouched

  std::string other = (fs::path(dir_) / "anything.txt").string();
  std::ofstream(other) << "not a database";
  expect_user_error([&] { Store::create(other, sample_run()); }, {"exists"});

  std::string nodir = (fs::path(dir_) / "no" / "such" / "dir" / "run.db").string();
  expect_user_error([&] { Store::create(nodir, sample_run()); },
                    {"cannot create run database '" + nodir + "'", "directory"});
}

TEST_F(StoreTest, OpenFailsClearlyOnWhatIsNotARun) {
  std::string missing = (fs::path(dir_) / "missing.db").string();
  expect_user_error([&] { Store::open(missing); }, {"'" + missing + "'", "not found"});
  EXPECT_FALSE(fs::exists(missing));  // open never creates

  std::string text = (fs::path(dir_) / "notes.txt").string();
  std::ofstream(text) << "SQLite is nice, but this is a text file with more than 16 bytes\n";
  expect_user_error([&] { Store::open(text); },
                    {"'" + text + "' is not an ollie run database", "not an SQLite"});

  std::string empty = (fs::path(dir_) / "empty.db").string();
  std::ofstream(empty).close();
  expect_user_error([&] { Store::open(empty); }, {"'" + empty + "'", "empty"});

  expect_user_error([&] { Store::open(dir_); }, {"'" + dir_ + "'", "not a file"});

  std::string foreign = (fs::path(dir_) / "foreign.db").string();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE candidates(x); INSERT INTO candidates VALUES(1)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  expect_user_error([&] { Store::open(foreign); },
                    {"'" + foreign + "' is not an ollie run database", "something else"});

  { Store s = Store::create(path_, sample_run()); }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    std::string sql = "PRAGMA user_version = " + std::to_string(Store::schema_version() + 1);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  expect_user_error([&] { Store::open(path_); }, {"'" + path_ + "'", "newer ollie"});
}

TEST_F(StoreTest, ReaderSeesRowsWhileTheRunWrites) {
  Store writer = Store::create(path_, sample_run());
  int64_t c = writer.add_candidate(make_candidate(kernel_source(1)));
  Store reader = Store::open(path_);  // e.g. a live report
  EXPECT_TRUE(reader.candidate(c));
  auto tx = writer.transaction();
  int64_t d = writer.add_candidate(make_candidate(kernel_source(2)));
  EXPECT_FALSE(reader.candidate(d));  // not committed yet
  tx.commit();
  EXPECT_TRUE(reader.candidate(d));
}

// ---- crash safety ----

// A child writes a candidate, its evaluation and its step in one transaction per loop and
// reports each commit on a pipe; it is SIGKILLed at a random moment. Every reported row
// must be in the file, and no candidate without its evaluation and step. Each round goes
// on from where the last one stopped (what resume does). The last round kills the child
// deterministically inside a transaction that has already spilled pages to the log.
TEST_F(StoreTest, KilledWriterLosesNoCommittedRowAndLeavesNoHalfRow) {
  { Store s = Store::create(path_, sample_run()); }
  srand(12345);
  const int kRounds = 5;
  int64_t reported = -1;  // highest i the children reported committed
  for (int round = 0; round < kRounds; ++round) {
    bool in_tx_kill = round == kRounds - 1;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      try {
        Store s = Store::open(path_);
        int64_t start = s.counts().candidates;
        for (int64_t i = start;; ++i) {
          auto tx = s.transaction();
          int64_t c = s.add_candidate(make_candidate(kernel_source(i, 20000)));
          if (in_tx_kill) {
            // Big enough that SQLite spills uncommitted pages into the WAL.
            s.add_candidate(make_candidate(kernel_source(-1, 8 << 20)));
            int64_t marker = -2;
            if (write(fds[1], &marker, sizeof marker) != sizeof marker) _exit(4);
            pause();
          }
          s.add_evaluation(make_evaluation(c, "pass", 1e-3 * static_cast<double>(i + 1)));
          Step st;
          st.step = i;
          st.proposed = st.current = c;
          st.accepted = true;
          s.add_step(st);
          tx.commit();
          if (write(fds[1], &i, sizeof i) != sizeof i) _exit(4);
        }
      } catch (...) {
        _exit(3);
      }
    }
    close(fds[1]);
    int want = 20 + rand() % 40;
    int64_t v = 0;
    for (int got = 0; got < want && read(fds[0], &v, sizeof v) == sizeof v;) {
      if (v == -2) break;
      reported = v;
      ++got;
    }
    if (!in_tx_kill) usleep(static_cast<useconds_t>(rand() % 5000));  // land anywhere
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    while (read(fds[0], &v, sizeof v) == sizeof v)
      if (v >= 0) reported = v;
    close(fds[0]);

    Store s = Store::open(path_);
    ASSERT_EQ(s.integrity_check(), "ok") << "round " << round;
    Counts n = s.counts();
    // Everything reported is there; at most one more (committed, killed before reporting).
    EXPECT_GE(n.candidates, reported + 1) << "round " << round;
    EXPECT_LE(n.candidates, reported + 2) << "round " << round;
    EXPECT_EQ(n.evaluations, n.candidates) << "round " << round;
    EXPECT_EQ(n.steps, n.candidates) << "round " << round;
    EXPECT_EQ(s.next_step(), n.candidates);
    for (int64_t i = 0; i < n.candidates; ++i) {
      auto c = s.candidate_by_hash(sha256_hex(kernel_source(i, 20000)));
      ASSERT_TRUE(c) << "candidate " << i << " lost in round " << round;
      auto e = s.evaluation_of(c->id);
      ASSERT_TRUE(e) << "candidate " << i << " without its evaluation";
      EXPECT_EQ(e->median_seconds, 1e-3 * static_cast<double>(i + 1));
    }
    EXPECT_FALSE(s.candidate_by_hash(sha256_hex(kernel_source(-1, 8 << 20))));
  }
  EXPECT_GT(reported, 50);
}

// ---- memory ----

long resident_pages() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

// 20000 candidates (about 40 MB of source) with evaluations and steps: the process must
// not grow with them. Batches of 200 per transaction keep the fsyncs few; the store keeps
// nothing per row either way.
TEST_F(StoreTest, MemoryDoesNotGrowWithTheRun) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine: RSS says nothing here";
#endif
  Store s = Store::create(path_, sample_run());
  auto add_batch = [&](int64_t from, int64_t to) {
    auto tx = s.transaction();
    for (int64_t i = from; i < to; ++i) {
      int64_t c = s.add_candidate(make_candidate(kernel_source(i, 2000)));
      s.add_evaluation(make_evaluation(c, i % 3 ? "pass" : "wrong", 1e-3 + 1e-9 * i));
      Step st;
      st.step = i;
      st.chain = static_cast<int>(i % 4);
      st.proposed = st.current = c;
      s.add_step(st);
    }
    tx.commit();
  };
  const int64_t kWarm = 2000, kTotal = 20000, kBatch = 200;
  for (int64_t i = 0; i < kWarm; i += kBatch) add_batch(i, i + kBatch);
  s.best(5);
  s.counts();
  long before = resident_pages();
  for (int64_t i = kWarm; i < kTotal; i += kBatch) add_batch(i, i + kBatch);
  s.best(5);
  s.counts();
  long after = resident_pages();
  long grown_kib = (after - before) * (sysconf(_SC_PAGESIZE) / 1024);
  EXPECT_LT(grown_kib, 8 * 1024) << "RSS grew by " << grown_kib << " KiB";
  EXPECT_EQ(s.counts().candidates, kTotal);
  EXPECT_EQ(s.best(1).at(0).first.source, kernel_source(1, 2000));
}

}  // namespace
