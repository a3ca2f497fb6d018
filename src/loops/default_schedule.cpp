// The default schedule, the baseline every search starts from: each stage's loop order
// and vector loop, then fusion, then parallel loops (default_schedule_with's three phases),
// with register tiles for the contractions that host no fused stage.
#include <algorithm>
#include <set>
#include <utility>

#include "loops/proposals.h"

namespace ollie::loops {
namespace {

using ir::OpKind;

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
    if (q.loops[k].reduction || p.loops[k].reduction || q.loops[k].nominal != p.loops[k].nominal)
      continue;
    std::vector<std::string> loops;  // deepest first
    for (size_t m = q.loops.size(); m-- > k;)
      if (!q.loops[m].reduction && q.loops[m].kind != ForKind::Vectorized)
        loops.push_back(q.loops[m].name);
    const std::string qname = q.name;
    for (const auto& loop : loops)
      if (try_apply(g, st, out, make_directive(DirectiveKind::ComputeAt, pname, {qname, loop})))
        return true;
  }
  return false;
}

// Whether the default schedule gives contractions register tiles (see default_schedule).
constexpr bool kDefaultRegisterTiles = true;

// The most accumulator bytes a default contraction keeps live inside its reduction loops.
constexpr int64_t kAccumulatorBytes = 64 * 1024;

// The root of the nest stage `i` is computed in (itself when it is a root).
int root_of(const Stages& st, int i) {
  while (st.stages[static_cast<size_t>(i)].host >= 0) i = st.stages[static_cast<size_t>(i)].host;
  return i;
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
void parallel_inside(const ir::Graph& graph, Stages& st, Schedule& out, const std::string& root,
                     int outside = -1) {
  constexpr int64_t kMaxRegions = 4;
  const int root_index = st.find(root);
  for (const auto& h : std::vector<Stage>(st.stages)) {
    if (h.host < 0 || root_of(st, st.find(h.name)) != root_index) continue;
    if (outside >= 0 && (h.host != root_index || h.shared > outside)) continue;
    int64_t regions = 1;
    for (int k = 0; k < h.shared && k < static_cast<int>(h.loops.size()); ++k)
      regions *= bound_size(graph, h.loops[static_cast<size_t>(k)].nominal);
    if (regions > kMaxRegions) continue;
    for (size_t k = static_cast<size_t>(h.shared); k < h.loops.size(); ++k) {
      const auto& l = h.loops[k];
      if (l.reduction || l.kind == ForKind::Vectorized) break;
      if (bound_size(graph, l.nominal) < 2) continue;
      try_apply(graph, st, out, make_directive(DirectiveKind::Parallel, h.name, {l.name}));
      break;
    }
  }
}

// ---- Phase 1: loop order and vector loops, stage by stage ----

// An exp-weighted sum (online softmax): its last pure loop innermost and vectorized, each
// step's running update side by side over it; the other pure loops outside. (Not a loop
// the score varies along: the sum alone keeps its reduction innermost.)
void order_online_sum(const ir::Graph& graph, Stages& st, Schedule& out, const std::string& name) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  std::vector<std::string> order, reduced;
  std::string last_pure;
  for (const auto& l : s.loops) {
    if (l.reduction)
      reduced.push_back(l.name);
    else if (!last_pure.empty())
      order.push_back(std::exchange(last_pure, l.name));
    else
      last_pure = l.name;
  }
  if (last_pure.empty() || mentions(s.value->args[0], last_pure)) return;
  order.insert(order.end(), reduced.begin(), reduced.end());
  order.push_back(last_pure);
  reorder_to(graph, st, out, name, order);
  try_apply(graph, st, out, make_directive(DirectiveKind::Vectorize, name, {last_pure}));
}

// The last pure loop of `s` (empty when none) and its reduction loops, in order.
std::pair<std::string, std::vector<std::string>> last_pure_and_reduced(const Stage& s) {
  std::string last_pure;
  std::vector<std::string> reduced;
  for (const auto& l : s.loops) {
    if (l.reduction)
      reduced.push_back(l.name);
    else
      last_pure = l.name;
  }
  return {last_pure, reduced};
}

// How a contraction's accumulators are kept: none; one row of up to kRowTileVectors
// vectors (a stage fused at its reader's rows, or hosting fused stages at its own: its
// row loop is not split, so the fusion stays legal); or the full GEMM micro-kernel tile.
// Tile::Block is a row tile over kBlockRows rows: the row loop split by them, as in the
// stages fused at it (row_blocks), so that the fusion stays legal.
enum class Tile { None, Row, Block, Full };
constexpr int64_t kRowTileVectors = 4;
constexpr int64_t kBlockRows = 4;

// A GEMM's streamed operand (indexed by its columns and reduction, not by its rows: b in
// out[m, n] += a[m, k] * b[k, n]) is read as a packed panel when it does not fit in L2 and
// the rows reuse each panel at least kPanelRowTiles times: gemm at 1024^3 streamed b's
// 4 KiB-strided rows from L3 in 16.8 ms, with b's panels packed in 11.8 ms (2 threads,
// `ollie bench --vs`); matmul's 512 KiB b gained nothing and keeps the plain tile.
constexpr int64_t kPanelRowTiles = 8;

// The bytes of the biggest operand that the columns `col` stream (indexed by them and the
// reduction, not by the rows `row`); 0 when none.
int64_t streamed_bytes(const ir::Graph& graph, const Stages& st, const Stage& s,
                       const std::string& row, const std::string& col) {
  int64_t most = 0;
  for (const Expr& load : operand_loads(s)) {
    const Expr flat = substitute(load->args[0], s.subst);
    bool reduced = false;
    for (const auto& l : s.loops) reduced |= l.reduction && mentions(flat, l.name);
    const Buffer* b = st.buffer(load->name);
    if (b && reduced && mentions(flat, col) && !mentions(flat, row))
      most = std::max(most, buffer_bytes(graph, *b));
  }
  return most;
}

int64_t loop_size(const ir::Graph& graph, const Stage& s, const std::string& loop) {
  for (const auto& l : s.loops)
    if (l.name == loop) return bound_size(graph, l.nominal);
  return 0;
}

bool panel_pays(const ir::Graph& graph, const Target& target, const Stages& st, const Stage& s,
                const std::string& row, const std::string& col) {
  return loop_size(graph, s, row) >= 6 * kPanelRowTiles &&
         streamed_bytes(graph, st, s, row, col) > target.l2_bytes;
}

// A full tile sweeps the rows inside each column of tiles (register_tile's
// `columns_outside`) when the streamed operand fills more than half of L2: a column's
// strip of it (reduction x tile columns) is then reused from cache by every row of tiles,
// where rows outside swept all of it from L3 for each row of tiles. Only with column
// tiles enough for the cores (they become the parallel loop). mha_causal's projections
// (x @ w, w 1 MiB at this machine's 1 MiB L2): the whole kernel 1.17x faster at one thread
// (median thread CPU time, 5.94-6.11 -> 5.09 ms, interleaved); at 2 threads on a busy
// machine 1.13x, 0.94x and 1.00x in three `ollie bench --vs` runs (MAD 27-73%: not
// resolved). matmul's 512 KiB b showed no difference at one thread and keeps its rows
// outside (2 threads: 1.055x with columns outside, not taken).
constexpr int64_t kColumnTilesPerCore = 4;

bool columns_outside(const ir::Graph& graph, const Target& target, const Stages& st, const Stage& s,
                     const std::string& row, const std::string& col, int64_t cols) {
  return streamed_bytes(graph, st, s, row, col) > target.l2_bytes / 2 &&
         loop_size(graph, s, col) >= cols * kColumnTilesPerCore * target.cores &&
         loop_size(graph, s, row) >= 6 * kPanelRowTiles;
}

// The rows of a full tile over a row loop of `extent` (at the bound dims): 6 (the GEMM
// micro-kernel's 6 x 2 vectors), but for a short row loop that 6 does not divide (a
// decode's heads), 8 rows where 8 divides it and the machine has 32 vector registers
// (16 accumulators), else 4 where 4 does: a partial tile runs the slow generic path on a
// large share of a short loop's rows. mla_decode's flash o_b over 16 heads, tiles of 6 + 6
// + 4 rows against 8 + 8 (measured in the commit that made this).
constexpr int64_t kShortRowLoop = 96;

int64_t full_tile_rows(const Target& target, int64_t extent) {
  if (extent > kShortRowLoop || extent % 6 == 0) return 6;
  if (target.vector_bytes >= 64 && extent % 8 == 0) return 8;
  return extent % 4 == 0 ? 4 : 6;
}

// A contraction's register tile when every pure loop but `last_pure` stays outside its
// reduction loops: full_tile_rows (6 for a GEMM) rows of the pure loop before the last by
// 2 vectors of the last (fewer when the dims are smaller), the accumulators in registers
// across the reduction;
// or, for Tile::Row, one row by up to kRowTileVectors vectors.
// No tile for a short reduction (flash's combination over a few blocks, or its empty
// tail): the accumulators would be reused too few times to pay for the tile, and its
// split loops would keep the stage out of its reader's nest. Applied when legal.
bool contraction_tile(const ir::Graph& graph, const Target& target, Stages& st, Schedule& out,
                      const std::string& name, const std::string& last_pure, Tile kind) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  const int w = lanes(target, s.dtype);
  std::string row;
  int64_t rows = kind == Tile::Row ? 1 : kind == Tile::Block ? kBlockRows : 6, cols = 0;
  for (const auto& l : s.loops)
    if (!l.reduction && l.name != last_pure) row = l.name;
  const std::string last_row = row;  // the rows blocked_tile takes
  if (kind == Tile::Full) row = tile_row_of(graph, s, last_pure, big_operand_loops(graph, st, s));
  int64_t row_extent = 1;
  for (const auto& l : s.loops) {
    if (l.name == row) {
      row_extent = std::max<int64_t>(1, bound_size(graph, l.nominal));
      rows = std::min<int64_t>(rows, row_extent);
    }
    if (l.name == last_pure) cols = bound_size(graph, l.nominal);
  }
  int64_t steps = 1;
  for (const auto& l : s.loops)
    if (l.reduction) steps *= bound_size(graph, l.nominal);
  if ((row.empty() && kind == Tile::Full) || cols < w || steps < kMinTileReduction) return false;
  if (kind == Tile::Full && rows == 6 && row == last_row &&
      panel_pays(graph, target, st, s, row, last_pure)) {
    Stages work = st;
    if (auto panel = blocked_tile(graph, work, name, rows, cols >= 2 * w ? 2 : 1, 0, target)) {
      st = std::move(work);
      out.directives.insert(out.directives.end(), panel->begin(), panel->end());
      return true;
    }
  }
  // (The panel keeps its 6 rows: swiglu_mlp's 64-row down projection was measured so.)
  if (kind == Tile::Full) rows = std::min(full_tile_rows(target, row_extent), row_extent);
  const int64_t vectors = kind == Tile::Row || kind == Tile::Block
                              ? std::min<int64_t>(kRowTileVectors, cols / w)
                          : cols >= 2 * w ? 2
                                          : 1;
  const bool col_outer = kind == Tile::Full && rows > 1 &&
                         columns_outside(graph, target, st, s, row, last_pure, vectors * w);
  const auto tile = register_tile(graph, st, name, rows, vectors, target, false, "",
                                  kind == Tile::Full ? row : "", col_outer);
  if (tile) out.directives.insert(out.directives.end(), tile->begin(), tile->end());
  return tile.has_value();
}

// A contraction whose output's last loop walks an operand contiguously (out[m, n] +=
// a[m, k] * b[k, n]): that loop innermost, vectorized; the other pure loops that do not
// index the biggest operand go inside the reduction loops, so that it is swept once (only
// while the accumulators inside the reduction loops stay cache-sized). With every other
// pure loop outside the reduction loops, a register tile of the kind `tile` instead. False,
// with nothing applied, for a stage that is no such contraction.
bool order_contraction(const ir::Graph& graph, const Target& target, Stages& st, Schedule& out,
                       const std::string& name, Tile tile) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  const auto [last_pure, reduced] = last_pure_and_reduced(s);
  if (!s.contract || last_pure.empty() || !walks_contiguously(s, last_pure)) return false;
  const std::set<std::string> big = big_operand_loops(graph, st, s);
  int64_t inner_bytes = ir::dtype_bytes(s.dtype);
  for (const auto& l : s.loops)
    if (!l.reduction && (l.name == last_pure || !big.count(l.name)))
      inner_bytes *= bound_size(graph, l.nominal);
  // The slice of the big operand that the loops inside the outer ones sweep: when a full
  // tile is wanted and that slice stays in L2, sweeping it once per row of tiles costs
  // little, and the tile's accumulators stay in registers where sunk loops loaded and
  // stored every output at every step (side by side, 2 threads: gpt2_block 1.27x and
  // llama_block 1.24x faster, mla_decode_naive 1.10x).
  // Not when the loops to sink run once (a decode's batch of 1: the tile's rows would come
  // from the big operand's own loops, which reuse nothing; mla_decode's q_lat slowed 0.9x).
  // Nor when the tile's rows (tile_row_of) index the big operand: they would reuse nothing.
  int64_t slice_bytes = ir::dtype_bytes(s.dtype), sunk_rows = 1;
  const std::string tile_row = tile_row_of(graph, s, last_pure, big);
  for (const auto& l : s.loops) {
    if (big.count(l.name) && (l.reduction || l.name == last_pure))
      slice_bytes *= bound_size(graph, l.nominal);
    if (!l.reduction && !big.count(l.name) && l.name != last_pure)
      sunk_rows *= bound_size(graph, l.nominal);
  }
  const bool tile_over_sink = tile == Tile::Full && slice_bytes <= target.l2_bytes / 2 &&
                              sunk_rows >= 2 && !big.count(tile_row);
  const bool sink = !big.empty() && inner_bytes <= kAccumulatorBytes && !tile_over_sink;
  std::vector<std::string> order, inner_pure;
  for (const auto& l : s.loops)
    if (!l.reduction && l.name != last_pure)
      (!sink || big.count(l.name) ? order : inner_pure).push_back(l.name);
  order.insert(order.end(), reduced.begin(), reduced.end());
  order.insert(order.end(), inner_pure.begin(), inner_pure.end());
  order.push_back(last_pure);
  if (tile != Tile::None && inner_pure.empty() &&
      contraction_tile(graph, target, st, out, name, last_pure, tile))
    return true;
  reorder_to(graph, st, out, name, order);
  try_apply(graph, st, out, make_directive(DirectiveKind::Vectorize, name, {last_pure}));
  return true;
}

// A lane tile: a dot-product-shaped contraction whose operand indexed by a short pure loop
// (a decode step's heads: q_lat[h, l] . c_kv[s, l]) reads a transposed copy of that
// operand made once per call (`pack S q_lat root transposed`), so that loop becomes the
// vector lanes (16 heads: one vector) against a broadcast element of the other operand,
// in a register tile of kLaneTileRows rows of another pure loop (the keys): no horizontal
// sums, one vector load and kLaneTileRows broadcasts per kLaneTileRows multiply-adds.
// mla_decode's flash scores, cold, 1 thread: 0.66x the time of the kernel with the dot
// tile (rows of 4 and 16: 1.10x and 1.09x slower than 8). Only for a loop of 1 or 2
// vectors at the bound dims. Applied when legal; false (nothing applied) otherwise.
constexpr int64_t kLaneTileRows = 8;

bool lane_tile(const ir::Graph& graph, const Target& target, Stages& st, Schedule& out,
               const std::string& name) {
  Stages work = st;
  Schedule done;
  std::string column;
  if (!transpose_operand(graph, work, done, name, kLaneTileRows, &column)) return false;
  const Stage& s = work.stages[static_cast<size_t>(work.find(name))];
  const int w = lanes(target, s.dtype);
  int64_t extent = 0;
  for (const auto& l : s.loops)
    if (l.name == column) extent = bound_size(graph, l.nominal);
  if (w < 2 || extent < w || extent % w != 0 || extent > 2 * w) return false;
  const auto tile =
      register_tile(graph, work, name, kLaneTileRows, extent / w, target, false, column);
  if (!tile) return false;
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  out.directives.insert(out.directives.end(), tile->begin(), tile->end());
  return true;
}

// Any other reduction keeps its reduction loops innermost, the pure loops indexing the
// biggest operand outside the others. A row sum along contiguous memory is vectorized as
// is (a scalar accumulator split over lanes), several side by side for a contraction
// (dot_tile, when `tiles`); a row max or min gets lanes partial results side by side,
// vectorized, then reduced (split, rfactor).
void order_row_reduction(const ir::Graph& graph, const Target& target, Stages& st, Schedule& out,
                         const std::string& name, bool tiles) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  const std::set<std::string> big = big_operand_loops(graph, st, s);
  if (!big.empty()) {
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
    if (!(tiles &&
          (lane_tile(graph, target, st, out, name) || dot_tile(graph, st, out, name, target))))
      try_apply(graph, st, out, make_directive(DirectiveKind::Vectorize, name, {r}));
  } else if (walks_contiguously(now, r) && w > 1) {
    if (try_apply(graph, st, out, make_directive(DirectiveKind::Split, name, {r}, w))) {
      const Stage& split = st.stages[static_cast<size_t>(st.find(name))];
      const std::string ri = split.loops.back().name;
      if (try_apply(graph, st, out, make_directive(DirectiveKind::Rfactor, name, {ri})))
        try_apply(graph, st, out, make_directive(DirectiveKind::Vectorize, name + "_rf", {ri}));
    }
  }
}

// Phase 1 decides, for each stage on its own, which loop runs innermost and is
// vectorized, and for reductions where the pure loops go around the reduction loops (or
// which register tile replaces them): what makes the innermost loop walk memory
// contiguously and keeps accumulators in registers. It runs before fusion so that each
// producer is later nested into its reader's final loop order. Contractions get register
// tiles when `tiles`, except those named in `untiled`; the stages in `blocks` first split
// their row loop (the loop at that index) by kBlockRows, their contractions get Tile::Block.
// The members of `plan` (block_fusion.cpp) first put its outer loops outermost.
void order_loops(const ir::Graph& graph, const Target& target, Stages& st, Schedule& out,
                 bool tiles, const std::set<std::string>& untiled,
                 const std::map<std::string, size_t>& blocks, const BlockPlan* plan) {
  std::vector<std::string> names;
  for (const auto& s : st.stages) names.push_back(s.name);
  for (const auto& name : names) {
    if (plan && plan->members.count(name)) block_major(graph, st, out, *plan, name);
    // A blocked contraction's tile splits its rows itself (Tile::Block).
    const auto block = blocks.find(name);
    const Stage& s0 = st.stages[static_cast<size_t>(st.find(name))];
    const bool blocked =
        tiles && block != blocks.end() &&
        (s0.contract || try_apply(graph, st, out,
                                  make_directive(DirectiveKind::Split, name,
                                                 {s0.loops[block->second].name}, kBlockRows)));
    if (split_k(graph, st, out, name, target, tiles && !untiled.count(name + "_rf"))) continue;
    const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
    if (s.loops.empty()) continue;
    if (!s.loops.back().reduction)
      try_apply(graph, st, out,
                make_directive(DirectiveKind::Vectorize, name, {s.loops.back().name}));
    else if (!s.running_max.empty())
      order_online_sum(graph, st, out, name);
    else {
      // A dot-product-shaped contraction reads a transposed copy of an operand and keeps
      // its rows unsplit, as do the hosts of fused stages.
      const bool transposed = transpose_operand(graph, st, out, name);
      const Tile tile = !tiles                              ? Tile::None
                        : blocked                           ? Tile::Block
                        : transposed || untiled.count(name) ? Tile::Row
                                                            : Tile::Full;
      if (!order_contraction(graph, target, st, out, name, tile))
        order_row_reduction(graph, target, st, out, name, tiles);
    }
  }
}

// ---- Phase 2: fusion ----

// The readers of stage `i`: the root nest they are all computed in (`unique` false when
// they are in several), and the one reader when there is only one.
struct Readers {
  int root = -1, reader = -1;
  bool unique = true, one_reader = true;
};

Readers readers_of(const Stages& st, int i) {
  Readers out;
  const std::string& buffer = st.stages[static_cast<size_t>(i)].buffer;
  for (size_t r = 0; r < st.stages.size(); ++r) {
    if (static_cast<int>(r) == i || !reads(st.stages[r].value, buffer)) continue;
    const int root = root_of(st, static_cast<int>(r));
    if (out.root >= 0 && out.root != root) out.unique = false;
    if (out.reader >= 0) out.one_reader = false;
    out.root = root;
    out.reader = static_cast<int>(r);
  }
  return out;
}

// Computes stage `i` at the deepest loop of stage `host` from `from_depth` on that is
// neither a reduction nor vectorized and where compute_at is legal; false when none is.
bool compute_at_deepest(const ir::Graph& graph, Stages& st, Schedule& out, int i, int host,
                        size_t from_depth) {
  const Stage& h = st.stages[static_cast<size_t>(host)];
  const std::string pname = st.stages[static_cast<size_t>(i)].name, hname = h.name;
  for (size_t k = h.loops.size(); k-- > from_depth;) {
    if (h.loops[k].reduction || h.loops[k].kind == ForKind::Vectorized) continue;
    if (try_apply(graph, st, out,
                  make_directive(DirectiveKind::ComputeAt, pname, {hname, h.loops[k].name})))
      return true;
  }
  return false;
}

// Phase 2 decides where each producer is computed: inside the outer loops of the root
// nest that reads it, as deep as is legal, consumers first, so that the slice it produces
// is consumed while in cache (and its buffer folds to that slice). Inside its only reader
// when that reader is nested already; else, when all its readers are in one root nest,
// beside a sibling in that nest (into_sibling) or at the root's loops.
void fuse_producers(const ir::Graph& graph, Stages& st, Schedule& out) {
  for (int i = static_cast<int>(st.stages.size()) - 1; i >= 0; --i) {
    const Readers r = readers_of(st, i);
    if (r.one_reader && r.reader >= 0 && r.reader != r.root &&
        compute_at_deepest(graph, st, out, i, r.reader,
                           static_cast<size_t>(st.stages[static_cast<size_t>(r.reader)].shared)))
      continue;
    if (r.root < 0 || !r.unique || r.root == i) continue;
    if (into_sibling(graph, st, out, i, r.root)) continue;
    compute_at_deepest(graph, st, out, i, r.root, 0);
  }
}

// ---- Phase 3: parallel loops ----

// Makes the outermost pure loop of root stage `s` that runs more than once at the bound
// dims parallel; the depth of its parallel loop (one a register tile made already, too),
// or -1 when it has none.
int parallel_outermost(const ir::Graph& graph, Stages& st, Schedule& out, const Stage& s) {
  int depth = 0;
  for (const auto& l : s.loops) {
    if (l.reduction || l.kind == ForKind::Vectorized) return -1;
    if (l.kind == ForKind::Parallel) return depth;
    if (bound_size(graph, l.nominal) >= 2)
      return try_apply(graph, st, out, make_directive(DirectiveKind::Parallel, s.name, {l.name}))
                 ? depth
                 : -1;
    ++depth;
  }
  return -1;
}

// Phase 3 decides which loops run on several cores, after fusion has fixed the nests: one
// parallel loop per root nest, its outermost pure loop with more than one iteration (one
// parallel region per call, as much work in it as the nest has). A nest with none, or
// with stages computed outside its parallel loop, shares out the stages inside
// (parallel_inside).
void parallelize_roots(const ir::Graph& graph, Stages& st, Schedule& out) {
  for (const auto& s : std::vector<Stage>(st.stages)) {
    if (s.host >= 0) continue;
    const int depth = parallel_outermost(graph, st, out, s);
    if (depth < 0)
      parallel_inside(graph, st, out, s.name);
    else if (depth > 0)
      parallel_inside(graph, st, out, s.name, depth);
  }
}

// The default schedule in its three phases; contractions get register tiles when
// `tiles`, except those named in `untiled`; `blocks` as order_loops takes them.
Schedule default_schedule_with(const ir::Graph& graph, const Target& target, bool tiles,
                               const std::set<std::string>& untiled,
                               const std::map<std::string, size_t>& blocks = {}) {
  Stages st = build_stages(graph, {});
  Schedule out;
  const std::optional<BlockPlan> block =
      tiles && target.cores > 1 ? block_plan(graph, st, target) : std::nullopt;
  order_loops(graph, target, st, out, tiles, untiled, blocks, block ? &*block : nullptr);
  if (block) fuse_block(graph, st, out, *block);
  fuse_producers(graph, st, out);
  if (target.cores > 1) parallelize_roots(graph, st, out);
  return out;
}

// A fused elementwise producer costs a contraction its register tile; when the
// contraction's biggest operand is at least this big, the tile wins: swiglu_mlp's
// out0 = hidden @ w_down (2 MiB) with the gate computed per row inside it streamed all of
// w_down once per row; tiled, with the gate written out first, it ran in 0.72-0.80x the
// time (examples/schedules/swiglu_mlp.schedule, `ollie bench --vs`).
constexpr int64_t kTileOverFusionBytes = 256 * 1024;

// The contractions the default schedule leaves without register tiles: those that host
// fused stages in `plain` (the schedule without tiles), since a tile's split loops would
// refuse them and their buffers would no longer fold; unless the stages fused in are all
// elementwise and the contraction's biggest operand is big (kTileOverFusionBytes). (A
// contraction fused without tiles gets its own tile instead.)
std::set<std::string> untiled_hosts(const ir::Graph& graph, const Schedule& plain) {
  const Stages st = build_stages(graph, {});
  auto stage = [&](const std::string& name) -> const Stage* {
    const int i = st.find(name);
    return i < 0 ? nullptr : &st.stages[static_cast<size_t>(i)];
  };
  std::set<std::string> hosts, fused_reductions;
  for (const auto& d : plain.directives)
    if (d.kind == DirectiveKind::ComputeAt) {
      hosts.insert(d.args[0]);
      const Stage* p = stage(d.stage);
      if (!p || (p->reduce && !p->contract)) fused_reductions.insert(d.args[0]);
    }
  std::set<std::string> untiled;
  for (const auto& h : hosts) {
    const Stage* s = stage(h);
    int64_t largest = 0;
    if (s && s->contract && !fused_reductions.count(h))
      for (const Expr& load : operand_loads(*s))
        if (const Buffer* b = st.buffer(load->name))
          largest = std::max(largest, buffer_bytes(graph, *b));
    if (largest < kTileOverFusionBytes) untiled.insert(h);
  }
  return untiled;
}

// row_blocks (proposals.h), from the schedule without tiles and its untiled hosts.
std::map<std::string, size_t> blocks_of(const ir::Graph& graph, const Schedule& plain,
                                        const std::set<std::string>& untiled) {
  const Stages st = build_stages(graph, {});
  auto stage = [&](const std::string& name) -> const Stage* {
    const int i = st.find(name);
    return i < 0 ? nullptr : &st.stages[static_cast<size_t>(i)];
  };
  std::map<std::string, size_t> out;
  std::map<std::string, std::string> row_of;  // a blocked stage's row loop in `plain`
  for (const auto& d : plain.directives) {
    if (d.kind != DirectiveKind::ComputeAt) continue;
    const std::string& host = d.args[0];
    const Stage* h = stage(host);
    if (!h) continue;
    if (!out.count(host) && untiled.count(host) && h->contract) {
      // The host's row: the last pure loop before its last (the one register_tile splits).
      std::vector<size_t> pure;
      for (size_t k = 0; k < h->loops.size(); ++k)
        if (!h->loops[k].reduction) pure.push_back(k);
      if (pure.size() < 2 || h->loops[pure[pure.size() - 2]].name != d.args[1]) continue;
      const int64_t rows = bound_size(graph, h->loops[pure[pure.size() - 2]].nominal);
      if (rows < 2 * kBlockRows) continue;
      out[host] = pure[pure.size() - 2];
      row_of[host] = d.args[1];
    }
    if (!out.count(host) || row_of[host] != d.args[1]) continue;
    const int64_t rows = bound_size(graph, h->loops[out[host]].nominal);
    const Stage* p = stage(d.stage);
    const size_t j = out[host];
    if (p && j < p->loops.size() && !p->loops[j].reduction &&
        bound_size(graph, p->loops[j].nominal) == rows) {
      out[d.stage] = j;
      row_of[d.stage] = p->loops[j].name;
    }
  }
  return out;
}

}  // namespace

std::map<std::string, size_t> row_blocks(const ir::Graph& graph, const Target& target) {
  const Schedule plain = default_schedule_with(graph, target, false, {});
  return blocks_of(graph, plain, untiled_hosts(graph, plain));
}

Schedule default_schedule(const ir::Graph& graph, const Target& target) {
  const Schedule plain = default_schedule_with(graph, target, false, {});
  const std::set<std::string> untiled = untiled_hosts(graph, plain);
  const Schedule tiled = default_schedule_with(graph, target, kDefaultRegisterTiles, untiled,
                                               blocks_of(graph, plain, untiled));
  // With AVX512_BF16, the big bfloat16 contractions take the bf16 dot-product micro-kernel.
  const std::vector<std::string> dots =
      target.bf16_dot ? default_bf16_dots(graph, tiled) : std::vector<std::string>{};
  return dots.empty() ? tiled : with_bf16_dot(graph, dots, tiled);
}

}  // namespace ollie::loops
