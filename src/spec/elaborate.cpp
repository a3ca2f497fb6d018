// Elaboration driver: module constants and DIMS, entry selection, annotations, dim
// binding, statements, expressions and helper inlining. Operators and numpy calls
// live in elab_ops.cpp and elab_numpy.cpp.
#include "spec/elaborate.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "spec/elab_internal.h"

namespace ollie::spec {

namespace elab {

ValuePtr make_none() { return std::make_shared<Value>(); }
ValuePtr make_bool(bool v) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::Bool;
  r->b = v;
  return r;
}
ValuePtr make_int(const DimExpr& v) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::Int;
  r->i = v;
  return r;
}
ValuePtr make_int(int64_t v) { return make_int(DimExpr::constant(v)); }
ValuePtr make_float(double v) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::Float;
  r->f = v;
  return r;
}
ValuePtr make_str(const std::string& s) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::Str;
  r->s = s;
  return r;
}
ValuePtr make_tensor(ValueId id, bool weak) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::Tensor;
  r->t = id;
  r->weak = weak;
  return r;
}
ValuePtr make_seq(Kind kind, std::vector<ValuePtr> items) {
  auto r = std::make_shared<Value>();
  r->kind = kind;
  r->items = std::move(items);
  return r;
}
ValuePtr make_dtype(DType t) {
  auto r = std::make_shared<Value>();
  r->kind = Kind::DType;
  r->dtype = t;
  return r;
}
ValuePtr make_named(Kind kind, const std::string& name, ValuePtr self) {
  auto r = std::make_shared<Value>();
  r->kind = kind;
  r->s = name;
  r->self = std::move(self);
  return r;
}

std::string kind_name(const Value& v) {
  switch (v.kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::Str: return "a string";
    case Kind::Tensor: return v.weak ? "a scalar" : "an array";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Slice: return "a slice";
    case Kind::Ellipsis: return "...";
    case Kind::DType: return "a dtype";
    case Kind::Module: return "module '" + v.s + "'";
    case Kind::Func: return "function '" + v.s + "'";
    case Kind::Builtin: return "function '" + v.s + "'";
    case Kind::Class: return "class '" + v.s + "'";
    case Kind::Object: return "a '" + v.s + "' object";
  }
  return "a value";
}

namespace {

constexpr int kMaxDepth = 150;
constexpr int64_t kMaxElements = int64_t{1} << 34;

// An annotation that describes arrays ("f32[M, K]", or a tuple holding one), as opposed
// to a Python type (`dim: int`) that ordinary helpers carry.
bool names_an_array(const Expr* annotation) {
  if (!annotation) return false;
  if (annotation->kind == ExprKind::String) return true;
  if (annotation->kind != ExprKind::Tuple) return false;
  for (auto& e : annotation->items)
    if (names_an_array(e.get())) return true;
  return false;
}

// A function that may be the entry: every parameter annotated (or a held constant), and
// at least one annotation names arrays.
bool fully_annotated(const FunctionDef& f) {
  bool arrays = names_an_array(f.returns.get());
  for (auto& p : f.params) {
    if (!p.annotation && !held_constant(p)) return false;
    arrays = arrays || names_an_array(p.annotation.get());
  }
  return arrays;
}

std::string example_annotations(const FunctionDef& f) {
  std::string s;
  for (auto& p : f.params) {
    if (p.annotation) continue;
    s += (s.empty() ? "" : ", ") + p.name + ": \"f32[M, K]\"";
    if (s.size() > 60) break;
  }
  if (!f.returns) s += std::string(s.empty() ? "" : " and ") + "-> \"f32[M, N]\"";
  return s;
}

}  // namespace

Elab::Elab(const Module& module, const SpecOptions& options)
    : module_(module), options_(options), builder_(graph_) {}

void Elab::fail(SourceLoc loc, const std::string& message, const std::string& hint) const {
  throw SpecError(module_.file, module_.source, loc.valid() ? loc : last_loc_,
                  message + call_context(), hint);
}

std::string Elab::type_str(ValueId id) const {
  return std::string(ir::dtype_name(node(id).dtype)) + ir::shape_str(node(id).shape);
}

int64_t Elab::eval_dim(const DimExpr& d, SourceLoc loc) const {
  try {
    return d.evaluate(graph_.bound_dims);
  } catch (const UserError& e) {
    fail(loc, e.what());
  }
}

void Elab::check_shape(const Shape& shape, SourceLoc loc) {
  long double total = 1;
  for (auto& d : shape) {
    int64_t v = eval_dim(d, loc);
    if (v < 0)
      fail(loc, "negative size " + d.str() + " = " + std::to_string(v) + " in shape " +
                    ir::shape_str(shape));
    total *= static_cast<long double>(v);
    if (total > kMaxElements)
      fail(loc, "array of shape " + ir::shape_str(shape) + " is too large at the bound dims",
           "sizes here must stay below 2^34 elements");
  }
}

ValueId Elab::checked(ValueId id, SourceLoc loc) {
  check_shape(node(id).shape, loc);
  if (divisible_.empty()) return id;
  // Restate sizes such as 4*(D//4), from joining the parts of an np.split, as D.
  Shape shape = node(id).shape;
  for (auto& d : shape) d = with_divisibility(d);
  return shape == node(id).shape ? id : b().reshape(id, shape, loc);
}

void Elab::learn_divisible(const DimExpr& d, int64_t n) {
  if (n > 1 && d.floordiv(n) * DimExpr::constant(n) != d) divisible_.emplace_back(d, n);
}

// e with every c*(d//n) whose c is a multiple of n, for a divisibility (d, n) the spec
// implies, replaced by (c/n)*d.
DimExpr Elab::with_divisibility(const DimExpr& e) const {
  DimExpr out = e;
  for (const auto& [d, n] : divisible_) {
    DimExpr part = d.floordiv(n);
    int64_t c = out.coefficient_of(part);
    if (c != 0 && c % n == 0)
      out = out - part * DimExpr::constant(c) + d * DimExpr::constant(c / n);
  }
  return out;
}

ValuePtr Elab::lookup(const std::string& name, SourceLoc loc) {
  if (locals_) {
    if (auto it = locals_->find(name); it != locals_->end()) return it->second;
  }
  if (auto it = globals_.find(name); it != globals_.end()) return it->second;
  static const std::set<std::string> kBuiltins = {"len",   "float", "int",   "bool", "range",
                                                  "tuple", "list",  "min",   "max",  "abs",
                                                  "print", "sum",   "round", "pow",  "dict"};
  static const std::set<std::string> kListBuiltins = {"zip", "enumerate", "map", "reversed"};
  if (kBuiltins.count(name) || kListBuiltins.count(name)) return make_named(Kind::Builtin, name);
  if (name == "numpy" || name == "np" || name == "math")
    fail(loc, "name '" + name + "' is not defined",
         "add `import " + std::string(name == "math" ? "math" : "numpy as np") + "` at the top");
  fail(loc, "name '" + name + "' is not defined",
       "define it before use (module constants, helper parameters or local variables)");
}

// ---------------------------------------------------------------------------- module level

void Elab::run_module() {
  for (auto& sp : module_.body) {
    const Stmt& s = *sp;
    last_loc_ = s.loc;
    switch (s.kind) {
      case StmtKind::Import:
        for (auto& [mod, alias] : s.names) {
          std::string bind = alias.empty() ? mod : alias;
          if (mod == "numpy")
            globals_[bind] = make_named(Kind::Module, "np");
          else if (mod == "math")
            globals_[bind] = make_named(Kind::Module, "math");
          else if (mod == "ml_dtypes")
            globals_[bind] = make_named(Kind::Module, "ml_dtypes");
          else if (mod == "numpy.linalg" && !alias.empty())
            globals_[bind] = make_named(Kind::Module, "np.linalg");
          else if (mod == "scipy" || (mod == "scipy.special" && alias.empty()))
            globals_["scipy"] = make_named(Kind::Module, "scipy");  // scipy.special.f(...)
          else if (mod == "scipy.special")
            globals_[bind] = make_named(Kind::Module, "scipy.special");
          else
            fail(s.loc, "import of '" + mod + "' is not supported in a spec",
                 "a spec may import only numpy (as np), math, ml_dtypes and scipy.special");
        }
        break;
      case StmtKind::ImportFrom: {
        if (s.module == "__future__") break;
        if (s.module != "numpy" && s.module != "math" && s.module != "ml_dtypes" &&
            s.module != "scipy" && s.module != "scipy.special")
          fail(s.loc, "import from '" + s.module + "' is not supported in a spec",
               "a spec may import only numpy (as np), math, ml_dtypes and scipy.special");
        const std::string short_name = s.module == "numpy" ? "np" : s.module;
        auto mod = make_named(Kind::Module, short_name);
        for (auto& [name, alias] : s.names) {
          if (name == "*")
            fail(s.loc, "`from " + s.module + " import *` is not supported",
                 "use `import numpy as np`");
          globals_[alias.empty() ? name : alias] =
              attribute(mod, name, s.loc, short_name + "." + name);
        }
        break;
      }
      case StmtKind::Def: {
        auto f = make_named(Kind::Func, s.function->name);
        auto* fv = const_cast<Value*>(f.get());
        fv->fn = s.function;
        for (auto& p : s.function->params)
          fv->defaults.push_back(p.default_value ? eval(p.default_value) : nullptr);
        globals_[s.function->name] = f;
        break;
      }
      case StmtKind::Class: define_class(*s.cls); break;
      case StmtKind::Return: fail(s.loc, "'return' outside a function");
      default: {
        bool returned = false;
        exec(s, nullptr, &returned);
      }
    }
  }
}

// ---------------------------------------------------------------------------- entry

ir::Graph Elab::run() {
  run_module();

  // Choose the entry.
  std::vector<const FunctionDef*> funcs, candidates;
  for (auto& sp : module_.body)
    if (sp->kind == StmtKind::Def) {
      funcs.push_back(sp->function.get());
      if (fully_annotated(*sp->function)) candidates.push_back(sp->function.get());
    }
  add_class_entries(funcs, candidates);
  // Of several, the ones with a return annotation (a helper may annotate its arrays too).
  if (candidates.size() > 1 && options_.entry.empty()) {
    std::vector<const FunctionDef*> returning;
    for (auto* f : candidates)
      if (f->returns) returning.push_back(f);
    if (!returning.empty()) candidates = returning;
  }
  auto names = [](const std::vector<const FunctionDef*>& fs) {
    std::string s;
    for (auto* f : fs) s += (s.empty() ? "" : ", ") + f->name;
    return s;
  };
  const FunctionDef* entry = nullptr;
  SourceLoc file_start{1, 1};
  if (!options_.entry.empty()) {
    for (auto* f : funcs)
      if (f->name == options_.entry) entry = f;
    if (!entry)
      throw UserError("--entry: no function '" + options_.entry + "' in " + module_.file +
                      (funcs.empty() ? std::string(" (it defines no functions)")
                                     : "; its functions are " + names(funcs)));
  } else if (candidates.size() == 1) {
    entry = candidates[0];
  } else if (candidates.empty()) {
    if (funcs.empty())
      fail(file_start, "no entry function: the spec defines no functions",
           "write the kernel as def f(x: \"f32[M, K]\") -> \"f32[M, K]\": ...");
    const FunctionDef* partial = nullptr;
    for (auto* f : funcs) {
      bool any = names_an_array(f->returns.get());
      for (auto& p : f->params) any = any || names_an_array(p.annotation.get());
      if (any && !partial) partial = f;
    }
    if (partial)
      entry = partial;  // reported as missing annotations below
    else
      fail(funcs[0]->name_loc, "no entry function: no function has annotated parameters and return",
           "annotate the kernel, e.g. def " + funcs[0]->name + "(" +
               example_annotations(*funcs[0]) + ")");
  } else {
    fail(candidates[1]->name_loc,
         "ambiguous entry: functions " + names(candidates) + " are all annotated",
         "choose one with --entry NAME, or remove the annotations from the helpers");
  }
  check_class_entry(*entry);
  for (auto& p : entry->params)
    if (!p.annotation && !held_constant(p))
      fail(p.loc, "entry '" + entry->name + "' needs annotations on every parameter and the return",
           "write " + example_annotations(*entry));
  if (!entry->returns)
    fail(entry->name_loc, "entry '" + entry->name + "' needs a return annotation",
         "write -> \"f32[M, N]\" after the parameters");
  std::vector<const Param*> arrays;
  for (auto& p : entry->params) {
    if (held_constant(p)) continue;
    if (p.keyword_only || p.default_value)
      fail(p.loc, "entry parameter '" + p.name + "' may not have a default or be keyword-only",
           "an array parameter is a kernel input; a Python scalar parameter with a default (n: int "
           "= 12) is held constant");
    if (p.annotation->kind != ExprKind::String)
      fail(p.annotation->loc,
           "entry parameter '" + p.name + "' is a Python value without a default",
           "give it a default, which is held constant (n: int = 12), or annotate an array "
           "(\"f32[M, K]\")");
    arrays.push_back(&p);
  }

  // Annotations, dims and their bindings.
  graph_.entry = entry->name;
  const EntryTypes types = bind_entry_dims(*entry);

  // Inputs and the body.
  Scope scope;
  in_entry_ = true;
  for (auto& p : entry->params)
    if (held_constant(p)) scope[p.name] = eval(p.default_value);
  for (size_t i = 0; i < arrays.size(); ++i) {
    const auto& p = *arrays[i];
    const auto& [dtype, s] = types.params[i];
    check_shape(s, p.loc);
    graph_.params.push_back({p.name, dtype, s});
    ValueId id = builder_.input(static_cast<int>(i), p.name, dtype, s, p.loc);
    graph_.inputs.push_back(id);
    scope[p.name] = make_tensor(id);
  }
  enter_frame(&scope);
  call_stack_.push_back(entry);
  ValuePtr ret;
  bool returned = false;
  return_loc_ = {};
  exec_block(entry->body, &ret, &returned);
  SourceLoc ret_loc = return_loc_.valid() ? return_loc_ : entry->name_loc;
  if (!ret)
    fail(entry->name_loc, "entry '" + entry->name + "' does not return a value",
         "end it with `return ...`");

  std::vector<ValuePtr> outs;
  const size_t n_results = types.results.size();
  if (n_results == 1 && entry->returns->kind != ExprKind::Tuple)
    outs = {ret};
  else if (ret->kind == Kind::Tuple || ret->kind == Kind::List)
    outs = ret->items;
  else
    fail(ret_loc,
         "returns one value but the annotation names " + std::to_string(n_results) + " outputs",
         "return a tuple: return a, b");
  if (outs.size() != n_results)
    fail(ret_loc, "returns " + std::to_string(outs.size()) + " values but the annotation names " +
                      std::to_string(n_results) + " outputs");
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& [want_dtype, want] = types.results[i];
    std::string want_str = std::string(ir::dtype_name(want_dtype)) + ir::shape_str(want);
    const Value& v = *outs[i];
    ValueId id;
    if (v.kind == Kind::Tensor && !v.weak) {
      id = v.t;
    } else if (is_scalar(v)) {
      id = as_tensor(outs[i], ret_loc, want_dtype);
    } else {
      fail(ret_loc, "returns " + kind_name(v) + " where the annotation says " + want_str,
           "return an array");
    }
    std::string got = type_str(id);
    if (node(id).shape != want && node(id).shape.size() == want.size()) {
      bool ok = true;
      for (size_t d = 0; d < want.size(); ++d)
        ok = ok && same_at_bounds(node(id).shape[d], want[d]);
      if (ok)
        id = builder_.reshape(id, want, ret_loc);  // e.g. 2*(HD//2) -> HD, valid wherever numpy is
    }
    if (node(id).shape != want)
      fail(ret_loc, "returns " + got + " but the annotation says " + want_str,
           "fix the computation or the annotation; shapes must agree for every value of the dims");
    if (node(id).dtype == DType::F64 && want_dtype == DType::F32) {
      const std::string origin = float64_origin(graph_, id);
      if (!origin.empty())
        fail(ret_loc, "returns " + got + " but the annotation says " + want_str,
             origin + "; or add .astype(np.float32)");
    }
    if (node(id).dtype != want_dtype)
      fail(ret_loc, "returns " + got + " but the annotation says " + want_str,
           std::string("add .astype(") +
               (want_dtype == DType::F32    ? "np.float32"
                : want_dtype == DType::F64  ? "np.float64"
                : want_dtype == DType::F16  ? "np.float16"
                : want_dtype == DType::BF16 ? "ml_dtypes.bfloat16"
                : want_dtype == DType::I32  ? "np.int32"
                : want_dtype == DType::I64  ? "np.int64"
                                            : "np.bool_") +
               ")");
    graph_.results.push_back({"out" + std::to_string(i), want_dtype, want});
    graph_.outputs.push_back(id);
  }
  ir::verify(graph_);
  return std::move(graph_);
}

// ---------------------------------------------------------------------------- statements

void Elab::exec(const Stmt& s, ValuePtr* ret, bool* returned) {
  last_loc_ = s.loc;
  switch (s.kind) {
    case StmtKind::Pass: return;
    case StmtKind::Expr: {
      if (s.value && s.value->kind == ExprKind::String) return;  // docstring
      eval(s.value);
      return;
    }
    case StmtKind::Assign: {
      ValuePtr v = eval(s.value);
      for (auto& t : s.targets) assign(t, v);
      return;
    }
    case StmtKind::AnnAssign: {
      if (!s.value) return;
      assign(s.targets.at(0), eval(s.value));
      return;
    }
    case StmtKind::For: return exec_for(s, ret, returned);
    case StmtKind::If: return exec_if(s, ret, returned);
    case StmtKind::AugAssign: {
      const ExprPtr& t = s.targets.at(0);
      if (t->kind == ExprKind::Subscript) {
        ValuePtr cur = eval(t);
        assign_item(*t, binary(s.op, cur, eval(s.value), s.loc));
        return;
      }
      if (t->kind != ExprKind::Name)
        fail(t->loc,
             "augmented assignment to " +
                 std::string(t->kind == ExprKind::Subscript ? "an item" : "this target") +
                 " is not supported in a spec",
             "arrays are immutable here: write y = x " + s.op + " ... instead");
      ValuePtr cur = lookup(t->name, t->loc);
      ValuePtr v = eval(s.value);
      assign(t, binary(s.op, cur, v, s.loc));
      return;
    }
    case StmtKind::Return: {
      if (!ret) fail(s.loc, "'return' outside a function");
      *ret = s.value ? eval(s.value) : make_none();
      return_loc_ = s.value ? s.value->loc : s.loc;
      *returned = true;
      return;
    }
    case StmtKind::Assert: {
      ValuePtr c = eval(s.value);
      if (s.message) eval(s.message);
      if (c->kind == Kind::Tensor) return;  // a check on data, not on shapes: numpy's business
      if (!truthy(c, s.value->loc)) fail(s.value->loc, "assertion fails for these dims");
      return;
    }
    case StmtKind::Def:
      fail(s.loc, "nested function definitions are not supported in a spec",
           "define helpers at module level");
    case StmtKind::Class:
      fail(s.loc, "a class inside a function is not supported", "define it at module level");
    case StmtKind::Import:
    case StmtKind::ImportFrom:
      fail(s.loc, "imports inside a function are not supported",
           "import numpy and math at the top of the file");
  }
}

void Elab::assign(const ExprPtr& target, const ValuePtr& v) {
  switch (target->kind) {
    case ExprKind::Name: {
      if (v->kind == Kind::Tensor && !v->weak && in_entry_) {
        ir::Node& n = graph_.nodes[static_cast<size_t>(v->t)];
        if (n.kind != OpKind::Input && n.name.empty()) n.name = target->name;
      }
      (locals_ ? *locals_ : globals_)[target->name] = v;
      return;
    }
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<ValuePtr> items;
      if (v->kind == Kind::Tuple || v->kind == Kind::List) {
        items = v->items;
      } else if (v->kind == Kind::Tensor && !v->weak && !shape_of(*v).empty() &&
                 shape_of(*v)[0].is_constant() && *shape_of(*v)[0].as_constant() <= 64) {
        for (int64_t k = 0; k < *shape_of(*v)[0].as_constant(); ++k)
          items.push_back(subscript(v, {make_int(k)}, target->loc));
      } else {
        fail(target->loc,
             "cannot unpack " + kind_name(*v) + " into " + std::to_string(target->items.size()) +
                 " names",
             "unpack a tuple or list (e.g. the result of a helper or np.split)");
      }
      for (auto& t : target->items)
        if (t->kind == ExprKind::Starred)
          fail(t->loc, "starred assignment targets are not supported", "unpack every item by name");
      if (items.size() != target->items.size())
        fail(target->loc,
             "cannot unpack " + std::to_string(items.size()) + " values into " +
                 std::to_string(target->items.size()) + " names",
             "the number of names on the left must equal the number of values");
      for (size_t i = 0; i < items.size(); ++i) assign(target->items[i], items[i]);
      return;
    }
    case ExprKind::Subscript: return assign_item(*target, v);
    case ExprKind::Attribute: assign_attribute(*target, v); return;
    default: fail(target->loc, "cannot assign to this expression");
  }
}

// ---------------------------------------------------------------------------- calls

ValuePtr Elab::call_value(const ValuePtr& fn, const CallArgs& args, SourceLoc loc,
                          const std::string& shown) {
  if (fn->kind == Kind::Func && fn->self) return call_bound(*fn, args, loc);
  if (fn->kind == Kind::Class) return construct(fn, args, loc);
  if (fn->kind == Kind::Object) return call_object(fn, args, loc);
  if (fn->kind == Kind::Func) return call_function(*fn, args, loc);
  if (fn->kind == Kind::Builtin) return call_builtin(*fn, args, loc);
  if (fn->kind == Kind::DType) {
    CallArgs a2 = args;
    auto r = make_named(Kind::Builtin, "dtype_call");
    const_cast<Value*>(r.get())->dtype = fn->dtype;
    return call_builtin(*r, a2, loc);
  }
  fail(loc, "'" + shown + "' is " + kind_name(*fn) + ", which cannot be called");
}

ValuePtr Elab::call_function(const Value& fn, const CallArgs& args, SourceLoc loc) {
  const FunctionDef& f = *fn.fn;
  for (auto* g : call_stack_)
    if (g == &f)
      fail(loc,
           "recursive call to '" + f.name +
               "': helpers are inlined at each call, so they cannot recurse",
           "write the computation without recursion");
  if (call_stack_.size() > 64) fail(loc, "helpers nested too deeply");
  Scope scope;
  if (const Scope* live = live_scope(fn))
    scope = *live;
  else if (fn.closure)
    scope = *fn.closure;
  size_t npos = 0;
  for (auto& p : f.params) npos += p.keyword_only ? 0 : 1;
  if (args.pos.size() > npos)
    fail(loc, f.name + "() takes " + std::to_string(npos) + " positional argument" +
                  (npos == 1 ? "" : "s") + " but " + std::to_string(args.pos.size()) +
                  " were given");
  size_t k = 0;
  std::set<std::string> bound;
  for (size_t i = 0; i < f.params.size() && k < args.pos.size(); ++i)
    if (!f.params[i].keyword_only) {
      scope[f.params[i].name] = args.pos[k++];
      bound.insert(f.params[i].name);
    }
  for (size_t j = 0; j < args.kw.size(); ++j) {
    // Plain references, not a structured binding: clang 14 cannot capture bindings in lambdas.
    const std::string& name = args.kw[j].first;
    const auto& v = args.kw[j].second;
    auto it = std::find_if(f.params.begin(), f.params.end(),
                           [&](const Param& p) { return p.name == name; });
    if (it == f.params.end())
      fail(args.kw_loc[j], f.name + "() got an unexpected keyword argument '" + name + "'");
    if (bound.count(name))
      fail(args.kw_loc[j], f.name + "() got multiple values for argument '" + name + "'");
    scope[name] = v;
    bound.insert(name);
  }
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (bound.count(f.params[i].name)) continue;
    if (i < fn.defaults.size() && fn.defaults[i])
      scope[f.params[i].name] = fn.defaults[i];
    else
      fail(loc, f.name + "() missing required argument '" + f.params[i].name + "'");
  }
  Scope* saved = locals_;
  enter_frame(&scope);
  call_stack_.push_back(&f);
  call_sites_.push_back(loc);
  ValuePtr ret;
  bool returned = false;
  exec_block(f.body, &ret, &returned);
  call_sites_.pop_back();
  call_stack_.pop_back();
  leave_frame(saved);
  return ret ? ret : make_none();
}

// ---------------------------------------------------------------------------- expressions

ValuePtr Elab::eval(const ExprPtr& e) {
  if (!e) fail(last_loc_, "missing expression");
  if (++depth_ > kMaxDepth) {
    depth_ = 0;
    fail(e->loc, "expression nested too deeply");
  }
  SourceLoc saved = last_loc_;
  if (e->loc.valid()) last_loc_ = e->loc;
  ValuePtr r = eval_inner(*e);
  last_loc_ = saved;
  --depth_;
  return r;
}

ValuePtr Elab::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name: return lookup(e.name, e.loc);
    case ExprKind::Int: return make_int(e.int_value);
    case ExprKind::Float: return make_float(e.float_value);
    case ExprKind::String: return make_str(e.text);
    case ExprKind::Bool: return make_bool(e.bool_value);
    case ExprKind::None: return make_none();
    case ExprKind::Ellipsis: {
      auto r = std::make_shared<Value>();
      r->kind = Kind::Ellipsis;
      return r;
    }
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<ValuePtr> items;
      for (auto& it : e.items) {
        if (it->kind == ExprKind::Starred) {
          ValuePtr v = eval(it->value);
          if (v->kind != Kind::Tuple && v->kind != Kind::List)
            fail(it->loc, "can only unpack a tuple or list with *");
          items.insert(items.end(), v->items.begin(), v->items.end());
        } else {
          items.push_back(eval(it));
        }
        if (items.size() > 4096) fail(e.loc, "tuple too long");
      }
      return make_seq(e.kind == ExprKind::Tuple ? Kind::Tuple : Kind::List, std::move(items));
    }
    case ExprKind::Dict: {
      auto r = std::make_shared<Value>();
      r->kind = Kind::Dict;
      for (size_t i = 0; i < e.keys.size() && i < e.items.size(); ++i) {
        if (!e.keys[i]) fail(e.loc, "dict unpacking (**) is not supported");
        ValuePtr k = eval(e.keys[i]);
        if (k->kind != Kind::Str) fail(e.keys[i]->loc, "dict keys must be strings in a spec");
        ValuePtr v = eval(e.items[i]);
        auto pos = std::find(r->keys.begin(), r->keys.end(), k->s);
        if (pos != r->keys.end())
          r->items[static_cast<size_t>(pos - r->keys.begin())] = v;
        else {
          r->keys.push_back(k->s);
          r->items.push_back(v);
        }
      }
      return r;
    }
    case ExprKind::Attribute: {
      ValuePtr base = eval(e.value);
      if (base->kind == Kind::Object || base->kind == Kind::Class)
        return member(base, e.name, e.op_loc.valid() ? e.op_loc : e.loc);
      std::string shown = e.name;
      if (e.value->kind == ExprKind::Name)
        shown = e.value->name + "." + e.name;
      else if (e.value->kind == ExprKind::Attribute && e.value->value &&
               e.value->value->kind == ExprKind::Name)
        shown = e.value->value->name + "." + e.value->name + "." + e.name;
      if (base->kind == Kind::Module) shown = base->s + "." + e.name;
      return attribute(base, e.name, e.loc, shown);
    }
    case ExprKind::Call: {
      ValuePtr fn = eval(e.value);
      CallArgs args;
      for (auto& a : e.items) {
        if (a->kind == ExprKind::Starred) {
          ValuePtr v = eval(a->value);
          if (v->kind != Kind::Tuple && v->kind != Kind::List)
            fail(a->loc, "can only unpack a tuple or list with *");
          for (auto& x : v->items) {
            args.pos.push_back(x);
            args.pos_loc.push_back(a->loc);
          }
        } else {
          args.pos.push_back(eval(a));
          args.pos_loc.push_back(a->loc);
        }
      }
      for (auto& k : e.keywords) {
        if (k.name.empty()) {
          add_kwargs(eval(k.value), k.loc, args);
          continue;
        }
        args.kw.push_back({k.name, eval(k.value)});
        args.kw_loc.push_back(k.loc);
      }
      std::string shown = e.value->kind == ExprKind::Name ? e.value->name : fn->s;
      if (fn->kind == Kind::Builtin || fn->kind == Kind::Func) shown = fn->s;
      return call_value(fn, args, e.loc, shown);
    }
    case ExprKind::Subscript: {
      ValuePtr base = eval(e.value);
      std::vector<ValuePtr> idx;
      for (auto& it : e.items) {
        ValuePtr range = range_index(base, *it);
        idx.push_back(range ? range : eval(it));
      }
      return subscript(base, idx, e.loc);
    }
    case ExprKind::Slice: {
      auto r = std::make_shared<Value>();
      r->kind = Kind::Slice;
      for (auto* p : {&e.lower, &e.upper, &e.step}) r->items.push_back(*p ? eval(*p) : nullptr);
      return r;
    }
    case ExprKind::Unary: {
      ValuePtr v = eval(e.value);
      if (e.op == "not") {
        if (v->kind == Kind::Tensor && !v->weak)
          fail(e.op_loc.valid() ? e.op_loc : e.loc, "`not` on an array is ambiguous",
               "use ~mask or np.logical_not(mask)");
        return make_bool(!truthy(v, e.loc));
      }
      return unary(e.op, v, e.op_loc.valid() ? e.op_loc : e.loc);
    }
    case ExprKind::Binary: {
      ValuePtr a = eval(e.lhs);
      ValuePtr c = eval(e.rhs);
      return binary(e.op, a, c, e.op_loc.valid() ? e.op_loc : e.loc);
    }
    case ExprKind::Compare: {
      if (e.items.size() < 2 || e.ops.size() + 1 != e.items.size())
        fail(e.loc, "malformed comparison");
      ValuePtr lhs = eval(e.items[0]);
      ValuePtr result;
      for (size_t i = 0; i < e.ops.size(); ++i) {
        ValuePtr rhs = eval(e.items[i + 1]);
        ValuePtr r = compare(e.ops[i], lhs, rhs, e.items[i + 1]->loc.valid() ? e.loc : e.loc);
        if (e.ops.size() > 1 && r->kind == Kind::Tensor && !r->weak)
          fail(e.loc, "chained comparisons of arrays are ambiguous", "write (a < x) & (x < b)");
        if (!result)
          result = r;
        else
          result = make_bool(truthy(result, e.loc) && truthy(r, e.loc));
        lhs = rhs;
      }
      return result;
    }
    case ExprKind::BoolOp: {
      ValuePtr last;
      for (auto& it : e.items) {
        last = eval(it);
        if (last->kind == Kind::Tensor && !last->weak)
          fail(it->loc, "`" + e.op + "` on an array is ambiguous",
               std::string("use ") + (e.op == "and" ? "&" : "|") + " with parentheses: (a > 0) " +
                   (e.op == "and" ? "&" : "|") + " (b > 0)");
        bool t = truthy(last, it->loc);
        if (e.op == "and" ? !t : t) return last;
      }
      return last ? last : make_none();
    }
    case ExprKind::IfExp: {
      if (e.items.size() != 3) fail(e.loc, "malformed conditional expression");
      ValuePtr c = eval(e.items[1]);
      if (c->kind == Kind::Tensor)
        fail(e.items[1]->loc, "a conditional expression on array values is not supported",
             "use np.where(cond, a, b)");
      return truthy(c, e.items[1]->loc) ? eval(e.items[0]) : eval(e.items[2]);
    }
    case ExprKind::Starred: fail(e.loc, "*expression is only allowed in calls and tuple displays");
    case ExprKind::Lambda: return make_lambda(e);
    case ExprKind::ListComp:
    case ExprKind::DictComp: return eval_list_comp(e);
    case ExprKind::FString: return eval_fstring(e);
  }
  fail(e.loc, "unsupported expression");
}

bool Elab::truthy(const ValuePtr& v, SourceLoc loc) {
  switch (v->kind) {
    case Kind::None: return false;
    case Kind::Bool: return v->b;
    case Kind::Int:
      if (auto c = v->i.as_constant()) return *c != 0;
      return eval_dim(v->i, loc) != 0;
    case Kind::Float: return v->f != 0.0;
    case Kind::Str: return !v->s.empty();
    case Kind::Tuple:
    case Kind::List:
    case Kind::Dict: return !v->items.empty();
    case Kind::Tensor:
      fail(loc, "the truth value of an array depends on its data",
           "a spec cannot branch on data; use np.where(cond, a, b)");
    default: return true;
  }
}

DimExpr Elab::to_dim(const ValuePtr& v, SourceLoc loc, const std::string& what) {
  if (v->kind == Kind::Int) return v->i;
  if (v->kind == Kind::Bool) return DimExpr::constant(v->b ? 1 : 0);
  // A weak tensor is a Python float known only symbolically (n * 0.5, math.sqrt(n)): not
  // data-dependent, but still not an integer size, and saying "array values" would mislead.
  if (v->kind == Kind::Tensor && v->weak)
    fail(loc, what + " must be an integer, but it is a float computed from a dim",
         "compute sizes with integers (n // 2, n * 2), then scale: np.arange(n) * 0.5");
  if (v->kind == Kind::Tensor)
    fail(loc,
         "data-dependent shape: " + what +
             " is computed from array values; the shape of every value must follow from the dims",
         "use sizes from the dims (x.shape[i], constants); use np.where(mask, x, 0) to keep the "
         "shape");
  fail(loc, what + " must be an integer, not " + kind_name(*v));
}

int64_t Elab::to_const_int(const ValuePtr& v, SourceLoc loc, const std::string& what) {
  DimExpr d = to_dim(v, loc, what);
  if (auto c = d.as_constant()) return *c;
  fail(loc, what + " must be a constant integer, not the dim expression " + d.str());
}

}  // namespace elab

ir::Graph elaborate(const Module& module, const SpecOptions& options) {
  elab::Elab el(module, options);
  return el.run();
}

}  // namespace ollie::spec
