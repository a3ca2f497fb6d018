// The numpy, math and Python builtin functions a spec may call, array attributes and
// methods: attribute lookup, argument binding and the dispatch table of call handlers.
#include <cmath>
#include <set>

#include "spec/elab_internal.h"
#include "support/error.h"

namespace ollie::spec::elab {

namespace {

const std::set<std::string> kDataDependent = {"nonzero",     "unique",  "argwhere",
                                              "flatnonzero", "extract", "compress"};
const std::set<std::string> kMathFuncs = {"sqrt", "log", "exp",  "tanh", "sin",
                                          "cos",  "erf", "fabs", "log2", "log10"};

const char* kScipySpecial = "erf, expit, softmax, log_softmax and logsumexp";

const char* kSupportedHint =
    "supported numpy: exp exp2 log log2 log10 sqrt tanh abs sign sin cos square log1p expm1 "
    "maximum minimum where clip isnan isinf isfinite "
    "sum max min mean average var std argmax argmin linalg.norm "
    "matmul einsum dot outer tensordot reshape transpose swapaxes moveaxis expand_dims squeeze "
    "broadcast_to concatenate stack hstack vstack split array_split repeat tile take "
    "take_along_axis full zeros ones *_like eye identity tri triu tril arange astype copy "
    "(see docs/spec-language.md)";

}  // namespace

std::optional<DType> Elab::to_dtype(const ValuePtr& v, SourceLoc loc) {
  if (!v || v->kind == Kind::None) return std::nullopt;
  if (v->kind == Kind::DType) return v->dtype;
  if (v->kind == Kind::Builtin && v->s == "float") return DType::F64;
  if (v->kind == Kind::Builtin && v->s == "int") return DType::I64;
  if (v->kind == Kind::Builtin && v->s == "bool") return DType::Bool;
  if (v->kind == Kind::Str) {
    static const std::map<std::string, DType> names = {
        {"float32", DType::F32}, {"f4", DType::F32},    {"float64", DType::F64},
        {"f8", DType::F64},      {"int32", DType::I32}, {"i4", DType::I32},
        {"int64", DType::I64},   {"i8", DType::I64},    {"bool", DType::Bool},
        {"float16", DType::F16}, {"f2", DType::F16},    {"bfloat16", DType::BF16}};
    if (auto it = names.find(v->s); it != names.end()) return it->second;
  }
  fail(loc, "unsupported dtype " + (v->kind == Kind::Str ? "'" + v->s + "'" : kind_name(*v)),
       "use np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int64 or "
       "np.bool_");
}

ValuePtr Elab::attribute(const ValuePtr& base, const std::string& name, SourceLoc loc,
                         const std::string& shown) {
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
      if (name == "float16" || name == "half") return make_dtype(DType::F16);
      if (name == "int32") return make_dtype(DType::I32);
      if (name == "int64") return make_dtype(DType::I64);
      if (name == "bool_" || name == "bool") return make_dtype(DType::Bool);
      if (name == "linalg" || name == "fft" || name == "random")
        return make_named(Kind::Module, "np." + name);
      if (name == "erf")
        fail(loc, "np.erf is not a numpy function",
             "numpy has no erf: import it from scipy (from scipy.special import erf), or write "
             "gelu in its tanh form: "
             "0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))");
      if (kDataDependent.count(name))
        fail(loc,
             "data-dependent shape: np." + name +
                 " returns a size that depends on the values; the shape of every value must follow "
                 "from the dims",
             "use np.where(mask, x, 0) to keep the shape");
      if (builtin_table().count("np." + name)) return make_named(Kind::Builtin, "np." + name);
      fail(loc, "np." + name + " is not supported in a spec", kSupportedHint);
    }
    if (m == "math") {
      if (name == "pi") return make_float(M_PI);
      if (name == "e") return make_float(M_E);
      if (name == "tau") return make_float(2 * M_PI);
      if (name == "inf") return make_float(INFINITY);
      if (name == "nan") return make_float(NAN);
      if (kMathFuncs.count(name)) return make_named(Kind::Builtin, "math." + name);
      fail(loc, "math." + name + " is not supported in a spec",
           "supported: math.pi, e, inf, sqrt, log, exp, tanh, sin, cos, erf");
    }
    if (m == "scipy") {
      if (name == "special") return make_named(Kind::Module, "scipy.special");
      fail(loc, "scipy." + name + " is not supported in a spec",
           "of scipy a spec may use scipy.special's " + std::string(kScipySpecial));
    }
    if (m == "scipy.special") {
      if (builtin_table().count("scipy.special." + name))
        return make_named(Kind::Builtin, "scipy.special." + name);
      fail(loc, "scipy.special." + name + " is not supported in a spec",
           "supported: " + std::string(kScipySpecial));
    }
    if (m.rfind("finfo:", 0) == 0 || m.rfind("iinfo:", 0) == 0) return type_info(base, name, loc);
    if (m == "ml_dtypes") {
      if (name == "bfloat16") return make_dtype(DType::BF16);
      if (name == "finfo") return make_named(Kind::Builtin, "np.finfo");
      fail(loc, "ml_dtypes." + name + " is not supported in a spec",
           "of ml_dtypes a spec may use bfloat16 only (and np.float16 for float16)");
    }
    if (m == "np.linalg" && name == "norm") return make_named(Kind::Builtin, "np.linalg.norm");
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
    if (builtin_table().count("method." + name))
      return make_named(Kind::Builtin, "method." + name, base);
    std::string methods;
    for (auto& [n, h] : builtin_table())
      if (n.rfind("method.", 0) == 0) methods += " " + n.substr(7);
    fail(loc, "array attribute ." + name + " is not supported in a spec",
         "supported: .shape .ndim .size .dtype .T and the methods" + methods);
  }
  if (base->kind == Kind::DType && name == "type") return base;
  if (base->kind == Kind::Dict &&
      (name == "get" || name == "keys" || name == "values" || name == "items"))
    return make_named(Kind::Builtin, "dict." + name, base);
  fail(loc, kind_name(*base) + " has no attribute '" + name + "' in a spec (" + shown + ")");
}

// ---------------------------------------------------------------------------- calls

std::vector<ValuePtr> bind_args(Elab& el, const CallArgs& a, const std::string& fname,
                                const std::vector<std::string>& names, size_t required,
                                SourceLoc loc) {
  std::vector<ValuePtr> out(names.size());
  if (a.pos.size() > names.size())
    el.fail(loc, fname + "() takes at most " + std::to_string(names.size()) + " arguments (" +
                     std::to_string(a.pos.size()) + " given)");
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
    if (out[k])
      el.fail(a.kw_loc[j], fname + "() got multiple values for argument '" + names[k] + "'");
    out[k] = a.kw[j].second;
  }
  for (size_t i = 0; i < required; ++i)
    if (!out[i]) el.fail(loc, fname + "() missing required argument '" + names[i] + "'");
  return out;
}

// One call's context; the prologue the if-chain used to build for every call.
BuiltinCall::BuiltinCall(Elab& elab, const Value& callee, const CallArgs& call_args, SourceLoc at)
    : el(elab),
      fn(callee),
      args(call_args),
      loc(at),
      name(callee.s),
      method(name.rfind("method.", 0) == 0),
      base(method                      ? name.substr(7)
           : name.rfind("np.", 0) == 0 ? name.substr(3)
                                       : name),
      shown(method ? "." + base : name),
      full(call_args) {
  if (method) {
    full.pos.insert(full.pos.begin(), fn.self);
    full.pos_loc.insert(full.pos_loc.begin(), loc);
  }
}

std::vector<ValuePtr> BuiltinCall::sig(const std::vector<std::string>& names,
                                       size_t required) const {
  return bind_args(el, args, shown, names, required, loc);
}

std::vector<ValuePtr> BuiltinCall::fsig(const std::vector<std::string>& names,
                                        size_t required) const {
  return bind_args(el, full, shown, names, required, loc);
}

ValuePtr BuiltinCall::tensor_arg(const ValuePtr& v, const std::string& what) const {
  if (v->kind == Kind::Tensor && !v->weak) return v;
  return make_tensor(array_arg(v, what));
}

ValueId BuiltinCall::array_arg(const ValuePtr& v, const std::string& what) const {
  if (v->kind == Kind::Tensor && !v->weak) return v->t;
  if (el.is_scalar(*v)) return el.as_tensor(v, loc);
  if (v->kind == Kind::List || v->kind == Kind::Tuple) return el.array_literal(v, loc);
  el.fail(loc, shown + ": " + what + " must be an array, got " + kind_name(*v));
}

std::vector<ValuePtr> BuiltinCall::int_seq(const ValuePtr& v, const std::string& what) const {
  std::vector<ValuePtr> items;
  if (v->kind == Kind::Tuple || v->kind == Kind::List)
    items = v->items;
  else
    items = {v};
  for (auto& it : items) el.to_dim(it, loc, what);
  return items;
}

bool BuiltinCall::flag(const ValuePtr& v) const { return !is_none(v) && el.truthy(v, loc); }

void Elab::add_builtins(BuiltinTable& t, std::initializer_list<const char*> names,
                        BuiltinHandler h) {
  for (const char* n : names)
    if (!t.emplace(n, h).second)
      throw InternalError(std::string("builtin '") + n + "' registered twice");
}

const Elab::BuiltinTable& Elab::builtin_table() {
  static const BuiltinTable table = [] {
    BuiltinTable t;
    add_python_builtins(t);
    add_math_builtins(t);
    add_elementwise_builtins(t);
    add_reduction_builtins(t);
    add_contraction_builtins(t);
    add_derived_builtins(t);
    add_scipy_builtins(t);
    add_layout_builtins(t);
    add_creation_builtins(t);
    add_joining_builtins(t);
    add_gather_builtins(t);
    add_static_builtins(t);
    return t;
  }();
  return table;
}

ValuePtr Elab::call_builtin(const Value& fn, const CallArgs& args, SourceLoc loc) {
  const BuiltinTable& table = builtin_table();
  auto it = table.find(fn.s);
  if (it == table.end()) fail(loc, fn.s + " is not supported in a spec");
  return (this->*it->second)(BuiltinCall(*this, fn, args, loc));
}

}  // namespace ollie::spec::elab
