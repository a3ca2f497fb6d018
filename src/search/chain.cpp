// The Markov chains of a run: Metropolis-Hastings over candidates, every step written to
// the run database before the next one starts (see search.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include "build/build.h"
#include "search/cost_model.h"
#include "search/rows.h"
#include "search/search.h"
#include "search/warm_start.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"

namespace ollie::search {

namespace {

using verify::Verdict;

// A deterministic stream for step `step` of a run seeded `seed` (SplitMix64 of both).
uint64_t mix(uint64_t seed, uint64_t step) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (step + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Chains {
 public:
  Chains(const ir::Graph& graph, store::Store& store, Evaluator& evaluator,
         std::vector<std::unique_ptr<Proposer>>& proposers, const SearchOptions& options)
      : graph_(graph),
        store_(store),
        evaluator_(evaluator),
        proposers_(proposers),
        options_(options) {
    for (int c = 0; c < options.chains; ++c)
      temperatures_.push_back(options.base_temperature *
                              std::pow(2.0, c + options.worker.temperature_offset));
    weights_.assign(proposers_.size(), 0.0);
    for (size_t p = 0; p < proposers_.size(); ++p)
      for (const auto& [name, weight] : options.proposer_weights)
        if (name == proposers_[p]->name()) weights_[p] = weight;
    if (options.cost_model.on) model_.emplace(graph, options.cost_model);
  }

  StopReason run(const std::function<bool()>& interrupted,
                 const std::function<void(const Progress&)>& progress) {
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    interrupted_ = interrupted;
    try {
      start_chains();
    } catch (const Stopped&) {
      return StopReason::Interrupted;
    }
    int64_t step = store_.next_step();
    int64_t idle = 0;
    while (true) {
      if (interrupted()) return StopReason::Interrupted;
      if (options_.max_evals > 0 && evaluated_candidates() >= options_.max_evals)
        return StopReason::EvalBudget;
      if (options_.max_session_evals > 0 && evaluations_ >= options_.max_session_evals)
        return StopReason::EvalBudget;
      if (options_.time_budget_seconds > 0 && elapsed() >= options_.time_budget_seconds)
        return StopReason::TimeBudget;
      const int chain = static_cast<int>(step % static_cast<int64_t>(current_.size()));
      if (options_.worker.on && step % 8 == 0) refresh_best();
      // Idle: no proposal, or only candidates evaluated before (a proposer with few moves,
      // e.g. rewrite on a graph with one site, proposes the same candidates again and again).
      const int64_t evaluated_before = evaluations_;
      const bool proposed = one_step(step, chain);
      idle = proposed && evaluations_ > evaluated_before ? 0 : idle + 1;
      if (idle > 200) return StopReason::NoProposals;
      ++step;
      Progress p;
      p.elapsed_seconds = elapsed();
      p.evaluations = evaluations_;
      p.run_evaluations = evaluated_candidates();
      p.evals_per_minute = p.elapsed_seconds > 0 ? evaluations_ * 60.0 / p.elapsed_seconds : 0;
      p.acceptance = steps_ > 0 ? static_cast<double>(accepted_) / static_cast<double>(steps_) : 0;
      p.best_seconds = best_.seconds;
      p.baseline_seconds = baseline_seconds_;
      p.temperatures = temperatures_;
      p.last = last_;
      p.screened_out = model_ ? model_->screened_out() : 0;
      p.given_up = given_up_;
      p.claimed_elsewhere = claimed_elsewhere_;
      if (progress) progress(p);
    }
  }

 private:
  // The run's evaluations as the budget counts them: candidates evaluated, not rows (a
  // confirmed candidate has two). Every candidate row was evaluated except one whose
  // evaluation a kill cut off, and that one is proposed and evaluated again on resume.
  int64_t evaluated_candidates() const { return store_.counts().candidates; }

  double cost_of(const Evaluation& e, double parent_seconds) const {
    if (e.verdict == Verdict::Pass && e.median_seconds > 0) return std::log(seconds_of(e));
    // Given up on as too slow: what its first calls showed (the step is rejected anyway).
    if (e.verdict == Verdict::TooSlow && e.ratio_vs_baseline > 0 && baseline_seconds_ > 0)
      return std::log(baseline_seconds_ * e.ratio_vs_baseline);
    return std::log(std::max(parent_seconds, 1e-9)) +
           options_.penalty_weight * std::max(e.penalty, 1e-3);
  }

  // The candidate's time on the baseline's clock: the baseline's own median times the
  // side-by-side ratio (less noisy than the candidate's median alone).
  double seconds_of(const Evaluation& e) const {
    return e.ratio_vs_baseline > 0 && baseline_seconds_ > 0
               ? baseline_seconds_ * e.ratio_vs_baseline
               : e.median_seconds;
  }

  // The candidate's stored evaluation, if it has one; `here`: timed on this worker's
  // machine kind (always, but in a run of several kinds: docs/distributed.md).
  struct Stored {
    int64_t id;
    Evaluation evaluation;
    bool here;
  };
  std::optional<Stored> stored(const std::string& hash) const {
    if (auto existing = store_.candidate_by_hash(hash)) {
      if (auto row = store_.evaluation_here(existing->id))
        return Stored{existing->id, evaluation_from_row(*row), true};
      if (auto row = store_.evaluation_of(existing->id))
        return Stored{existing->id, evaluation_from_row(*row), false};
    }
    return std::nullopt;
  }

  // Whether a fresh evaluation `e` would make its candidate this worker's new best.
  bool would_be_best(const Evaluation& e) const {
    return e.verdict == Verdict::Pass && e.median_seconds > 0 && seconds_of(e) < best_.seconds;
  }

  // A worker of a shared run claims the candidate before evaluating it: true when it is
  // this worker's to evaluate. One that another worker is evaluating is skipped (nullopt
  // from evaluated()), or with `wait` (the baseline, a warm start) waited for. `here`: to
  // time on this machine kind a candidate another kind evaluated.
  bool claimed(const std::string& hash, bool wait, bool here) {
    if (!options_.worker.on) return true;
    while (true) {
      const store::Claim claim = store_.claim(hash, options_.worker.lease_seconds, here);
      if (claim == store::Claim::Ours) return true;
      if (claim == store::Claim::Evaluated || !wait || interrupted_()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // The candidate in the run database (added if new) and its evaluation: stored if it
  // was ever evaluated, else evaluated now (and, with `may_confirm`, confirmed when it
  // would be the new best) and stored before returning. nullopt: another worker of a
  // shared run is evaluating it (claimed).
  // In a run of several machine kinds, a candidate another kind evaluated is timed again
  // on this one when it must be (`wait`: the baseline, the clock of this kind; a warm
  // start) or when its time there would make it this kind's new best: the best of a kind
  // is always one timed (and confirmed) on it. Otherwise the other kind's evaluation
  // stands in (its ratio to that kind's baseline on this kind's clock).
  std::optional<std::pair<int64_t, Evaluation>> evaluated(
      const Candidate& c, int64_t parent, bool may_confirm,
      std::optional<double> predicted = std::nullopt, const GiveUp& give_up = {},
      bool wait = false) {
    const std::string hash = sha256_hex(c.source);
    const std::optional<Stored> found = stored(hash);
    if (found && (found->here || !(wait || would_be_best(found->evaluation))))
      return std::make_pair(found->id, found->evaluation);
    const bool elsewhere = found.has_value();  // evaluated on another machine kind only
    if (!claimed(hash, wait, elsewhere)) {
      if (auto again = stored(hash); again && (again->here || !elsewhere))
        return std::make_pair(again->id, again->evaluation);
      ++claimed_elsewhere_;
      return std::nullopt;
    }
    store::Candidate row;
    row.hash = hash;
    row.source = c.source;
    row.schedule = c.schedule;
    row.rewrites = c.rewrites;
    row.parent = parent;
    row.proposer = c.proposer;
    row.predicted = predicted;
    const int64_t id = store_.add_candidate(row);
    const Evaluation e = evaluator_.evaluate_paced(c, give_up);
    ++evaluations_;
    given_up_ += e.verdict == Verdict::TooSlow ? 1 : 0;
    // A stored evaluation never needs confirming: one that made its candidate the best
    // was confirmed in the same transaction, and any other was slower than the best of
    // its time, which only gets faster.
    if (may_confirm && options_.confirm_new_best && would_be_best(e))
      if (auto confirmed = confirm(id, c, e)) return std::make_pair(id, *confirmed);
    store_.add_evaluation(to_row(id, e, 0));
    return std::make_pair(id, e);
  }

  // Thrown when the run is interrupted while waiting for another worker's evaluation.
  struct Stopped {};

  // evaluated() for what must be evaluated before the chains start (the baseline, a warm
  // start): waits for another worker's evaluation of it.
  std::pair<int64_t, Evaluation> evaluated_now(const Candidate& c, bool may_confirm) {
    if (auto r = evaluated(c, 0, may_confirm, std::nullopt, {}, true)) return *r;
    throw Stopped();
  }

  // What the event says about a comparison other processes disturbed.
  static std::string contention(const Comparison& c) {
    if (!c.contended) return "";
    char text[160];
    std::snprintf(text, sizeof text,
                  "; other processes kept %.2f CPUs busy in each of %d attempts, so at most x1",
                  c.others_cpus, c.attempts);
    return text;
  }

  // Times a candidate whose first evaluation `first` makes it the new best again, side by
  // side with the current best and longer (Evaluator::compare), and writes both
  // evaluations (the confirmed one last: it is the one that counts) and an event in one
  // transaction, so a run stopped in between evaluates and confirms it again. nullopt
  // (nothing written) when the evaluator cannot compare.
  std::optional<Evaluation> confirm(int64_t id, const Candidate& c, const Evaluation& first) {
    const std::optional<Comparison> cmp = evaluator_.compare(c, best_.candidate);
    if (!cmp) return std::nullopt;
    Evaluation e = first;  // the verdict and certificate of its verification
    e.eval_seconds = cmp->seconds;
    e.rounds = cmp->rounds;
    const double claimed = seconds_of(first);
    char text[512];
    bool held = false;
    if (cmp->verdict != Verdict::Pass) {
      e.verdict = cmp->verdict;
      e.penalty = 1;
      e.median_seconds = e.min_seconds = e.mad_seconds = e.ratio_vs_baseline = 0;
      e.message = "while confirmed against the best (candidate " + std::to_string(best_.id) +
                  "): " + cmp->message;
      std::snprintf(text, sizeof text, "candidate %lld, first timed at %.4g ms: %s while confirmed",
                    static_cast<long long>(id), claimed * 1e3, verify::verdict_name(cmp->verdict));
    } else {
      // Conservative: the newcomer has to be faster both by the median per-round ratio
      // and by its fastest call against the best's (a stall only ever adds time, so a
      // kernel stalled in most rounds still shows its true speed in its fastest calls).
      // A comparison that other processes disturbed in every attempt cannot make a new
      // best: its ratio counts as 1 at most (as fast as the best, not faster).
      const double ratio =
          std::max(std::max(cmp->ratio, cmp->min_ratio), cmp->contended ? 1.0 : 0.0);
      held = ratio < 1;
      e.median_seconds = cmp->median_seconds;
      e.min_seconds = cmp->min_seconds;
      e.mad_seconds = cmp->mad_seconds;
      e.ratio_vs_baseline = best_.seconds / baseline_seconds_ * ratio;
      std::snprintf(text, sizeof text,
                    "candidate %lld, first timed at %.4g ms (x%.3f of the baseline), side by side "
                    "with the best "
                    "(candidate %lld, %.4g ms) over %d rounds: x%.3f (per-round median x%.3f, "
                    "fastest calls x%.3f%s) "
                    "= %.4g ms; %s",
                    static_cast<long long>(id), claimed * 1e3, first.ratio_vs_baseline,
                    static_cast<long long>(best_.id), best_.seconds * 1e3, cmp->rounds, ratio,
                    cmp->ratio, cmp->min_ratio, contention(*cmp).c_str(),
                    best_.seconds * ratio * 1e3,
                    held             ? "the new best"
                    : cmp->contended ? "not trusted as a new best (the machine was busy)"
                                     : "not faster than the best (the first timing was noise)");
      e.message =
          std::string("confirmed: ") + text + (cmp->message == "ok" ? "" : " " + cmp->message);
    }
    auto tx = store_.transaction();
    store_.add_evaluation(to_row(id, first, 0));
    store_.add_evaluation(to_row(id, e, 0));
    store_.add_event(held ? "confirm" : "not-confirmed", text);
    tx.commit();
    return e;
  }

  State state_of(int64_t id, const Candidate& c, const Evaluation& e, double parent_seconds) const {
    State s;
    s.id = id;
    s.candidate = c;
    s.passed = e.verdict == Verdict::Pass;
    s.seconds = s.passed ? seconds_of(e) : parent_seconds;
    s.penalty = e.penalty;
    s.cost = cost_of(e, parent_seconds);
    return s;
  }

  // The baseline first (a new run), then each chain's current candidate: the last step
  // it took, or the baseline.
  void start_chains() {
    const Candidate baseline = baseline_candidate(graph_);
    auto [base_id, base_eval] = evaluated_now(baseline, false);
    if (base_eval.verdict == Verdict::Weak)
      throw UserError(
          "the spec's own baseline kernel gets a weak verdict, so no kernel's pass would mean "
          "much: " +
          base_eval.message +
          ". Check what overflows (`ollie eval` names the elements without a bound), or pass "
          "--accept-weak to search anyway");
    if (base_eval.verdict != Verdict::Pass)
      throw InternalError(
          "the baseline kernel (the default schedule) does not pass the verifier: " +
          base_eval.message);
    baseline_seconds_ = base_eval.median_seconds;
    if (model_)
      if (auto inputs = model_->inputs_of(baseline)) learn(*inputs, base_eval);
    const State base = state_of(base_id, baseline, base_eval, baseline_seconds_);
    baseline_state_ = base;
    // The best on the chain's clock (the ratio to the baseline), among the fastest by
    // their own medians (as `ollie optimize` picks its result).
    best_ = {base_id, baseline, baseline_seconds_};
    evaluate_warm_starts();
    refresh_best();
    // A chain without steps starts from the baseline, or from a warm start (or recipe
    // start) that beat it. A worker joining a shared run starts its chains from the run's
    // best.
    State start = base;
    if (best_.candidate.proposer == "warm-start" || best_.candidate.proposer == "recipe" ||
        options_.worker.on)
      if (auto e = store_.evaluation_here(best_.id))
        start = state_of(best_.id, best_.candidate, evaluation_from_row(*e), baseline_seconds_);
    for (int chain = 0; chain < options_.chains; ++chain) {
      State s = start;
      if (auto last = store_.last_step(options_.worker.first_chain + chain)) {
        const auto c = store_.candidate(last->current);
        const auto e = c ? store_.evaluation_of(c->id) : std::nullopt;
        if (c && e) {
          // The cost the chain held: the proposal's when accepted, else the previous one;
          // a failing state's time is the parent's, recovered from that cost.
          const double held = last->accepted ? last->cost_proposed : last->cost_current;
          const Evaluation ev = evaluation_from_row(*e);
          const double parent =
              std::exp(held - options_.penalty_weight * std::max(ev.penalty, 1e-3));
          const double parent_seconds = ev.verdict == Verdict::Pass ? baseline_seconds_ : parent;
          s = state_of(c->id, from_row(*c), ev, parent_seconds);
        }
      }
      current_.push_back(s);
      since_best_.push_back(0);
    }
  }

  // The run's best from the database: among the fastest by their own medians, the best
  // on the chain's clock (other workers of a shared run find bests too).
  void refresh_best() {
    for (const auto& [c, e] : store_.best(20))
      if (const double s = seconds_of(evaluation_from_row(e)); s < best_.seconds)
        best_ = {c.id, from_row(c), s};
  }

  // Each warm start evaluated like a proposal (confirmed when it would be the new best),
  // its result written as a "warm-start" event and told to on_warm_start.
  void evaluate_warm_starts() {
    for (const WarmStart& w : options_.warm_starts) {
      auto [id, e] = evaluated_now(w.candidate, true);
      const std::string line = warm_start_line(w, id, e);
      store_.add_event("warm-start", line);
      if (options_.on_warm_start) options_.on_warm_start(line);
      if (e.verdict == Verdict::Pass && e.median_seconds > 0 && seconds_of(e) < best_.seconds)
        best_ = {id, w.candidate, seconds_of(e)};
    }
  }

  // One proposal for `chain`, evaluated, accepted or rejected, and written down.
  bool one_step(int64_t step, int chain) {
    std::mt19937_64 rng(mix(options_.seed, static_cast<uint64_t>(step)));
    State& cur = current_[static_cast<size_t>(chain)];
    std::optional<Candidate> proposal;
    std::discrete_distribution<size_t> which(weights_.begin(), weights_.end());
    std::vector<bool> asked(proposers_.size(), false);
    size_t from = 0;  // the proposer of `proposal`
    auto ask = [&](size_t p) {
      asked[p] = true;
      try {
        proposal = proposers_[p]->propose(cur, rng());
        from = p;
      } catch (const UserError& e) {
        store_.add_event("proposer-error", proposers_[p]->name() + ": " + e.what());
      } catch (const std::exception& e) {
        // A bug in a proposer (an InternalError from a rule or a schedule move) costs this
        // proposal, not a run of many hours; the event says what to report.
        store_.add_event("proposer-error",
                         proposers_[p]->name() +
                             ": internal error (a bug in ollie, please report it): " + e.what());
      }
    };
    for (int tries = 0; tries < 4 && !proposal; ++tries) ask(which(rng));
    if (!proposal && is_free_form(cur.candidate)) {
      // Only some proposers (the llm) can move a free-form kernel: ask each one not asked
      // yet before giving up on it; when none can (the llm proposer stopped, e.g. its
      // budget is spent), the chain goes on from a scheduled candidate.
      for (size_t p = 0; p < proposers_.size() && !proposal; ++p)
        if (weights_[p] > 0 && !asked[p]) ask(p);
      if (!proposal) restart_scheduled(chain, rng);
    }
    if (!proposal) return false;
    CostModel::Choice choice;
    if (model_) {
      choice = screened(*proposal, from, cur, step);
      proposal = choice.candidate;
    }
    const int64_t evaluated_before = evaluations_;
    const double t = temperatures_[static_cast<size_t>(chain)];
    const auto result = evaluated(*proposal, cur.id, true, choice.predicted, give_up_for(cur, t));
    if (!result) return false;  // another worker is evaluating it
    const auto& [id, e] = *result;
    if (model_ && choice.inputs && evaluations_ > evaluated_before) learn(*choice.inputs, e);
    const State next = state_of(id, *proposal, e, cur.seconds);
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    // A candidate given up on as too slow was never verified: never accepted.
    const bool accept = e.verdict != Verdict::TooSlow &&
                        (next.cost <= cur.cost || u < std::exp(-(next.cost - cur.cost) / t));
    store::Step row;
    row.step = step;
    row.chain = options_.worker.first_chain + chain;
    row.proposed = id;
    row.accepted = accept;
    row.temperature = t;
    row.cost_current = cur.cost;
    row.cost_proposed = next.cost;
    row.note =
        proposal->proposer + ": " + proposal->move + " -> " + verify::verdict_name(e.verdict);
    if (choice.screened_out > 0)
      row.note += " (the cost model's pick of " + std::to_string(choice.screened_out + 1) + ")";
    row.current = accept ? id : cur.id;
    store_.add_step(row);
    ++steps_;
    last_ = "chain " + std::to_string(chain) + " " + row.note + (accept ? " (accepted)" : "");
    if (accept) {
      ++accepted_;
      cur = next;
    }
    size_t& stale = since_best_[static_cast<size_t>(chain)];
    if (next.passed && next.seconds < best_.seconds) {
      best_ = {id, *proposal, next.seconds};
      stale = 0;
    } else if (++stale > static_cast<size_t>(options_.restart_after)) {
      restart(chain, rng);
      stale = 0;
    }
    return true;
  }

  // The cost model's pick among more proposals of proposer `p` from `cur` (CostModel::
  // choose). Its draws come from a stream of their own, so the step's stream draws as it
  // would without the model; a proposer that throws for an extra proposal loses that one
  // (the first proposal's errors are recorded as events).
  CostModel::Choice screened(const Candidate& first, size_t p, const State& cur, int64_t step) {
    auto more = [&](uint64_t seed) -> std::optional<Candidate> {
      try {
        return proposers_[p]->propose(cur, seed);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    };
    auto is_new = [&](const Candidate& c) {
      const auto row = store_.candidate_by_hash(sha256_hex(c.source));
      return !row || !store_.evaluation_of(row->id);
    };
    return model_->choose(first, proposers_[p]->cheap(), more, is_new,
                          mix(~options_.seed, static_cast<uint64_t>(step)));
  }

  // A fresh evaluation that measured a time teaches the cost model; one given up on as
  // too slow teaches the ratio its first calls showed (at least that slow).
  void learn(const std::vector<double>& inputs, const Evaluation& e) {
    if (e.verdict == Verdict::Pass && e.median_seconds > 0 && baseline_seconds_ > 0)
      model_->observe(inputs, std::log(seconds_of(e) / baseline_seconds_));
    else if (e.verdict == Verdict::TooSlow && e.ratio_vs_baseline > 0)
      model_->observe(inputs, std::log(e.ratio_vs_baseline));
  }

  // How slow a proposal from `cur` on a chain at temperature `t` may be before its
  // evaluation gives up on it (SearchOptions::give_up): slower than max(give_up, the
  // ratio whose acceptance probability is kAcceptedAtMost) times the chain's current
  // cost, it could neither be accepted (but with a smaller probability) nor be the best
  // (the best is at most the current state's time).
  GiveUp give_up_for(const State& cur, double t) const {
    if (options_.give_up <= 0 || baseline_seconds_ <= 0 || !std::isfinite(cur.cost)) return {};
    constexpr double kAcceptedAtMost = 1e-6;
    const double factor = std::max(options_.give_up, std::exp(-t * std::log(kAcceptedAtMost)));
    return {std::exp(cur.cost) * factor / baseline_seconds_, baseline_seconds_};
  }

  // From a random one of the best few verified candidates.
  void restart(int chain, std::mt19937_64& rng) {
    const auto best = store_.best(5);
    if (best.empty()) return;
    const auto& [c, e] = best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng)];
    current_[static_cast<size_t>(chain)] =
        state_of(c.id, from_row(c), evaluation_from_row(e), baseline_seconds_);
    store_.add_event("restart", "chain " + std::to_string(chain) + " restarts from candidate " +
                                    std::to_string(c.id));
  }

  // From a random one of the best few candidates that carry a schedule (the baseline
  // when there is none).
  void restart_scheduled(int chain, std::mt19937_64& rng) {
    std::vector<State> options;
    for (const auto& [c, e] : store_.best(50))
      if (const Candidate candidate = from_row(c); !is_free_form(candidate) && options.size() < 5)
        options.push_back(state_of(c.id, candidate, evaluation_from_row(e), baseline_seconds_));
    const State next =
        options.empty()
            ? baseline_state_
            : options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
    store_.add_event("restart", "chain " + std::to_string(chain) + " restarts from candidate " +
                                    std::to_string(next.id) +
                                    ": no proposer can move its free-form kernel");
    current_[static_cast<size_t>(chain)] = next;
  }

  const ir::Graph& graph_;
  store::Store& store_;
  Evaluator& evaluator_;
  std::vector<std::unique_ptr<Proposer>>& proposers_;
  SearchOptions options_;
  std::vector<double> temperatures_, weights_;
  std::vector<State> current_;
  State baseline_state_;
  std::vector<size_t> since_best_;
  double baseline_seconds_ = 0;
  // The run's best passing candidate so far (the baseline until one beats it).
  struct Best {
    int64_t id = 0;
    Candidate candidate;
    double seconds = 0;
  } best_;
  int64_t evaluations_ = 0, steps_ = 0, accepted_ = 0;
  int64_t given_up_ = 0;  // evaluations this session that gave up (TooSlow)
  std::string last_;
  std::optional<CostModel> model_;  // SearchOptions::cost_model
  int64_t claimed_elsewhere_ = 0;   // proposals another worker was evaluating
  std::function<bool()> interrupted_ = [] { return false; };
};

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::TimeBudget: return "time budget spent";
    case StopReason::EvalBudget: return "evaluation budget spent";
    case StopReason::Interrupted: return "interrupted";
    case StopReason::NoProposals: return "no proposer could propose anything";
    case StopReason::Finalize: return "not searched: --finalize writes the run's best";
  }
  return "unknown";
}

StopReason run_chains(const ir::Graph& graph, store::Store& store, Evaluator& evaluator,
                      std::vector<std::unique_ptr<Proposer>>& proposers,
                      const SearchOptions& options, const std::function<bool()>& interrupted,
                      const std::function<void(const Progress&)>& progress) {
  if (proposers.empty())
    throw UserError("no proposers: name at least one with --proposers (e.g. mutate)");
  if (options.chains < 1) throw UserError("--chains must be at least 1");
  Chains chains(graph, store, evaluator, proposers, options);
  return chains.run(interrupted, progress);
}

}  // namespace ollie::search
