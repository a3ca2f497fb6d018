// Internal to interp/: the value+bound pair every op produces, the shared bound
// helpers (growth factor g, 0*inf-safe product, finalization) and the per-family
// evaluators split across interp.cpp, elementwise.cpp and contract.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::interp::detail {

// A value and its per-element bound. An empty `e` means every bound is zero, which
// lets exact chains (integer ops, layout moves, inputs) skip all bound work.
struct Value {
  Tensor t;
  std::vector<double> e;
  bool exact() const { return e.empty(); }
};

// λ of the probabilistic summation model (docs/error-bounds.md).
constexpr double kLambda = 6.0;
// Allowed error of a library function (exp, log, tanh, ...), in units of u.
constexpr double kLibraryUlps = 8.0;

// Absolute error one rounding may add near zero: an implementation may flush subnormal
// results and operands to zero (FTZ/DAZ, as GPU and fast-math code does), so each
// rounding op may be off by the smallest normal number, FLT_MIN for f32 (2^-126) and
// DBL_MIN for f64; relative terms (u·|r|) cannot cover results that small.
inline double underflow_unit(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return 0x1p-126;
    case ir::DType::F64: return 0x1p-1022;
    default: return 0.0;
  }
}

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
// has bound 0 (an implementation must reproduce it), an overflowing one has bound
// inf, a NaN bound becomes inf. Drops `e` when it is all zero.
void finalize(Value& v);

// Copies a strided view of `src` (shape `shape`, element strides `strides`, starting
// at `offset`) into the dense row-major `dst`.
void gather(const double* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
            int64_t offset, double* dst);

// Row-major strides of a dense tensor of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);

Value eval_unary(const ir::Node& node, const Value& a);    // incl. PowI, Convert, Not
Value eval_binary(const ir::Node& node, const Value& a, const Value& b);
Value eval_select(const Value& c, const Value& x, const Value& y, ir::DType dtype);
Value eval_contract(const ir::Node& node, const Value& a, const Value& b);

}  // namespace ollie::interp::detail
