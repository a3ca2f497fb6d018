// Internal to interp/: the value+bound pair every op produces, the shared bound
// helpers (growth factor g, 0*inf-safe product, finalization) and the per-family
// evaluators split across interp.cpp, elementwise.cpp and contract.cpp.
#pragma once

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::interp::detail {

// A value and its per-element bound. An empty `e` means every bound is zero, which
// lets exact chains (integer ops, layout moves, inputs) skip all bound work.
// `lo` marks saturated elements (docs/error-bounds.md, "Saturated values"): lo[i] > 0
// means the implementation may have overflowed there and is only known to have the
// sign of r[i] and a magnitude >= lo[i] (lo may be inf). Such an element always has
// e[i] = inf, so code that ignores `lo` stays sound. Empty when nothing is saturated,
// so ordinary values pay nothing.
struct Value {
  Tensor t;
  std::vector<double> e;
  std::vector<double> lo;
  bool exact() const { return e.empty(); }
  bool saturated(size_t i) const { return !lo.empty() && lo[i] > 0; }
};

// What a rule says about one element with a saturated operand: saturated with
// magnitude >= lo (lo > 0), or an ordinary bound e (inf when nothing better is known).
struct SatResult {
  double lo = 0.0;
  double e = std::numeric_limits<double>::infinity();
};
inline SatResult unbounded() { return {}; }
// A NaN or non-positive lower bound proves nothing: unbounded then.
inline SatResult saturated(double lo) {
  return lo > 0 ? SatResult{lo, std::numeric_limits<double>::infinity()} : SatResult{};
}
inline SatResult bounded(double e) { return {0.0, e}; }

// Where an implementation's value may lie: [r - e, r + e], or a half-line for a
// saturated element.
struct Interval {
  double lo, hi;
};
inline Interval interval_of(double r, double e, double sat_lo) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (sat_lo > 0) return r > 0 ? Interval{sat_lo, inf} : Interval{-inf, -sat_lo};
  return {r - e, r + e};
}
// The state that covers an implementation known to lie in `iv` (which contains r).
inline SatResult from_interval(double r, Interval iv) {
  if (std::isfinite(iv.lo) && std::isfinite(iv.hi)) return bounded(std::max(r - iv.lo, iv.hi - r));
  if (iv.lo > 0) return saturated(iv.lo);
  if (iv.hi < 0) return saturated(-iv.hi);
  return unbounded();
}

// Records rule result `s` for element i of `v` (allocating `lo` on first use).
inline void set_state(Value& v, size_t i, SatResult s) {
  if (s.lo > 0) {
    if (v.lo.empty()) v.lo.assign(v.t.data.size(), 0.0);
    v.lo[i] = s.lo;
    v.e[i] = std::numeric_limits<double>::infinity();
  } else {
    if (!v.lo.empty()) v.lo[i] = 0.0;
    v.e[i] = s.e;
  }
}

// λ of the probabilistic summation model (docs/error-bounds.md).
constexpr double kLambda = 6.0;
// Allowed error of a library function (exp, log, tanh, ...), in units of u.
constexpr double kLibraryUlps = 8.0;

// The rounding unit of an op's bound: the implementation's (the unit roundoff of the
// dtype) plus the reference's own, since the reference is itself computed in double and
// rounds too (2^-53 per op: negligible next to f32's 2^-24, but it doubles an f64 bound, so
// an f64 kernel that fuses a multiply-add rounds differently from the reference and passes).
inline double rounding_unit(ir::DType t) {
  return ir::is_float(t) ? ir::unit_roundoff(t) + 0x1p-53 : 0.0;
}

// Below the normal range (|r| < smallest normal: FLT_MIN for f32 and bf16, 2^-14 for f16,
// DBL_MIN for f64) a rounded result's error is absolute, which relative terms (u·|r|)
// cannot cover. How large it may be depends on the op:
// - the arithmetic IEEE 754 defines (+, -, *, /, sums, contractions, conversions) has
//   gradual underflow in numpy and in every C++ build without fast-math: one rounding is
//   off by at most half the smallest subnormal, so `underflow_unit` is the smallest
//   subnormal (2^-149 for f32, 2^-133 for bf16, 2^-24 for f16, 2^-1074 for f64: the
//   kernel's half plus the reference's own). A kernel that flushes subnormals (FTZ/DAZ in
//   MXCSR, vdpbf16ps, a conversion that reads them as zero) is off by up to the smallest
//   normal there and is caught: that differs from the spec.
// - library functions (exp, tanh, pow, ...) are not correctly rounded anyway, and vector
//   implementations commonly return 0 below the normal range: `library_underflow_unit` is
//   the smallest normal.
inline double subnormal_threshold(ir::DType t) { return ir::smallest_normal(t); }
inline double underflow_unit(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return 0x1p-149;
    case ir::DType::BF16: return 0x1p-133;
    case ir::DType::F16: return 0x1p-24;
    case ir::DType::F64: return std::numeric_limits<double>::denorm_min();
    default: return 0.0;
  }
}
inline double library_underflow_unit(ir::DType t) { return ir::smallest_normal(t); }

// Growth factor of m rounded additions: deterministic m for short sums, λ·sqrt(m)
// (probabilistic, order independent) once that is smaller.
inline double growth(double m) {
  if (m <= 0) return 0.0;
  return std::min(m, kLambda * std::sqrt(m));
}

// Product for bounds, where 0 * inf must be 0 (an exact zero factor contributes
// nothing however large the other side's bound is).
inline double mul0(double a, double b) { return (a == 0.0 || b == 0.0) ? 0.0 : a * b; }

// Rounds a double to what a variable of dtype `t` holds (f32 rounding, integer
// truncation, bool as != 0).
double round_to(ir::DType t, double x);

// Applies the rules that hold for every float result: a non-finite reference value
// has bound 0 (an implementation must reproduce it); one whose interval reaches past
// the dtype's largest finite value becomes saturated (or unbounded when its sign is
// not certain); a NaN bound becomes inf. Drops `e` when it is all zero and `lo` when
// nothing is saturated.
void finalize(Value& v);

// Copies a strided view of `src` (shape `shape`, element strides `strides`, starting
// at `offset`) into the dense row-major `dst`.
void gather(const double* src, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& strides, int64_t offset, double* dst);

// Row-major strides of a dense tensor of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);

Value eval_unary(const ir::Node& node, const Value& a);  // incl. PowI, Convert, Not
Value eval_binary(const ir::Node& node, const Value& a, const Value& b);
Value eval_select(const Value& c, const Value& x, const Value& y, ir::DType dtype);
Value eval_contract(const ir::Node& node, const Value& a, const Value& b);
// numpy's take(table, indices, axis) (gather.cpp); throws UserError for an index outside
// [-V, V), as numpy raises IndexError.
Value eval_gather(const ir::Node& node, const Value& table, const Value& indices,
                  const std::vector<int64_t>& shape);
// Reduce (sum, max, min) of `x` over the node's axes, to `out_shape`.
Value reduce(const ir::Node& node, const Value& x, const std::vector<int64_t>& out_shape);

// `n` with a dtype that has no rounding unit: Contract and Reduce then compute the value
// alone, without bound work (an ensemble member needs no bound for them). The caller
// keeps the node's own dtype on the result.
inline ir::Node values_only(const ir::Node& n) {
  ir::Node plain = n;
  plain.dtype = ir::DType::I64;
  return plain;
}

// An honest ensemble member being evaluated: its seed, and per Reduce sum or Contract
// node the sum of its terms' squares (computed by the first member evaluated and reused:
// a magnitude, for which one member's operands serve all).
struct Member {
  uint64_t seed = 0;
  std::map<size_t, std::vector<double>> squared_terms;
};

// The honest ensemble's step after node `index` (ensemble.cpp): replaces `v`'s value by
// a Monte Carlo arithmetic sample and drops its bound, so the next node's bound is that
// node's own rounding alone. `args` are the node's operands.
void perturb(const ir::Node& n, Value& v, const std::vector<const Value*>& args,
             const std::vector<int64_t>& shape, Member& member, size_t index);

// Whether a contraction's steps c += a * b are fused multiply-adds (one rounding, where
// the host the interpreter is built for has them) or a multiply then an add.
bool contraction_fuses();

}  // namespace ollie::interp::detail
