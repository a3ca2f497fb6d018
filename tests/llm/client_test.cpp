// The model client against the loopback test server (fake_model_server.h): both
// protocols, retries and backoff, timeouts, bad answers, clear 401/404 errors, requests in
// flight together, token and cost accounting, the budget, cancellation, and that the API
// key appears in nothing the client returns.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_model_server.h"
#include "llm/llm.h"

namespace ollie::llm {
namespace {

using testing::FakeModelServer;
using testing::Scripted;

const std::string kKey = "sk-test-0123456789abcdefSECRET";

// A config for the test server; waits are recorded by the hook, not slept.
ModelConfig config_for(const FakeModelServer& server, Protocol protocol, std::string key = kKey) {
  ModelConfig c;
  c.protocol = protocol;
  c.base_url = protocol == Protocol::OpenAI ? server.openai_base() : server.anthropic_base();
  c.model = "test-model";
  c.api_key = std::move(key);
  c.key_source = protocol == Protocol::OpenAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
  c.max_tokens = 1000;
  c.connect_timeout_seconds = 10;
  c.total_timeout_seconds = 10;  // generous; a test that times out by mistake fails soon
  c.low_speed_seconds = 10;
  c.max_retries = 3;
  c.backoff_initial_seconds = 1;
  c.backoff_max_seconds = 3;
  c.retry_after_max_seconds = 5;
  return c;
}

ClientHooks no_sleep() {
  return ClientHooks{[](double) {}};
}

ModelRequest request() { return ModelRequest{"You write kernels.", "Make it faster."}; }

// Every string in an answer the client produced.
std::string all_text(const ModelAnswer& a) {
  return a.request + "\n" + a.raw_answer + "\n" + a.text + "\n" + a.error + "\n" + a.stop_reason;
}

class BothProtocols : public ::testing::TestWithParam<Protocol> {};

TEST_P(BothProtocols, AnswerWithKernelIsOkAndTheRequestFollowsTheProtocol) {
  FakeModelServer server(kKey);
  Client client(config_for(server, GetParam()), no_sleep());
  Model& model = client;  // what a proposer holds
  ModelAnswer a = model.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(a.text, testing::answer_with_kernel());
  EXPECT_EQ(a.tokens_in, 100);
  EXPECT_EQ(a.tokens_out, 50);
  EXPECT_TRUE(extract_code(a.text).found);

  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].body, a.request);  // the stored request is the body as sent
  auto body = nlohmann::json::parse(seen[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_tokens"], 1000);
  EXPECT_FALSE(body.contains("temperature"));  // unset: the server's default
  if (GetParam() == Protocol::OpenAI) {
    EXPECT_EQ(seen[0].path, "/v1/chat/completions");
    EXPECT_EQ(seen[0].headers["Authorization"], "Bearer " + kKey);
    ASSERT_EQ(body["messages"].size(), 2u);
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][1]["content"], "Make it faster.");
    EXPECT_EQ(a.stop_reason, "stop");
  } else {
    EXPECT_EQ(seen[0].path, "/v1/messages");
    EXPECT_EQ(seen[0].headers["x-api-key"], kKey);
    EXPECT_EQ(seen[0].headers["anthropic-version"], "2023-06-01");
    EXPECT_EQ(body["system"], "You write kernels.");
    ASSERT_EQ(body["messages"].size(), 1u);
    EXPECT_EQ(body["messages"][0]["role"], "user");
    EXPECT_EQ(a.stop_reason, "end_turn");
  }
  EXPECT_EQ(a.request.find(kKey), std::string::npos);
}

TEST_P(BothProtocols, AnswerWithoutCodeIsOkButExtractsNothing) {
  FakeModelServer server(kKey);
  server.script({Scripted::answer("I cannot make this faster; it is already memory bound.")});
  Client client(config_for(server, GetParam()), no_sleep());
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  ExtractedCode code = extract_code(a.text);
  EXPECT_FALSE(code.found);
  EXPECT_NE(code.how.find("no code"), std::string::npos);
}

TEST_P(BothProtocols, RateLimitHonoursRetryAfterThenSucceeds) {
  FakeModelServer server(kKey);
  server.script(
      {Scripted::http(429, R"({"error": {"message": "slow down"}})", {{"Retry-After", "2"}})});
  Client client(config_for(server, GetParam()), no_sleep());
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.attempts, 2);
  EXPECT_EQ(a.waits, std::vector<double>({2.0}));
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(client.usage().retries, 1);
}

TEST_P(BothProtocols, ServerErrorThenSuccessIsRetriedOnce) {
  FakeModelServer server(kKey);
  server.script({Scripted::http(500, R"({"error": {"message": "internal"}})")});
  Client client(config_for(server, GetParam()), no_sleep());
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.attempts, 2);
  EXPECT_EQ(a.waits, std::vector<double>({1.0}));  // backoff_initial_seconds
}

TEST_P(BothProtocols, UnauthorizedIsNotRetriedAndNamesTheKeyVariable) {
  FakeModelServer server("sk-the-right-key-000000");
  Client client(config_for(server, GetParam()), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.http_status, 401);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_TRUE(a.waits.empty());
  const std::string variable =
      GetParam() == Protocol::OpenAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
  EXPECT_NE(a.error.find(variable), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("HTTP 401"), std::string::npos) << a.error;
  // The server echoed the wrong key it was sent; the client redacted it.
  EXPECT_NE(a.raw_answer.find("[redacted]"), std::string::npos) << a.raw_answer;
  EXPECT_EQ(all_text(a).find(kKey), std::string::npos);
}

TEST_P(BothProtocols, StreamedAnswerIsAssembledWithItsTokens) {
  FakeModelServer server(kKey);
  ModelConfig config = config_for(server, GetParam());
  config.stream = true;
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.text, testing::answer_with_kernel());
  EXPECT_EQ(a.tokens_in, 100);
  EXPECT_EQ(a.tokens_out, 50);
  EXPECT_EQ(a.stop_reason, GetParam() == Protocol::OpenAI ? "stop" : "end_turn");
  EXPECT_TRUE(a.raw_answer.starts_with("data:") || a.raw_answer.starts_with("event:"))
      << a.raw_answer;
  auto body = nlohmann::json::parse(server.requests().at(0).body);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body.contains("stream_options"), GetParam() == Protocol::OpenAI);
  // Replay reads the stored stream the same way.
  auto again = parse_answer(GetParam(), a.raw_answer);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->text, a.text);
}

TEST_P(BothProtocols, ASlowButLiveStreamOutlastsTheStallLimit) {
  // Events 0.1 s apart for over a second against a 3 s stall limit: a live stream is not a
  // stalled one (the margins are wide; no speed is asserted).
  FakeModelServer server(kKey);
  server.script({Scripted::trickle(std::string(120, 'x'), 100)});
  ModelConfig config = config_for(server, GetParam());
  config.stream = true;
  config.low_speed_seconds = 3;
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.text, std::string(120, 'x'));
}

INSTANTIATE_TEST_SUITE_P(Llm, BothProtocols,
                         ::testing::Values(Protocol::OpenAI, Protocol::Anthropic),
                         [](const auto& p) { return std::string(protocol_name(p.param)); });

TEST(Client, RetryAfterIsCappedAndRepeatedRateLimitsGiveUpAfterMaxRetries) {
  FakeModelServer server(kKey);
  std::vector<Scripted> script;
  for (int i = 0; i < 4; ++i)
    script.push_back(
        Scripted::http(429, R"({"error": {"message": "rate limit"}})", {{"Retry-After", "1000"}}));
  server.script(script);
  Client client(config_for(server, Protocol::OpenAI), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.http_status, 429);
  EXPECT_EQ(a.attempts, 4);                                  // 1 + max_retries
  EXPECT_EQ(a.waits, std::vector<double>({5.0, 5.0, 5.0}));  // retry_after_max_seconds
  EXPECT_NE(a.error.find("after 4 attempts"), std::string::npos) << a.error;
}

TEST(Client, ServerErrorsBackOffExponentiallyUpToTheCap) {
  FakeModelServer server(kKey);
  std::vector<Scripted> script;
  for (int i = 0; i < 4; ++i) script.push_back(Scripted::http(503, "overloaded"));
  server.script(script);
  Client client(config_for(server, Protocol::Anthropic), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.http_status, 503);
  EXPECT_EQ(a.attempts, 4);
  EXPECT_EQ(a.waits, std::vector<double>({1.0, 2.0, 3.0}));  // 1, 2, min(4, cap 3)
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST(Client, BackoffReallyWaits) {
  // The default wait sleeps (small delays; asserts that time passed, not how fast anything ran).
  FakeModelServer server(kKey);
  server.script({Scripted::http(500, "boom")});
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.backoff_initial_seconds = 0.2;
  Client client(config);
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.attempts, 2);
  EXPECT_GE(a.seconds, 0.2);
}

TEST(Client, MaxCompletionTokensReplacesMaxTokensWhenAsked) {
  FakeModelServer server(kKey);
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.max_completion_tokens = true;
  config.temperature = 0.5;
  Client client(config, no_sleep());
  ASSERT_EQ(client.complete(request()).status, Status::Ok);
  auto body = nlohmann::json::parse(server.requests().at(0).body);
  EXPECT_EQ(body["max_completion_tokens"], 1000);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["temperature"], 0.5);
}

TEST(Client, RetryAfterIsReallyWaited) {
  // Asserts that at least the server's Retry-After passed, not how fast anything ran.
  FakeModelServer server(kKey);
  server.script({Scripted::http(429, "{}", {{"Retry-After", "1"}})});
  Client client(config_for(server, Protocol::Anthropic));
  ModelAnswer a = client.complete(request());
  ASSERT_EQ(a.status, Status::Ok) << a.error;
  EXPECT_EQ(a.waits, std::vector<double>({1.0}));
  EXPECT_GE(a.seconds, 1.0);
}

TEST(Client, NotFoundNamesTheModelAndTheBaseUrl) {
  FakeModelServer server(kKey);
  server.script(
      {Scripted::http(404, R"({"error": {"message": "The model `test-model` does not exist"}})")});
  Client client(config_for(server, Protocol::OpenAI), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.http_status, 404);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_NE(a.error.find("test-model"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("OLLIE_LLM_MODEL"), std::string::npos) << a.error;
  EXPECT_NE(a.error.find("OLLIE_LLM_BASE_URL"), std::string::npos) << a.error;
}

TEST(Client, WrongBaseUrlPathIsA404NamingIt) {
  FakeModelServer server(kKey);
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.base_url = server.anthropic_base() + "/nothing-here";
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.http_status, 404);
  EXPECT_NE(a.error.find(config.base_url), std::string::npos) << a.error;
  EXPECT_TRUE(server.requests().empty());  // no handler saw it
}

TEST(Client, BadRequestIsNotRetried) {
  FakeModelServer server(kKey);
  server.script({Scripted::http(400, R"({"error": {"message": "max_tokens is too large"}})")});
  Client client(config_for(server, Protocol::OpenAI), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::HttpError);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_NE(a.error.find("max_tokens is too large"), std::string::npos) << a.error;
}

TEST(Client, MalformedJsonIsABadAnswerAndNotRetried) {
  FakeModelServer server(kKey);
  server.script({Scripted::malformed()});
  Client client(config_for(server, Protocol::OpenAI), no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::BadAnswer);
  EXPECT_EQ(a.http_status, 200);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_NE(a.error.find("not JSON"), std::string::npos) << a.error;
  EXPECT_FALSE(a.raw_answer.empty());  // kept for the run database
}

TEST(Client, AnswerOfTheOtherProtocolIsABadAnswer) {
  // An OpenAI-shaped answer read as Anthropic (a wrong --llm-protocol).
  std::string why;
  auto parsed =
      parse_answer(Protocol::Anthropic, R"({"choices": [{"message": {"content": "x"}}]})", &why);
  EXPECT_FALSE(parsed.has_value());
  EXPECT_NE(why.find("content"), std::string::npos);
}

TEST(Client, BrokenStreamsAreBadAnswers) {
  std::string why;
  // Cut before the end.
  EXPECT_FALSE(parse_answer(Protocol::OpenAI,
                            "data: {\"choices\": [{\"delta\": {\"content\": \"ab\"}}]}\n\n", &why));
  EXPECT_NE(why.find("ended before"), std::string::npos) << why;
  // An event that is not JSON.
  EXPECT_FALSE(parse_answer(Protocol::OpenAI, "data: {not json\n\n", &why));
  EXPECT_NE(why.find("not JSON"), std::string::npos) << why;
  // An error event (Anthropic's overloaded error mid-stream).
  EXPECT_FALSE(parse_answer(
      Protocol::Anthropic,
      "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\"}}\n\n",
      &why));
  EXPECT_NE(why.find("overloaded_error"), std::string::npos) << why;
  // A complete OpenAI stream, with CRLF line ends.
  auto ok = parse_answer(Protocol::OpenAI,
                         "data: {\"choices\": [{\"delta\": {\"content\": \"a\"}}]}\r\n\r\n"
                         "data: {\"choices\": [{\"delta\": {\"content\": \"b\"}, "
                         "\"finish_reason\": \"length\"}]}\r\n\r\n"
                         "data: [DONE]\r\n\r\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->text, "ab");
  EXPECT_EQ(ok->stop_reason, "length");
}

TEST(Client, StalledServerTimesOut) {
  FakeModelServer server(kKey);
  server.script({Scripted::stall()});
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.total_timeout_seconds = 1;
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::Timeout);
  EXPECT_EQ(a.attempts, 1);  // timeouts are not retried
  EXPECT_NE(a.error.find("did not answer in time"), std::string::npos) << a.error;
}

TEST(Client, StalledConnectionEndsByTheLowSpeedLimit) {
  FakeModelServer server(kKey);
  server.script({Scripted::stall()});
  ModelConfig config = config_for(server, Protocol::Anthropic);
  config.total_timeout_seconds = 120;
  config.low_speed_seconds = 1;
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::Timeout);
  EXPECT_LT(
      a.seconds,
      60);  // ended by the stall limit (curl checks it about once a second), far before the total
}

TEST(Client, ConnectionRefusedIsRetriedThenATransportErrorNamingTheBaseUrl) {
  int port;
  {
    FakeModelServer server(kKey);
    port = server.port();
  }  // stopped: nothing listens on the port now
  ModelConfig config;
  config.protocol = Protocol::OpenAI;
  config.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  config.model = "m";
  config.api_key = kKey;
  config.max_retries = 2;
  config.backoff_initial_seconds = 1;
  Client client(config, no_sleep());
  ModelAnswer a = client.complete(request());
  EXPECT_EQ(a.status, Status::TransportError);
  EXPECT_EQ(a.http_status, 0);
  EXPECT_EQ(a.attempts, 3);
  EXPECT_EQ(a.waits, std::vector<double>({1.0, 2.0}));
  EXPECT_NE(a.error.find("OLLIE_LLM_BASE_URL"), std::string::npos) << a.error;
}

TEST(Client, SeveralRequestsAreInFlightTogether) {
  FakeModelServer server(kKey);
  constexpr int n = 4;
  server.hold_until(n);  // each request waits until all n have arrived
  Client client(config_for(server, Protocol::OpenAI), no_sleep());
  std::vector<std::future<ModelAnswer>> futures;
  for (int i = 0; i < n; ++i) futures.push_back(client.submit(request()));
  for (auto& f : futures) EXPECT_EQ(f.get().status, Status::Ok);
  EXPECT_EQ(server.max_in_flight(), n);
  EXPECT_EQ(client.usage().requests, n);
}

TEST(Client, CompleteFromSeveralThreads) {
  FakeModelServer server(kKey);
  constexpr int n = 3;
  server.hold_until(n);
  Client client(config_for(server, Protocol::Anthropic), no_sleep());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&] { ok += client.complete(request()).ok() ? 1 : 0; });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, n);
  EXPECT_EQ(server.max_in_flight(), n);
}

TEST(Client, TokensAndCostAreAccounted) {
  FakeModelServer server(kKey);
  server.script({Scripted::answer("a", 1000, 200), Scripted::http(500, "x"),
                 Scripted::answer("b", 500, 100)});
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.price_in_per_token = 2e-6;
  config.price_out_per_token = 10e-6;
  Client client(config, no_sleep());
  ModelAnswer first = client.complete(request());
  ModelAnswer second = client.complete(request());  // a 500, then "b"
  EXPECT_DOUBLE_EQ(first.cost, 1000 * 2e-6 + 200 * 10e-6);
  EXPECT_DOUBLE_EQ(second.cost, 500 * 2e-6 + 100 * 10e-6);
  Usage u = client.usage();
  EXPECT_EQ(u.requests, 2);
  EXPECT_EQ(u.attempts, 3);
  EXPECT_EQ(u.retries, 1);
  EXPECT_EQ(u.tokens_in, 1500);
  EXPECT_EQ(u.tokens_out, 300);
  EXPECT_DOUBLE_EQ(u.cost, first.cost + second.cost);
}

TEST(Client, TokenBudgetRefusesFurtherRequestsWithoutSending) {
  FakeModelServer server(kKey);
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.token_budget = 250;  // each answer is 150 tokens
  Client client(config, no_sleep());
  EXPECT_EQ(client.complete(request()).status, Status::Ok);
  EXPECT_FALSE(client.budget_spent());
  EXPECT_EQ(client.complete(request()).status, Status::Ok);  // 150 < 250 when asked
  EXPECT_TRUE(client.budget_spent());
  ModelAnswer refused = client.complete(request());
  EXPECT_EQ(refused.status, Status::Budget);
  EXPECT_EQ(refused.attempts, 0);
  EXPECT_NE(refused.error.find("budget"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(client.usage().refused, 1);
}

TEST(Client, CostBudgetRefusesFurtherRequests) {
  FakeModelServer server(kKey);
  ModelConfig config = config_for(server, Protocol::Anthropic);
  config.price_in_per_token = 1e-3;  // 100 in + 50 out = 0.1 + 0.05
  config.price_out_per_token = 1e-3;
  config.cost_budget = 0.15;
  Client client(config, no_sleep());
  EXPECT_EQ(client.complete(request()).status, Status::Ok);
  EXPECT_EQ(client.complete(request()).status, Status::Budget);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(Client, CancelEndsACallInFlight) {
  FakeModelServer server(kKey);
  server.script({Scripted::stall()});
  Client client(config_for(server, Protocol::OpenAI));
  auto pending = client.submit(request());
  while (server.requests().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  client.cancel();
  ModelAnswer a = pending.get();
  EXPECT_EQ(a.status, Status::Cancelled);
  EXPECT_EQ(client.complete(request()).status, Status::Cancelled);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(Client, CancelEndsABackoffWait) {
  FakeModelServer server(kKey);
  server.script({Scripted::http(429, "{}", {{"Retry-After", "60"}})});
  ModelConfig config = config_for(server, Protocol::OpenAI);
  config.retry_after_max_seconds = 60;
  Client client(config);  // the real wait
  auto pending = client.submit(request());
  while (server.requests().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  client.cancel();
  ModelAnswer a = pending.get();
  EXPECT_EQ(a.status, Status::Cancelled);
  EXPECT_EQ(a.attempts, 1);
}

TEST(Client, TheKeyAppearsInNothingTheClientReturnsOnAnyPath) {
  FakeModelServer server("the-server-wants-another-key");
  // The wrong key is what the client sends; the server echoes it in its 401.
  std::vector<std::string> texts;
  for (Protocol p : {Protocol::OpenAI, Protocol::Anthropic}) {
    Client client(config_for(server, p), no_sleep());
    ModelAnswer a = client.complete(request());
    EXPECT_EQ(a.http_status, 401);
    texts.push_back(all_text(a));
  }
  // Every other failure path, against a server that accepts the key.
  FakeModelServer good(kKey);
  good.script(
      {Scripted::http(404, "{\"error\": {\"message\": \"no model; you sent " + kKey + "\"}}"),
       Scripted::http(400, "bad " + kKey), Scripted::malformed(), Scripted::http(500, "e"),
       Scripted::http(500, "e"), Scripted::http(500, "e"), Scripted::http(500, "e"),
       Scripted::http(429, "{}", {{"Retry-After", "1"}}), Scripted::answer("echo: " + kKey),
       Scripted::stall()});
  ModelConfig config = config_for(good, Protocol::OpenAI);
  config.total_timeout_seconds = 1;
  config.token_budget = 1000;
  Client client(config, no_sleep());
  for (int i = 0; i < 6; ++i)
    texts.push_back(all_text(client.complete(ModelRequest{"s", "u " + kKey})));
  // The budget path.
  ModelConfig spent = config_for(good, Protocol::OpenAI);
  spent.token_budget = 1;
  Client small(spent, no_sleep());
  small.complete(request());
  ModelAnswer refused = small.complete(request());
  EXPECT_EQ(refused.status, Status::Budget);
  texts.push_back(all_text(refused));
  // A transport error.
  ModelConfig nowhere = config_for(good, Protocol::OpenAI);
  nowhere.base_url = "http://127.0.0.1:1/v1";
  nowhere.max_retries = 0;
  texts.push_back(all_text(Client(nowhere, no_sleep()).complete(request())));

  ASSERT_EQ(texts.size(), 10u);
  for (const auto& t : texts) EXPECT_EQ(t.find(kKey), std::string::npos) << t;
  EXPECT_NE(texts[2].find("[redacted]"), std::string::npos);  // the 404 body that quoted it
}

TEST(Redact, ReplacesEveryOccurrenceAndIgnoresShortSecrets) {
  EXPECT_EQ(redact("a KEY1234 b KEY1234", "KEY1234"), "a [redacted] b [redacted]");
  EXPECT_EQ(redact("abc", ""), "abc");
  EXPECT_EQ(redact("a b c", "a"), "a b c");
}

}  // namespace
}  // namespace ollie::llm
