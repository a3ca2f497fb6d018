// Causal masks as iteration domains: a reduction whose term, at the iterations where an
// affine predicate over its loops (a triangular mask from np.tri / np.triu / iota
// comparisons) is false, is one value that does not vary along the reduction loop, gets
// that loop's bound from the predicate, with a runtime guard that keeps the result
// bit-identical to the full loop (docs/schedules.md, "Causal domains"). A contraction
// p @ v whose factor p is one value per row where the mask is false (a masked softmax)
// is bounded the same way, guarded also by a per-call check that the skipped v is finite.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "loops/stages.h"

namespace ollie::loops {
namespace {

using ir::OpKind;

std::atomic<bool> g_domains{true};

// A bounded sum runs past its bound to a multiple of this many iterations: 16 lanes of
// f32 times 4 interleaved vector accumulators, the most a compiler uses for `omp simd`.
constexpr int64_t kSumChunk = 64;

// The deepest chain of elementwise producers expanded into a reduction's term.
constexpr int kMaxExpandDepth = 8;

// The stage that writes `buffer`, when it is the only writer and an elementwise stage
// whose store index is its vars (so a load's multi-index says which iteration wrote it).
const Stage* elementwise_writer(const Stages& st, const std::string& buffer) {
  const Stage* found = nullptr;
  for (const auto& s : st.stages) {
    if (s.buffer != buffer) continue;
    if (found || s.reduce || s.what == "concat part" || s.store_index.size() != s.vars.size())
      return nullptr;
    for (size_t d = 0; d < s.vars.size(); ++d)
      if (s.store_index[d]->kind != ExprKind::Var || s.store_index[d]->name != s.vars[d])
        return nullptr;
    found = &s;
  }
  return found;
}

// `e` with the loads of elementwise intermediates replaced by the values their writers
// store there: how each term is computed, traced through materialized buffers (a mask
// applied in one stage and reduced in another).
Expr expand(const Stages& st, const Expr& e, int depth) {
  if (e->kind == ExprKind::Load && depth < kMaxExpandDepth) {
    const Stage* w = elementwise_writer(st, e->name);
    if (w && e->args.size() == w->vars.size() + 1) {
      std::map<std::string, Expr> at;
      for (size_t d = 0; d < w->vars.size(); ++d) at[w->vars[d]] = e->args[d + 1];
      return expand(st, substitute(w->value, at), depth + 1);
    }
    return e;
  }
  if (e->args.empty()) return e;
  std::vector<Expr> a;
  bool changed = false;
  for (const auto& x : e->args) {
    a.push_back(expand(st, x, depth));
    changed = changed || a.back() != x;
  }
  return changed ? rebuild(e, std::move(a)) : e;
}

// `e` with every occurrence of the node `from` (by identity) replaced by `to`.
Expr replace_node(const Expr& e, const Expr& from, const Expr& to) {
  if (e == from) return to;
  if (e->args.empty()) return e;
  std::vector<Expr> a;
  bool changed = false;
  for (const auto& x : e->args) {
    a.push_back(replace_node(x, from, to));
    changed = changed || a.back() != x;
  }
  return changed ? rebuild(e, std::move(a)) : e;
}

// An integer expression as coeff * j + rest (rest free of j); nullopt when it is not affine
// in j with a constant coefficient.
struct Affine {
  int64_t coeff = 0;
  Expr rest;
};

bool is_int(const Expr& e, int64_t v) { return e->kind == ExprKind::IntImm && e->int_value == v; }
bool is_negation(const Expr& e) {
  return e->kind == ExprKind::Binary && e->op == OpKind::Sub && is_int(e->args[0], 0);
}

// a + b and a - b over i64, keeping the bounds readable: 0 - (0 - s) is s.
Expr sub(const Expr& a, const Expr& b);
Expr add(const Expr& a, const Expr& b) {
  if (is_int(a, 0)) return b;
  if (is_int(b, 0)) return a;
  if (is_negation(b)) return sub(a, b->args[1]);
  if (b->kind == ExprKind::IntImm && a->kind == ExprKind::Binary && a->op == OpKind::Add &&
      a->args[1]->kind == ExprKind::IntImm)  // (s + c) + d is s + (c + d)
    return add(a->args[0], make_int(a->args[1]->int_value + b->int_value));
  return make_binary(OpKind::Add, a, b);
}
Expr sub(const Expr& a, const Expr& b) {
  if (is_int(b, 0)) return a;
  if (is_negation(b)) return add(a, b->args[1]);
  if (is_int(a, 0) && b->kind == ExprKind::Binary && b->op == OpKind::Sub)  // -(x - y) = y - x
    return sub(b->args[1], b->args[0]);
  if (b->kind == ExprKind::IntImm) return add(a, make_int(-b->int_value));
  return make_binary(OpKind::Sub, a, b);
}

std::optional<Affine> affine_in(const Expr& e, const std::string& j) {
  if (ir::is_float(e->dtype) || e->dtype == ir::DType::Bool) return std::nullopt;
  if (!mentions(e, j)) return Affine{0, e};
  if (e->kind == ExprKind::Var) return Affine{1, make_int(0)};
  if (e->kind == ExprKind::Unary && e->op == OpKind::Neg) {
    auto a = affine_in(e->args[0], j);
    if (!a) return std::nullopt;
    return Affine{-a->coeff, sub(make_int(0), a->rest)};
  }
  if (e->kind != ExprKind::Binary) return std::nullopt;
  auto a = affine_in(e->args[0], j), b = affine_in(e->args[1], j);
  if (!a || !b) return std::nullopt;
  switch (e->op) {
    case OpKind::Add: return Affine{a->coeff + b->coeff, add(a->rest, b->rest)};
    case OpKind::Sub: return Affine{a->coeff - b->coeff, sub(a->rest, b->rest)};
    case OpKind::Mul:
      if (a->coeff == 0 && a->rest->kind == ExprKind::IntImm)
        return Affine{a->rest->int_value * b->coeff, make_binary(OpKind::Mul, a->rest, b->rest)};
      if (b->coeff == 0 && b->rest->kind == ExprKind::IntImm)
        return Affine{b->rest->int_value * a->coeff, make_binary(OpKind::Mul, a->rest, b->rest)};
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<double> literal(const Expr& e) {
  if (e->kind == ExprKind::FloatImm) return e->float_value;
  if (e->kind == ExprKind::IntImm) return static_cast<double>(e->int_value);
  return std::nullopt;
}

std::optional<bool> compare(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::Lt: return a < b;
    case OpKind::Le: return a <= b;
    case OpKind::Gt: return a > b;
    case OpKind::Ge: return a >= b;
    case OpKind::Eq: return a == b;
    case OpKind::Ne: return a != b;
    default: return std::nullopt;
  }
}

// A bool turned into a number, `p ? c1 : c0` with literal c1, c0: a bool converted (1 or
// 0), or a select of two literals (np.triu(np.ones(...)) is where(mask, 1, 0)).
struct NumberedBool {
  Expr p;
  double if_true, if_false;
};

std::optional<NumberedBool> numbered_bool(const Expr& e) {
  if (e->kind == ExprKind::Cast && e->args[0]->dtype == ir::DType::Bool)
    return NumberedBool{e->args[0], 1, 0};
  if (e->kind == ExprKind::Cast) {  // f32 of f64 of a bool, ...
    auto inner = numbered_bool(e->args[0]);
    if (inner && inner->if_true == 1 && inner->if_false == 0) return inner;
    return std::nullopt;
  }
  if (e->kind == ExprKind::Select) {
    const auto a = literal(e->args[1]), b = literal(e->args[2]);
    if (a && b) return NumberedBool{e->args[0], *a, *b};
  }
  return std::nullopt;
}

// The bound `hi` such that, for every j, `cond == holds` exactly when j < hi; nullopt
// when `cond` is not such a predicate. Understood: integer comparisons affine in j with
// coefficient +-1 (iota comparisons), `not`, and a bool turned into a number compared
// with a literal (np.tri(...) > 0, np.triu(np.ones(...), 1) > 0, ...).
std::optional<Expr> upper_bound(const Expr& cond, const std::string& j, bool holds) {
  if (cond->kind == ExprKind::Unary && cond->op == OpKind::Not)
    return upper_bound(cond->args[0], j, !holds);
  if (cond->kind != ExprKind::Binary) return std::nullopt;
  const Expr &a = cond->args[0], &b = cond->args[1];
  if (const auto nb = numbered_bool(a); nb && literal(b)) {
    const auto when_true = compare(cond->op, nb->if_true, *literal(b));
    const auto when_false = compare(cond->op, nb->if_false, *literal(b));
    if (!when_true || !when_false || *when_true == *when_false) return std::nullopt;
    return upper_bound(nb->p, j, *when_true ? holds : !holds);
  }
  OpKind op = cond->op;
  if (op != OpKind::Lt && op != OpKind::Le && op != OpKind::Gt && op != OpKind::Ge)
    return std::nullopt;
  auto la = affine_in(a, j), lb = affine_in(b, j);
  if (!la || !lb) return std::nullopt;
  const int64_t c = la->coeff - lb->coeff;
  // a OP b  <=>  c*j + r OP 0 with r = ra - rb.
  const Expr r = sub(la->rest, lb->rest);
  Expr x;  // j OP x
  if (c == 1) {
    x = sub(make_int(0), r);
  } else if (c == -1) {
    x = r;
    op = op == OpKind::Lt   ? OpKind::Gt
         : op == OpKind::Le ? OpKind::Ge
         : op == OpKind::Gt ? OpKind::Lt
                            : OpKind::Le;
  } else {
    return std::nullopt;
  }
  if (!holds)  // the negation: not (j < x) is j >= x, ...
    op = op == OpKind::Lt   ? OpKind::Ge
         : op == OpKind::Le ? OpKind::Gt
         : op == OpKind::Gt ? OpKind::Le
                            : OpKind::Lt;
  if (op == OpKind::Lt) return x;
  if (op == OpKind::Le) return add(x, make_int(1));
  return std::nullopt;  // a lower bound: the loop would have to start above 0
}

// Whether `e` reads only the vars in `allowed`.
bool only_vars(const Expr& e, const std::set<std::string>& allowed) {
  std::set<std::string> used;
  collect_vars(e, used);
  for (const auto& u : used)
    if (!allowed.count(u)) return false;
  return true;
}

// The loops of `s` outside its loop `x`.
std::set<std::string> outer_loops(const Stage& s, size_t x) {
  std::set<std::string> outer;
  for (size_t t = 0; t < x; ++t) outer.insert(s.loops[t].name);
  return outer;
}

// The dataflow fact "one value where the mask is false": the bound `hi` of the kept
// iterations of loop `j` when `value` (read at the iterations of `j` and the loops in
// `outer`, traced through the elementwise stages it reads) holds a select on a mask
// `j < hi` whose masked branch makes the whole value independent of `j`. A masked softmax
// row qualifies at every step: select(mask, s, MASKED), minus the row max, its exp, that
// divided by the row sum (each masked entry is exp(MASKED - m) / l, one value per row).
std::optional<Expr> invariant_where_masked(const Stages& st, const Expr& value,
                                           const std::string& j,
                                           const std::set<std::string>& outer) {
  // The guard reads the value itself at one iteration of `j`: it may not need inner loops.
  std::set<std::string> guard_vars = outer;
  guard_vars.insert(j);
  if (!only_vars(value, guard_vars)) return std::nullopt;
  const Expr term = expand(st, value, 0);
  std::optional<Expr> found;
  for_each_expr(term, [&](const Expr& e) {
    if (found || e->kind != ExprKind::Select || !mentions(e->args[0], j)) return;
    for (const bool holds : {true, false}) {
      const Expr& masked = e->args[holds ? 2 : 1];
      if (mentions(masked, j)) continue;
      const std::optional<Expr> hi = upper_bound(e->args[0], j, holds);
      if (!hi || !only_vars(*hi, outer)) continue;
      if (!only_vars(replace_node(term, e, masked), outer)) continue;
      found = hi;
      return;
    }
  });
  return found;
}

// The mask of reduction loop `x` of `s`: the bound of the kept iterations, when the term
// at every other iteration is one value that depends only on the loops outside `x`.
std::optional<Expr> mask_bound(const Stages& st, const Stage& s, size_t x) {
  return invariant_where_masked(st, s.value, s.loops[x].name, outer_loops(s, x));
}

// min(max(hi, 0), E): the first masked iteration of a loop of extent E, or E.
Expr first_masked(const Expr& hi, const Expr& E) {
  return make_binary(OpKind::Min, make_binary(OpKind::Max, hi, make_int(0)), E);
}

// A sum's loop of extent E whose iterations [h, E) add exact zeros unless `unsafe`: E when
// h < E and unsafe, else h rounded up to whole kSumChunks (masked iterations: exact zeros),
// so that a vectorized sum deals the kept terms to its lanes as the full loop does.
Expr sum_extent(const Expr& E, const Expr& h, const Expr& unsafe) {
  const Expr chunks = make_binary(
      OpKind::Mul, make_binary(OpKind::Div, add(h, make_int(kSumChunk - 1)), make_int(kSumChunk)),
      make_int(kSumChunk));
  return make_select(make_binary(OpKind::And, make_binary(OpKind::Lt, h, E), unsafe), E,
                     make_binary(OpKind::Min, chunks, E));
}

// The guarded extent of reduction loop `x` of `s` (extent E) under the mask bound `hi`.
// With h = clamp(hi, 0, E), iterations [h, E) are masked and each has the same term t,
// which the guard reads as the stage's own term at j = h (only when h < E).
//
// Sum (acc + t): the initial value is +0.0 and x + y is -0.0 only when both are -0.0, so
// the accumulator (and every partial sum of rfactor, a register tile or a vector lane) is
// never -0.0; then acc + (+-0) == acc bit for bit (NaN and inf included). So when t == 0
// (either sign) the masked iterations change nothing and the loop stops at h, rounded up
// to whole kSumChunks (the iterations past h add exact zeros too: a vectorized sum then
// gives each kept term the lane it has in the full loop, and its lanes are reduced
// alike); otherwise (t is NaN, inf or any other value: a fully masked row's
// exp(-inf - -inf)) it runs in full.
//
// Max / min (ollie_max(acc, t) returns one of its operands): f(f(a, t), t) == f(a, t),
// so after one masked iteration the others change nothing: the loop runs to h + 1. Split
// and factored into partial results, other partials miss their copies of t; t is then
// still in the one that holds iteration h, and when t is neither NaN nor +-0 it ties with
// no other value, so the max over the partials has the same bits. The guard runs the full
// loop when t is NaN or +-0.
Expr guarded_extent(const Stage& s, size_t x, const Expr& hi) {
  const StageLoop& l = s.loops[x];
  const Expr E = l.extent;
  const Expr h = first_masked(hi, E);
  const Expr t = substitute(s.value, {{l.name, h}});
  const Expr zero = ir::is_float(s.dtype) ? make_float(0, s.dtype) : make_int(0, s.dtype);
  const Expr masked_rows = make_binary(OpKind::Lt, h, E);
  if (s.combine == OpKind::Add) return sum_extent(E, h, make_binary(OpKind::Ne, t, zero));
  Expr unsafe = make_binary(OpKind::Eq, t, zero);
  if (ir::is_float(s.dtype))
    unsafe = make_binary(OpKind::Or, make_binary(OpKind::Ne, t, t), unsafe);
  return make_select(make_binary(OpKind::And, masked_rows, unsafe), E,
                     make_binary(OpKind::Min, add(h, make_int(1)), E));
}

// A contraction's term `factor * other` whose factor is one value per row where the mask
// is false (a softmax's probabilities p in p @ v): the mask's bound and the two factors.
struct MaskedFactor {
  Expr hi;
  Expr factor;
  Expr other;
};

std::optional<MaskedFactor> masked_factor(const Stages& st, const Stage& s, size_t x) {
  if (!s.contract || s.value->kind != ExprKind::Binary || s.value->op != OpKind::Mul)
    return std::nullopt;
  const std::string& j = s.loops[x].name;
  for (const size_t side : {size_t{0}, size_t{1}}) {
    const Expr& f = s.value->args[side];
    const Expr& other = s.value->args[1 - side];
    if (!mentions(f, j) || !mentions(other, j)) continue;
    if (const auto hi = invariant_where_masked(st, f, j, outer_loops(s, x)))
      return MaskedFactor{*hi, f, other};
  }
  return std::nullopt;
}

// The stage that finds, once per call before the contraction `s`, from which iteration of
// its loop `x` on the factor `other` is finite at every element: 1 + the last iteration
// where other * 0 is not 0 (other is inf or NaN there), 0 when there is none. Its buffer
// is a one-element i64 local.
Stage finite_check(Stages& st, const Stage& s, size_t x, const Expr& other) {
  Stage c;
  c.name = s.name + "_finite";
  while (st.reserved.count(c.name) || st.find(c.name) >= 0 || st.buffer(c.name)) c.name += "_";
  st.reserved.insert(c.name);
  c.buffer = c.name;
  c.dtype = ir::DType::I64;
  c.buffer_shape = {ir::DimExpr::constant(1)};
  st.locals.push_back({c.name, BufferRole::Local, c.dtype, c.buffer_shape});
  c.what = "Reduce max (finite from)";
  for (const auto& l : s.loops) {
    if (!mentions(other, l.name)) continue;
    c.vars.push_back(l.name);
    c.loops.push_back({l.name, l.extent, l.nominal, true, ForKind::Serial});
    c.subst[l.name] = make_var(l.name);
  }
  c.store_index = {make_int(0)};
  const Expr zero = make_float(0, other->dtype);
  const Expr not_finite = make_binary(OpKind::Ne, make_binary(OpKind::Mul, other, zero), zero);
  c.value = make_select(not_finite, add(make_var(s.loops[x].name), make_int(1)), make_int(0));
  c.reduce = true;
  c.combine = OpKind::Max;
  c.init = make_int(0);
  return c;
}

// The guarded extent of the contraction's loop `x` (extent E): with h the first masked
// iteration, every masked term is factor(h) * other, and factor(h) is the row's one masked
// value. When it is +-0 and every `other` from iteration h on is finite (h >= the
// `finite_from` the check stage found), the masked terms are all +-0, which change no sum
// (guarded_extent's argument); otherwise (a masked value that is not zero, as in a fully
// masked row, or an inf or NaN in the skipped part of v) the loop runs in full.
Expr contraction_extent(const Stage& s, size_t x, const MaskedFactor& m, const Expr& finite_from) {
  const StageLoop& l = s.loops[x];
  const Expr h = first_masked(m.hi, l.extent);
  const Expr masked = substitute(m.factor, {{l.name, h}});
  const Expr zero = make_float(0, m.factor->dtype);
  const Expr unsafe = make_binary(OpKind::Or, make_binary(OpKind::Ne, masked, zero),
                                  make_binary(OpKind::Lt, h, finite_from));
  return sum_extent(l.extent, h, unsafe);
}

bool domain_candidate(const Stage& s) {
  return s.reduce && s.running_max.empty() && !s.accumulate_depth && s.host < 0 &&
         (s.combine == OpKind::Add || s.combine == OpKind::Max || s.combine == OpKind::Min);
}

// Whether stage `s` reads `buffer` anywhere (value, initial value, loop extents).
bool reads(const Stage& s, const std::string& buffer) {
  std::vector<Expr> loads;
  collect_loads(s.value, buffer, loads);
  if (s.init) collect_loads(s.init, buffer, loads);
  for (const auto& l : s.loops) collect_loads(l.extent, buffer, loads);
  return !loads.empty();
}

// The bound, over the loops of the writer `p`, of the part of p's buffer that its one
// reader `c` uses: `c` reads the buffer only in the kept arm of a select on a mask
// `j < hi` (np.where(mask, MASKED, q @ k.T): the masked scores are never read), each load
// at c's own vars, one per dim. The dim of `j` is then the one p's loop `x` writes, and
// `hi`, over c's vars, translates into p's. nullopt when c is not of that form.
std::optional<std::pair<size_t, Expr>> read_bound(const Stages& st, const Stage& p,
                                                  const Stage& c) {
  if (c.reduce || c.store_index.size() != c.vars.size()) return std::nullopt;
  std::vector<Expr> loads;
  collect_loads(c.value, p.buffer, loads);
  if (loads.empty()) return std::nullopt;
  std::map<std::string, std::string> to_p;  // c's var -> p's var writing the same dim
  for (const auto& l : loads) {
    if (l->args.size() != p.store_index.size() + 1) return std::nullopt;
    for (size_t d = 0; d < p.store_index.size(); ++d) {
      const Expr& at = l->args[d + 1];
      const std::string& writes = p.store_index[d]->name;
      if (at->kind != ExprKind::Var) return std::nullopt;
      const auto [it, fresh] = to_p.emplace(at->name, writes);
      if (!fresh && it->second != writes) return std::nullopt;
    }
  }
  std::map<std::string, Expr> names;
  std::set<std::string> mapped;
  for (const auto& [cv, pv] : to_p) {
    names[cv] = make_var(pv);
    mapped.insert(cv);
  }
  std::optional<std::pair<size_t, Expr>> found;
  for_each_expr(c.value, [&](const Expr& e) {
    if (found || e->kind != ExprKind::Select) return;
    const Expr cond = expand(st, e->args[0], 0);  // the mask, traced through its stages
    for (const std::string& j : c.vars) {
      if (!to_p.count(j) || !mentions(cond, j)) continue;
      for (const bool holds : {true, false}) {
        const Expr& masked = e->args[holds ? 2 : 1];
        std::vector<Expr> left;  // loads of p outside the kept arm (the mask's own included)
        collect_loads(replace_node(c.value, e, masked), p.buffer, left);
        collect_loads(e->args[0], p.buffer, left);
        collect_loads(cond, p.buffer, left);
        const std::optional<Expr> hi = upper_bound(cond, j, holds);
        if (!left.empty() || !hi || !only_vars(*hi, mapped)) continue;
        const Expr bound = substitute(*hi, names);
        for (size_t x = 0; x < p.loops.size(); ++x)
          if (p.loops[x].name == to_p.at(j) && only_vars(bound, outer_loops(p, x))) {
            found = std::make_pair(x, bound);
            return;
          }
      }
    }
  });
  return found;
}

// A stage whose buffer its one reader reads only where a mask keeps it (read_bound)
// computes only that part: the loop of the masked dim stops at the mask's bound
// (q @ k.T of a causal attention skips the keys past each query). The reader's select
// discards whatever the skipped elements hold, so the kernel's values are the same bit
// for bit. The extent is written as a select (min(max(hi, 0), E) when hi < E) so that
// causal_bound knows it: a block of rows may run to the largest bound of its rows.
void bound_unread(Stages& st) {
  for (Stage& p : st.stages) {
    const Buffer* b = st.buffer(p.buffer);
    if (!b || b->role != BufferRole::Local || !p.running_max.empty() || p.host >= 0) continue;
    const Stage* reader = nullptr;
    int writers = 0, readers = 0;
    for (const Stage& c : st.stages) {
      writers += c.buffer == p.buffer;
      if (reads(c, p.buffer)) {
        ++readers;
        reader = &c;
      }
    }
    if (writers != 1 || readers != 1 || reader == &p) continue;
    if (!std::all_of(p.store_index.begin(), p.store_index.end(),
                     [](const Expr& e) { return e->kind == ExprKind::Var; }))
      continue;
    const auto bound = read_bound(st, p, *reader);
    if (!bound) continue;
    StageLoop& l = p.loops[bound->first];
    if (l.reduction || !p.subst.count(l.name) || p.subst.at(l.name)->kind != ExprKind::Var ||
        (l.extent->kind != ExprKind::Dim && l.extent->kind != ExprKind::IntImm))
      continue;
    const Expr h = make_binary(OpKind::Max, bound->second, make_int(0));
    l.extent = make_select(make_binary(OpKind::Lt, h, l.extent), h, l.extent);
  }
}

}  // namespace

std::optional<Expr> demand_full_extent(const Expr& extent) {
  if (extent->kind != ExprKind::Select || is_guarded_select(extent)) return std::nullopt;
  const Expr& c = extent->args[0];
  if (c->kind != ExprKind::Binary || c->op != OpKind::Lt || !equal(c->args[0], extent->args[1]) ||
      !equal(c->args[1], extent->args[2]) ||
      (extent->args[2]->kind != ExprKind::Dim && extent->args[2]->kind != ExprKind::IntImm))
    return std::nullopt;
  return extent->args[2];
}

void set_causal_domains(bool on) { g_domains = on; }
bool causal_domains() { return g_domains; }

void restrict_domains(Stages& st) {
  if (!g_domains) return;
  std::vector<std::pair<size_t, Stage>> checks;  // finite checks, each before its contraction
  for (size_t si = 0; si < st.stages.size(); ++si) {
    Stage& s = st.stages[si];
    if (!domain_candidate(s)) continue;
    for (size_t x = 0; x < s.loops.size(); ++x) {
      const StageLoop& l = s.loops[x];
      // A loop as built: one var, from 0 to a size over the dims.
      if (!l.reduction || !s.subst.count(l.name) || s.subst.at(l.name)->kind != ExprKind::Var ||
          s.subst.at(l.name)->name != l.name ||
          (l.extent->kind != ExprKind::Dim && l.extent->kind != ExprKind::IntImm))
        continue;
      if (const auto hi = mask_bound(st, s, x)) {
        s.loops[x].extent = guarded_extent(s, x, *hi);
      } else if (const auto m = masked_factor(st, s, x)) {
        Stage c = finite_check(st, s, x, m->other);
        const Expr finite_from = make_load(c.buffer, c.dtype, make_int(0), {make_int(0)});
        st.stages[si].loops[x].extent = contraction_extent(st.stages[si], x, *m, finite_from);
        checks.emplace_back(si, std::move(c));
        break;  // one bounded loop per contraction (one check stage)
      }
    }
  }
  for (auto it = checks.rbegin(); it != checks.rend(); ++it)
    st.stages.insert(st.stages.begin() + static_cast<std::ptrdiff_t>(it->first),
                     std::move(it->second));
  bound_unread(st);
}

bool causal_bound(const Expr& extent) {
  bool found = false;
  for_each_expr(extent, [&](const Expr& e) { found = found || e->kind == ExprKind::Select; });
  return found;
}

std::optional<Expr> block_bound(const Expr& extent, const StageLoop& row) {
  const auto rows = row.nominal.as_constant();
  if (!causal_bound(extent) || !mentions(extent, row.name) || !rows || *rows < 1 ||
      *rows > kMaxBlockRows || mentions(row.extent, row.name))
    return std::nullopt;
  // Row t of the block, clamped into the rows it has (a block's first row always exists).
  const Expr last = make_binary(OpKind::Sub, row.extent, make_int(1));
  Expr hull;
  for (int64_t t = 0; t < *rows; ++t) {
    const Expr r =
        make_binary(OpKind::Max, make_binary(OpKind::Min, make_int(t), last), make_int(0));
    const Expr at = substitute(extent, {{row.name, r}});
    hull = hull ? make_binary(OpKind::Max, hull, at) : at;
  }
  return hull;
}

std::vector<Expr> extent_loads(const Stages& st, int stage, const std::string& buffer) {
  const Stage& s = st.stages[static_cast<size_t>(stage)];
  std::map<std::string, Expr> names;
  for (size_t t = 0; t < s.loops.size(); ++t)
    names[s.loops[t].name] = make_var(canonical_name(canonical(st, stage, static_cast<int>(t))));
  std::vector<Expr> loads, out;
  for (const auto& l : s.loops) collect_loads(l.extent, buffer, loads);
  for (const auto& l : loads) out.push_back(substitute(l, names));
  return out;
}

}  // namespace ollie::loops
