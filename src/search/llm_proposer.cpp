// The llm proposer (a language model, an external command, or a replay of a recorded
// run's answers, all behind llm::Model; its answers are C++ or a plan in ollie's terms,
// llm_plan.h), the hardware text of its prompts, and the two pieces of `ollie optimize
// --replay`: the replay model and the replay evaluator.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "build/build.h"
#include "loops/loops.h"
#include "measure/measure.h"
#include "search/llm_plan.h"
#include "search/rows.h"
#include "search/search.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

namespace ollie::search {

namespace {

// A call that failed this many times in a row stops the proposer: the model, server or
// command is down, and every further proposal would wait for its timeouts again.
constexpr int kMaxFailuresInARow = 5;
// Answers in a row whose kernel the run has evaluated before: a model (or a deterministic
// command) that has nothing new to say; each would cost a call and move nothing.
constexpr int kMaxRepeatsInARow = 5;
// Candidates proposed whose evaluation has not been seen yet (the chain evaluates each
// before the next proposal; a few are kept in case one is never evaluated).
constexpr size_t kMaxPending = 16;
// How far back a resumed run looks for the last failures of the llm's candidates.
constexpr int64_t kResumeScan = 2000;

std::optional<llm::Status> status_from_name(const std::string& name) {
  // Every status the llm stage knows (it may add more): status_name says "?" past them.
  for (int i = 0; i < 64; ++i) {
    const auto s = static_cast<llm::Status>(i);
    const std::string n = llm::status_name(s);
    if (n == "?" || n.empty()) break;
    if (n == name) return s;
  }
  return std::nullopt;
}

// HTTP statuses a retry will not change: a bad key, an unknown model or endpoint, a
// request the server rejects.
bool permanent_http_error(int status) {
  return status == 400 || status == 401 || status == 403 || status == 404 || status == 422;
}

std::string first_line(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end) + " ...";
}

std::string read_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The data caches of CPU 0 from sysfs, "L1d 32K, L2 1024K, L3 32768K (shared by CPUs
// 0-1)"; empty when sysfs does not say.
std::string data_caches() {
  std::string text;
  const std::filesystem::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (int i = 0; i < 16; ++i) {
    const std::filesystem::path index = dir / ("index" + std::to_string(i));
    const std::string level = read_line(index / "level"), type = read_line(index / "type"),
                      size = read_line(index / "size"),
                      shared = read_line(index / "shared_cpu_list");
    if (level.empty()) break;
    if (type == "Instruction" || size.empty()) continue;
    text +=
        fmt::format("{}L{}{} {}", text.empty() ? "" : ", ", level, type == "Data" ? "d" : "", size);
    if (shared.find_first_of(",-") != std::string::npos)
      text += fmt::format(" (shared by CPUs {})", shared);
  }
  return text;
}

}  // namespace

LlmUsage llm_usage_of(const store::Store& store) {
  LlmUsage u;
  int64_t after = 0;
  while (true) {
    const auto calls = store.model_calls("llm", after, 200);
    if (calls.empty()) break;
    for (const auto& c : calls) {
      ++u.calls;
      if (c.status == "refused")
        ++u.refused;  // answered, but its plan was refused
      else if (c.status != "ok")
        ++u.failed;
      u.tokens_in += c.tokens_in;
      u.tokens_out += c.tokens_out;
      u.cost += c.cost;
      after = c.id;
    }
  }
  return u;
}

struct LlmProposer::Impl {
  llm::Model& model;
  store::Store& store;
  LlmProposerOptions options;
  llm::FailureLog failures;
  std::vector<std::string> pending;  // hashes of proposed candidates not yet seen evaluated
  LlmUsage usage;
  int failures_in_a_row = 0;
  int repeats_in_a_row = 0;
  bool stop_said = false;

  std::optional<RewrittenGraphs> graphs;  // the spec's graph after a chain (options.graph set)

  Impl(llm::Model& m, store::Store& s, LlmProposerOptions o)
      : model(m), store(s), options(std::move(o)) {
    if (options.graph) graphs.emplace(*options.graph);
  }

  void stop(const std::string& why) {
    if (usage.stopped) return;
    usage.stopped = true;
    usage.stop_reason = why;
  }

  // A resumed run shows the model the last failures recorded (oldest first).
  void recover_failures() {
    std::vector<std::pair<std::string, std::string>> found;
    const int64_t last = store.counts().candidates;
    for (int64_t id = last; id >= 1 && id > last - kResumeScan && found.size() < 3; --id) {
      const auto c = store.candidate(id);
      if (!c || c->proposer != "llm") continue;
      const auto e = store.evaluation_of(id);
      if (e && verdict_of(*e) != verify::Verdict::Pass) found.emplace_back(e->verdict, e->message);
    }
    for (auto it = found.rbegin(); it != found.rend(); ++it) failures.add(it->first, it->second);
  }

  // What the verifier said about the candidates proposed before: the failures go into
  // the next prompt.
  void read_verdicts() {
    std::vector<std::string> still;
    for (const auto& hash : pending) {
      const auto c = store.candidate_by_hash(hash);
      const auto e = c ? store.evaluation_of(c->id) : std::nullopt;
      if (!e) {
        still.push_back(hash);
        continue;
      }
      if (verdict_of(*e) != verify::Verdict::Pass) failures.add(e->verdict, e->message);
    }
    if (still.size() > kMaxPending) still.erase(still.begin(), still.end() - kMaxPending);
    pending = std::move(still);
  }

  // The kernel a prompt shows: the chain's current one when it passed; else (a failing
  // state) the run's best, so the model is never shown a wrong kernel as the one to improve.
  Candidate shown_kernel(const State& current, double& seconds) const {
    seconds = 0;
    if (current.passed) {
      seconds = current.seconds;
      return current.candidate;
    }
    const auto best = store.best(1);
    if (best.empty()) return current.candidate;
    seconds = best[0].second.median_seconds;
    Candidate c;
    c.source = best[0].first.source;
    c.schedule = best[0].first.schedule;
    c.rewrites = best[0].first.rewrites;
    c.proposer = best[0].first.proposer;
    return c;
  }

  llm::PromptInputs inputs(const Candidate& shown, double seconds) {
    llm::PromptInputs in;
    in.spec = options.spec_source;
    in.header = options.header;
    in.hardware = options.hardware;
    in.best_kernel = shown.source;
    in.best_seconds = seconds;
    if (options.roofline_seconds > 0 && in.best_seconds > 0)
      in.roofline_fraction = options.roofline_seconds / in.best_seconds;
    in.failures.assign(failures.recent().begin(), failures.recent().end());
    if (graphs) {
      KernelTerms t = kernel_terms(*graphs, shown.rewrites, shown.schedule, is_free_form(shown));
      in.graph = std::move(t.graph);
      in.stages = std::move(t.stages);
      in.rewrites = std::move(t.rewrites);
      in.schedule = std::move(t.schedule);
      in.rewrite_sites = std::move(t.rewrite_sites);
    }
    return in;
  }

  int64_t record(const llm::ModelAnswer& a, llm::Status outcome) {
    store::ModelCall call;
    call.proposer = "llm";
    call.request = a.request;
    call.answer = a.raw_answer;
    call.status = llm::status_name(outcome);
    call.http_status = a.http_status;
    call.tokens_in = a.tokens_in;
    call.tokens_out = a.tokens_out;
    call.cost = a.cost;
    call.seconds = a.seconds;
    const int64_t id = store.add_model_call(call);
    ++usage.calls;
    usage.tokens_in += a.tokens_in;
    usage.tokens_out += a.tokens_out;
    usage.cost += a.cost;
    return id;
  }

  std::optional<Candidate> propose(const State& current) {
    if (usage.stopped) {
      if (!stop_said) {
        stop_said = true;
        store.add_event("llm-stopped",
                        "the llm proposer stops (the run goes on): " + usage.stop_reason);
      }
      return std::nullopt;
    }
    read_verdicts();
    double shown_seconds = 0;
    const Candidate shown = shown_kernel(current, shown_seconds);
    const llm::ModelRequest request =
        llm::render_prompt(options.prompt, inputs(shown, shown_seconds));
    const llm::ModelAnswer a = model.complete(request);
    if (a.status == llm::Status::Cancelled) {
      // Nothing was asked (a replay whose recorded answers ran out): no call to record.
      stop(a.error);
      return propose(current);  // says so in the event, returns nullopt
    }
    if (a.ok() && graphs) {
      const llm::ExtractedPlan plan = llm::extract_plan(a.text);
      if (plan.found) return propose_plan(a, plan, is_free_form(shown) ? "" : shown.rewrites);
    }
    const std::string call = fmt::format("model call {}", record(a, a.status));
    if (a.status == llm::Status::Budget) {
      ++usage.failed;
      stop(fmt::format("{}: the budget is spent: {}", call, a.error));
      return propose(current);
    }
    if (!a.ok()) {
      ++usage.failed;
      ++failures_in_a_row;
      store.add_event("llm-error",
                      fmt::format("{}: {}: {}", call, llm::status_name(a.status), a.error));
      if (a.status == llm::Status::HttpError && permanent_http_error(a.http_status))
        stop(fmt::format("{}: HTTP {} will not go away by retrying: {}", call, a.http_status,
                         first_line(a.error)));
      else if (failures_in_a_row >= kMaxFailuresInARow)
        stop(fmt::format("{} calls in a row failed, the last: {}", failures_in_a_row,
                         first_line(a.error)));
      return std::nullopt;
    }
    failures_in_a_row = 0;
    const llm::ExtractedCode code = llm::extract_code(a.text);
    if (!code.found) {
      ++usage.without_code;
      store.add_event("llm-no-code",
                      fmt::format("{}: an answer without usable code ({})", call, code.how));
      return std::nullopt;
    }
    Candidate c;
    c.source = code.code;
    if (!c.source.empty() && c.source.back() != '\n') c.source += '\n';
    if (repeated(c, call)) return std::nullopt;
    ++usage.with_code;
    c.proposer = "llm";
    c.move = fmt::format("{}, {}", call, code.how);
    return c;
  }

  // A kernel the run has evaluated before is nothing new: proposing it would only reuse
  // its evaluation (and, on a free-form state, keep the chain where it is). Otherwise the
  // candidate is pending: its verdict is read before the next prompt.
  bool repeated(const Candidate& c, const std::string& call) {
    const std::string hash = sha256_hex(c.source);
    if (const auto before = store.candidate_by_hash(hash);
        before && store.evaluation_of(before->id)) {
      ++usage.repeated;
      store.add_event("llm-repeat",
                      fmt::format("{}: the answer's kernel is candidate {}, evaluated before", call,
                                  before->id));
      if (++repeats_in_a_row >= kMaxRepeatsInARow)
        stop(
            fmt::format("{} answers in a row repeated kernels evaluated before", repeats_in_a_row));
      return true;
    }
    repeats_in_a_row = 0;
    pending.push_back(hash);
    return false;
  }

  // An answer in ollie's terms: emitted into a candidate that carries its schedule and
  // chain, or refused (the call's status says so, an event and the next prompt say why).
  std::optional<Candidate> propose_plan(const llm::ModelAnswer& a, const llm::ExtractedPlan& plan,
                                        const std::string& chain) {
    failures_in_a_row = 0;
    PlanOutcome outcome = candidate_from_plan(*options.graph, *graphs, plan, chain);
    const int64_t call_id = record(a, outcome.candidate ? a.status : llm::Status::Refused);
    const std::string call = fmt::format("model call {}", call_id);
    if (!outcome.candidate) {
      ++usage.refused;
      store.add_event("llm-refused", fmt::format("{}: the answer's plan ({}) was refused: {}", call,
                                                 plan.how, outcome.refusal));
      failures.add("refused", fmt::format("your answer's plan ({}, {}) was refused:\n{}", plan.how,
                                          call, outcome.refusal));
      return std::nullopt;
    }
    Candidate& c = *outcome.candidate;
    if (repeated(c, call)) return std::nullopt;
    ++usage.with_schedule;
    c.move = fmt::format("{}, {}", c.move, call);
    return std::move(c);
  }
};

LlmProposer::LlmProposer(llm::Model& model, store::Store& store, LlmProposerOptions options)
    : impl_(std::make_unique<Impl>(model, store, std::move(options))) {
  impl_->usage = llm_usage_of(store);
  impl_->recover_failures();
  if (!impl_->options.stopped.empty()) impl_->stop(impl_->options.stopped);
}

LlmProposer::~LlmProposer() = default;

std::optional<Candidate> LlmProposer::propose(const State& current, uint64_t) {
  return impl_->propose(current);
}

LlmUsage LlmProposer::usage() const { return impl_->usage; }

std::string describe_hardware(const measure::MachinePeaks& peaks, int threads) {
  measure::MachineIdentity id = peaks.identity();
  if (id.cpu_model.empty() && id.isa.empty()) id = measure::host_identity();
  std::string text;
  text += fmt::format("- CPU: {}\n", id.cpu_model.empty() ? "(unknown)" : id.cpu_model);
  text += fmt::format("- vector ISA flags: {}\n", id.isa.empty() ? "(none found)" : id.isa);
  text += fmt::format(
      "- hardware threads: {} ({} per core); the kernel runs with {} OpenMP thread{}\n", id.cores,
      peaks.threads_per_core > 0 ? peaks.threads_per_core : measure::threads_per_core(), threads,
      threads == 1 ? "" : "s");
  const loops::Target target = loops::host_target();
  text += fmt::format(
      "- vectors: {} bytes ({} float32 lanes), what `vectorize` and register tiles use; {} cores "
      "for `parallel`\n",
      target.vector_bytes, target.vector_bytes / 4, target.cores);
  if (const int64_t llc = measure::llc_bytes(); llc > 0)
    text += fmt::format("- last-level cache: {:.3g} MiB\n", static_cast<double>(llc) / (1 << 20));
  if (const std::string caches = data_caches(); !caches.empty())
    text += fmt::format("- data caches of a core: {}\n", caches);
  if (peaks.clock_hz > 0) text += fmt::format("- clock: about {:.2f} GHz\n", peaks.clock_hz / 1e9);
  if (peaks.fma_flops_all > 0 || peaks.triad_bytes_per_s_all > 0) {
    const measure::ThreadPeaks at = measure::peaks_at(peaks, threads);
    text += fmt::format(
        "- calibrated peaks (float32 FMA, triad bandwidth): {:.1f} GFLOP/s and {:.1f} GB/s on one "
        "core, {:.1f} GFLOP/s "
        "and {:.1f} GB/s on all cores, {:.1f} GFLOP/s and {:.1f} GB/s at {} thread{}\n",
        peaks.fma_flops_1core / 1e9, peaks.triad_bytes_per_s_1core / 1e9, peaks.fma_flops_all / 1e9,
        peaks.triad_bytes_per_s_all / 1e9, at.flops_per_s / 1e9, at.bytes_per_s / 1e9, threads,
        threads == 1 ? "" : "s");
  }
  return text;
}

// ---------------------------------------------------------------- replay

namespace {

class ReplayModel : public llm::Model {
 public:
  ReplayModel(std::vector<store::ModelCall> calls, std::optional<llm::Protocol> protocol,
              std::string path)
      : calls_(std::move(calls)), protocol_(protocol), path_(std::move(path)) {}

  llm::ModelAnswer complete(const llm::ModelRequest&) override {
    std::lock_guard lock(mutex_);
    llm::ModelAnswer a;
    if (next_ >= calls_.size()) {
      a.status = llm::Status::Cancelled;
      a.error = fmt::format("the recorded run {} has no more model answers ({} replayed)", path_,
                            calls_.size());
      return a;
    }
    const store::ModelCall& c = calls_[next_++];
    a.request = c.request;
    a.raw_answer = c.answer;
    a.http_status = c.http_status;
    a.tokens_in = c.tokens_in;
    a.tokens_out = c.tokens_out;
    a.cost = 0;  // nothing is paid for a replayed answer (the recorded run's row keeps its cost)
    a.attempts = c.status == "budget" ? 0 : 1;
    const auto status = status_from_name(c.status);
    if (!status) {
      a.status = llm::Status::BadAnswer;
      a.error = fmt::format("replayed model call {}: unknown recorded status '{}'", c.id, c.status);
      return a;
    }
    // A refused plan was an answer: played back, the proposer refuses it again.
    a.status = *status == llm::Status::Refused ? llm::Status::Ok : *status;
    if (a.status != llm::Status::Ok) {
      a.error = fmt::format("replayed model call {}: recorded as {}{}", c.id, c.status,
                            c.http_status ? fmt::format(" (HTTP {})", c.http_status) : "");
      return a;
    }
    if (!protocol_) {
      a.text = c.answer;  // an external command's standard output
      return a;
    }
    std::string why;
    const auto parsed = llm::parse_answer(*protocol_, c.answer, &why);
    if (!parsed) {
      a.status = llm::Status::BadAnswer;
      a.error = fmt::format("replayed model call {}: {}", c.id, why);
      return a;
    }
    a.text = parsed->text;
    a.stop_reason = parsed->stop_reason;
    return a;
  }

 private:
  std::mutex mutex_;
  std::vector<store::ModelCall> calls_;
  size_t next_ = 0;
  std::optional<llm::Protocol> protocol_;
  std::string path_;
};

}  // namespace

std::unique_ptr<llm::Model> make_replay_model(std::vector<store::ModelCall> calls,
                                              std::optional<llm::Protocol> protocol,
                                              std::string recorded_path) {
  return std::make_unique<ReplayModel>(std::move(calls), protocol, std::move(recorded_path));
}

Evaluation ReplayEvaluator::evaluate_paced(const Candidate& candidate, const GiveUp& give_up) {
  const auto c = recorded_.candidate_by_hash(sha256_hex(candidate.source));
  const auto row = c ? recorded_.evaluation_of(c->id) : std::nullopt;
  if (!row) {
    ++evaluated_;
    return fallback_.evaluate_paced(candidate, give_up);
  }
  ++reused_;
  return evaluation_from_row(*row);
}

}  // namespace ollie::search
