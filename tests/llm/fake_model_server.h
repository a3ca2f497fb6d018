// A protocol test double for the llm tests: a cpp-httplib server on 127.0.0.1 (an
// ephemeral port) that speaks the OpenAI Chat Completions protocol (POST
// /v1/chat/completions) and the Anthropic Messages protocol (POST /v1/messages), checks
// their auth headers, and plays scripted answers one per request, in order. It is not a
// model and nothing in the product depends on it; only tests/llm links cpp-httplib.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace ollie::llm::testing {

// One scripted answer.
struct Scripted {
  enum class Kind {
    Answer,     // 200 with `text` in the protocol's JSON, usage tokens_in / tokens_out
    Http,       // `http_status` with `body` and `headers` as given
    Stall,      // sends nothing until the server stops (past any client timeout)
    Malformed,  // 200 with a body that is not JSON
    Trickle,    // 200, `text` as an event stream, one event every `gap_ms` (a slow but live model)
  };
  Kind kind = Kind::Answer;
  std::string text;
  int http_status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t tokens_in = 100, tokens_out = 50;
  int gap_ms = 0;

  static Scripted answer(std::string text, int64_t in = 100, int64_t out = 50) {
    Scripted s;
    s.text = std::move(text);
    s.tokens_in = in;
    s.tokens_out = out;
    return s;
  }
  static Scripted http(int status, std::string body,
                       std::vector<std::pair<std::string, std::string>> headers = {}) {
    Scripted s;
    s.kind = Kind::Http;
    s.http_status = status;
    s.body = std::move(body);
    s.headers = std::move(headers);
    return s;
  }
  static Scripted stall() {
    Scripted s;
    s.kind = Kind::Stall;
    return s;
  }
  static Scripted trickle(std::string text, int gap_ms) {
    Scripted s;
    s.kind = Kind::Trickle;
    s.text = std::move(text);
    s.gap_ms = gap_ms;
    return s;
  }
  static Scripted malformed() {
    Scripted s;
    s.kind = Kind::Malformed;
    return s;
  }
};

// An answer text with a kernel in a ```cpp fence and prose around it.
inline std::string answer_with_kernel() {
  return "Here is a faster kernel: it blocks the loops for the cache.\n\n"
         "```cpp\n#include <cstdint>\nextern \"C\" void ollie_kernel(const float* x, float* out0, "
         "const int64_t* dims) {\n"
         "  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = 2 * x[i];\n}\n```\n\nIt should be "
         "about twice as fast.\n";
}

class FakeModelServer {
 public:
  struct Seen {
    std::string protocol;  // "openai" / "anthropic"
    std::string path;
    std::string body;
    std::map<std::string, std::string> headers;
  };

  explicit FakeModelServer(std::string expected_key) : expected_key_(std::move(expected_key)) {
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request& req, httplib::Response& res) {
                   handle("openai", req, res);
                 });
    server_.Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
      handle("anthropic", req, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("the fake model server could not bind to 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() only ends a server that is running: wait until it is.
    for (int i = 0; i < 5000 && !server_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  ~FakeModelServer() { stop(); }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    changed_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  std::string openai_base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::string anthropic_base() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Answers for the next requests, in order; after them, answer_with_kernel().
  void script(std::vector<Scripted> answers) {
    std::lock_guard lock(mutex_);
    for (auto& a : answers) script_.push_back(std::move(a));
  }
  // Every request waits (up to 10 s) until `n` requests have arrived: with n requests
  // sent at once, max_in_flight() == n shows they were in flight together.
  void hold_until(int n) {
    std::lock_guard lock(mutex_);
    hold_until_ = n;
  }

  std::vector<Seen> requests() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  int max_in_flight() const { return max_in_flight_; }

 private:
  void handle(const std::string& protocol, const httplib::Request& req, httplib::Response& res) {
    Scripted next;
    {
      std::unique_lock lock(mutex_);
      Seen seen{protocol, req.path, req.body, {}};
      for (const auto& [name, value] : req.headers) seen.headers[name] = value;
      seen_.push_back(std::move(seen));
      int now = ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_.load(), now);
      ++arrived_;
      changed_.notify_all();
      if (hold_until_ > 0)
        changed_.wait_for(lock, std::chrono::seconds(10),
                          [&] { return stopping_ || arrived_ >= hold_until_; });
      if (!script_.empty()) {
        next = std::move(script_.front());
        script_.pop_front();
      } else {
        next = Scripted::answer(answer_with_kernel());
      }
    }
    struct Leave {
      FakeModelServer* s;
      ~Leave() { --s->in_flight_; }
    } leave{this};

    // Auth, as the real services check it.
    const std::string key = protocol == "openai" ? req.get_header_value("Authorization")
                                                 : req.get_header_value("x-api-key");
    const std::string expected = protocol == "openai" ? "Bearer " + expected_key_ : expected_key_;
    if (key != expected) {
      // Like the real services, echo what was sent: the client must redact it.
      res.status = 401;
      std::string shown = protocol == "openai" ? key.substr(std::min<size_t>(7, key.size())) : key;
      res.set_content(
          nlohmann::json{{"error", {{"message", "Incorrect API key provided: " + shown}}}}.dump(),
          "application/json");
      return;
    }
    if (protocol == "anthropic" && req.get_header_value("anthropic-version") != "2023-06-01") {
      res.status = 400;
      res.set_content(R"({"error": {"message": "anthropic-version header is required"}})",
                      "application/json");
      return;
    }

    const bool stream = nlohmann::json::parse(req.body, nullptr, false).value("stream", false);
    if (next.kind == Scripted::Kind::Trickle || (next.kind == Scripted::Kind::Answer && stream)) {
      auto events = std::make_shared<std::vector<std::string>>(event_stream(protocol, next));
      auto gap = std::chrono::milliseconds(next.kind == Scripted::Kind::Trickle ? next.gap_ms : 0);
      res.status = 200;
      auto next_event = std::make_shared<size_t>(0);
      res.set_chunked_content_provider("text/event-stream",
                                       [events, gap, next_event](size_t, httplib::DataSink& sink) {
                                         if (*next_event >= events->size()) {
                                           sink.done();
                                           return true;
                                         }
                                         if (*next_event > 0) std::this_thread::sleep_for(gap);
                                         const std::string& e = (*events)[(*next_event)++];
                                         return sink.write(e.data(), e.size());
                                       });
      return;
    }

    switch (next.kind) {
      case Scripted::Kind::Trickle: return;  // answered above
      case Scripted::Kind::Answer: {
        nlohmann::json body;
        if (protocol == "openai") {
          body = {{"id", "chatcmpl-1"},
                  {"object", "chat.completion"},
                  {"choices",
                   {{{"index", 0},
                     {"message", {{"role", "assistant"}, {"content", next.text}}},
                     {"finish_reason", "stop"}}}},
                  {"usage",
                   {{"prompt_tokens", next.tokens_in}, {"completion_tokens", next.tokens_out}}}};
        } else {
          body = {
              {"id", "msg_1"},
              {"type", "message"},
              {"role", "assistant"},
              {"content", {{{"type", "text"}, {"text", next.text}}}},
              {"stop_reason", "end_turn"},
              {"usage", {{"input_tokens", next.tokens_in}, {"output_tokens", next.tokens_out}}}};
        }
        res.status = 200;
        res.set_content(body.dump(), "application/json");
        return;
      }
      case Scripted::Kind::Http:
        res.status = next.http_status;
        for (const auto& [name, value] : next.headers) res.set_header(name, value);
        res.set_content(next.body, "application/json");
        return;
      case Scripted::Kind::Stall: {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::seconds(30), [&] { return stopping_; });
        res.status = 200;
        res.set_content("{}", "application/json");
        return;
      }
      case Scripted::Kind::Malformed:
        res.status = 200;
        res.set_content(R"({"choices": [{"message": {"content": "half an ans)", "application/json");
        return;
    }
  }

  // The answer as the protocol's server-sent events, a few characters of text per event.
  static std::vector<std::string> event_stream(const std::string& protocol, const Scripted& a) {
    using nlohmann::json;
    std::vector<std::string> events;
    auto data = [&](const json& j) { events.push_back("data: " + j.dump() + "\n\n"); };
    std::vector<std::string> pieces;
    for (size_t i = 0; i < a.text.size(); i += 16) pieces.push_back(a.text.substr(i, 16));
    if (protocol == "openai") {
      data({{"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}}}});
      for (const auto& p : pieces)
        data({{"choices", {{{"index", 0}, {"delta", {{"content", p}}}}}}});
      data({{"choices", {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}}}});
      data({{"choices", json::array()},
            {"usage", {{"prompt_tokens", a.tokens_in}, {"completion_tokens", a.tokens_out}}}});
      events.push_back("data: [DONE]\n\n");
    } else {
      auto event = [&](const std::string& type, const json& j) {
        events.push_back("event: " + type + "\ndata: " + j.dump() + "\n\n");
      };
      event("message_start",
            {{"type", "message_start"},
             {"message",
              {{"id", "msg_1"},
               {"role", "assistant"},
               {"content", json::array()},
               {"usage", {{"input_tokens", a.tokens_in}, {"output_tokens", 1}}}}}});
      event("content_block_start", {{"type", "content_block_start"},
                                    {"index", 0},
                                    {"content_block", {{"type", "text"}, {"text", ""}}}});
      events.push_back(": a comment line the client skips\n\n");
      for (const auto& p : pieces)
        event("content_block_delta", {{"type", "content_block_delta"},
                                      {"index", 0},
                                      {"delta", {{"type", "text_delta"}, {"text", p}}}});
      event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
      event("message_delta", {{"type", "message_delta"},
                              {"delta", {{"stop_reason", "end_turn"}}},
                              {"usage", {{"output_tokens", a.tokens_out}}}});
      event("message_stop", {{"type", "message_stop"}});
    }
    return events;
  }

  std::string expected_key_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Scripted> script_;
  std::vector<Seen> seen_;
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
  int arrived_ = 0, hold_until_ = 0;
  bool stopping_ = false;
};

}  // namespace ollie::llm::testing
