// Register tiles for contractions and reductions (proposals.h): the accumulators of an
// output tile kept in registers across the reduction loops (register_tile), a dot-product
// tile for sums vectorized along their reduction (dot_tile), and split-K for a long
// reduction beside a small output (split_k). The default schedule and the random
// schedules propose them whole.
#include <algorithm>
#include <set>

#include "loops/proposals.h"

namespace ollie::loops {

using ir::OpKind;

std::optional<std::vector<Directive>> register_tile(const ir::Graph& g, Stages& st,
                                                    const std::string& stage, int64_t rows,
                                                    int64_t vectors, const Target& target,
                                                    bool parallel, const std::string& column,
                                                    const std::string& row_loop,
                                                    bool columns_outside) {
  Stages work = st;
  Schedule out;
  auto loops_now = [&] { return work.stages[static_cast<size_t>(work.find(stage))].loops; };
  std::vector<std::string> pure, reduced;
  for (const auto& l : loops_now()) (l.reduction ? reduced : pure).push_back(l.name);
  if (pure.empty() || reduced.empty()) return std::nullopt;
  const Stage& s0 = work.stages[static_cast<size_t>(work.find(stage))];
  const int64_t cols = vectors * lanes(target, s0.dtype);
  auto split = [&](const std::string& loop, int64_t factor) {
    return split_loop(g, work, out, stage, loop, factor);
  };
  if (!column.empty() && std::find(pure.begin(), pure.end(), column) == pure.end())
    return std::nullopt;
  const std::string col = column.empty() ? pure.back() : column;
  std::string row;  // `row_loop`, else the last pure loop but the columns
  for (const auto& p : pure)
    if (p != col && rows > 1 && (row_loop.empty() || p == row_loop)) row = p;
  if (!row_loop.empty() && rows > 1 && row.empty()) return std::nullopt;
  std::vector<std::string> order;
  for (const auto& p : pure)
    if (p != col && p != row) order.push_back(p);
  std::vector<std::string> inner;
  std::string rows_outer;
  if (!row.empty()) {
    const auto r = split(row, rows);
    if (!r) return std::nullopt;
    rows_outer = r->first;
    order.push_back(r->first);
    inner.push_back(r->second);
  }
  const auto c = split(col, cols);
  if (!c) return std::nullopt;
  // The accumulators live in the innermost loop outside the reduction loops.
  std::string acc_loop = c->first;
  if (columns_outside && !rows_outer.empty()) {
    order.insert(order.end() - 1, c->first);
    acc_loop = rows_outer;
  } else {
    order.push_back(c->first);
  }
  inner.push_back(c->second);
  order.insert(order.end(), reduced.begin(), reduced.end());
  order.insert(order.end(), inner.begin(), inner.end());
  std::vector<std::string> now;
  for (const auto& l : loops_now()) now.push_back(l.name);
  if (now != order &&
      !try_apply(g, work, out, make_directive(DirectiveKind::Reorder, stage, order)))
    return std::nullopt;
  if (!try_apply(g, work, out, make_directive(DirectiveKind::Accumulate, stage, {acc_loop})))
    return std::nullopt;
  try_apply(g, work, out, make_directive(DirectiveKind::Vectorize, stage, {c->second}));
  if (!row.empty())
    try_apply(g, work, out, make_directive(DirectiveKind::Unroll, stage, {inner[0]}));
  const Stage& s = work.stages[static_cast<size_t>(work.find(stage))];
  if (parallel && target.cores > 1 && s.host < 0 && !s.loops.empty() &&
      s.loops[0].kind != ForKind::Parallel && !s.loops[0].reduction &&
      bound_size(g, s.loops[0].nominal) >= 2)
    try_apply(g, work, out, make_directive(DirectiveKind::Parallel, stage, {s.loops[0].name}));
  st = std::move(work);
  return out.directives;
}

// The dot tile: its rows, and the shortest sum (in vectors) it pays for (see proposals.h).
constexpr int64_t kDotTile = 4;
constexpr int64_t kDotTileMinVectors = 8;

namespace {

// The innermost pure loop of `s` (at least 2 at the bound dims, not in `taken`) that some
// operand load does not depend on: unrolled, that operand's vector is loaded once for all
// its iterations. "" when none; also "" when the innermost such candidate indexes every
// operand (a loop further out would not be the tile's).
std::string dot_loop(const ir::Graph& g, const Stage& s, const std::vector<Expr>& loads,
                     const std::set<std::string>& taken) {
  for (size_t k = s.loops.size(); k-- > 0;) {
    const StageLoop& l = s.loops[k];
    if (l.reduction || taken.count(l.name) || bound_size(g, l.nominal) < 2) continue;
    for (const auto& ld : loads)
      if (!mentions(ld, l.name)) return l.name;
    return "";
  }
  return "";
}

// Splits loop `pick` of stage `name` by kDotTile, moves the inner part innermost and
// unrolls it; the inner part's name, or "" when the split is illegal.
std::string unrolled_dot_rows(const ir::Graph& g, Stages& work, Schedule& done,
                              const std::string& name, const std::string& pick) {
  const Stage& s = work.stages[static_cast<size_t>(work.find(name))];
  size_t x = 0;
  while (s.loops[x].name != pick) ++x;
  if (!try_apply(g, work, done, make_directive(DirectiveKind::Split, name, {pick}, kDotTile)))
    return "";
  const Stage& split = work.stages[static_cast<size_t>(work.find(name))];
  const std::string inner =
      split.loops[x + 1].name;  // split puts the inner part right after the outer
  move_innermost(g, work, done, name, inner);
  try_apply(g, work, done, make_directive(DirectiveKind::Unroll, name, {inner}));
  return inner;
}

}  // namespace

bool dot_tile(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
              const Target& target) {
  Stages work = st;
  Schedule done;
  const Stage& s = work.stages[static_cast<size_t>(work.find(name))];
  if (!s.contract || s.loops.empty() || !s.loops.back().reduction || s.combine != OpKind::Add)
    return false;
  // Short sums (attention_causal's 64-long head dim: 4 vectors) gain nothing: the
  // horizontal sum at the end of each costs as much as the sum.
  if (bound_size(g, s.loops.back().nominal) < kDotTileMinVectors * lanes(target, s.dtype))
    return false;
  std::vector<Expr> loads;
  for (const Expr& load : operand_loads(s)) loads.push_back(substitute(load->args[0], s.subst));
  const std::string red = s.loops.back().name;
  const std::string pick = dot_loop(g, s, loads, {});
  if (pick.empty()) return false;
  // With 32 vector registers, a second loop that reuses the other operand: a square tile
  // (kDotTile x kDotTile sums, 2 kDotTile loads per kDotTile^2 multiply-adds).
  const std::string second =
      target.vector_bytes >= 64 ? dot_loop(g, s, loads, {pick}) : std::string();
  if (unrolled_dot_rows(g, work, done, name, pick).empty()) return false;
  if (!second.empty()) {
    Stages two = work;
    Schedule more = done;
    if (!unrolled_dot_rows(g, two, more, name, second).empty()) {
      work = std::move(two);
      done = std::move(more);
    }
  }
  if (!try_apply(g, work, done, make_directive(DirectiveKind::Vectorize, name, {red})))
    return false;
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  return true;
}

// Split-K: the shortest reduction it applies to, the most outputs per reduction step, and
// the slice length (see proposals.h).
constexpr int64_t kSplitKMin = 1024;
constexpr int64_t kSplitKOutputsPerKey = 4;
constexpr int64_t kSplitKBlock = 64;

bool split_k(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
             const Target& target, bool tiles) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  if (!s.contract || s.loops.size() < 2 || !s.loops.back().reduction) return false;
  int64_t outputs = 1;
  for (size_t k = 0; k + 1 < s.loops.size(); ++k) {
    if (s.loops[k].reduction) return false;  // one reduction loop only
    outputs *= bound_size(g, s.loops[k].nominal);
  }
  const std::string red = s.loops.back().name;
  const std::string last_pure = s.loops[s.loops.size() - 2].name;
  const int64_t keys = bound_size(g, s.loops.back().nominal);
  if (keys < kSplitKMin || outputs > kSplitKOutputsPerKey * keys ||
      !walks_contiguously(s, last_pure))
    return false;
  Stages work = st;
  Schedule done;
  if (!try_apply(g, work, done, make_directive(DirectiveKind::Split, name, {red}, kSplitKBlock)))
    return false;
  const std::string outer = red + "_o", rf = name + "_rf";
  if (!try_apply(g, work, done, make_directive(DirectiveKind::Rfactor, name, {outer})) ||
      work.find(rf) < 0)
    return false;
  // The partials: the slice loop outermost (parallel), the output's loops, the slice.
  {
    const Stage& r = work.stages[static_cast<size_t>(work.find(rf))];
    std::vector<std::string> order = {outer}, reduced;
    for (const auto& l : r.loops)
      if (l.name != outer) (l.reduction ? reduced : order).push_back(l.name);
    order.insert(order.end(), reduced.begin(), reduced.end());
    reorder_to(g, work, done, rf, order);
    const Stage& now = work.stages[static_cast<size_t>(work.find(rf))];
    const int w = lanes(target, now.dtype);
    // The tile: 6 rows (fewer when the dims are smaller) of the pure loop before the
    // output's last one, by 2 vectors of the last (1 when it is narrower).
    int64_t rows = 1, cols = 0;
    for (const auto& l : now.loops) {
      if (l.reduction) continue;
      if (l.name == last_pure)
        cols = bound_size(g, l.nominal);
      else if (l.name != outer)
        rows = std::min<int64_t>(6, std::max<int64_t>(1, bound_size(g, l.nominal)));
    }
    std::optional<std::vector<Directive>> tile;
    if (tiles && cols >= w)
      tile = register_tile(g, work, rf, rows, cols >= 2 * w ? 2 : 1, target, true);
    if (tile) {
      done.directives.insert(done.directives.end(), tile->begin(), tile->end());
    } else {
      // Without a tile: the output's last loop innermost, vectorized, inside the slice.
      move_innermost(g, work, done, rf, last_pure);
      try_apply(g, work, done, make_directive(DirectiveKind::Vectorize, rf, {last_pure}));
      if (target.cores > 1)
        try_apply(g, work, done, make_directive(DirectiveKind::Parallel, rf, {outer}));
    }
  }
  // The sum of the partials: the slice loop inside the output's, the last loop vectorized.
  {
    // (rfactor left the slice loop innermost there.)
    move_innermost(g, work, done, name, last_pure);
    try_apply(g, work, done, make_directive(DirectiveKind::Vectorize, name, {last_pure}));
  }
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  return true;
}

}  // namespace ollie::loops

namespace ollie::loops {

bool transpose_operand(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
                       int64_t min_reuse, std::string* column) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  if (!s.contract || s.loops.empty() || !s.packs.empty() || !s.loops.back().reduction) return false;
  std::string last_pure;
  for (const auto& l : s.loops)
    if (!l.reduction) last_pure = l.name;
  const std::string red = s.loops.back().name;
  if (last_pure.empty() || !walks_contiguously(s, red)) return false;
  if (!column && walks_contiguously(s, last_pure)) return false;
  // The operand reused most whose last dim the reduction walks and whose dim before it is
  // walked by a pure loop (the output's last, unless `column` lets any pure loop be one).
  std::string best, best_loop;
  int64_t best_reuse = 0;
  for (const Expr& load : operand_loads(s)) {
    const Buffer* b = st.buffer(load->name);
    const size_t n = load->args.size();
    if (!b || n < 3 || b->shape.size() + 1 != n) continue;
    // Its last dim walked by the reduction loop (mha's k[s1, h*HD + hd]: a head's slice),
    // the one before by a pure loop.
    const Expr last = substitute(load->args[n - 1], s.subst);
    const Expr before = substitute(load->args[n - 2], s.subst);
    if (!mentions(last, red) || before->kind != ExprKind::Var || mentions(last, before->name))
      continue;
    const StageLoop* loop = nullptr;
    for (const auto& l : s.loops)
      if (l.name == before->name && !l.reduction) loop = &l;
    if (!loop || (!column && loop->name != last_pure)) continue;
    const Expr flat = substitute(load->args[0], s.subst);
    int64_t reuse = 1;
    for (const auto& l : s.loops)
      if (!l.reduction && !mentions(flat, l.name)) reuse *= bound_size(g, l.nominal);
    if (reuse >= min_reuse && reuse > best_reuse) {
      best = load->name;
      best_loop = loop->name;
      best_reuse = reuse;
    }
  }
  if (best.empty() ||
      !try_apply(g, st, out,
                 make_directive(DirectiveKind::Pack, name, {best, "root", "transposed"})))
    return false;
  if (column) *column = best_loop;
  return true;
}

}  // namespace ollie::loops
