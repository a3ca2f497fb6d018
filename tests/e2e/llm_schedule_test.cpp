// `ollie optimize --proposers llm:1` against the loopback test server (tests/llm/
// fake_model_server.h) where the model answers in ollie's own terms: an illegal schedule
// is refused (the call's status, an event, the reason in the next prompt), legal ones
// become verified candidates carrying their schedules, the summary shows the llm's
// fastest schedule, and a replay of the run refuses and accepts the same answers.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../llm/fake_model.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie::llm::testing::events_of;
using ollie::llm::testing::FakeModelServer;
using ollie::llm::testing::Scripted;
using ollie::llm::testing::user_message;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

const std::string kKey = "sk-e2e-schedule-5d1e0c9a7b";

// `ollie ARGS` with no model variable of the developer's own, the key given, and a cache
// of its own.
CommandResult ollie(const fs::path& cache, const std::string& args) {
  const std::string cmd =
      "env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u OLLIE_LLM_MODEL -u OLLIE_LLM_BASE_URL -u "
      "OLLIE_LLM_PROTOCOL OLLIE_CACHE_DIR=" +
      cache.string() + " OPENAI_API_KEY=" + kKey + " " + OLLIE_BINARY + " " + args + " 2>&1";
  return shell(cmd);
}

std::string schedule_answer(const std::string& schedule) {
  return "The rows are independent and each is long enough for vectors:\n\n```schedule\n" +
         schedule + "```\n";
}

TEST(LlmScheduleE2e, OptimizeTakesTheModelsSchedulesRefusesAnIllegalOneAndReplaysThem) {
  const fs::path dir =
      fs::temp_directory_path() / ("ollie_e2e_llm_schedule_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string spec = (fs::path(OLLIE_SOURCE_DIR) / "examples/softmax.py").string();
  const std::string legal = "split out0 n 16\nvectorize out0 n_i\nparallel out0 m\n";
  const std::string other = "parallel out0 m\nparallel t1 m\n";
  {
    FakeModelServer server(kKey);
    // --give-up 0: every schedule the model gives is verified, whatever a busy machine's
    // speed probe would say (the test checks that they pass).
    server.script({Scripted::answer(schedule_answer("vectorize t1 n\n")),  // t1: a row max
                   Scripted::answer(schedule_answer(legal)),
                   Scripted::answer(schedule_answer(other))});
    const CommandResult r =
        ollie(dir / "cache",
              "optimize " + spec +
                  " --dims M=16,N=64 --evals 3 --bench-seconds 0.05 --give-up 0 --proposers "
                  "llm:1 --llm-base-url " +
                  server.openai_base() + " --llm-model test-model -o " + (dir / "a").string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto seen = server.requests();
    ASSERT_EQ(seen.size(), 3u);
    // The prompt shows the stages and the directives; the second one the refusal.
    const std::string first = user_message(seen[0]);
    EXPECT_NE(first.find("out0: for m in [0, M), for n in [0, N)"), std::string::npos) << first;
    EXPECT_NE(first.find("- `parallel S L`: `#pragma omp parallel for`. Refused when"),
              std::string::npos);
    EXPECT_NE(user_message(seen[1]).find("cannot vectorize t1 n"), std::string::npos);
  }
  const fs::path db_path = dir / "a" / "run.db";
  {
    ollie::store::Store db = ollie::store::Store::open(db_path.string());
    const auto calls = db.model_calls("llm");
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].status, "refused");
    EXPECT_EQ(calls[1].status, "ok");
    const auto refused = events_of(db_path, "llm-refused");
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_NE(refused[0].find("model call 1"), std::string::npos) << refused[0];
    int with_schedule = 0;
    for (int64_t id = 1; id <= db.counts().candidates; ++id) {
      const auto c = db.candidate(id);
      if (c->proposer != "llm") continue;
      ++with_schedule;
      EXPECT_TRUE(c->schedule == legal || c->schedule == other) << c->schedule;
      EXPECT_EQ(db.evaluation_of(c->id)->verdict, "pass");
    }
    EXPECT_EQ(with_schedule, 2);
  }
  const std::string summary = read_file(dir / "a" / "summary.md");
  EXPECT_NE(summary.find("this session: 2 became candidates, 1 refused"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("- the language model's fastest schedule: candidate "), std::string::npos)
      << summary;
  EXPECT_TRUE(summary.find("split out0 n 16; vectorize out0 n_i; parallel out0 m") !=
                  std::string::npos ||
              summary.find("parallel out0 m; parallel t1 m") != std::string::npos)
      << summary;

  // The replay (no server) refuses and accepts the same answers and reaches the same best.
  const CommandResult replay =
      ollie(dir / "cache", "optimize --replay " + db_path.string() + " -o " + (dir / "r").string());
  ASSERT_EQ(replay.exit_code, 0) << replay.out;
  EXPECT_EQ(read_file(dir / "r" / "softmax.cpp"), read_file(dir / "a" / "softmax.cpp"));
  {
    ollie::store::Store r = ollie::store::Store::open((dir / "r" / "run.db").string());
    const auto calls = r.model_calls("llm");
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].status, "refused");
    EXPECT_EQ(calls[1].status, "ok");
  }
  fs::remove_all(dir);
}

}  // namespace
