// ModelConfig from command-line values and the environment: which protocol, endpoint,
// model and key, with errors that name the flag and the variable to set. No error text
// ever contains the key.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "llm/llm.h"
#include "support/error.h"

namespace ollie::llm {
namespace {

constexpr const char* kOpenAIKey = "OPENAI_API_KEY";
constexpr const char* kAnthropicKey = "ANTHROPIC_API_KEY";
constexpr const char* kOpenAIDefaultBase = "https://api.openai.com/v1";
constexpr const char* kAnthropicDefaultBase = "https://api.anthropic.com";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "https://user@Host.example:443/v1" -> "host.example"
std::string url_host(const std::string& url) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = url.find_first_of("/?#", start);
  std::string authority =
      url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (size_t at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  if (size_t colon = authority.rfind(':');
      colon != std::string::npos && authority.find(']') == std::string::npos)
    authority = authority.substr(0, colon);
  return lower(authority);
}

bool host_is(const std::string& host, const std::string& domain) {
  return host == domain || (host.size() > domain.size() && host.ends_with("." + domain));
}

// A value from the command line, else the environment; with where it came from.
struct Sourced {
  std::string value;
  std::string source;
};
Sourced pick(const std::string& flag_value, const char* flag, const Environment& env,
             const char* variable) {
  if (!flag_value.empty()) return {flag_value, flag};
  if (auto v = env(variable); v && !v->empty()) return {*v, variable};
  return {"", ""};
}

}  // namespace

const char* protocol_name(Protocol p) {
  switch (p) {
    case Protocol::OpenAI: return "openai";
    case Protocol::Anthropic: return "anthropic";
  }
  return "?";
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  std::string n = lower(std::string(name));
  if (n == "openai") return Protocol::OpenAI;
  if (n == "anthropic") return Protocol::Anthropic;
  return std::nullopt;
}

Environment process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

ModelConfig resolve_config(const ConfigValues& values, const Environment& env) {
  Sourced protocol_text = pick(values.protocol, "--llm-protocol", env, "OLLIE_LLM_PROTOCOL");
  Sourced base = pick(values.base_url, "--llm-base-url", env, "OLLIE_LLM_BASE_URL");
  Sourced model = pick(values.model, "--llm-model", env, "OLLIE_LLM_MODEL");
  Sourced openai_key = pick("", "", env, kOpenAIKey);
  Sourced anthropic_key = pick("", "", env, kAnthropicKey);

  if (!base.value.empty() && !base.value.starts_with("http://") &&
      !base.value.starts_with("https://"))
    throw UserError("the model base URL '" + base.value + "' (" + base.source +
                    ") must start with http:// or https://");
  std::string host = url_host(base.value);

  Protocol protocol;
  if (!protocol_text.value.empty()) {
    auto p = parse_protocol(protocol_text.value);
    if (!p)
      throw UserError(
          "unknown model protocol '" + protocol_text.value + "' (" + protocol_text.source +
          "): use openai (Chat Completions: OpenAI, vLLM, llama.cpp, Ollama, ...) or anthropic");
    protocol = *p;
  } else if (host_is(host, "anthropic.com")) {
    protocol = Protocol::Anthropic;
  } else if (host_is(host, "openai.com")) {
    protocol = Protocol::OpenAI;
  } else if (!values.api_key.empty() && values.api_key.starts_with("sk-ant-")) {
    protocol = Protocol::Anthropic;  // Anthropic's keys say so
  } else if (!openai_key.value.empty() && anthropic_key.value.empty()) {
    protocol = Protocol::OpenAI;
  } else if (openai_key.value.empty() && !anthropic_key.value.empty()) {
    protocol = Protocol::Anthropic;
  } else if (openai_key.value.empty() && anthropic_key.value.empty()) {
    if (base.value.empty())
      throw UserError(
          "no language model is configured: set OLLIE_LLM_BASE_URL (or --llm-base-url) to an "
          "OpenAI-compatible server, or OPENAI_API_KEY or ANTHROPIC_API_KEY for a hosted model, "
          "and "
          "OLLIE_LLM_MODEL (or --llm-model)");
    protocol = Protocol::OpenAI;  // a server without a key: a local OpenAI-compatible one
  } else {
    throw UserError(
        "both OPENAI_API_KEY and ANTHROPIC_API_KEY are set and the base URL does not say which "
        "protocol to speak: choose one with --llm-protocol or OLLIE_LLM_PROTOCOL (openai or "
        "anthropic)");
  }

  ModelConfig config;
  config.protocol = protocol;
  const char* key_variable = protocol == Protocol::OpenAI ? kOpenAIKey : kAnthropicKey;
  if (!values.api_key.empty()) {
    config.api_key = values.api_key;
    config.key_source = "--llm-key";
  } else {
    config.api_key = protocol == Protocol::OpenAI ? openai_key.value : anthropic_key.value;
    config.key_source = key_variable;
  }

  if (base.value.empty()) {
    config.base_url = protocol == Protocol::OpenAI ? kOpenAIDefaultBase : kAnthropicDefaultBase;
    config.base_url_source =
        "the default endpoint; set OLLIE_LLM_BASE_URL or --llm-base-url for another";
  } else {
    config.base_url = base.value;
    config.base_url_source = base.source;
  }
  while (config.base_url.ends_with("/")) config.base_url.pop_back();
  // The Anthropic path is /v1/messages: a base given as ".../v1" would double it.
  if (protocol == Protocol::Anthropic && config.base_url.ends_with("/v1"))
    config.base_url.resize(config.base_url.size() - 3);
  host = url_host(config.base_url);

  if (model.value.empty())
    throw UserError(std::string("no model is named: set OLLIE_LLM_MODEL or --llm-model (the ") +
                    protocol_name(protocol) + " protocol's model name, e.g. " +
                    (protocol == Protocol::OpenAI ? "gpt-4.1 or the name a local server lists"
                                                  : "claude-sonnet-4-5") +
                    ")");
  config.model = model.value;
  config.model_source = model.source;

  config.max_completion_tokens = protocol == Protocol::OpenAI && host_is(host, "openai.com");
  bool hosted = host_is(host, "openai.com") || host_is(host, "anthropic.com");
  if (config.api_key.empty() && hosted)
    throw UserError(std::string("no API key for ") + config.base_url + ": set " + key_variable +
                    " (or pass --llm-key, which other users can see in the process list)");
  return config;
}

}  // namespace ollie::llm
