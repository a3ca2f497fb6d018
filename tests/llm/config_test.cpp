// resolve_config: protocol inference from the base URL and the keys, defaults, and errors
// that name the flag and the variable to set (and never the key).
#include <gtest/gtest.h>

#include <map>

#include "llm/llm.h"
#include "support/error.h"

namespace ollie::llm {
namespace {

const std::string kOpenAIKey = "sk-openai-test-key-123456";
const std::string kAnthropicKey = "sk-ant-test-key-abcdef";

Environment env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ConfigValues values_of(std::string protocol, std::string base_url = "", std::string model = "",
                       std::string api_key = "") {
  ConfigValues v;
  v.protocol = std::move(protocol);
  v.base_url = std::move(base_url);
  v.model = std::move(model);
  v.api_key = std::move(api_key);
  return v;
}

// The message of the UserError resolve_config throws ("" when it does not throw).
std::string error_of(const ConfigValues& values, const Environment& env) {
  try {
    resolve_config(values, env);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, OpenAIKeyAloneMeansTheOpenAIEndpoint) {
  ModelConfig c =
      resolve_config({}, env_of({{"OPENAI_API_KEY", kOpenAIKey}, {"OLLIE_LLM_MODEL", "gpt-x"}}));
  EXPECT_EQ(c.protocol, Protocol::OpenAI);
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.api_key, kOpenAIKey);
  EXPECT_EQ(c.key_source, "OPENAI_API_KEY");
  EXPECT_EQ(c.model, "gpt-x");
  EXPECT_EQ(c.model_source, "OLLIE_LLM_MODEL");
  EXPECT_TRUE(c.max_completion_tokens);  // api.openai.com's reasoning models reject max_tokens
}

TEST(Config, AnthropicKeyAloneMeansTheAnthropicEndpoint) {
  ModelConfig c = resolve_config(
      {}, env_of({{"ANTHROPIC_API_KEY", kAnthropicKey}, {"OLLIE_LLM_MODEL", "claude-x"}}));
  EXPECT_EQ(c.protocol, Protocol::Anthropic);
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");
  EXPECT_EQ(c.key_source, "ANTHROPIC_API_KEY");
}

TEST(Config, TheBaseUrlDecidesWhenBothKeysAreSet) {
  auto env = env_of({{"OPENAI_API_KEY", kOpenAIKey},
                     {"ANTHROPIC_API_KEY", kAnthropicKey},
                     {"OLLIE_LLM_MODEL", "m"},
                     {"OLLIE_LLM_BASE_URL", "https://api.anthropic.com/v1/"}});
  ModelConfig c = resolve_config({}, env);
  EXPECT_EQ(c.protocol, Protocol::Anthropic);
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");  // "/v1/" dropped: the path adds it
  EXPECT_EQ(c.api_key, kAnthropicKey);
}

TEST(Config, BothKeysWithoutAHintIsAnErrorNamingTheProtocolSetting) {
  auto env = env_of({{"OPENAI_API_KEY", kOpenAIKey},
                     {"ANTHROPIC_API_KEY", kAnthropicKey},
                     {"OLLIE_LLM_MODEL", "m"}});
  std::string e = error_of({}, env);
  EXPECT_NE(e.find("OLLIE_LLM_PROTOCOL"), std::string::npos) << e;
  EXPECT_NE(e.find("--llm-protocol"), std::string::npos) << e;
  EXPECT_EQ(resolve_config(values_of("anthropic"), env).protocol, Protocol::Anthropic);
  env = env_of({{"OPENAI_API_KEY", kOpenAIKey},
                {"ANTHROPIC_API_KEY", kAnthropicKey},
                {"OLLIE_LLM_MODEL", "m"},
                {"OLLIE_LLM_PROTOCOL", "OpenAI"}});
  EXPECT_EQ(resolve_config({}, env).protocol, Protocol::OpenAI);
}

TEST(Config, LocalServerWithoutKeySpeaksOpenAI) {
  ModelConfig c = resolve_config({}, env_of({{"OLLIE_LLM_BASE_URL", "http://localhost:8000/v1"},
                                             {"OLLIE_LLM_MODEL", "qwen"}}));
  EXPECT_EQ(c.protocol, Protocol::OpenAI);
  EXPECT_EQ(c.base_url, "http://localhost:8000/v1");
  EXPECT_EQ(c.api_key, "");
  EXPECT_EQ(c.base_url_source, "OLLIE_LLM_BASE_URL");
  EXPECT_FALSE(c.max_completion_tokens);  // local servers know max_tokens
}

TEST(Config, FlagsWinOverTheEnvironment) {
  auto env = env_of(
      {{"OLLIE_LLM_BASE_URL", "http://localhost:8000/v1"}, {"OLLIE_LLM_MODEL", "env-model"}});
  ModelConfig c = resolve_config(values_of("", "http://127.0.0.1:9/v1", "flag-model"), env);
  EXPECT_EQ(c.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(c.base_url_source, "--llm-base-url");
  EXPECT_EQ(c.model, "flag-model");
  EXPECT_EQ(c.model_source, "--llm-model");
}

TEST(Config, AnAnthropicKeyGivenAsAFlagSaysItsProtocol) {
  ModelConfig c = resolve_config(values_of("", "", "m", kAnthropicKey), env_of({}));
  EXPECT_EQ(c.protocol, Protocol::Anthropic);
  EXPECT_EQ(c.key_source, "--llm-key");
}

TEST(Config, ErrorsNameWhatToSet) {
  std::string nothing = error_of({}, env_of({}));
  EXPECT_NE(nothing.find("OLLIE_LLM_BASE_URL"), std::string::npos) << nothing;
  EXPECT_NE(nothing.find("OPENAI_API_KEY"), std::string::npos) << nothing;

  std::string no_model = error_of({}, env_of({{"OPENAI_API_KEY", kOpenAIKey}}));
  EXPECT_NE(no_model.find("OLLIE_LLM_MODEL"), std::string::npos) << no_model;
  EXPECT_NE(no_model.find("--llm-model"), std::string::npos) << no_model;

  std::string no_key = error_of(
      {}, env_of({{"OLLIE_LLM_BASE_URL", "https://api.anthropic.com"}, {"OLLIE_LLM_MODEL", "m"}}));
  EXPECT_NE(no_key.find("ANTHROPIC_API_KEY"), std::string::npos) << no_key;

  std::string bad_protocol = error_of(values_of("gemini"), env_of({{"OLLIE_LLM_MODEL", "m"}}));
  EXPECT_NE(bad_protocol.find("gemini"), std::string::npos) << bad_protocol;
  EXPECT_NE(bad_protocol.find("--llm-protocol"), std::string::npos) << bad_protocol;

  std::string bad_url =
      error_of({}, env_of({{"OLLIE_LLM_BASE_URL", "localhost:8000"}, {"OLLIE_LLM_MODEL", "m"}}));
  EXPECT_NE(bad_url.find("OLLIE_LLM_BASE_URL"), std::string::npos) << bad_url;
}

TEST(Config, NoErrorContainsTheKey) {
  const std::vector<std::pair<ConfigValues, std::map<std::string, std::string>>> cases = {
      {{}, {{"OPENAI_API_KEY", kOpenAIKey}}},
      {{},
       {{"OPENAI_API_KEY", kOpenAIKey},
        {"ANTHROPIC_API_KEY", kAnthropicKey},
        {"OLLIE_LLM_MODEL", "m"}}},
      {values_of("nope", "", "", kOpenAIKey), {{"OLLIE_LLM_MODEL", "m"}}},
      {values_of("", "", "", kAnthropicKey), {}},
      {values_of("", "ftp://x", "", kOpenAIKey), {{"OLLIE_LLM_MODEL", "m"}}},
  };
  for (const auto& [values, vars] : cases) {
    std::string e = error_of(values, env_of(vars));
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find(kOpenAIKey), std::string::npos) << e;
    EXPECT_EQ(e.find(kAnthropicKey), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace ollie::llm
