// The reference interpreter's driver: checks and rounds inputs, evaluates nodes in
// order (leaves, layout ops and reductions here; elementwise and contractions in their
// own files), frees each value after its last use, and returns outputs with bounds.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <limits>
#include <string>
#include <type_traits>

#include "interp/kernels.h"
#include "support/half.h"
#include "support/random.h"

namespace ollie::interp {

namespace detail {

double round_to(ir::DType t, double x) {
  switch (t) {
    case ir::DType::F32: return static_cast<double>(static_cast<float>(x));
    case ir::DType::F64: return x;
    case ir::DType::I32:
    case ir::DType::I64: return std::trunc(x);
    case ir::DType::Bool: return x != 0.0 ? 1.0 : 0.0;
    case ir::DType::F16: return ollie_half::round_f16(x);
    case ir::DType::BF16: return ollie_half::round_bf16(x);
  }
  return x;
}

namespace {
// finalize's common case: a non-finite float value has bound 0 (FloatRule), a NaN bound
// becomes inf; returns how many bounds are nonzero.
// On the bits, so that the loop vectorizes (the exponent all ones: inf or NaN).
template <bool FloatRule>
int64_t clean_bounds(const double* __restrict r, double* __restrict e, int64_t n) {
  constexpr uint64_t exponent = 0x7ff0000000000000ULL, magnitude = 0x7fffffffffffffffULL;
  constexpr uint64_t inf = 0x7ff0000000000000ULL;
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = std::bit_cast<uint64_t>(e[i]);
    x = (x & magnitude) > exponent ? inf : x;  // NaN -> inf
    if constexpr (FloatRule)
      x = (std::bit_cast<uint64_t>(r[i]) & exponent) == exponent ? 0 : x;  // r not finite -> 0
    e[i] = std::bit_cast<double>(x);
    nonzero += static_cast<int64_t>((x & magnitude) != 0);
  }
  return nonzero;
}
}  // namespace

void finalize(Value& v) {
  if (v.exact()) return;
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double max_finite = ir::largest_finite(v.t.dtype);
  const bool is_float = ir::is_float(v.t.dtype);
  const double* r = v.t.data.data();
  double* e = v.e.data();
  const int64_t size = v.t.size();
  if (v.lo.empty()) {
    // The common case, in branch-free loops that vectorize: nothing was saturated and
    // nothing saturates now (no finite value whose interval reaches past max_finite).
    // The same results as the general loop below, which handles the rest.
    constexpr double dbl_max = std::numeric_limits<double>::max();  // |r| <= dbl_max: r is finite
    int64_t saturating = 0;
    if (is_float)
      for (int64_t i = 0; i < size; ++i)
        saturating += static_cast<int64_t>(std::fabs(r[i]) <= dbl_max) &
                      static_cast<int64_t>(std::fabs(r[i]) + e[i] > max_finite);
    if (saturating == 0) {
      const int64_t nonzero =
          is_float ? clean_bounds<true>(r, e, size) : clean_bounds<false>(r, e, size);
      if (nonzero == 0) v.e.clear();
      return;
    }
  }
  bool any = false, any_sat = false;
  for (int64_t i = 0, n = v.t.size(); i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    if (v.saturated(k)) {
      // Sign unknown (should not happen) or the exact infinity certainly reached:
      // leave the saturated state.
      if (std::isnan(r[i])) {
        v.lo[k] = 0.0;
        e[i] = inf;
      } else if (std::isinf(r[i]) && std::isinf(v.lo[k])) {
        v.lo[k] = 0.0;
        e[i] = 0.0;
      } else
        e[i] = inf;
    } else if (is_float) {
      if (!std::isfinite(r[i])) {
        e[i] = 0.0;
      } else if (std::fabs(r[i]) + e[i] > max_finite) {
        // The implementation may overflow: only its sign and a lower bound on its
        // magnitude survive, and only when the interval excludes zero.
        set_state(v, k, saturated(std::fabs(r[i]) - e[i]));
      }
    }
    if (std::isnan(e[i])) e[i] = inf;
    any = any || e[i] != 0.0;
    any_sat = any_sat || v.saturated(k);
  }
  if (!any_sat) v.lo.clear();
  if (!any) v.e.clear();
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

void gather(const double* src, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& strides, int64_t offset, double* dst) {
  const int64_t total = ir::element_count(shape);
  if (total == 0) return;
  const size_t rank = shape.size();
  if (rank == 0) {
    dst[0] = src[offset];
    return;
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  // A transpose of the last two axes (the source contiguous along the second to last):
  // copied in blocks, so that the strided reads of a block share cache lines.
  const bool transposed = rank >= 2 && inner_stride != 1 && strides[rank - 2] == 1 && inner >= 8;
  const int64_t rows = transposed ? shape[rank - 2] : 1;
  const size_t outer_rank = transposed ? rank - 2 : rank - 1;
  std::vector<int64_t> idx(rank, 0);
  int64_t base = offset;
  for (int64_t done = 0; done < total; done += inner * rows) {
    const double* s = src + base;
    if (transposed) {
      constexpr int64_t kBlockRows = 8, kBlockCols = 64;
      for (int64_t j0 = 0; j0 < inner; j0 += kBlockCols) {
        const int64_t j1 = std::min(inner, j0 + kBlockCols);
        for (int64_t i0 = 0; i0 < rows; i0 += kBlockRows) {
          const int64_t i1 = std::min(rows, i0 + kBlockRows);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j) dst[i * inner + j] = s[i + j * inner_stride];
        }
      }
    } else if (inner_stride == 1) {
      std::copy(s, s + inner, dst);
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = s[j * inner_stride];
    }
    dst += inner * rows;
    // Odometer over the outer axes.
    for (size_t d = outer_rank; d-- > 0;) {
      base += strides[d];
      if (++idx[d] < shape[d]) break;
      base -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace detail

namespace {

using detail::Value;

Tensor make_tensor(ir::DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.data.assign(static_cast<size_t>(ir::element_count(shape)), 0.0);
  t.shape = std::move(shape);
  return t;
}

// Applies the same strided gather to the values and (if any) the bounds.
Value gather_value(const Value& x, ir::DType dtype, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides, int64_t offset) {
  Value out;
  out.t = make_tensor(dtype, shape);
  detail::gather(x.t.data.data(), shape, strides, offset, out.t.data.data());
  if (!x.exact()) {
    out.e.assign(out.t.data.size(), 0.0);
    detail::gather(x.e.data(), shape, strides, offset, out.e.data());
  }
  if (!x.lo.empty()) {
    out.lo.assign(out.t.data.size(), 0.0);
    detail::gather(x.lo.data(), shape, strides, offset, out.lo.data());
  }
  return out;
}

Value eval_leaf(const ir::Graph& g, const ir::Node& n, const std::vector<int64_t>& shape) {
  Value v;
  v.t = make_tensor(n.dtype, shape);
  if (n.kind == ir::OpKind::Iota) {
    auto strides = detail::dense_strides(shape);
    const int64_t stride = strides[static_cast<size_t>(n.axis)];
    const int64_t len = shape[static_cast<size_t>(n.axis)];
    // Element i holds (i / stride) % len: runs of `stride` equal values, without a division each.
    double* out = v.t.data.data();
    for (int64_t i = 0; i < v.t.size();)
      for (int64_t a = 0; a < len; ++a) {
        const double value = detail::round_to(n.dtype, static_cast<double>(a));
        std::fill(out + i, out + i + stride, value);
        i += stride;
      }
    return v;
  }
  // Const: the literal's exact value; an implementation in a narrower dtype rounds it.
  double c = n.const_dim ? static_cast<double>(n.const_dim->evaluate(g.bound_dims)) : n.const_value;
  if (!ir::is_float(n.dtype)) c = detail::round_to(n.dtype, c);
  v.t.data[0] = c;
  if (std::isfinite(c) && detail::round_to(n.dtype, c) != c) {
    v.e.assign(1, ir::unit_roundoff(n.dtype) * std::fabs(c) + detail::underflow_unit(n.dtype));
    detail::finalize(v);
  }
  return v;
}

Value eval_concat(const ir::Node& n, const std::vector<const Value*>& xs,
                  const std::vector<int64_t>& shape) {
  Value out;
  out.t = make_tensor(n.dtype, shape);
  bool any_bound = false, any_sat = false;
  for (auto* x : xs) {
    any_bound = any_bound || !x->exact();
    any_sat = any_sat || !x->lo.empty();
  }
  if (any_bound) out.e.assign(out.t.data.size(), 0.0);
  if (any_sat) out.lo.assign(out.t.data.size(), 0.0);
  const size_t axis = static_cast<size_t>(n.axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t out_row = shape[axis] * inner;
  int64_t col = 0;
  for (auto* x : xs) {
    const int64_t row = x->t.shape[axis] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::copy_n(x->t.data.begin() + o * row, row, out.t.data.begin() + o * out_row + col);
      if (!x->exact()) std::copy_n(x->e.begin() + o * row, row, out.e.begin() + o * out_row + col);
      if (!x->lo.empty())
        std::copy_n(x->lo.begin() + o * row, row, out.lo.begin() + o * out_row + col);
    }
    col += row;
  }
  return out;
}

// The state of a reduction over a row that holds saturated elements (lo[k] > 0).
// Sum: float summation is monotone in every term whatever the order, so the computed
// sum is at least what the same order gives on the smallest magnitudes in the
// saturated direction (lo for saturated terms, sign*x - e for the others), which is
// within the usual rounding term of their exact sum. Max/min: the interval rule.
detail::SatResult reduce_saturated(ir::ReduceKind kind, const double* v, const double* e,
                                   const double* lo, int64_t len, double r, double rounding,
                                   double eta) {
  if (kind != ir::ReduceKind::Sum) {
    const bool is_max = kind == ir::ReduceKind::Max;
    detail::Interval iv{0, 0};
    for (int64_t k = 0; k < len; ++k) {
      const auto x = detail::interval_of(v[k], e ? e[k] : 0.0, lo[k]);
      if (k == 0)
        iv = x;
      else if (is_max)
        iv = {std::max(iv.lo, x.lo), std::max(iv.hi, x.hi)};
      else
        iv = {std::min(iv.lo, x.lo), std::min(iv.hi, x.hi)};
    }
    return detail::from_interval(r, iv);
  }
  double sign = 0.0;
  for (int64_t k = 0; k < len; ++k) {
    if (!(lo[k] > 0)) continue;
    const double s = v[k] > 0 ? 1.0 : -1.0;
    if (sign != 0.0 && s != sign) return detail::unbounded();  // inf - inf may be NaN
    sign = s;
    if (std::isinf(lo[k]))
      return detail::saturated(lo[k]);  // an infinity absorbs every finite term
  }
  double least = 0.0, magnitude = 0.0;
  for (int64_t k = 0; k < len; ++k) {
    const double ek = e ? e[k] : 0.0;
    if (lo[k] > 0) {
      least += lo[k];
      magnitude += lo[k];
    } else {
      least += sign * v[k] - ek;
      magnitude += std::fabs(v[k]) + ek;
    }
  }
  return detail::saturated(least - rounding * magnitude - eta);
}

Value eval_reduce(const ir::Node& n, const Value& x, const std::vector<int64_t>& out_shape) {
  // Bring the reduced axes last so each output element reduces one contiguous row.
  const auto& in_shape = x.t.shape;
  std::vector<int> order;
  std::vector<bool> reduced(in_shape.size(), false);
  for (int a : n.axes) reduced[static_cast<size_t>(a)] = true;
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (!reduced[d]) order.push_back(static_cast<int>(d));
  for (int a : n.axes) order.push_back(a);
  int64_t len = 1;
  for (int a : n.axes) len *= in_shape[static_cast<size_t>(a)];
  const int64_t rows = ir::element_count(out_shape);

  Value packed;
  const Value* src = &x;
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int>(i);
  if (!identity) {
    std::vector<int64_t> shape, strides;
    auto dense = detail::dense_strides(in_shape);
    for (int d : order) {
      shape.push_back(in_shape[static_cast<size_t>(d)]);
      strides.push_back(dense[static_cast<size_t>(d)]);
    }
    packed = gather_value(x, x.t.dtype, shape, strides, 0);
    src = &packed;
  }

  Value out;
  out.t = make_tensor(n.dtype, out_shape);
  const double u = detail::rounding_unit(n.dtype);
  const bool need_e = !src->exact() || (n.reduce == ir::ReduceKind::Sum && u > 0 && len > 1);
  if (need_e) out.e.assign(static_cast<size_t>(rows), 0.0);
  const double gm = u * detail::growth(static_cast<double>(len - 1));
  const double eta = n.reduce == ir::ReduceKind::Sum
                         ? static_cast<double>(len) * detail::underflow_unit(n.dtype)
                         : 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* v = src->t.data.data() + r * len;
    const double* e = src->exact() ? nullptr : src->e.data() + r * len;
    double acc, bound = 0.0;
    if (n.reduce == ir::ReduceKind::Sum) {
      double abs_sum = 0.0;
      acc = 0.0;
      for (int64_t k = 0; k < len; ++k) {
        acc += v[k];
        abs_sum += std::fabs(v[k]);
      }
      if (e)
        for (int64_t k = 0; k < len; ++k) bound += e[k];
      // Partial sums may cancel into the subnormal range and be flushed: one eta per
      // addition, unless every term is exactly zero.
      bound += gm * abs_sum + (len > 1 && abs_sum > 0 ? eta : 0.0);
    } else {
      const bool is_max = n.reduce == ir::ReduceKind::Max;
      acc = is_max ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) {
        // NaN propagates, as numpy's max/min do.
        if (std::isnan(v[k]) || std::isnan(acc))
          acc = std::numeric_limits<double>::quiet_NaN();
        else
          acc = is_max ? std::max(acc, v[k]) : std::min(acc, v[k]);
      }
      if (e && std::isfinite(acc)) {
        // The implementation's result lies in [max_k(v-e), max_k(v+e)] (for max; mirrored
        // for min): a masked-out element with a large error cannot move a row's max.
        // Measured as distances from the result (d = v - acc, exactly 0 for the winner), so
        // the winner's own error comes out exactly rather than as acc - (acc - e).
        const double inf = std::numeric_limits<double>::infinity();
        double below = is_max ? inf : -inf, above = is_max ? -inf : inf;
        for (int64_t k = 0; k < len; ++k) {
          const double d = v[k] - acc;
          below = is_max ? std::min(below, e[k] - d) : std::max(below, e[k] - d);
          above = is_max ? std::max(above, d + e[k]) : std::min(above, d + e[k]);
        }
        bound = std::max(below, above);
      }
    }
    out.t.data[static_cast<size_t>(r)] = acc;
    if (need_e) out.e[static_cast<size_t>(r)] = bound;
    if (!src->lo.empty()) {
      const double* lo = src->lo.data() + r * len;
      if (std::any_of(lo, lo + len, [](double l) { return l > 0; }))
        detail::set_state(out, static_cast<size_t>(r),
                          reduce_saturated(n.reduce, v, e, lo, len, acc, gm, eta));
    }
  }
  detail::finalize(out);
  return out;
}

Value eval_layout(const ir::Node& n, const Value& x, const std::vector<int64_t>& shape,
                  const ir::DimBindings& dims) {
  const auto in_strides = detail::dense_strides(x.t.shape);
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t offset = 0;
  switch (n.kind) {
    case ir::OpKind::Broadcast:
      for (size_t d = 0; d < shape.size(); ++d) strides[d] = x.t.shape[d] == 1 ? 0 : in_strides[d];
      break;
    case ir::OpKind::Transpose:
      for (size_t d = 0; d < shape.size(); ++d)
        strides[d] = in_strides[static_cast<size_t>(n.axes[d])];
      break;
    case ir::OpKind::Slice:
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t start = n.slices[d].start.evaluate(dims);
        offset += start * in_strides[d];
        strides[d] = n.slices[d].step * in_strides[d];
        if (shape[d] > 0 &&
            (start < 0 || start + (shape[d] - 1) * n.slices[d].step >= x.t.shape[d]))
          throw UserError("slice [" + n.slices[d].start.str() + ":" + n.slices[d].stop.str() +
                          "] of axis " + std::to_string(d) + " runs past its size " +
                          std::to_string(x.t.shape[d]) +
                          " at the bound dims; choose dims for which the slice fits");
      }
      break;
    default: OLLIE_CHECK(false, std::string("eval_layout with ") + ir::op_name(n.kind));
  }
  return gather_value(x, n.dtype, shape, strides, offset);
}

Value round_input(const ir::Param& p, const Tensor& in, const std::vector<int64_t>& expected) {
  auto shape_text = [](const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
  };
  if (in.shape != expected)
    throw UserError("input '" + p.name + "' has shape " + shape_text(in.shape) +
                    " but the kernel expects " + ir::shape_str(p.shape) + " = " +
                    shape_text(expected) + " at the bound dims; pass an array of shape " +
                    shape_text(expected) + " or bind the dims to match");
  if (in.size() != ir::element_count(expected))
    throw UserError("input '" + p.name + "' holds " + std::to_string(in.size()) +
                    " values but its shape " + shape_text(expected) + " needs " +
                    std::to_string(ir::element_count(expected)));
  Value v;
  v.t.dtype = p.dtype;
  v.t.shape = expected;
  v.t.data.assign(in.data.begin(), in.data.end());
  double* x = v.t.data.data();
  const size_t n = v.t.data.size();
  // Rounded to the dtype (detail::round_to, one loop per dtype). A subnormal input is
  // exact: the spec reads it as it is (numpy has no denormals-are-zero), so a kernel that
  // reads it as zero (DAZ, a flushing conversion) is off by all of it.
  auto round_all = [&](auto round) {
    for (size_t i = 0; i < n; ++i) x[i] = round(x[i]);
  };
  switch (p.dtype) {
    case ir::DType::F32:
      round_all([](double a) { return static_cast<double>(static_cast<float>(a)); });
      break;
    case ir::DType::F64: round_all([](double a) { return a; }); break;
    case ir::DType::I32:
    case ir::DType::I64: round_all([](double a) { return std::trunc(a); }); break;
    case ir::DType::Bool: round_all([](double a) { return a != 0.0 ? 1.0 : 0.0; }); break;
    case ir::DType::F16:
      round_all([](double a) { return static_cast<double>(ollie_half::round_f16(a)); });
      break;
    case ir::DType::BF16:
      round_all([](double a) { return static_cast<double>(ollie_half::round_bf16(a)); });
      break;
  }
  return v;
}

// ExpContract: sum over the summed labels of exp(lhs - M) * rhs, M the max of lhs over them
// (0 where it is -inf). Value and bound are those of the composition max, subtract,
// exp, contract; then each term's share of the bound grows by the rescalings an online
// implementation applies to its accumulator as the running max grows: at most one per
// step, each a rounded exp and a rounded product, so (1 + (K_T + 2)u)^g(n) - 1 of
// Σ|exp(lhs - M) rhs| (g: the growth factor of the summation model).
Value eval_exp_contract(const ir::Node& n, const Value& s, const Value* x) {
  std::vector<int> summed;
  for (size_t i = 0; i < n.lhs_labels.size(); ++i)
    if (std::count(n.out_labels.begin(), n.out_labels.end(), n.lhs_labels[i]) == 0)
      summed.push_back(static_cast<int>(i));
  ir::Node max_node;
  max_node.kind = ir::OpKind::Reduce;
  max_node.reduce = ir::ReduceKind::Max;
  max_node.axes = summed;
  max_node.dtype = n.dtype;
  std::vector<int64_t> kept_shape = s.t.shape, max_shape;
  for (int a : summed) kept_shape[static_cast<size_t>(a)] = 1;
  for (size_t d = 0; d < s.t.shape.size(); ++d)
    if (std::count(summed.begin(), summed.end(), static_cast<int>(d)) == 0)
      max_shape.push_back(s.t.shape[d]);
  Value m = eval_reduce(max_node, s, max_shape);
  // An all -inf max shifts by 0 instead (exact: the shift cancels in a softmax).
  for (size_t i = 0; i < m.t.data.size(); ++i)
    if (m.t.data[i] == -std::numeric_limits<double>::infinity() && (m.e.empty() || m.e[i] == 0.0))
      m.t.data[i] = 0.0;
  m.t.shape = kept_shape;
  ir::Node bcast;
  bcast.kind = ir::OpKind::Broadcast;
  bcast.dtype = n.dtype;
  const Value mb = eval_layout(bcast, m, s.t.shape, {});
  ir::Node op;
  op.dtype = n.dtype;
  op.kind = ir::OpKind::Sub;
  const Value d = detail::eval_binary(op, s, mb);
  op.kind = n.base2 ? ir::OpKind::Exp2 : ir::OpKind::Exp;
  const Value e = detail::eval_unary(op, d);
  ir::Node contract = n;
  contract.kind = ir::OpKind::Contract;
  Value ones;
  ones.t.dtype = n.dtype;
  ones.t.data = {1.0};
  Value v = detail::eval_contract(contract, e, x ? *x : ones);
  // Σ|e rhs| per output: the same contraction over magnitudes.
  Value ea, xa;
  ea.t = e.t;
  for (double& a : ea.t.data) a = std::fabs(a);
  xa.t = x ? x->t : ones.t;
  for (double& a : xa.t.data) a = std::fabs(a);
  const Value mag = detail::eval_contract(contract, ea, xa);
  int64_t steps = 1;
  for (int a : summed) steps *= s.t.shape[static_cast<size_t>(a)];
  const double per_step = (detail::kLibraryUlps + 2.0) * detail::rounding_unit(n.dtype);
  const double grow = std::expm1(detail::growth(static_cast<double>(steps)) * std::log1p(per_step));
  if (v.e.empty()) v.e.assign(v.t.data.size(), 0.0);
  for (size_t i = 0; i < v.e.size(); ++i) v.e[i] += grow * mag.t.data[i];
  detail::finalize(v);
  return v;
}

}  // namespace

namespace detail {
Value reduce(const ir::Node& node, const Value& x, const std::vector<int64_t>& out_shape) {
  return eval_reduce(node, x, out_shape);
}
}  // namespace detail

namespace {

using detail::Value;

// An output is stored in its dtype: where a saturated element's magnitude is certainly at
// least the dtype's overflow threshold (its largest finite value plus half a spacing, 65520
// for f16), every implementation stores an infinity of the element's sign. It becomes that
// special value, with bound 0, instead of an unbounded element.
void settle_overflow(detail::Value& v) {
  // f16 and bf16 only for now: f32 outputs keep the saturated (unbounded) state that the
  // tests and docs of the f32 rules pin; the same reasoning would hold for them.
  if (v.lo.empty() || (v.t.dtype != ir::DType::F16 && v.t.dtype != ir::DType::BF16)) return;
  const double largest = ir::largest_finite(v.t.dtype);
  // Halfway from the largest finite value to the next power of two (a tie rounds to it).
  const double threshold = (largest + std::ldexp(1.0, std::ilogb(largest) + 1)) / 2;
  for (size_t k = 0; k < v.lo.size(); ++k) {
    if (!(v.lo[k] >= threshold) || std::isnan(v.t.data[k])) continue;
    v.t.data[k] = std::copysign(std::numeric_limits<double>::infinity(), v.t.data[k]);
    v.e[k] = 0.0;
    v.lo[k] = 0.0;
  }
}

// The reference (member == nullptr), or an honest ensemble member.
Result evaluate_graph(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                      const std::atomic<bool>* cancel, detail::Member* member) {
  ir::verify(graph);
  if (inputs.size() != graph.params.size())
    throw UserError("kernel '" + graph.entry + "' takes " + std::to_string(graph.params.size()) +
                    " inputs but " + std::to_string(inputs.size()) + " were given");

  // Last use of each value, so that big intermediates are freed as soon as possible.
  const size_t count = graph.nodes.size();
  std::vector<size_t> last_use(count, 0);
  for (size_t i = 0; i < count; ++i)
    for (ir::ValueId op : graph.nodes[i].operands) last_use[static_cast<size_t>(op)] = i;
  for (ir::ValueId out : graph.outputs) last_use[static_cast<size_t>(out)] = count;

  std::vector<Value> values(count);
  for (size_t i = 0; i < count; ++i) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
    const ir::Node& n = graph.nodes[i];
    const auto shape = ir::evaluate_shape(n.shape, graph.bound_dims);
    auto arg = [&](size_t k) -> const Value& { return values[static_cast<size_t>(n.operands[k])]; };
    Value& v = values[i];
    switch (n.kind) {
      case ir::OpKind::Input: {
        const auto& p = graph.params[static_cast<size_t>(n.input_index)];
        v = round_input(p, inputs[static_cast<size_t>(n.input_index)], shape);
        break;
      }
      case ir::OpKind::Const:
      case ir::OpKind::Iota: v = eval_leaf(graph, n, shape); break;
      case ir::OpKind::Broadcast:
      case ir::OpKind::Transpose:
      case ir::OpKind::Slice: v = eval_layout(n, arg(0), shape, graph.bound_dims); break;
      case ir::OpKind::Reshape:
        // Row-major order is kept, so only the shape changes.
        if (last_use[static_cast<size_t>(n.operands[0])] == i)
          v = std::move(values[static_cast<size_t>(n.operands[0])]);
        else
          v = arg(0);
        v.t.shape = shape;
        break;
      case ir::OpKind::Concat: {
        std::vector<const Value*> xs;
        for (size_t k = 0; k < n.operands.size(); ++k) xs.push_back(&arg(k));
        v = eval_concat(n, xs, shape);
        break;
      }
      case ir::OpKind::Gather: v = detail::eval_gather(n, arg(0), arg(1), shape); break;
      case ir::OpKind::Reduce:
        v = eval_reduce(member ? detail::values_only(n) : n, arg(0), shape);
        break;
      case ir::OpKind::Contract:
        v = detail::eval_contract(member ? detail::values_only(n) : n, arg(0), arg(1));
        break;
      case ir::OpKind::ExpContract:
        v = eval_exp_contract(n, arg(0), n.operands.size() == 2 ? &arg(1) : nullptr);
        break;
      case ir::OpKind::Select: v = detail::eval_select(arg(0), arg(1), arg(2), n.dtype); break;
      default:
        if (ir::is_elementwise_unary(n.kind))
          v = detail::eval_unary(n, arg(0));
        else
          v = detail::eval_binary(n, arg(0), arg(1));
        break;
    }
    OLLIE_CHECK(v.t.shape == shape && v.t.size() == ir::element_count(shape),
                std::string("interp produced a wrong shape for ") + ir::op_name(n.kind));
    v.t.dtype = n.dtype;
    if (member) {
      std::vector<const Value*> args;
      for (size_t k = 0; k < n.operands.size(); ++k) args.push_back(&arg(k));
      detail::perturb(n, v, args, shape, *member, i);
    }
    for (ir::ValueId op : n.operands)
      if (last_use[static_cast<size_t>(op)] == i) values[static_cast<size_t>(op)] = Value{};
  }

  Result result;
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    const size_t id = static_cast<size_t>(graph.outputs[k]);
    // An output listed twice is copied, not moved, until its last listing.
    bool later = std::find(graph.outputs.begin() + static_cast<long>(k) + 1, graph.outputs.end(),
                           graph.outputs[k]) != graph.outputs.end();
    Value v = later ? values[id] : std::move(values[id]);
    settle_overflow(v);
    Tensor bound;
    bound.dtype = ir::DType::F64;  // a bound is a real magnitude whatever the value's dtype
    bound.shape = v.t.shape;
    if (v.exact())
      bound.data.assign(v.t.data.size(), 0.0);
    else
      bound.data = std::move(v.e);
    result.values.push_back(std::move(v.t));
    result.bounds.push_back(std::move(bound));
  }
  return result;
}

}  // namespace

Result evaluate(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                const std::atomic<bool>* cancel) {
  return evaluate_graph(graph, inputs, cancel, nullptr);
}

std::vector<std::vector<Tensor>> evaluate_members(const ir::Graph& graph,
                                                  const std::vector<Tensor>& inputs, int first,
                                                  int count, uint64_t seed,
                                                  const std::atomic<bool>* cancel) {
  std::vector<std::vector<Tensor>> members;
  detail::Member member;
  for (int k = first; k < first + count; ++k) {
    member.seed = random::mix64(seed + static_cast<uint64_t>(k));
    members.push_back(evaluate_graph(graph, inputs, cancel, &member).values);
  }
  return members;
}

}  // namespace ollie::interp
