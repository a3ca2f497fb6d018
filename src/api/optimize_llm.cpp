// The llm proposer's model for `ollie optimize` (see optimize_llm.h): stored settings,
// this session's flags, the key from the flags or the environment (never stored).
#include "api/optimize_llm.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "search/search.h"
#include "support/error.h"
#include "support/strings.h"

namespace ollie::api {

namespace {

// The settings flags give for this session, as stored options (only those given).
nlohmann::json flag_settings(const OptimizeOptions& f) {
  nlohmann::json j = nlohmann::json::object();
  if (!f.llm_protocol.empty()) j["protocol"] = f.llm_protocol;
  if (!f.llm_base_url.empty()) j["base_url"] = f.llm_base_url;
  if (!f.llm_model.empty()) j["model"] = f.llm_model;
  if (f.llm_max_tokens > 0) j["max_tokens"] = f.llm_max_tokens;
  if (f.llm_temperature >= 0) j["temperature"] = f.llm_temperature;
  if (f.llm_price_in >= 0) j["price_in_per_mtok"] = f.llm_price_in;
  if (f.llm_price_out >= 0) j["price_out_per_mtok"] = f.llm_price_out;
  if (f.llm_token_budget >= 0) j["token_budget"] = f.llm_token_budget;
  if (f.llm_cost_budget >= 0) j["cost_budget"] = f.llm_cost_budget;
  if (f.llm_timeout > 0) j["timeout"] = f.llm_timeout;
  if (!f.llm_prompt.empty()) {
    // The template's text, so that a resumed or replayed run asks the same questions even
    // if the file changes or moves.
    j["prompt_file"] = f.llm_prompt;
    j["prompt_text"] = read_text(f.llm_prompt, "prompt template");
  }
  if (!f.proposer_cmd.empty()) {
    j["source"] = "command";
    j["command"] = f.proposer_cmd;
  }
  if (f.proposer_timeout > 0) j["command_timeout"] = f.proposer_timeout;
  return j;
}

llm::PromptTemplate prompt_of(const nlohmann::json& s) {
  if (!s.contains("prompt_text")) return llm::default_prompt_template();
  return llm::parse_prompt_template(s["prompt_text"].get<std::string>(),
                                    s.value("prompt_file", std::string("--llm-prompt")));
}

// An HTTP model's configuration from the settings, the key from --llm-key or the
// environment. A missing model is a UserError naming what to set.
llm::ModelConfig http_config(const nlohmann::json& s, const OptimizeOptions& f) {
  llm::ConfigValues values;
  values.protocol = s.value("protocol", std::string());
  values.base_url = s.value("base_url", std::string());
  values.model = s.value("model", std::string());
  values.api_key = f.llm_key;
  llm::ModelConfig c;
  try {
    c = llm::resolve_config(values);
  } catch (const UserError& e) {
    throw UserError(
        fmt::format("the llm proposer has no model: {}. Configure one with --llm-model / "
                    "OLLIE_LLM_MODEL, --llm-base-url / "
                    "OLLIE_LLM_BASE_URL and the key in OPENAI_API_KEY or ANTHROPIC_API_KEY, or use "
                    "--proposer-cmd CMD; or leave "
                    "llm out of --proposers",
                    e.what()));
  }
  if (s.contains("max_tokens")) c.max_tokens = s["max_tokens"].get<int>();
  if (s.contains("temperature") && !s["temperature"].is_null())
    c.temperature = s["temperature"].get<double>();
  c.price_in_per_token = s.value("price_in_per_mtok", 0.0) / 1e6;
  c.price_out_per_token = s.value("price_out_per_mtok", 0.0) / 1e6;
  c.token_budget = s.value("token_budget", int64_t{0});
  c.cost_budget = s.value("cost_budget", 0.0);
  if (s.contains("timeout")) {
    c.total_timeout_seconds = s["timeout"].get<double>();
    c.low_speed_seconds =
        std::max(1, std::min(c.low_speed_seconds, static_cast<int>(c.total_timeout_seconds)));
  }
  return c;
}

// What a run stores of an HTTP model: the settings as resolved (so a resume does not
// depend on the environment of the day), never the key.
nlohmann::json stored_http(const llm::ModelConfig& c, const nlohmann::json& settings) {
  nlohmann::json j = settings;
  j["source"] = "http";
  j["protocol"] = llm::protocol_name(c.protocol);
  j["base_url"] = c.base_url;
  j["model"] = c.model;
  return j;
}

}  // namespace

std::vector<std::pair<std::string, double>> parse_proposers(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    double weight = 1;
    if (const size_t colon = item.find(':'); colon != std::string::npos) {
      try {
        weight = std::stod(item.substr(colon + 1));
      } catch (const std::exception&) {
        throw UserError("--proposers: bad weight in '" + item +
                        "'; write NAME or NAME:WEIGHT, e.g. mutate:1");
      }
      item = item.substr(0, colon);
    }
    if (item != "mutate" && item != "rewrite" && item != "llm")
      throw UserError("--proposers: unknown proposer '" + item +
                      "'; available: mutate, rewrite, llm");
    if (!(weight > 0))
      throw UserError("--proposers: the weight of '" + item + "' must be positive");
    out.emplace_back(item, weight);
    at = comma + 1;
  }
  return out;
}

bool names_llm(const std::string& proposers) {
  for (const auto& [name, weight] : parse_proposers(proposers))
    if (name == "llm") return true;
  return false;
}

nlohmann::json llm_options_for_new_run(const OptimizeOptions& f, std::string& proposers) {
  if (!f.proposer_cmd.empty() && !names_llm(proposers)) proposers += ",llm:1";
  if (!names_llm(proposers)) {
    if (!f.llm_model.empty() || !f.llm_base_url.empty())
      std::cerr
          << "note: --llm-* flags given, but --proposers has no llm; add it, e.g. --proposers "
             "mutate:3,rewrite:1,llm:1\n";
    return nullptr;
  }
  nlohmann::json settings = flag_settings(f);
  if (f.proposer_timeout > 0 && f.proposer_cmd.empty())
    throw UserError("--proposer-timeout is the time limit of --proposer-cmd; give the command too");
  if (settings.value("source", std::string()) == "command") {
    if (!settings.contains("command_timeout")) settings["command_timeout"] = 600.0;
    prompt_of(settings);  // a bad template is an error now, not at the first proposal
    return settings;
  }
  const llm::ModelConfig c = http_config(settings, f);
  prompt_of(settings);
  return stored_http(c, settings);
}

SessionModel make_session_model(const nlohmann::json& stored, const OptimizeOptions& f,
                                const store::Store& db) {
  nlohmann::json s = stored.is_object() ? stored : nlohmann::json::object();
  s.update(flag_settings(f));  // this session's flags win
  SessionModel out;
  out.prompt = prompt_of(s);
  if (s.value("source", std::string()) == "command") {
    llm::CommandConfig cc;
    cc.command = s.value("command", std::string());
    cc.timeout_seconds = s.value("command_timeout", 600.0);
    out.model = std::make_unique<llm::CommandModel>(cc);
    out.describe =
        fmt::format("the command '{}' (time limit {} s)", cc.command, cc.timeout_seconds);
    return out;
  }
  llm::ModelConfig c = http_config(s, f);
  // The budgets are the run's: what earlier sessions spent counts.
  const search::LlmUsage spent = search::llm_usage_of(db);
  if (c.token_budget > 0) {
    const int64_t left = c.token_budget - spent.tokens_in - spent.tokens_out;
    if (left <= 0)
      out.stopped = fmt::format(
          "the run's token budget ({}) was spent in earlier sessions; give a larger "
          "--llm-token-budget to go on",
          c.token_budget);
    else
      c.token_budget = left;
  }
  if (c.cost_budget > 0) {
    const double left = c.cost_budget - spent.cost;
    if (left <= 0)
      out.stopped = fmt::format(
          "the run's cost budget ({}) was spent in earlier sessions; give a larger "
          "--llm-cost-budget to go on",
          c.cost_budget);
    else
      c.cost_budget = left;
  }
  out.describe =
      fmt::format("{} model {} at {}", llm::protocol_name(c.protocol), c.model, c.base_url);
  out.model = std::make_unique<llm::Client>(c);
  return out;
}

SessionModel make_replay_model(const nlohmann::json& stored, const std::string& recorded_path,
                               const store::Store& recorded, const store::Store& db) {
  SessionModel out;
  const nlohmann::json s = stored.is_object() ? stored : nlohmann::json::object();
  out.prompt = prompt_of(s);
  std::optional<llm::Protocol> protocol;
  if (s.value("source", std::string()) != "command") {
    protocol = llm::parse_protocol(s.value("protocol", std::string("openai")));
    if (!protocol)
      throw UserError(
          fmt::format("{}: the recorded run names an unknown model protocol", recorded_path));
  }
  // A resumed replay goes on after the answers it has used.
  const int64_t used = static_cast<int64_t>(db.model_calls("llm").size());
  std::vector<store::ModelCall> calls = recorded.model_calls("llm");
  const size_t total = calls.size();
  calls.erase(calls.begin(),
              calls.begin() + std::min<int64_t>(used, static_cast<int64_t>(calls.size())));
  out.describe = fmt::format("a replay of the {} model answers recorded in {}{}", total,
                             recorded_path, used > 0 ? fmt::format(" ({} used before)", used) : "");
  out.model = search::make_replay_model(std::move(calls), protocol, recorded_path);
  return out;
}

std::string llm_plan_summary(const store::Store& db, const search::LlmProposer* proposer,
                             int64_t best_id, const std::string& entry) {
  std::string text;
  if (proposer) {
    const search::LlmUsage u = proposer->usage();
    if (u.with_schedule > 0 || u.refused > 0)
      text += fmt::format(
          "- the language model's plans (```schedule / ```rewrites answers) this session: {} "
          "became candidates, {} refused (events llm-refused say why)\n",
          u.with_schedule, u.refused);
  }
  for (const auto& [c, e] : db.best(200)) {  // fastest first
    if (c.proposer != "llm" || c.schedule.empty()) continue;
    text += fmt::format(
        "- the language model's fastest schedule: candidate {} ({:.3f} x the baseline's time{}): "
        "{}{}\n",
        c.id, e.ratio_vs_baseline,
        c.id == best_id ? fmt::format(", the best: {}.schedule", entry) : "",
        fmt::join(strings::nonempty_lines(c.schedule), "; "),
        c.rewrites.empty() ? ""
                           : fmt::format(", after the rewrites {}",
                                         fmt::join(strings::nonempty_lines(c.rewrites), "; ")));
    break;
  }
  return text;
}

}  // namespace ollie::api
