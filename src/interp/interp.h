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

struct Result {
  std::vector<Tensor> values;  // the reference value of each output (exact semantics, in double)
  std::vector<Tensor> bounds;  // per element: |correct implementation - value| <= bound
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

}  // namespace ollie::interp
