// The default schedule (the baseline every search starts from) and random schedules
// (random moves for the property tests and, later, the search's mutate proposer). Both
// propose directives and keep only those apply_directive accepts.
#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "loops/stages.h"

namespace ollie::loops {
namespace {

using ir::OpKind;

// Applies `d` to a copy of `st`; on success keeps it and records it in `out`.
bool try_apply(const ir::Graph& g, Stages& st, Schedule& out, const Directive& d, std::string* reason = nullptr) {
  Stages copy = st;
  try {
    apply_directive(g, copy, d);
  } catch (const ScheduleError& e) {
    if (reason) *reason = e.reason();
    return false;
  }
  st = std::move(copy);
  out.directives.push_back(d);
  return true;
}

// Whether `e` loads `buffer`.
bool reads(const Expr& e, const std::string& buffer) {
  std::vector<Expr> loads;
  collect_loads(e, buffer, loads);
  return !loads.empty();
}

Directive make(DirectiveKind k, const std::string& stage, std::vector<std::string> args, int64_t factor = 0) {
  return Directive{k, stage, std::move(args), factor, 0};
}

// The fewest reduction steps (at the bound dims) for which a contraction gets a register tile.
constexpr int64_t kMinTileReduction = 32;

// Fusion of siblings: stage `i`, about to be computed at the loops of the root nest
// `host`, goes instead inside a later stage fused directly in that nest whose next loop walks
// the same range as stage i's loop at that depth, as deep as is legal. Flash's per-block
// statistics (a block's max and sum, read later by the combination over blocks) thus run
// under the block loop of the block's partial output: one pass over each key block, rather
// than one pass over all blocks per statistic.
bool into_sibling(const ir::Graph& g, Stages& st, Schedule& out, int i, int host) {
  const std::string pname = st.stages[static_cast<size_t>(i)].name;
  for (size_t j = static_cast<size_t>(i) + 1; j < st.stages.size(); ++j) {
    const Stage& p = st.stages[static_cast<size_t>(i)];
    const Stage& q = st.stages[j];
    const size_t k = static_cast<size_t>(q.shared);
    if (q.host != host || k >= q.loops.size() || k >= p.loops.size()) continue;
    if (q.loops[k].reduction || p.loops[k].reduction || q.loops[k].nominal != p.loops[k].nominal) continue;
    std::vector<std::string> loops;  // deepest first
    for (size_t m = q.loops.size(); m-- > k;)
      if (!q.loops[m].reduction && q.loops[m].kind != ForKind::Vectorized) loops.push_back(q.loops[m].name);
    const std::string qname = q.name;
    for (const auto& loop : loops)
      if (try_apply(g, st, out, make(DirectiveKind::ComputeAt, pname, {qname, loop}))) return true;
  }
  return false;
}

// Reorders `stage` to `order` unless its loops already run in that order.
void reorder_to(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage,
                const std::vector<std::string>& order) {
  std::vector<std::string> now;
  for (const auto& l : st.stages[static_cast<size_t>(st.find(stage))].loops)
    if (std::find(order.begin(), order.end(), l.name) != order.end()) now.push_back(l.name);
  if (now != order) try_apply(g, st, out, make(DirectiveKind::Reorder, stage, order));
}

// Reorders `stage` so that `loop` runs innermost, the others keeping their order.
void move_innermost(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage, const std::string& loop) {
  std::vector<std::string> order;
  for (const auto& l : st.stages[static_cast<size_t>(st.find(stage))].loops)
    if (l.name != loop) order.push_back(l.name);
  order.push_back(loop);
  reorder_to(g, st, out, stage, order);
}

// The coefficient of `var` in the linear index expression `e`; nullopt when `e` is not
// linear in it with a constant coefficient.
std::optional<int64_t> coefficient(const Expr& e, const std::string& var) {
  if (!mentions(e, var)) return 0;
  switch (e->kind) {
    case ExprKind::Var: return 1;
    case ExprKind::Binary: {
      const auto a = coefficient(e->args[0], var), b = coefficient(e->args[1], var);
      if (!a || !b) return std::nullopt;
      if (e->op == OpKind::Add) return *a + *b;
      if (e->op == OpKind::Sub) return *a - *b;
      if (e->op == OpKind::Mul && e->args[1]->kind == ExprKind::IntImm) return *a * e->args[1]->int_value;
      if (e->op == OpKind::Mul && e->args[0]->kind == ExprKind::IntImm) return *b * e->args[0]->int_value;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

// Whether some load of `s` walks its buffer with unit stride along loop `loop` (after
// the stage's substitution): the loop runs along contiguous memory.
bool walks_contiguously(const Stage& s, const std::string& loop) {
  bool found = false;
  for_each_load(s.value, [&](const Expr& load) {
    if (coefficient(substitute(load->args[0], s.subst), loop) == std::optional<int64_t>(1)) found = true;
  });
  return found;
}

// The size of a dims expression at the graph's bound dims (large when unbound).
int64_t bound_size(const ir::Graph& g, const ir::DimExpr& d) {
  try {
    return d.evaluate(g.bound_dims);
  } catch (const UserError&) {
    return int64_t{1} << 30;
  }
}

// The loads in stage `s`'s value of buffers other than its own (its operands), in order.
std::vector<Expr> operand_loads(const Stage& s) {
  std::vector<Expr> loads;
  for_each_load(s.value, [&](const Expr& load) {
    if (load->name != s.buffer) loads.push_back(load);
  });
  return loads;
}

// The bytes of buffer `b` at the graph's bound dims (a dim of size 0 counted as 1).
int64_t buffer_bytes(const ir::Graph& g, const Buffer& b) {
  int64_t n = ir::dtype_bytes(b.dtype);
  for (const auto& d : b.shape) n *= std::max<int64_t>(1, bound_size(g, d));
  return n;
}

// The loops of `s` that index its biggest operand, when one operand is at least twice as
// big (in bytes at the bound dims) as every other: the loops that do not index it
// belong inside those that do, so that its tiles are reused from cache.
std::set<std::string> big_operand_loops(const ir::Graph& g, const Stages& st, const Stage& s) {
  std::map<std::string, int64_t> bytes;
  std::map<std::string, std::set<std::string>> loops_of;
  for (const Expr& load : operand_loads(s)) {
    if (const Buffer* b = st.buffer(load->name)) {
      bytes[load->name] = buffer_bytes(g, *b);
      const Expr flat = substitute(load->args[0], s.subst);
      for (const auto& l : s.loops)
        if (mentions(flat, l.name)) loops_of[load->name].insert(l.name);
    }
  }
  std::string big;
  for (const auto& [name, n] : bytes)
    if (big.empty() || n > bytes[big]) big = name;
  for (const auto& [name, n] : bytes)
    if (name != big && 2 * n > bytes[big]) return {};
  return big.empty() ? std::set<std::string>{} : loops_of[big];
}

// Whether the default schedule gives contractions register tiles (see default_schedule).
constexpr bool kDefaultRegisterTiles = true;

// The most accumulator bytes a default contraction keeps live inside its reduction loops.
constexpr int64_t kAccumulatorBytes = 64 * 1024;

int lanes(const Target& t, ir::DType d) {
  const int bytes = d == ir::DType::F64 || d == ir::DType::I64 ? 8 : d == ir::DType::Bool ? 1 : 4;
  return std::max(1, t.vector_bytes / bytes);
}

// A root nest whose outer loops run once at the bound dims (mla_decode's B = 1 around the
// whole attention) has no parallel loop of its own there. Its work is then shared out
// inside: each stage computed in it runs its own outermost pure loop in parallel, when the
// loops it shares with the root run at most a few times (so a few parallel regions per
// call, not one per row). (Also splitting the root's own innermost pure loop into a chunk
// per core, outside its reduction loops, measured 1.6x slower on mla_decode's o_lat.)
// With `outside` >= 0 the root has a parallel loop at that depth: only the stages
// computed directly in the root outside it (at a shallower loop) are considered, since
// they would otherwise run on one core before the parallel loop starts.
void parallel_inside(const ir::Graph& graph, Stages& st, Schedule& out, const std::string& root, int outside = -1) {
  constexpr int64_t kMaxRegions = 4;
  const int root_index = st.find(root);
  for (const auto& h : std::vector<Stage>(st.stages)) {
    int r = st.find(h.name);
    while (st.stages[static_cast<size_t>(r)].host >= 0) r = st.stages[static_cast<size_t>(r)].host;
    if (h.host < 0 || r != root_index) continue;
    if (outside >= 0 && (h.host != root_index || h.shared > outside)) continue;
    int64_t regions = 1;
    for (int k = 0; k < h.shared && k < static_cast<int>(h.loops.size()); ++k)
      regions *= bound_size(graph, h.loops[static_cast<size_t>(k)].nominal);
    if (regions > kMaxRegions) continue;
    for (size_t k = static_cast<size_t>(h.shared); k < h.loops.size(); ++k) {
      const auto& l = h.loops[k];
      if (l.reduction || l.kind == ForKind::Vectorized) break;
      if (bound_size(graph, l.nominal) < 2) continue;
      try_apply(graph, st, out, make(DirectiveKind::Parallel, h.name, {l.name}));
      break;
    }
  }
}

// Register tiles (rows x columns of accumulators): columns a multiple of the vector
// width, rows x columns / lanes vectors within the 32 registers of AVX-512 with room for
// the operands; the first entries are the classic GEMM micro-kernel shapes.
constexpr std::pair<int64_t, int64_t> kRegisterTiles[] = {{6, 2}, {4, 3}, {8, 2}, {4, 4}, {12, 1},
                                                          {3, 4}, {2, 4}, {1, 4}, {8, 1}, {4, 2}};

// The directives that give reduction stage `s` a register tile of `rows` x `vectors`
// vectors of accumulators: its last two pure loops (rows, then the columns) split by
// the tile, their outer parts outside the reduction loops and the inner parts inside,
// the accumulators kept in the column loop's outer part, the columns vectorized, the
// rows unrolled and (when `parallel`) the first loop parallel. A stage with one pure
// loop, or `rows` 1, gets a single row.
// Each directive is applied to `st`; nullopt (and `st` as it was) if one is illegal.
std::optional<std::vector<Directive>> register_tile(const ir::Graph& g, Stages& st, const std::string& stage,
                                                    int64_t rows, int64_t vectors, const Target& target,
                                                    bool parallel = true) {
  Stages work = st;
  Schedule out;
  auto loops_now = [&] { return work.stages[static_cast<size_t>(work.find(stage))].loops; };
  std::vector<std::string> pure, reduced;
  for (const auto& l : loops_now()) (l.reduction ? reduced : pure).push_back(l.name);
  if (pure.empty() || reduced.empty()) return std::nullopt;
  const Stage& s0 = work.stages[static_cast<size_t>(work.find(stage))];
  const int64_t cols = vectors * lanes(target, s0.dtype);
  // Splits `loop` by `factor`; returns the outer and inner loop names.
  auto split = [&](const std::string& loop, int64_t factor) -> std::optional<std::pair<std::string, std::string>> {
    const auto before = loops_now();
    size_t x = 0;
    while (x < before.size() && before[x].name != loop) ++x;
    if (!try_apply(g, work, out, make(DirectiveKind::Split, stage, {loop}, factor))) return std::nullopt;
    const auto after = loops_now();
    return std::make_pair(after[x].name, after[x + 1].name);
  };
  const std::string col = pure.back();
  const std::string row = pure.size() >= 2 && rows > 1 ? pure[pure.size() - 2] : "";
  std::vector<std::string> order;
  for (const auto& p : pure)
    if (p != col && p != row) order.push_back(p);
  std::vector<std::string> inner;
  if (!row.empty()) {
    const auto r = split(row, rows);
    if (!r) return std::nullopt;
    order.push_back(r->first);
    inner.push_back(r->second);
  }
  const auto c = split(col, cols);
  if (!c) return std::nullopt;
  order.push_back(c->first);
  inner.push_back(c->second);
  order.insert(order.end(), reduced.begin(), reduced.end());
  order.insert(order.end(), inner.begin(), inner.end());
  std::vector<std::string> now;
  for (const auto& l : loops_now()) now.push_back(l.name);
  if (now != order && !try_apply(g, work, out, make(DirectiveKind::Reorder, stage, order))) return std::nullopt;
  if (!try_apply(g, work, out, make(DirectiveKind::Accumulate, stage, {c->first}))) return std::nullopt;
  try_apply(g, work, out, make(DirectiveKind::Vectorize, stage, {c->second}));
  if (!row.empty()) try_apply(g, work, out, make(DirectiveKind::Unroll, stage, {inner[0]}));
  const Stage& s = work.stages[static_cast<size_t>(work.find(stage))];
  if (parallel && target.cores > 1 && s.host < 0 && !s.loops.empty() && s.loops[0].kind != ForKind::Parallel &&
      !s.loops[0].reduction && bound_size(g, s.loops[0].nominal) >= 2)
    try_apply(g, work, out, make(DirectiveKind::Parallel, stage, {s.loops[0].name}));
  st = std::move(work);
  return out.directives;
}

// A dot-product tile for a contraction vectorized along its innermost reduction loop
// (attention scores: q[h, l] . c_kv[s, l], both contiguous only along l): kDotTile
// iterations of the innermost pure loop that some operand does not depend on run inside
// the reduction loop, each its own accumulator, so that operand's vector is loaded once
// for all of them and the sums do not wait on each other. (mla_decode's scores, 512 long, one
// thread: 0.9 of the whole kernel's time with a 4-row tile, `ollie bench --vs`; no gain on
// attention_causal's 64-long ones.)
constexpr int64_t kDotTile = 4;
constexpr int64_t kDotTileMinVectors = 8;

bool dot_tile(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name, const Target& target) {
  Stages work = st;
  Schedule done;
  const Stage& s = work.stages[static_cast<size_t>(work.find(name))];
  if (!s.contract || s.loops.empty() || !s.loops.back().reduction || s.combine != OpKind::Add) return false;
  // Short sums (attention_causal's 64-long head dim: 4 vectors) gain nothing: the
  // horizontal sum at the end of each costs as much as the sum.
  if (bound_size(g, s.loops.back().nominal) < kDotTileMinVectors * lanes(target, s.dtype)) return false;
  std::vector<Expr> loads;
  for (const Expr& load : operand_loads(s)) loads.push_back(substitute(load->args[0], s.subst));
  std::string pick;
  for (size_t k = s.loops.size(); k-- > 0 && pick.empty();) {
    const StageLoop& l = s.loops[k];
    if (l.reduction) continue;
    if (bound_size(g, l.nominal) < 2) continue;
    for (const auto& ld : loads)
      if (!mentions(ld, l.name)) pick = l.name;
    if (pick.empty()) return false;  // the innermost pure loop indexes every operand
  }
  if (pick.empty()) return false;
  const std::string red = s.loops.back().name;
  size_t x = 0;
  while (s.loops[x].name != pick) ++x;
  if (!try_apply(g, work, done, make(DirectiveKind::Split, name, {pick}, kDotTile))) return false;
  const Stage& split = work.stages[static_cast<size_t>(work.find(name))];
  const std::string inner = split.loops[x + 1].name;  // split puts the inner part right after the outer
  move_innermost(g, work, done, name, inner);
  try_apply(g, work, done, make(DirectiveKind::Unroll, name, {inner}));
  if (!try_apply(g, work, done, make(DirectiveKind::Vectorize, name, {red}))) return false;
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  return true;
}

// Split-K: a contraction whose one reduction loop is long beside its output (mla_decode's
// o_lat = p . c_kv: 16 x 512 outputs, 4096 keys) runs as kSplitKBlock-long slices of the
// reduction, each a stage of partial results (rfactor) over every output: a slice of the
// big operand is read once from cache by every output tile (register tiles, when
// `tiles`), and the slices run in parallel. Then the partials are summed with the
// output's last loop vectorized. (mla_decode, one thread: the partials with 6 x 2 tiles
// were 0.77 of the fused serial o_lat's whole-kernel time, `ollie bench --vs`.)
// Only when the reduction is at least kSplitKMin long and the output at most
// kSplitKOutputsPerKey times as big: the partial results cost O x R / block extra.
constexpr int64_t kSplitKMin = 1024;
constexpr int64_t kSplitKOutputsPerKey = 4;
constexpr int64_t kSplitKBlock = 64;

bool split_k(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name, const Target& target,
             bool tiles) {
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
  if (keys < kSplitKMin || outputs > kSplitKOutputsPerKey * keys || !walks_contiguously(s, last_pure)) return false;
  Stages work = st;
  Schedule done;
  if (!try_apply(g, work, done, make(DirectiveKind::Split, name, {red}, kSplitKBlock))) return false;
  const std::string outer = red + "_o", rf = name + "_rf";
  if (!try_apply(g, work, done, make(DirectiveKind::Rfactor, name, {outer})) || work.find(rf) < 0) return false;
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
      if (l.name == last_pure) cols = bound_size(g, l.nominal);
      else if (l.name != outer) rows = std::min<int64_t>(6, std::max<int64_t>(1, bound_size(g, l.nominal)));
    }
    std::optional<std::vector<Directive>> tile;
    if (tiles && cols >= w) tile = register_tile(g, work, rf, rows, cols >= 2 * w ? 2 : 1, target, true);
    if (tile) {
      done.directives.insert(done.directives.end(), tile->begin(), tile->end());
    } else {
      // Without a tile: the output's last loop innermost, vectorized, inside the slice.
      move_innermost(g, work, done, rf, last_pure);
      try_apply(g, work, done, make(DirectiveKind::Vectorize, rf, {last_pure}));
      if (target.cores > 1) try_apply(g, work, done, make(DirectiveKind::Parallel, rf, {outer}));
    }
  }
  // The sum of the partials: the slice loop inside the output's, the last loop vectorized.
  {
    // (rfactor left the slice loop innermost there.)
    move_innermost(g, work, done, name, last_pure);
    try_apply(g, work, done, make(DirectiveKind::Vectorize, name, {last_pure}));
  }
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  return true;
}

}  // namespace

namespace {

// The default schedule; contractions get register tiles when `tiles`, except those named
// in `untiled`.
Schedule default_schedule_with(const ir::Graph& graph, const Target& target, bool tiles,
                               const std::set<std::string>& untiled) {
  Stages st = build_stages(graph, {});
  Schedule out;
  // 1. Loop order and vector loops, stage by stage.
  const std::vector<std::string> names = [&] {
    std::vector<std::string> n;
    for (const auto& s : st.stages) n.push_back(s.name);
    return n;
  }();
  for (const auto& name : names) {
    if (split_k(graph, st, out, name, target, tiles && !untiled.count(name + "_rf"))) continue;
    const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
    if (s.loops.empty()) continue;
    const StageLoop& inner = s.loops.back();
    if (!inner.reduction) {
      try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {inner.name}));
      continue;
    }
    // An exp-weighted sum (online softmax): its last pure loop innermost and vectorized,
    // each step's running update side by side over it; the other pure loops outside.
    if (!s.running_max.empty()) {
      std::vector<std::string> order, reduced;
      std::string last_pure;
      for (const auto& l : s.loops) {
        if (l.reduction) reduced.push_back(l.name);
        else if (!last_pure.empty()) order.push_back(std::exchange(last_pure, l.name));
        else last_pure = l.name;
      }
      // (Not a loop the score varies along: the sum alone keeps its reduction innermost.)
      if (last_pure.empty() || mentions(s.value->args[0], last_pure)) continue;
      order.insert(order.end(), reduced.begin(), reduced.end());
      order.push_back(last_pure);
      reorder_to(graph, st, out, name, order);
      try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {last_pure}));
      continue;
    }
    // A reduction with its reduction loops innermost.
    std::string last_pure;
    std::vector<std::string> reduced;
    for (const auto& l : s.loops) {
      if (l.reduction) reduced.push_back(l.name);
      else last_pure = l.name;
    }
    const std::set<std::string> big = big_operand_loops(graph, st, s);
    if (s.contract && !last_pure.empty() && walks_contiguously(s, last_pure)) {
      // Contraction: the output's last loop innermost, vectorized (out[m, n] += a[m, k] *
      // b[k, n]); the other pure loops that do not index the biggest operand go inside
      // the reduction loops, so that it is swept once.
      // (Only while the accumulators inside the reduction loops stay cache-sized.)
      int64_t inner_bytes = ir::dtype_bytes(s.dtype);
      for (const auto& l : s.loops)
        if (!l.reduction && (l.name == last_pure || !big.count(l.name))) inner_bytes *= bound_size(graph, l.nominal);
      const bool sink = !big.empty() && inner_bytes <= kAccumulatorBytes;
      std::vector<std::string> order, inner_pure;
      for (const auto& l : s.loops)
        if (!l.reduction && l.name != last_pure) (!sink || big.count(l.name) ? order : inner_pure).push_back(l.name);
      order.insert(order.end(), reduced.begin(), reduced.end());
      order.insert(order.end(), inner_pure.begin(), inner_pure.end());
      order.push_back(last_pure);
      // With every other pure loop outside the reduction loops, a register tile instead:
      // 6 rows of the pure loop before the last by 2 vectors of the last (fewer when the
      // dims are smaller), the accumulators in registers across the reduction.
      const int w = lanes(target, s.dtype);
      std::string row;
      int64_t rows = 6, cols = 0;
      for (const auto& l : s.loops)
        if (!l.reduction && l.name != last_pure) row = l.name;
      for (const auto& l : s.loops) {
        if (l.name == row) rows = std::min<int64_t>(rows, std::max<int64_t>(1, bound_size(graph, l.nominal)));
        if (l.name == last_pure) cols = bound_size(graph, l.nominal);
      }
      // No tile for a short reduction (flash's combination over a few blocks, or its
      // empty tail): the accumulators would be reused too few times to pay for the tile,
      // and its split loops would keep the stage out of its reader's nest.
      int64_t steps = 1;
      for (const auto& l : s.loops)
        if (l.reduction) steps *= bound_size(graph, l.nominal);
      if (tiles && !untiled.count(name) && inner_pure.empty() && !row.empty() && cols >= w &&
          steps >= kMinTileReduction) {
        const int64_t vectors = cols >= 2 * w ? 2 : 1;
        if (const auto tile = register_tile(graph, st, name, rows, vectors, target, false)) {
          out.directives.insert(out.directives.end(), tile->begin(), tile->end());
          continue;
        }
      }
      reorder_to(graph, st, out, name, order);
      try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {last_pure}));
      continue;
    }
    if (!big.empty()) {
      // Pure loops indexing the biggest operand outside the others.
      std::vector<std::string> order, rest;
      for (const auto& l : s.loops)
        if (!l.reduction) (big.count(l.name) ? order : rest).push_back(l.name);
      order.insert(order.end(), rest.begin(), rest.end());
      if (order.size() >= 2) reorder_to(graph, st, out, name, order);
    }
    const Stage& now = st.stages[static_cast<size_t>(st.find(name))];  // `s` may be stale
    const std::string r = now.loops.back().name;
    const int w = lanes(target, now.dtype);
    if (walks_contiguously(now, r) && now.combine == OpKind::Add) {
      // A row sum: vectorized as is (a scalar accumulator split over lanes), several side
      // by side for a contraction.
      if (!(tiles && dot_tile(graph, st, out, name, target))) try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {r}));
    } else if (walks_contiguously(now, r) && w > 1) {
      // A row max or min: w partial results side by side, vectorized, then reduced.
      if (try_apply(graph, st, out, make(DirectiveKind::Split, name, {r}, w))) {
        const Stage& split = st.stages[static_cast<size_t>(st.find(name))];
        const std::string ri = split.loops.back().name;
        if (try_apply(graph, st, out, make(DirectiveKind::Rfactor, name, {ri})))
          try_apply(graph, st, out, make(DirectiveKind::Vectorize, name + "_rf", {ri}));
      }
    }
  }
  // 2. Fusion: each producer computed inside the outer loops of the root nest that reads
  // it, as deep as is legal, consumers first.
  for (int i = static_cast<int>(st.stages.size()) - 1; i >= 0; --i) {
    const Stage& p = st.stages[static_cast<size_t>(i)];
    int host = -1, reader = -1;
    bool unique = true, one_reader = true;
    for (size_t r = 0; r < st.stages.size(); ++r) {
      if (static_cast<int>(r) == i) continue;
      if (!reads(st.stages[r].value, p.buffer)) continue;
      int root = static_cast<int>(r);
      while (st.stages[static_cast<size_t>(root)].host >= 0) root = st.stages[static_cast<size_t>(root)].host;
      if (host >= 0 && host != root) unique = false;
      if (reader >= 0) one_reader = false;
      host = root;
      reader = static_cast<int>(r);
    }
    // Inside the only reader, as deep as is legal, when it is nested already.
    if (one_reader && reader >= 0 && reader != host) {
      const Stage& h = st.stages[static_cast<size_t>(reader)];
      const std::string pname = p.name, hname = h.name;
      bool done = false;
      for (size_t k = h.loops.size(); k-- > static_cast<size_t>(h.shared) && !done;) {
        if (h.loops[k].reduction || h.loops[k].kind == ForKind::Vectorized) continue;
        done = try_apply(graph, st, out, make(DirectiveKind::ComputeAt, pname, {hname, h.loops[k].name}));
      }
      if (done) continue;
    }
    if (host < 0 || !unique || host == i) continue;
    if (into_sibling(graph, st, out, i, host)) continue;
    const Stage& h = st.stages[static_cast<size_t>(host)];
    const std::string pname = p.name, hname = h.name;
    for (size_t k = h.loops.size(); k-- > 0;) {
      if (h.loops[k].reduction || h.loops[k].kind == ForKind::Vectorized) continue;
      if (try_apply(graph, st, out, make(DirectiveKind::ComputeAt, pname, {hname, h.loops[k].name}))) break;
    }
  }
  // 3. The outermost pure loop of every root nest that has more than one iteration at the
  // bound dims runs in parallel.
  if (target.cores > 1)
    for (const auto& s : std::vector<Stage>(st.stages)) {
      if (s.host >= 0) continue;
      bool parallel = false;
      int depth = 0;
      for (const auto& l : s.loops) {
        if (l.reduction || l.kind == ForKind::Vectorized) break;
        if (l.kind == ForKind::Parallel) {  // a register tile's
          parallel = true;
          break;
        }
        if (bound_size(graph, l.nominal) >= 2) {
          parallel = try_apply(graph, st, out, make(DirectiveKind::Parallel, s.name, {l.name}));
          break;
        }
        ++depth;
      }
      if (!parallel) parallel_inside(graph, st, out, s.name);
      else if (depth > 0) parallel_inside(graph, st, out, s.name, depth);
    }
  return out;
}

}  // namespace

// A fused elementwise producer costs a contraction its register tile; when the
// contraction's biggest operand is at least this big, the tile wins: swiglu_mlp's
// out0 = hidden @ w_down (2 MiB) with the gate computed per row inside it streamed all of
// w_down once per row; tiled, with the gate written out first, it ran in 0.72-0.80x the
// time (examples/schedules/swiglu_mlp.schedule, `ollie bench --vs`).
constexpr int64_t kTileOverFusionBytes = 256 * 1024;

Schedule default_schedule(const ir::Graph& graph, const Target& target) {
  // A contraction that hosts fused stages keeps its loops (a tile's split loops would
  // refuse them, and their buffers would no longer fold), unless they are all
  // elementwise and its operand is big (kTileOverFusionBytes); the others get register
  // tiles.
  const Schedule plain = default_schedule_with(graph, target, false, {});
  const Stages st = build_stages(graph, {});
  auto stage = [&](const std::string& name) -> const Stage* {
    const int i = st.find(name);
    return i < 0 ? nullptr : &st.stages[static_cast<size_t>(i)];
  };
  std::set<std::string> hosts, fused_reductions;
  for (const auto& d : plain.directives)
    if (d.kind == DirectiveKind::ComputeAt) {
      hosts.insert(d.args[0]);
      // (A contraction fused here without tiles gets its own tile below instead.)
      const Stage* p = stage(d.stage);
      if (!p || (p->reduce && !p->contract)) fused_reductions.insert(d.args[0]);
    }
  std::set<std::string> untiled;
  for (const auto& h : hosts) {
    const Stage* s = stage(h);
    bool big = false;
    if (s && s->contract && !fused_reductions.count(h)) {
      int64_t largest = 0;
      for (const Expr& load : operand_loads(*s))
        if (const Buffer* b = st.buffer(load->name)) largest = std::max(largest, buffer_bytes(graph, *b));
      big = largest >= kTileOverFusionBytes;
    }
    if (!big) untiled.insert(h);
  }
  return default_schedule_with(graph, target, kDefaultRegisterTiles, untiled);
}

namespace {

// One random directive against the stages as they are (nullopt when the draw made no
// sense, e.g. a reorder of a one-loop stage). Not necessarily legal.
std::optional<Directive> random_directive(const Stages& st, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  const int64_t factors[] = {2, 3, 4, 5, 8, 16};
  const Stage& s = st.stages[pick(st.stages.size())];
  if (s.loops.empty()) return std::nullopt;
  auto loop = [&](const Stage& x) { return x.loops[pick(x.loops.size())].name; };
  switch (pick(9)) {
    case 0: return make(DirectiveKind::Split, s.name, {loop(s)}, factors[pick(std::size(factors))]);
    case 1: {
      std::vector<std::string> ls;
      for (const auto& l : s.loops) ls.push_back(l.name);
      std::shuffle(ls.begin(), ls.end(), rng);
      ls.resize(std::max<size_t>(2, pick(ls.size()) + 1));
      if (ls.size() < 2 || s.loops.size() < 2) return std::nullopt;
      return make(DirectiveKind::Reorder, s.name, ls);
    }
    case 2: return make(DirectiveKind::Parallel, s.name, {loop(s)});
    case 3: return make(DirectiveKind::Vectorize, s.name, {loop(s)});
    case 4: return make(DirectiveKind::Unroll, s.name, {loop(s)});
    case 5: {
      // Mostly into a stage that reads it (or that stage's host): the moves that can be
      // legal; sometimes anywhere, to exercise the rejections.
      std::vector<const Stage*> hosts;
      for (const auto& r : st.stages) {
        if (&r == &s || !reads(r.value, s.buffer)) continue;
        hosts.push_back(&r);
        if (r.host >= 0) hosts.push_back(&st.stages[static_cast<size_t>(r.host)]);
      }
      const Stage& h = !hosts.empty() && pick(4) != 0 ? *hosts[pick(hosts.size())] : st.stages[pick(st.stages.size())];
      if (h.loops.empty()) return std::nullopt;
      return make(DirectiveKind::ComputeAt, s.name, {h.name, loop(h)});
    }
    case 6: {
      std::vector<std::string> bufs;
      for (const Expr& load : operand_loads(s)) bufs.push_back(load->name);
      if (bufs.empty()) return std::nullopt;
      return make(DirectiveKind::Pack, s.name, {bufs[pick(bufs.size())], loop(s)});
    }
    case 7: return make(DirectiveKind::Accumulate, s.name, {loop(s)});
    default: return make(DirectiveKind::Rfactor, s.name, {loop(s)});
  }
}

// A register tile of a random shape for a random reduction stage (see register_tile).
std::optional<std::vector<Directive>> random_register_tile(const ir::Graph& g, Stages& st, std::mt19937_64& rng,
                                                           const Target& target) {
  std::vector<std::string> reductions;
  for (const auto& s : st.stages)
    if (s.reduce && !s.accumulate_depth) reductions.push_back(s.name);
  if (reductions.empty()) return std::nullopt;
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  const std::string stage = reductions[pick(reductions.size())];
  const auto [rows, vectors] = kRegisterTiles[pick(std::size(kRegisterTiles))];
  return register_tile(g, st, stage, rows, vectors, target);
}

// Draws of random_directive that propose a whole register tile instead (1 in this many).
constexpr int kRegisterTileOdds = 8;

// Applies the directives of `schedule` in order, keeping the legal ones.
Schedule replay_legal(const ir::Graph& graph, Stages& st, const std::vector<Directive>& directives) {
  Schedule out;
  for (const auto& d : directives) try_apply(graph, st, out, d);
  return out;
}

}  // namespace

Schedule random_schedule(const ir::Graph& graph, uint64_t seed, int moves, std::vector<RejectedDirective>* rejected,
                         const Target& target) {
  std::mt19937_64 rng(seed);
  Schedule out;
  Stages st = build_stages(graph, {});
  if (std::uniform_int_distribution<int>(0, 1)(rng) == 0)
    for (const auto& d : default_schedule(graph, target).directives) try_apply(graph, st, out, d);
  for (int m = 0; m < moves; ++m) {
    if (std::uniform_int_distribution<int>(0, kRegisterTileOdds - 1)(rng) == 0) {
      if (const auto tile = random_register_tile(graph, st, rng, target))
        out.directives.insert(out.directives.end(), tile->begin(), tile->end());
      continue;
    }
    const std::optional<Directive> d = random_directive(st, rng);
    if (!d) continue;
    std::string reason;
    const Schedule before = out;
    if (!try_apply(graph, st, out, *d, &reason) && rejected) rejected->push_back({before, *d, reason});
  }
  return out;
}

std::optional<Mutation> mutate_schedule(const ir::Graph& graph, const Schedule& base, uint64_t seed, int attempts) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  const std::string base_text = to_text(base);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Stages st = build_stages(graph, {});
    Mutation m;
    const size_t n = base.directives.size();
    const size_t kind = n == 0 ? 0 : pick(4);
    if (kind == 0 && pick(kRegisterTileOdds) == 0) {  // add a register tile at the end
      m.schedule = replay_legal(graph, st, base.directives);
      const auto tile = random_register_tile(graph, st, rng, host_target());
      if (!tile) continue;
      m.schedule.directives.insert(m.schedule.directives.end(), tile->begin(), tile->end());
      m.move = "add register tile:";
      for (size_t i = 0; i < tile->size(); ++i) m.move += (i ? "; " : " ") + to_text((*tile)[i]);
    } else if (kind == 0) {  // add one legal directive at the end
      m.schedule = replay_legal(graph, st, base.directives);
      const std::optional<Directive> d = random_directive(st, rng);
      if (!d || !try_apply(graph, st, m.schedule, *d)) continue;
      m.move = "add " + to_text(*d);
    } else if (kind == 1) {  // drop one directive (and any that needed it)
      const size_t i = pick(n);
      std::vector<Directive> rest = base.directives;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      m.schedule = replay_legal(graph, st, rest);
      m.move = "drop " + to_text(base.directives[i]);
    } else if (kind == 2) {  // retune a split factor
      std::vector<size_t> splits;
      for (size_t i = 0; i < n; ++i)
        if (base.directives[i].kind == DirectiveKind::Split) splits.push_back(i);
      if (splits.empty()) continue;
      const int64_t factors[] = {2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128};
      std::vector<Directive> changed = base.directives;
      Directive& d = changed[splits[pick(splits.size())]];
      const int64_t old = d.factor;
      d.factor = factors[pick(std::size(factors))];
      if (d.factor == old) continue;
      m.schedule = replay_legal(graph, st, changed);
      m.move = "split factor " + std::to_string(old) + " -> " + std::to_string(d.factor) + " in " + to_text(d);
    } else {  // move one directive elsewhere in the order
      const size_t from = pick(n), to = pick(n);
      if (from == to) continue;
      std::vector<Directive> moved = base.directives;
      const Directive d = moved[from];
      moved.erase(moved.begin() + static_cast<std::ptrdiff_t>(from));
      moved.insert(moved.begin() + static_cast<std::ptrdiff_t>(to), d);
      m.schedule = replay_legal(graph, st, moved);
      m.move = "move " + to_text(d) + " from position " + std::to_string(from + 1) + " to " + std::to_string(to + 1);
    }
    if (to_text(m.schedule) == base_text) continue;  // no change after all
    return m;
  }
  return std::nullopt;
}

}  // namespace ollie::loops
