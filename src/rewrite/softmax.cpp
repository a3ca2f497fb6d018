// The softmax family of rewrite rules (docs/rewrites.md): match_softmax finds a softmax
// divided by its sum (alone, or inside attention after normalize-late); flash computes it
// in blocks along the softmax axis, online in one pass with a running max. Each rule is a
// Match (rules.h); the rule table that lists them is in rewrite.cpp.
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "rewrite/rules.h"

namespace ollie::rewrite {

namespace {

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
    if (s.kind == OpKind::Reshape)
      v = x.b.reshape(v, s.shape, x.loc);
    else if (s.kind == OpKind::Broadcast)
      v = x.b.broadcast(v, s.shape, x.loc);
    else
      v = x.b.transpose(v, s.perm, x.loc);
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
  Blocker(const Graph& g, const std::vector<int>& uses, int64_t block)
      : g_(g), uses_(uses), block_(block) {}

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
    const ValueId sliced =
        blocks ? slice_along(x, x.m(v), shape, a, DimExpr::constant(0), full(shape[a]))
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
      const Shape ones =
          blocks ? replace_axis(o_shape, a, {DimExpr::constant(1), DimExpr::constant(1)}) : o_shape;
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
      if (ax != static_cast<int>(a))
        return x.b.iota(shape, blocks && ax > static_cast<int>(a) ? ax + 1 : ax, n.dtype, x.loc);
      if (blocks) {
        const ValueId outer = x.b.iota(shape, ax, n.dtype, x.loc);
        const ValueId scaled = x.b.binary(
            OpKind::Mul, outer,
            splat(x, x.b.constant(static_cast<double>(block_), n.dtype, x.loc), shape), x.loc);
        return x.b.binary(OpKind::Add, scaled, x.b.iota(shape, ax + 1, n.dtype, x.loc), x.loc);
      }
      const ValueId start = splat(x, x.b.dim_constant(full(n.shape[a]), n.dtype, x.loc), shape);
      return x.b.binary(OpKind::Add, x.b.iota(shape, ax, n.dtype, x.loc), start, x.loc);
    }
    if (n.kind == OpKind::Contract && distinct(n.out_labels) && distinct(n.lhs_labels) &&
        distinct(n.rhs_labels)) {
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
      return x.b.contract(lhs, rhs, relabel(n.lhs_labels), relabel(n.rhs_labels),
                          relabel(n.out_labels), x.loc);
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
std::pair<ValueId, std::vector<LayoutStep>> layout_below(const Graph& g,
                                                         const std::vector<int>& uses,
                                                         ValueId outer) {
  std::vector<LayoutStep> steps;
  ValueId v = outer;
  while (true) {
    const Node& n = g.node(v);
    if (n.kind != OpKind::Reshape && n.kind != OpKind::Broadcast && n.kind != OpKind::Transpose)
      break;
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
  if (sum.kind != OpKind::Reduce || sum.reduce != ir::ReduceKind::Sum || sum.axes.size() != 1)
    return std::nullopt;
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
  if (mx.kind != OpKind::Reduce || mx.reduce != ir::ReduceKind::Max ||
      mx.axes != std::vector<int>{k} || mx.operands[0] != s || use(max) != 1)
    return std::nullopt;
  const DimExpr len = s_shape[static_cast<size_t>(k)];
  // The numerator: e itself (softmax) or contract(e, v) summing over k (attention).
  const ValueId num = m.num = n.operands[0];
  if (num != e) {
    const Node& c = g.node(num);
    if (c.kind != OpKind::Contract || use(num) != 1) return std::nullopt;
    if (c.operands[0] == e && c.operands[1] != e)
      m.side = 0;
    else if (c.operands[1] == e && c.operands[0] != e)
      m.side = 1;
    else
      return std::nullopt;
    const std::vector<int>& el = m.side == 0 ? c.lhs_labels : c.rhs_labels;
    const std::vector<int>& vl = m.side == 0 ? c.rhs_labels : c.lhs_labels;
    if (!distinct(el) || !distinct(vl) || !distinct(c.out_labels)) return std::nullopt;
    const int lk = el[static_cast<size_t>(k)];
    auto in_out = [&](int l) {
      return std::count(c.out_labels.begin(), c.out_labels.end(), l) > 0;
    };
    if (in_out(lk)) return std::nullopt;
    // Every other axis of e survives into the output: the block weights scale output elements.
    for (int l : el)
      if (l != lk && !in_out(l)) return std::nullopt;
    const auto at = std::find(vl.begin(), vl.end(), lk);
    if (at == vl.end()) return std::nullopt;
    m.kv = static_cast<int>(at - vl.begin());
    if (g.node(c.operands[static_cast<size_t>(1 - m.side)]).shape[static_cast<size_t>(m.kv)] != len)
      return std::nullopt;
  }
  return m;
}

}  // namespace

// flash, as described above kFlashBlocks; the variant picks the block length.
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
  if (block < kFlashMinBlock || len.evaluate(g.bound_dims) / block < kFlashMinBlocks)
    return std::nullopt;
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
    const ValueId ninf =
        splat(x, x.b.constant(-std::numeric_limits<double>::infinity(), t, x.loc), stat_shape);
    const ValueId zero = splat(x, x.b.constant(0.0, t, x.loc), stat_shape);
    const ValueId m_safe = x.b.select(x.b.binary(OpKind::Eq, m_b, ninf, x.loc), zero, m_b, x.loc);
    const Shape m_kept = replace_axis(blk_shape, ka + 1, {DimExpr::constant(1)});
    const ValueId e_b = x.b.unary(
        exp_kind,
        x.b.binary(OpKind::Sub, sb,
                   x.b.broadcast(x.b.reshape(m_safe, m_kept, x.loc), blk_shape, x.loc), x.loc),
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
    const ValueId big = x.b.binary(OpKind::Max, x.b.reduce(ir::ReduceKind::Max, m_b, {k}, x.loc),
                                   x.b.reduce(ir::ReduceKind::Max, st, {k}, x.loc), x.loc);
    const Shape row_kept = replace_axis(s_shape, ka, {DimExpr::constant(1)});
    auto big_over = [&](const Shape& over) {
      return x.b.broadcast(x.b.reshape(big, row_kept, x.loc), over, x.loc);
    };
    const ValueId w_b =
        x.b.unary(exp_kind, x.b.binary(OpKind::Sub, m_b, big_over(stat_shape), x.loc), x.loc);
    const ValueId e_t =
        x.b.unary(exp_kind, x.b.binary(OpKind::Sub, st, big_over(tail_shape), x.loc), x.loc);
    const ValueId l_new = x.b.binary(
        OpKind::Add,
        x.b.reduce(ir::ReduceKind::Sum, x.b.binary(OpKind::Mul, w_b, l_b, x.loc), {k}, x.loc),
        x.b.reduce(ir::ReduceKind::Sum, e_t, {k}, x.loc), x.loc);
    const ValueId scale = replay_layout(x, l_new, divisor);
    if (!attention) {
      const ValueId e_full =
          x.b.unary(exp_kind, x.b.binary(OpKind::Sub, x.m(s), big_over(s_shape), x.loc), x.loc);
      return x.b.binary(OpKind::Div, e_full, scale, x.loc);
    }
    const ValueId vt = blocker.piece(x, v, kv, false, 1);
    const ValueId o_blocks =
        x.b.contract(w_b, o_b, w_labels, ob_labels, contract.out_labels, x.loc);
    const ValueId o_tail = side == 0
                               ? x.b.contract(e_t, vt, contract.lhs_labels, contract.rhs_labels,
                                              contract.out_labels, x.loc)
                               : x.b.contract(vt, e_t, contract.lhs_labels, contract.rhs_labels,
                                              contract.out_labels, x.loc);
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

}  // namespace ollie::rewrite
