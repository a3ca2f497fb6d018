// The numpy, math and Python builtin functions a spec may call, array attributes and
// methods, each mapped to tensor IR with numpy's shape and dtype rules.
#include <cmath>
#include <set>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

const std::set<std::string> kNumpyFuncs = {
    "exp", "log", "sqrt", "tanh", "abs", "absolute", "sin", "cos", "square", "reciprocal", "negative",
    "maximum", "minimum", "where", "clip", "sum", "max", "min", "amax", "amin", "mean", "var", "std",
    "matmul", "einsum", "dot", "outer", "inner", "reshape", "transpose", "swapaxes", "expand_dims", "squeeze",
    "concatenate", "stack", "split", "repeat", "tile", "full", "zeros", "ones", "zeros_like", "ones_like",
    "full_like", "tri", "triu", "tril", "arange", "asarray", "array", "add", "subtract", "multiply", "divide",
    "true_divide", "power", "logical_and", "logical_or", "logical_not", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal"};
const std::set<std::string> kDataDependent = {"nonzero", "unique", "argwhere", "flatnonzero", "extract", "compress"};
const std::set<std::string> kMethods = {"reshape", "transpose", "swapaxes", "sum", "max", "min", "mean", "var",
                                        "std", "squeeze", "astype", "copy", "clip", "flatten", "ravel"};
const std::set<std::string> kMathFuncs = {"sqrt", "log", "exp", "tanh", "sin", "cos", "erf", "fabs", "log2", "log10"};

const char* kSupportedHint =
    "supported numpy: exp log sqrt tanh abs sin cos square maximum minimum where clip sum max min mean var std "
    "matmul einsum dot outer reshape transpose swapaxes expand_dims squeeze concatenate stack split repeat tile "
    "full zeros ones *_like tri triu tril arange astype (see DESIGN.md section 1)";

}  // namespace

std::optional<DType> Elab::to_dtype(const ValuePtr& v, SourceLoc loc) {
  if (!v || v->kind == Kind::None) return std::nullopt;
  if (v->kind == Kind::DType) return v->dtype;
  if (v->kind == Kind::Builtin && v->s == "float") return DType::F64;
  if (v->kind == Kind::Builtin && v->s == "int") return DType::I64;
  if (v->kind == Kind::Builtin && v->s == "bool") return DType::Bool;
  if (v->kind == Kind::Str) {
    static const std::map<std::string, DType> names = {
        {"float32", DType::F32}, {"f4", DType::F32}, {"float64", DType::F64}, {"f8", DType::F64}, {"int32", DType::I32},
        {"i4", DType::I32},      {"int64", DType::I64}, {"i8", DType::I64},   {"bool", DType::Bool}};
    if (auto it = names.find(v->s); it != names.end()) return it->second;
  }
  fail(loc, "unsupported dtype " + (v->kind == Kind::Str ? "'" + v->s + "'" : kind_name(*v)),
       "use np.float32, np.float64, np.int32, np.int64 or np.bool_");
}

ValuePtr Elab::attribute(const ValuePtr& base, const std::string& name, SourceLoc loc, const std::string& shown) {
  if (base->kind == Kind::Module) {
    const std::string& m = base->s;
    if (m == "np") {
      if (name == "pi") return make_float(M_PI);
      if (name == "e") return make_float(M_E);
      if (name == "inf") return make_float(INFINITY);
      if (name == "nan") return make_float(NAN);
      if (name == "newaxis") return make_none();
      if (name == "float32") return make_dtype(DType::F32);
      if (name == "float64" || name == "double") return make_dtype(DType::F64);
      if (name == "int32") return make_dtype(DType::I32);
      if (name == "int64") return make_dtype(DType::I64);
      if (name == "bool_" || name == "bool") return make_dtype(DType::Bool);
      if (name == "linalg" || name == "fft" || name == "random") return make_named(Kind::Module, "np." + name);
      if (name == "erf")
        fail(loc, "np.erf is not a numpy function", "numpy has no erf; write gelu in its tanh form: "
                                                    "0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))");
      if (kDataDependent.count(name))
        fail(loc, "data-dependent shape: np." + name + " returns a size that depends on the values; the shape of every value must follow from the dims",
             "use np.where(mask, x, 0) to keep the shape");
      if (kNumpyFuncs.count(name)) return make_named(Kind::Builtin, "np." + name);
      fail(loc, "np." + name + " is not supported in a spec", kSupportedHint);
    }
    if (m == "math") {
      if (name == "pi") return make_float(M_PI);
      if (name == "e") return make_float(M_E);
      if (name == "tau") return make_float(2 * M_PI);
      if (name == "inf") return make_float(INFINITY);
      if (name == "nan") return make_float(NAN);
      if (kMathFuncs.count(name)) return make_named(Kind::Builtin, "math." + name);
      fail(loc, "math." + name + " is not supported in a spec", "supported: math.pi, e, inf, sqrt, log, exp, tanh, sin, cos, erf");
    }
    fail(loc, m + "." + name + " is not supported in a spec", kSupportedHint);
  }
  if (base->kind == Kind::Tensor && !base->weak) {
    const Shape& s = shape_of(*base);
    if (name == "shape") {
      std::vector<ValuePtr> items;
      for (auto& d : s) items.push_back(make_int(d));
      return make_seq(Kind::Tuple, items);
    }
    if (name == "ndim") return make_int(static_cast<int64_t>(s.size()));
    if (name == "size") {
      DimExpr p = DimExpr::constant(1);
      for (auto& d : s) p = p * d;
      return make_int(p);
    }
    if (name == "dtype") return make_dtype(dtype_of(*base));
    if (name == "T") {
      std::vector<int> perm;
      for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) perm.push_back(i);
      return make_tensor(builder_.transpose(base->t, perm, loc));
    }
    if (kMethods.count(name)) return make_named(Kind::Builtin, "method." + name, base);
    fail(loc, "array attribute ." + name + " is not supported in a spec",
         "supported: .shape .ndim .size .dtype .T and the methods reshape transpose swapaxes sum max min mean var std squeeze astype");
  }
  if (base->kind == Kind::DType && name == "type") return base;
  fail(loc, kind_name(*base) + " has no attribute '" + name + "' in a spec (" + shown + ")");
}

// ---------------------------------------------------------------------------- calls

std::vector<ValuePtr> bind_args(Elab& el, const CallArgs& a, const std::string& fname, const std::vector<std::string>& names,
                           size_t required, SourceLoc loc) {
  std::vector<ValuePtr> out(names.size());
  if (a.pos.size() > names.size())
    el.fail(loc, fname + "() takes at most " + std::to_string(names.size()) + " arguments (" + std::to_string(a.pos.size()) + " given)");
  for (size_t i = 0; i < a.pos.size(); ++i) out[i] = a.pos[i];
  for (size_t j = 0; j < a.kw.size(); ++j) {
    auto it = std::find(names.begin(), names.end(), a.kw[j].first);
    if (it == names.end()) {
      std::string all;
      for (auto& n : names) all += (all.empty() ? "" : ", ") + n;
      el.fail(a.kw_loc[j], fname + "() got an unexpected keyword argument '" + a.kw[j].first + "'",
              "its arguments are " + (all.empty() ? std::string("(none)") : all));
    }
    size_t k = static_cast<size_t>(it - names.begin());
    if (out[k]) el.fail(a.kw_loc[j], fname + "() got multiple values for argument '" + names[k] + "'");
    out[k] = a.kw[j].second;
  }
  for (size_t i = 0; i < required; ++i)
    if (!out[i]) el.fail(loc, fname + "() missing required argument '" + names[i] + "'");
  return out;
}

namespace {

bool is_none(const ValuePtr& v) { return !v || v->kind == Kind::None; }

}  // namespace

ValuePtr Elab::call_builtin(const Value& fn, const CallArgs& args, SourceLoc loc) {
  std::string name = fn.s;
  const bool method = name.rfind("method.", 0) == 0;
  std::string base = method ? name.substr(7) : name.rfind("np.", 0) == 0 ? name.substr(3) : name;
  std::string shown = method ? "." + base : name;
  auto sig = [&](const std::vector<std::string>& names, size_t required) {
    return bind_args(*this, args, shown, names, required, loc);
  };
  // A method call is the function form with the array as the first argument.
  CallArgs full = args;
  if (method) {
    full.pos.insert(full.pos.begin(), fn.self);
    full.pos_loc.insert(full.pos_loc.begin(), loc);
  }
  auto fsig = [&](const std::vector<std::string>& names, size_t required) {
    return bind_args(*this, full, shown, names, required, loc);
  };
  auto tensor_arg = [&](const ValuePtr& v, const std::string& what) -> ValuePtr {
    if (v->kind == Kind::Tensor && !v->weak) return v;
    if (is_scalar(*v)) return make_tensor(as_tensor(v, loc));
    if (v->kind == Kind::List || v->kind == Kind::Tuple)
      fail(loc, shown + ": array literals from lists are not supported in a spec (" + what + ")",
           "pass the values as an input, or build them with np.full / np.arange");
    fail(loc, shown + ": " + what + " must be an array, got " + kind_name(*v));
  };
  auto int_seq = [&](const ValuePtr& v, const std::string& what) {
    std::vector<ValuePtr> items;
    if (v->kind == Kind::Tuple || v->kind == Kind::List) items = v->items;
    else items = {v};
    for (auto& it : items) to_dim(it, loc, what);
    return items;
  };
  auto flag = [&](const ValuePtr& v) { return !is_none(v) && truthy(v, loc); };

  // ---- Python builtins
  if (name == "print") fail(loc, "print() is not allowed in a spec", "a spec is a pure function; remove the print");
  if (name == "len") {
    auto a = sig({"obj"}, 1);
    if (a[0]->kind == Kind::Tuple || a[0]->kind == Kind::List || a[0]->kind == Kind::Dict || a[0]->kind == Kind::Str)
      return make_int(static_cast<int64_t>(a[0]->kind == Kind::Str ? a[0]->s.size() : a[0]->items.size()));
    if (a[0]->kind == Kind::Tensor && !a[0]->weak) {
      if (shape_of(*a[0]).empty()) fail(loc, "len() of a 0-d array");
      return make_int(shape_of(*a[0])[0]);
    }
    fail(loc, "len() of " + kind_name(*a[0]));
  }
  if (name == "float" || name == "int" || name == "bool") {
    auto a = sig({"x"}, 0);
    if (!a[0]) return name == "float" ? make_float(0) : name == "int" ? make_int(0) : make_bool(false);
    const Value& v = *a[0];
    if (name == "bool") return make_bool(truthy(a[0], loc));
    if (v.kind == Kind::Float) {
      if (name == "float") return a[0];
      if (!std::isfinite(v.f) || std::fabs(v.f) > 1e15) fail(loc, "int() of a non-finite or huge float");
      return make_int(static_cast<int64_t>(std::trunc(v.f)));
    }
    if (v.kind == Kind::Int || v.kind == Kind::Bool) {
      if (name == "int") return make_int(v.kind == Kind::Bool ? DimExpr::constant(v.b) : v.i);
      if (v.kind == Kind::Bool) return make_float(v.b);
      if (auto c = v.i.as_constant()) return make_float(static_cast<double>(*c));
      return make_tensor(as_tensor(a[0], loc, DType::F64), true);
    }
    if (v.kind == Kind::Tensor) {
      if (!v.weak && !shape_of(v).empty()) fail(loc, name + "() of an array with shape " + ir::shape_str(shape_of(v)));
      return make_tensor(convert(v.t, name == "float" ? DType::F64 : DType::I64, loc), true);
    }
    if (v.kind == Kind::Str) fail(loc, name + "() of a string is not supported in a spec");
    fail(loc, name + "() of " + kind_name(v));
  }
  if (name == "range") {
    auto a = sig({"start", "stop", "step"}, 1);
    int64_t lo = 0, hi, st = 1;
    if (!a[1]) hi = to_const_int(a[0], loc, "range()");
    else { lo = to_const_int(a[0], loc, "range()"); hi = to_const_int(a[1], loc, "range()"); }
    if (a[2]) st = to_const_int(a[2], loc, "range() step");
    if (st == 0) fail(loc, "range() step must not be zero");
    std::vector<ValuePtr> items;
    for (int64_t k = lo; st > 0 ? k < hi : k > hi; k += st) {
      items.push_back(make_int(k));
      if (items.size() > 4096) fail(loc, "range() too long for a spec");
    }
    return make_seq(Kind::Tuple, items);
  }
  if (name == "tuple" || name == "list") {
    auto a = sig({"iterable"}, 0);
    if (!a[0]) return make_seq(name == "tuple" ? Kind::Tuple : Kind::List, {});
    if (a[0]->kind != Kind::Tuple && a[0]->kind != Kind::List) fail(loc, name + "() of " + kind_name(*a[0]) + " is not supported");
    return make_seq(name == "tuple" ? Kind::Tuple : Kind::List, a[0]->items);
  }
  if (name == "dict") {
    if (!args.pos.empty()) fail(loc, "dict() takes keyword arguments in a spec", "write dict(M=256, K=512)");
    auto r = std::make_shared<Value>();
    r->kind = Kind::Dict;
    for (auto& [k, v] : args.kw) {
      r->keys.push_back(k);
      r->items.push_back(v);
    }
    return r;
  }
  if (name == "min" || name == "max") {
    std::vector<ValuePtr> xs = args.pos;
    if (xs.size() == 1 && (xs[0]->kind == Kind::Tuple || xs[0]->kind == Kind::List)) xs = xs[0]->items;
    if (xs.empty() || !args.kw.empty()) fail(loc, name + "() needs values to compare");
    ValuePtr best = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) {
      if (xs[i]->kind == Kind::Tensor || best->kind == Kind::Tensor)
        fail(loc, "Python " + name + "() on arrays is not supported", "use np." + std::string(name == "min" ? "minimum" : "maximum"));
      ValuePtr less = compare("<", xs[i], best, loc);
      if (less->b == (name == "min")) best = xs[i];
    }
    return best;
  }
  if (name == "abs" && args.pos.size() == 1 && args.pos[0]->kind != Kind::Tensor) {
    const Value& v = *args.pos[0];
    if (v.kind == Kind::Float) return make_float(std::fabs(v.f));
    if (v.kind == Kind::Int && v.i.is_constant()) return make_int(std::llabs(*v.i.as_constant()));
  }
  if (name == "sum" || name == "round" || name == "pow" || name == "abs") {
    if (name == "abs") return make_tensor(apply_unary(OpKind::Abs, tensor_arg(sig({"x"}, 1)[0], "x"), loc), true);
    fail(loc, "Python " + name + "() is not supported in a spec", "use the numpy function (np." + name + ")");
  }

  // ---- math: Python scalars in, Python floats out (folded when the value is known)
  if (name.rfind("math.", 0) == 0) {
    std::string f = name.substr(5);
    auto a = sig({"x"}, 1);
    const Value& v = *a[0];
    std::optional<double> x;
    if (v.kind == Kind::Float) x = v.f;
    else if (v.kind == Kind::Bool) x = v.b;
    else if (v.kind == Kind::Int && v.i.is_constant()) x = static_cast<double>(*v.i.as_constant());
    else if (!(v.kind == Kind::Int || (v.kind == Kind::Tensor && v.weak)))
      fail(loc, name + "() takes a number, not " + kind_name(v), v.kind == Kind::Tensor ? "use np." + f + " on arrays" : "");
    if (x) {
      if ((f == "sqrt" && *x < 0) || ((f == "log" || f == "log2" || f == "log10") && *x <= 0))
        fail(loc, name + "(" + std::to_string(*x) + "): math domain error");
      double r = f == "sqrt" ? std::sqrt(*x) : f == "log" ? std::log(*x) : f == "exp" ? std::exp(*x) : f == "tanh" ? std::tanh(*x)
                 : f == "sin" ? std::sin(*x) : f == "cos" ? std::cos(*x) : f == "erf" ? std::erf(*x) : f == "fabs" ? std::fabs(*x)
                 : f == "log2" ? std::log2(*x) : std::log10(*x);
      return make_float(r);
    }
    ValueId t = as_tensor(a[0], loc, DType::F64);
    OpKind k = f == "sqrt" ? OpKind::Sqrt : f == "log" ? OpKind::Log : f == "exp" ? OpKind::Exp : f == "tanh" ? OpKind::Tanh
               : f == "sin" ? OpKind::Sin : f == "cos" ? OpKind::Cos : f == "erf" ? OpKind::Erf : f == "fabs" ? OpKind::Abs : OpKind::Log;
    if (f == "log2" || f == "log10") fail(loc, name + "() of a dim is not supported", "use math.log(x) / math.log(2)");
    return make_tensor(builder_.unary(k, t, loc), true);
  }

  // ---- dtype objects called as casts: np.float32(x)
  if (name == "dtype_call") {
    auto a = sig({"x"}, 0);
    DType t = fn.dtype;
    if (!a[0]) return make_tensor(builder_.constant(0, t, loc));
    const Value& v = *a[0];
    if (v.kind == Kind::Float && t == DType::F32) return make_tensor(builder_.constant(static_cast<double>(static_cast<float>(v.f)), t, loc));
    if (v.kind == Kind::Tensor && !v.weak) return make_tensor(convert(v.t, t, loc));
    if (is_scalar(v)) return make_tensor(as_tensor(a[0], loc, t));
    fail(loc, std::string(ir::dtype_name(t)) + "() of " + kind_name(v));
  }

  // ---- numpy functions and array methods
  if (base == "exp" || base == "log" || base == "sqrt" || base == "tanh" || base == "sin" || base == "cos" || base == "abs" ||
      base == "absolute" || base == "negative") {
    auto a = sig({"x"}, 1);
    OpKind k = base == "exp" ? OpKind::Exp : base == "log" ? OpKind::Log : base == "sqrt" ? OpKind::Sqrt : base == "tanh" ? OpKind::Tanh
               : base == "sin" ? OpKind::Sin : base == "cos" ? OpKind::Cos : base == "negative" ? OpKind::Neg : OpKind::Abs;
    return make_tensor(checked(apply_unary(k, tensor_arg(a[0], "x"), loc), loc));
  }
  if (base == "square") {
    auto a = sig({"x"}, 1);
    ValuePtr x = tensor_arg(a[0], "x");
    if (dtype_of(*x) == DType::Bool) fail(loc, "np.square of a boolean array is not supported");
    return make_tensor(builder_.powi(x->t, 2, loc));
  }
  if (base == "reciprocal") {
    auto a = sig({"x"}, 1);
    ValuePtr x = tensor_arg(a[0], "x");
    if (!ir::is_float(dtype_of(*x))) fail(loc, "np.reciprocal of an integer array truncates; not supported", "write 1.0 / x");
    return binary("/", make_float(1.0), x, loc);
  }
  if (base == "add" || base == "subtract" || base == "multiply" || base == "divide" || base == "true_divide" || base == "power") {
    auto a = sig({"x1", "x2"}, 2);
    std::string op = base == "add" ? "+" : base == "subtract" ? "-" : base == "multiply" ? "*" : base == "power" ? "**" : "/";
    ValuePtr r = binary(op, a[0], a[1], loc);
    return r->kind == Kind::Tensor ? make_tensor(r->t) : make_tensor(as_tensor(r, loc));
  }
  if (base == "equal" || base == "not_equal" || base == "less" || base == "less_equal" || base == "greater" || base == "greater_equal") {
    auto a = sig({"x1", "x2"}, 2);
    std::string op = base == "equal" ? "==" : base == "not_equal" ? "!=" : base == "less" ? "<" : base == "less_equal" ? "<=" : base == "greater" ? ">" : ">=";
    return make_tensor(as_tensor(compare(op, tensor_arg(a[0], "x1"), a[1], loc), loc));
  }
  if (base == "logical_and" || base == "logical_or" || base == "logical_not") {
    auto a = sig({"x1", "x2"}, base == "logical_not" ? 1 : 2);
    auto as_bool = [&](const ValuePtr& v) {
      ValuePtr t = tensor_arg(v, "x");
      if (dtype_of(*t) == DType::Bool) return t->t;
      return compare("!=", t, make_int(0), loc)->t;
    };
    if (base == "logical_not") return make_tensor(builder_.unary(OpKind::Not, as_bool(a[0]), loc));
    auto ids = unify({make_tensor(as_bool(a[0])), make_tensor(as_bool(a[1]))}, loc);
    return make_tensor(builder_.binary(base == "logical_and" ? OpKind::And : OpKind::Or, ids[0], ids[1], loc));
  }
  if (base == "maximum" || base == "minimum") {
    auto a = sig({"x1", "x2"}, 2);
    if (!is_scalar(*a[0]) && a[0]->kind != Kind::Tensor) tensor_arg(a[0], "x1");
    if (!is_scalar(*a[1]) && a[1]->kind != Kind::Tensor) tensor_arg(a[1], "x2");
    auto ids = unify({a[0], a[1]}, loc);
    if (node(ids[0]).dtype == DType::Bool) fail(loc, "np." + base + " of booleans is not supported", "use | or &");
    return make_tensor(checked(builder_.binary(base == "maximum" ? OpKind::Max : OpKind::Min, ids[0], ids[1], loc), loc));
  }
  if (base == "where") {
    if (full.pos.size() == 1 && full.kw.empty())
      fail(loc, "data-dependent shape: np.where(cond) with one argument returns indices whose count depends on the values; the shape of every value must follow from the dims",
           "use np.where(mask, x, 0) to keep the shape");
    auto a = sig({"condition", "x", "y"}, 3);
    ValuePtr c = tensor_arg(a[0], "condition");
    if (dtype_of(*c) != DType::Bool) c = compare("!=", c, make_int(0), loc);
    DType t = result_dtype({a[1], a[2]}, loc);
    ValueId x = as_tensor(a[1], loc, t), y = as_tensor(a[2], loc, t);
    Shape s = broadcast_shapes({c->t, x, y}, loc);
    ValueId cond = to_shape(c->t, s, loc);
    x = to_shape(x, s, loc);
    y = to_shape(y, s, loc);
    return make_tensor(checked(builder_.select(cond, x, y, loc), loc));
  }
  if (base == "clip") {
    auto a = fsig({"a", "a_min", "a_max"}, 1);
    ValuePtr x = tensor_arg(a[0], "a");
    if (!is_none(a[1])) x = call_builtin(*make_named(Kind::Builtin, "np.maximum"), CallArgs{{x, a[1]}, {}, {loc, loc}, {}}, loc);
    if (!is_none(a[2])) x = call_builtin(*make_named(Kind::Builtin, "np.minimum"), CallArgs{{x, a[2]}, {}, {loc, loc}, {}}, loc);
    return x;
  }
  if (base == "sum" || base == "max" || base == "min" || base == "amax" || base == "amin" || base == "mean" || base == "var" || base == "std") {
    std::string what = base == "amax" ? "max" : base == "amin" ? "min" : base;
    bool has_dtype = what == "sum" || what == "mean" || what == "var" || what == "std";
    bool has_ddof = what == "var" || what == "std";
    std::vector<std::string> names = {"a", "axis"};
    if (has_dtype) names.push_back("dtype");
    names.push_back("out");
    if (has_ddof) names.push_back("ddof");
    names.push_back("keepdims");
    auto a = fsig(names, 1);
    auto get = [&](const std::string& n) { return a[static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin())]; };
    if (!is_none(get("out"))) fail(loc, "out= is not supported in a spec");
    int64_t ddof = has_ddof && get("ddof") ? to_const_int(get("ddof"), loc, "ddof") : 0;
    std::optional<DType> dt = has_dtype ? to_dtype(get("dtype"), loc) : std::nullopt;
    return reduce(what, tensor_arg(a[0], "a"), get("axis"), flag(get("keepdims")), ddof, dt, loc);
  }
  if (base == "matmul") {
    auto a = sig({"x1", "x2"}, 2);
    return matmul(tensor_arg(a[0], "x1"), tensor_arg(a[1], "x2"), loc);
  }
  if (base == "dot" || base == "inner" || base == "outer") {
    auto a = sig({"a", "b"}, 2);
    if (base != "outer" && (is_scalar(*a[0]) || is_scalar(*a[1]))) return binary("*", a[0], a[1], loc);
    ValuePtr x = tensor_arg(a[0], "a"), y = tensor_arg(a[1], "b");
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
      return make_tensor(builder_.contract(convert(x->t, t, loc), convert(y->t, t, loc), {0}, {0}, {}, loc));
    }
    if (base == "dot" && rx <= 2 && ry <= 2) return matmul(x, y, loc);
    fail(loc, "np." + base + " of " + type_str(x->t) + " and " + type_str(y->t) + " is not supported", "use np.einsum or @");
  }
  if (base == "einsum") {
    if (args.pos.empty() || args.pos[0]->kind != Kind::Str)
      fail(loc, "np.einsum needs a subscripts string first", "e.g. np.einsum(\"ij,jk->ik\", a, b)");
    for (auto& [k, v] : args.kw)
      if (k != "optimize") fail(loc, "np.einsum() got an unsupported keyword argument '" + k + "'");
    return einsum(args.pos[0]->s, std::vector<ValuePtr>(args.pos.begin() + 1, args.pos.end()), loc);
  }
  if (base == "reshape") {
    ValuePtr x;
    std::vector<ValuePtr> dims;
    if (method) {
      x = fn.self;
      for (auto& [k, v] : args.kw)
        if (k != "order" && k != "shape") fail(loc, ".reshape() got an unexpected keyword argument '" + k + "'");
      std::vector<ValuePtr> pos = args.pos;
      for (auto& [k, v] : args.kw)
        if (k == "shape") pos.push_back(v);
      if (pos.size() == 1) dims = int_seq(pos[0], "a reshape size");
      else dims = pos;
    } else {
      auto a = sig({"a", "newshape", "order"}, 2);
      x = tensor_arg(a[0], "a");
      dims = int_seq(a[1], "a reshape size");
    }
    return make_tensor(reshape_to(x->t, dims, loc));
  }
  if (base == "transpose") {
    ValuePtr x;
    ValuePtr axes;
    if (method) {
      x = fn.self;
      if (!args.kw.empty()) fail(loc, ".transpose() takes no keyword arguments");
      if (args.pos.size() == 1) axes = args.pos[0];
      else if (args.pos.size() > 1) axes = make_seq(Kind::Tuple, args.pos);
    } else {
      auto a = sig({"a", "axes"}, 1);
      x = tensor_arg(a[0], "a");
      axes = a[1];
    }
    int rank = static_cast<int>(shape_of(*x).size());
    std::vector<int> perm;
    if (is_none(axes)) {
      for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    } else {
      if (axes->kind != Kind::Tuple && axes->kind != Kind::List) fail(loc, "transpose axes must be a tuple of all axes");
      perm = axes_arg(axes, rank, loc);
      if (static_cast<int>(perm.size()) != rank)
        fail(loc, "transpose axes " + std::to_string(perm.size()) + " don't match an array of rank " + std::to_string(rank),
             "give a permutation of all the axes");
    }
    return make_tensor(builder_.transpose(x->t, perm, loc));
  }
  if (base == "swapaxes") {
    auto a = fsig({"a", "axis1", "axis2"}, 3);
    ValuePtr x = tensor_arg(a[0], "a");
    int rank = static_cast<int>(shape_of(*x).size());
    int i = norm_axis(to_const_int(a[1], loc, "axis1"), rank, loc), j = norm_axis(to_const_int(a[2], loc, "axis2"), rank, loc);
    std::vector<int> perm;
    for (int k = 0; k < rank; ++k) perm.push_back(k);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    return make_tensor(builder_.transpose(x->t, perm, loc));
  }
  if (base == "expand_dims") {
    auto a = sig({"a", "axis"}, 2);
    ValuePtr x = tensor_arg(a[0], "a");
    const Shape& s = shape_of(*x);
    size_t n = (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List) ? a[1]->items.size() : 1;
    std::vector<int> axes = axes_arg(a[1], static_cast<int>(s.size() + n), loc, false);
    Shape out(s.size() + n);
    std::vector<bool> is_new(out.size(), false);
    for (int ax : axes) is_new[static_cast<size_t>(ax)] = true;
    size_t k = 0;
    for (size_t i = 0; i < out.size(); ++i) out[i] = is_new[i] ? DimExpr::constant(1) : s[k++];
    return make_tensor(builder_.reshape(x->t, out, loc));
  }
  if (base == "squeeze") {
    auto a = fsig({"a", "axis"}, 1);
    ValuePtr x = tensor_arg(a[0], "a");
    const Shape& s = shape_of(*x);
    std::vector<int> axes;
    if (is_none(a[1])) {
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == DimExpr::constant(1)) axes.push_back(static_cast<int>(i));
    } else {
      axes = axes_arg(a[1], static_cast<int>(s.size()), loc);
      for (int ax : axes)
        if (s[static_cast<size_t>(ax)] != DimExpr::constant(1))
          fail(loc, "cannot squeeze axis " + std::to_string(ax) + " of " + type_str(x->t) + ": its size is " +
                        s[static_cast<size_t>(ax)].str() + ", not 1");
    }
    Shape out;
    for (size_t i = 0; i < s.size(); ++i)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) out.push_back(s[i]);
    return make_tensor(builder_.reshape(x->t, out, loc));
  }
  if (base == "astype") {
    auto a = fsig({"self", "dtype", "copy"}, 2);
    auto t = to_dtype(a[1], loc);
    if (!t) fail(loc, ".astype() needs a dtype", "e.g. .astype(np.float32)");
    return make_tensor(convert(a[0]->t, *t, loc));
  }
  if (base == "copy") {
    sig({"order"}, 0);
    return fn.self;
  }
  if (base == "flatten" || base == "ravel") {
    sig({"order"}, 0);
    return make_tensor(reshape_to(fn.self->t, {make_int(-1)}, loc));
  }
  if (base == "asarray" || base == "array") {
    auto a = sig({"a", "dtype"}, 1);
    auto t = to_dtype(a[1], loc);
    ValuePtr x = tensor_arg(a[0], "a");
    return make_tensor(t ? convert(x->t, *t, loc) : x->t);
  }
  return call_numpy_more(fn, args, loc);
}

}  // namespace ollie::spec::elab
