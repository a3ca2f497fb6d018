// FLOPs and compulsory bytes of a graph at its bound dims (for `ollie check` and the roofline).
// What counts as one FLOP: one elementwise arithmetic op, comparison or select on one
// element (a transcendental counts as one, as in most roofline work); a reduction of n
// elements to one costs n - 1; a contraction costs 2 per multiply-add. Layout ops,
// conversions, constants and inputs cost nothing. A contraction of two bfloat16 values is
// also counted apart (bf16_product_flops): the roofline gives it the bf16 peak. A gather
// costs nothing. Compulsory bytes count what every correct kernel must read: an input read
// only through slices counts its largest slice, one only gathers read one row across the
// gathered axis (every index may name the same row), so the roofline stays a lower bound.
#include <algorithm>

#include "ir/ir.h"

namespace ollie::ir {

namespace {
// A bfloat16 value, or one widened exactly from bfloat16 (through layout ops too).
bool bf16_value(const Graph& g, ValueId id) {
  const Node& n = g.node(id);
  if (n.dtype == DType::BF16) return true;
  switch (n.kind) {
    case OpKind::Convert:  // widening only (exact)
      return (n.dtype == DType::F32 || n.dtype == DType::F64) && bf16_value(g, n.operands[0]);
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice: return bf16_value(g, n.operands[0]);
    default: return false;
  }
}
// The elements of param `v` every correct kernel must read (a lower bound): all of them
// when something reads it whole, else the largest one of its readers must: a slice's
// elements, or one row across a gather's axis (every index may name the same row).
int64_t elements_read(const Graph& g, ValueId v) {
  auto count = [&](const Shape& s) { return element_count(evaluate_shape(s, g.bound_dims)); };
  const int64_t all = count(g.node(v).shape);
  for (ValueId o : g.outputs)
    if (o == v) return all;
  int64_t most = 0;
  for (const Node& n : g.nodes)
    for (size_t k = 0; k < n.operands.size(); ++k) {
      if (n.operands[k] != v) continue;
      if (n.kind == OpKind::Slice) {
        most = std::max(most, count(n.shape));
      } else if (n.kind == OpKind::Gather && k == 0) {
        const int64_t rows = g.node(v).shape[static_cast<size_t>(n.axis)].evaluate(g.bound_dims);
        most = std::max(most, rows > 0 ? all / rows : all);
      } else {
        return all;
      }
    }
  return most;
}
}  // namespace

Cost cost(const Graph& g) {
  Cost c;
  auto count = [&](const Shape& s) { return element_count(evaluate_shape(s, g.bound_dims)); };
  for (const Node& n : g.nodes) {
    switch (n.kind) {
      case OpKind::Input:
      case OpKind::Const:
      case OpKind::Iota:
      case OpKind::Convert:
      case OpKind::Broadcast:
      case OpKind::Reshape:
      case OpKind::Transpose:
      case OpKind::Slice:
      case OpKind::Concat:
      case OpKind::Gather: break;
      case OpKind::Reduce: c.flops += count(g.node(n.operands[0]).shape) - count(n.shape); break;
      case OpKind::Contract:
      case OpKind::ExpContract: {
        // Every label appears in the output or is summed: the iteration space is
        // the product of all distinct labels' sizes.
        std::map<int, int64_t> size;
        const Node& a = g.node(n.operands[0]);
        for (size_t i = 0; i < n.lhs_labels.size(); ++i)
          size[n.lhs_labels[i]] = a.shape[i].evaluate(g.bound_dims);
        if (n.operands.size() == 2) {
          const Node& b = g.node(n.operands[1]);
          for (size_t i = 0; i < n.rhs_labels.size(); ++i)
            size[n.rhs_labels[i]] = b.shape[i].evaluate(g.bound_dims);
        }
        int64_t space = 1;
        for (auto& [l, s] : size) space *= s;
        c.flops += 2 * space;
        if (n.kind == OpKind::Contract && n.operands.size() == 2 && bf16_value(g, n.operands[0]) &&
            bf16_value(g, n.operands[1]))
          c.bf16_product_flops += 2 * space;
        // The exp-weighted form: a max, a subtraction and an exp per score too.
        if (n.kind == OpKind::ExpContract) c.flops += 3 * count(a.shape);
        break;
      }
      case OpKind::PowI: {
        int64_t e = n.exponent < 0 ? -n.exponent : n.exponent;
        c.flops += count(n.shape) * (e > 1 ? e - 1 : 1) + (n.exponent < 0 ? count(n.shape) : 0);
        break;
      }
      default: c.flops += count(n.shape); break;
    }
  }
  for (size_t i = 0; i < g.params.size(); ++i)
    c.compulsory_bytes += elements_read(g, g.inputs[i]) * dtype_bytes(g.params[i].dtype);
  for (const auto& r : g.results) c.compulsory_bytes += count(r.shape) * dtype_bytes(r.dtype);
  return c;
}

}  // namespace ollie::ir
