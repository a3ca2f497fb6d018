// Call handlers for numpy's elementwise functions (exp, add, where, clip, ...), its
// reductions (sum, max, mean, var, ...) and contractions (matmul, dot, outer, einsum).
#include <algorithm>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

void Elab::add_elementwise_builtins(BuiltinTable& t) {
  add_builtins(t,
               {"np.exp", "np.log", "np.sqrt", "np.tanh", "np.sin", "np.cos", "np.abs",
                "np.absolute", "np.negative"},
               &Elab::np_unary);
  add_builtins(t, {"np.square"}, &Elab::np_square);
  add_builtins(t, {"np.log1p", "np.expm1"}, &Elab::np_log1p_expm1);
  add_builtins(t, {"np.reciprocal"}, &Elab::np_reciprocal);
  add_builtins(t,
               {"np.add", "np.subtract", "np.multiply", "np.divide", "np.true_divide", "np.power"},
               &Elab::np_arith);
  add_builtins(
      t, {"np.equal", "np.not_equal", "np.less", "np.less_equal", "np.greater", "np.greater_equal"},
      &Elab::np_compare);
  add_builtins(t, {"np.logical_and", "np.logical_or", "np.logical_not"}, &Elab::np_logical);
  add_builtins(t, {"np.maximum", "np.minimum"}, &Elab::np_max_min);
  add_builtins(t, {"np.where"}, &Elab::np_where);
  add_builtins(t, {"np.clip", "method.clip"}, &Elab::np_clip);
}

void Elab::add_reduction_builtins(BuiltinTable& t) {
  add_builtins(
      t,
      {"np.sum", "np.max", "np.min", "np.amax", "np.amin", "np.mean", "np.var", "np.std",
       "method.sum", "method.max", "method.min", "method.mean", "method.var", "method.std"},
      &Elab::np_reduce);
  add_builtins(t, {"np.linalg.norm"}, &Elab::np_norm);
  add_builtins(t, {"np.argmax", "np.argmin", "method.argmax", "method.argmin"}, &Elab::np_argmax);
}

void Elab::add_contraction_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.matmul"}, &Elab::np_matmul);
  add_builtins(t, {"np.dot", "method.dot", "np.inner", "np.outer"}, &Elab::np_dot);
  add_builtins(t, {"np.einsum"}, &Elab::np_einsum);
}

// ---------------------------------------------------------------------------- elementwise

ValuePtr Elab::np_unary(const BuiltinCall& c) {
  const std::string& base = c.base;
  auto a = c.sig({"x"}, 1);
  OpKind k = base == "exp"        ? OpKind::Exp
             : base == "log"      ? OpKind::Log
             : base == "sqrt"     ? OpKind::Sqrt
             : base == "tanh"     ? OpKind::Tanh
             : base == "sin"      ? OpKind::Sin
             : base == "cos"      ? OpKind::Cos
             : base == "negative" ? OpKind::Neg
                                  : OpKind::Abs;
  return make_tensor(checked(apply_unary(k, c.tensor_arg(a[0], "x"), c.loc), c.loc));
}

ValuePtr Elab::np_square(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  if (dtype_of(*x) == DType::Bool) fail(c.loc, "np.square of a boolean array is not supported");
  return make_tensor(builder_.powi(x->t, 2, c.loc));
}

// np.log1p(x) as log(1 + x) and np.expm1(x) as exp(x) - 1: the reference and its bound
// are those of the composed form (exact to the bound; numpy's extra accuracy for x near 0,
// where 1 + x rounds, is not promised: the bound there is absolute, about the unit roundoff).
ValuePtr Elab::np_log1p_expm1(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  if (dtype_of(*x) == DType::Bool)
    fail(c.loc, "np." + c.base + " of a boolean array is not supported");
  if (c.base == "log1p") {
    ValuePtr sum = binary("+", make_float(1.0), x, c.loc);
    return make_tensor(checked(apply_unary(OpKind::Log, sum, c.loc), c.loc));
  }
  ValuePtr e = make_tensor(checked(apply_unary(OpKind::Exp, x, c.loc), c.loc));
  ValuePtr r = binary("-", e, make_float(1.0), c.loc);
  return r->kind == Kind::Tensor ? make_tensor(r->t) : make_tensor(as_tensor(r, c.loc));
}

ValuePtr Elab::np_reciprocal(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  if (!ir::is_float(dtype_of(*x)))
    fail(c.loc, "np.reciprocal of an integer array truncates; not supported", "write 1.0 / x");
  return binary("/", make_float(1.0), x, c.loc);
}

// np.add, subtract, multiply, divide, true_divide, power: the operators, always giving an array.
ValuePtr Elab::np_arith(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  auto a = c.sig({"x1", "x2"}, 2);
  std::string op = base == "add"        ? "+"
                   : base == "subtract" ? "-"
                   : base == "multiply" ? "*"
                   : base == "power"    ? "**"
                                        : "/";
  ValuePtr r = binary(op, a[0], a[1], loc);
  return r->kind == Kind::Tensor ? make_tensor(r->t) : make_tensor(as_tensor(r, loc));
}

ValuePtr Elab::np_compare(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  auto a = c.sig({"x1", "x2"}, 2);
  std::string op = base == "equal"        ? "=="
                   : base == "not_equal"  ? "!="
                   : base == "less"       ? "<"
                   : base == "less_equal" ? "<="
                   : base == "greater"    ? ">"
                                          : ">=";
  return make_tensor(as_tensor(compare(op, c.tensor_arg(a[0], "x1"), a[1], loc), loc));
}

ValuePtr Elab::np_logical(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  auto a = c.sig({"x1", "x2"}, base == "logical_not" ? 1 : 2);
  auto as_bool = [&](const ValuePtr& v) {
    ValuePtr t = c.tensor_arg(v, "x");
    if (dtype_of(*t) == DType::Bool) return t->t;
    return compare("!=", t, make_int(0), loc)->t;
  };
  if (base == "logical_not") return make_tensor(builder_.unary(OpKind::Not, as_bool(a[0]), loc));
  auto ids = unify({make_tensor(as_bool(a[0])), make_tensor(as_bool(a[1]))}, loc);
  return make_tensor(
      builder_.binary(base == "logical_and" ? OpKind::And : OpKind::Or, ids[0], ids[1], loc));
}

// np.maximum, np.minimum
ValuePtr Elab::np_max_min(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  auto a = c.sig({"x1", "x2"}, 2);
  if (!is_scalar(*a[0]) && a[0]->kind != Kind::Tensor) c.tensor_arg(a[0], "x1");
  if (!is_scalar(*a[1]) && a[1]->kind != Kind::Tensor) c.tensor_arg(a[1], "x2");
  auto ids = unify({a[0], a[1]}, loc);
  if (node(ids[0]).dtype == DType::Bool)
    fail(loc, "np." + base + " of booleans is not supported", "use | or &");
  return make_tensor(checked(
      builder_.binary(base == "maximum" ? OpKind::Max : OpKind::Min, ids[0], ids[1], loc), loc));
}

ValuePtr Elab::np_where(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  if (c.full.pos.size() == 1 && c.full.kw.empty())
    fail(loc,
         "data-dependent shape: np.where(cond) with one argument returns indices whose count "
         "depends on the values; the shape of every value must follow from the dims",
         "use np.where(mask, x, 0) to keep the shape");
  auto a = c.sig({"condition", "x", "y"}, 3);
  ValuePtr cv = c.tensor_arg(a[0], "condition");
  if (dtype_of(*cv) != DType::Bool) cv = compare("!=", cv, make_int(0), loc);
  DType t = result_dtype({a[1], a[2]}, loc);
  ValueId x = as_tensor(a[1], loc, t), y = as_tensor(a[2], loc, t);
  Shape s = broadcast_shapes({cv->t, x, y}, loc);
  ValueId cond = to_shape(cv->t, s, loc);
  x = to_shape(x, s, loc);
  y = to_shape(y, s, loc);
  return make_tensor(checked(builder_.select(cond, x, y, loc), loc));
}

// np.clip / .clip: np.minimum(np.maximum(a, a_min), a_max), either bound optional.
ValuePtr Elab::np_clip(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "a_min", "a_max"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "a");
  if (!is_none(a[1]))
    x = call_builtin(*make_named(Kind::Builtin, "np.maximum"),
                     CallArgs{{x, a[1]}, {}, {loc, loc}, {}}, loc);
  if (!is_none(a[2]))
    x = call_builtin(*make_named(Kind::Builtin, "np.minimum"),
                     CallArgs{{x, a[2]}, {}, {loc, loc}, {}}, loc);
  return x;
}

// ---------------------------------------------------------------------------- reductions

// sum, max/amax, min/amin, mean, var, std: each with numpy's own keyword arguments.
ValuePtr Elab::np_reduce(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  std::string what = base == "amax" ? "max" : base == "amin" ? "min" : base;
  bool has_dtype = what == "sum" || what == "mean" || what == "var" || what == "std";
  bool has_ddof = what == "var" || what == "std";
  std::vector<std::string> names = {"a", "axis"};
  if (has_dtype) names.push_back("dtype");
  names.push_back("out");
  if (has_ddof) names.push_back("ddof");
  names.push_back("keepdims");
  auto a = c.fsig(names, 1);
  auto get = [&](const std::string& n) {
    return a[static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin())];
  };
  if (!is_none(get("out"))) fail(loc, "out= is not supported in a spec");
  int64_t ddof = has_ddof && get("ddof") ? to_const_int(get("ddof"), loc, "ddof") : 0;
  std::optional<DType> dt = has_dtype ? to_dtype(get("dtype"), loc) : std::nullopt;
  return reduce(what, c.tensor_arg(a[0], "a"), get("axis"), c.flag(get("keepdims")), ddof, dt, loc);
}

// np.linalg.norm(x, ord=None, axis=None, keepdims=False): the 2-norm of the vectors along
// `axis` (of all elements when None, numpy's Frobenius norm for a matrix), computed as numpy
// computes it: sqrt(sum(x * x)).
ValuePtr Elab::np_norm(const BuiltinCall& c) {
  auto a = c.fsig({"x", "ord", "axis", "keepdims"}, 1);
  if (!is_none(a[1]) && !(a[1]->kind == Kind::Int && to_const_int(a[1], c.loc, "ord") == 2) &&
      !(a[1]->kind == Kind::Str && a[1]->s == "fro"))
    fail(c.loc, "np.linalg.norm with this ord is not supported in a spec",
         "ord=None, 2 or 'fro' (the 2-norm); write other norms out, e.g. np.abs(x).sum(axis)");
  ValuePtr x = c.tensor_arg(a[0], "x");
  if (!ir::is_float(dtype_of(*x)))
    x = make_tensor(convert(x->t, DType::F64, c.loc));  // numpy's norm of integers is float64
  if (a[2] && a[2]->kind == Kind::Tuple && a[2]->items.size() > 1 && a[1] &&
      a[1]->kind == Kind::Int)
    fail(c.loc, "np.linalg.norm with ord=2 over two axes is a matrix's spectral norm",
         "a spec supports the Frobenius norm: ord=None or 'fro'");
  ValuePtr squares = binary("*", x, x, c.loc);
  ValuePtr sum = reduce("sum", squares, a[2], c.flag(a[3]), 0, std::nullopt, c.loc);
  return make_tensor(checked(apply_unary(OpKind::Sqrt, sum, c.loc), c.loc));
}

// np.argmax / argmin (and the methods) with axis (None: the flattened index) and keepdims:
// the first index where x equals its max (min), or where x is NaN (numpy's max is then NaN,
// and argmax names the first NaN), written as min(where(hit, index, n)) over the axis, an
// int64 array as numpy's intp.
ValuePtr Elab::np_argmax(const BuiltinCall& c) {
  auto a = c.fsig({"a", "axis", "out", "keepdims"}, 1);
  if (!is_none(a[2])) fail(c.loc, "out= is not supported in a spec");
  ValuePtr x = c.tensor_arg(a[0], "a");
  if (dtype_of(*x) == DType::Bool) x = make_tensor(convert(x->t, DType::I64, c.loc));
  ValuePtr axis = a[1];
  if (is_none(axis)) {  // the index into the flattened array
    DimExpr n = DimExpr::constant(1);
    for (const DimExpr& d : node(x->t).shape) n = n * d;
    x = make_tensor(builder_.reshape(x->t, {n}, c.loc));
    axis = make_int(0);
  }
  const bool keepdims = c.flag(a[3]);
  const std::string extreme = c.base == "argmax" ? "max" : "min";
  ValuePtr m = reduce(extreme, x, axis, true, 0, std::nullopt, c.loc);
  ValuePtr hit = compare("==", x, m, c.loc);
  if (ir::is_float(dtype_of(*x)))
    hit = make_tensor(builder_.binary(OpKind::Or, hit->t, compare("!=", x, x, c.loc)->t, c.loc));
  const Shape shape = node(x->t).shape;  // a copy: the builder's nodes grow below
  const std::vector<int> axes = axes_arg(axis, static_cast<int>(shape.size()), c.loc);
  if (axes.size() != 1) fail(c.loc, "np." + c.base + " takes one axis (an int) or None");
  const size_t ax = static_cast<size_t>(axes[0]);
  ValueId index = builder_.iota(shape, axes[0], DType::I64, c.loc);
  ValueId past = to_shape(builder_.dim_constant(shape[ax], DType::I64, c.loc), shape, c.loc);
  ValuePtr picked = make_tensor(builder_.select(hit->t, index, past, c.loc));
  return reduce("min", picked, axis, keepdims, 0, std::nullopt, c.loc);
}

// ---------------------------------------------------------------------------- contractions

ValuePtr Elab::np_matmul(const BuiltinCall& c) {
  auto a = c.sig({"x1", "x2"}, 2);
  return matmul(c.tensor_arg(a[0], "x1"), c.tensor_arg(a[1], "x2"), c.loc);
}

// np.dot, np.inner, np.outer
ValuePtr Elab::np_dot(const BuiltinCall& c) {
  const std::string& base = c.base;
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "b"}, 2);
  if (base != "outer" && (is_scalar(*a[0]) || is_scalar(*a[1])))
    return binary("*", a[0], a[1], loc);
  ValuePtr x = c.tensor_arg(a[0], "a"), y = c.tensor_arg(a[1], "b");
  if (base == "outer") {
    ValueId fx = reshape_to(x->t, {make_int(-1)}, loc), fy = reshape_to(y->t, {make_int(-1)}, loc);
    DType t = result_dtype({x, y}, loc);
    fx = convert(fx, t, loc);
    fy = convert(fy, t, loc);
    if (t == DType::Bool) fail(loc, "np.outer of booleans is not supported");
    return make_tensor(checked(builder_.contract(fx, fy, {0}, {1}, {0, 1}, loc), loc));
  }
  size_t rx = shape_of(*x).size(), ry = shape_of(*y).size();
  if (rx == 1 && ry == 1) {
    if (shape_of(*x)[0] != shape_of(*y)[0])
      fail(loc, "np." + base + " shape mismatch: " + type_str(x->t) + " and " + type_str(y->t));
    DType t = result_dtype({x, y}, loc);
    return make_tensor(
        builder_.contract(convert(x->t, t, loc), convert(y->t, t, loc), {0}, {0}, {}, loc));
  }
  if (base == "inner" && rx >= 1 && ry >= 1 && rx + ry <= 26) {
    // sum over both last axes: out[i..., j...] (numpy's inner).
    std::string la, lb;
    char next = 'a';
    for (size_t i = 0; i + 1 < rx; ++i) la += next++;
    for (size_t i = 0; i + 1 < ry; ++i) lb += next++;
    const char k = next++;
    return einsum(la + k + "," + lb + k + "->" + la + lb, {x, y}, loc);
  }
  if (base == "dot" && ry <= 2) return matmul(x, y, loc);  // a's last axis with b's first
  if (base == "dot" && rx >= 1 && rx + ry <= 26) {
    // sum over a's last axis and b's second-to-last: out[i..., j..., m] (numpy's dot).
    std::string la, lb, out;
    char next = 'a';
    for (size_t i = 0; i + 1 < rx; ++i) la += next++;
    const char k = next++;
    la += k;
    for (size_t i = 0; i < ry; ++i) lb += i + 2 == ry ? k : next++;
    out = la.substr(0, rx - 1) + lb.substr(0, ry - 2) + lb.back();
    return einsum(la + "," + lb + "->" + out, {x, y}, loc);
  }
  fail(loc, "np." + base + " of " + type_str(x->t) + " and " + type_str(y->t) + " is not supported",
       "use np.einsum or @");
}

ValuePtr Elab::np_einsum(const BuiltinCall& c) {
  const CallArgs& args = c.args;
  SourceLoc loc = c.loc;
  if (args.pos.empty() || args.pos[0]->kind != Kind::Str)
    fail(loc, "np.einsum needs a subscripts string first", "e.g. np.einsum(\"ij,jk->ik\", a, b)");
  for (auto& [k, v] : args.kw)
    if (k != "optimize") fail(loc, "np.einsum() got an unsupported keyword argument '" + k + "'");
  return einsum(args.pos[0]->s, std::vector<ValuePtr>(args.pos.begin() + 1, args.pos.end()), loc);
}

}  // namespace ollie::spec::elab
