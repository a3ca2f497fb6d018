// Is the spec polynomial, and how large may integer inputs be so that every value stays
// exact in its dtype? The rules and why they are sound: docs/verifier.md, "How
// 'polynomial' is decided from the IR".
#include "verify/polynomial.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "interp/interp.h"
#include "verify/input_draw.h"

namespace ollie::verify {
namespace {

using ir::OpKind;

bool integer_dtype(ir::DType t) { return t == ir::DType::I32 || t == ir::DType::I64; }

// Why `n` may be inexact on exact integer operands; "" when it is exact.
std::string op_reason(const ir::Node& n) {
  switch (n.kind) {
    case OpKind::Input:
    case OpKind::Iota:
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Not:
    case OpKind::Convert:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Select:
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Gather:
    case OpKind::Reduce:
    case OpKind::Contract: return "";
    case OpKind::Const: {
      if (n.const_dim ||
          (std::isfinite(n.const_value) && n.const_value == std::trunc(n.const_value)))
        return "";
      char text[64];
      std::snprintf(text, sizeof text, "the constant %.15g", n.const_value);
      return text;
    }
    case OpKind::PowI:
      return n.exponent >= 0 ? "" : "a negative power (** " + std::to_string(n.exponent) + ")";
    case OpKind::Div:
      // Integer division truncates exactly; a float one rounds (a mean divides too).
      return integer_dtype(n.dtype) ? "" : "div (a division or a mean)";
    case OpKind::FloorDiv:
    case OpKind::Mod: return integer_dtype(n.dtype) ? "" : ir::op_name(n.kind);
    default: return ir::op_name(n.kind);  // exp, log, sqrt, tanh, erf, sin, cos, pow
  }
}

std::string where(const ir::Node& n, size_t id) {
  std::string s = "%" + std::to_string(id);
  if (n.loc.valid()) s += " (line " + std::to_string(n.loc.line) + ")";
  return s;
}

// The values some result depends on.
std::vector<bool> live_values(const ir::Graph& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (ir::ValueId out : g.outputs) live[static_cast<size_t>(out)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (live[i])
      for (ir::ValueId op : g.nodes[i].operands) live[static_cast<size_t>(op)] = true;
  return live;
}

// Largest integer a dtype holds exactly (and the reference, in double, too).
double exact_limit(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return 0x1p24;
    case ir::DType::F16: return 0x1p11;
    case ir::DType::BF16: return 0x1p8;
    case ir::DType::I32: return 2147483647.0;
    default: return 0x1p53;
  }
}

const char* limit_name(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return "2^24 (f32)";
    case ir::DType::F16: return "2^11 (f16)";
    case ir::DType::BF16: return "2^8 (bf16)";
    case ir::DType::I32: return "2^31 - 1 (i32)";
    case ir::DType::I64: return "2^53 (i64, the reference's double)";
    default: return "2^53 (f64)";
  }
}

// The magnitude evaluation of `g` as a graph of its own, in f64: each live non-bool
// value's magnitude (an upper bound on |value| and on every partial result forming it),
// and one scalar output per such value, the largest magnitude over its elements. With
// every float input equal to k, a value's magnitude is at most its magnitude at k = 1
// times k^degree (k >= 1): true of the inputs (k = 1 * k^1; integer params and constants
// have degree 0), and kept by +, max (the larger degree), * and contractions (the sum of
// the degrees) and powi (n times the degree). So one evaluation, at k = 1, bounds all k.
struct Magnitude {
  ir::Graph graph;
  std::vector<size_t> checked;  // the original value of each output
  std::vector<int64_t> degree;  // and its degree in k
};

Magnitude magnitude_graph(const ir::Graph& g, const std::vector<bool>& live) {
  Magnitude m;
  ir::Graph& mg = m.graph;
  mg.entry = g.entry + "_magnitude";
  mg.dims = g.dims;
  mg.bound_dims = g.bound_dims;
  ir::Builder b(mg);
  for (size_t i = 0; i < g.params.size(); ++i) {
    ir::Param p = g.params[i];
    if (p.dtype != ir::DType::Bool) p.dtype = ir::DType::F64;
    mg.params.push_back(p);
    mg.inputs.push_back(b.input(static_cast<int>(i), p.name, p.dtype, p.shape));
  }
  std::vector<ir::ValueId> of(g.nodes.size(), -1);
  std::vector<int64_t> degree(g.nodes.size(), 0);  // 0 for bools
  // A bool is 0 or 1: its magnitude is 1, whatever the comparison decided.
  auto mag = [&](ir::ValueId v) -> ir::ValueId {
    const ir::Node& n = g.node(v);
    if (n.dtype != ir::DType::Bool) return of[static_cast<size_t>(v)];
    const ir::ValueId one = b.constant(1.0, ir::DType::F64);
    if (n.shape.empty()) return one;
    return b.broadcast(b.reshape(one, ir::Shape(n.shape.size(), ir::DimExpr::constant(1))),
                       n.shape);
  };
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    const ir::Node& n = g.nodes[id];
    if (!live[id] || n.dtype == ir::DType::Bool) continue;
    auto x = [&](size_t k) { return mag(n.operands[k]); };
    auto deg = [&](size_t k) { return degree[static_cast<size_t>(n.operands[k])]; };
    int64_t d = 0;  // the largest operand degree, for the ops that do not add degrees
    for (size_t k = 0; k < n.operands.size(); ++k) d = std::max(d, deg(k));
    if (n.kind == OpKind::Input) d = ir::is_float(n.dtype) ? 1 : 0;
    if (n.kind == OpKind::Mul || n.kind == OpKind::Contract) d = deg(0) + deg(1);
    if (n.kind == OpKind::Gather) d = deg(0);  // the indices select, they do not scale
    if (n.kind == OpKind::PowI) d = std::min<int64_t>(deg(0) * n.exponent, int64_t{1} << 20);
    degree[id] = d;
    ir::ValueId v = -1;
    switch (n.kind) {
      case OpKind::Input: v = mg.inputs[static_cast<size_t>(n.input_index)]; break;
      case OpKind::Const:
        v = b.constant(
            std::fabs(n.const_dim ? static_cast<double>(n.const_dim->evaluate(g.bound_dims))
                                  : n.const_value),
            ir::DType::F64);
        break;
      case OpKind::Iota: v = b.iota(n.shape, n.axis, ir::DType::F64); break;
      case OpKind::Neg:
      case OpKind::Abs:
      case OpKind::Convert: v = x(0); break;
      case OpKind::PowI: v = b.powi(x(0), n.exponent); break;
      case OpKind::Add:
      case OpKind::Sub: v = b.binary(OpKind::Add, x(0), x(1)); break;
      case OpKind::Mul: v = b.binary(OpKind::Mul, x(0), x(1)); break;
      // |max(a, b)|, |min(a, b)| <= max(|a|, |b|); integer |a // b|, |trunc(a / b)| <= |a| and |a %
      // b| < |b|.
      case OpKind::Max:
      case OpKind::Min:
      case OpKind::Div:
      case OpKind::FloorDiv:
      case OpKind::Mod: v = b.binary(OpKind::Max, x(0), x(1)); break;
      case OpKind::Select:
        v = b.binary(OpKind::Max, x(1), x(2));
        break;  // either branch may be computed
      case OpKind::Broadcast: v = b.broadcast(x(0), n.shape); break;
      case OpKind::Reshape: v = b.reshape(x(0), n.shape); break;
      case OpKind::Transpose: v = b.transpose(x(0), n.axes); break;
      case OpKind::Slice: v = b.slice(x(0), n.slices); break;
      case OpKind::Concat: {
        std::vector<ir::ValueId> xs;
        for (size_t k = 0; k < n.operands.size(); ++k) xs.push_back(x(k));
        v = b.concat(xs, n.axis);
        break;
      }
      case OpKind::Gather: {
        // Any row may be gathered: the table's largest magnitude, everywhere.
        std::vector<int> all(g.node(n.operands[0]).shape.size());
        for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int>(a);
        v = b.reduce(ir::ReduceKind::Max, x(0), all);
        if (!n.shape.empty())
          v = b.broadcast(b.reshape(v, ir::Shape(n.shape.size(), ir::DimExpr::constant(1))),
                          n.shape);
        break;
      }
      case OpKind::Reduce:
        v = b.reduce(n.reduce == ir::ReduceKind::Sum ? ir::ReduceKind::Sum : ir::ReduceKind::Max,
                     x(0), n.axes);
        break;
      case OpKind::Contract:
        v = b.contract(x(0), x(1), n.lhs_labels, n.rhs_labels, n.out_labels);
        break;
      default:
        OLLIE_CHECK(false, std::string("magnitude of ") + ir::op_name(n.kind) +
                               ", which is not polynomial");
    }
    of[id] = v;
    std::vector<int> all(n.shape.size());
    for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int>(a);
    mg.outputs.push_back(all.empty() ? v : b.reduce(ir::ReduceKind::Max, v, all));
    mg.results.push_back({"out" + std::to_string(m.checked.size()), ir::DType::F64, {}});
    m.checked.push_back(id);
    m.degree.push_back(d);
  }
  return m;
}

}  // namespace

std::string polynomial_reason(const ir::Graph& graph) {
  const std::vector<bool> live = live_values(graph);
  for (size_t id = 0; id < graph.nodes.size(); ++id) {
    if (!live[id]) continue;
    const std::string why = op_reason(graph.nodes[id]);
    if (!why.empty()) return why + " at " + where(graph.nodes[id], id);
  }
  return "";
}

ExactRange exact_range(const ir::Graph& graph, int64_t k_max) {
  ExactRange range;
  if (std::string why = polynomial_reason(graph); !why.empty()) {
    range.reason = "not polynomial: " + why;
    return range;
  }
  const Magnitude m = magnitude_graph(graph, live_values(graph));
  const std::vector<int64_t> rows = index_ranges(graph);
  std::vector<interp::Tensor> inputs;
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ir::DType t = graph.params[i].dtype;
    interp::Tensor x;
    x.dtype = m.graph.params[i].dtype;
    x.shape = ir::evaluate_shape(m.graph.params[i].shape, m.graph.bound_dims);
    // k = 1; every suite draws integer params from [-8, 8], index arrays from [-V, V).
    const double int_magnitude = rows[i] > 0 ? static_cast<double>(rows[i]) : 8.0;
    x.data.assign(static_cast<size_t>(ir::element_count(x.shape)),
                  ir::is_float(t) || t == ir::DType::Bool ? 1.0 : int_magnitude);
    inputs.push_back(std::move(x));
  }
  const interp::Result r = interp::evaluate(m.graph, inputs);
  // Per value: its magnitude at k = 1 times k^degree must stay within its dtype's limit.
  int64_t k = std::max<int64_t>(1, k_max);
  double fraction = 0;
  for (size_t o = 0; o < m.checked.size(); ++o) {
    const size_t id = m.checked[o];
    const double one = r.values[o].data.empty() ? 0.0 : r.values[o].data[0];
    const double limit = exact_limit(graph.nodes[id].dtype);
    if (!(one <= limit)) {  // NaN counts as too large
      char text[64];
      std::snprintf(text, sizeof text, "values up to %.3g", one);
      range.reason = std::string(text) + " at " + where(graph.nodes[id], id) + " exceed " +
                     limit_name(graph.nodes[id].dtype) + " even with inputs in [-1, 1]";
      return range;
    }
    const auto at = [&](int64_t kk) {
      return one * std::pow(static_cast<double>(kk), static_cast<double>(m.degree[o]));
    };
    if (one > 0 && m.degree[o] > 0) {
      // The largest k with at(k) <= limit: the root, then corrected for its rounding.
      int64_t fits = static_cast<int64_t>(
          std::min(static_cast<double>(k),
                   std::floor(std::pow(limit / one, 1.0 / static_cast<double>(m.degree[o])))));
      while (fits > 1 && at(fits) > limit) --fits;
      while (fits < k && at(fits + 1) <= limit) ++fits;
      k = std::max<int64_t>(1, fits);
    }
  }
  for (size_t o = 0; o < m.checked.size(); ++o) {
    const double one = r.values[o].data.empty() ? 0.0 : r.values[o].data[0];
    fraction = std::max(fraction,
                        one * std::pow(static_cast<double>(k), static_cast<double>(m.degree[o])) /
                            exact_limit(graph.nodes[m.checked[o]].dtype));
  }
  range.k = k;
  range.fraction = fraction;
  return range;
}

}  // namespace ollie::verify
