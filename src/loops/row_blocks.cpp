// Row blocks: a buffer dim indexed `o * c + i`, where `o` is a loop shared with a host
// and `i` a loop of the stage's own that walks the c rows of the block (the two halves of
// a split by c). A producer computed at the outer loop of such a split writes the whole
// block at each iteration of it, so a reader in the same block may read any of its rows
// (the dependence check), and the producer's buffer folds to the c rows (realize).
#include "loops/stages.h"

namespace ollie::loops {

std::optional<RowBlock> row_block(const Expr& e) {
  if (!e || e->kind != ExprKind::Binary || e->op != ir::OpKind::Add) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const Expr& m = e->args[static_cast<size_t>(side)];
    const Expr& rest = e->args[static_cast<size_t>(1 - side)];
    if (m->kind != ExprKind::Binary || m->op != ir::OpKind::Mul) continue;
    const Expr& a = m->args[0];
    const Expr& b = m->args[1];
    if (a->kind == ExprKind::Var && b->kind == ExprKind::IntImm && b->int_value > 1)
      return RowBlock{a->name, b->int_value, rest};
    if (b->kind == ExprKind::Var && a->kind == ExprKind::IntImm && a->int_value > 1)
      return RowBlock{b->name, a->int_value, rest};
  }
  return std::nullopt;
}

// The index of the loop of stage `s` named `canonical_var` over canonical names, from
// depth `from` on, or -1.
int loop_named(const Stages& st, int s, const std::string& canonical_var, int from) {
  const Stage& stage = st.stages[static_cast<size_t>(s)];
  for (int t = from; t < static_cast<int>(stage.loops.size()); ++t)
    if (canonical_name(canonical(st, s, t)) == canonical_var) return t;
  return -1;
}

// Whether `e` (over canonical names) is a var of a loop of stage `s` that runs at most
// `size` times: for a writer (`pure`) one of its own (not shared), pure, with no causal
// bound, running exactly `size` times; for a reader any of its loops (one it shares with
// its own host included: a row of the block read one row at a time).
bool block_rows(const Stages& st, int s, const Expr& e, int64_t size, bool pure) {
  if (e->kind != ExprKind::Var) return false;
  const Stage& stage = st.stages[static_cast<size_t>(s)];
  const int t = loop_named(st, s, e->name, pure ? stage.shared : 0);
  if (t < 0) return false;
  const StageLoop& l = stage.loops[static_cast<size_t>(t)];
  const auto n = l.nominal.as_constant();
  if (!n || *n > size) return false;
  return !pure || (!l.reduction && !causal_bound(l.extent) && *n == size);
}

namespace {

struct Range {
  std::optional<int64_t> lo, hi;
};

// Bounds of an index built from constants, min and max (a causal guard's clamped row,
// `max(min(2, rows - 1), 0)`); unknown sides stay empty.
Range range_of(const Expr& e) {
  if (e->kind == ExprKind::IntImm) return {e->int_value, e->int_value};
  if (e->kind != ExprKind::Binary || (e->op != ir::OpKind::Min && e->op != ir::OpKind::Max))
    return {};
  const Range a = range_of(e->args[0]), b = range_of(e->args[1]);
  auto both = [](std::optional<int64_t> x, std::optional<int64_t> y, bool take_min) {
    if (!x || !y) return std::optional<int64_t>();
    return std::optional<int64_t>(take_min ? std::min(*x, *y) : std::max(*x, *y));
  };
  auto either = [](std::optional<int64_t> x, std::optional<int64_t> y, bool take_min) {
    if (!x) return y;
    if (!y) return x;
    return std::optional<int64_t>(take_min ? std::min(*x, *y) : std::max(*x, *y));
  };
  if (e->op == ir::OpKind::Min) return {both(a.lo, b.lo, true), either(a.hi, b.hi, true)};
  return {either(a.lo, b.lo, false), both(a.hi, b.hi, false)};
}

// A reader's row inside a block of `size` rows: one of its loops running at most `size`
// times, or a clamped constant row in [0, size).
bool reads_block_row(const Stages& st, int r, const Expr& e, int64_t size) {
  if (block_rows(st, r, e, size, false)) return true;
  const Range range = range_of(e);
  return range.lo && range.hi && *range.lo >= 0 && *range.hi < size;
}

}  // namespace

bool same_block(const Stages& st, int w, const std::vector<Expr>& store, size_t d, int r,
                const Expr& load, const std::string& loop) {
  const auto ws = row_block(store[d]);
  const auto rs = row_block(load);
  if (!ws || !rs || ws->outer != loop || rs->outer != loop || ws->size != rs->size) return false;
  if (!block_rows(st, w, ws->inner, ws->size, true) || !reads_block_row(st, r, rs->inner, rs->size))
    return false;
  for (size_t k = 0; k < store.size(); ++k)  // the block's rows walk this dim alone
    if (k != d && mentions(store[k], ws->inner->name)) return false;
  return true;
}

}  // namespace ollie::loops
