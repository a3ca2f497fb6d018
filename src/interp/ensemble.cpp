// The honest ensemble (docs/error-bounds.md, "The honest ensemble"): members that
// evaluate the graph as an honest implementation in its dtypes would, with Monte Carlo
// arithmetic (every rounding op's result perturbed by a random error of its own size;
// sums and contractions by the error of an ordered sum of their terms), and the
// tolerance their spread sets per element, which tightens the derived bound wherever
// that is looser or infinite.
#include <cfloat>
#include <cmath>
#include <limits>

#include "interp/kernels.h"
#include "support/random.h"

namespace ollie::interp {

namespace detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per output element, the sum of the squares of the terms a Reduce sum or a Contract
// adds up (the same op on squared operands, evaluated without rounding or bound work).
std::vector<double> squared_terms(const ir::Node& n, const Value& a, const Value* b,
                                  const std::vector<int64_t>& shape) {
  const ir::Node plain = values_only(n);
  auto squared = [](const Value& x) {
    Value s;
    s.t = x.t;
    s.t.dtype = ir::DType::I64;
    for (double& v : s.t.data) v *= v;
    return s;
  };
  if (n.kind == ir::OpKind::Contract) return eval_contract(plain, squared(a), squared(*b)).t.data;
  return reduce(plain, squared(a), shape).t.data;
}

// The standard deviation of the rounding error of an ordered sum of n terms whose
// squares add to `p2` and whose sum is `s`: each term may round (a product) and each
// partial sum s_j does, each by a relative error uniform in [-u, u] (variance u²/3), so
// the variance is u²/3 (Σ t_k² + Σ_j s_j²). For terms in a random order,
// Σ_j s_j² ≈ (n + 1)/6 (Σ t_k² - s²/n) + n s²/3 (a random walk plus the drift of a
// nonzero mean).
double ordered_sum_sigma(double u, double n, double p2, double s) {
  const double spread = std::max(p2 - s * s / n, 0.0);
  const double partial = (n + 1) / 6 * spread + n * s * s / 3;
  return u * std::sqrt((p2 + partial) / 3);
}

bool rounds(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::Input:
    case ir::OpKind::Iota:
    case ir::OpKind::Neg:
    case ir::OpKind::Abs:
    case ir::OpKind::Max:
    case ir::OpKind::Min:
    case ir::OpKind::Select:
    case ir::OpKind::Broadcast:
    case ir::OpKind::Reshape:
    case ir::OpKind::Transpose:
    case ir::OpKind::Slice:
    case ir::OpKind::Concat:
    case ir::OpKind::Gather: return false;
    default: return true;
  }
}

}  // namespace

void perturb(const ir::Node& n, Value& v, const std::vector<const Value*>& args,
             const std::vector<int64_t>& shape, Member& member, size_t index) {
  const bool exact_in = v.e.empty();
  std::vector<double> e = std::move(v.e);
  v.e.clear();
  v.lo.clear();
  if (!ir::is_float(n.dtype) || !rounds(n.kind)) return;
  if (n.kind == ir::OpKind::Reduce && n.reduce != ir::ReduceKind::Sum) return;
  auto& x = v.t.data;
  if (n.kind == ir::OpKind::Const || (n.kind == ir::OpKind::Convert && n.weak)) {
    // A literal the dtype cannot hold: every implementation holds the same rounded value.
    for (double& c : x) c = round_to(n.dtype, c);
    return;
  }
  const double u = rounding_unit(n.dtype);
  random::Xoshiro256 g(member.seed, index);
  if (n.kind == ir::OpKind::Reduce || n.kind == ir::OpKind::Contract) {
    auto cached = member.squared_terms.find(index);
    if (cached == member.squared_terms.end())
      cached = member.squared_terms
                   .emplace(index,
                            squared_terms(n, *args[0], args.size() > 1 ? args[1] : nullptr, shape))
                   .first;
    const std::vector<double>& p2 = cached->second;
    // The number of terms each output element adds up: the reduced (summed) extents.
    double terms = 1;
    if (n.kind == ir::OpKind::Reduce) {
      for (int a : n.axes) terms *= static_cast<double>(args[0]->t.shape[static_cast<size_t>(a)]);
    } else {
      auto summed = [&](const std::vector<int>& labels, const Value& operand, size_t i) {
        const int l = labels[i];
        const bool kept = std::count(n.out_labels.begin(), n.out_labels.end(), l) > 0;
        const bool first =
            std::find(labels.begin(), labels.end(), l) == labels.begin() + static_cast<long>(i);
        return !kept && first ? static_cast<double>(operand.t.shape[i]) : 1.0;
      };
      for (size_t i = 0; i < n.lhs_labels.size(); ++i) terms *= summed(n.lhs_labels, *args[0], i);
      for (size_t i = 0; i < n.rhs_labels.size(); ++i)
        if (std::count(n.lhs_labels.begin(), n.lhs_labels.end(), n.rhs_labels[i]) == 0)
          terms *= summed(n.rhs_labels, *args[1], i);
    }
    // A random sign rather than a normal draw: each member then moves the sum by exactly
    // its standard deviation, so a few members measure an error that a whole row shares
    // (a softmax's sum, a norm's variance) without the chance of all drawing it small.
    // A contraction's products below the normal range round absolutely (gradual
    // underflow: uniform within half the smallest subnormal, variance eta²/12 each), which
    // the relative model misses where every product is that small.
    const double eta = n.kind == ir::OpKind::Contract ? underflow_unit(n.dtype) : 0.0;
    const double absolute = eta * std::sqrt(terms / 12);
    for (size_t i = 0; i < x.size(); ++i) {
      const double sign = (g.next() >> 63) ? 1.0 : -1.0;
      const double relative = ordered_sum_sigma(u, terms, p2[i], x[i]);
      const double sigma = p2[i] > 0 ? std::hypot(relative, absolute) : relative;
      if (std::isfinite(x[i])) x[i] += sign * sigma;
    }
  } else if (!exact_in) {
    // One rounding (or a library function's few ulps): the op's own bound on exact
    // operands is that error's size; perturb by a uniform share of it (an ExpContract's
    // by a share of its bound over λ), drawn by hashing the element's index (branch free,
    // so the loop vectorizes).
    const double library = kLibraryUlps * u;
    const double shrink = n.kind == ir::OpKind::ExpContract ? 1 / kLambda : 1.0;
    const uint64_t base = g.next();
    double* __restrict y = x.data();
    const double* __restrict size = e.data();
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi =
          static_cast<double>(static_cast<int64_t>(random::mix64(base + i)) >> 11) * 0x1p-52;
      const double s = std::isfinite(size[i]) ? size[i] * shrink : library * std::fabs(y[i]);
      const double moved = y[i] + xi * s;
      y[i] = std::isfinite(y[i]) ? moved : y[i];
    }
  }
  const double top = ir::largest_finite(n.dtype);
  for (double& y : x)
    if (std::fabs(y) > top) y = std::copysign(kInf, y);  // an honest f32 result overflows
}

}  // namespace detail

namespace {

// Per element of `value`, the ensemble's tolerance: `multiple` times the spread (the RMS of
// the members' deviations `sq` summed over `members`, at least `row_share` of its row's and
// u·|r|); inf where a member was not finite (`lost`).
std::vector<double> tolerances(const Tensor& value, const std::vector<double>& sq,
                               const std::vector<uint8_t>& lost, size_t members,
                               const EnsembleOptions& options) {
  const auto& r = value.data;
  const size_t size = r.size();
  std::vector<double> sigma(size);
  for (size_t i = 0; i < size; ++i)
    sigma[i] = lost[i] ? detail::kInf : std::sqrt(sq[i] / static_cast<double>(members));
  // Rows: the last axis, whole rows grouped until a window has at least 16 elements.
  const size_t last =
      value.shape.empty() ? 1 : static_cast<size_t>(std::max<int64_t>(1, value.shape.back()));
  const size_t window = last * ((16 + last - 1) / last);
  const double u = ir::is_float(value.dtype) ? ir::unit_roundoff(value.dtype) : 0.0;
  std::vector<double> tolerance(size);
  for (size_t begin = 0; begin < size; begin += window) {
    const size_t end = std::min(size, begin + window);
    double sum = 0;
    size_t counted = 0;
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(sigma[i])) sum += sigma[i] * sigma[i], ++counted;
    const double row = counted ? std::sqrt(sum / static_cast<double>(counted)) : 0.0;
    for (size_t i = begin; i < end; ++i)
      tolerance[i] =
          options.multiple * std::max({sigma[i], options.row_share * row, u * std::fabs(r[i])});
  }
  return tolerance;
}

}  // namespace

void tighten(Result& result, const std::vector<std::vector<Tensor>>& members,
             const EnsembleOptions& options) {
  const size_t outputs = result.values.size();
  std::vector<std::vector<double>> sq(outputs);
  std::vector<std::vector<uint8_t>> lost(outputs);
  for (size_t o = 0; o < outputs; ++o) {
    sq[o].assign(result.values[o].data.size(), 0.0);
    lost[o].assign(result.values[o].data.size(), 0);
  }
  for (const auto& member : members) {
    for (size_t o = 0; o < outputs; ++o) {
      const auto& r = result.values[o].data;
      const auto& y = member[o].data;
      for (size_t i = 0; i < r.size(); ++i) {
        const double d = y[i] - r[i];
        if (std::isfinite(d))
          sq[o][i] += d * d;
        else
          lost[o][i] = 1;
      }
    }
  }
  result.tightened = !members.empty();
  result.criteria.assign(outputs, Criteria{});
  for (size_t o = 0; o < outputs; ++o) {
    const auto& r = result.values[o].data;
    auto& bound = result.bounds[o].data;
    const std::vector<double> tolerance =
        members.empty() ? std::vector<double>(r.size(), detail::kInf)
                        : tolerances(result.values[o], sq[o], lost[o], members.size(), options);
    Criteria& c = result.criteria[o];
    for (size_t i = 0; i < r.size(); ++i) {
      if (!std::isfinite(r[i]) || bound[i] == 0) {
        ++c.exact;
      } else if (tolerance[i] < bound[i]) {
        bound[i] = tolerance[i];
        ++c.ensemble;
      } else if (std::isfinite(bound[i])) {
        ++c.derived;
      } else {
        ++c.unbounded;
      }
    }
  }
}

}  // namespace ollie::interp
