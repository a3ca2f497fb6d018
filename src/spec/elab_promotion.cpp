// Where a float64 came from: numpy 2 (NEP 50) promotes a float32 array to float64 when it
// meets a NumPy float64 scalar such as np.sqrt(2 / np.pi) (Python floats are weak, NumPy
// scalars are not). When a result comes out float64 where the annotation says float32,
// the elaborator names the values where float64 entered, so the user knows what to change.
#include <set>
#include <string>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

std::string describe(const ir::Node& n) {
  std::string what;
  switch (n.kind) {
    case ir::OpKind::Const: {
      char text[64];
      std::snprintf(text, sizeof text, "the float64 constant %.9g", n.const_value);
      what = text;
      break;
    }
    case ir::OpKind::Input: what = "a float64 parameter"; break;
    case ir::OpKind::Convert: what = "a conversion to float64"; break;
    default: what = std::string("a float64 ") + ir::op_name(n.kind); break;
  }
  if (n.loc.valid())
    what += " at line " + std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col);
  return what;
}

}  // namespace

std::string float64_origin(const ir::Graph& g, ir::ValueId result) {
  // The float64 values among the result's ancestors whose own operands hold no float64:
  // where float64 entered the computation.
  std::set<ir::ValueId> seen, starts;
  std::vector<ir::ValueId> stack{result};
  while (!stack.empty()) {
    const ir::ValueId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const ir::Node& n = g.node(id);
    if (n.dtype != ir::DType::F64) continue;
    bool from_f64 = false;
    for (ir::ValueId op : n.operands) {
      from_f64 = from_f64 || g.node(op).dtype == ir::DType::F64;
      stack.push_back(op);
    }
    // A conversion of a float32 operand is the promotion itself, not its cause.
    const bool promotion = n.kind == ir::OpKind::Convert && !n.operands.empty() &&
                           ir::is_float(g.node(n.operands[0]).dtype);
    if (!from_f64 && !promotion) starts.insert(id);
  }
  // The earliest is the cause; later ones are mostly weak Python scalars that took the
  // float64 of what they met (the 1 in 1 + np.tanh(...)).
  const std::string text = starts.empty() ? "" : describe(g.node(*starts.begin()));
  if (text.empty()) return "";
  return "float64 enters at " + text +
         " (numpy 2 promotes a float32 array that meets a NumPy float64 scalar, such as "
         "np.sqrt(2 / np.pi), or a float64 array: write math.sqrt(2 / math.pi), a Python float, "
         "which stays weak, or np.float32(...))";
}

}  // namespace ollie::spec::elab
