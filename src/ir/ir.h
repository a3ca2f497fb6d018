// The tensor IR: an SSA graph of tensor ops with a dtype and a symbolic shape per
// value. This header is the contract every later stage relies on; it states the
// semantics below and owns DimExpr (symbolic sizes), Graph, the invariant
// checker, the text form, and the cost model (FLOPs, compulsory bytes).
//
// Semantics
// - Values are dense tensors in row-major (C) order. Evaluation order is the order
//   of `Graph::nodes`; every operand precedes its user (SSA, no cycles).
// - Floating point: the *meaning* of a graph is exact real arithmetic on the input
//   values, except at an explicit Convert (numpy `astype`, `dtype=`), which rounds
//   to the target dtype (round to nearest even) exactly as numpy does (and ml_dtypes
//   for bf16, which rounds an f64 or integer through f32 first). Every other
//   op's result dtype says in which precision an implementation may compute it; the
//   reference interpreter (interp/) computes in double and derives per element how
//   far a correct implementation in that precision may be from the exact result.
// - A Const whose dtype is narrower than its literal (a Python float used with an
//   f32 array, numpy's "weak scalar" rule) holds the literal's exact double value;
//   rounding it to the dtype is an implementation error covered by the bound.
// - NaN and Inf follow IEEE 754: max/min propagate NaN (numpy maximum/minimum),
//   comparisons with NaN are false (except !=), exp(-inf) = 0.
// - Integer dtypes (i32, i64) and bool are exact; integer overflow is undefined
//   and ollie rejects no program for it (sizes here are small).
// - "Polynomial": a value is polynomial in the inputs when it is computed from
//   Inputs and Consts using only Add, Sub, Mul, Neg, Contract, Reduce(sum), PowI
//   with a non-negative exponent and layout ops (Broadcast, Reshape, Transpose,
//   Slice, Concat, Gather of such a value by input indices). On small-integer inputs such a value
//   is exact in float32 whatever the summation order. The verifier's integer-exact suite also
//   admits ops that keep integers exact piece by piece (Max, Min, Abs, Select on comparisons),
//   Converts, integer-valued Consts and integer arithmetic; its decision is verify/polynomial.h
//   (polynomial_reason).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/error.h"

namespace ollie::ir {

// ----------------------------------------------------------------------------
// Dtypes

// F16: IEEE binary16 (numpy float16); BF16: bfloat16 (ml_dtypes.bfloat16, the top half
// of an f32). Both are stored as 16-bit patterns (support/half.h converts them).
enum class DType { F32, F64, I32, I64, Bool, F16, BF16 };

const char* dtype_name(DType t);  // "f32", "f64", "i32", "i64", "bool", "f16", "bf16"
std::optional<DType> dtype_from_name(const std::string& name);
int dtype_bytes(DType t);  // 4, 8, 4, 8, 1, 2, 2
bool is_float(DType t);
// Unit roundoff: 2^-24 for f32, 2^-53 for f64, 2^-11 for f16, 2^-8 for bf16, 0 for exact
// dtypes.
double unit_roundoff(DType t);
// The largest finite value of a float dtype (65504 for f16, FLT_MAX for f32, about
// 3.39e38 for bf16); DBL_MAX for the exact dtypes (the reference's own range).
double largest_finite(DType t);
// The smallest positive normal value of a float dtype (2^-14 for f16, 2^-126 for f32 and
// bf16, 2^-1022 for f64); 0 for the exact dtypes.
double smallest_normal(DType t);

// ----------------------------------------------------------------------------
// Symbolic sizes

// Values of the symbolic dims for one run, e.g. {M: 256, K: 512}.
using DimBindings = std::map<std::string, int64_t>;

// An integer-valued expression over dim symbols: a canonical sum of terms
// coeff * a1 * a2 * ..., where each atom is a dim symbol or a floor division
// (expr // c) that could not be simplified. Two DimExprs are equal iff their
// canonical forms are equal, so `M*K == K*M` and `(2*D)//2 == D`.
class DimExpr {
 public:
  DimExpr();  // the constant 0
  static DimExpr constant(int64_t value);
  static DimExpr symbol(const std::string& name);

  DimExpr operator+(const DimExpr& other) const;
  DimExpr operator-(const DimExpr& other) const;
  DimExpr operator*(const DimExpr& other) const;
  // Floor division by a positive constant; exact when every coefficient divides.
  DimExpr floordiv(int64_t divisor) const;
  // Exact division (a / b with no remainder, for every value of the dims), used
  // by reshape(-1). Returns nullopt when it cannot be proven exact symbolically.
  std::optional<DimExpr> exact_div(const DimExpr& divisor) const;
  // The coefficient of `atom` (one atom with coefficient 1, e.g. D or (D//4)) among this
  // expression's terms: 3 in 3*(D//4) + 1, 0 when no term is that atom alone.
  int64_t coefficient_of(const DimExpr& atom) const;

  bool operator==(const DimExpr& other) const;
  bool operator!=(const DimExpr& other) const { return !(*this == other); }
  bool operator<(const DimExpr& other) const;  // an arbitrary total order

  std::optional<int64_t> as_constant() const;
  bool is_constant() const { return as_constant().has_value(); }
  // The dim symbols this expression mentions, sorted.
  std::vector<std::string> symbols() const;
  // Value under `dims`; throws UserError naming the symbol when one is unbound.
  int64_t evaluate(const DimBindings& dims) const;
  // Canonical text, e.g. "B*H*S", "2*D + 1", "(HD//2)".
  std::string str() const;

 private:
  struct FloorDivAtom;
  // Key: the sorted atom names of a term; value: its coefficient (never 0).
  std::map<std::vector<std::string>, int64_t> terms_;
  // Definitions of the floordiv atoms used in terms_, by name.
  std::map<std::string, std::shared_ptr<const FloorDivAtom>> floordivs_;
};

using Shape = std::vector<DimExpr>;
std::string shape_str(const Shape& shape);  // "[M, K]", "[]" for a scalar
std::vector<int64_t> evaluate_shape(const Shape& shape, const DimBindings& dims);
int64_t element_count(const std::vector<int64_t>& shape);

// ----------------------------------------------------------------------------
// Ops

enum class OpKind {
  // Leaves.
  Input,  // the entry's parameter `input_index`
  Const,  // a scalar (shape []) literal or dim-valued constant
  Iota,   // index along `axis` of a tensor of `shape`: out[i...] = i[axis]
  // Elementwise, one operand.
  Neg,
  Abs,
  Exp,
  Exp2,
  Log,
  Sqrt,
  Tanh,
  Erf,
  Sin,
  Cos,    // Exp2: 2^x
  Floor,  // numpy's floor, ceil, trunc and rint (round half to even), floats only: exact
  Ceil,
  Trunc,
  Rint,
  PowI,     // x ** exponent, integer exponent (may be negative)
  Not,      // logical not of a bool
  Convert,  // to the node's dtype; rounds (float) or truncates toward zero (int)
  // Elementwise, two operands of the same shape.
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
  FloorDiv,
  Mod,  // numpy // and % (floor semantics), any numeric dtype
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,  // result bool
  And,
  Or,  // bool operands, result bool
  // Elementwise, three operands of the same shape: cond ? a : b.
  Select,
  // Layout.
  Broadcast,  // operand of the same rank; every operand dim equals the result dim or is 1
  Reshape,    // same element count, row-major order kept
  Transpose,  // result dim i = operand dim perm[i]
  Slice,      // per axis: start, stop (DimExprs, 0 <= start <= stop <= dim), step >= 1
  Concat,     // along `axis`; all other dims equal
  // numpy's take(table, indices, axis) (table[indices] for axis 0): operands {table,
  // indices}, indices i32 or i64 of any shape; the result is table's shape with dim `axis`
  // replaced by the indices' shape: out[a..., j..., b...] = table[a..., w(indices[j...]),
  // b...] where w(i) = i + V for i < 0 (V = table's dim `axis`), numpy's wrap. An index
  // outside [-V, V) is outside the graph's domain (numpy raises IndexError): the reference
  // refuses it and the verifier never draws one (docs/verifier.md, "Index inputs").
  // With `along` (numpy take_along_axis): indices of the table's rank and the result's
  // shape, equal to the table's off the axis: out[a..., j, b...] = table[a...,
  // w(indices[a..., j, b...]), b...].
  Gather,
  // Reductions and contractions.
  Reduce,    // kind over `axes` (sorted, unique); those axes are removed
  Contract,  // out[out_labels] = sum over labels not in out of lhs[lhs_labels] * rhs[rhs_labels]
  // The exp-weighted contraction of a softmax, computable in one pass (an online softmax):
  // out[out_labels] = sum over the summed labels of exp(lhs - M) * rhs, where M is the
  // max of lhs over the summed labels (at each output index), replaced by 0 when it is
  // -inf (so lhs = -inf terms add 0 and an all -inf row gives 0, as flash's blocks do).
  // Every summed label must index lhs. One operand: rhs is 1 (the softmax's sum). With
  // `base2`, exp2(lhs - M). NaN in lhs gives NaN, as does +inf (exp(inf - inf)).
  ExpContract,
};

const char* op_name(OpKind kind);
bool is_elementwise_unary(OpKind kind);
bool is_elementwise_binary(OpKind kind);
bool is_comparison(OpKind kind);  // Lt..Ne

enum class ReduceKind { Sum, Max, Min };
const char* reduce_name(ReduceKind kind);

struct SliceAxis {
  DimExpr start;
  DimExpr stop;
  int64_t step = 1;
  // Number of elements: ceil((stop - start) / step).
  DimExpr length() const;
};

using ValueId = int32_t;

// One SSA value. Only the attribute fields of its kind are meaningful.
struct Node {
  OpKind kind = OpKind::Const;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<ValueId> operands;

  // Input
  int input_index = -1;
  std::string name;  // Input: parameter name; otherwise optional spec variable name
  // Const: literal value, or (if const_dim is set) the value of a dim expression.
  double const_value = 0.0;
  std::optional<DimExpr> const_dim;
  // Convert: numpy's implicit conversion of a Python scalar (weak, NEP 50) to an array's
  // float dtype. The reference keeps the scalar's exact value; an implementation rounds
  // it, and the bound covers that. An explicit astype/dtype= Convert is never weak.
  bool weak = false;
  // Iota axis, Concat axis, Gather axis.
  int axis = 0;
  // PowI exponent.
  int64_t exponent = 0;
  // Transpose permutation; Reduce axes.
  std::vector<int> axes;
  ReduceKind reduce = ReduceKind::Sum;
  std::vector<SliceAxis> slices;
  // Contract labels: one small integer per dim of lhs, rhs and result.
  std::vector<int> lhs_labels, rhs_labels, out_labels;
  // ExpContract: exp2 instead of exp.
  bool base2 = false;
  // Gather: take_along_axis (indices of the table's rank) rather than take.
  bool along = false;

  SourceLoc loc;  // where in the spec this value was made
};

struct Param {
  std::string name;
  DType dtype;
  Shape shape;
};

// A whole kernel: the entry's parameters, its results, and the graph between them.
struct Graph {
  std::string entry;              // entry function name
  std::vector<Param> params;      // inputs, signature order
  std::vector<Param> results;     // outputs, return order (names "out0", "out1", ...)
  std::vector<std::string> dims;  // symbolic dims in first-appearance order (the ABI's dims array)
  DimBindings bound_dims;         // the sizes bound for this run (DIMS + --dims)
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // the Input node of each param
  std::vector<ValueId> outputs;  // the value of each result

  const Node& node(ValueId id) const { return nodes.at(static_cast<size_t>(id)); }
};

// ----------------------------------------------------------------------------
// Building: each add_* checks the op's invariants (throwing InternalError, since a
// front end must report user mistakes before building) and returns the new value.

class Builder {
 public:
  explicit Builder(Graph& graph) : graph_(graph) {}

  ValueId input(int index, const std::string& name, DType dtype, const Shape& shape,
                SourceLoc loc = {});
  ValueId constant(double value, DType dtype, SourceLoc loc = {});
  ValueId dim_constant(const DimExpr& value, DType dtype, SourceLoc loc = {});
  ValueId iota(const Shape& shape, int axis, DType dtype, SourceLoc loc = {});
  ValueId unary(OpKind kind, ValueId x, SourceLoc loc = {});
  ValueId powi(ValueId x, int64_t exponent, SourceLoc loc = {});
  ValueId convert(ValueId x, DType to, SourceLoc loc = {}, bool weak = false);
  // Operands must already have equal shapes and dtypes (the front end inserts
  // Broadcast and Convert); comparisons and And/Or return bool.
  ValueId binary(OpKind kind, ValueId a, ValueId b, SourceLoc loc = {});
  ValueId select(ValueId cond, ValueId a, ValueId b, SourceLoc loc = {});
  ValueId broadcast(ValueId x, const Shape& shape, SourceLoc loc = {});
  ValueId reshape(ValueId x, const Shape& shape, SourceLoc loc = {});
  ValueId transpose(ValueId x, const std::vector<int>& perm, SourceLoc loc = {});
  ValueId slice(ValueId x, const std::vector<SliceAxis>& slices, SourceLoc loc = {});
  ValueId concat(const std::vector<ValueId>& xs, int axis, SourceLoc loc = {});
  ValueId gather(ValueId table, ValueId indices, int axis, SourceLoc loc = {});
  // take_along_axis: `indices` of the table's rank, equal to it off the axis.
  ValueId gather_along(ValueId table, ValueId indices, int axis, SourceLoc loc = {});
  ValueId reduce(ReduceKind kind, ValueId x, std::vector<int> axes, SourceLoc loc = {});
  ValueId contract(ValueId lhs, ValueId rhs, const std::vector<int>& lhs_labels,
                   const std::vector<int>& rhs_labels, const std::vector<int>& out_labels,
                   SourceLoc loc = {});
  // rhs = -1 (and no rhs_labels): the sum of exp(lhs - M) alone.
  ValueId exp_contract(ValueId lhs, ValueId rhs, const std::vector<int>& lhs_labels,
                       const std::vector<int>& rhs_labels, const std::vector<int>& out_labels,
                       bool base2, SourceLoc loc = {});

  const Node& node(ValueId id) const { return graph_.node(id); }

 private:
  ValueId push(Node node);
  Graph& graph_;
};

// ----------------------------------------------------------------------------
// Whole-graph services

// Checks every invariant (SSA order, operand counts, shapes, dtypes, attributes,
// params/results consistent with their nodes, every dim symbol bound). Returns the
// list of violations, empty when the graph is well formed.
std::vector<std::string> check_invariants(const Graph& graph);
// Throws InternalError listing the violations, if any.
void verify(const Graph& graph);

// The stable text form: one line per value, e.g.
//   %3: f32[M, N] = contract %0[0,1], %1[1,2] -> [0,2]
// Golden tests pin it; change it only on purpose.
std::string to_text(const Graph& graph);

// Per parameter, the sizes of the axes it indexes as a gather's index array (through
// layout ops and converts), one per gather that reads it; empty for other parameters. Its
// domain is [-V, V) for the smallest V (numpy raises IndexError outside).
std::vector<std::vector<DimExpr>> gather_index_axes(const Graph& graph);

// Cost of the whole kernel at the bound dims.
struct Cost {
  int64_t flops = 0;             // see cost.cpp for what counts as one
  int64_t compulsory_bytes = 0;  // every input read once (what of it a kernel must read: cost.cpp),
                                 // every output written once
  // The part of `flops` in contractions of two bfloat16 values (bf16 operands, or bf16
  // widened to f32 by a convert): what AVX512_BF16's vdpbf16ps and AMX's tdpbf16ps compute.
  int64_t bf16_product_flops = 0;
};
Cost cost(const Graph& graph);

}  // namespace ollie::ir
