// The language model of `ollie optimize` (the llm proposer's, docs/llm.md): the settings a
// run stores in its options (never the API key), and the llm::Model a session uses, made
// from them and this session's flags: an HTTP client, an external command
// (--proposer-cmd), or a replay of a recorded run's answers (--replay).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/api.h"
#include "llm/llm.h"
#include "search/search.h"
#include "store/store.h"

namespace ollie::api {

// `--proposers` text ("mutate:3,rewrite:1,llm:1") as names and weights; UserError for an
// unknown name or a bad weight.
std::vector<std::pair<std::string, double>> parse_proposers(const std::string& text);

// True when the proposers text ("mutate:3,llm:1") names llm.
bool names_llm(const std::string& proposers);

// For a new run: the "llm" object of its options_json (no key), or null when the run has
// no llm proposer. `proposers` gains "llm:1" when --proposer-cmd is given without it.
// Resolves the configuration now, so that a missing model is a UserError (naming the
// flags and variables to set) before anything is created.
nlohmann::json llm_options_for_new_run(const OptimizeOptions& f, std::string& proposers);

// The summary's lines on the llm's plans (docs/llm.md): this session's answers with a
// schedule that became candidates and those refused, and the fastest passing llm candidate
// that carries a schedule, with it (and its rewrites); `best_id` is the run's best, written
// to ENTRY.schedule. Empty when there is nothing to say.
std::string llm_plan_summary(const store::Store& db, const search::LlmProposer* proposer,
                             int64_t best_id, const std::string& entry);

struct SessionModel {
  std::unique_ptr<llm::Model> model;
  std::string describe;  // for the log line: what answers (never the key)
  std::string stopped;   // non-empty: the proposer starts stopped (a budget spent before)
  llm::PromptTemplate prompt = llm::default_prompt_template();
};

// The model of this session: the run's stored "llm" options, with the llm flags given now
// on top (a resumed run may get a new budget, timeout or key), the key from --llm-key or
// the environment, and budgets less what the run's earlier sessions spent (`db`).
SessionModel make_session_model(const nlohmann::json& stored, const OptimizeOptions& f,
                                const store::Store& db);

// The model of a replay: the recorded run's answers in order, after those this run's
// database already holds (a resumed replay).
SessionModel make_replay_model(const nlohmann::json& stored, const std::string& recorded_path,
                               const store::Store& recorded, const store::Store& db);

}  // namespace ollie::api
