// Which parameters are a gather's index arrays, and the sizes of the axes they index: what
// the verifier draws them inside of and what the kernel's header says about them.
#include "ir/ir.h"

namespace ollie::ir {

namespace {

// The parameter `v` is, through layout ops and converts; -1 when it is computed.
int source_param(const Graph& g, ValueId v) {
  for (;;) {
    const Node& n = g.node(v);
    if (n.kind == OpKind::Input) return n.input_index;
    const bool layout = n.kind == OpKind::Reshape || n.kind == OpKind::Transpose ||
                        n.kind == OpKind::Broadcast || n.kind == OpKind::Slice ||
                        n.kind == OpKind::Convert;
    if (!layout) return -1;
    v = n.operands[0];
  }
}

}  // namespace

std::vector<std::vector<DimExpr>> gather_index_axes(const Graph& graph) {
  std::vector<std::vector<DimExpr>> axes(graph.params.size());
  for (const Node& n : graph.nodes) {
    if (n.kind != OpKind::Gather) continue;
    const int p = source_param(graph, n.operands[1]);
    if (p < 0) continue;  // computed rows (a reversed slice's), always inside the axis
    axes[static_cast<size_t>(p)].push_back(
        graph.node(n.operands[0]).shape[static_cast<size_t>(n.axis)]);
  }
  return axes;
}

}  // namespace ollie::ir
