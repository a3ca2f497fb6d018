// Internal to loops/: what the default schedule (default_schedule.cpp), its register
// tiles (register_tiles.cpp) and the random schedules (random_schedule.cpp) share to
// propose directives. Every proposal is tried against a copy of the stages and kept only
// when apply_directive accepts it.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loops/stages.h"

namespace ollie::loops {

// Applies `d` to a copy of `st`; on success keeps it and records it in `out`, else
// leaves both as they were (and the rejection's reason in `reason`, when given).
bool try_apply(const ir::Graph& g, Stages& st, Schedule& out, const Directive& d,
               std::string* reason = nullptr);
// A directive built in code (line 0).
Directive make_directive(DirectiveKind k, const std::string& stage, std::vector<std::string> args,
                         int64_t factor = 0);
// Whether `e` loads `buffer`.
bool reads(const Expr& e, const std::string& buffer);

// Splits `loop` of stage `name` by `factor` (applied to `st`, recorded in `out`): the outer
// and inner loop names (split puts the inner part right after the outer); nullopt, and
// nothing applied, when the split is illegal.
std::optional<std::pair<std::string, std::string>> split_loop(const ir::Graph& g, Stages& st,
                                                              Schedule& out,
                                                              const std::string& name,
                                                              const std::string& loop,
                                                              int64_t factor);
// Reorders `stage` to `order` unless its loops already run in that order.
void reorder_to(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage,
                const std::vector<std::string>& order);
// Reorders `stage` so that `loop` runs innermost, the others keeping their order.
void move_innermost(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage,
                    const std::string& loop);

// The flat index that `load` (in `s`'s value) reads over the stage's loops: through the
// stage's packed copy of its buffer when it has one (a transposed copy swaps the strides).
Expr read_index(const Stage& s, const Expr& load);
// Whether some load of `s` walks its buffer with unit stride along loop `loop` (after
// the stage's substitution and packs): the loop runs along contiguous memory.
bool walks_contiguously(const Stage& s, const std::string& loop);
// The size of a dims expression at the graph's bound dims (large when unbound).
int64_t bound_size(const ir::Graph& g, const ir::DimExpr& d);
// The loads in stage `s`'s value of buffers other than its own (its operands), in order.
std::vector<Expr> operand_loads(const Stage& s);
// The bytes of buffer `b` at the graph's bound dims (a dim of size 0 counted as 1).
int64_t buffer_bytes(const ir::Graph& g, const Buffer& b);
// The vector lanes of `d` on `t`.
int lanes(const Target& t, ir::DType d);

// Register tiles (rows x columns of accumulators): columns a multiple of the vector
// width, rows x columns / lanes vectors within the 32 registers of AVX-512 with room for
// the operands; the first entries are the classic GEMM micro-kernel shapes.
inline constexpr std::pair<int64_t, int64_t> kRegisterTiles[] = {
    {6, 2}, {4, 3}, {8, 2}, {4, 4}, {12, 1}, {3, 4}, {2, 4}, {1, 4}, {8, 1}, {4, 2}};

// The row blocks of the default schedule (default_schedule.cpp): each contraction that
// keeps fused stages (untiled) whose stages, in the schedule without tiles, are computed at
// its row loop (its last pure loop but one) running at least 8 times at the bound dims,
// and the stages computed there (transitively), each with the index of that loop in its
// own loops. The default schedule splits it by 4 in all of them, gives the contractions
// tiles spanning the 4 rows, and computes the stages at the outer loop.
std::map<std::string, size_t> row_blocks(const ir::Graph& graph, const Target& target);

// The loops of `s` that index its biggest operand, when one operand is at least twice as
// big (in bytes at the bound dims) as every other (block_fusion.cpp); empty otherwise.
std::set<std::string> big_operand_loops(const ir::Graph& g, const Stages& st, const Stage& s);
// The rows of a contraction's full tile: the last pure loop but `last_pure` that runs at
// least twice and indexes no element of the big operand (loops `big`); else the last pure
// loop but `last_pure`.
std::string tile_row_of(const ir::Graph& g, const Stage& s, const std::string& last_pure,
                        const std::set<std::string>& big);

// Block fusion (block_fusion.cpp): the contraction `host` whose register tile leaves
// `loop` (a pure loop indexing its big operand, at least 2 per core) outside it, the loops
// `prefix` down to `loop` that every member carries, and the members: the stages that feed
// the host through such stages, or read one of them. The default schedule puts the prefix
// outermost in every member (block_major), then computes the members at the host's loop
// (fuse_block): flash's blocks, each read from memory once for all its stages.
struct BlockPlan {
  std::string host, loop;
  std::vector<std::string> prefix;
  std::set<std::string> members;
};
std::optional<BlockPlan> block_plan(const ir::Graph& g, const Stages& st, const Target& target);
void block_major(const ir::Graph& g, Stages& st, Schedule& out, const BlockPlan& plan,
                 const std::string& stage);
void fuse_block(const ir::Graph& g, Stages& st, Schedule& out, const BlockPlan& plan);

// The directives that give reduction stage `s` a register tile of `rows` x `vectors`
// vectors of accumulators: its last two pure loops (rows, then the columns) split by
// the tile, their outer parts outside the reduction loops and the inner parts inside,
// the accumulators kept in the column loop's outer part, the columns vectorized, the
// rows unrolled and (when `parallel`) the first loop parallel. A stage with one pure
// loop, or `rows` 1, gets a single row. A `column` loop other than the last pure one makes
// that loop the vectorized columns (the tile's store-back then writes it with a stride);
// a `row` loop, the rows (the pure loops outside the tile keep their order).
// `columns_outside`: the tile's column loop runs outside its row loop (a column of tiles
// sweeps all the rows, reusing its strip of the operand the columns stream from cache).
// Each directive is applied to `st`; nullopt (and `st` as it was) if one is illegal.
std::optional<std::vector<Directive>> register_tile(
    const ir::Graph& g, Stages& st, const std::string& stage, int64_t rows, int64_t vectors,
    const Target& target, bool parallel = true, const std::string& column = "",
    const std::string& row = "", bool columns_outside = false);
// A dot-product tile for a contraction vectorized along its innermost reduction loop
// (attention scores: q[h, l] . c_kv[s, l], both contiguous only along l): kDotTile
// iterations of the innermost pure loop that some operand does not depend on run inside
// the reduction loop, each its own accumulator, so that operand's vector is loaded once
// for all of them and the sums do not wait on each other; with 32 vector registers, also
// kDotTile iterations of a second such loop that the other operand does not depend on
// (a kDotTile x kDotTile tile: each operand's vectors loaded once for the whole tile).
// (mla_decode's scores, 512 long, one thread: 0.9 of the whole kernel's time with a 4-row tile,
// `ollie bench --vs`; no gain on attention_causal's 64-long ones.) Applied to `st` and recorded in
// `out` when legal and worthwhile; false otherwise.
bool dot_tile(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
              const Target& target);
// A dot-product-shaped contraction (attention scores q[s, d] . k[s1, d]: the output's last
// loop s1 walks no operand contiguously, the reduction loop d walks both) reads, instead of
// the operand that s1 indexes, a transposed copy of all of it made once per call before its
// nest (`pack S k root transposed`), so s1 walks memory contiguously and the stage becomes
// an outer-product contraction that a register tile vectorizes along s1. Only when each
// element of the copy is used at least kMinTransposeReuse times at the bound dims (the
// pure loops that do not index it): a decode step's scores (16 heads over a 4096-key
// cache) would pay the copy's bytes for little reuse.
inline constexpr int64_t kMinTransposeReuse = 64;
// With `column`, any pure loop may be the one the copy makes contiguous (a decode step's
// heads: q_lat[h, l] transposed, the heads the vector axis against a broadcast cache row);
// it is set to that loop. The operand reused most is copied.
bool transpose_operand(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
                       int64_t min_reuse = kMinTransposeReuse, std::string* column = nullptr);

// A GEMM's cache blocks (the "cache-blocked tile" recipe): the reduction split into
// `block`-long blocks outside a `rows` x `vectors` register tile whose accumulators continue
// from the partial sums of the previous block; the column loop outside the row loop, the
// panel of the operand the columns stream (block x tile columns) packed at it, so that it
// is reused from L1 by every row tile; the column loop parallel at the root. `block` <= 0:
// the reduction is not split, and the panel (every row of the operand by the tile's
// columns) is reused from L2 (the default for a streamed operand bigger than L2). nullopt
// when the stage is no such contraction (one reduction loop, two pure loops) or is short.
std::optional<std::vector<Directive>> blocked_tile(const ir::Graph& g, Stages& st,
                                                   const std::string& name, int64_t rows,
                                                   int64_t vectors, int64_t block,
                                                   const Target& target);
// The block length whose panel of `vectors` vectors per row fills about half of L1 (a power
// of two, at least 32).
int64_t l1_block(const Target& target, int64_t vectors);

// Recipes: whole schedules for one reduction stage that the search proposes in one step
// (random_schedule, mutate_schedule), their sizes drawn from the machine.
enum class RecipeKind { Tile, RowTile, OuterProduct, Blocked, SplitK };
inline constexpr RecipeKind kRecipes[] = {RecipeKind::Tile, RecipeKind::RowTile,
                                          RecipeKind::OuterProduct, RecipeKind::Blocked,
                                          RecipeKind::SplitK};
const char* recipe_name(RecipeKind kind);
// Applies recipe `kind` to stage `name` (sizes drawn with `rng`): its directives, applied
// to `st`; nullopt (and `st` unchanged) when it does not apply.
std::optional<std::vector<Directive>> apply_recipe(const ir::Graph& g, Stages& st,
                                                   const std::string& name, RecipeKind kind,
                                                   std::mt19937_64& rng, const Target& target);

// Split-K: a contraction whose one reduction loop is long beside its output (mla_decode's
// o_lat = p . c_kv: 16 x 512 outputs, 4096 keys) runs as kSplitKBlock-long slices of the
// reduction, each a stage of partial results (rfactor) over every output: a slice of the
// big operand is read once from cache by every output tile (register tiles, when
// `tiles`), and the slices run in parallel. Then the partials are summed with the
// output's last loop vectorized. (mla_decode, one thread: the partials with 6 x 2 tiles
// were 0.77 of the fused serial o_lat's whole-kernel time, `ollie bench --vs`.)
// Only when the reduction is at least kSplitKMin long and the output at most
// kSplitKOutputsPerKey times as big: the partial results cost O x R / block extra.
// Applied to `st` and recorded in `out`; false (nothing applied) when it does not apply.
bool split_k(const ir::Graph& g, Stages& st, Schedule& out, const std::string& name,
             const Target& target, bool tiles);

// bf16_dot (bf16_dot.cpp): the stages it applies to in the stages as lowering builds them;
// `base` with bf16_dot for `stages` first and the legal rest of its directives, those that
// shaped those stages left out; and the stages the default schedule gives it on a machine
// with AVX512_BF16: root contractions of at least kBf16DotMin* rows, columns and depth at
// the bound dims (whole tiles of the micro-kernel, with enough reduction to pay for
// packing both operands per call).
inline constexpr int64_t kBf16DotMinRows = 8, kBf16DotMinColumns = 32, kBf16DotMinDepth = 64;
std::vector<std::string> bf16_dot_stages(const ir::Graph& g);
Schedule with_bf16_dot(const ir::Graph& g, const std::vector<std::string>& stages,
                       const Schedule& base);
std::vector<std::string> default_bf16_dots(const ir::Graph& g, const Schedule& base);

}  // namespace ollie::loops
