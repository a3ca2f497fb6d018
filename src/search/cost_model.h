// The search's cost model (docs/search.md, "The cost model"): a ridge regression from the
// features of a candidate's loop nest (loops/features.h) to log(time / baseline time),
// learned during the run from its own evaluations, that picks the most promising of
// several cheap proposals so that only that one is compiled, verified and timed. Also
// the rank correlation that says how well it predicted, read from the run database.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loops/features.h"
#include "loops/loops.h"
#include "search/rewritten.h"
#include "search/search.h"

namespace ollie::store {
class Store;
}

namespace ollie::search {

// Least squares with an L2 penalty on standardized inputs and a free intercept, from
// running sums (memory and refit cost do not grow with the samples). Inputs that do not
// vary get weight 0. Before fit() (or with fewer than 2 samples) it predicts the mean.
class RidgeRegression {
 public:
  RidgeRegression(size_t inputs, double lambda);
  void add(const std::vector<double>& x, double y);
  void fit();
  double predict(const std::vector<double>& x) const;
  int64_t samples() const { return n_; }
  // In the inputs' own units: y = intercept + sum(weights[i] * x[i]).
  const std::vector<double>& weights() const { return w_; }
  double intercept() const { return b_; }

 private:
  size_t d_;
  double lambda_;
  int64_t n_ = 0;
  std::vector<double> sx_, sxx_, sxy_;  // sums of x, x x^T (row-major), x y
  double sy_ = 0;
  std::vector<double> w_;
  double b_ = 0;
};

// Spearman's rank correlation (ties get their average rank); NaN with fewer than 2 pairs
// or when either side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// What the model reads of a kernel's features, one value per name (logs of sizes, and
// fractions of the work: flops plus elements accessed, by store).
const std::vector<std::string>& cost_model_input_names();
std::vector<double> cost_model_inputs(const loops::KernelFeatures& f, const loops::Target& target);

// The model of one session of a run.
class CostModel {
 public:
  CostModel(const ir::Graph& spec, CostModelOptions options,
            loops::Target target = loops::host_target());
  // The candidate's inputs: its rewritten graph lowered with its schedule. nullopt for
  // free-form source (no schedule) or one that does not lower.
  std::optional<std::vector<double>> inputs_of(const Candidate& c);
  // Trained on enough evaluations to screen.
  bool ready() const;
  double predict(const std::vector<double>& inputs) const;
  // A measured candidate: log(time / baseline time). Refits every refit_every of them.
  void observe(const std::vector<double>& inputs, double log_ratio);

  struct Choice {
    Candidate candidate;
    std::optional<std::vector<double>> inputs;  // of `candidate`
    std::optional<double> predicted;            // when the model was ready
    int64_t screened_out = 0;                   // proposals left unevaluated
  };
  // Screening: `first` (the step's proposal from a proposer, `cheap` or not) and, when the
  // model is ready, the proposer is cheap and `first` has a schedule, candidates - 1 more
  // from `more(seed)` (seeds drawn from `seed`), of which those `is_new` (not evaluated
  // before) and readable compete: the lowest prediction wins, or with probability
  // `explore` a random one. Otherwise `first` as it is.
  Choice choose(const Candidate& first, bool cheap,
                const std::function<std::optional<Candidate>(uint64_t)>& more,
                const std::function<bool(const Candidate&)>& is_new, uint64_t seed);
  int64_t screened_out() const { return screened_out_; }
  int64_t observed() const { return regression_.samples(); }

 private:
  RewrittenGraphs graphs_;
  ir::DimBindings dims_;
  CostModelOptions options_;
  loops::Target target_;
  RidgeRegression regression_;
  bool fitted_ = false;
  int since_fit_ = 0;
  int64_t screened_out_ = 0;
};

// How well the run's stored predictions ranked its measured times.
struct CostModelAccuracy {
  int64_t candidates = 0;  // with a prediction and a measured time
  double spearman = 0;     // NaN when undefined (fewer than 2)
};
CostModelAccuracy cost_model_accuracy(const store::Store& store);

}  // namespace ollie::search
