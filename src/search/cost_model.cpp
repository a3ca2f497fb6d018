// The cost model (cost_model.h): the model's inputs from a kernel's features, the ridge
// regression behind it, the screening of a step's proposals, and Spearman's rank
// correlation of its stored predictions with the measured times.
#include "search/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "store/store.h"
#include "support/error.h"

namespace ollie::search {

// ---- the regression

RidgeRegression::RidgeRegression(size_t inputs, double lambda)
    : d_(inputs), lambda_(lambda), sx_(inputs), sxx_(inputs * inputs), sxy_(inputs), w_(inputs) {}

void RidgeRegression::add(const std::vector<double>& x, double y) {
  OLLIE_CHECK(x.size() == d_, "RidgeRegression::add: wrong number of inputs");
  ++n_;
  sy_ += y;
  for (size_t i = 0; i < d_; ++i) {
    sx_[i] += x[i];
    sxy_[i] += x[i] * y;
    for (size_t j = 0; j < d_; ++j) sxx_[i * d_ + j] += x[i] * x[j];
  }
}

namespace {

// Solves A z = r for a symmetric positive definite A (k x k, row-major) by Cholesky;
// false when A is not positive definite.
bool cholesky_solve(std::vector<double> a, std::vector<double>& r, size_t k) {
  for (size_t j = 0; j < k; ++j) {
    double d = a[j * k + j];
    for (size_t p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
    if (!(d > 0)) return false;
    a[j * k + j] = std::sqrt(d);
    for (size_t i = j + 1; i < k; ++i) {
      double s = a[i * k + j];
      for (size_t p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
      a[i * k + j] = s / a[j * k + j];
    }
  }
  for (size_t i = 0; i < k; ++i) {  // L y = r
    for (size_t p = 0; p < i; ++p) r[i] -= a[i * k + p] * r[p];
    r[i] /= a[i * k + i];
  }
  for (size_t i = k; i-- > 0;) {  // L^T z = y
    for (size_t p = i + 1; p < k; ++p) r[i] -= a[p * k + i] * r[p];
    r[i] /= a[i * k + i];
  }
  return true;
}

}  // namespace

void RidgeRegression::fit() {
  std::fill(w_.begin(), w_.end(), 0.0);
  if (n_ == 0) return;
  const double n = static_cast<double>(n_);
  const double my = sy_ / n;
  b_ = my;
  if (n_ < 2) return;
  // Covariances from the sums; inputs that vary are standardized and solved for.
  std::vector<double> mx(d_), sd(d_);
  std::vector<size_t> active;
  for (size_t i = 0; i < d_; ++i) {
    mx[i] = sx_[i] / n;
    const double var = sxx_[i * d_ + i] / n - mx[i] * mx[i];
    sd[i] = var > 1e-12 * (1 + mx[i] * mx[i]) ? std::sqrt(var) : 0;
    if (sd[i] > 0) active.push_back(i);
  }
  const size_t k = active.size();
  if (k == 0) return;
  // (n R + lambda I) beta = n r, with R the inputs' correlations and r their covariance
  // with y over their deviations.
  std::vector<double> a(k * k), r(k);
  for (size_t p = 0; p < k; ++p) {
    const size_t i = active[p];
    r[p] = n * (sxy_[i] / n - mx[i] * my) / sd[i];
    for (size_t q = 0; q < k; ++q) {
      const size_t j = active[q];
      a[p * k + q] = n * (sxx_[i * d_ + j] / n - mx[i] * mx[j]) / (sd[i] * sd[j]);
    }
    a[p * k + p] += lambda_;
  }
  if (!cholesky_solve(std::move(a), r, k)) return;  // predicts the mean
  for (size_t p = 0; p < k; ++p) {
    const size_t i = active[p];
    w_[i] = r[p] / sd[i];
    b_ -= w_[i] * mx[i];
  }
}

double RidgeRegression::predict(const std::vector<double>& x) const {
  OLLIE_CHECK(x.size() == d_, "RidgeRegression::predict: wrong number of inputs");
  double y = b_;
  for (size_t i = 0; i < d_; ++i) y += w_[i] * x[i];
  return y;
}

// ---- Spearman

namespace {

// 1-based ranks, ties given the average of the ranks they span.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double average = (static_cast<double>(i + j) / 2) + 1;
    for (size_t p = i; p <= j; ++p) r[order[p]] = average;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() != b.size() || a.size() < 2) return nan;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;  // of ranks 1..n either way
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : nan;
}

CostModelAccuracy cost_model_accuracy(const store::Store& store) {
  std::vector<double> predicted, measured;
  for (const auto& [p, ratio] : store.predictions()) {
    predicted.push_back(p);
    measured.push_back(std::log(ratio));
  }
  return {static_cast<int64_t>(predicted.size()), spearman(predicted, measured)};
}

// ---- the inputs

const std::vector<std::string>& cost_model_input_names() {
  static const std::vector<std::string> names = {"log2 flops",
                                                 "log2 bytes",
                                                 "log2 accessed bytes",
                                                 "vectorized",
                                                 "lanes used",
                                                 "accumulated",
                                                 "log2 accumulators",
                                                 "log2 innermost trip",
                                                 "log2 reuse bytes",
                                                 "reuse beyond L1",
                                                 "parallel",
                                                 "parallel efficiency",
                                                 "log2 parallel regions",
                                                 "unrolled",
                                                 "log2 unroll factor",
                                                 "log2 stores",
                                                 "log2 local bytes"};
  return names;
}

std::vector<double> cost_model_inputs(const loops::KernelFeatures& f, const loops::Target& target) {
  auto lg = [](double x) { return std::log2(1 + std::max(0.0, x)); };
  const double lanes = std::max(1, target.vector_bytes / 4);  // f32 lanes
  const double cores = std::max(1, target.cores);
  constexpr double kL1 = 32 * 1024;
  // Averages over the stores weighted by their work (flops and elements accessed).
  double work = 0, vectorized = 0, used = 0, accumulated = 0, innermost = 0, reuse = 0, beyond = 0,
         parallel = 0, efficiency = 0, unrolled = 0, unroll = 0;
  for (const auto& s : f.stores) {
    const double w = s.flops + s.accessed_bytes / 4 + 1e-9;
    work += w;
    if (s.vector_lanes > 0) vectorized += w;
    used += w * std::min(static_cast<double>(s.vector_lanes), lanes) / lanes;
    if (s.accumulator_elements > 0) accumulated += w;
    innermost += w * lg(static_cast<double>(s.innermost_trip));
    reuse += w * lg(s.reuse_bytes);
    if (s.reuse_bytes > kL1) beyond += w;
    const double extent = static_cast<double>(s.parallel_extent);
    if (extent > 0) parallel += w;
    efficiency += w * (extent > 0 ? extent / (std::ceil(extent / cores) * cores) : 1 / cores);
    if (s.unrolled_loops > 0) unrolled += w;
    unroll += w * lg(static_cast<double>(s.unroll_factor));
  }
  const double total = std::max(work, 1e-9);
  return {lg(f.flops),
          lg(f.bytes),
          lg(f.accessed_bytes),
          vectorized / total,
          used / total,
          accumulated / total,
          lg(static_cast<double>(f.accumulator_elements)),
          innermost / total,
          reuse / total,
          beyond / total,
          parallel / total,
          efficiency / total,
          lg(static_cast<double>(f.parallel_regions)),
          unrolled / total,
          unroll / total,
          lg(static_cast<double>(f.stores.size())),
          lg(static_cast<double>(f.local_bytes))};
}

// ---- the model

CostModel::CostModel(const ir::Graph& spec, CostModelOptions options, loops::Target target)
    : graphs_(spec),
      dims_(spec.bound_dims),
      options_(options),
      target_(target),
      regression_(cost_model_input_names().size(), options.ridge) {}

std::optional<std::vector<double>> CostModel::inputs_of(const Candidate& c) {
  if (is_free_form(c)) return std::nullopt;
  try {
    const ir::Graph& graph = graphs_.at(c.rewrites);
    const loops::Kernel k = loops::lower(graph, loops::parse_schedule(c.schedule, "<candidate>"));
    return cost_model_inputs(loops::kernel_features(k, dims_), target_);
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable: it goes unscreened
  }
}

bool CostModel::ready() const {
  return fitted_ && regression_.samples() >= options_.min_evaluations;
}

double CostModel::predict(const std::vector<double>& inputs) const {
  return regression_.predict(inputs);
}

void CostModel::observe(const std::vector<double>& inputs, double log_ratio) {
  if (!std::isfinite(log_ratio)) return;
  regression_.add(inputs, log_ratio);
  if (regression_.samples() < options_.min_evaluations) return;
  if (!fitted_ || ++since_fit_ >= options_.refit_every) {
    regression_.fit();
    fitted_ = true;
    since_fit_ = 0;
  }
}

CostModel::Choice CostModel::choose(const Candidate& first, bool cheap,
                                    const std::function<std::optional<Candidate>(uint64_t)>& more,
                                    const std::function<bool(const Candidate&)>& is_new,
                                    uint64_t seed) {
  Choice choice{first, inputs_of(first), std::nullopt, 0};
  if (ready() && choice.inputs) choice.predicted = predict(*choice.inputs);
  if (!ready() || !choice.inputs || !cheap || options_.candidates <= 1) return choice;
  struct Option {
    Candidate candidate;
    std::vector<double> inputs;
    double predicted;
  };
  std::vector<Option> pool;
  std::set<std::string> sources{first.source};
  if (is_new(first)) pool.push_back({first, *choice.inputs, *choice.predicted});
  std::mt19937_64 rng(seed);
  for (int i = 1; i < options_.candidates; ++i) {
    const std::optional<Candidate> c = more(rng());
    if (!c || !sources.insert(c->source).second || !is_new(*c)) continue;
    if (auto inputs = inputs_of(*c)) pool.push_back({*c, *inputs, predict(*inputs)});
  }
  if (pool.empty()) return choice;  // nothing new to choose: the step goes on as proposed
  size_t pick = 0;
  for (size_t i = 1; i < pool.size(); ++i)
    if (pool[i].predicted < pool[pick].predicted) pick = i;
  if (std::uniform_real_distribution<double>(0, 1)(rng) < options_.explore)
    pick = std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng);
  choice = {pool[pick].candidate, pool[pick].inputs, pool[pick].predicted,
            static_cast<int64_t>(pool.size()) - 1};
  screened_out_ += choice.screened_out;
  return choice;
}

}  // namespace ollie::search
