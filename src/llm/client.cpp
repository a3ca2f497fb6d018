// The model client: one libcurl easy handle per attempt (so calls on several threads run
// at once), timeouts, retries with exponential backoff that honour Retry-After, token and
// cost accounting, the budget, and cancellation. Every string it returns passes through
// redact() so the API key, which only the request headers carry, appears nowhere else.
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "llm/llm.h"
#include "support/error.h"

namespace ollie::llm {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr size_t kMaxAnswerBytes = 64u
                                   << 20;  // an answer larger than this is cut (and then malformed)

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw InternalError("curl_global_init failed");
  });
}

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  size_t n = size * count;
  if (body->size() + n > kMaxAnswerBytes) return 0;  // ends the transfer (CURLE_WRITE_ERROR)
  body->append(data, n);
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;  // nonzero: abort (cancel)
}

std::string cut(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + " ...";
}

// The server's own explanation in an error body: {"error": {"message": ...}} (both
// protocols), else the body's start.
std::string server_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return cut(e["message"].get<std::string>(), 400);
    if (e.is_string()) return cut(e.get<std::string>(), 400);
  }
  std::string s = cut(body, 300);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

bool retryable_http(int status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

// One HTTP attempt's outcome.
struct Attempt {
  CURLcode code = CURLE_OK;
  int http_status = 0;
  std::string body;
  std::string curl_error;
  double retry_after = -1;  // seconds from Retry-After; < 0 when none
};

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::HttpError: return "http_error";
    case Status::Timeout: return "timeout";
    case Status::TransportError: return "transport_error";
    case Status::BadAnswer: return "bad_answer";
    case Status::Budget: return "budget";
    case Status::Cancelled: return "cancelled";
    case Status::CommandFailed: return "command_failed";
    case Status::Refused: return "refused";
  }
  return "?";
}

std::string redact(std::string text, const std::string& secret) {
  if (secret.size() < 4) return text;
  static const std::string replacement = "[redacted]";
  for (size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + replacement.size()))
    text.replace(at, secret.size(), replacement);
  return text;
}

namespace {

int64_t usage_count(const json& usage, const char* field) {
  return usage.is_object() && usage.contains(field) && usage[field].is_number_integer()
             ? usage[field].get<int64_t>()
             : 0;
}

bool is_event_stream(const std::string& body) {
  size_t first = body.find_first_not_of(" \t\r\n");
  return first != std::string::npos &&
         (body.compare(first, 5, "data:") == 0 || body.compare(first, 6, "event:") == 0 ||
          body.compare(first, 1, ":") == 0);
}

// A stream of server-sent events: the "data:" lines, each one JSON chunk (OpenAI: the
// choices' deltas, usage in the last chunk; Anthropic: message_start, content_block_delta,
// message_delta, error).
std::optional<ParsedAnswer> parse_event_stream(Protocol protocol, const std::string& body,
                                               std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<ParsedAnswer> {
    if (why) *why = reason;
    return std::nullopt;
  };
  ParsedAnswer out;
  int chunks = 0;
  bool finished = false;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.starts_with("data:")) continue;  // event names, comments, blank separators
    std::string data = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
    if (data == "[DONE]") {
      finished = true;
      continue;
    }
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return fail("an event of the answer's stream is not JSON");
    ++chunks;
    if (protocol == Protocol::OpenAI) {
      if (j.contains("error"))
        return fail("the answer's stream reports an error: " + j["error"].dump());
      if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() &&
          j["choices"][0].is_object()) {
        const json& choice = j["choices"][0];
        const json& delta = choice.value("delta", json());
        if (delta.is_object() && delta.contains("content") && delta["content"].is_string())
          out.text += delta["content"].get<std::string>();
        if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
          out.stop_reason = choice["finish_reason"].get<std::string>();
          finished = true;
        }
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        out.tokens_in = usage_count(j["usage"], "prompt_tokens");
        out.tokens_out = usage_count(j["usage"], "completion_tokens");
      }
    } else {
      const std::string type = j.value("type", "");
      if (type == "error")
        return fail("the answer's stream reports an error: " + j.value("error", json()).dump());
      if (type == "message_start" && j.contains("message") && j["message"].is_object()) {
        const json& usage = j["message"].value("usage", json());
        out.tokens_in = usage_count(usage, "input_tokens") +
                        usage_count(usage, "cache_creation_input_tokens") +
                        usage_count(usage, "cache_read_input_tokens");
        out.tokens_out = usage_count(usage, "output_tokens");
      } else if (type == "content_block_delta") {
        const json& delta = j.value("delta", json());
        if (delta.is_object() && delta.value("type", "") == "text_delta" &&
            delta.contains("text") && delta["text"].is_string())
          out.text += delta["text"].get<std::string>();
      } else if (type == "message_delta") {
        const json& delta = j.value("delta", json());
        if (delta.is_object() && delta.contains("stop_reason") && delta["stop_reason"].is_string())
          out.stop_reason = delta["stop_reason"].get<std::string>();
        if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("output_tokens"))
          out.tokens_out = usage_count(j["usage"], "output_tokens");
      } else if (type == "message_stop") {
        finished = true;
      }
    }
  }
  if (chunks == 0) return fail("the answer's stream has no events");
  if (!finished) return fail("the answer's stream ended before the answer did");
  return out;
}

}  // namespace

std::optional<ParsedAnswer> parse_answer(Protocol protocol, const std::string& body,
                                         std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<ParsedAnswer> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (is_event_stream(body)) return parse_event_stream(protocol, body, why);
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return fail("the answer is not JSON");
  if (!j.is_object()) return fail("the answer is not a JSON object");
  ParsedAnswer out;
  const auto& count = usage_count;
  if (protocol == Protocol::OpenAI) {
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
      return fail("the answer has no choices");
    const json& choice = j["choices"][0];
    if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
      return fail("the answer's first choice has no message");
    const json& content = choice["message"].value("content", json());
    if (content.is_string()) {
      out.text = content.get<std::string>();
    } else if (content.is_array()) {  // content parts
      for (const json& part : content)
        if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
            part["text"].is_string())
          out.text += part["text"].get<std::string>();
    } else {
      return fail("the answer's message has no text content");
    }
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      out.stop_reason = choice["finish_reason"].get<std::string>();
    const json& usage = j.value("usage", json());
    out.tokens_in = count(usage, "prompt_tokens");
    out.tokens_out = count(usage, "completion_tokens");
  } else {
    if (!j.contains("content") || !j["content"].is_array())
      return fail("the answer has no content list");
    bool any_text = false;
    for (const json& block : j["content"])
      if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
          block["text"].is_string()) {
        out.text += block["text"].get<std::string>();
        any_text = true;
      }
    if (!any_text && !j["content"].empty()) return fail("the answer's content has no text block");
    if (j.contains("stop_reason") && j["stop_reason"].is_string())
      out.stop_reason = j["stop_reason"].get<std::string>();
    const json& usage = j.value("usage", json());
    out.tokens_in = count(usage, "input_tokens") + count(usage, "cache_creation_input_tokens") +
                    count(usage, "cache_read_input_tokens");
    out.tokens_out = count(usage, "output_tokens");
  }
  return out;
}

struct Client::State {
  mutable std::mutex mutex;
  std::condition_variable changed;  // cancel, a submitted call ending
  Usage usage;
  std::atomic<bool> cancelled{false};
  int submitted_running = 0;
};

Client::Client(ModelConfig config, ClientHooks hooks)
    : config_(std::move(config)), hooks_(std::move(hooks)), state_(std::make_unique<State>()) {
  global_init();
}

Client::~Client() {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait(lock, [&] { return state_->submitted_running == 0; });
}

void Client::cancel() {
  {
    std::lock_guard lock(state_->mutex);
    state_->cancelled = true;
  }
  state_->changed.notify_all();
}

Usage Client::usage() const {
  std::lock_guard lock(state_->mutex);
  return state_->usage;
}

bool Client::budget_spent() const {
  std::lock_guard lock(state_->mutex);
  const Usage& u = state_->usage;
  return (config_.token_budget > 0 && u.tokens_in + u.tokens_out >= config_.token_budget) ||
         (config_.cost_budget > 0 && u.cost >= config_.cost_budget);
}

std::string Client::endpoint() const {
  return config_.base_url +
         (config_.protocol == Protocol::OpenAI ? "/chat/completions" : "/v1/messages");
}

std::string Client::request_body(const ModelRequest& request) const {
  json body;
  body["model"] = config_.model;
  const bool completion_field =
      config_.protocol == Protocol::OpenAI && config_.max_completion_tokens;
  body[completion_field ? "max_completion_tokens" : "max_tokens"] = config_.max_tokens;
  if (config_.temperature) body["temperature"] = *config_.temperature;
  if (config_.stream) {
    body["stream"] = true;
    if (config_.protocol == Protocol::OpenAI)
      body["stream_options"] = {{"include_usage", true}};  // tokens in the last event
  }
  if (config_.protocol == Protocol::OpenAI) {
    json messages = json::array();
    if (!request.system.empty())
      messages.push_back({{"role", "system"}, {"content", request.system}});
    messages.push_back({{"role", "user"}, {"content", request.user}});
    body["messages"] = std::move(messages);
  } else {
    if (!request.system.empty()) body["system"] = request.system;
    body["messages"] = json::array({{{"role", "user"}, {"content", request.user}}});
  }
  return body.dump();
}

std::future<ModelAnswer> Client::submit(ModelRequest request) {
  {
    std::lock_guard lock(state_->mutex);
    ++state_->submitted_running;
  }
  auto call = [this, request = std::move(request)] {
    struct Done {
      State* state;
      ~Done() {
        {
          std::lock_guard lock(state->mutex);
          --state->submitted_running;
        }
        state->changed.notify_all();
      }
    } done{state_.get()};
    return complete(request);
  };
  try {
    return std::async(std::launch::async, std::move(call));
  } catch (...) {  // no thread: the call never ran
    std::lock_guard lock(state_->mutex);
    --state_->submitted_running;
    throw;
  }
}

// ---------------------------------------------------------------- one call

namespace {

const char* const kCancelledText = "the model client was cancelled";

// What a call does after one attempt.
enum class Next { Retry, Done };

// The wait before retry `attempt` + 1: initial * 2^attempt, at most the maximum.
double backoff_seconds(const ModelConfig& config, int attempt) {
  return std::min(config.backoff_initial_seconds * std::pow(2.0, attempt),
                  config.backoff_max_seconds);
}

// The request headers (the API key only here), freed with the object.
class RequestHeaders {
 public:
  explicit RequestHeaders(const ModelConfig& config) {
    const std::string& key = config.api_key;
    list_ = curl_slist_append(list_, "Content-Type: application/json");
    if (config.protocol == Protocol::OpenAI) {
      if (!key.empty()) list_ = curl_slist_append(list_, ("Authorization: Bearer " + key).c_str());
    } else {
      if (!key.empty()) list_ = curl_slist_append(list_, ("x-api-key: " + key).c_str());
      list_ = curl_slist_append(list_, "anthropic-version: 2023-06-01");
    }
  }
  ~RequestHeaders() { curl_slist_free_all(list_); }
  RequestHeaders(const RequestHeaders&) = delete;
  RequestHeaders& operator=(const RequestHeaders&) = delete;
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// What to send: `body` posted to `url` with `headers`; the answer appended to `*answer`,
// curl's error text to `error_buffer`.
void set_request(CURL* curl, const std::string& url, const std::string& body,
                 const RequestHeaders& headers, std::string* answer, char* error_buffer) {
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");
}

// The time limits (connect, total, stalled) and cancellation (`*cancelled` aborts).
void set_limits(CURL* curl, const ModelConfig& config, std::atomic<bool>* cancelled) {
  const auto milliseconds = [](double seconds) { return static_cast<long>(seconds * 1000); };
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, milliseconds(config.connect_timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, milliseconds(config.total_timeout_seconds));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  const long stalled = std::max(1, config.low_speed_seconds);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, stalled);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, cancelled);
}

// One HTTP attempt, on its own easy handle.
Attempt post_once(const std::string& url, const std::string& body, const RequestHeaders& headers,
                  const ModelConfig& config, std::atomic<bool>* cancelled) {
  Attempt a;
  CURL* curl = curl_easy_init();
  if (!curl) throw InternalError("curl_easy_init failed");
  char error_buffer[CURL_ERROR_SIZE] = {0};
  set_request(curl, url, body, headers, &a.body, error_buffer);
  set_limits(curl, config, cancelled);
  a.code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  a.http_status = static_cast<int>(status);
  curl_off_t retry_after = -1;
  if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
    a.retry_after = static_cast<double>(retry_after);
  a.curl_error = error_buffer[0] ? error_buffer : curl_easy_strerror(a.code);
  curl_easy_cleanup(curl);
  return a;
}

}  // namespace

// One complete(): the answer built up attempt by attempt, then redacted and accounted to
// the client's usage by finish().
struct Client::Call {
  explicit Call(Client& c) : client(c), config(c.config_), key(c.config_.api_key) {}
  Client& client;
  const ModelConfig& config;
  const std::string& key;
  const Clock::time_point start = Clock::now();
  ModelAnswer answer;
  std::string url;

  ModelAnswer run(const ModelRequest& request);
  bool refused();
  Next after_transport_failure(const Attempt& a, int attempt, bool last);
  Next take_answer();
  Next after_http_error(const Attempt& a, int attempt, bool last);
  std::string http_error_text(int http) const;
  bool wait(double seconds);
  Next done(Status status, std::string error);
  std::string where() const { return " (" + url + ")"; }
  ModelAnswer finish();
};

ModelAnswer Client::complete(const ModelRequest& request) { return Call(*this).run(request); }

ModelAnswer Client::Call::run(const ModelRequest& request) {
  answer.request = redact(client.request_body(request), key);
  {
    std::lock_guard lock(client.state_->mutex);
    ++client.state_->usage.requests;
  }
  if (refused()) return finish();
  const std::string body = client.request_body(request);
  url = client.endpoint();
  const RequestHeaders headers(config);
  for (int attempt = 0;; ++attempt) {
    Attempt a = post_once(url, body, headers, config, &client.state_->cancelled);
    ++answer.attempts;
    answer.http_status = a.http_status;
    answer.raw_answer = std::move(a.body);
    const bool last = attempt >= config.max_retries;
    const bool http_ok = a.http_status >= 200 && a.http_status < 300;
    const Next next = a.code != CURLE_OK ? after_transport_failure(a, attempt, last)
                      : http_ok          ? take_answer()
                                         : after_http_error(a, attempt, last);
    if (next == Next::Done) return finish();
  }
}

// Before any attempt: true (the answer says why) when the client is cancelled or the
// budget is spent.
bool Client::Call::refused() {
  if (client.state_->cancelled) {
    done(Status::Cancelled, kCancelledText);
    return true;
  }
  if (!client.budget_spent()) return false;
  Usage u = client.usage();
  const auto of = [](auto budget) {
    return budget > 0 ? " of " + std::to_string(budget) : std::string();
  };
  done(Status::Budget, "the model budget is spent (" + std::to_string(u.tokens_in + u.tokens_out) +
                           " tokens" + of(config.token_budget) + ", cost " +
                           std::to_string(u.cost) + of(config.cost_budget) +
                           "): no more model requests in this run");
  std::lock_guard lock(client.state_->mutex);
  ++client.state_->usage.refused;
  return true;
}

// An attempt that got no HTTP answer: cancelled, timed out, too large, or retried after
// a backoff until the retries run out.
Next Client::Call::after_transport_failure(const Attempt& a, int attempt, bool last) {
  if (a.code == CURLE_ABORTED_BY_CALLBACK && client.state_->cancelled)
    return done(Status::Cancelled, kCancelledText);
  if (a.code == CURLE_OPERATION_TIMEDOUT) {
    // Not retried: a call that used its whole time limit would likely do so again.
    return done(Status::Timeout, "the model server did not answer in time" + where() + ": " +
                                     a.curl_error + " (limits: connect " +
                                     std::to_string(config.connect_timeout_seconds) + " s, total " +
                                     std::to_string(config.total_timeout_seconds) + " s, stalled " +
                                     std::to_string(config.low_speed_seconds) + " s)");
  }
  const size_t received = answer.raw_answer.size();
  if (a.code == CURLE_WRITE_ERROR && received + CURL_MAX_WRITE_SIZE > kMaxAnswerBytes) {
    answer.raw_answer.clear();
    return done(Status::BadAnswer, "the model server's answer is larger than " +
                                       std::to_string(kMaxAnswerBytes >> 20) + " MiB" + where());
  }
  if (!last && wait(backoff_seconds(config, attempt))) return Next::Retry;
  if (client.state_->cancelled) return done(Status::Cancelled, kCancelledText);
  return done(Status::TransportError, "could not reach the model server" + where() + " after " +
                                          std::to_string(answer.attempts) +
                                          " attempts: " + a.curl_error + "; check the base URL (" +
                                          config.base_url_source +
                                          ") and that the server is running");
}

// A 2xx answer: its text, stop reason, tokens and cost, or BadAnswer when it does not parse.
Next Client::Call::take_answer() {
  std::string why;
  auto parsed = parse_answer(config.protocol, answer.raw_answer, &why);
  if (!parsed)
    return done(Status::BadAnswer,
                "the model server's answer is not a " +
                    std::string(protocol_name(config.protocol)) + " answer" + where() + ": " + why +
                    "; is the protocol right (--llm-protocol / OLLIE_LLM_PROTOCOL)?");
  answer.status = Status::Ok;
  answer.text = std::move(parsed->text);
  answer.stop_reason = std::move(parsed->stop_reason);
  answer.tokens_in = parsed->tokens_in;
  answer.tokens_out = parsed->tokens_out;
  answer.cost = static_cast<double>(answer.tokens_in) * config.price_in_per_token +
                static_cast<double>(answer.tokens_out) * config.price_out_per_token;
  return Next::Done;
}

// Any other HTTP status: retried after a backoff (a 429's Retry-After when it gives one)
// when it may pass, else an HttpError.
Next Client::Call::after_http_error(const Attempt& a, int attempt, bool last) {
  const int http = a.http_status;
  if (retryable_http(http) && !last) {
    double seconds = backoff_seconds(config, attempt);
    if (http == 429 && a.retry_after >= 0)
      seconds = std::min(a.retry_after, config.retry_after_max_seconds);
    if (wait(seconds)) return Next::Retry;
    return done(Status::Cancelled, kCancelledText);
  }
  return done(Status::HttpError, http_error_text(http));
}

// What an HTTP error status means, with the server's own words and what to check.
std::string Client::Call::http_error_text(int http) const {
  const std::string said = server_message(answer.raw_answer);
  const std::string code = "HTTP " + std::to_string(http);
  if (http == 401 || http == 403) {
    const std::string key_variable =
        config.protocol == Protocol::OpenAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    return "the model server refused the API key (" + code + ")" + where() + ": " + said + "; " +
           (key.empty() ? "no key was sent: set " : "check the key in ") +
           (config.key_source.empty() ? key_variable : config.key_source);
  }
  if (http == 404)
    return "the model server has no such model or endpoint (" + code + ")" + where() + ": " + said +
           "; check the model name '" + config.model + "' (" + config.model_source +
           ") and the base URL '" + config.base_url + "' (" + config.base_url_source + ")";
  if (http == 400 || http == 422)
    return "the model server rejected the request (" + code + ")" + where() + ": " + said +
           "; check the model name, max tokens and temperature";
  if (retryable_http(http))
    return "the model server kept failing (" + code + ")" + where() + " after " +
           std::to_string(answer.attempts) + " attempts: " + said;
  return "the model server answered " + code + where() + ": " + said;
}

// Waits `seconds` (cancel wakes it); false when cancelled.
bool Client::Call::wait(double seconds) {
  answer.waits.push_back(seconds);
  if (client.hooks_.wait) {
    client.hooks_.wait(seconds);
  } else {
    std::unique_lock lock(client.state_->mutex);
    client.state_->changed.wait_for(lock, std::chrono::duration<double>(seconds),
                                    [&] { return client.state_->cancelled.load(); });
  }
  return !client.state_->cancelled;
}

Next Client::Call::done(Status status, std::string error) {
  answer.status = status;
  answer.error = std::move(error);
  return Next::Done;
}

// The answer's time and redacted texts; its attempts, tokens and cost added to the usage.
ModelAnswer Client::Call::finish() {
  answer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  answer.raw_answer = redact(std::move(answer.raw_answer), key);
  answer.text = redact(std::move(answer.text), key);
  answer.error = redact(std::move(answer.error), key);
  std::lock_guard lock(client.state_->mutex);
  Usage& usage = client.state_->usage;
  usage.attempts += answer.attempts;
  usage.retries += std::max(0, answer.attempts - 1);
  usage.tokens_in += answer.tokens_in;
  usage.tokens_out += answer.tokens_out;
  usage.cost += answer.cost;
  return std::move(answer);
}

}  // namespace ollie::llm
