// The search stage (docs/design.md section 9): `ollie optimize`'s Markov chains over
// candidate kernels. It owns the chain (Metropolis-Hastings on cost = correctness penalty
// + log of the measured time, temperatures, restarts from the archive), the proposers
// behind one interface, and the evaluator that turns a candidate into a verdict and a
// time (the verifier's quick suites, then a side-by-side timing against the baseline).
// Everything a run does is written to its run database (src/store/) as it happens, so a
// run resumes where it stopped and never evaluates a candidate twice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "llm/llm.h"
#include "verify/verify.h"

namespace ollie::store {
class Store;
struct ModelCall;
}  // namespace ollie::store

namespace ollie::measure {
struct MachinePeaks;
}

namespace ollie::search {

// What a proposer returns: a complete kernel and how it was made.
struct Candidate {
  std::string source;    // C++ in the kernel ABI
  std::string schedule;  // the schedule text it was emitted from; empty for free-form source
  std::string rewrites;  // the tensor-IR rewrites applied, one per line; empty for none
  std::string proposer;  // "baseline", "mutate", "rewrite", ...
  std::string move;      // what changed from the parent, for a person
};

// Free-form source (e.g. the llm's): a candidate that carries no schedule text and is not
// the baseline (whose default schedule may print as no text). Proposers that edit a
// schedule or a rewritten graph cannot move it.
inline bool is_free_form(const Candidate& c) {
  return c.schedule.empty() && c.proposer != "baseline";
}

// A candidate of the run with what its evaluation said.
struct State {
  int64_t id = 0;  // in the run database
  Candidate candidate;
  bool passed = false;
  double seconds = 0;  // estimated kernel time (baseline median x measured ratio); 0 when unknown
  double penalty = 1;  // verify::Report::penalty
  double cost = 0;     // what the chain minimizes
};

// A source of new candidates. Seeded: the same state and seed give the same proposal.
class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // nullopt when nothing can be proposed from `current` (e.g. free-form source for a
  // schedule mutator).
  virtual std::optional<Candidate> propose(const State& current, uint64_t seed) = 0;
  // Whether a proposal costs little (no model call, no money): the cost model may then ask
  // for several and keep the most promising (CostModelOptions).
  virtual bool cheap() const { return false; }
};

// Random schedule moves (loops::mutate_schedule) on candidates that carry a schedule.
std::unique_ptr<Proposer> make_mutate_proposer(const ir::Graph& graph);

// One more tensor-IR rewrite (src/rewrite/, picked with the seed among every site of the
// candidate's rewritten graph) with the new graph's default schedule. nullopt when no
// rule applies, the chain has reached its maximum length (24 lines), or the candidate
// is free-form source.
std::unique_ptr<Proposer> make_rewrite_proposer(const ir::Graph& graph);

// The baseline every run starts from: the default schedule, emitted.
Candidate baseline_candidate(const ir::Graph& graph);

// An evaluation's result (what the run database records).
struct Evaluation {
  // Failing until an evaluator says otherwise (as `penalty`). The run database stores its
  // verify::verdict_name (search/rows.h).
  verify::Verdict verdict = verify::Verdict::Crash;
  std::string message;
  double penalty = 1;
  std::string certificate_json;
  double median_seconds = 0, min_seconds = 0, mad_seconds = 0;  // the candidate's timed calls
  double ratio_vs_baseline =
      0;  // median of per-round candidate / baseline times (0 when not timed)
  int rounds = 0;
  double eval_seconds = 0;  // wall time of the whole evaluation
};

// Two candidates that passed timed side by side in one session (the chain's re-timing of
// a would-be new best against the current best; docs/search.md, "Confirming a new best").
struct Comparison {
  // Pass when both ran right while timed; else what `a` counts as (Wrong, Crash).
  verify::Verdict verdict = verify::Verdict::Pass;
  std::string message;
  double median_seconds = 0, min_seconds = 0, mad_seconds = 0;  // a's timed calls
  double ratio = 0;                                             // median of per-round a / b times
  double min_ratio = 0;  // a's fastest call over b's fastest call (0 when unknown)
  int rounds = 0;
  double others_cpus = -1;  // measure::BenchReport::others_cpus
  bool contended =
      false;  // other processes took CPUs the threads needed (measure::contended), every attempt
  int attempts = 1;    // sessions timed (a contended one is tried again)
  double seconds = 0;  // wall time of the comparison
};

// When an evaluation may give up on a candidate as too slow (docs/search.md, "Giving up
// on slow candidates"): the chain's limit, as a ratio to the baseline's time.
struct GiveUp {
  double ratio = 0;             // candidate / baseline time beyond which it is hopeless; 0: never
  double baseline_seconds = 0;  // the baseline's time (sizes the runner's call limit)
};

// Turns a candidate into an Evaluation. Implementations must be pure in the sense of
// docs/design.md section 9 (the same candidate gives an equivalent result; safe to repeat).
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Evaluation evaluate(const Candidate& candidate) = 0;
  // The same, but an evaluator that can may stop early with the verdict TooSlow once the
  // candidate's first timed calls are slower than `give_up.ratio` times the baseline's,
  // before verifying it (a verified candidate is timed in full). By default: evaluate().
  virtual Evaluation evaluate_paced(const Candidate& candidate, const GiveUp& give_up) {
    return evaluate(candidate);
  }
  // Times `a` side by side with `b` (both passed `evaluate`), longer than `evaluate`
  // does. nullopt when this evaluator cannot; the chain then trusts evaluate's times.
  virtual std::optional<Comparison> compare(const Candidate& a, const Candidate& b) {
    return std::nullopt;
  }
};

struct EvaluatorOptions {
  verify::Options verify;        // level quick, fresh seeds
  double bench_seconds = 0.3;    // side-by-side timing budget per candidate
  double confirm_seconds = 1.0;  // compare(): timing budget of a confirmation...
  int confirm_min_rounds = 30;   // ...and its rounds at least...
  int confirm_attempts = 3;      // ...and sessions tried, 1 s apart, while they are contended
  int threads = 0;               // kernel threads (0: every core)
  bool cold = false;             // flush the caches before every timed call
  std::string runner_path;
  std::string cache_dir;
  // The side-by-side timing's rounds stop after timing_cap x bench_seconds once two were
  // made, even before its 5 (a slow kernel's timing is bounded by time); 0: no cap.
  double timing_cap = 4;
};
// Verifies at `quick`; a passing candidate is then timed side by side with the baseline
// (one runner session, rounds A B B A), and its time is the ratio times the baseline's.
// compare() times two candidates the same way, for confirm_seconds. evaluate_paced() with
// a ratio first probes the candidate's speed against the baseline (two calls each, a
// call limit in the runner) and gives up (TooSlow) before verifying it when it is slower
// than the ratio.
std::unique_ptr<Evaluator> make_local_evaluator(const ir::Graph& graph, verify::GraphAt graph_at,
                                                const std::string& baseline_source,
                                                EvaluatorOptions options);

// A kernel of an earlier run to start from (search/warm_start.h): evaluated after the
// baseline like any candidate (proposer "warm-start"), refused when it fails.
struct WarmStart {
  Candidate candidate;
  std::string origin;  // "RUN.db #12": where it was read
};

// Recipe starts (docs/search.md, "Recipe starts"): the spec's graph after each known-good
// rewrite recipe that applies to it (attention's normalization moved after p @ v, then
// its softmax in key blocks: flash), with that graph's default schedule, as starts with
// proposer "recipe" (move "recipe: LINES (its default schedule)", origin "the recipe
// LINES"). A new run evaluates them after the baseline, like warm starts, and its chains
// start from the fastest. Empty when no recipe applies; never the baseline's kernel.
std::vector<WarmStart> recipe_starts(const ir::Graph& graph);

// The cost model (docs/search.md, "The cost model"; cost_model.h): learned during the run
// from its own evaluations, it ranks `candidates` proposals of a cheap proposer and only
// the most promising is evaluated. Off: every step evaluates its one proposal, as before.
struct CostModelOptions {
  bool on = false;
  int candidates = 8;        // proposals asked for per step when screening
  int min_evaluations = 10;  // passing evaluations before the model screens
  int refit_every = 5;       // evaluations between refits
  double explore = 0.1;      // probability of evaluating a random one of them instead
  double ridge = 1.0;        // the regression's L2 penalty (in samples, on standardized inputs)
};

struct SearchOptions {
  double time_budget_seconds = 0;  // this session's wall time; 0 = no limit
  int64_t max_evals =
      0;  // candidates evaluated in the whole run (confirmations not counted); 0 = no limit
  int64_t max_session_evals = 0;  // evaluations this session (this worker) makes; 0 = no limit
  uint64_t seed = 1;
  int chains = 2;
  double base_temperature = 0.02;  // chain i runs at base x 2^i (cost is in log-seconds)
  double penalty_weight = 1.0;     // cost = log(seconds) + weight x penalty
  int restart_after =
      40;  // steps without a new best in a chain before it restarts from the archive
  // A candidate whose first timing makes it the run's new best is timed again side by
  // side with the current best (Evaluator::compare) before it is recorded as the best.
  bool confirm_new_best = true;
  // A proposal whose first timed calls are more than max(give_up, the ratio the chain's
  // acceptance takes with probability 1e-6 at its temperature) times slower than the
  // chain's current state is given up (verdict TooSlow, never accepted); 0: every
  // proposal is verified and timed in full.
  double give_up = 2.0;
  std::vector<std::pair<std::string, double>> proposer_weights = {{"mutate", 1.0}};
  // Evaluated after the baseline, before the chains start from the best of the run; each
  // result is a "warm-start" event and a line to `on_warm_start` (warm_start_line).
  std::vector<WarmStart> warm_starts;
  std::function<void(const std::string&)> on_warm_start;
  CostModelOptions cost_model;
  // A worker of a run that several processes share (docs/distributed.md): its chains are
  // numbered from first_chain in the run's steps, run at base x 2^(i + temperature_offset),
  // start from the run's best, and claim each candidate (store::Store::claim, with this
  // lease) before evaluating it; a proposal another worker is evaluating is skipped.
  struct Worker {
    bool on = false;
    int first_chain = 0;
    double temperature_offset = 0;
    double lease_seconds = 60;
  } worker;
};

// What the progress display shows, refreshed after every step.
struct Progress {
  double elapsed_seconds = 0;
  int64_t evaluations = 0;      // this session
  int64_t run_evaluations = 0;  // the whole run: candidates evaluated
  double evals_per_minute = 0;
  double acceptance = 0;  // accepted / steps, this session
  double best_seconds = 0, baseline_seconds = 0;
  std::vector<double> temperatures;
  std::string last;          // the last step, for a person
  int64_t screened_out = 0;  // proposals the cost model kept from being evaluated, this session
  int64_t given_up = 0;      // evaluations that gave up on a too slow candidate, this session
  int64_t claimed_elsewhere = 0;  // proposals another worker was evaluating (a shared run)
};

// Why the search stopped.
enum class StopReason { TimeBudget, EvalBudget, Interrupted, NoProposals, Finalize };
const char* stop_reason_name(StopReason r);

// Runs (or continues) the chains of the run in `store` until a budget is spent or
// `interrupted()` turns true (checked between evaluations). A new run (no steps yet)
// evaluates the baseline first. `progress` is called after every step. A fresh evaluation
// that would make a candidate the new best is confirmed first (SearchOptions::
// confirm_new_best): its first evaluation and the confirmed one (the later, so the one
// that counts) are written together with a `confirm` or `not-confirmed` event.
StopReason run_chains(const ir::Graph& graph, store::Store& store, Evaluator& evaluator,
                      std::vector<std::unique_ptr<Proposer>>& proposers,
                      const SearchOptions& options, const std::function<bool()>& interrupted,
                      const std::function<void(const Progress&)>& progress);

// ---------------------------------------------------------------- the llm proposer

// What the llm proposer puts in every prompt besides the kernel and the failures.
struct LlmProposerOptions {
  std::string spec_source;      // the spec file's text
  std::string header;           // emit::emit_header of the graph: the ABI
  std::string hardware;         // describe_hardware(...)
  double roofline_seconds = 0;  // the roofline bound at the kernels' threads; 0: unknown
  llm::PromptTemplate prompt = llm::default_prompt_template();
  // The spec's graph: the prompt then shows the kernel in ollie's terms (the graph after
  // its rewrites, stages, chain, schedule), and answers with a ```schedule / ```rewrites
  // block become emitted candidates (docs/llm.md). Null: C++ answers only.
  const ir::Graph* graph = nullptr;
  // Set: the proposer starts stopped, and this is said once in an event (e.g. the run's
  // token budget was spent in an earlier session).
  std::string stopped;
};

// Usage of the language model over the whole run (earlier sessions' calls included).
struct LlmUsage {
  int64_t calls = 0;         // model calls (every status)
  int64_t with_code = 0;     // answers whose code became a candidate
  int64_t without_code = 0;  // ok answers without usable code
  int64_t repeated = 0;      // answers whose kernel the run had evaluated before
  int64_t failed = 0;        // calls that did not answer (http error, timeout, command failed, ...)
  int64_t tokens_in = 0, tokens_out = 0;
  double cost = 0;
  bool stopped = false;  // the proposer proposes nothing more (budget, answers run out, errors)
  std::string stop_reason;

  // Answers in ollie's terms (docs/llm.md): plans that became candidates, plans refused
  // (malformed or illegal; their calls' status is "refused").
  int64_t with_schedule = 0;
  int64_t refused = 0;
};
// Sums the "llm" rows of the run database's model_calls.
LlmUsage llm_usage_of(const store::Store& store);

// The language model as a proposer (docs/design.md section 9, docs/llm.md): for every proposal
// it renders the prompt (the spec, the ABI, the hardware, the chain's current kernel, or
// the run's best when the current one fails, with its time and roofline fraction, and the
// last failures of its own candidates), asks the model, stores the call in the run
// database (proposer "llm"), and returns the answer's code as free-form source (no
// schedule). The failures come from the run database: at each proposal it reads the
// evaluations of the candidates it proposed before (compile errors trimmed, the
// verifier's counterexample), so the chain need not know about it; a resumed run starts
// with the last failures recorded.
//   - an answer with a ```schedule / ```rewrites block (options.graph set): emitted into a
//     candidate that carries both (move "llm schedule (N directives)"), or refused: the
//     call's status "refused", an "llm-refused" event with the reason (the SpecError or
//     ScheduleError text), the reason in the next prompt's failures; nullopt;
//   - an answer without usable code: the call row and an "llm-no-code" event; nullopt;
//   - an answer whose kernel the run evaluated before: an "llm-repeat" event; nullopt;
//     after 5 in a row the proposer stops;
//   - a call that failed (HTTP error, timeout, command failed): an "llm-error" event;
//     nullopt; after an error that will not go away (HTTP 400/401/403/404) or 5 failures
//     in a row the proposer stops;
//   - Status::Budget or Cancelled (a replay out of answers): stops.
// A stopped proposer returns nullopt at once (an "llm-stopped" event says why, once);
// the run goes on with the other proposers.
class LlmProposer : public Proposer {
 public:
  LlmProposer(llm::Model& model, store::Store& store, LlmProposerOptions options);
  ~LlmProposer() override;
  std::string name() const override { return "llm"; }
  std::optional<Candidate> propose(const State& current, uint64_t seed) override;
  // Over the whole run (read from the run database at construction, then counted).
  LlmUsage usage() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ISA flags, cores, the last-level cache and, when calibrated (clock_hz or peaks > 0),
// the peaks, for the prompt's {{hardware}}.
std::string describe_hardware(const measure::MachinePeaks& peaks, int threads);

// A model that answers from a recorded run's stored calls, in order (`ollie optimize
// --replay`): an "ok" call's answer is parsed back (parse_answer in `protocol`; a
// command's answer is its text as is when protocol is nullopt); any other call gives its
// recorded status and HTTP status again. Tokens are the recorded ones, the cost 0 (nothing
// is paid). After the last one: Status::Cancelled, with an
// error saying the recorded answers ran out (the llm proposer stops, the run goes on).
std::unique_ptr<llm::Model> make_replay_model(std::vector<store::ModelCall> calls,
                                              std::optional<llm::Protocol> protocol,
                                              std::string recorded_path);

// For a replay: a candidate whose source the recorded run evaluated gets that evaluation
// (no compiling, no timing), so the same seed takes the same steps; anything else is
// evaluated by `fallback`. `reused()` / `evaluated()` count each.
class ReplayEvaluator : public Evaluator {
 public:
  ReplayEvaluator(const store::Store& recorded, Evaluator& fallback)
      : recorded_(recorded), fallback_(fallback) {}
  Evaluation evaluate(const Candidate& candidate) override {
    return evaluate_paced(candidate, GiveUp{});
  }
  Evaluation evaluate_paced(const Candidate& candidate, const GiveUp& give_up) override;
  int64_t reused() const { return reused_; }
  int64_t evaluated() const { return evaluated_; }

 private:
  const store::Store& recorded_;
  Evaluator& fallback_;
  int64_t reused_ = 0, evaluated_ = 0;
};

}  // namespace ollie::search
