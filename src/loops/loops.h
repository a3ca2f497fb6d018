// The loop-nest IR (stage 3a): an imperative, Halide-style IR of loops, buffers, loads
// and stores that the tensor IR lowers to and that schedules (later) transform.
//
// Semantics
// - Nodes are immutable and shared; build them only with the make_* functions, which
//   check invariants (operand dtypes, index dtypes) and throw InternalError otherwise.
// - Every Expr has a dtype. Index arithmetic is i64. Buffers are flat, row-major arrays;
//   a Load/Store names a buffer and a flat element index.
// - Binary Max/Min propagate NaN (numpy maximum/minimum); FloorDiv/Mod have numpy floor
//   semantics; Cast rounds (float) or truncates toward zero (float -> int).
// - A For runs `var` over [min, min + extent) in order; Parallel/Vectorized/Unrolled are
//   promises that iterations are independent (or just a hint, for Unrolled).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::loops {

enum class ExprKind { IntImm, FloatImm, Var, Dim, Load, Unary, Binary, Select, Cast, Call };

// Unary ops: Neg, Abs, Not, PowI (exponent in int_value). Binary ops: Add..Min, FloorDiv,
// Mod, comparisons, And, Or (ir::OpKind names them). Calls: exp log sqrt tanh erf sin cos pow.
struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind kind;
  ir::DType dtype;
  int64_t int_value = 0;        // IntImm; PowI exponent
  double float_value = 0;       // FloatImm
  std::string name;             // Var / Load buffer / Call function
  ir::DimExpr dim;              // Dim: a symbolic size over the kernel's dims
  ir::OpKind op = ir::OpKind::Add;  // Unary / Binary
  std::vector<Expr> args;       // operands; Load: {index}; Select: {cond, a, b}
};

Expr make_int(int64_t value, ir::DType dtype = ir::DType::I64);
Expr make_float(double value, ir::DType dtype);
Expr make_var(const std::string& name);               // a loop index, i64
Expr make_dim(const ir::DimExpr& dim);                 // folds to IntImm when constant
Expr make_load(const std::string& buffer, ir::DType dtype, Expr index);
Expr make_unary(ir::OpKind op, Expr a);
Expr make_powi(Expr a, int64_t exponent);
Expr make_binary(ir::OpKind op, Expr a, Expr b);      // folds i64 +0, *1, *0 and constants
Expr make_select(Expr cond, Expr a, Expr b);
Expr make_cast(ir::DType to, Expr a);                  // returns `a` if already `to`
Expr make_call(const std::string& fn, std::vector<Expr> args);  // dtype of args[0]

enum class StmtKind { For, Block, Store, Allocate };
enum class ForKind { Serial, Parallel, Vectorized, Unrolled };
const char* for_kind_name(ForKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind;
  std::string name;             // For: loop var; Store / Allocate: buffer
  Expr min, extent;             // For
  ForKind for_kind = ForKind::Serial;
  bool reduction = false;       // For: iterations accumulate into the same elements
  Expr index, value;            // Store
  ir::DType dtype = ir::DType::F32;  // Allocate
  Expr size;                    // Allocate: element count
  std::vector<Stmt> body;       // For / Allocate: one stmt; Block: many
};

Stmt make_for(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body,
              bool reduction = false);
Stmt make_block(std::vector<Stmt> stmts);
Stmt make_store(const std::string& buffer, Expr index, Expr value);
Stmt make_allocate(const std::string& buffer, ir::DType dtype, Expr size, Stmt body);

enum class BufferRole { Input, Output, Local };

struct Buffer {
  std::string name;             // C++ name in the kernel (inputs sanitized like the ABI)
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

struct LowerOptions {
  // Fold single-use elementwise values into their consumer's nest (compute_inline)
  // instead of giving each its own buffer and nest.
  bool inline_elementwise = true;
};

// Lowers every op of `graph` to loop nests: one per materialized op (Reduce and Contract
// get an init nest and an accumulate nest whose reduction loops are innermost); layout
// ops, Convert, Const and Iota are folded into the index arithmetic and loads of their
// users, and so are single-use elementwise values when options.inline_elementwise.
Kernel lower(const ir::Graph& graph, const LowerOptions& options = {});
// The C++ names of the entry's parameters in the ABI (spec names, '_' appended to a C++
// keyword or a clash with out<i>/dims), as emit::kernel_declaration spells them.
std::vector<std::string> abi_param_names(const ir::Graph& graph);

// Stable text forms (golden tests pin them).
std::string to_text(const Expr& e);
std::string to_text(const Stmt& s, int indent = 0);
std::string to_text(const Kernel& k);

}  // namespace ollie::loops
