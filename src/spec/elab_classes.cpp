// Model classes (`class RMSNorm:` with `__init__` storing arrays on self and methods
// computing with them), inlined like helpers: a class is a table of methods and constants,
// an object a table of attributes filled by its `__init__`, and a class entry `C.m` a
// function of the constructor's and the method's parameters (docs/spec-language.md).
#include <algorithm>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

ValuePtr find_member(const Value& v, const std::string& name) {
  for (size_t i = 0; i < v.keys.size(); ++i)
    if (v.keys[i] == name) return v.items[i];
  return nullptr;
}

void set_member(Value& v, const std::string& name, const ValuePtr& value) {
  for (size_t i = 0; i < v.keys.size(); ++i)
    if (v.keys[i] == name) {
      v.items[i] = value;
      return;
    }
  v.keys.push_back(name);
  v.items.push_back(value);
}

// The arguments with the object first, as Python passes `self`.
CallArgs with_self(const ValuePtr& self, const CallArgs& args, SourceLoc loc) {
  CallArgs a = args;
  a.pos.insert(a.pos.begin(), self);
  a.pos_loc.insert(a.pos_loc.begin(), loc);
  return a;
}

// "its attributes: weight, eps; its methods: forward", for a hint.
std::string contents(const Value& obj) {
  std::string attrs, methods;
  for (auto& k : obj.keys) attrs += (attrs.empty() ? "" : ", ") + k;
  for (size_t i = 0; i < obj.cls->keys.size(); ++i) {
    const std::string& k = obj.cls->keys[i];
    if (k == "__init__") continue;
    std::string& list = obj.cls->items[i]->kind == Kind::Func ? methods : attrs;
    list += (list.empty() ? "" : ", ") + k;
  }
  return "its attributes: " + (attrs.empty() ? std::string("(none)") : attrs) +
         "; its methods: " + (methods.empty() ? std::string("(none)") : methods);
}

std::shared_ptr<Expr> make_expr(ExprKind kind, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

std::shared_ptr<Expr> name_expr(const std::string& name, SourceLoc loc) {
  auto e = make_expr(ExprKind::Name, loc);
  e->name = name;
  return e;
}

// Where the method returns its value: errors on the entry's result point there.
SourceLoc return_loc(const FunctionDef& m) {
  SourceLoc at = m.name_loc;
  for (auto& st : m.body)
    if (st->kind == StmtKind::Return && st->value) at = st->value->loc;
  return at;
}

// The parameters after `self` without a default: the kernel takes them; a parameter with
// a default is held at it.
std::vector<const Param*> kernel_params(const FunctionDef* f) {
  std::vector<const Param*> out;
  if (!f) return out;
  for (size_t i = 1; i < f->params.size(); ++i)
    if (!f->params[i].default_value) out.push_back(&f->params[i]);
  return out;
}

bool method_annotated(const FunctionDef& m) {
  std::vector<const Param*> ps = kernel_params(&m);
  for (const Param* p : ps)
    if (!p->annotation) return false;
  return !ps.empty() || m.returns;
}

// Adds `p` to the synthesized entry and passes it by keyword in `call`.
void forward_param(FunctionDef& entry, Expr& call, const Param& p) {
  Param q = p;
  q.keyword_only = false;
  entry.params.push_back(q);
  call.keywords.push_back({p.name, name_expr(p.name, p.loc), p.loc});
}

}  // namespace

void Elab::define_class(const ClassDef& c) {
  auto cls = std::make_shared<Value>();
  cls->kind = Kind::Class;
  cls->s = c.name;
  Scope members;
  Scope* saved = locals_;
  locals_ = &members;
  for (auto& sp : c.body) {
    const Stmt& s = *sp;
    last_loc_ = s.loc;
    if (s.kind == StmtKind::Def) {
      auto f = make_named(Kind::Func, s.function->name);
      auto* fv = const_cast<Value*>(f.get());
      fv->fn = s.function;
      for (auto& p : s.function->params)
        fv->defaults.push_back(p.default_value ? eval(p.default_value) : nullptr);
      members[s.function->name] = f;
    } else if (s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign ||
               s.kind == StmtKind::Expr || s.kind == StmtKind::Pass) {
      bool returned = false;
      exec(s, nullptr, &returned);
    } else {
      fail(s.loc, "a class body may hold only methods, docstrings and constants",
           "move this statement into __init__ or a method");
    }
  }
  locals_ = saved;
  for (auto& [name, value] : members) set_member(*cls, name, value);
  globals_[c.name] = cls;
}

ValuePtr Elab::construct(const ValuePtr& cls, const CallArgs& args, SourceLoc loc) {
  auto obj = std::make_shared<Value>();
  obj->kind = Kind::Object;
  obj->s = cls->s;
  obj->cls = cls;
  ValuePtr init = find_member(*cls, "__init__");
  if (!init || init->kind != Kind::Func) {
    if (!args.pos.empty() || !args.kw.empty())
      fail(loc, cls->s + "() takes no arguments",
           "define __init__(self, ...) in class " + cls->s + " to receive them");
    return obj;
  }
  constructing_.push_back(obj.get());
  ValuePtr r = call_function(*init, with_self(obj, args, loc), loc);
  constructing_.pop_back();
  if (!is_none(r))
    fail(loc, "__init__ of class " + cls->s + " returns " + kind_name(*r),
         "__init__ sets attributes on self and returns nothing");
  return obj;
}

ValuePtr Elab::call_bound(const Value& method, const CallArgs& args, SourceLoc loc) {
  return call_function(method, with_self(method.self, args, loc), loc);
}

ValuePtr Elab::call_object(const ValuePtr& obj, const CallArgs& args, SourceLoc loc) {
  ValuePtr call = find_member(*obj->cls, "__call__");
  if (!call || call->kind != Kind::Func)
    fail(loc, "a '" + obj->s + "' object is not callable: class " + obj->s + " has no __call__",
         "call a method (obj.forward(x)), or define def __call__(self, x): return "
         "self.forward(x)");
  return call_function(*call, with_self(obj, args, loc), loc);
}

ValuePtr Elab::member(const ValuePtr& base, const std::string& name, SourceLoc loc) {
  if (base->kind == Kind::Class) {
    if (ValuePtr v = find_member(*base, name)) return v;
    fail(loc, "class '" + base->s + "' has no attribute '" + name + "'",
         "methods and constants defined in the class body are its attributes");
  }
  if (ValuePtr v = find_member(*base, name)) return v;
  if (ValuePtr v = find_member(*base->cls, name)) {
    if (v->kind != Kind::Func) return v;
    auto bound = std::make_shared<Value>(*v);
    bound->self = base;
    return bound;
  }
  if (std::find(constructing_.begin(), constructing_.end(), base.get()) != constructing_.end())
    fail(loc,
         "attribute '" + name + "' of the '" + base->s + "' object is read before __init__ sets it",
         "set self." + name + " = ... earlier in __init__");
  fail(loc, "'" + base->s + "' object has no attribute '" + name + "'", contents(*base));
}

void Elab::assign_attribute(const Expr& target, const ValuePtr& v) {
  ValuePtr base = eval(target.value);
  SourceLoc at = target.op_loc.valid() ? target.op_loc : target.loc;
  if (base->kind == Kind::Object) {
    for (Value* o : constructing_)
      if (o == base.get()) {
        set_member(*o, target.name, v);
        return;
      }
    fail(at,
         "assigning to attribute '" + target.name + "' of a '" + base->s +
             "' object outside __init__ is not supported",
         "an object is fixed once __init__ returns: keep the value in a local variable (" +
             target.name + " = ...) or set it in __init__");
  }
  fail(at, "attribute assignment is not supported in a spec",
       "only self." + target.name + " = ... inside a class's __init__ sets an attribute");
}

// ---------------------------------------------------------------------------- entries

void Elab::add_class_entries(std::vector<const FunctionDef*>& funcs,
                             std::vector<const FunctionDef*>& candidates) {
  class_entries_.clear();
  for (auto& sp : module_.body) {
    if (sp->kind != StmtKind::Class) continue;
    const ClassDef& c = *sp->cls;
    const FunctionDef* init = nullptr;
    for (auto& st : c.body)
      if (st->kind == StmtKind::Def && st->function->name == "__init__") init = st->function.get();
    for (auto& st : c.body) {
      if (st->kind != StmtKind::Def || st->function->name == "__init__") continue;
      const FunctionDef& m = *st->function;
      auto entry = std::make_shared<FunctionDef>();
      entry->name = c.name + "." + m.name;
      entry->loc = m.loc;
      entry->name_loc = m.name_loc;
      entry->returns = m.returns;
      auto ctor = make_expr(ExprKind::Call, c.name_loc);
      ctor->value = name_expr(c.name, c.name_loc);
      for (const Param* p : kernel_params(init)) forward_param(*entry, *ctor, *p);
      auto bound = make_expr(ExprKind::Attribute, m.name_loc);
      bound->value = ctor;
      bound->name = m.name;
      auto call = make_expr(ExprKind::Call, return_loc(m));
      call->value = bound;
      for (const Param* p : kernel_params(&m)) forward_param(*entry, *call, *p);
      auto ret = std::make_shared<Stmt>();
      ret->kind = StmtKind::Return;
      ret->loc = m.loc;
      ret->value = call;
      entry->body.push_back(ret);
      class_entries_.push_back({entry, &c, init, &m});
      funcs.push_back(entry.get());
      if (method_annotated(m)) candidates.push_back(entry.get());
    }
  }
}

void Elab::check_class_entry(const FunctionDef& entry) const {
  for (const ClassEntry& ce : class_entries_) {
    if (ce.entry.get() != &entry) continue;
    const std::vector<const Param*> ctor = kernel_params(ce.init);
    for (const Param* p : ctor) {
      if (!p->annotation)
        fail(p->loc,
             "constructor parameter '" + p->name + "' of " + ce.cls->name +
                 " has no annotation, and the entry " + entry.name + " takes it as an array",
             "annotate it, e.g. " + p->name +
                 ": \"f32[D]\", or give it a default to hold it constant");
      const Expr& a = *p->annotation;
      if (a.kind == ExprKind::Name && (a.name == "int" || a.name == "float" || a.name == "bool"))
        fail(p->loc,
             "constructor parameter '" + p->name + "' of " + ce.cls->name + " is a Python " +
                 a.name + " without a default",
             "give it a default (" + p->name + ": " + a.name +
                 " = ...): the entry holds it constant");
    }
    for (const Param* p : kernel_params(ce.method))
      for (const Param* q : ctor)
        if (q->name == p->name)
          fail(p->loc,
               "parameter '" + p->name + "' of " + entry.name + " has the name of a parameter of " +
                   ce.cls->name + ".__init__",
               "rename one of them: both are parameters of the kernel " + entry.name);
  }
}

}  // namespace ollie::spec::elab
