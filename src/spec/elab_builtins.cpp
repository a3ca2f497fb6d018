// Call handlers for the Python builtins a spec may call (len, float, range, min, ...), the
// math module's functions on Python scalars, and numpy dtypes called as casts.
#include <cmath>
#include <limits>

#include "support/half.h"
#include "spec/elab_internal.h"

namespace ollie::spec::elab {

void Elab::add_python_builtins(BuiltinTable& t) {
  add_builtins(t, {"print"}, &Elab::py_print);
  add_builtins(t, {"len"}, &Elab::py_len);
  add_builtins(t, {"float", "int", "bool"}, &Elab::py_scalar_cast);
  add_builtins(t, {"range"}, &Elab::py_range);
  add_builtins(t, {"tuple", "list"}, &Elab::py_sequence);
  add_builtins(t, {"dict"}, &Elab::py_dict);
  add_builtins(t, {"min", "max"}, &Elab::py_min_max);
  add_builtins(t, {"abs"}, &Elab::py_abs);
  add_builtins(t, {"sum"}, &Elab::py_sum);
  add_builtins(t, {"round", "pow"}, &Elab::py_unsupported);
  add_builtins(t, {"dtype_call"}, &Elab::dtype_cast);  // np.float32(x): see call_value
}

void Elab::add_math_builtins(BuiltinTable& t) {
  add_builtins(t,
               {"math.sqrt", "math.log", "math.exp", "math.tanh", "math.sin", "math.cos",
                "math.erf", "math.fabs", "math.log2", "math.log10"},
               &Elab::math_func);
}

// ---------------------------------------------------------------------------- Python builtins

ValuePtr Elab::py_print(const BuiltinCall& c) {
  fail(c.loc, "print() is not allowed in a spec", "a spec is a pure function; remove the print");
}

ValuePtr Elab::py_len(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"obj"}, 1);
  if (a[0]->kind == Kind::Tuple || a[0]->kind == Kind::List || a[0]->kind == Kind::Dict ||
      a[0]->kind == Kind::Str)
    return make_int(
        static_cast<int64_t>(a[0]->kind == Kind::Str ? a[0]->s.size() : a[0]->items.size()));
  if (a[0]->kind == Kind::Tensor && !a[0]->weak) {
    if (shape_of(*a[0]).empty()) fail(loc, "len() of a 0-d array");
    return make_int(shape_of(*a[0])[0]);
  }
  fail(loc, "len() of " + kind_name(*a[0]));
}

// float(x), int(x), bool(x)
ValuePtr Elab::py_scalar_cast(const BuiltinCall& c) {
  const std::string& name = c.name;
  SourceLoc loc = c.loc;
  auto a = c.sig({"x"}, 0);
  if (!a[0])
    return name == "float" ? make_float(0) : name == "int" ? make_int(0) : make_bool(false);
  const Value& v = *a[0];
  if (name == "bool") return make_bool(truthy(a[0], loc));
  if (v.kind == Kind::Float) {
    if (name == "float") return a[0];
    if (!std::isfinite(v.f) || std::fabs(v.f) > 1e15)
      fail(loc, "int() of a non-finite or huge float");
    return make_int(static_cast<int64_t>(std::trunc(v.f)));
  }
  if (v.kind == Kind::Int || v.kind == Kind::Bool) {
    if (name == "int") return make_int(v.kind == Kind::Bool ? DimExpr::constant(v.b) : v.i);
    if (v.kind == Kind::Bool) return make_float(v.b);
    if (auto k = v.i.as_constant()) return make_float(static_cast<double>(*k));
    return make_tensor(as_tensor(a[0], loc, DType::F64), true);
  }
  if (v.kind == Kind::Tensor) {
    if (!v.weak && !shape_of(v).empty())
      fail(loc, name + "() of an array with shape " + ir::shape_str(shape_of(v)));
    return make_tensor(convert(v.t, name == "float" ? DType::F64 : DType::I64, loc), true);
  }
  if (v.kind == Kind::Str && name == "float") {
    // float("inf"), float("-inf"), float("nan"): how model code writes the special values.
    std::string t;
    for (char ch : v.s) t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (t == "inf" || t == "+inf" || t == "infinity" || t == "+infinity")
      return make_float(std::numeric_limits<double>::infinity());
    if (t == "-inf" || t == "-infinity")
      return make_float(-std::numeric_limits<double>::infinity());
    if (t == "nan") return make_float(std::numeric_limits<double>::quiet_NaN());
    fail(loc, "float() of the string \"" + v.s +
                  "\": only \"inf\", \"-inf\" and \"nan\" are supported in a spec");
  }
  if (v.kind == Kind::Str) fail(loc, name + "() of a string is not supported in a spec");
  fail(loc, name + "() of " + kind_name(v));
}

ValuePtr Elab::py_range(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"start", "stop", "step"}, 1);
  int64_t lo = 0, hi, st = 1;
  for (auto& v : a)
    if (v && v->kind == Kind::Int && !v->i.is_constant())
      fail(loc,
           "range() over the dim expression " + v->i.str() +
               ": a loop is unrolled, so its count must be a constant",
           "use a constant count (a module constant, or a literal size in the annotation such as "
           "\"f32[12, D]\"), or vectorize over that axis");
  if (!a[1])
    hi = to_const_int(a[0], loc, "range()");
  else {
    lo = to_const_int(a[0], loc, "range()");
    hi = to_const_int(a[1], loc, "range()");
  }
  if (a[2]) st = to_const_int(a[2], loc, "range() step");
  if (st == 0) fail(loc, "range() step must not be zero");
  std::vector<ValuePtr> items;
  for (int64_t k = lo; st > 0 ? k < hi : k > hi; k += st) {
    items.push_back(make_int(k));
    if (items.size() > 4096) fail(loc, "range() too long for a spec");
  }
  return make_seq(Kind::Tuple, items);
}

// tuple(x), list(x)
ValuePtr Elab::py_sequence(const BuiltinCall& c) {
  const std::string& name = c.name;
  auto a = c.sig({"iterable"}, 0);
  if (!a[0]) return make_seq(name == "tuple" ? Kind::Tuple : Kind::List, {});
  return make_seq(name == "tuple" ? Kind::Tuple : Kind::List,
                  static_items(a[0], c.loc, "make a " + name));
}

ValuePtr Elab::py_dict(const BuiltinCall& c) {
  if (!c.args.pos.empty())
    fail(c.loc, "dict() takes keyword arguments in a spec", "write dict(M=256, K=512)");
  auto r = std::make_shared<Value>();
  r->kind = Kind::Dict;
  for (auto& [k, v] : c.args.kw) {
    r->keys.push_back(k);
    r->items.push_back(v);
  }
  return r;
}

// Python min() / max() of scalars (folded); numpy's are np.minimum / np.maximum.
ValuePtr Elab::py_min_max(const BuiltinCall& c) {
  const std::string& name = c.name;
  SourceLoc loc = c.loc;
  std::vector<ValuePtr> xs = c.args.pos;
  if (xs.size() == 1 && (xs[0]->kind == Kind::Tuple || xs[0]->kind == Kind::List))
    xs = xs[0]->items;
  if (xs.empty() || !c.args.kw.empty()) fail(loc, name + "() needs values to compare");
  ValuePtr best = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i]->kind == Kind::Tensor || best->kind == Kind::Tensor)
      fail(loc, "Python " + name + "() on arrays is not supported",
           "use np." + std::string(name == "min" ? "minimum" : "maximum"));
    ValuePtr less = compare("<", xs[i], best, loc);
    if (less->b == (name == "min")) best = xs[i];
  }
  return best;
}

// abs() folds a known scalar; otherwise it is a weak (Python-scalar) |x|.
ValuePtr Elab::py_abs(const BuiltinCall& c) {
  const CallArgs& args = c.args;
  if (args.pos.size() == 1 && args.pos[0]->kind != Kind::Tensor) {
    const Value& v = *args.pos[0];
    if (v.kind == Kind::Float) return make_float(std::fabs(v.f));
    if (v.kind == Kind::Int && v.i.is_constant()) return make_int(std::llabs(*v.i.as_constant()));
  }
  return make_tensor(apply_unary(OpKind::Abs, c.tensor_arg(c.sig({"x"}, 1)[0], "x"), c.loc), true);
}

// Python's sum(iterable, start=0) of a list or tuple: ((start + a) + b) + ..., left to
// right as Python adds (arrays broadcast, numbers fold). Over an array Python would loop
// over its rows: np.sum is the spec's way to write that.
ValuePtr Elab::py_sum(const BuiltinCall& c) {
  auto a = c.sig({"iterable", "start"}, 1);
  if (a[0]->kind != Kind::List && a[0]->kind != Kind::Tuple)
    fail(c.loc, "Python sum() of " + kind_name(*a[0]) + " is not supported in a spec",
         "sum a list of values, or use np.sum(x, axis=0) over an array's rows");
  ValuePtr total = a[1] ? a[1] : make_int(0);
  for (auto& x : a[0]->items) total = binary("+", total, x, c.loc);
  return total;
}

// round(), pow(): Python's versions would loop over arrays; numpy's are supported.
ValuePtr Elab::py_unsupported(const BuiltinCall& c) {
  fail(c.loc, "Python " + c.name + "() is not supported in a spec",
       "use the numpy function (np." + c.name + ")");
}

// ---------------------------------------------------------------------------- math, dtype casts

// math: Python scalars in, Python floats out (folded when the value is known).
ValuePtr Elab::math_func(const BuiltinCall& c) {
  const std::string& name = c.name;
  SourceLoc loc = c.loc;
  std::string f = name.substr(5);
  auto a = c.sig({"x"}, 1);
  const Value& v = *a[0];
  std::optional<double> x;
  if (v.kind == Kind::Float)
    x = v.f;
  else if (v.kind == Kind::Bool)
    x = v.b;
  else if (v.kind == Kind::Int && v.i.is_constant())
    x = static_cast<double>(*v.i.as_constant());
  else if (!(v.kind == Kind::Int || (v.kind == Kind::Tensor && v.weak)))
    fail(loc, name + "() takes a number, not " + kind_name(v),
         v.kind == Kind::Tensor ? "use np." + f + " on arrays" : "");
  if (x) {
    if ((f == "sqrt" && *x < 0) || ((f == "log" || f == "log2" || f == "log10") && *x <= 0))
      fail(loc, name + "(" + std::to_string(*x) + "): math domain error");
    double r = f == "sqrt"   ? std::sqrt(*x)
               : f == "log"  ? std::log(*x)
               : f == "exp"  ? std::exp(*x)
               : f == "tanh" ? std::tanh(*x)
               : f == "sin"  ? std::sin(*x)
               : f == "cos"  ? std::cos(*x)
               : f == "erf"  ? std::erf(*x)
               : f == "fabs" ? std::fabs(*x)
               : f == "log2" ? std::log2(*x)
                             : std::log10(*x);
    return make_float(r);
  }
  ValueId t = as_tensor(a[0], loc, DType::F64);
  OpKind k = f == "sqrt"   ? OpKind::Sqrt
             : f == "log"  ? OpKind::Log
             : f == "exp"  ? OpKind::Exp
             : f == "tanh" ? OpKind::Tanh
             : f == "sin"  ? OpKind::Sin
             : f == "cos"  ? OpKind::Cos
             : f == "erf"  ? OpKind::Erf
             : f == "fabs" ? OpKind::Abs
                           : OpKind::Log;
  if (f == "log2" || f == "log10")
    fail(loc, name + "() of a dim is not supported", "use math.log(x) / math.log(2)");
  return make_tensor(builder_.unary(k, t, loc), true);
}

// A dtype object called as a cast: np.float32(x).
ValuePtr Elab::dtype_cast(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"x"}, 0);
  DType t = c.fn.dtype;
  if (!a[0]) return make_tensor(builder_.constant(0, t, loc));
  const Value& v = *a[0];
  if (v.kind == Kind::Float && t == DType::F32)
    return make_tensor(builder_.constant(static_cast<double>(static_cast<float>(v.f)), t, loc));
  if (v.kind == Kind::Float && t == DType::F16)
    return make_tensor(builder_.constant(ollie_half::round_f16(v.f), t, loc));
  if (v.kind == Kind::Float && t == DType::BF16)
    return make_tensor(builder_.constant(ollie_half::round_bf16(v.f), t, loc));
  if (v.kind == Kind::Tensor && !v.weak) return make_tensor(convert(v.t, t, loc));
  if (is_scalar(v)) return make_tensor(as_tensor(a[0], loc, t));
  fail(loc, std::string(ir::dtype_name(t)) + "() of " + kind_name(v));
}

}  // namespace ollie::spec::elab
