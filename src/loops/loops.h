// The loop-nest IR (stage 3a): an imperative, Halide-style IR of loops, buffers, loads
// and stores that the tensor IR lowers to and that schedules (later) transform.
//
// Semantics
// - Nodes are immutable and shared; build them only with the make_* functions, which
//   check invariants (operand dtypes, index dtypes) and throw InternalError otherwise.
// - Every Expr has a dtype. Index arithmetic is i64. Buffers are flat, row-major arrays;
//   a Load/Store names a buffer and a flat element index.
// - Binary Max/Min propagate NaN (numpy maximum/minimum); FloorDiv/Mod have numpy floor
//   semantics; Div of integers truncates (C), and lowering uses it only on non-negative
//   index arithmetic; Cast rounds (float) or truncates toward zero (float -> int).
// - A For runs `var` over [min, min + extent) in order; Parallel/Vectorized/Unrolled are
//   promises that iterations are independent (or just a hint, for Unrolled).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace ollie::loops {

enum class ExprKind { IntImm, FloatImm, Var, Dim, Load, Unary, Binary, Select, Cast, Call };

// Unary ops: Neg, Abs, Not, PowI (exponent in int_value). Binary ops: Add..Min, FloorDiv,
// Mod, comparisons, And, Or (ir::OpKind names them). Calls: exp log sqrt tanh erf sin cos pow.
struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  ir::DType dtype;
  int64_t int_value = 0;            // IntImm; PowI exponent; 1 on a guarded Select
  double float_value = 0;           // FloatImm
  std::string name;                 // Var / Load buffer / Call function
  ir::DimExpr dim;                  // Dim: a symbolic size over the kernel's dims
  ir::OpKind op = ir::OpKind::Add;  // Unary / Binary
  std::vector<Expr> args;           // operands; Load: {flat index, then the multi-index when
                                    //   known}; Select: {cond, a, b}
};

Expr make_int(int64_t value, ir::DType dtype = ir::DType::I64);
Expr make_float(double value, ir::DType dtype);
Expr make_var(const std::string& name);  // a loop index, i64
Expr make_dim(const ir::DimExpr& dim);   // folds to IntImm when constant
// A load of buffer[index]; `multi`, when given, is the same element as a row-major
// multi-index (schedules use it to reason about dependences and to pack tiles).
Expr make_load(const std::string& buffer, ir::DType dtype, Expr index,
               std::vector<Expr> multi = {});
Expr make_unary(ir::OpKind op, Expr a);
Expr make_powi(Expr a, int64_t exponent);
Expr make_binary(ir::OpKind op, Expr a, Expr b);  // folds i64 +0, *1, *0 and constants
// select(cond, a, b): both arms are values the emitted kernel may compute at every
// iteration (numpy's np.where computes both arrays), so it emits them branch-free and
// the C++ compiler vectorizes the loop. A guarded select has an arm that is only valid
// where it is chosen (a load past a buffer's end); the kernel evaluates just that arm.
Expr make_select(Expr cond, Expr a, Expr b);
Expr make_guarded_select(Expr cond, Expr a, Expr b);
bool is_guarded_select(const Expr& e);
Expr make_cast(ir::DType to, Expr a);                           // returns `a` if already `to`
Expr make_call(const std::string& fn, std::vector<Expr> args);  // dtype of args[0]

// Expression utilities: simultaneous substitution of Vars by name (rebuilt through the
// make_* functions, so constants fold), rebuilding a node with new operands, structural
// equality, and whether `e` reads a Var.
Expr substitute(const Expr& e, const std::map<std::string, Expr>& vars);
// The same node as `e` with operands `args` (through the make_* functions).
Expr rebuild(const Expr& e, std::vector<Expr> args);
bool equal(const Expr& a, const Expr& b);
bool mentions(const Expr& e, const std::string& var);
// The Loads of `buffer` in `e` (appended to `out`), and the names of the Vars `e` reads.
void collect_loads(const Expr& e, const std::string& buffer, std::vector<Expr>& out);
void collect_vars(const Expr& e, std::set<std::string>& out);

// The one walk over an expression: calls `f` on `e` and on every expression inside it,
// each node before its operands (a Load before its indices), operands left to right.
template <typename F>
void for_each_expr(const Expr& e, const F& f) {
  f(e);
  for (const auto& a : e->args) for_each_expr(a, f);
}
// Calls `f` on every Load in `e` (of any buffer), in the order for_each_expr meets them.
template <typename F>
void for_each_load(const Expr& e, const F& f) {
  for_each_expr(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Load) f(x);
  });
}

enum class StmtKind { For, Block, Store, Allocate, If, Call };
enum class ForKind { Serial, Parallel, Vectorized, Unrolled };
const char* for_kind_name(ForKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  std::string name;  // For: loop var; Store / Allocate: buffer
  Expr min, extent;  // For
  ForKind for_kind = ForKind::Serial;
  bool reduction = false;            // For: iterations accumulate into the same elements
  Expr index, value;                 // Store
  ir::DType dtype = ir::DType::F32;  // Allocate
  Expr size;                         // Allocate: element count
  bool register_tile = false;        // Allocate: an `accumulate` tile (src/emit/vector_tile.h)
  Expr cond;                         // If: a Bool condition
  std::vector<Stmt> body;            // For / Allocate: one stmt; Block: many; If: {then, else}
  std::vector<Expr> args;            // Call: a Load is the address of its element, others values
};

Stmt make_for(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body,
              bool reduction = false);
Stmt make_block(std::vector<Stmt> stmts);
Stmt make_store(const std::string& buffer, Expr index, Expr value);
Stmt make_allocate(const std::string& buffer, ir::DType dtype, Expr size, Stmt body);
// Runs `then_body` when `cond` holds, else `else_body` (loop versioning: a fast path with
// constant trip counts beside the general one).
Stmt make_if(Expr cond, Stmt then_body, Stmt else_body);
// A call of the micro-kernel `fn` (the kernel's prelude defines it, e.g. ollie_bf16_dot:
// src/emit/bf16_dot.h) that computes a whole stage: `args` are the addresses of buffer
// elements (Loads: `&buffer[index]`) and i64 values (sizes and strides).
Stmt make_call_stmt(const std::string& fn, std::vector<Expr> args);

enum class BufferRole { Input, Output, Local };

struct Buffer {
  std::string name;  // C++ name in the kernel (inputs sanitized like the ABI)
  BufferRole role;
  ir::DType dtype;
  ir::Shape shape;
};

// A lowered kernel: its ABI buffers (inputs in signature order, then outputs), the dims
// (ABI order) with the C++ name each is bound to, and the body.
struct Kernel {
  std::string entry;
  std::vector<Buffer> buffers;  // inputs, outputs; locals are Allocate'd inside body
  std::vector<std::string> dims;
  std::vector<std::string> dim_names;  // C++ local name of each dim
  Stmt body;
};

// ---- Schedules ----
//
// Lowering first builds one *stage* per materialized op: a perfect loop nest over the
// op's own loop variables (named after the dims they walk) around one store. A stage is
// named after the buffer it writes: `t<N>` for the intermediate of tensor-IR node N,
// `out<i>` for result i; the parts of a concatenation are `<buffer>.<part>`. Reductions
// (Reduce, Contract) are one stage whose reduction loops start innermost; its
// initialisation is placed by lowering (just before the reduction loops when they are
// innermost, else as its own nest in front of the stage).
//
// A schedule is a list of directives applied in order; each either transforms the stages'
// loops or is rejected (ScheduleError) with the loop and the dependence that forbid it.
// The text form is one directive per line, `#` starts a comment:
//
//   split STAGE LOOP FACTOR     LOOP -> LOOP_o (outer), LOOP_i (inner, extent FACTOR;
//                               a tail is guarded by min() when FACTOR may not divide)
//   reorder STAGE LOOP...       the named loops take the positions they occupy, in this order
//   parallel STAGE LOOP         OpenMP parallel for (not on a reduction loop)
//   vectorize STAGE LOOP        omp simd (innermost, no reduction carried, nothing inside it)
//   unroll STAGE LOOP           an unroll hint
//   compute_at STAGE HOST LOOP  compute STAGE inside HOST's loop LOOP: the loops of HOST down
//                               to LOOP are shared; legal when every reader of STAGE's buffer
//                               reads, at one iteration of the shared loops, only elements
//                               STAGE writes at that same iteration (or runs after HOST)
//   inline STAGE                recompute an elementwise stage inside its readers' loads
//   pack STAGE BUFFER LOOP      copy the tile of BUFFER that STAGE reads inside LOOP into a
//                               contiguous local buffer at the start of LOOP's body
//   rfactor STAGE LOOP          factor the reduction over LOOP: a new stage STAGE_rf keeps one
//                               partial result per LOOP value (LOOP becomes a pure loop there,
//                               so it can be vectorized); STAGE then reduces over them
//   accumulate STAGE LOOP       keep the outputs a reduction STAGE writes inside LOOP's body in
//                               a local array of accumulators (registers, when small):
//                               initialised at the start of the body, updated by the
//                               reduction loops, stored once at its end. Every reduction loop
//                               must be inside LOOP and the pure loops inside it must have
//                               constant extents (split factors; at most 4 KiB of them); a
//                               tile cut by a split tail runs a general copy of the loops,
//                               full tiles a copy with constant trip counts
//   bf16_dot STAGE              compute the contraction STAGE (float32 sums of products of two
//                               bfloat16 loads) with the bf16 dot-product micro-kernel
//                               (AVX512_BF16's vdpbf16ps where the machine has it and a tile's
//                               inputs are in range; float32 FMAs otherwise): the stage's
//                               whole nest, so no other directive may name it
enum class DirectiveKind {
  Split,
  Reorder,
  Parallel,
  Vectorize,
  Unroll,
  ComputeAt,
  Inline,
  Pack,
  Rfactor,
  Accumulate,
  Bf16Dot
};
const char* directive_name(DirectiveKind kind);

struct Directive {
  DirectiveKind kind;
  std::string stage;
  std::vector<std::string>
      args;            // loops (Split: {loop}; Reorder: the order), or {HOST, LOOP}, {BUFFER, LOOP}
  int64_t factor = 0;  // Split
  int line = 0;        // 1-based line in the parsed text; 0 when built in code
};

struct Schedule {
  std::vector<Directive> directives;
};

// One directive / a whole schedule as text (parse_schedule(to_text(s)) == s).
std::string to_text(const Directive& d);
std::string to_text(const Schedule& s);
// Parses the text form; a malformed line is a SpecError at `file`:line:column.
Schedule parse_schedule(const std::string& text, const std::string& file = "<schedule>");

// A directive that cannot be applied. `reason` is the short form (one line, for the
// search loop: "vectorize t5 k: loop k carries the reduction into t5"), `detail` the long
// form for a person (the dependence, and what would make it legal); what() is both,
// prefixed with the directive's line when it came from text.
class ScheduleError : public UserError {
 public:
  ScheduleError(const Directive& directive, const std::string& reason, const std::string& detail);
  const Directive& directive() const { return directive_; }
  const std::string& reason() const { return reason_; }
  const std::string& detail() const { return detail_; }

 private:
  Directive directive_;
  std::string reason_, detail_;
};

// What the machine offers the schedule: the SIMD width in bytes (64 with AVX-512), the
// number of cores worth splitting parallel work over, and the private cache sizes.
struct Target {
  int vector_bytes = 64;
  int cores = 2;
  int64_t l1_bytes = 32 * 1024;    // data cache per core (recipes size their blocks by it)
  int64_t l2_bytes = 1024 * 1024;  // per core
  bool bf16_dot = false;           // AVX512_BF16 (vdpbf16ps): the default schedule's bf16_dot
};
Target host_target();

// The stages of `graph` and their loops before any directive, one line per stage, e.g.
// "t3: for m in [0, M), for n in [0, N) reduce  (Reduce max)": what a schedule names.
std::string describe_stages(const ir::Graph& graph);

// Lowers `graph` to loop nests transformed by `schedule` (throws ScheduleError when a
// directive is illegal; nothing is applied then). Single-use elementwise values are
// inlined into their reader before any directive runs.
Kernel lower(const ir::Graph& graph, const Schedule& schedule = {});
// The same, calling `step` with the loop nest as it stands at each step: first before any
// directive (`directive` null), then after each directive in order. A directive that is
// illegal throws after the steps before it (`ollie emit --show-loops` prints them).
using LowerStep = std::function<void(const Directive* directive, const Kernel& kernel)>;
Kernel lower(const ir::Graph& graph, const Schedule& schedule, const LowerStep& step);

// Causal domains: lowering bounds a reduction loop by a triangular mask where the masked
// terms are one loop-invariant value, guarded so the result is bit-identical to the full
// loop (docs/schedules.md). On by default; tests turn it off to compare (process-wide).
void set_causal_domains(bool on);
bool causal_domains();

// The baseline schedule every search starts from: producers computed at their consumer's
// outer loops (fused chains), contractions ordered so the innermost loop walks the output
// contiguously (or given a register tile, `accumulate`, where no other loop must sit
// inside the reduction and no fused stage is computed inside them), row reductions
// factored over a vector of partial results, innermost pure loops vectorized, and the
// outermost pure loop of each root nest that runs more than once parallel (when none does,
// the outer pure loops of the stages computed inside that nest).
Schedule default_schedule(const ir::Graph& graph, const Target& target = host_target());

// A random schedule: `moves` random directives proposed against the stages, starting from
// the default schedule or from nothing (seeded, deterministic). Legal ones are kept;
// rejected ones are appended to `rejected` (with the legal prefix they were tried after)
// when it is not null.
struct RejectedDirective {
  Schedule prefix;
  Directive directive;
  std::string reason;
};
Schedule random_schedule(const ir::Graph& graph, uint64_t seed, int moves,
                         std::vector<RejectedDirective>* rejected = nullptr,
                         const Target& target = host_target());

// One random step from `base` for the search's mutate proposer: add a legal directive at
// the end, drop one (directives that needed it go too), change a split factor, or move a
// directive elsewhere in the order (directives no longer legal are left out). The result
// is always a legal schedule different from `base`; nullopt when `attempts` draws found
// none. Deterministic in `seed`.
struct Mutation {
  Schedule schedule;
  std::string move;  // what changed, for a person: "add vectorize t1 j", "drop ...", ...
};
std::optional<Mutation> mutate_schedule(const ir::Graph& graph, const Schedule& base, uint64_t seed,
                                        int attempts = 20);

// The C++ names of the entry's parameters in the ABI (spec names, '_' appended to a C++
// keyword or a clash with out<i>/dims), as emit::kernel_declaration spells them.
std::vector<std::string> abi_param_names(const ir::Graph& graph);

// Stable text forms (golden tests pin them).
std::string to_text(const Expr& e);
std::string to_text(const Stmt& s, int indent = 0);
std::string to_text(const Kernel& k);

}  // namespace ollie::loops
