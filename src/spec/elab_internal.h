// Internal to the elaborator (elaborate.cpp, elab_*.cpp): the abstract values a spec
// computes with and the Elab state shared by statements, operators and numpy calls.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "spec/ast.h"
#include "spec/spec.h"

namespace ollie::spec::elab {

using ir::DimExpr;
using ir::DType;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

enum class Kind {
  None,
  Bool,
  Int,
  Float,
  Str,
  Tensor,
  Tuple,
  List,
  Dict,
  Slice,
  Ellipsis,
  DType,
  Module,
  Func,
  Builtin,
  Class,  // a model class: its methods and constants in keys/items (elab_classes.cpp)
  Object  // an instance: its attributes in keys/items, its class in cls
};

struct Value;
using ValuePtr = std::shared_ptr<const Value>;

// One abstract value. Python ints are DimExprs (symbolic when they come from a dim);
// a Tensor with `weak` set is a Python scalar whose value is only known symbolically
// (e.g. math.sqrt(x.shape[-1])), promoted like a Python float/int per NEP 50.
struct Value {
  Kind kind = Kind::None;
  bool b = false;
  DimExpr i;
  double f = 0.0;
  std::string s;        // Str text; Module / Builtin / Func name
  ValueId t = -1;       // Tensor
  bool weak = false;    // Tensor: a Python scalar of unknown value
  bool copied = false;  // Tensor: made by .copy(), so no view of the array it came from
  std::vector<ValuePtr>
      items;  // Tuple, List, Dict values, Slice (lower, upper, step; null if absent)
  std::vector<std::string> keys;          // Dict keys
  DType dtype = DType::F64;               // DType
  std::shared_ptr<const FunctionDef> fn;  // Func
  std::vector<ValuePtr> defaults;         // Func: one per param (null when none)
  ValuePtr self;  // Builtin bound to a tensor (a method); Func bound to an Object (a method)
  ValuePtr cls;   // Object: its Class
  // Func made by a lambda: the scope it was written in, read when it is called (Python's late
  // binding) while that scope is alive (frame `closure_frame`), else the snapshot `closure`.
  std::shared_ptr<const std::map<std::string, ValuePtr>> closure;
  const std::map<std::string, ValuePtr>* closure_scope = nullptr;
  int64_t closure_frame = -1;
};

ValuePtr make_none();
ValuePtr make_bool(bool v);
ValuePtr make_int(const DimExpr& v);
ValuePtr make_int(int64_t v);
ValuePtr make_float(double v);
ValuePtr make_str(const std::string& s);
ValuePtr make_tensor(ValueId id, bool weak = false);
ValuePtr make_seq(Kind kind, std::vector<ValuePtr> items);
ValuePtr make_dtype(DType t);
ValuePtr make_named(Kind kind, const std::string& name, ValuePtr self = nullptr);
std::string kind_name(const Value& v);
// For a float64 `result` that should have been float32: where float64 entered the
// computation (elab_promotion.cpp), for the error's hint; "" when nothing is found.
std::string float64_origin(const ir::Graph& g, ir::ValueId result);

// Arguments of a call after positional/keyword binding against a signature.
struct CallArgs {
  std::vector<ValuePtr> pos;
  std::vector<std::pair<std::string, ValuePtr>> kw;
  std::vector<SourceLoc> pos_loc;
  std::vector<SourceLoc> kw_loc;
};

class Elab;
// Binds a call's arguments to a numpy-style signature; an absent argument is null.
std::vector<ValuePtr> bind_args(Elab& el, const CallArgs& a, const std::string& fname,
                                const std::vector<std::string>& names, size_t required,
                                SourceLoc loc);

inline bool is_none(const ValuePtr& v) { return !v || v->kind == Kind::None; }

// One call of a Python builtin, a math or numpy function or an array method, with the
// argument helpers the handlers share. A method call is the function form with the array first.
struct BuiltinCall {
  BuiltinCall(Elab& elab, const Value& callee, const CallArgs& call_args, SourceLoc at);
  Elab& el;
  const Value& fn;
  const CallArgs& args;
  SourceLoc loc;
  std::string name;   // fn.s: "len", "math.sqrt", "np.exp", "method.reshape", "dtype_call"
  bool method;        // an array method; fn.self is the array
  std::string base;   // name without its "np." / "method." prefix
  std::string shown;  // the name in messages: "np.exp", ".reshape"
  CallArgs full;      // args, with the array first for a method

  // Binds args (sig) or full (fsig) against a signature; an absent argument is null.
  std::vector<ValuePtr> sig(const std::vector<std::string>& names, size_t required) const;
  std::vector<ValuePtr> fsig(const std::vector<std::string>& names, size_t required) const;
  // An array argument; a Python scalar becomes a 0-d array, a list or tuple literal the
  // array numpy makes of it (Elab::array_literal).
  ValuePtr tensor_arg(const ValuePtr& v, const std::string& what) const;
  // The same as a value id.
  ValueId array_arg(const ValuePtr& v, const std::string& what) const;
  // A size or a tuple/list of sizes, each checked to be an int.
  std::vector<ValuePtr> int_seq(const ValuePtr& v, const std::string& what) const;
  // An optional boolean argument (absent or None is false).
  bool flag(const ValuePtr& v) const;
};

using Scope = std::map<std::string, ValuePtr>;

// An entry parameter held constant: a default and no array annotation (`n_head: int = 12`).
inline bool held_constant(const Param& p) {
  return p.default_value && (!p.annotation || p.annotation->kind != ExprKind::String);
}

// The entry's parameter and result types, from its annotations (elab_dims.cpp).
struct EntryTypes {
  std::vector<std::pair<DType, Shape>> params, results;
};

class Elab {
 public:
  Elab(const Module& module, const SpecOptions& options);
  ir::Graph run();

  // ---- diagnostics
  [[noreturn]] void fail(SourceLoc loc, const std::string& message,
                         const std::string& hint = "") const;

  // ---- graph access
  const ir::Node& node(ValueId id) const { return graph_.node(id); }
  DType dtype_of(const Value& v) const { return node(v.t).dtype; }
  const Shape& shape_of(const Value& v) const { return node(v.t).shape; }
  std::string type_str(ValueId id) const;
  // Checks a freshly built value's shape at the bound dims (no negative, not too large).
  ValueId checked(ValueId id, SourceLoc loc);
  void check_shape(const Shape& shape, SourceLoc loc);
  int64_t eval_dim(const DimExpr& d, SourceLoc loc) const;
  ir::Builder& b() { return builder_; }

  // ---- annotations, DIMS and RELATIONS (elab_dims.cpp): binds graph_.dims and bound_dims
  EntryTypes bind_entry_dims(const FunctionDef& entry);
  // The dims that RELATIONS derive, each as its expression over the free dims.
  std::map<std::string, DimExpr> derived_dims_;
  // Divisibility the spec implies: np.split(x, n) of an axis of size d raises in numpy
  // unless n divides d, so (d, n) holds at every dims the spec runs at, and n*(d//n) is d.
  std::vector<std::pair<DimExpr, int64_t>> divisible_;
  void learn_divisible(const DimExpr& d, int64_t n);
  DimExpr with_divisibility(const DimExpr& e) const;

  // ---- expressions and statements (elaborate.cpp)
  ValuePtr eval(const ExprPtr& e);
  ValuePtr call_value(const ValuePtr& fn, const CallArgs& args, SourceLoc loc,
                      const std::string& shown);

  // ---- operators (elab_ops.cpp)
  ValuePtr binary(const std::string& op, const ValuePtr& a, const ValuePtr& b, SourceLoc loc);
  ValuePtr unary(const std::string& op, const ValuePtr& a, SourceLoc loc);
  ValuePtr compare(const std::string& op, const ValuePtr& a, const ValuePtr& b, SourceLoc loc);
  ValuePtr matmul(const ValuePtr& a, const ValuePtr& b, SourceLoc loc);
  ValuePtr einsum(const std::string& spec, const std::vector<ValuePtr>& ops, SourceLoc loc);
  void expand_ellipsis(const std::string& spec, const std::vector<ValueId>& ids,
                       std::vector<std::string>& ins, std::string& out, SourceLoc loc);
  ValuePtr subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx, SourceLoc loc);
  ValuePtr reversed_subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx,
                              SourceLoc loc);
  ValuePtr list_subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx, size_t at,
                          SourceLoc loc);
  // Makes a (strong or weak) tensor out of a scalar or tensor value.
  ValueId as_tensor(const ValuePtr& v, SourceLoc loc, std::optional<DType> dtype = std::nullopt);
  // A list or tuple literal as numpy's np.array makes it (elab_join.cpp).
  ValueId array_literal(const ValuePtr& list, SourceLoc loc);
  // NEP 50 result dtype of several operands (tensors strong or weak, Python scalars weak).
  DType result_dtype(const std::vector<ValuePtr>& vs, SourceLoc loc);
  // Converts and broadcasts the operands to a common dtype and shape.
  std::vector<ValueId> unify(const std::vector<ValuePtr>& vs, SourceLoc loc,
                             std::optional<DType> dtype = std::nullopt);
  // Two sizes that differ symbolically only through floor division but agree at the bound dims.
  bool same_at_bounds(const DimExpr& a, const DimExpr& b) const;
  std::string mismatch_hint(const DimExpr& a, const DimExpr& b) const;
  Shape broadcast_shapes(const std::vector<ValueId>& ids, SourceLoc loc);
  ValueId to_shape(ValueId id, const Shape& shape, SourceLoc loc);
  ValueId convert(ValueId id, DType t, SourceLoc loc);
  ValueId apply_unary(OpKind k, const ValuePtr& x, SourceLoc loc);
  ValuePtr reduce(const std::string& what, const ValuePtr& x, const ValuePtr& axis, bool keepdims,
                  int64_t ddof, std::optional<DType> dtype, SourceLoc loc);
  std::vector<int> axes_arg(const ValuePtr& axis, int rank, SourceLoc loc, bool allow_none = true);
  int norm_axis(int64_t axis, int rank, SourceLoc loc);
  ValueId reshape_to(ValueId x, const std::vector<ValuePtr>& dims, SourceLoc loc);

  // ---- numpy functions and methods (elab_numpy.cpp)
  ValuePtr attribute(const ValuePtr& base, const std::string& name, SourceLoc loc,
                     const std::string& shown);
  // Dispatches on fn.s through a table of the handlers below; a name it lacks is not
  // supported in a spec.
  ValuePtr call_builtin(const Value& fn, const CallArgs& args, SourceLoc loc);
  using BuiltinHandler = ValuePtr (Elab::*)(const BuiltinCall& c);
  using BuiltinTable = std::map<std::string, BuiltinHandler>;
  // Every call handler by name ("np.exp", "method.reshape", "len"): what a spec may call.
  static const BuiltinTable& builtin_table();

  // ---- scalar helpers
  bool is_scalar(const Value& v) const {
    return v.kind == Kind::Bool || v.kind == Kind::Int || v.kind == Kind::Float ||
           (v.kind == Kind::Tensor && v.weak);
  }
  DimExpr to_dim(const ValuePtr& v, SourceLoc loc, const std::string& what);
  int64_t to_const_int(const ValuePtr& v, SourceLoc loc, const std::string& what);
  std::optional<DType> to_dtype(const ValuePtr& v, SourceLoc loc);
  bool truthy(const ValuePtr& v, SourceLoc loc);

  // ---- model classes, inlined like helpers (elab_classes.cpp)
  void define_class(const ClassDef& c);
  ValuePtr construct(const ValuePtr& cls, const CallArgs& args, SourceLoc loc);
  ValuePtr call_object(const ValuePtr& obj, const CallArgs& args, SourceLoc loc);
  ValuePtr call_bound(const Value& method, const CallArgs& args, SourceLoc loc);
  ValuePtr member(const ValuePtr& base, const std::string& name, SourceLoc loc);
  void assign_attribute(const Expr& target, const ValuePtr& v);
  // Each method C.m but __init__ as an entry of its own: the constructor's parameters
  // without defaults, then the method's, and a body `return C(...).m(...)`.
  void add_class_entries(std::vector<const FunctionDef*>& funcs,
                         std::vector<const FunctionDef*>& candidates);
  // Located errors for a class entry whose constructor cannot be a kernel's inputs.
  void check_class_entry(const FunctionDef& entry) const;
  std::vector<Value*> constructing_;  // objects whose __init__ is running
  struct ClassEntry {
    std::shared_ptr<FunctionDef> entry;
    const ClassDef* cls;
    const FunctionDef* init;  // null when the class has no __init__
    const FunctionDef* method;
  };
  std::vector<ClassEntry> class_entries_;

  const Module& module_;
  const SpecOptions& options_;
  ir::Graph graph_;
  ir::Builder builder_;
  Scope globals_;
  Scope* locals_ = nullptr;  // null at module level
  // The live local scopes (entry, helpers, comprehensions), innermost last, each with a serial.
  struct Frame {
    Scope* scope;
    int64_t serial;
    std::shared_ptr<Scope> owned;  // a comprehension's scope, kept alive by its lambdas
  };
  std::vector<Frame> frames_;
  int64_t next_frame_ = 0;
  void enter_frame(Scope* scope, std::shared_ptr<Scope> owned = nullptr);
  void leave_frame(Scope* saved);
  const Scope* live_scope(const Value& lambda) const;
  // After a write into `old`, every name bound to that same array sees the new one (numpy's
  // in-place write is visible through every alias).
  void rebind_aliases(const Value* old, const ValuePtr& updated);
  // Rejects a write into `base` while a name holds a view of it (a slice, reshape or
  // transpose taken before): numpy would show the write through the view, ollie would not.
  void check_no_views(const Value& base, const std::string& name, SourceLoc loc) const;
  std::vector<const FunctionDef*> call_stack_;
  std::vector<SourceLoc> call_sites_;  // where each call_stack_ entry after the first was called
  int depth_ = 0;
  bool in_entry_ = false;  // tensors may only be built inside the entry
  SourceLoc last_loc_;
  SourceLoc return_loc_;  // the value of the last `return` executed
  int64_t unrolled_ = 0;  // loop and comprehension iterations so far, bounded in all
  void count_iteration(SourceLoc loc);

 private:
  void run_module();
  void exec_body(const std::vector<StmtPtr>& body, ValuePtr* ret);
  void exec(const Stmt& s, ValuePtr* ret, bool* returned);
  void assign(const ExprPtr& target, const ValuePtr& v);
  // The call chain of the helper an error is in: " (in linear, called from mha at f.py:4:9)".
  std::string call_context() const;

  // ---- Python-level structure evaluated here (elab_statements.cpp)
  void exec_block(const std::vector<StmtPtr>& body, ValuePtr* ret, bool* returned);
  void exec_for(const Stmt& s, ValuePtr* ret, bool* returned);
  void exec_if(const Stmt& s, ValuePtr* ret, bool* returned);
  // The items of a static sequence a loop or comprehension walks (tuple, list, dict keys).
  std::vector<ValuePtr> static_items(const ValuePtr& v, SourceLoc loc, const std::string& what);
  // `name[index] = v`: a functional update that rebinds the name.
  void assign_item(const Expr& target, const ValuePtr& v);
  void check_fits(ValueId value, const Shape& region, SourceLoc loc);
  void assign_masked(const Expr& target, const ValuePtr& base, const ValuePtr& mask,
                     const ValuePtr& v);
  ValueId update_region(ValueId base, const std::vector<std::pair<DimExpr, DimExpr>>& region,
                        size_t axis, ValueId value, SourceLoc loc);
  // Static lists and lambdas (elab_lists.cpp)
  ValuePtr eval_list_comp(const Expr& e);
  void comprehend(const Expr& e, size_t clause, std::vector<ValuePtr>& out);
  ValuePtr make_lambda(const Expr& e);
  ValuePtr eval_fstring(const Expr& e);
  void add_kwargs(const ValuePtr& dict, SourceLoc loc, CallArgs& args);
  ValuePtr call_function(const Value& fn, const CallArgs& args, SourceLoc loc);
  ValuePtr eval_inner(const Expr& e);
  ValuePtr lookup(const std::string& name, SourceLoc loc);

  // ---- builtin call handlers, one per function or family of alike functions; each add_*
  // registers a family's names in call_builtin's table.
  static void add_builtins(BuiltinTable& t, std::initializer_list<const char*> names,
                           BuiltinHandler h);
  // Python builtins, math.*, dtype casts (elab_builtins.cpp)
  static void add_python_builtins(BuiltinTable& t);
  static void add_math_builtins(BuiltinTable& t);
  ValuePtr py_print(const BuiltinCall& c);
  ValuePtr py_len(const BuiltinCall& c);
  ValuePtr py_scalar_cast(const BuiltinCall& c);
  ValuePtr py_range(const BuiltinCall& c);
  ValuePtr py_sequence(const BuiltinCall& c);
  ValuePtr py_dict(const BuiltinCall& c);
  ValuePtr py_min_max(const BuiltinCall& c);
  ValuePtr py_abs(const BuiltinCall& c);
  ValuePtr py_unsupported(const BuiltinCall& c);
  ValuePtr py_sum(const BuiltinCall& c);
  static void add_static_builtins(BuiltinTable& t);
  ValuePtr py_zip(const BuiltinCall& c);
  ValuePtr py_enumerate(const BuiltinCall& c);
  ValuePtr py_map(const BuiltinCall& c);
  ValuePtr py_reversed(const BuiltinCall& c);
  ValuePtr dict_method(const BuiltinCall& c);
  ValuePtr math_func(const BuiltinCall& c);
  ValuePtr dtype_cast(const BuiltinCall& c);
  // numpy elementwise functions, reductions and contractions (elab_elementwise.cpp)
  static void add_elementwise_builtins(BuiltinTable& t);
  static void add_reduction_builtins(BuiltinTable& t);
  static void add_contraction_builtins(BuiltinTable& t);
  ValuePtr np_unary(const BuiltinCall& c);
  ValuePtr np_square(const BuiltinCall& c);
  ValuePtr np_reciprocal(const BuiltinCall& c);
  ValuePtr np_log1p_expm1(const BuiltinCall& c);
  ValuePtr np_arith(const BuiltinCall& c);
  ValuePtr np_compare(const BuiltinCall& c);
  ValuePtr np_logical(const BuiltinCall& c);
  ValuePtr np_max_min(const BuiltinCall& c);
  ValuePtr np_where(const BuiltinCall& c);
  ValuePtr np_clip(const BuiltinCall& c);
  ValuePtr np_reduce(const BuiltinCall& c);
  ValuePtr np_norm(const BuiltinCall& c);
  ValuePtr np_argmax(const BuiltinCall& c);
  ValuePtr np_matmul(const BuiltinCall& c);
  ValuePtr np_dot(const BuiltinCall& c);
  ValuePtr np_einsum(const BuiltinCall& c);
  // numpy functions composed of others (elab_derived.cpp)
  static void add_derived_builtins(BuiltinTable& t);
  ValuePtr np_sign(const BuiltinCall& c);
  ValuePtr np_exp2_logs(const BuiltinCall& c);
  ValuePtr np_isnan(const BuiltinCall& c);
  ValuePtr np_average(const BuiltinCall& c);
  ValuePtr np_tensordot(const BuiltinCall& c);
  ValuePtr np_moveaxis(const BuiltinCall& c);
  ValuePtr np_broadcast_to(const BuiltinCall& c);
  ValuePtr np_flip(const BuiltinCall& c);
  ValuePtr np_cumsum(const BuiltinCall& c);
  ValuePtr np_finfo(const BuiltinCall& c);
  ValuePtr np_nan_to_num(const BuiltinCall& c);
  ValuePtr np_logaddexp(const BuiltinCall& c);
  DType float_operands(const BuiltinCall& c, std::vector<ValueId>& ids);
  ValuePtr np_heaviside(const BuiltinCall& c);
  ValuePtr np_floor(const BuiltinCall& c);
  ValuePtr np_round(const BuiltinCall& c);
  ValuePtr type_info(const ValuePtr& info, const std::string& name, SourceLoc loc);
  // scipy.special's functions that model code calls (elab_scipy.cpp)
  static void add_scipy_builtins(BuiltinTable& t);
  ValuePtr scipy_erf_expit(const BuiltinCall& c);
  ValuePtr scipy_softmax(const BuiltinCall& c);
  ValuePtr scipy_logsumexp(const BuiltinCall& c);
  ValuePtr finite_or_zero(const ValuePtr& m, SourceLoc loc);
  // numpy layout functions and array methods (elab_layout.cpp)
  static void add_layout_builtins(BuiltinTable& t);
  ValuePtr np_reshape(const BuiltinCall& c);
  ValuePtr np_transpose(const BuiltinCall& c);
  ValuePtr np_swapaxes(const BuiltinCall& c);
  ValuePtr np_expand_dims(const BuiltinCall& c);
  ValuePtr np_squeeze(const BuiltinCall& c);
  ValuePtr np_astype(const BuiltinCall& c);
  ValuePtr np_copy(const BuiltinCall& c);
  ValuePtr np_flatten(const BuiltinCall& c);
  ValuePtr np_asarray(const BuiltinCall& c);
  // numpy array creation (elab_create.cpp)
  static void add_creation_builtins(BuiltinTable& t);
  ValuePtr np_full(const BuiltinCall& c);
  ValuePtr np_full_like(const BuiltinCall& c);
  ValuePtr np_tri(const BuiltinCall& c);
  ValuePtr np_triu_tril(const BuiltinCall& c);
  ValuePtr np_arange(const BuiltinCall& c);
  ValuePtr np_eye(const BuiltinCall& c);
  ValuePtr np_pad(const BuiltinCall& c);
  // numpy joining, splitting and copying (elab_join.cpp)
  static void add_joining_builtins(BuiltinTable& t);
  ValuePtr np_concatenate(const BuiltinCall& c);
  ValuePtr np_stack(const BuiltinCall& c);
  ValuePtr np_split(const BuiltinCall& c);
  ValuePtr np_hvstack(const BuiltinCall& c);
  ValuePtr np_repeat(const BuiltinCall& c);
  ValuePtr np_tile(const BuiltinCall& c);
  // gathers: table[ids], np.take (elab_gather.cpp)
  static void add_gather_builtins(BuiltinTable& t);
  ValuePtr np_take(const BuiltinCall& c);
  ValuePtr np_take_along_axis(const BuiltinCall& c);
  ValuePtr gather_subscript(ValueId x, const std::vector<ValuePtr>& idx, SourceLoc loc);
  ValueId take(ValueId table, ValueId ids, int axis, SourceLoc loc);
  // `range(...)` indexing an array (picoGPT's wpe[range(len(inputs))]) is numpy's fancy
  // index by those integers: np.arange(...) of the same arguments; null for other indices.
  ValuePtr range_index(const ValuePtr& base, const Expr& index);
};

}  // namespace ollie::spec::elab
