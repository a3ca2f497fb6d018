// The llm proposer in the chain: against the loopback test server (tests/llm/
// fake_model_server.h) with the real verifier, a wrong kernel never enters the archive and
// its counterexample reaches the next prompt, a compile error reaches it trimmed, an
// answer without code is recorded and proposes nothing, a correct kernel becomes the
// best; a budget or an error that will not go away stops the proposer, not the run; a
// resumed proposer starts with the recorded failures; the replay model plays stored
// answers back in order and then says they ran out.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../llm/fake_model.h"
#include "build/build.h"
#include "emit/emit.h"
#include "measure/measure.h"
#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using namespace ollie;
using llm::testing::events_of;
using llm::testing::fake_model_config;
using llm::testing::FakeModelServer;
using llm::testing::RunDir;
using llm::testing::Scripted;
using llm::testing::softmax;
using llm::testing::softmax_at;
using llm::testing::softmax_source;
using llm::testing::user_message;

const std::string kKey = "sk-test-llm-proposer-0123456789";

std::string kernel_file(const std::string& name) {
  std::ifstream in(fs::path(OLLIE_SOURCE_DIR) / "tests" / "e2e" / "kernels" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fenced(const std::string& prose, const std::string& code) {
  return prose + "\n\n```cpp\n" + code + "```\n\nThat should do it.\n";
}

// The marker that makes MarkedTimes call a passing kernel twice as fast as the baseline.
const std::string kFastMarker = "// (the test's fast kernel)\n";

// The real verifier's verdicts (compiled, run in the runner), with times that do not
// depend on this machine's load: a passing kernel carrying kFastMarker takes half the
// baseline's time, every other passing kernel the baseline's.
class MarkedTimes : public search::Evaluator {
 public:
  explicit MarkedTimes(const fs::path& cache) {
    search::EvaluatorOptions eo;
    eo.runner_path = OLLIE_RUNNER;
    eo.cache_dir = cache.string();
    eo.threads = 1;
    eo.bench_seconds = 0.01;
    real_ = search::make_local_evaluator(softmax(), softmax_at,
                                         search::baseline_candidate(softmax()).source, eo);
  }
  search::Evaluation evaluate(const search::Candidate& c) override {
    search::Evaluation e = real_->evaluate(c);
    if (e.verdict == verify::Verdict::Pass) {
      const bool fast = c.source.find(kFastMarker) != std::string::npos;
      e.ratio_vs_baseline = fast ? 0.5 : 1.0;
      e.median_seconds = 1e-3 * e.ratio_vs_baseline;
    }
    return e;
  }

 private:
  std::unique_ptr<search::Evaluator> real_;
};

// Every candidate passes, in a time from its source's hash (no compiling).
class PassAll : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds = 1e-3 + static_cast<double>(std::hash<std::string>{}(c.source) % 1000) * 1e-6;
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    return e;
  }
};

// The fake model's settings with quick retries.
llm::ModelConfig config_for(const FakeModelServer& server, std::string key = kKey) {
  llm::ModelConfig c = fake_model_config(server, std::move(key));
  c.low_speed_seconds = 30;
  c.max_retries = 2;
  c.backoff_initial_seconds = 0.01;
  c.backoff_max_seconds = 0.01;
  return c;
}

search::LlmProposerOptions proposer_options() {
  search::LlmProposerOptions o;
  o.spec_source = softmax_source();
  o.header = emit::emit_header(softmax());
  o.hardware = search::describe_hardware(measure::MachinePeaks{}, 1);
  o.roofline_seconds = 1e-4;
  return o;
}

search::StopReason run(const ir::Graph& graph, store::Store& db, search::Evaluator& evaluator,
                       std::vector<std::unique_ptr<search::Proposer>>& proposers,
                       std::vector<std::pair<std::string, double>> weights, int64_t evals) {
  search::SearchOptions options;
  options.max_evals = evals;
  options.seed = 3;
  options.chains = 1;
  options.proposer_weights = std::move(weights);
  return search::run_chains(
      graph, db, evaluator, proposers, options, [] { return false; }, nullptr);
}

std::optional<store::Candidate> candidate_with(const store::Store& db, const std::string& needle) {
  for (int64_t id = 1; id <= db.counts().candidates; ++id)
    if (auto c = db.candidate(id); c && c->source.find(needle) != std::string::npos) return c;
  return std::nullopt;
}

TEST(LlmProposer, VerifierFeedbackReachesTheNextPromptAndOnlyCorrectKernelsWin) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  FakeModelServer server(kKey);
  const std::string wrong = kernel_file("softmax_drops_last_column.cpp");
  const std::string broken = kernel_file("softmax_does_not_compile.cpp");
  const std::string good = kFastMarker + kernel_file("softmax_rows.cpp");
  server.script({Scripted::answer(fenced("This one skips work.", wrong)),
                 Scripted::answer(fenced("Here is a bolder one.", broken)),
                 Scripted::answer("I would rather explain the roofline than write code today."),
                 Scripted::answer(fenced("A careful rewrite:", good), 1000, 200)});
  llm::Client client(config_for(server));
  MarkedTimes evaluator(r.dir / "cache");
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  auto owned = std::make_unique<search::LlmProposer>(client, db, proposer_options());
  search::LlmProposer* llm = owned.get();
  proposers.push_back(std::move(owned));
  // The baseline, then wrong, broken, (no code: the step asks again) good.
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"llm", 1.0}}, 4),
            search::StopReason::EvalBudget);

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  // The first prompt: the spec, the ABI, the machine, the baseline kernel; no failures yet.
  const std::string first = user_message(seen[0]);
  EXPECT_NE(first.find("def softmax"), std::string::npos);
  EXPECT_NE(first.find("ollie_kernel"), std::string::npos);
  EXPECT_NE(first.find("vector ISA flags"), std::string::npos);
  EXPECT_NE(first.find(search::baseline_candidate(softmax()).source), std::string::npos);
  EXPECT_NE(first.find("(none yet)"), std::string::npos);

  const auto w = candidate_with(db, "j + 1 < n");
  const auto b = candidate_with(db, "undeclared_variable");
  const auto g = candidate_with(db, kFastMarker);
  ASSERT_TRUE(w && b && g);
  for (const auto* c : {&*w, &*b, &*g}) {
    EXPECT_EQ(c->proposer, "llm");
    EXPECT_TRUE(c->schedule.empty());  // free-form source
  }
  const auto we = db.evaluation_of(w->id);
  const auto be = db.evaluation_of(b->id);
  ASSERT_TRUE(we && be);
  EXPECT_EQ(we->verdict, "wrong");
  EXPECT_EQ(be->verdict, "compile-error");
  // The wrong kernel's counterexample is in the second prompt, the compile error (trimmed:
  // the error line, not the whole log) in the third, both in the fourth.
  const std::string counterexample = we->message.substr(0, we->message.find('\n'));
  ASSERT_FALSE(counterexample.empty());
  const std::string second = user_message(seen[1]), third = user_message(seen[2]),
                    fourth = user_message(seen[3]);
  EXPECT_NE(second.find(counterexample), std::string::npos) << second;
  EXPECT_NE(second.find("wrong"), std::string::npos);
  EXPECT_EQ(second.find("(none yet)"), std::string::npos);
  EXPECT_NE(third.find("undeclared_variable"), std::string::npos) << third;
  EXPECT_NE(third.find("error:"), std::string::npos) << third;
  EXPECT_LE(third.size(), second.size() + 2500);  // trimmed, not the whole compiler log
  EXPECT_NE(fourth.find(counterexample), std::string::npos);
  EXPECT_NE(fourth.find("undeclared_variable"), std::string::npos);

  // Every call is stored, in order, with the request as sent.
  const auto calls = db.model_calls("llm");
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].status, "ok");
    EXPECT_EQ(calls[i].request, seen[i].body);
  }
  EXPECT_EQ(calls[3].tokens_in, 1000);
  // The answer without code: recorded, an event, and no candidate (three from llm).
  const auto no_code = events_of(r.dir / "run.db", "llm-no-code");
  ASSERT_EQ(no_code.size(), 1u);
  EXPECT_NE(no_code[0].find("model call 3"), std::string::npos) << no_code[0];
  EXPECT_EQ(db.counts().candidates, 4);
  const search::LlmUsage u = llm->usage();
  EXPECT_EQ(u.calls, 4);
  EXPECT_EQ(u.with_code, 3);
  EXPECT_EQ(u.without_code, 1);
  EXPECT_EQ(u.tokens_in, 1300);
  EXPECT_FALSE(u.stopped);

  // The archive: passing candidates only, the correct fast kernel first.
  const auto best = db.best(10);
  ASSERT_FALSE(best.empty());
  EXPECT_EQ(best[0].first.id, g->id);
  for (const auto& [c, e] : best) {
    EXPECT_EQ(e.verdict, "pass");
    EXPECT_NE(c.id, w->id);
    EXPECT_NE(c.id, b->id);
  }

  // Free-form source: the schedule proposers leave it alone.
  search::State free_form;
  free_form.id = g->id;
  free_form.candidate.source = g->source;
  free_form.candidate.proposer = "llm";
  free_form.passed = true;
  EXPECT_FALSE(search::make_mutate_proposer(softmax())->propose(free_form, 1).has_value());
  EXPECT_FALSE(search::make_rewrite_proposer(softmax())->propose(free_form, 1).has_value());

  // A proposer made later on this run (a resumed run) starts with the recorded failures.
  FakeModelServer again(kKey);
  llm::Client client2(config_for(again));
  search::LlmProposer resumed(client2, db, proposer_options());
  search::State at_best = free_form;
  at_best.seconds = 5e-4;
  ASSERT_TRUE(resumed.propose(at_best, 1).has_value());
  const std::string resumed_prompt = user_message(again.requests().at(0));
  EXPECT_NE(resumed_prompt.find(counterexample), std::string::npos);
  EXPECT_NE(resumed_prompt.find("undeclared_variable"), std::string::npos);
  EXPECT_NE(resumed_prompt.find(kFastMarker), std::string::npos);   // the current kernel
  EXPECT_NE(resumed_prompt.find("500.000 us"), std::string::npos);  // its time
  EXPECT_NE(resumed_prompt.find("20.0%"), std::string::npos);       // 0.1 ms bound / 0.5 ms
  EXPECT_EQ(resumed.usage().calls, 5);                              // the run's calls
}

TEST(LlmProposer, ABudgetStopsTheProposerNotTheRun) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  FakeModelServer server(kKey);
  llm::ModelConfig config = config_for(server);
  config.token_budget = 150;  // one answer of 100 + 50 tokens
  llm::Client client(config);
  PassAll evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  auto owned = std::make_unique<search::LlmProposer>(client, db, proposer_options());
  search::LlmProposer* llm = owned.get();
  proposers.push_back(std::move(owned));
  proposers.push_back(search::make_mutate_proposer(softmax()));
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"llm", 3.0}, {"mutate", 1.0}}, 10),
            search::StopReason::EvalBudget);
  EXPECT_EQ(db.counts().evaluations, 10);   // the run went on
  EXPECT_EQ(server.requests().size(), 1u);  // the refused call sent nothing
  const auto calls = db.model_calls("llm");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].status, "ok");
  EXPECT_EQ(calls[1].status, "budget");
  EXPECT_TRUE(llm->usage().stopped);
  const auto stopped = events_of(r.dir / "run.db", "llm-stopped");
  ASSERT_EQ(stopped.size(), 1u);  // said once, however often it is asked after
  EXPECT_NE(stopped[0].find("budget"), std::string::npos) << stopped[0];
}

TEST(LlmProposer, AWrongKeyStopsTheProposerAtOnceAndIsNotRecorded) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  FakeModelServer server(kKey);
  const std::string wrong_key = "sk-wrong-key-abcdefghijklmnop";
  llm::Client client(config_for(server, wrong_key));
  PassAll evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(std::make_unique<search::LlmProposer>(client, db, proposer_options()));
  proposers.push_back(search::make_mutate_proposer(softmax()));
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"llm", 3.0}, {"mutate", 1.0}}, 6),
            search::StopReason::EvalBudget);
  EXPECT_EQ(server.requests().size(), 1u);  // 401 is not retried, and the proposer stopped
  const auto errors = events_of(r.dir / "run.db", "llm-error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("401"), std::string::npos) << errors[0];
  EXPECT_EQ(events_of(r.dir / "run.db", "llm-stopped").size(), 1u);
  // The server echoed the key in its 401; nothing in the database has it.
  std::ifstream in(r.dir / "run.db", std::ios::binary);
  std::stringstream all;
  all << in.rdbuf();
  db.checkpoint();
  std::ifstream in2(r.dir / "run.db", std::ios::binary);
  all << in2.rdbuf();
  EXPECT_EQ(all.str().find(wrong_key), std::string::npos);
  for (const auto& e : errors) EXPECT_EQ(e.find(wrong_key), std::string::npos);
}

// A model that answers a new kernel every time (numbered), without a server.
class NumberedKernels : public llm::Model {
 public:
  llm::ModelAnswer complete(const llm::ModelRequest&) override {
    llm::ModelAnswer a;
    a.text = "```cpp\n// llm kernel " + std::to_string(++calls) + "\n" +
             kernel_file("softmax_rows.cpp") + "```\n";
    return a;
  }
  int calls = 0;
};

// The llm's kernels take 0.5 ms, anything else 1 to 2 ms.
class LlmIsFast : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds =
        c.source.find("// llm kernel") != std::string::npos
            ? 0.5e-3
            : 1e-3 + static_cast<double>(std::hash<std::string>{}(c.source) % 1000) * 1e-6;
    e.ratio_vs_baseline = e.median_seconds / 1.5e-3;
    return e;
  }
};

// The run's steps in order: "NOTE[ (accepted)] #STEP".
std::vector<std::string> step_notes(const fs::path& db) {
  std::vector<std::string> out;
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw, "SELECT note, accepted, step FROM steps ORDER BY step", -1, &q,
                               nullptr),
            SQLITE_OK);
  while (sqlite3_step(q) == SQLITE_ROW)
    out.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(q, 0))) +
                  (sqlite3_column_int(q, 1) ? " (accepted)" : "") + " #" +
                  std::to_string(sqlite3_column_int64(q, 2)));
  sqlite3_finalize(q);
  sqlite3_close(raw);
  return out;
}

// On a free-form kernel only the llm can propose: a step whose weighted draws missed it
// asks it anyway, so a chain on the llm's kernel goes on with the llm (rarely drawn here)
// instead of idling or being restarted away from it.
TEST(LlmProposer, AChainOnAFreeFormKernelAsksTheLlmEvenWhenTheDrawsMissIt) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  NumberedKernels model;
  LlmIsFast evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(search::make_mutate_proposer(softmax()));
  proposers.push_back(std::make_unique<search::LlmProposer>(model, db, proposer_options()));
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"mutate", 10.0}, {"llm", 1.0}}, 30),
            search::StopReason::EvalBudget);
  const auto notes = step_notes(r.dir / "run.db");
  size_t first = notes.size();
  for (size_t i = 0; i < notes.size() && first == notes.size(); ++i)
    if (notes[i].starts_with("llm:") && notes[i].find("(accepted)") != std::string::npos) first = i;
  ASSERT_LT(first, notes.size() - 5)
      << "the llm's kernel was never accepted early enough to test this";
  // From then on every step is the llm's, and none is idle (the step numbers follow on).
  auto number = [&](size_t i) { return std::stoll(notes[i].substr(notes[i].rfind('#') + 1)); };
  for (size_t i = first + 1; i < notes.size(); ++i) {
    EXPECT_TRUE(notes[i].starts_with("llm:")) << i << ": " << notes[i];
    EXPECT_EQ(number(i), number(i - 1) + 1) << notes[i];
  }
  for (const auto& e : events_of(r.dir / "run.db", "restart"))
    EXPECT_EQ(e.find("free-form"), std::string::npos) << e;
  int llm_candidates = 0;
  for (int64_t id = 1; id <= db.counts().candidates; ++id)
    llm_candidates += db.candidate(id)->proposer == "llm";
  EXPECT_EQ(llm_candidates, model.calls);  // one call per proposal, never a second one in a step
}

// A model that says the same thing every time (a deterministic --proposer-cmd).
class SameKernel : public llm::Model {
 public:
  llm::ModelAnswer complete(const llm::ModelRequest&) override {
    ++calls;
    llm::ModelAnswer a;
    a.text = "```cpp\n" + kernel_file("softmax_rows.cpp") + "```\n";
    return a;
  }
  int calls = 0;
};

TEST(LlmProposer, RepeatedKernelsProposeNothingAndFiveInARowStopIt) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  SameKernel model;
  PassAll evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  auto owned = std::make_unique<search::LlmProposer>(model, db, proposer_options());
  search::LlmProposer* llm = owned.get();
  proposers.push_back(std::move(owned));
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"llm", 1.0}}, 10),
            search::StopReason::NoProposals);
  EXPECT_EQ(db.counts().evaluations, 2);  // the baseline and the kernel, once
  EXPECT_EQ(model.calls, 6);
  EXPECT_EQ(events_of(r.dir / "run.db", "llm-repeat").size(), 5u);
  const auto stopped = events_of(r.dir / "run.db", "llm-stopped");
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_NE(stopped[0].find("5 answers in a row repeated kernels"), std::string::npos)
      << stopped[0];
  EXPECT_EQ(llm->usage().repeated, 5);
  EXPECT_EQ(llm->usage().with_code, 1);
}

TEST(ReplayModel, PlaysTheStoredAnswersInOrderThenSaysTheyRanOut) {
  auto call = [](int64_t id, std::string status, std::string answer, int http = 200) {
    store::ModelCall c;
    c.id = id;
    c.proposer = "llm";
    c.request = "request " + std::to_string(id);
    c.status = std::move(status);
    c.answer = std::move(answer);
    c.http_status = http;
    c.tokens_in = 10 * id;
    c.cost = 0.5;
    return c;
  };
  const std::string body =
      nlohmann::json{{"choices",
                      {{{"index", 0},
                        {"message", {{"role", "assistant"}, {"content", "the first answer"}}},
                        {"finish_reason", "stop"}}}},
                     {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}
          .dump();
  auto model = search::make_replay_model(
      {call(1, "ok", body), call(2, "http_error", "{}", 500), call(3, "budget", "", 0)},
      llm::Protocol::OpenAI, "recorded.db");
  llm::ModelAnswer a = model->complete({"s", "u"});
  ASSERT_EQ(a.status, llm::Status::Ok) << a.error;
  EXPECT_EQ(a.text, "the first answer");
  EXPECT_EQ(a.request, "request 1");
  EXPECT_EQ(a.raw_answer, body);
  EXPECT_EQ(a.tokens_in, 10);
  EXPECT_EQ(a.cost, 0);  // nothing is paid for a replay
  a = model->complete({"s", "u"});
  EXPECT_EQ(a.status, llm::Status::HttpError);
  EXPECT_EQ(a.http_status, 500);
  EXPECT_EQ(model->complete({"s", "u"}).status, llm::Status::Budget);
  a = model->complete({"s", "u"});
  EXPECT_EQ(a.status, llm::Status::Cancelled);
  EXPECT_NE(a.error.find("recorded.db has no more model answers (3 replayed)"), std::string::npos)
      << a.error;

  // A command's answers are its text as printed.
  auto command =
      search::make_replay_model({call(1, "ok", "```cpp\nint x;\n```\n")}, std::nullopt, "r.db");
  EXPECT_EQ(command->complete({"", "u"}).text, "```cpp\nint x;\n```\n");
}

TEST(ReplayModel, ARunOutOfAnswersStopsTheProposerWithAnEvent) {
  RunDir r("ollie-llm-proposer-test-");
  store::Store db = r.create();
  auto model = search::make_replay_model({}, llm::Protocol::OpenAI, "recorded.db");
  PassAll evaluator;
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  proposers.push_back(std::make_unique<search::LlmProposer>(*model, db, proposer_options()));
  proposers.push_back(search::make_mutate_proposer(softmax()));
  EXPECT_EQ(run(softmax(), db, evaluator, proposers, {{"llm", 1.0}, {"mutate", 1.0}}, 5),
            search::StopReason::EvalBudget);
  EXPECT_EQ(db.counts().model_calls, 0);  // nothing was asked
  const auto stopped = events_of(r.dir / "run.db", "llm-stopped");
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_NE(stopped[0].find("no more model answers"), std::string::npos) << stopped[0];
}

}  // namespace
