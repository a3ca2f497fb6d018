// The algebraic rewrite rules (docs/rewrites.md): reciprocal, normalize-late, fold-scale,
// distribute, associate, exp2 and split-reduce. Each is a Match (rules.h); the rule table
// that lists them is in rewrite.cpp.
#include <algorithm>
#include <map>
#include <numbers>
#include <set>

#include "rewrite/rules.h"

namespace ollie::rewrite {

namespace {

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

}  // namespace

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
      return x.b.binary(OpKind::Mul, x.m(a), splat(x, x.b.constant(inverse, t, x.loc), shape),
                        x.loc);
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

std::optional<Build> normalize_late(const Graph& g, const std::vector<int>& uses, ValueId id,
                                    int variant) {
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
    const ValueId lhs = variant == 0 ? x.m(e) : x.m(other),
                  rhs = variant == 0 ? x.m(other) : x.m(e);
    const ValueId summed = x.b.contract(lhs, rhs, contract.lhs_labels, contract.rhs_labels,
                                        contract.out_labels, x.loc);
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

std::optional<Build> fold_scale(const Graph& g, const std::vector<int>& uses, ValueId id,
                                int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Mul || !float_value(g, id)) return std::nullopt;
  for (int k : {0, 1}) {
    const ValueId product = n.operands[static_cast<size_t>(k)];
    const ValueId factor = n.operands[static_cast<size_t>(1 - k)];
    const std::optional<ValueId> scalar = scalar_behind(g, factor);
    if (g.node(product).kind != OpKind::Contract || uses[static_cast<size_t>(product)] != 1 ||
        !scalar)
      continue;
    const Node contract = g.node(product);
    const ValueId c = *scalar;
    const Shape operand_shape = g.node(contract.operands[static_cast<size_t>(variant)]).shape;
    return [=](Context& x) {
      ValueId lhs = x.m(contract.operands[0]), rhs = x.m(contract.operands[1]);
      ValueId& scaled = variant == 0 ? lhs : rhs;
      scaled = x.b.binary(OpKind::Mul, scaled, splat(x, x.m(c), operand_shape), x.loc);
      return x.b.contract(lhs, rhs, contract.lhs_labels, contract.rhs_labels, contract.out_labels,
                          x.loc);
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
      return x.b.binary(kind, x.b.binary(OpKind::Mul, x.m(p), f, x.loc),
                        x.b.binary(OpKind::Mul, x.m(q), f, x.loc), x.loc);
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

std::optional<Build> associate(const Graph& g, const std::vector<int>& uses, ValueId id,
                               int variant) {
  const Node& n = g.node(id);
  if (n.kind != OpKind::Contract) return std::nullopt;
  const size_t side = variant < 2 ? 0 : 1;
  const bool z_joins_y = variant % 2 == 0;
  const ValueId inner_id = n.operands[side], z = n.operands[1 - side];
  const Node& inner = g.node(inner_id);
  if (inner.kind != OpKind::Contract || uses[static_cast<size_t>(inner_id)] != 1)
    return std::nullopt;
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
  for (const auto& [labels, operand] :
       {std::pair{&pair_lhs_labels, pair_lhs}, std::pair{&pair_rhs_labels, pair_rhs}})
    for (size_t k = 0; k < labels->size(); ++k)
      label_size[(*labels)[k]] = g.node(operand).shape[k].evaluate(g.bound_dims);
  int64_t pair_elements = 1, largest = 1;
  for (int l : pair_out) pair_elements *= label_size[l];
  for (const Node& v : g.nodes)
    largest = std::max(largest, ir::element_count(ir::evaluate_shape(v.shape, g.bound_dims)));
  if (pair_elements > kMaxGrowth * largest) return std::nullopt;
  const std::vector<int> out_labels = n.out_labels;
  return [=](Context& x) {
    const ValueId pair = x.b.contract(x.m(pair_lhs), x.m(pair_rhs), pair_lhs_labels,
                                      pair_rhs_labels, pair_out, x.loc);
    // X stays the lhs, Y the rhs.
    if (z_joins_y)
      return x.b.contract(x.m(outside), pair, outside_labels, pair_out, out_labels, x.loc);
    return x.b.contract(pair, x.m(outside), pair_out, outside_labels, out_labels, x.loc);
  };
}

// ---------------------------------------------------------------------------------------
// exp2: exp(y * c) -> exp2(y * (c log2(e))) for a literal c, and the same through the
// max subtraction of a softmax: exp(y*c - max(y*c)) -> exp2(y*c' - max(y*c')) with
// c' = c log2(e) (max commutes with a positive scale). Only where log2(e) folds into an
// existing multiplication: exp2(x * log2(e)) alone would add a rounding of x * log2(e),
// an error proportional to |x| that the verifier's bound for exp does not allow.

namespace {

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

}  // namespace

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
  if (max.kind != OpKind::Reduce || max.reduce != ir::ReduceKind::Max || max.operands[0] != a ||
      !one_use(v))
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

std::optional<Build> split_reduce(const Graph& g, const std::vector<int>&, ValueId id,
                                  int variant) {
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
  const OpKind combine = kind == ir::ReduceKind::Sum   ? OpKind::Add
                         : kind == ir::ReduceKind::Max ? OpKind::Max
                                                       : OpKind::Min;
  return [=](Context& b) {
    const DimExpr half = size.floordiv(2);
    const auto k = static_cast<size_t>(last);
    const ValueId a =
        b.b.reduce(kind, slice_along(b, b.m(x), shape, k, DimExpr::constant(0), half), axes, b.loc);
    const ValueId c = b.b.reduce(kind, slice_along(b, b.m(x), shape, k, half, size), axes, b.loc);
    return b.b.binary(combine, a, c, b.loc);
  };
}

}  // namespace ollie::rewrite
