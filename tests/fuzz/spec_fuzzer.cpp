// libFuzzer target for the spec front end and the reference: any input must either
// compile or fail with a UserError; a graph that compiles and is small is then
// evaluated on fixed inputs, which must succeed or fail with a UserError too. A crash,
// a hang, a sanitizer report, or any other exception escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "interp/interp.h"
#include "spec/spec.h"
#include "support/error.h"

namespace {

// Keeps evaluation cheap: no value of the graph may hold more elements than this.
constexpr int64_t kMaxElements = 1 << 12;

bool small_enough(const ollie::ir::Graph& graph) {
  for (const auto& node : graph.nodes)
    if (ollie::ir::element_count(ollie::ir::evaluate_shape(node.shape, graph.bound_dims)) >
        kMaxElements)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  try {
    ollie::ir::Graph graph = ollie::spec::compile_spec("fuzz.py", source, {});
    if (!small_enough(graph)) return 0;
    std::vector<ollie::interp::Tensor> inputs;
    for (const auto& p : graph.params) {
      ollie::interp::Tensor t;
      t.dtype = p.dtype;
      t.shape = ollie::ir::evaluate_shape(p.shape, graph.bound_dims);
      t.data.resize(static_cast<size_t>(ollie::ir::element_count(t.shape)));
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<double>(i % 7) - 3.0;
      inputs.push_back(std::move(t));
    }
    ollie::interp::evaluate(graph, inputs);
  } catch (const ollie::UserError&) {
    // Bad input, reported as such: the expected outcome for most inputs.
  }
  return 0;
}
