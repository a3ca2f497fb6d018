// Internal to loops/: the stages lowering builds from the tensor IR and the scheduled
// state that directives transform (apply.cpp) and that realize.cpp turns into loop nests.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loops/loops.h"

namespace ollie::loops {

// One loop of a scheduled stage. `extent` may mention outer loops of the same stage (the
// guarded tail of a split); `nominal` is a dims-only upper bound of it (buffer sizes).
struct StageLoop {
  std::string name;
  Expr extent;
  ir::DimExpr nominal;
  bool reduction = false;
  ForKind kind = ForKind::Serial;
};

// A local buffer whose tile a stage copies at the start of one of its loops.
struct PackedTile {
  std::string source;       // the buffer read
  std::string local;        // the packed copy
  int depth = 0;            // copied inside the first `depth` loops of the stage
  std::vector<Expr> start;  // per dim of `source`, over those outer loops
  ir::Shape extent;         // per dim: the tile's size (a dims-only bound)
  // The whole buffer, copied once before the root nest the stage runs in (`pack S B root`);
  // `depth` is then 0 and `start` all zeros.
  bool root = false;
  // The copy keeps the tile's last two dims swapped (`transposed`): a[i, k] read along i
  // becomes contiguous.
  bool transposed = false;
  // A root copy of one of several tiles the stage reads (picoGPT's head reads its q and its
  // k slice of one qkv buffer): the loads of that tile were made loads of `local` when the
  // pack was applied, so realize leaves the stage's loads alone.
  bool loads_rewritten = false;
};

// The tile's dims in the order the packed copy lays them out (the last two swapped when
// transposed), and the shape of the copy.
std::vector<size_t> packed_order(const PackedTile& p);
ir::Shape packed_shape(const PackedTile& p);

// The contraction a bf16_dot stage computes: out[o + i*o_m + j*o_n] = sum over k of
// a[a_off + i*a_m + k*a_k] * b[b_off + k*b_k + j*b_n], i < M, j < N, k < K. The offsets are
// over the stage's other (batch) loops, which run serially around the call; the strides
// and sizes over the dims only.
struct Bf16Dot {
  std::string a, b;
  ir::DType a_type, b_type;
  Expr a_off, a_m, a_k, b_off, b_k, b_n, o_off, o_m, o_n, m, n, k;
  std::vector<size_t> batch;                  // the stage's loops around the call
  int m_loop = -1, n_loop = -1, k_loop = -1;  // the loops of m, n, k (-1: none, size 1)
};

// A perfect loop nest around one store: buffer[store_index] = value, or for a reduction
// buffer[store_index] = combine(buffer[store_index], value) after buffer = init.
// store_index and value are over the stage's variables (`vars`); `subst` maps each of
// them to an expression over the loops.
struct Stage {
  std::string name;
  std::string buffer;
  ir::DType dtype = ir::DType::F32;
  ir::Shape buffer_shape;
  std::vector<std::string> vars;
  std::vector<Expr> store_index;
  Expr value;
  bool reduce = false;
  ir::OpKind combine = ir::OpKind::Add;
  Expr init;
  std::string what;  // "Reduce max", "Contract", "exp", ...: for describe_stages
  bool contract = false;
  // An exp-weighted contraction (combine ExpContract, value online(score, x) or
  // online2(...)): buffer accumulates sum exp(score - M) x online, with the running max M of
  // each output element in the local buffer `running_max` (docs/schedules.md).
  std::string running_max;

  // Scheduled state.
  std::vector<StageLoop> loops;
  std::map<std::string, Expr> subst;
  int host = -1;   // compute_at: index of the host stage, -1 at the root
  int shared = 0;  // loops shared with the host (its first `shared` loops)
  std::vector<PackedTile> packs;
  // accumulate: the elements the stage writes inside its first `accumulate_depth` loops
  // are reduced in the local array `accumulator` (0: straight into the buffer).
  int accumulate_depth = 0;
  std::string accumulator;
  // bf16_dot (bf16_dot.cpp): the stage is one call of the bf16 dot-product micro-kernel.
  std::optional<Bf16Dot> bf16_dot;
};

// The most bytes of accumulators `accumulate` keeps in one tile (a register file is 2 KiB
// with AVX-512; twice that leaves room for tiles the compiler spills a little).
constexpr int64_t kMaxAccumulatorBytes = 4096;

// Everything lowering produced: the kernel's ABI buffers and dims, the local buffers,
// and the stages in execution order.
struct Stages {
  Kernel kernel;  // entry, buffers, dims, dim_names (body unset)
  std::vector<Buffer> locals;
  std::vector<Stage> stages;
  std::set<std::string> reserved;  // C++ names taken (keywords, buffers, dims)

  int find(const std::string& stage) const;
  const Buffer* buffer(const std::string& name) const;
};

// Stages of `graph` with the default loops (build_stages.cpp); `inline_nodes` lists the
// tensor-IR values (beyond the default single-use ones) to recompute inside their readers.
Stages build_stages(const ir::Graph& graph, const std::set<ir::ValueId>& inline_nodes);

// The elementwise values that lowering inlines by default.
std::set<ir::ValueId> default_inlined(const ir::Graph& graph);

// Causal domains (domains.cpp): gives each reduction loop whose terms a triangular mask
// sets to one loop-invariant value past a bound the guarded extent that skips them
// (build_stages calls it last; set_causal_domains(false) turns it off).
void restrict_domains(Stages& st);
// A loop bounded by what its stage's reader uses (select(h < E, h, E): the reader's
// select discards the elements past h, so computing any of [h, E) is harmless): E, the
// extent a split's inner loop may keep, so a register tile of the loop stays whole.
std::optional<Expr> demand_full_extent(const Expr& extent);
// The loads of `buffer` in the loop extents of stage `stage` (a causal domain's guard
// reads the stage's term there), over canonical loop names.
std::vector<Expr> extent_loads(const Stages& st, int stage, const std::string& buffer);
// Whether a loop extent is (or holds) a causal domain's guarded bound.
bool causal_bound(const Expr& extent);
// A causal bound `extent` over the loop `row`, for a loop moved outside `row` (a block of
// rows; constant size up to kMaxBlockRows): the largest bound of the block's rows. Each
// row then runs masked iterations past its own bound, which the guard made exact (their
// terms are +-0 for a sum, copies of the one masked value for a max or min); nullopt
// when `extent` does not depend on `row` or the block is not small and constant.
constexpr int64_t kMaxBlockRows = 16;
std::optional<Expr> block_bound(const Expr& extent, const StageLoop& row);

// bf16_dot (bf16_dot.cpp): checks that stage `s` is a float32 sum of products of two
// bfloat16 loads in its initial loops, and makes it one micro-kernel call; throws
// ScheduleError with the reason otherwise. The call statement of such a stage.
void apply_bf16_dot(Stages& st, Stage& s, const Directive& d);
Stmt bf16_dot_call(const Stage& s, std::set<std::string> scope,
                   const std::set<std::string>& reserved);

// Applies one directive to `st` or throws ScheduleError; `st` is unchanged on error.
void apply_directive(const ir::Graph& graph, Stages& st, const Directive& d);

// The kernel body: every stage's loop nest, producers computed at their hosts, local
// buffers allocated around it.
Kernel realize(const Stages& st);

// The loop a stage's loop `t` really is: a shared loop is its host's (recursively).
struct Canonical {
  int owner;
  int index;
  bool operator==(const Canonical& o) const { return owner == o.owner && index == o.index; }
};
Canonical canonical(const Stages& st, int stage, int t);
std::string canonical_name(const Canonical& c);
// An expression over stage `stage`'s vars, rewritten over canonical loop names.
Expr in_canonical(const Stages& st, int stage, const Expr& e);

// A row block (row_blocks.cpp): an index `outer * size + inner`.
struct RowBlock {
  std::string outer;
  int64_t size;
  Expr inner;
};
std::optional<RowBlock> row_block(const Expr& e);
// Whether writer `w`'s store (over canonical names) writes at dim `d` a whole block of
// rows at each iteration of the shared loop `loop`, and reader `r`'s index `load` of that
// dim reads inside the same block: w's own pure loop walks the block's rows, r's own loop
// at most as many.
bool same_block(const Stages& st, int w, const std::vector<Expr>& store, size_t d, int r,
                const Expr& load, const std::string& loop);
// Whether `e` (over canonical names) is a var of stage `s`'s own loop running at most
// `size` times (for a writer, `pure`: exactly `size`, pure, with no causal bound).
bool block_rows(const Stages& st, int s, const Expr& e, int64_t size, bool pure);

// Row-major flat index of `idx` in `shape`.
Expr flatten(const std::vector<Expr>& idx, const ir::Shape& shape);

}  // namespace ollie::loops
