// The language-model stage (docs/design.md section 9, issue 7): what the `llm` proposer needs
// to talk to a model, and nothing of the search. It owns
//   - ModelConfig: endpoint, model, key, limits, prices and budget, from explicit values
//     (flags) or the environment;
//   - Client: HTTP clients for the OpenAI Chat Completions and the Anthropic Messages
//     protocols (libcurl), usable from several threads at once, with timeouts, retries
//     with backoff, token and cost accounting and a budget;
//   - CommandModel: an external proposer (`--proposer-cmd`), a command that reads the
//     prompt on stdin and prints the answer;
//   - prompt templates (files a user can read and change) rendered from PromptInputs,
//     and the log of recent failures shown to the model;
//   - extract_code: the kernel source in a model's answer.
// A proposer builds PromptInputs, renders a template, calls Client::complete (or submit),
// extracts the code and stores request and answer with store::Store::add_model_call
// (ModelAnswer's fields are that row's). See docs/llm.md.
//
// Secrets: the API key lives only in ModelConfig::api_key and the request's headers. It
// is never part of ModelAnswer (request, raw answer, text, error), a log line or an
// exception text: every string the client produces passes through redact().
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ollie::llm {

// ---------------------------------------------------------------- configuration

enum class Protocol {
  OpenAI,  // POST {base}/chat/completions, Authorization: Bearer KEY (vLLM, llama.cpp, Ollama, ...)
  Anthropic,  // POST {base}/v1/messages, x-api-key: KEY, anthropic-version: 2023-06-01
};
const char* protocol_name(Protocol p);  // "openai", "anthropic"
// "openai" / "anthropic" (case-insensitive); nullopt otherwise.
std::optional<Protocol> parse_protocol(std::string_view name);

struct ModelConfig {
  Protocol protocol = Protocol::OpenAI;
  std::string base_url;  // without the trailing path, e.g. "https://api.openai.com/v1"
  std::string model;
  std::string api_key;  // may be empty for a local OpenAI-compatible server
  std::string
      key_source;  // where the key came from ("OPENAI_API_KEY", "--llm-key"): named in errors
  std::string model_source = "OLLIE_LLM_MODEL";        // named in 404 errors
  std::string base_url_source = "OLLIE_LLM_BASE_URL";  // named in 404 / connection errors
  int max_tokens = 8192;  // the answer's length limit (Anthropic requires one)
  // OpenAI protocol: send the limit as max_completion_tokens (api.openai.com, whose
  // reasoning models reject max_tokens) rather than max_tokens (vLLM, llama.cpp, Ollama).
  // resolve_config sets it for api.openai.com.
  bool max_completion_tokens = false;
  std::optional<double> temperature;  // unset: the server's default
  double connect_timeout_seconds = 10;
  double total_timeout_seconds = 600;  // one attempt, from connecting to the last byte
  // Ask for the answer as a stream of server-sent events: bytes flow while the model
  // writes, so a short stall limit is safe. Off: the server is silent until it has
  // generated the whole answer. Either way complete() returns the whole answer.
  bool stream = false;
  // An attempt that receives < 1 byte/s for this long ends (a stalled connection).
  // Without `stream` this must exceed the longest generation.
  int low_speed_seconds = 300;
  int max_retries = 4;  // retries after the first attempt (429, 5xx, transport errors)
  double backoff_initial_seconds =
      2;  // the wait before retry k is initial * 2^k, at most backoff_max
  double backoff_max_seconds = 60;
  double retry_after_max_seconds = 120;  // a 429's Retry-After is honoured up to this
  double price_in_per_token = 0;         // cost of a prompt token (e.g. USD); 0: unknown
  double price_out_per_token = 0;        // cost of an answer token
  int64_t token_budget = 0;              // tokens in + out over the client's life; 0: no limit
  double cost_budget = 0;                // cost over the client's life; 0: no limit
};

// Values given on the command line; an empty field falls back to the environment.
struct ConfigValues {
  std::string protocol;  // --llm-protocol / OLLIE_LLM_PROTOCOL
  std::string base_url;  // --llm-base-url / OLLIE_LLM_BASE_URL
  std::string model;     // --llm-model / OLLIE_LLM_MODEL
  std::string
      api_key;  // --llm-key (discouraged: visible in `ps`); else OPENAI_API_KEY / ANTHROPIC_API_KEY
};

// Looks up an environment variable (a test passes a map).
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment process_environment();  // getenv

// Resolves a ModelConfig (limits, prices and budget at their defaults; set them after).
// The protocol is the explicit one if given, else inferred where that is unambiguous:
// a base URL on api.openai.com / api.anthropic.com; else the one protocol whose key
// variable is set; a base URL with no key at all is a local OpenAI-compatible server.
// Without a base URL, the protocol's public endpoint. UserError, naming the flag and the
// variable to set, when the model is missing, the protocol is ambiguous (both keys set,
// no base URL naming a provider) or unknown, or a hosted provider has no key.
ModelConfig resolve_config(const ConfigValues& values,
                           const Environment& env = process_environment());

// ---------------------------------------------------------------- the client

enum class Status {
  Ok,              // an answer with text (possibly without code)
  HttpError,       // an HTTP error status after any retries (401, 404, 500 ...)
  Timeout,         // the connection or the answer took too long, or stalled
  TransportError,  // no HTTP answer: connection refused, DNS, TLS, reset (after retries)
  BadAnswer,       // HTTP 200 but not the protocol's JSON (malformed, no text)
  Budget,          // refused without sending: the client's token or cost budget is spent
  Cancelled,       // Client::cancel() was called
  CommandFailed,  // CommandModel: the command exited non-zero, was killed by a signal, or could not
                  // start
  // Never returned by a Model: the llm proposer's outcome for an answer that came back but
  // whose schedule or rewrite chain was refused (malformed or illegal); stored as the
  // call's status so the run database says so. A replay reads such an answer back as Ok.
  Refused,
};
// "ok", "http_error", "timeout", "transport_error", "bad_answer", "budget", "cancelled",
// "command_failed", "refused"
const char* status_name(Status s);

struct ModelRequest {
  std::string system;  // the system prompt (may be empty)
  std::string user;    // the user message
};

struct ModelAnswer {
  Status status = Status::Ok;
  int http_status = 0;      // of the last attempt; 0 when none
  std::string text;         // the model's text (Ok only)
  std::string stop_reason;  // finish_reason / stop_reason as the server said ("stop", "length",
                            // "end_turn", ...)
  int64_t tokens_in = 0;    // from the answer's usage (0 when the server gives none)
  int64_t tokens_out = 0;
  double cost = 0;            // tokens priced with the config's prices
  double seconds = 0;         // wall time of the whole call, waits included
  int attempts = 0;           // HTTP attempts made (0 for Budget)
  std::vector<double> waits;  // the backoff waits before each retry, in seconds
  std::string request;        // the JSON body as sent (never headers)
  std::string raw_answer;     // the last attempt's body, as received (redacted)
  std::string error;          // for a person, when status != Ok: what happened and what to fix
  bool ok() const { return status == Status::Ok; }
};

// Totals over a client's life.
struct Usage {
  int64_t requests = 0;  // complete() calls, refused ones included
  int64_t attempts = 0;  // HTTP attempts
  int64_t retries = 0;
  int64_t refused = 0;  // Budget answers
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double cost = 0;
};

// Test seams: how the client waits between attempts (default: sleeps, and wakes early on
// cancel()).
struct ClientHooks {
  std::function<void(double seconds)> wait;
};

// What answers a prompt: a Client (a model over HTTP), an external command (CommandModel,
// `--proposer-cmd`), or a replay of a run's stored answers, so a proposer does not care
// which. complete() must be safe to call from several threads.
class Model {
 public:
  virtual ~Model() = default;
  virtual ModelAnswer complete(const ModelRequest& request) = 0;
};

// One client per configured model. Thread-safe: complete() may run on several threads at
// once (one curl handle per call); submit() runs a call on its own thread. The budget is
// checked before each request: once the spent tokens or cost reach it, requests are
// refused with Status::Budget (requests already in flight may overshoot it by their own
// size). Never throws for anything the server does.
class Client : public Model {
 public:
  explicit Client(ModelConfig config, ClientHooks hooks = {});
  ~Client() override;  // waits for submitted calls
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  ModelAnswer complete(const ModelRequest& request) override;
  std::future<ModelAnswer> submit(ModelRequest request);

  // Ends calls in flight and waits (Status::Cancelled) and refuses new ones.
  void cancel();

  Usage usage() const;
  bool budget_spent() const;
  const ModelConfig& config() const { return config_; }

  // The request body for `request` in this client's protocol (what complete() sends).
  std::string request_body(const ModelRequest& request) const;
  // The endpoint URL complete() posts to.
  std::string endpoint() const;

 private:
  struct State;
  struct Call;  // one complete(): its attempts, retries and answer (client.cpp)
  ModelConfig config_;
  ClientHooks hooks_;
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------- an external command

struct CommandConfig {
  std::string command;           // run as `/bin/sh -c COMMAND`
  double timeout_seconds = 600;  // --proposer-timeout: the whole run, start to exit
};

// An external proposer (`--proposer-cmd`): each complete() runs `/bin/sh -c COMMAND` in
// its own process group, with the environment of ollie and its working directory. The
// command reads the prompt on standard input (the system prompt, a blank line, the user
// message; just the user message when there is no system prompt) and prints its answer
// (a kernel, fenced or not: extract_code finds it) on standard output. Standard error is
// only kept (its last lines) for error messages.
//   exit 0                 Ok: text = raw_answer = stdout
//   non-zero exit, signal  CommandFailed: error names the command, the status (127:
//                          command not found) and the last lines of stderr
//   past timeout_seconds   Timeout: the group gets SIGTERM, then SIGKILL after a grace
//   stdout over 16 MiB     BadAnswer: the group is killed
// When the command exits, whatever it left running in its process group is killed, and
// it is always reaped: no zombies, no orphans in the group. request = the text written to
// stdin; attempts = 1; seconds = wall time; no tokens or cost. On failure raw_answer is
// stdout followed by the tail of stderr (what the run database keeps). Thread-safe: calls
// share nothing, and no signal handler is installed (SIGPIPE from a command that does not
// read its input is blocked and discarded on the calling thread only). Never throws for
// anything the command does. The constructor throws UserError for an empty command or a
// time limit that is not positive.
class CommandModel : public Model {
 public:
  explicit CommandModel(CommandConfig config);
  ModelAnswer complete(const ModelRequest& request) override;
  const CommandConfig& config() const { return config_; }

 private:
  CommandConfig config_;
};

// `text` with every occurrence of `secret` (when at least 4 characters) replaced by
// "[redacted]".
std::string redact(std::string text, const std::string& secret);

// Parses a protocol answer body, JSON or a stream of server-sent events ("data: {...}"
// lines, as sent when ModelConfig::stream is on), into text, stop reason and token counts
// (used by the client; public for replay, which reads stored bodies). nullopt when the
// body is neither the protocol's JSON with text nor its event stream.
struct ParsedAnswer {
  std::string text, stop_reason;
  int64_t tokens_in = 0, tokens_out = 0;
};
std::optional<ParsedAnswer> parse_answer(Protocol protocol, const std::string& body,
                                         std::string* why = nullptr);

// ---------------------------------------------------------------- prompts

// One failed candidate shown to the model: its verdict ("compile-error", "wrong",
// "crash", "timeout", ...) and the diagnostic, already trimmed by FailureLog::add.
struct Failure {
  std::string verdict;
  std::string diagnostic;
};

// The last few failures (oldest first), each trimmed: a compile error to its first
// `max_compile_errors` errors (with their context lines), a refusal (verdict "refused")
// kept whole (its reasons, one a line), anything else to its first `max_lines` lines;
// every diagnostic to at most `max_chars`.
class FailureLog {
 public:
  explicit FailureLog(size_t keep = 3, int max_compile_errors = 3, int max_lines = 6,
                      size_t max_chars = 2000)
      : keep_(keep),
        max_compile_errors_(max_compile_errors),
        max_lines_(max_lines),
        max_chars_(max_chars) {}
  void add(const std::string& verdict, const std::string& diagnostic);
  const std::deque<Failure>& recent() const { return recent_; }

 private:
  size_t keep_;
  int max_compile_errors_, max_lines_;
  size_t max_chars_;
  std::deque<Failure> recent_;
};

// A compiler log cut after its first `max_errors` "error:" diagnostics (the lines that
// follow an error up to the next error, i.e. its context, are kept).
std::string trim_compile_errors(const std::string& log, int max_errors);

// What a prompt is made of. Empty fields render as "(none yet)" / "(unknown)".
struct PromptInputs {
  std::string spec;               // the spec's source
  std::string header;             // the kernel header (emit::emit_header): the ABI
  std::string hardware;           // ISA flags, cores, caches, calibrated peaks (text)
  std::string best_kernel;        // the current best kernel's source
  double best_seconds = 0;        // its median time; 0: not timed
  double roofline_fraction = 0;   // its fraction of the roofline bound; 0: unknown
  std::vector<Failure> failures;  // recent failures, oldest first (FailureLog::recent)
  // The current kernel in ollie's own terms (empty: "(none)" / "(unknown)"): the tensor IR
  // after its rewrites (ir::to_text), its stages (loops::describe_stages), its rewrite chain
  // and schedule (text forms), and the rewrites that apply to that graph, one per line.
  std::string graph;
  std::string stages;
  std::string rewrites;
  std::string schedule;
  std::string rewrite_sites;
};

// The placeholders a template may use, without braces.
const std::vector<std::string>& placeholder_names();

// A parsed template. The file is Markdown with {{placeholder}}s; an optional line
// `<!-- system -->` starts the system prompt and a line `<!-- user -->` starts the user
// message (without markers the whole file is the user message).
struct PromptTemplate {
  std::string name;  // the file it came from (for errors)
  std::string system;
  std::string user;
};
// UserError "FILE:LINE: unknown placeholder {{x}} (known: ...)" for an unknown
// placeholder, and for an unclosed "{{".
PromptTemplate parse_prompt_template(const std::string& text, const std::string& name);
PromptTemplate load_prompt_template(const std::string& path);  // UserError when unreadable
// prompts/kernel.md as built into ollie.
PromptTemplate default_prompt_template();

ModelRequest render_prompt(const PromptTemplate& tmpl, const PromptInputs& inputs);

// What the prompt's {{directives}} and {{rewrite_rules}} say, taken from the tables of
// docs/schedules.md ("## Directives") and docs/rewrites.md ("## The rules") as built into
// ollie, one Markdown list item per directive / rule: the docs are the one source.
const std::string& directive_reference();
const std::string& rewrite_rule_reference();

// ---------------------------------------------------------------- code extraction

struct ExtractedCode {
  bool found = false;
  std::string code;  // the kernel source (found only)
  std::string
      how;  // "fenced block 2 of 3 (defines ollie_kernel)", "unfenced", or why there is none
  int fenced_blocks = 0;
};
// The kernel in a model's answer. Fenced blocks (``` or ~~~, language cpp/c++/c/cc/cxx/
// h/hpp or none) come first: the last one that defines ollie_kernel, else the longest
// one that looks like C++. Without fences, the code around an ollie_kernel definition:
// from the first code-like line before it to the brace that closes it. Else not found.
ExtractedCode extract_code(std::string_view answer);

// An answer in ollie's own terms: a ```schedule block (the schedule's text form) and/or a
// ```rewrites block (a rewrite chain, one site a line). The last block of each language
// counts. found: at least one of them is there (the answer is then a plan, whatever C++
// it also shows). `problem`: why the plan cannot be used (a fence left open: the answer
// was cut).
struct ExtractedPlan {
  bool found = false;
  bool has_schedule = false;
  std::string schedule;                 // the ```schedule block's text
  std::optional<std::string> rewrites;  // the ```rewrites block's text, when there is one
  std::string how;                      // "```schedule block 2 of 3, ```rewrites block 1 of 3"
  std::string problem;
};
ExtractedPlan extract_plan(std::string_view answer);

}  // namespace ollie::llm
