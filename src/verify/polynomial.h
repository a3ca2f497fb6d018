// The integer-exact suite's preconditions (docs/verifier.md, "How 'polynomial' is
// decided from the IR"): whether a spec is polynomial, and how large the integers in
// its inputs may be so that a float kernel computes it exactly in any evaluation order.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace ollie::verify {

// Empty when every op between the params and a result keeps integer values integer and
// exact: add, sub, mul, neg, abs, max, min, select on comparisons (and, or, not), sum/max/min
// reductions, contractions, powi with a non-negative exponent, layout ops, gathers, converts,
// integer-valued constants, iota, and integer division or modulo on integer dtypes. Otherwise
// the first op that is not (in graph order, among the values a result depends on), with its
// value and source line, e.g. "exp at %5 (line 12)".
std::string polynomial_reason(const ir::Graph& graph);

// The largest range tried for integer inputs.
constexpr int64_t kMaxIntegerRange = 1024;

// Integer inputs for which `graph` (at its bound dims) is exact: float params drawn from
// [-k, k], integer params from [-8, 8] (as every suite draws them; a gather's index array
// from [-V, V)), bools 0/1.
struct ExactRange {
  int64_t k = 0;  // the largest k <= k_max the bound below proves exact; 0: not applicable
  double fraction =
      0;  // at that k: the largest bound on |value| as a fraction of its dtype's limit (<= 1)
  std::string reason;  // when k == 0: why ("not polynomial: exp at %5 (line 12)", "magnitude ...")
};

// Bounds every intermediate by the magnitude evaluation: the graph on |inputs| = k with
// sub as add, neg and abs as the identity, min and select as max, bools as 1, so that every
// value, and every partial sum or product any summation order or factorization forms, is at
// most its bound; each must be <= 2^24 for f32, 2^53 for f64 (2^31 - 1 for i32, 2^53 for i64).
// One evaluation, at k = 1, gives every k: a value of degree d in the float inputs is at most
// its k = 1 magnitude times k^d (so the default matmul, 512 k^2 <= 2^24, gets k = 181).
ExactRange exact_range(const ir::Graph& graph, int64_t k_max = kMaxIntegerRange);

}  // namespace ollie::verify
