// The reference interpreter, stage 2b: evaluates a Graph in double precision and, in
// the same pass, derives per element the error bound a correct implementation in the
// graph's dtypes must meet (forward error analysis; the rule for every op is in
// docs/error-bounds.md). Owns Tensor (a dense double array with its dims).
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::interp {

// A dense row-major tensor of doubles; `dtype` says what it stands for (an f32 input
// holds values exactly representable in f32; a bool holds 0 or 1).
struct Tensor {
  ir::DType dtype = ir::DType::F64;
  std::vector<int64_t> shape;
  std::vector<double> data;
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Which criterion bounded an output's elements.
struct Criteria {
  int64_t exact = 0;      // a non-finite reference or a zero bound: matched exactly
  int64_t derived = 0;    // the derived bound (tighter than the ensemble's tolerance)
  int64_t ensemble = 0;   // the honest ensemble's tolerance
  int64_t unbounded = 0;  // neither is finite: only the relative floor is left
  int64_t finite() const { return derived + ensemble + unbounded; }
};

struct Result {
  std::vector<Tensor> values;  // the reference value of each output (exact semantics, in double)
  std::vector<Tensor> bounds;  // per element: |correct implementation - value| <= bound
  // Per output, which criterion bounded how many elements (filled by `tighten`).
  std::vector<Criteria> criteria;
  bool tightened = false;  // `tighten` had members: the ensemble's tolerance applied
};

// Thrown by evaluate when its `cancel` flag was set: the caller no longer needs the result.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("evaluation cancelled") {}
};

// Evaluates `graph` on `inputs` (one per param, with the param's bound shape; values
// are rounded to the param dtype first, as a kernel would receive them).
// Throws UserError when an input's shape does not match. When `cancel` is given, it is
// read between nodes and evaluation stops with Cancelled once it is true (another thread
// sets it: the verifier evaluates while the kernel runs, and stops when the run fails).
Result evaluate(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                const std::atomic<bool>* cancel = nullptr);

// Members [first, first + count) of the honest ensemble seeded by `seed`
// (docs/error-bounds.md, "The honest ensemble"): each the outputs of the graph evaluated
// with Monte Carlo arithmetic, as an honest implementation in the graph's dtypes might
// compute them: every rounding op's result perturbed by a random error of the size of
// its rounding, each sum and contraction by a random error of the size an ordered sum
// of its terms makes, an f32 value past FLT_MAX overflowing to inf.
std::vector<std::vector<Tensor>> evaluate_members(const ir::Graph& graph,
                                                  const std::vector<Tensor>& inputs, int first,
                                                  int count, uint64_t seed,
                                                  const std::atomic<bool>* cancel = nullptr);

struct EnsembleOptions {
  int members = 4;
  // The tolerance is `multiple` times the element's spread: the root mean square of the
  // members' deviations from the reference, at least `row_share` of its row's (the
  // output's last axis; rows grouped to 16 elements) and the output dtype's unit roundoff
  // times the value.
  double multiple = 96;
  double row_share = 0.25;
  uint64_t seed = 0;
};

// Lowers `result.bounds` (from `evaluate` on some inputs) to each element's tolerance
// set by `members` (the ensemble's members on the same inputs) wherever that is smaller,
// so the bound is never looser than what honest arithmetic really errs by a wide
// margin, and finite wherever the members are. Records, per output, which criterion
// bounded how many elements in `result.criteria` (with no members: only that).
void tighten(Result& result, const std::vector<std::vector<Tensor>>& members,
             const EnsembleOptions& options);

}  // namespace ollie::interp
