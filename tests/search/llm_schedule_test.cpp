// The llm proposer in ollie's own terms, against the loopback test server (tests/llm/
// fake_model_server.h): the prompt shows the stages, the schedule, the directive table and
// the rewrites that apply; a ```schedule answer becomes a candidate that carries its
// schedule (mutate can move it) and passes the real verifier; a ```rewrites + ```schedule
// answer is applied; an illegal or malformed plan is refused (the call's status, an event,
// and the reason in the next prompt), never a crash; a replay plays a refused answer back.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../llm/fake_model.h"
#include "emit/emit.h"
#include "loops/loops.h"
#include "measure/measure.h"
#include "rewrite/rewrite.h"
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

const std::string kKey = "sk-test-llm-schedule-0123456789";

search::LlmProposerOptions options_with_graph() {
  search::LlmProposerOptions o;
  o.spec_source = softmax_source();
  o.header = emit::emit_header(softmax());
  o.hardware = search::describe_hardware(measure::MachinePeaks{}, 1);
  o.graph = &softmax();
  return o;
}

// The chain sitting on the baseline (passed, 1 ms).
search::State at_baseline() {
  search::State s;
  s.id = 1;
  s.candidate = search::baseline_candidate(softmax());
  s.passed = true;
  s.seconds = 1e-3;
  return s;
}

std::string schedule_answer(const std::string& schedule) {
  return "Split the rows into vectors and run them in parallel:\n\n```schedule\n" + schedule +
         "```\n";
}

const std::string kLegal = "split out0 n 8\nvectorize out0 n_i\nparallel out0 m\nparallel t1 m\n";

TEST(LlmSchedule, TheAnswersScheduleBecomesAVerifiedCandidateThatMutateCanMove) {
  RunDir r("ollie-llm-schedule-test-");
  store::Store db = r.create();
  FakeModelServer server(kKey);
  server.script({Scripted::answer(schedule_answer(kLegal))});
  llm::Client client(fake_model_config(server, kKey));
  search::LlmProposer llm(client, db, options_with_graph());
  const auto c = llm.propose(at_baseline(), 1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->proposer, "llm");
  EXPECT_EQ(c->schedule, kLegal);  // carried as text: not free-form
  EXPECT_TRUE(c->rewrites.empty());
  EXPECT_FALSE(search::is_free_form(*c));
  EXPECT_EQ(c->move, "llm schedule (4 directives), model call 1");
  EXPECT_NE(c->source.find("#pragma omp simd"), std::string::npos);
  EXPECT_EQ(db.model_calls("llm").at(0).status, "ok");
  EXPECT_EQ(llm.usage().with_schedule, 1);

  // The prompt: the stages, the current schedule, the directive table, the rewrites.
  const std::string prompt = user_message(server.requests().at(0));
  EXPECT_NE(prompt.find(loops::describe_stages(softmax())), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("```schedule\n" + search::baseline_candidate(softmax()).schedule),
            std::string::npos);
  EXPECT_NE(prompt.find("- `split S L F`: `L` becomes `L_o`"), std::string::npos);
  EXPECT_NE(
      prompt.find("- `vectorize S L`: `#pragma omp simd`. Refused when: `L` is not innermost"),
      std::string::npos);
  EXPECT_NE(prompt.find("- `reciprocal`: `a / broadcast(b)"), std::string::npos);
  EXPECT_NE(prompt.find("reciprocal %"), std::string::npos);  // a site of softmax's graph
  EXPECT_NE(prompt.find("float32 lanes"), std::string::npos);
  EXPECT_NE(prompt.find("in one ```schedule block"), std::string::npos);

  // The real verifier passes it; mutate moves it like any emitted candidate.
  search::EvaluatorOptions eo;
  eo.runner_path = OLLIE_RUNNER;
  eo.cache_dir = (r.dir / "cache").string();
  eo.threads = 1;
  eo.bench_seconds = 0.01;
  auto evaluator = search::make_local_evaluator(softmax(), softmax_at,
                                                search::baseline_candidate(softmax()).source, eo);
  const search::Evaluation e = evaluator->evaluate(*c);
  EXPECT_EQ(e.verdict, verify::Verdict::Pass) << e.message;
  search::State on_it;
  on_it.candidate = *c;
  on_it.passed = true;
  const auto moved = search::make_mutate_proposer(softmax())->propose(on_it, 7);
  ASSERT_TRUE(moved.has_value());
  EXPECT_NE(moved->schedule, kLegal);
}

TEST(LlmSchedule, AnIllegalScheduleIsRefusedWithItsReasonRecordedAndShownNextTime) {
  RunDir r("ollie-llm-schedule-test-");
  store::Store db = r.create();
  FakeModelServer server(kKey);
  // t1 is softmax's row max: its n loop carries the reduction.
  server.script({Scripted::answer(schedule_answer("parallel out0 m\nvectorize t1 n\n")),
                 Scripted::answer("```cpp\nint nothing;\n```\n")});
  llm::Client client(fake_model_config(server, kKey));
  search::LlmProposer llm(client, db, options_with_graph());
  EXPECT_FALSE(llm.propose(at_baseline(), 1).has_value());  // refused, no crash
  const auto calls = db.model_calls("llm");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].status, "refused");
  const auto refused = events_of(r.dir / "run.db", "llm-refused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("model call 1"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("schedule line 2: cannot vectorize t1 n"), std::string::npos)
      << refused[0];
  EXPECT_NE(refused[0].find("reduction"), std::string::npos) << refused[0];
  EXPECT_EQ(llm.usage().refused, 1);
  EXPECT_EQ(llm.usage().failed, 0);
  EXPECT_EQ(search::llm_usage_of(db).refused, 1);
  // The next prompt shows the model why.
  llm.propose(at_baseline(), 2);
  const std::string second = user_message(server.requests().at(1));
  EXPECT_NE(second.find("cannot vectorize t1 n"), std::string::npos) << second;
  EXPECT_NE(second.find("refused"), std::string::npos);
}

TEST(LlmSchedule, ARewritesAndScheduleAnswerIsApplied) {
  RunDir r("ollie-llm-schedule-test-");
  store::Store db = r.create();
  std::string site;
  for (const auto& s : rewrite::find_sites(softmax()))
    if (s.rule == "reciprocal") site = rewrite::to_text(s);
  ASSERT_FALSE(site.empty());
  FakeModelServer server(kKey);
  server.script({Scripted::answer("Multiply by the reciprocal:\n```rewrites\n" + site +
                                  "   # one division per row\n```\n```schedule\nparallel out0 "
                                  "m\n```\n"),
                 Scripted::answer("```rewrites\n" + site + "\n```\n")});
  llm::Client client(fake_model_config(server, kKey));
  search::LlmProposer llm(client, db, options_with_graph());
  const auto c = llm.propose(at_baseline(), 1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rewrites, site + "\n");  // the canonical line, comment dropped
  EXPECT_EQ(c->schedule, "parallel out0 m\n");
  EXPECT_EQ(c->move, "llm schedule (1 directive, 1 rewrite), model call 1");
  // The source is the rewritten graph's, emitted with that schedule.
  const ir::Graph rewritten = rewrite::replay(softmax(), c->rewrites);
  EXPECT_EQ(c->source,
            emit::emit_kernel(loops::lower(rewritten, loops::parse_schedule(c->schedule)),
                              rewritten, {.schedule_text = c->schedule}));
  // Rewrites alone: the rewritten graph's default schedule.
  const auto d = llm.propose(at_baseline(), 2);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->schedule, loops::to_text(loops::default_schedule(rewritten)));
  EXPECT_EQ(d->move, "llm rewrites (1 rewrite), the default schedule, model call 2");
}

TEST(LlmSchedule, MalformedPlansAreRefusedWithALocatedMessage) {
  RunDir r("ollie-llm-schedule-test-");
  store::Store db = r.create();
  std::string too_long;
  for (int i = 0; i < 201; ++i) too_long += "unroll out0 n\n";
  FakeModelServer server(kKey);
  server.script(
      {Scripted::answer(schedule_answer("parallel out0 m\nvectorise out0 n\n")),
       Scripted::answer("```rewrites\nreciprocal\n```\n```schedule\nparallel out0 m\n```"),
       Scripted::answer("```rewrites\nflash %1 64\n```\n"),
       Scripted::answer(schedule_answer("# nothing\n")),
       Scripted::answer("```schedule\nparallel out0 m\nsplit out0"),
       Scripted::answer(schedule_answer(too_long))});
  llm::Client client(fake_model_config(server, kKey));
  search::LlmProposer llm(client, db, options_with_graph());
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(llm.propose(at_baseline(), i).has_value()) << i;
  const auto refused = events_of(r.dir / "run.db", "llm-refused");
  ASSERT_EQ(refused.size(), 6u);
  EXPECT_NE(refused[0].find("```schedule block:2:1: error: unknown schedule directive 'vectorise'"),
            std::string::npos)
      << refused[0];
  EXPECT_NE(refused[1].find("```rewrites block, line 1 ('reciprocal'): malformed rewrite"),
            std::string::npos)
      << refused[1];
  EXPECT_NE(refused[2].find("```rewrites block, line 1 ('flash %1 64')"), std::string::npos)
      << refused[2];
  EXPECT_NE(refused[3].find("no directives"), std::string::npos) << refused[3];
  EXPECT_NE(refused[4].find("not closed"), std::string::npos) << refused[4];
  EXPECT_NE(refused[5].find("too long (201 directives"), std::string::npos) << refused[5];
  for (const auto& call : db.model_calls("llm")) EXPECT_EQ(call.status, "refused");
  EXPECT_EQ(db.counts().candidates, 0);
}

TEST(LlmSchedule, AReplayReadsARefusedAnswerBackAndRefusesItAgain) {
  store::ModelCall call;
  call.id = 4;
  call.status = "refused";
  call.answer = "```schedule\nvectorize t1 n\n```\n";
  auto model = search::make_replay_model({call}, std::nullopt, "recorded.db");
  const llm::ModelAnswer a = model->complete({"", "u"});
  EXPECT_EQ(a.status, llm::Status::Ok) << a.error;
  EXPECT_EQ(a.text, call.answer);
  RunDir r("ollie-llm-schedule-test-");
  store::Store db = r.create();
  auto replay = search::make_replay_model({call}, std::nullopt, "recorded.db");
  search::LlmProposer llm(*replay, db, options_with_graph());
  EXPECT_FALSE(llm.propose(at_baseline(), 1).has_value());
  EXPECT_EQ(db.model_calls("llm").at(0).status, "refused");
}

}  // namespace
