// Static lists and the Python that builds them, evaluated while elaborating: list
// comprehensions, lambdas (inlined at each call), zip/enumerate/map/reversed, dict methods,
// **kwargs from a dict and f-strings.
#include <charconv>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

constexpr size_t kMaxItems = 4096;

// Python's str() of a float: the shortest text that reads back as the same double.
std::string float_text(double f) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------- comprehensions

ValuePtr Elab::eval_list_comp(const Expr& e) {
  // The loop variables do not leak out; lambdas made here keep this scope (late binding).
  auto inner = std::make_shared<Scope>(locals_ ? *locals_ : Scope{});
  Scope* saved = locals_;
  enter_frame(inner.get(), inner);
  std::vector<ValuePtr> out;
  try {
    comprehend(e, 0, out);
  } catch (...) {
    leave_frame(saved);
    throw;
  }
  leave_frame(saved);
  if (e.kind == ExprKind::ListComp) return make_seq(Kind::List, std::move(out));
  auto dict = std::make_shared<Value>();  // out holds (key, value) pairs
  dict->kind = Kind::Dict;
  for (auto& kv : out) {
    const std::string& k = kv->items[0]->s;
    auto pos = std::find(dict->keys.begin(), dict->keys.end(), k);
    if (pos != dict->keys.end()) {
      dict->items[static_cast<size_t>(pos - dict->keys.begin())] = kv->items[1];
    } else {
      dict->keys.push_back(k);
      dict->items.push_back(kv->items[1]);
    }
  }
  return dict;
}

void Elab::comprehend(const Expr& e, size_t clause, std::vector<ValuePtr>& out) {
  if (clause == e.comprehension.size()) {
    if (e.kind == ExprKind::DictComp) {
      ValuePtr key = eval(e.keys.at(0));
      if (key->kind != Kind::Str) fail(e.keys[0]->loc, "dict keys must be strings in a spec");
      out.push_back(make_seq(Kind::Tuple, {key, eval(e.value)}));
    } else {
      out.push_back(eval(e.value));
    }
    if (out.size() > kMaxItems) fail(e.loc, "list comprehension too long for a spec");
    return;
  }
  const ComprehensionFor& c = e.comprehension[clause];
  for (auto& item : static_items(eval(c.iter), c.iter->loc, "iterate a comprehension")) {
    count_iteration(c.iter->loc);
    assign(c.target, item);
    bool keep = true;
    for (auto& cond : c.conditions) {
      ValuePtr v = eval(cond);
      if (v->kind == Kind::Tensor && !v->weak)
        fail(cond->loc,
             "a comprehension's `if` on an array would make the list's length depend "
             "on the data",
             "filter on Python values (indices, constants, dims), or keep every item and select "
             "with np.where");
      keep = keep && truthy(v, cond->loc);
    }
    if (keep) comprehend(e, clause + 1, out);
  }
}

// ---------------------------------------------------------------------------- lambdas

ValuePtr Elab::make_lambda(const Expr& e) {
  auto f = std::make_shared<Value>();
  f->kind = Kind::Func;
  f->s = "<lambda>";
  f->fn = e.function;
  for (auto& p : e.function->params)
    f->defaults.push_back(p.default_value ? eval(p.default_value) : nullptr);
  if (!frames_.empty() && frames_.back().owned) {
    f->closure = frames_.back().owned;
  } else {
    f->closure = std::make_shared<const Scope>(locals_ ? *locals_ : Scope{});
    if (locals_ && !frames_.empty()) {
      f->closure_scope = frames_.back().scope;
      f->closure_frame = frames_.back().serial;
    }
  }
  return f;
}

void Elab::enter_frame(Scope* scope, std::shared_ptr<Scope> owned) {
  frames_.push_back({scope, next_frame_++, std::move(owned)});
  locals_ = scope;
}

void Elab::leave_frame(Scope* saved) {
  frames_.pop_back();
  locals_ = saved;
}

const Scope* Elab::live_scope(const Value& lambda) const {
  for (auto& f : frames_)
    if (f.serial == lambda.closure_frame && f.scope == lambda.closure_scope) return f.scope;
  return nullptr;
}

void Elab::rebind_aliases(const Value* old, const ValuePtr& updated) {
  for (auto& frame : frames_)
    for (auto& [name, v] : *frame.scope)
      if (v.get() == old) v = updated;
  for (auto& [name, v] : globals_)
    if (v.get() == old) v = updated;
}

// ---------------------------------------------------------------------------- strings, kwargs

ValuePtr Elab::eval_fstring(const Expr& e) {
  std::string text;
  for (auto& part : e.items) {
    if (part->kind == ExprKind::String) {
      text += part->text;
      continue;
    }
    ValuePtr v = eval(part);
    switch (v->kind) {
      case Kind::Str: text += v->s; break;
      case Kind::Bool: text += v->b ? "True" : "False"; break;
      case Kind::Float: text += float_text(v->f); break;
      case Kind::Int:
        if (auto k = v->i.as_constant()) {
          text += std::to_string(*k);
          break;
        }
        fail(part->loc,
             "f-string field is the dim expression " + v->i.str() + ", whose text is not known",
             "format constants only (loop indices, module constants)");
      default:
        fail(part->loc, "f-string field is " + kind_name(*v),
             "format strings, ints, floats and bools only");
    }
  }
  return make_str(text);
}

void Elab::add_kwargs(const ValuePtr& dict, SourceLoc loc, CallArgs& args) {
  if (dict->kind != Kind::Dict)
    fail(loc, "** needs a dict, not " + kind_name(*dict),
         "build the keyword arguments as a dict: dict(w=w, b=b) or {\"w\": w, \"b\": b}");
  for (size_t i = 0; i < dict->keys.size(); ++i) {
    for (auto& kw : args.kw)
      if (kw.first == dict->keys[i])
        fail(loc, "got multiple values for keyword argument '" + kw.first + "'");
    args.kw.push_back({dict->keys[i], dict->items[i]});
    args.kw_loc.push_back(loc);
  }
}

// ---------------------------------------------------------------------------- builtins

void Elab::add_static_builtins(BuiltinTable& t) {
  add_builtins(t, {"zip"}, &Elab::py_zip);
  add_builtins(t, {"enumerate"}, &Elab::py_enumerate);
  add_builtins(t, {"map"}, &Elab::py_map);
  add_builtins(t, {"reversed"}, &Elab::py_reversed);
  add_builtins(t, {"dict.get", "dict.keys", "dict.values", "dict.items"}, &Elab::dict_method);
}

// zip(a, b, ...): tuples of items at equal positions, as long as the shortest.
ValuePtr Elab::py_zip(const BuiltinCall& c) {
  if (!c.args.kw.empty()) fail(c.args.kw_loc[0], "zip() keyword arguments are not supported");
  std::vector<std::vector<ValuePtr>> seqs;
  size_t n = c.args.pos.empty() ? 0 : SIZE_MAX;
  for (size_t i = 0; i < c.args.pos.size(); ++i) {
    seqs.push_back(static_items(c.args.pos[i], c.args.pos_loc[i], "zip"));
    n = std::min(n, seqs.back().size());
  }
  std::vector<ValuePtr> out;
  for (size_t k = 0; k < n; ++k) {
    std::vector<ValuePtr> row;
    for (auto& s : seqs) row.push_back(s[k]);
    out.push_back(make_seq(Kind::Tuple, row));
  }
  return make_seq(Kind::List, out);
}

ValuePtr Elab::py_enumerate(const BuiltinCall& c) {
  auto a = c.sig({"iterable", "start"}, 1);
  DimExpr k = a[1] ? to_dim(a[1], c.loc, "enumerate() start") : DimExpr::constant(0);
  std::vector<ValuePtr> out;
  for (auto& item : static_items(a[0], c.loc, "enumerate")) {
    out.push_back(make_seq(Kind::Tuple, {make_int(k), item}));
    k = k + DimExpr::constant(1);
  }
  return make_seq(Kind::List, out);
}

// map(f, xs, ...): f called (inlined) on the items at each position.
ValuePtr Elab::py_map(const BuiltinCall& c) {
  if (c.args.pos.size() < 2 || !c.args.kw.empty())
    fail(c.loc, "map() takes a function and one or more lists", "write map(f, xs)");
  CallArgs zipped;
  zipped.pos.assign(c.args.pos.begin() + 1, c.args.pos.end());
  zipped.pos_loc.assign(c.args.pos_loc.begin() + 1, c.args.pos_loc.end());
  ValuePtr rows = py_zip(BuiltinCall(*this, *make_named(Kind::Builtin, "zip"), zipped, c.loc));
  std::vector<ValuePtr> out;
  for (auto& row : rows->items) {
    CallArgs one;
    one.pos = row->items;
    one.pos_loc.assign(row->items.size(), c.args.pos_loc[0]);
    out.push_back(call_value(c.args.pos[0], one, c.loc, "map's function"));
  }
  return make_seq(Kind::List, out);
}

ValuePtr Elab::py_reversed(const BuiltinCall& c) {
  auto items = static_items(c.sig({"sequence"}, 1)[0], c.loc, "reverse");
  return make_seq(Kind::List, std::vector<ValuePtr>(items.rbegin(), items.rend()));
}

// d.get(key, default), d.keys(), d.values(), d.items()
ValuePtr Elab::dict_method(const BuiltinCall& c) {
  const Value& d = *c.fn.self;
  if (c.name == "dict.get") {
    auto a = c.sig({"key", "default"}, 1);
    if (a[0]->kind != Kind::Str) fail(c.loc, "dict keys are strings in a spec");
    auto it = std::find(d.keys.begin(), d.keys.end(), a[0]->s);
    if (it != d.keys.end()) return d.items[static_cast<size_t>(it - d.keys.begin())];
    return a[1] ? a[1] : make_none();
  }
  c.sig({}, 0);
  std::vector<ValuePtr> out;
  for (size_t i = 0; i < d.keys.size(); ++i) {
    ValuePtr k = make_str(d.keys[i]);
    out.push_back(c.name == "dict.keys"     ? k
                  : c.name == "dict.values" ? d.items[i]
                                            : make_seq(Kind::Tuple, {k, d.items[i]}));
  }
  return make_seq(Kind::List, out);
}

}  // namespace ollie::spec::elab
