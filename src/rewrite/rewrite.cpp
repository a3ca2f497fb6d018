// The rewrite rules (docs/rewrites.md), the site text form, and replaying a chain.
// Each rule is one function that looks at a value and, when the rule applies there,
// returns a closure that builds the replacement in the new graph; find_sites only asks
// whether it returned one, apply runs it while copying the graph.
#include "rewrite/rewrite.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <tuple>
#include <numbers>
#include <optional>
#include <set>
#include <sstream>

#include "support/error.h"

namespace ollie::rewrite {

namespace {

using ir::Builder;
using ir::DimExpr;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

// What a replacement is built with: the new graph's builder, the old-to-new value map
// (every value before the site is already copied), and the site's source location.
struct Context {
  Builder& b;
  const std::vector<ValueId>& mapped;
  SourceLoc loc;
  ValueId m(ValueId old) const { return mapped.at(static_cast<size_t>(old)); }
};

using Build = std::function<ValueId(Context&)>;

// `x` (of `shape`) sliced to [start, stop) along axis `a`, every other axis whole.
ValueId slice_along(Context& c, ValueId x, const Shape& shape, size_t a, const DimExpr& start, const DimExpr& stop) {
  std::vector<ir::SliceAxis> axes;
  for (const DimExpr& d : shape) axes.push_back({DimExpr::constant(0), d, 1});
  axes[a].start = start;
  axes[a].stop = stop;
  return c.b.slice(x, axes, c.loc);
}

// Uses of each value, a result counting as one.
std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.nodes.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId o : n.operands) ++uses[static_cast<size_t>(o)];
  for (ValueId o : g.outputs) ++uses[static_cast<size_t>(o)];
  return uses;
}

bool is_one(const DimExpr& d) { return d.as_constant() == 1; }

// The rank-0 value that `id` spreads over its shape through Reshape and Broadcast only
// (or `id` itself when it is rank 0): nullopt when `id` is not a splat of one number.
std::optional<ValueId> scalar_behind(const Graph& g, ValueId id) {
  while (true) {
    const Node& n = g.node(id);
    if (n.shape.empty()) return id;
    if (n.kind != OpKind::Broadcast && n.kind != OpKind::Reshape) return std::nullopt;
    id = n.operands[0];
  }
}

// The exact value of a rank-0 literal: a Const, or a Python scalar's weak Convert of one.
std::optional<double> literal_value(const Graph& g, ValueId id) {
  const Node* n = &g.node(id);
  if (n->kind == OpKind::Convert && n->weak) n = &g.node(n->operands[0]);
  if (n->kind == OpKind::Const && !n->const_dim) return n->const_value;
  return std::nullopt;
}

// `scalar` (rank 0, in the new graph) spread over `shape`.
ValueId splat(Context& c, ValueId scalar, const Shape& shape) {
  const ValueId ones = c.b.reshape(scalar, Shape(shape.size(), DimExpr::constant(1)), c.loc);
  return c.b.broadcast(ones, shape, c.loc);
}

bool float_value(const Graph& g, ValueId id) { return ir::is_float(g.node(id).dtype); }

bool distinct(const std::vector<int>& labels) {
  return std::set<int>(labels.begin(), labels.end()).size() == labels.size();
}

// ---------------------------------------------------------------------------------------
// reciprocal: a / broadcast(b) -> a * broadcast(1 / b); a / c -> a * (1/c) for a literal c.

std::optional<Build> reciprocal(const Graph& g, const std::vector<int>&, ValueId id, int) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Div || !float_value(g, id)) return std::nullopt;
  const ValueId a = n.operands[0], d = n.operands[1];
  const std::optional<ValueId> scalar = scalar_behind(g, d);
  const std::optional<double> c = scalar ? literal_value(g, *scalar) : std::nullopt;
  if (c && *c != 0) {
    const double inverse = 1.0 / *c;
    const ir::DType t = g.node(*scalar).dtype;
    const Shape shape = n.shape;
    return [=](Context& x) {
      return x.b.binary(OpKind::Mul, x.m(a), splat(x, x.b.constant(inverse, t, x.loc), shape), x.loc);
    };
  }
  if (g.node(d).kind != OpKind::Broadcast) return std::nullopt;
  const ValueId b = g.node(d).operands[0];
  const Shape b_shape = g.node(b).shape, shape = n.shape;
  const ir::DType t = g.node(b).dtype;
  return [=](Context& x) {
    const ValueId one = splat(x, x.b.constant(1.0, t, x.loc), b_shape);
    const ValueId inverse = x.b.binary(OpKind::Div, one, x.m(b), x.loc);
    return x.b.binary(OpKind::Mul, x.m(a), x.b.broadcast(inverse, shape, x.loc), x.loc);
  };
}

// ---------------------------------------------------------------------------------------
// normalize-late: contract(e / broadcast(s), y) -> contract(e, y) / broadcast(s') when s is
// constant along every summed label (each axis along which s varies survives into the
// output); the same for e * broadcast(s). Variant: which operand of the contraction.

std::optional<Build> normalize_late(const Graph& g, const std::vector<int>& uses, ValueId id, int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Contract || !float_value(g, id)) return std::nullopt;
  const ValueId scaled = n.operands[static_cast<size_t>(variant)];
  const Node& op = g.node(scaled);
  if (uses[static_cast<size_t>(scaled)] != 1) return std::nullopt;
  ValueId e = -1, bc = -1;
  if (op.kind == OpKind::Div && g.node(op.operands[1]).kind == OpKind::Broadcast) {
    e = op.operands[0];
    bc = op.operands[1];
  } else if (op.kind == OpKind::Mul) {
    for (int k : {1, 0})
      if (bc < 0 && g.node(op.operands[static_cast<size_t>(k)]).kind == OpKind::Broadcast) {
        bc = op.operands[static_cast<size_t>(k)];
        e = op.operands[static_cast<size_t>(1 - k)];
      }
  }
  if (bc < 0) return std::nullopt;
  const std::vector<int>& labels = variant == 0 ? n.lhs_labels : n.rhs_labels;
  if (!distinct(labels)) return std::nullopt;
  const ValueId s = g.node(bc).operands[0];
  const Shape s_shape = g.node(s).shape;
  // The axes along which s varies, with where their labels land in the output.
  std::vector<std::pair<size_t, size_t>> kept;  // (output position, axis of s)
  for (size_t k = 0; k < s_shape.size(); ++k) {
    if (is_one(s_shape[k])) continue;
    const auto at = std::find(n.out_labels.begin(), n.out_labels.end(), labels[k]);
    if (at == n.out_labels.end()) return std::nullopt;  // s varies along a summed label
    kept.emplace_back(static_cast<size_t>(at - n.out_labels.begin()), k);
  }
  const bool divide = op.kind == OpKind::Div;
  const ValueId other = n.operands[static_cast<size_t>(1 - variant)];
  const Node contract = n;
  return [=](Context& x) {
    const ValueId lhs = variant == 0 ? x.m(e) : x.m(other), rhs = variant == 0 ? x.m(other) : x.m(e);
    const ValueId summed = x.b.contract(lhs, rhs, contract.lhs_labels, contract.rhs_labels, contract.out_labels, x.loc);
    // s without its unit axes, its axes put in output order, unit axes where the output
    // has axes s does not vary along, then broadcast over the output.
    Shape squeezed, placed(contract.shape.size(), DimExpr::constant(1));
    for (size_t k = 0; k < s_shape.size(); ++k)
      if (!is_one(s_shape[k])) squeezed.push_back(s_shape[k]);
    std::vector<std::pair<size_t, size_t>> by_position = kept;
    std::sort(by_position.begin(), by_position.end());
    std::vector<int> perm;
    for (const auto& [position, axis] : by_position) {
      int rank_in_squeezed = 0;
      for (const auto& [p2, a2] : kept) rank_in_squeezed += a2 < axis ? 1 : 0;
      perm.push_back(rank_in_squeezed);
      placed[position] = s_shape[axis];
    }
    ValueId scale = x.b.reshape(x.m(s), squeezed, x.loc);
    scale = x.b.transpose(scale, perm, x.loc);
    scale = x.b.broadcast(x.b.reshape(scale, placed, x.loc), contract.shape, x.loc);
    return x.b.binary(divide ? OpKind::Div : OpKind::Mul, summed, scale, x.loc);
  };
}

// ---------------------------------------------------------------------------------------
// fold-scale: contract(a, b) * c -> contract(a * c, b) (variant 0) or contract(a, b * c)
// (variant 1), for c one number spread over the result.

std::optional<Build> fold_scale(const Graph& g, const std::vector<int>& uses, ValueId id, int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Mul || !float_value(g, id)) return std::nullopt;
  for (int k : {0, 1}) {
    const ValueId product = n.operands[static_cast<size_t>(k)];
    const ValueId factor = n.operands[static_cast<size_t>(1 - k)];
    const std::optional<ValueId> scalar = scalar_behind(g, factor);
    if (g.node(product).kind != OpKind::Contract || uses[static_cast<size_t>(product)] != 1 || !scalar) continue;
    const Node contract = g.node(product);
    const ValueId c = *scalar;
    const Shape operand_shape = g.node(contract.operands[static_cast<size_t>(variant)]).shape;
    return [=](Context& x) {
      ValueId lhs = x.m(contract.operands[0]), rhs = x.m(contract.operands[1]);
      ValueId& scaled = variant == 0 ? lhs : rhs;
      scaled = x.b.binary(OpKind::Mul, scaled, splat(x, x.m(c), operand_shape), x.loc);
      return x.b.contract(lhs, rhs, contract.lhs_labels, contract.rhs_labels, contract.out_labels, x.loc);
    };
  }
  return std::nullopt;
}

// distribute: (x + y) * c -> x * c + y * c (and for x - y), c one number spread over the
// shape, so that the scale can then fold into both terms.
std::optional<Build> distribute(const Graph& g, const std::vector<int>& uses, ValueId id, int) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Mul || !float_value(g, id)) return std::nullopt;
  for (int k : {0, 1}) {
    const ValueId sum = n.operands[static_cast<size_t>(k)];
    const ValueId factor = n.operands[static_cast<size_t>(1 - k)];
    const OpKind kind = g.node(sum).kind;
    if ((kind != OpKind::Add && kind != OpKind::Sub) || uses[static_cast<size_t>(sum)] != 1 ||
        !scalar_behind(g, factor))
      continue;
    const ValueId p = g.node(sum).operands[0], q = g.node(sum).operands[1];
    return [=](Context& x) {
      const ValueId f = x.m(factor);
      return x.b.binary(kind, x.b.binary(OpKind::Mul, x.m(p), f, x.loc), x.b.binary(OpKind::Mul, x.m(q), f, x.loc),
                        x.loc);
    };
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------
// associate: the site is contract(I, Z) (or contract(Z, I)) with I = contract(X, Y) used
// once. Variants: 0 "right", Z joins Y first: X . (Y . Z); 1 "left", Z joins X first:
// (X . Z) . Y. Variants 2 and 3 are the same with I the site's rhs. Not when the new
// pair's result would be more than kMaxGrowth times the graph's largest value.

// How much larger than the graph's largest value a new intermediate may be.
constexpr int64_t kMaxGrowth = 16;

std::optional<Build> associate(const Graph& g, const std::vector<int>& uses, ValueId id, int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Contract) return std::nullopt;
  const size_t side = variant < 2 ? 0 : 1;
  const bool z_joins_y = variant % 2 == 0;
  const ValueId inner_id = n.operands[side], z = n.operands[1 - side];
  const Node& inner = g.node(inner_id);
  if (inner.kind != OpKind::Contract || uses[static_cast<size_t>(inner_id)] != 1) return std::nullopt;
  const std::vector<int>& at_site = side == 0 ? n.lhs_labels : n.rhs_labels;
  const std::vector<int>& z_labels = side == 0 ? n.rhs_labels : n.lhs_labels;
  if (!distinct(at_site) || !distinct(inner.out_labels)) return std::nullopt;
  // The inner contraction's labels in the site's label space: its output labels become
  // the ones the site gives them, its summed labels get fresh ones.
  std::set<int> used(n.lhs_labels.begin(), n.lhs_labels.end());
  used.insert(n.rhs_labels.begin(), n.rhs_labels.end());
  used.insert(n.out_labels.begin(), n.out_labels.end());
  std::map<int, int> rename;
  for (size_t k = 0; k < inner.out_labels.size(); ++k) rename[inner.out_labels[k]] = at_site[k];
  int fresh = 0;
  auto relabel = [&](const std::vector<int>& labels) {
    std::vector<int> out;
    for (int l : labels) {
      if (!rename.count(l)) {
        while (used.count(fresh)) ++fresh;
        used.insert(fresh);
        rename[l] = fresh;
      }
      out.push_back(rename[l]);
    }
    return out;
  };
  const std::vector<int> x_labels = relabel(inner.lhs_labels), y_labels = relabel(inner.rhs_labels);
  if (fresh >= 52) return std::nullopt;  // beyond what the text form can name
  // Which of X, Y stays outside; the pair keeps the site's operand order.
  const ValueId outside = z_joins_y ? inner.operands[0] : inner.operands[1];
  const ValueId joined = z_joins_y ? inner.operands[1] : inner.operands[0];
  const std::vector<int>& outside_labels = z_joins_y ? x_labels : y_labels;
  const std::vector<int>& joined_labels = z_joins_y ? y_labels : x_labels;
  const ValueId pair_lhs = side == 0 ? joined : z, pair_rhs = side == 0 ? z : joined;
  const std::vector<int> pair_lhs_labels = side == 0 ? joined_labels : z_labels;
  const std::vector<int> pair_rhs_labels = side == 0 ? z_labels : joined_labels;
  // The pair keeps the labels the outside operand or the result still needs.
  std::vector<int> pair_out;
  for (const auto* labels : {&pair_lhs_labels, &pair_rhs_labels})
    for (int l : *labels) {
      const bool needed = std::count(outside_labels.begin(), outside_labels.end(), l) > 0 ||
                          std::count(n.out_labels.begin(), n.out_labels.end(), l) > 0;
      if (needed && std::count(pair_out.begin(), pair_out.end(), l) == 0) pair_out.push_back(l);
    }
  // Not when the pair's result would dwarf every value of the graph at its bound dims
  // (e.g. mla_decode's p . w_uv, B x H x S x L x DV): such a kernel runs out of memory.
  std::map<int, int64_t> label_size;
  for (const auto& [labels, operand] : {std::pair{&pair_lhs_labels, pair_lhs}, std::pair{&pair_rhs_labels, pair_rhs}})
    for (size_t k = 0; k < labels->size(); ++k)
      label_size[(*labels)[k]] = g.node(operand).shape[k].evaluate(g.bound_dims);
  int64_t pair_elements = 1, largest = 1;
  for (int l : pair_out) pair_elements *= label_size[l];
  for (const Node& v : g.nodes) largest = std::max(largest, ir::element_count(ir::evaluate_shape(v.shape, g.bound_dims)));
  if (pair_elements > kMaxGrowth * largest) return std::nullopt;
  const std::vector<int> out_labels = n.out_labels;
  return [=](Context& x) {
    const ValueId pair = x.b.contract(x.m(pair_lhs), x.m(pair_rhs), pair_lhs_labels, pair_rhs_labels, pair_out, x.loc);
    // X stays the lhs, Y the rhs.
    if (z_joins_y) return x.b.contract(x.m(outside), pair, outside_labels, pair_out, out_labels, x.loc);
    return x.b.contract(pair, x.m(outside), pair_out, outside_labels, out_labels, x.loc);
  };
}

// ---------------------------------------------------------------------------------------
// exp2: exp(y * c) -> exp2(y * (c log2(e))) for a literal c, and the same through the
// max subtraction of a softmax: exp(y*c - max(y*c)) -> exp2(y*c' - max(y*c')) with
// c' = c log2(e) (max commutes with a positive scale). Only where log2(e) folds into an
// existing multiplication: exp2(x * log2(e)) alone would add a rounding of x * log2(e),
// an error proportional to |x| that the verifier's bound for exp does not allow.

// y and c when `id` is y * c (c a literal, either operand).
std::optional<std::pair<ValueId, double>> scaled_by_literal(const Graph& g, ValueId id) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Mul) return std::nullopt;
  for (int k : {1, 0}) {
    const std::optional<ValueId> scalar = scalar_behind(g, n.operands[static_cast<size_t>(k)]);
    if (const std::optional<double> c = scalar ? literal_value(g, *scalar) : std::nullopt)
      return std::make_pair(n.operands[static_cast<size_t>(1 - k)], *c);
  }
  return std::nullopt;
}

std::optional<Build> exp_to_exp2(const Graph& g, const std::vector<int>& uses, ValueId id, int) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Exp || !float_value(g, id)) return std::nullopt;
  const ValueId x = n.operands[0];
  const ir::DType t = n.dtype;
  auto one_use = [&](ValueId v) { return uses[static_cast<size_t>(v)] == 1; };
  // exp(y * c)
  if (const auto direct = scaled_by_literal(g, x); direct && one_use(x)) {
    const auto [y, c] = *direct;
    const Shape shape = n.shape;
    return [=](Context& b) {
      const ValueId splatted = splat(b, b.b.constant(c * std::numbers::log2e, t, b.loc), shape);
      return b.b.unary(OpKind::Exp2, b.b.binary(OpKind::Mul, b.m(y), splatted, b.loc), b.loc);
    };
  }
  // exp(a - broadcast(reshape(max(a)))) with a = y * c, c > 0.
  const Node& sub = g.node(x);
  if (sub.kind != OpKind::Sub || !one_use(x)) return std::nullopt;
  const ValueId a = sub.operands[0];
  const auto scaled = scaled_by_literal(g, a);
  if (!scaled || !(scaled->second > 0) || uses[static_cast<size_t>(a)] != 2) return std::nullopt;
  std::vector<ValueId> layout;  // from the max out to the subtraction: reshapes and broadcasts
  ValueId v = sub.operands[1];
  while (g.node(v).kind == OpKind::Broadcast || g.node(v).kind == OpKind::Reshape) {
    if (!one_use(v)) return std::nullopt;
    layout.push_back(v);
    v = g.node(v).operands[0];
  }
  const Node& max = g.node(v);
  if (max.kind != OpKind::Reduce || max.reduce != ir::ReduceKind::Max || max.operands[0] != a || !one_use(v))
    return std::nullopt;
  std::reverse(layout.begin(), layout.end());
  const auto [y, c] = *scaled;
  const Shape a_shape = g.node(a).shape;
  const std::vector<int> axes = max.axes;
  std::vector<std::pair<OpKind, Shape>> steps;
  for (ValueId l : layout) steps.emplace_back(g.node(l).kind, g.node(l).shape);
  return [=](Context& b) {
    const ValueId splatted = splat(b, b.b.constant(c * std::numbers::log2e, t, b.loc), a_shape);
    const ValueId scaled_y = b.b.binary(OpKind::Mul, b.m(y), splatted, b.loc);
    ValueId m = b.b.reduce(ir::ReduceKind::Max, scaled_y, axes, b.loc);
    for (const auto& [kind, shape] : steps)
      m = kind == OpKind::Broadcast ? b.b.broadcast(m, shape, b.loc) : b.b.reshape(m, shape, b.loc);
    return b.b.unary(OpKind::Exp2, b.b.binary(OpKind::Sub, scaled_y, m, b.loc), b.loc);
  };
}

// ---------------------------------------------------------------------------------------
// split-reduce: reassociation of a reduction (sum, max and min are associative and
// commutative). Variant 0 "nested": over several axes -> the last axis first, then the
// others. Variant 1 "halves": along its last reduced axis k of size n, the halves
// [0, n//2) and [n//2, n) reduced separately and combined with add / max / min (sound for
// every n: for n = 1 the first half is empty and contributes the identity).

std::optional<Build> split_reduce(const Graph& g, const std::vector<int>&, ValueId id, int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Reduce || n.axes.empty()) return std::nullopt;
  const ValueId x = n.operands[0];
  const std::vector<int> axes = n.axes;
  const ir::ReduceKind kind = n.reduce;
  const int last = axes.back();
  if (variant == 0) {
    if (axes.size() < 2) return std::nullopt;
    return [=](Context& b) {
      const ValueId inner = b.b.reduce(kind, b.m(x), {last}, b.loc);
      return b.b.reduce(kind, inner, std::vector<int>(axes.begin(), axes.end() - 1), b.loc);
    };
  }
  const Shape shape = g.node(x).shape;
  const DimExpr size = shape[static_cast<size_t>(last)];
  if (size.as_constant() && *size.as_constant() < 2) return std::nullopt;
  const OpKind combine = kind == ir::ReduceKind::Sum ? OpKind::Add : kind == ir::ReduceKind::Max ? OpKind::Max : OpKind::Min;
  return [=](Context& b) {
    const DimExpr half = size.floordiv(2);
    const auto k = static_cast<size_t>(last);
    const ValueId a = b.b.reduce(kind, slice_along(b, b.m(x), shape, k, DimExpr::constant(0), half), axes, b.loc);
    const ValueId c = b.b.reduce(kind, slice_along(b, b.m(x), shape, k, half, size), axes, b.loc);
    return b.b.binary(combine, a, c, b.loc);
  };
}

// ---------------------------------------------------------------------------------------
// flash: a softmax over axis k (e = exp(s - bcast(max_k s)), l = sum_k e, used as e / l or,
// after normalize-late, as contract(e, v) / l) computed in blocks of T along k. With
// nb = n // T full blocks and a tail [nb*T, n) (possibly empty):
//   m_b = max_t s_blk, e_b = exp(s_blk - m_b), l_b = sum_t e_b, o_b = e_b . v_blk   (per block)
//   M = max(max_b m_b, max s_tail), w_b = exp(m_b - M)
//   l = sum_b w_b l_b + sum exp(s_tail - M),  o = sum_b w_b o_b + exp(s_tail - M) . v_tail
// exact because exp(s - M) = exp(s - m_b) exp(m_b - M), for every n (an empty max is -inf,
// an empty sum 0). A block whose scores are all -inf has m_b = -inf: its exponentials use 0
// instead (exp(-inf - 0) = 0, w_b = exp(-inf - M) = 0), so such a block adds nothing, as in
// the original, rather than NaN. In the attention form the blocks and the tail of s are
// pushed into s's producers (elementwise ops, broadcasts, transposes, iotas, contractions
// used only there), so each block's scores come from one block of the keys. Variants: T.

const std::vector<int64_t> kFlashBlocks = {64, 256, 1024};
// Blocks no shorter than this, and at least this many full blocks at the bound dims.
constexpr int64_t kFlashMinBlock = 16, kFlashMinBlocks = 2;

// A chain of layout ops (Reshape, Broadcast, Transpose) from one value out to another,
// replayed on a new value of the same shape.
struct LayoutStep {
  OpKind kind;
  Shape shape;
  std::vector<int> perm;
};

ValueId replay_layout(Context& x, ValueId v, const std::vector<LayoutStep>& steps) {
  for (const LayoutStep& s : steps) {
    if (s.kind == OpKind::Reshape) v = x.b.reshape(v, s.shape, x.loc);
    else if (s.kind == OpKind::Broadcast) v = x.b.broadcast(v, s.shape, x.loc);
    else v = x.b.transpose(v, s.perm, x.loc);
  }
  return v;
}

// `shape` with axis `a` replaced by `with` (any number of dims).
Shape replace_axis(const Shape& shape, size_t a, const Shape& with) {
  Shape out(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), with.begin(), with.end());
  out.insert(out.end(), shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, shape.end());
  return out;
}

int fresh_label(std::set<int>& used) {
  int l = 0;
  while (used.count(l)) ++l;
  used.insert(l);
  return l;
}

// Builds, in the new graph, the full blocks (reshape(slice(v, a in [0, nb*T))) to
// [.., nb, T, ..]) or the tail (slice(v, a in [nb*T, n))) of an old value v along its
// axis a, pushing the slice into v's producer where v is read only here.
class Blocker {
 public:
  Blocker(const Graph& g, const std::vector<int>& uses, int64_t block) : g_(g), uses_(uses), block_(block) {}

  ValueId piece(Context& x, ValueId v, int a, bool blocks, int allowed_uses) {
    const auto key = std::make_tuple(v, a, blocks);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    const ValueId out = build(x, v, static_cast<size_t>(a), blocks, allowed_uses);
    memo_[key] = out;
    return out;
  }

 private:
  DimExpr n_of(ValueId v, size_t a) const { return g_.node(v).shape[a]; }
  DimExpr full(const DimExpr& n) const { return n.floordiv(block_) * DimExpr::constant(block_); }
  Shape piece_shape(const Shape& shape, size_t a, bool blocks) const {
    const DimExpr n = shape[a];
    if (blocks) return replace_axis(shape, a, {n.floordiv(block_), DimExpr::constant(block_)});
    return replace_axis(shape, a, {n - full(n)});
  }

  ValueId fallback(Context& x, ValueId v, size_t a, bool blocks) {
    const Shape& shape = g_.node(v).shape;
    const ValueId sliced = blocks ? slice_along(x, x.m(v), shape, a, DimExpr::constant(0), full(shape[a]))
                                  : slice_along(x, x.m(v), shape, a, full(shape[a]), shape[a]);
    return blocks ? x.b.reshape(sliced, piece_shape(shape, a, true), x.loc) : sliced;
  }

  ValueId build(Context& x, ValueId v, size_t a, bool blocks, int allowed_uses) {
    const Node& n = g_.node(v);
    if (uses_[static_cast<size_t>(v)] > allowed_uses) return fallback(x, v, a, blocks);
    const Shape shape = piece_shape(n.shape, a, blocks);
    auto same = [&](ValueId o) { return piece(x, o, static_cast<int>(a), blocks, 1); };
    if (n.kind == OpKind::Convert) return x.b.convert(same(n.operands[0]), n.dtype, x.loc, n.weak);
    if (n.kind == OpKind::PowI) return x.b.powi(same(n.operands[0]), n.exponent, x.loc);
    if (ir::is_elementwise_unary(n.kind)) return x.b.unary(n.kind, same(n.operands[0]), x.loc);
    if (ir::is_elementwise_binary(n.kind)) {
      const ValueId p = same(n.operands[0]);
      return x.b.binary(n.kind, p, same(n.operands[1]), x.loc);
    }
    if (n.kind == OpKind::Select) {
      const ValueId c = same(n.operands[0]), p = same(n.operands[1]);
      return x.b.select(c, p, same(n.operands[2]), x.loc);
    }
    if (n.kind == OpKind::Broadcast) {
      const ValueId o = n.operands[0];
      const Shape& o_shape = g_.node(o).shape;
      if (o_shape[a] == n.shape[a]) return x.b.broadcast(same(o), shape, x.loc);
      // Broadcast along a: the operand stays whole (size 1 there).
      const Shape ones = blocks ? replace_axis(o_shape, a, {DimExpr::constant(1), DimExpr::constant(1)}) : o_shape;
      return x.b.broadcast(blocks ? x.b.reshape(x.m(o), ones, x.loc) : x.m(o), shape, x.loc);
    }
    if (n.kind == OpKind::Transpose) {
      const int b = n.axes[a];
      const ValueId p = piece(x, n.operands[0], b, blocks, 1);
      if (!blocks) return x.b.transpose(p, n.axes, x.loc);
      std::vector<int> perm;
      for (size_t i = 0; i < n.axes.size(); ++i) {
        if (i == a) {
          perm.push_back(b);
          perm.push_back(b + 1);
        } else {
          perm.push_back(n.axes[i] > b ? n.axes[i] + 1 : n.axes[i]);
        }
      }
      return x.b.transpose(p, perm, x.loc);
    }
    if (n.kind == OpKind::Iota) {
      const int ax = n.axis;
      if (ax != static_cast<int>(a)) return x.b.iota(shape, blocks && ax > static_cast<int>(a) ? ax + 1 : ax, n.dtype, x.loc);
      if (blocks) {
        const ValueId outer = x.b.iota(shape, ax, n.dtype, x.loc);
        const ValueId scaled = x.b.binary(OpKind::Mul, outer, splat(x, x.b.constant(static_cast<double>(block_), n.dtype, x.loc), shape), x.loc);
        return x.b.binary(OpKind::Add, scaled, x.b.iota(shape, ax + 1, n.dtype, x.loc), x.loc);
      }
      const ValueId start = splat(x, x.b.dim_constant(full(n.shape[a]), n.dtype, x.loc), shape);
      return x.b.binary(OpKind::Add, x.b.iota(shape, ax, n.dtype, x.loc), start, x.loc);
    }
    if (n.kind == OpKind::Contract && distinct(n.out_labels) && distinct(n.lhs_labels) && distinct(n.rhs_labels)) {
      const int lo = n.out_labels[a];
      std::set<int> used(n.lhs_labels.begin(), n.lhs_labels.end());
      used.insert(n.rhs_labels.begin(), n.rhs_labels.end());
      used.insert(n.out_labels.begin(), n.out_labels.end());
      const int lb = blocks ? fresh_label(used) : lo, lt = blocks ? fresh_label(used) : lo;
      auto relabel = [&](const std::vector<int>& labels) {
        std::vector<int> out;
        for (int l : labels) {
          if (l == lo && blocks) {
            out.push_back(lb);
            out.push_back(lt);
          } else {
            out.push_back(l);
          }
        }
        return out;
      };
      auto operand = [&](size_t side) {
        const std::vector<int>& labels = side == 0 ? n.lhs_labels : n.rhs_labels;
        const auto at = std::find(labels.begin(), labels.end(), lo);
        if (at == labels.end()) return x.m(n.operands[side]);
        return piece(x, n.operands[side], static_cast<int>(at - labels.begin()), blocks, 1);
      };
      const ValueId lhs = operand(0), rhs = operand(1);
      return x.b.contract(lhs, rhs, relabel(n.lhs_labels), relabel(n.rhs_labels), relabel(n.out_labels), x.loc);
    }
    return fallback(x, v, a, blocks);
  }

  const Graph& g_;
  const std::vector<int>& uses_;
  int64_t block_;
  std::map<std::tuple<ValueId, int, bool>, ValueId> memo_;
};

// The layout ops (each read only by the next) from `outer` down to the first other value;
// returns that value and the steps from it back out to `outer`.
std::pair<ValueId, std::vector<LayoutStep>> layout_below(const Graph& g, const std::vector<int>& uses, ValueId outer) {
  std::vector<LayoutStep> steps;
  ValueId v = outer;
  while (true) {
    const Node& n = g.node(v);
    if (n.kind != OpKind::Reshape && n.kind != OpKind::Broadcast && n.kind != OpKind::Transpose) break;
    if (uses[static_cast<size_t>(v)] != 1) break;
    steps.push_back({n.kind, n.shape, n.axes});
    v = n.operands[0];
  }
  std::reverse(steps.begin(), steps.end());
  return {v, steps};
}

// A softmax over axis k divided by its sum, as flash and online rewrite it: e = exp(s -
// bcast(max_k s)) (or exp2), l = sum_k e, the site e / l or (attention, after
// normalize-late) contract(e, v) / l, where the contraction sums k against axis `kv` of
// v and keeps every other axis of e.
struct SoftmaxSite {
  int k = 0;
  ValueId e = -1, s = -1, num = -1;
  OpKind exp_kind = OpKind::Exp;
  std::vector<LayoutStep> divisor;  // from l out to the site's divisor
  int side = -1;                    // attention: e's side of the contraction; -1: softmax
  int kv = -1;
};

std::optional<SoftmaxSite> match_softmax(const Graph& g, const std::vector<int>& uses, ValueId id) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Div || !float_value(g, id)) return std::nullopt;
  auto use = [&](ValueId v) { return uses[static_cast<size_t>(v)]; };
  SoftmaxSite m;
  // The divisor: l = sum_k e through layout ops.
  const auto [sum_id, divisor_steps] = layout_below(g, uses, n.operands[1]);
  if (divisor_steps.empty() || use(sum_id) != 1) return std::nullopt;
  m.divisor = divisor_steps;
  const Node& sum = g.node(sum_id);
  if (sum.kind != OpKind::Reduce || sum.reduce != ir::ReduceKind::Sum || sum.axes.size() != 1) return std::nullopt;
  const int k = m.k = sum.axes[0];
  const ValueId e = m.e = sum.operands[0];
  const Node& exp = g.node(e);
  if ((exp.kind != OpKind::Exp && exp.kind != OpKind::Exp2) || use(e) != 2) return std::nullopt;
  m.exp_kind = exp.kind;
  const ValueId sub = exp.operands[0];
  if (g.node(sub).kind != OpKind::Sub || use(sub) != 1) return std::nullopt;
  const ValueId s = m.s = g.node(sub).operands[0];
  const Shape s_shape = g.node(s).shape;
  // The max, kept along k and broadcast back over it (and nothing else).
  const ValueId bc = g.node(sub).operands[1];
  if (g.node(bc).kind != OpKind::Broadcast || use(bc) != 1) return std::nullopt;
  const ValueId kept = g.node(bc).operands[0];
  if (g.node(kept).kind != OpKind::Reshape || use(kept) != 1 ||
      g.node(kept).shape != replace_axis(s_shape, static_cast<size_t>(k), {DimExpr::constant(1)}))
    return std::nullopt;
  const ValueId max = g.node(kept).operands[0];
  const Node& mx = g.node(max);
  if (mx.kind != OpKind::Reduce || mx.reduce != ir::ReduceKind::Max || mx.axes != std::vector<int>{k} ||
      mx.operands[0] != s || use(max) != 1)
    return std::nullopt;
  const DimExpr len = s_shape[static_cast<size_t>(k)];
  // The numerator: e itself (softmax) or contract(e, v) summing over k (attention).
  const ValueId num = m.num = n.operands[0];
  if (num != e) {
    const Node& c = g.node(num);
    if (c.kind != OpKind::Contract || use(num) != 1) return std::nullopt;
    if (c.operands[0] == e && c.operands[1] != e) m.side = 0;
    else if (c.operands[1] == e && c.operands[0] != e) m.side = 1;
    else return std::nullopt;
    const std::vector<int>& el = m.side == 0 ? c.lhs_labels : c.rhs_labels;
    const std::vector<int>& vl = m.side == 0 ? c.rhs_labels : c.lhs_labels;
    if (!distinct(el) || !distinct(vl) || !distinct(c.out_labels)) return std::nullopt;
    const int lk = el[static_cast<size_t>(k)];
    auto in_out = [&](int l) { return std::count(c.out_labels.begin(), c.out_labels.end(), l) > 0; };
    if (in_out(lk)) return std::nullopt;
    // Every other axis of e survives into the output: the block weights scale output elements.
    for (int l : el)
      if (l != lk && !in_out(l)) return std::nullopt;
    const auto at = std::find(vl.begin(), vl.end(), lk);
    if (at == vl.end()) return std::nullopt;
    m.kv = static_cast<int>(at - vl.begin());
    if (g.node(c.operands[static_cast<size_t>(1 - m.side)]).shape[static_cast<size_t>(m.kv)] != len) return std::nullopt;
  }
  return m;
}

std::optional<Build> flash(const Graph& g, const std::vector<int>& uses, ValueId id, int variant) {
  const auto site = match_softmax(g, uses, id);
  if (!site) return std::nullopt;
  const int k = site->k, side = site->side, kv = site->kv;
  const ValueId s = site->s, num = site->num;
  const OpKind exp_kind = site->exp_kind;
  const Shape s_shape = g.node(s).shape;
  const DimExpr len = s_shape[static_cast<size_t>(k)];
  // Blocks of T, not tiny, at least two at the bound dims.
  const int64_t block = kFlashBlocks.at(static_cast<size_t>(variant));
  if (block < kFlashMinBlock || len.evaluate(g.bound_dims) / block < kFlashMinBlocks) return std::nullopt;
  const ir::DType t = g.node(s).dtype;
  const Node contract = side >= 0 ? g.node(num) : Node{};
  const std::vector<LayoutStep> divisor = site->divisor;
  // apply's use counts are a temporary: the closure keeps its own copy (the graph outlives it).
  const std::vector<int> counts = uses;
  return [=, &g](Context& x) {
    const size_t ka = static_cast<size_t>(k);
    const bool attention = side >= 0;
    Blocker blocker(g, counts, block);
    // The softmax form still reads all of s for its normalize pass: slice it, push nothing.
    const int s_uses = attention ? 2 : 0;
    // Node order is stage order inside a shared loop: each block's scores, statistics and
    // (attention) partial output first, so a schedule can compute them all inside one
    // block loop; then the tail, then the combination.
    const ValueId sb = blocker.piece(x, s, k, true, s_uses);
    const Shape blk_shape = x.b.node(sb).shape;
    const Shape stat_shape = replace_axis(s_shape, ka, {len.floordiv(block)});
    const ValueId m_b = x.b.reduce(ir::ReduceKind::Max, sb, {k + 1}, x.loc);
    const ValueId ninf = splat(x, x.b.constant(-std::numeric_limits<double>::infinity(), t, x.loc), stat_shape);
    const ValueId zero = splat(x, x.b.constant(0.0, t, x.loc), stat_shape);
    const ValueId m_safe = x.b.select(x.b.binary(OpKind::Eq, m_b, ninf, x.loc), zero, m_b, x.loc);
    const Shape m_kept = replace_axis(blk_shape, ka + 1, {DimExpr::constant(1)});
    const ValueId e_b = x.b.unary(
        exp_kind, x.b.binary(OpKind::Sub, sb, x.b.broadcast(x.b.reshape(m_safe, m_kept, x.loc), blk_shape, x.loc), x.loc),
        x.loc);
    const ValueId l_b = x.b.reduce(ir::ReduceKind::Sum, e_b, {k + 1}, x.loc);
    // Attention: o_b = e_b . v_blk, the block axis next to e's other axes.
    std::vector<int> w_labels, ob_labels;
    ValueId o_b = -1, v = -1;
    if (attention) {
      const std::vector<int>& el = side == 0 ? contract.lhs_labels : contract.rhs_labels;
      const std::vector<int>& vl = side == 0 ? contract.rhs_labels : contract.lhs_labels;
      const int lk = el[ka];
      std::set<int> used(contract.lhs_labels.begin(), contract.lhs_labels.end());
      used.insert(contract.rhs_labels.begin(), contract.rhs_labels.end());
      const int lb = fresh_label(used), lt = fresh_label(used);
      auto split_label = [&](const std::vector<int>& labels) {
        std::vector<int> out;
        for (int l : labels) {
          out.push_back(l == lk ? lb : l);
          if (l == lk) out.push_back(lt);
        }
        return out;
      };
      w_labels = el;
      w_labels[ka] = lb;
      ob_labels = w_labels;
      for (int l : contract.out_labels)
        if (std::count(el.begin(), el.end(), l) == 0) ob_labels.push_back(l);
      v = contract.operands[static_cast<size_t>(1 - side)];
      const ValueId vb = blocker.piece(x, v, kv, true, 1);
      const std::vector<int> eb_labels = split_label(el), vb_labels = split_label(vl);
      o_b = side == 0 ? x.b.contract(e_b, vb, eb_labels, vb_labels, ob_labels, x.loc)
                      : x.b.contract(vb, e_b, vb_labels, eb_labels, ob_labels, x.loc);
    }
    const ValueId st = blocker.piece(x, s, k, false, s_uses);
    const Shape tail_shape = x.b.node(st).shape;
    const ValueId big =
        x.b.binary(OpKind::Max, x.b.reduce(ir::ReduceKind::Max, m_b, {k}, x.loc), x.b.reduce(ir::ReduceKind::Max, st, {k}, x.loc), x.loc);
    const Shape row_kept = replace_axis(s_shape, ka, {DimExpr::constant(1)});
    auto big_over = [&](const Shape& over) { return x.b.broadcast(x.b.reshape(big, row_kept, x.loc), over, x.loc); };
    const ValueId w_b = x.b.unary(exp_kind, x.b.binary(OpKind::Sub, m_b, big_over(stat_shape), x.loc), x.loc);
    const ValueId e_t = x.b.unary(exp_kind, x.b.binary(OpKind::Sub, st, big_over(tail_shape), x.loc), x.loc);
    const ValueId l_new = x.b.binary(OpKind::Add, x.b.reduce(ir::ReduceKind::Sum, x.b.binary(OpKind::Mul, w_b, l_b, x.loc), {k}, x.loc),
                                     x.b.reduce(ir::ReduceKind::Sum, e_t, {k}, x.loc), x.loc);
    const ValueId scale = replay_layout(x, l_new, divisor);
    if (!attention) {
      const ValueId e_full = x.b.unary(exp_kind, x.b.binary(OpKind::Sub, x.m(s), big_over(s_shape), x.loc), x.loc);
      return x.b.binary(OpKind::Div, e_full, scale, x.loc);
    }
    const ValueId vt = blocker.piece(x, v, kv, false, 1);
    const ValueId o_blocks = x.b.contract(w_b, o_b, w_labels, ob_labels, contract.out_labels, x.loc);
    const ValueId o_tail = side == 0 ? x.b.contract(e_t, vt, contract.lhs_labels, contract.rhs_labels, contract.out_labels, x.loc)
                                     : x.b.contract(vt, e_t, contract.lhs_labels, contract.rhs_labels, contract.out_labels, x.loc);
    return x.b.binary(OpKind::Div, x.b.binary(OpKind::Add, o_blocks, o_tail, x.loc), scale, x.loc);
  };
}

// ---------------------------------------------------------------------------------------
// online: attention's contract(e, v) / sum_k e (e = exp(s - bcast(max_k s)), after
// normalize-late) -> exp_contract(s, v) / exp_contract(s): each is one pass over s (and v)
// with a running max that rescales the sum as it grows (a one-pass, online softmax), so
// neither the max nor e is stored. Exact: both shift by the same max M (0 where it is
// -inf), as the original does; a row of all -inf gives 0 / 0 = NaN as exp(-inf + inf) does.
std::optional<Build> online(const Graph& g, const std::vector<int>& uses, ValueId id, int) {
  const auto site = match_softmax(g, uses, id);
  if (!site || site->side < 0) return std::nullopt;
  const SoftmaxSite m = *site;
  const Node c = g.node(m.num);
  return [=, &g](Context& x) {
    const bool base2 = m.exp_kind == OpKind::Exp2;
    const std::vector<int>& el = m.side == 0 ? c.lhs_labels : c.rhs_labels;
    const std::vector<int>& vl = m.side == 0 ? c.rhs_labels : c.lhs_labels;
    const ValueId v = x.m(c.operands[static_cast<size_t>(1 - m.side)]);
    const ValueId o = x.b.exp_contract(x.m(m.s), v, el, vl, c.out_labels, base2, x.loc);
    std::vector<int> kept;
    for (size_t a = 0; a < el.size(); ++a)
      if (a != static_cast<size_t>(m.k)) kept.push_back(el[a]);
    const ValueId l = x.b.exp_contract(x.m(m.s), -1, el, {}, kept, base2, x.loc);
    return x.b.binary(OpKind::Div, o, replay_layout(x, l, m.divisor), x.loc);
  };
}

// ---------------------------------------------------------------------------------------

using Match = std::optional<Build> (*)(const Graph&, const std::vector<int>&, ValueId, int);

struct Rule {
  std::string name;
  std::vector<std::string> variants;  // one empty name for a rule with one form
  Match match;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"reciprocal", {""}, reciprocal},
      {"normalize-late", {"lhs", "rhs"}, normalize_late},
      {"fold-scale", {"lhs", "rhs"}, fold_scale},
      {"distribute", {""}, distribute},
      {"associate", {"right", "left", "rhs-right", "rhs-left"}, associate},
      {"exp2", {""}, exp_to_exp2},
      {"split-reduce", {"nested", "halves"}, split_reduce},
      {"flash", {"64", "256", "1024"}, flash},
      {"online", {""}, online},
  };
  return table;
}

const Rule& rule_named(const std::string& name) {
  for (const Rule& r : rules())
    if (r.name == name) return r;
  std::string known;
  for (const Rule& r : rules()) known += (known.empty() ? "" : ", ") + r.name;
  throw UserError("unknown rewrite rule '" + name + "'; the rules are: " + known);
}

// Drops values nothing reads (the params' inputs always stay) and renumbers.
Graph without_dead_values(const Graph& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (ValueId o : g.outputs) live[static_cast<size_t>(o)] = true;
  for (ValueId i : g.inputs) live[static_cast<size_t>(i)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (live[i])
      for (ValueId o : g.nodes[i].operands) live[static_cast<size_t>(o)] = true;
  Graph out = g;
  out.nodes.clear();
  std::vector<ValueId> renumbered(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    Node n = g.nodes[i];
    for (ValueId& o : n.operands) o = renumbered[static_cast<size_t>(o)];
    renumbered[i] = static_cast<ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (ValueId& i : out.inputs) i = renumbered[static_cast<size_t>(i)];
  for (ValueId& o : out.outputs) o = renumbered[static_cast<size_t>(o)];
  return out;
}

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

}  // namespace

std::string to_text(const Site& site) {
  const Rule& r = rule_named(site.rule);
  std::string text = site.rule + " %" + std::to_string(site.node);
  if (site.variant >= 0 && static_cast<size_t>(site.variant) < r.variants.size() && !r.variants[site.variant].empty())
    text += " " + r.variants[static_cast<size_t>(site.variant)];
  return text;
}

Site parse_site(const std::string& line) {
  std::istringstream in(trimmed(line));
  std::string name, node, variant, extra;
  in >> name >> node >> variant >> extra;
  const std::string expected = "write RULE %NODE [FORM], e.g. 'reciprocal %12' or 'associate %20 right'";
  if (name.empty() || node.size() < 2 || node[0] != '%' || !extra.empty())
    throw UserError("malformed rewrite '" + trimmed(line) + "': " + expected);
  Site site;
  const Rule& r = rule_named(name);
  site.rule = name;
  try {
    size_t used = 0;
    site.node = static_cast<ValueId>(std::stol(node.substr(1), &used));
    if (used + 1 != node.size() || site.node < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UserError("malformed rewrite '" + trimmed(line) + "': '" + node + "' is not a value number; " + expected);
  }
  const auto at = std::find(r.variants.begin(), r.variants.end(), variant);
  if (at == r.variants.end()) {
    std::string forms;
    for (const auto& v : r.variants) forms += (forms.empty() ? "" : ", ") + (v.empty() ? "(none)" : v);
    throw UserError("malformed rewrite '" + trimmed(line) + "': " + name + " has the forms " + forms);
  }
  site.variant = static_cast<int>(at - r.variants.begin());
  return site;
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Rule& r : rules()) out.push_back(r.name);
    return out;
  }();
  return names;
}

std::vector<Site> find_sites(const Graph& graph) {
  const std::vector<int> uses = use_counts(graph);
  std::vector<Site> sites;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const Rule& r : rules())
      for (size_t v = 0; v < r.variants.size(); ++v)
        if (r.match(graph, uses, static_cast<ValueId>(i), static_cast<int>(v)))
          sites.push_back({r.name, static_cast<ValueId>(i), static_cast<int>(v)});
  return sites;
}

Graph apply(const Graph& graph, const Site& site) {
  const Rule& r = rule_named(site.rule);
  if (site.node < 0 || static_cast<size_t>(site.node) >= graph.nodes.size())
    throw UserError("rewrite '" + to_text(site) + "': the graph has no value %" + std::to_string(site.node) +
                    " (it has %0 to %" + std::to_string(graph.nodes.size() - 1) + ")");
  if (site.variant < 0 || static_cast<size_t>(site.variant) >= r.variants.size())
    throw UserError("rewrite " + site.rule + ": no form number " + std::to_string(site.variant));
  const std::optional<Build> build = r.match(graph, use_counts(graph), site.node, site.variant);
  if (!build)
    throw UserError("rewrite '" + to_text(site) + "' does not apply: %" + std::to_string(site.node) + " is not a " +
                    site.rule + " site (see docs/rewrites.md; `ollie check` prints the graph)");
  Graph out = graph;
  out.nodes.clear();
  Builder b(out);
  std::vector<ValueId> mapped(graph.nodes.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<ValueId>(i) == site.node) {
      Context context{b, mapped, graph.nodes[i].loc};
      mapped[i] = (*build)(context);
      continue;
    }
    Node n = graph.nodes[i];
    for (ValueId& o : n.operands) o = mapped[static_cast<size_t>(o)];
    mapped[i] = static_cast<ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (ValueId& i : out.inputs) i = mapped[static_cast<size_t>(i)];
  for (ValueId& o : out.outputs) o = mapped[static_cast<size_t>(o)];
  Graph result = without_dead_values(out);
  ir::verify(result);
  return result;
}

Graph replay(const Graph& graph, const std::string& chain) {
  Graph g = graph;
  std::istringstream in(chain);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trimmed(line).empty() || trimmed(line)[0] == '#') continue;
    try {
      g = apply(g, parse_site(line));
    } catch (const UserError& e) {
      throw UserError("rewrite chain line " + std::to_string(number) + " ('" + trimmed(line) + "'): " + e.what());
    }
  }
  return g;
}

}  // namespace ollie::rewrite
