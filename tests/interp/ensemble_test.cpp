// The honest ensemble (interp::evaluate_members, interp::tighten): its tolerance admits
// honest float32 implementations in several orders, rejects a result scaled by 1 + 1e-4,
// and is finite where the derived bound is infinite (a normalization of rows whose
// variance the worst case cannot tell from zero).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "interp/interp.h"
#include "spec/spec.h"
#include "verify/verify.h"

namespace {

using ollie::interp::Criteria;
using ollie::interp::EnsembleOptions;
using ollie::interp::Result;
using ollie::interp::Tensor;

ollie::ir::Graph spec(const std::string& source, const ollie::ir::DimBindings& dims) {
  ollie::spec::SpecOptions options;
  options.dim_overrides = dims;
  return ollie::spec::compile_spec("ensemble_test.py", source, options);
}

// The reference on `inputs`, tightened by the default ensemble (`alone`: the derived
// bound set to inf first, so the ensemble's tolerance is what remains).
Result tightened(const ollie::ir::Graph& g, const std::vector<Tensor>& inputs, uint64_t seed,
                 bool alone = false) {
  Result r = ollie::interp::evaluate(g, inputs);
  if (alone)
    for (auto& b : r.bounds) std::fill(b.data.begin(), b.data.end(), INFINITY);
  EnsembleOptions options;
  options.seed = seed;
  ollie::interp::tighten(r, ollie::interp::evaluate_members(g, inputs, 0, options.members, seed),
                         options);
  return r;
}

// Largest |got - want| / bound over the elements (inf when one is outside a zero bound).
double worst(const std::vector<double>& got, const Result& r) {
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i)
    w = std::max(w, std::fabs(got[i] - r.values[0].data[i]) / r.bounds[0].data[i]);
  return w;
}

// Softmax rows in float32: a sequential sum, a 16-lane blocked one, and an online one
// (running max, the sum rescaled as the max grows).
std::vector<double> float_softmax(const Tensor& x, int variant) {
  const int64_t rows = x.shape[0], n = x.shape[1];
  std::vector<double> out(x.data.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* in = x.data.data() + r * n;
    float m = -INFINITY, sum = 0;
    if (variant == 2) {
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(in[i]);
        if (v > m) {
          sum *= std::exp(m - v);
          m = v;
        }
        sum += std::exp(v - m);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<float>(in[i]));
      float lanes[16] = {};
      for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(static_cast<float>(in[i]) - m);
        if (variant == 0)
          sum += e;
        else
          lanes[i % 16] += e;
      }
      if (variant == 1)
        for (float l : lanes) sum += l;
    }
    for (int64_t i = 0; i < n; ++i)
      out[static_cast<size_t>(r * n + i)] = std::exp(static_cast<float>(in[i]) - m) / sum;
  }
  return out;
}

TEST(Ensemble, SoftmaxToleranceAdmitsFloatOrdersAndRejectsAScaleOf1e4) {
  const auto g = spec(R"(
import numpy as np
def softmax(x: "f32[R, N]") -> "f32[R, N]":
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
)",
                      {{"R", 16}, {"N", 2048}});
  const ollie::ir::Graph& bound = g;
  for (uint64_t seed : {1, 2, 3}) {
    const auto inputs =
        ollie::verify::make_inputs(bound, seed, ollie::verify::Distribution::Normal);
    const Result r = tightened(bound, inputs, seed, true);
    ASSERT_EQ(r.criteria.size(), 1u);
    EXPECT_EQ(r.criteria[0].ensemble, 16 * 2048);
    for (int variant = 0; variant < 3; ++variant) {
      const auto honest = float_softmax(inputs[0], variant);
      EXPECT_LT(worst(honest, r), 0.5) << "variant " << variant << ", seed " << seed;
      std::vector<double> scaled = honest;
      for (double& v : scaled) v *= 1 + 1e-4;
      EXPECT_GT(worst(scaled, r), 2) << "variant " << variant << ", seed " << seed;
    }
  }
}

// Six residual layers of a normalization, a matmul and exp(tanh(.)): the derived bound
// compounds through the normalizations until no element has a finite one (as on whole
// transformer blocks); the honest ensemble still bounds every element, a float32
// implementation is inside it, and one scaled by 1 + 1e-4 is not.
const char* const kDeep = R"(
import numpy as np

def norm(x):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + np.float32(1e-5))

def layer(x, w):
    return x + np.exp(np.tanh(norm(x) @ w))

def deep(x: "f32[R, N]", w: "f32[N, N]") -> "f32[R, N]":
    x = layer(layer(layer(layer(layer(layer(x, w), w), w), w), w), w)
    return norm(x)
)";

// The rows of x normalized in float32 (two passes), in place.
void float_norm(std::vector<float>& x, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = x.data() + r * n;
    float sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) sum += v[i];
    const float mean = sum / static_cast<float>(n);
    for (int64_t i = 0; i < n; ++i) sq += (v[i] - mean) * (v[i] - mean);
    const float sd = std::sqrt(sq / static_cast<float>(n) + 1e-5f);
    for (int64_t i = 0; i < n; ++i) v[i] = (v[i] - mean) / sd;
  }
}

std::vector<double> float_deep(const Tensor& xin, const Tensor& w) {
  const int64_t rows = xin.shape[0], n = xin.shape[1];
  std::vector<float> x(xin.data.begin(), xin.data.end()), h(x.size());
  for (int layer = 0; layer < 6; ++layer) {
    h = x;
    float_norm(h, rows, n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (int64_t k = 0; k < n; ++k)
          acc += h[static_cast<size_t>(r * n + k)] *
                 static_cast<float>(w.data[static_cast<size_t>(k * n + j)]);
        x[static_cast<size_t>(r * n + j)] += std::exp(std::tanh(acc));
      }
  }
  float_norm(x, rows, n);
  return {x.begin(), x.end()};
}

TEST(Ensemble, FiniteWhereTheDerivedBoundIsInfinite) {
  const auto g = spec(kDeep, {{"R", 8}, {"N", 256}});
  for (uint64_t seed : {7, 8}) {
    const auto inputs = ollie::verify::make_inputs(g, seed, ollie::verify::Distribution::Normal);
    const Result plain = ollie::interp::evaluate(g, inputs);
    int64_t infinite = 0;
    for (double b : plain.bounds[0].data) infinite += std::isinf(b);
    ASSERT_EQ(infinite, 8 * 256) << "the derived bound should be infinite everywhere here";

    const Result r = tightened(g, inputs, seed);
    EXPECT_EQ(r.criteria[0].unbounded, 0);
    EXPECT_EQ(r.criteria[0].ensemble, 8 * 256);
    const auto honest = float_deep(inputs[0], inputs[1]);
    EXPECT_LT(worst(honest, r), 0.5) << "seed " << seed;
    std::vector<double> scaled = honest;
    for (double& v : scaled) v *= 1 + 1e-4;
    EXPECT_GT(worst(scaled, r), 1) << "seed " << seed;
  }
}

TEST(Ensemble, WithoutMembersOnlyClassifies) {
  const auto g = spec(R"(
import numpy as np
def f(x: "f32[N]") -> ("f32[N]", "f32[N]"):
    return np.exp(x), np.maximum(x, 0.0)
)",
                      {{"N", 64}});
  const ollie::ir::Graph& bound = g;
  const auto inputs = ollie::verify::make_inputs(bound, 3, ollie::verify::Distribution::Normal);
  Result r = ollie::interp::evaluate(bound, inputs);
  const auto before = r.bounds;
  ollie::interp::tighten(r, {}, EnsembleOptions{});
  EXPECT_FALSE(r.tightened);
  EXPECT_EQ(r.bounds[0].data, before[0].data);
  EXPECT_EQ(r.criteria[0].derived, 64);
  EXPECT_EQ(r.criteria[1].exact, 64) << "a max is exact";
}

}  // namespace
