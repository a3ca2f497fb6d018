// Internal to verify/: the drawing of a suite's random inputs in chunks that any thread
// may take, shared by make_inputs and the suites of verify() (verify.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"
#include "verify/verify.h"

namespace ollie::verify {

// Per parameter, the size V of the axis it indexes when it is a gather's index array
// (through layout ops and integer converts; the smallest when several gathers read it), else
// 0. Such a parameter is drawn inside [-V, V), the indices numpy accepts, never outside:
// the others are outside the spec's domain (docs/verifier.md, "Index inputs").
std::vector<int64_t> index_ranges(const ir::Graph& graph);

// Draws sets of inputs for `graph` in chunks that any thread may take (help()): each
// chunk's values depend only on its set's seed, its parameter and its index, so the
// result is the same whoever draws which chunk, in whatever order.
class InputDraw {
 public:
  // One set per seed; `k` is Distribution::Integer's range. Allocates; draws nothing yet.
  InputDraw(const ir::Graph& graph, const std::vector<uint64_t>& seeds, Distribution d, int64_t k);
  // The same with a distribution per set.
  InputDraw(const ir::Graph& graph, const std::vector<uint64_t>& seeds,
            const std::vector<Distribution>& ds, int64_t k);
  // Sets given whole (the user's inputs): nothing to draw.
  explicit InputDraw(std::vector<std::vector<interp::Tensor>> given) : sets_(std::move(given)) {}
  InputDraw(const InputDraw&) = delete;
  InputDraw& operator=(const InputDraw&) = delete;

  // Draws chunks until none is left (or `stop` is set). Safe to call from several
  // threads at once; every chunk a call took is drawn when it returns.
  void help(const std::atomic<bool>* stop = nullptr);
  // The sets, once every call of help() has returned (and none was stopped).
  std::vector<std::vector<interp::Tensor>> take() { return std::move(sets_); }

 private:
  struct Chunk {
    size_t set, param, index;
  };
  std::vector<uint64_t> seeds_;
  std::vector<Distribution> ds_;
  int64_t k_ = 0;
  std::vector<double> scales_;
  // Per set, per parameter: drawn at its dtype's smallest normal (Distribution::Subnormal).
  std::vector<std::vector<bool>> tiny_;
  std::vector<int64_t> index_ranges_;
  std::vector<std::vector<interp::Tensor>> sets_;
  std::vector<Chunk> chunks_;
  std::atomic<size_t> next_{0};
};

}  // namespace ollie::verify
