// The entry's annotations and dims: "f32[T, 3*D]" parsed into dim expressions, the sizes
// from DIMS and --dims, and RELATIONS ("D = H * HD") that make a dim derived: replaced by
// its expression over the free dims everywhere, so shapes unify wherever the relation holds.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

const char* kAnnHint =
    "write a dtype and dims in brackets, e.g. \"f32[M, K]\", \"f32[T, 3*D]\" or \"f64[]\" for a "
    "scalar";
const char* kRelHint =
    "write RELATIONS = [\"D = H * HD\"]: a dim name, '=', a product or sum of "
    "dims and integers";

// Sizes (and products of literals) above this are reported rather than computed.
constexpr double kMaxDimMagnitude = 1e15;

SourceLoc inside(SourceLoc str_loc, int offset) { return {str_loc.line, str_loc.col + 1 + offset}; }

// One dim expression as written, names unresolved: `3*D`, `H*HD`, `S + 1`.
struct DimAst {
  char op = 0;  // 0: a leaf (a name, or an integer when name is empty); '+', '-', '*'
  std::string name;
  int64_t value = 0;
  int offset = 0;  // inside the string contents
  std::vector<DimAst> kids;
};

// A recursive-descent reader of dim expressions inside an annotation or relation string.
class DimReader {
 public:
  DimReader(const Elab& el, const Expr& str, const char* hint, const std::string& what)
      : el_(el), e_(str), s_(str.text), hint_(hint), what_(what) {}

  size_t pos = 0;
  void ws() {
    while (pos < s_.size() && (s_[pos] == ' ' || s_[pos] == '\t')) ++pos;
  }
  bool at_end() const { return pos >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos]; }
  SourceLoc at(size_t off) const { return inside(e_.loc, static_cast<int>(off)); }
  [[noreturn]] void fail(size_t off, const std::string& msg, const std::string& hint = "") const {
    el_.fail(at(off), msg, hint.empty() ? hint_ : hint);
  }
  std::string name() {
    size_t p0 = pos;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) ++pos;
    return s_.substr(p0, pos - p0);
  }

  DimAst sum() {
    DimAst lhs = product();
    for (ws(); peek() == '+' || peek() == '-'; ws()) {
      char op = peek();
      int off = static_cast<int>(pos++);
      lhs = DimAst{op, "", 0, off, {std::move(lhs), product()}};
    }
    return lhs;
  }

 private:
  DimAst product() {
    DimAst lhs = atom();
    for (ws(); peek() == '*' || peek() == '/'; ws()) {
      if (peek() == '/')
        fail(pos, "division in a dim of " + what_ + " is not supported",
             "state the relation the other way: for HD = D / H write RELATIONS = [\"D = H * HD\"] "
             "and use HD");
      int off = static_cast<int>(pos++);
      lhs = DimAst{'*', "", 0, off, {std::move(lhs), atom()}};
    }
    return lhs;
  }

  DimAst atom() {
    ws();
    size_t p0 = pos;
    if (++depth_ > 32) fail(p0, "dim expression nested too deeply in " + what_);
    DimAst out;
    out.offset = static_cast<int>(p0);
    if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos;
      if (pos - p0 > 12) fail(p0, "dim size in " + what_ + " is too large");
      if (peek() == '.') fail(p0, "a dim must be an integer, not a float", hint_);
      out.value = std::stoll(s_.substr(p0, pos - p0));
    } else if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
      out.name = name();
    } else if (peek() == '(') {
      ++pos;
      out = sum();
      ws();
      if (peek() != ')') fail(pos, "expected ')' in " + what_);
      ++pos;
    } else {
      fail(p0, at_end() ? what_ + " ends early: expected a dim name or size"
                        : std::string("expected a dim name or size in ") + what_ + ", not '" +
                              peek() + "'");
    }
    --depth_;
    return out;
  }

  const Elab& el_;
  const Expr& e_;
  const std::string& s_;
  const char* hint_;
  std::string what_;
  int depth_ = 0;
};

struct ParsedAnn {
  DType dtype = DType::F32;
  std::vector<DimAst> dims;
  const Expr* ex = nullptr;
  std::vector<int> starts;  // each dim's first character, inside the string contents
};

ParsedAnn parse_annotation(const Elab& el, const Expr& e) {
  if (e.kind != ExprKind::String)
    el.fail(e.loc, "an annotation must be a string giving dtype and shape", kAnnHint);
  const std::string& s = e.text;
  DimReader r(el, e, kAnnHint, "annotation \"" + s + "\"");
  r.ws();
  size_t start = r.pos;
  std::string dt = r.name();
  static const std::map<std::string, DType> kNames = {
      {"f32", DType::F32},      {"float32", DType::F32}, {"f64", DType::F64},
      {"float64", DType::F64},  {"i32", DType::I32},     {"int32", DType::I32},
      {"i64", DType::I64},      {"int64", DType::I64},   {"bool", DType::Bool},
      {"f16", DType::F16},      {"float16", DType::F16}, {"bf16", DType::BF16},
      {"bfloat16", DType::BF16}};
  auto it = kNames.find(dt);
  if (dt.empty()) r.fail(start, "annotation \"" + s + "\" has no dtype");
  if (it == kNames.end())
    r.fail(start, "unknown dtype '" + dt + "' in annotation \"" + s + "\"",
           "use one of f32, f64, f16, bf16, i32, i64, bool");
  ParsedAnn ann{it->second, {}, &e, {}};
  r.ws();
  if (r.peek() != '[') r.fail(r.pos, "expected '[' after the dtype in annotation \"" + s + "\"");
  ++r.pos;
  r.ws();
  if (r.peek() == ']') {
    ++r.pos;
  } else {
    while (true) {
      r.ws();
      ann.starts.push_back(static_cast<int>(r.pos));
      ann.dims.push_back(r.sum());
      r.ws();
      if (r.peek() == ',') {
        ++r.pos;
        r.ws();
        if (r.peek() != ']') continue;
      }
      if (r.peek() == ']') {
        ++r.pos;
        break;
      }
      r.fail(r.pos, r.at_end() ? "annotation \"" + s + "\" ends early: expected ',' or ']'"
                               : "expected ',' or ']' in annotation \"" + s + "\"");
    }
  }
  r.ws();
  if (!r.at_end()) r.fail(r.pos, "unexpected text after ']' in annotation \"" + s + "\"");
  return ann;
}

// Every name of a dim expression with its offset, in the order written.
void names_of(const DimAst& a, std::vector<std::pair<std::string, int>>& out) {
  if (!a.op) {
    if (!a.name.empty()) out.push_back({a.name, a.offset});
    return;
  }
  for (auto& k : a.kids) names_of(k, out);
}

DimExpr build(const DimAst& a, const std::function<DimExpr(const std::string&, int)>& value_of) {
  if (!a.op) return a.name.empty() ? DimExpr::constant(a.value) : value_of(a.name, a.offset);
  DimExpr l = build(a.kids[0], value_of), r = build(a.kids[1], value_of);
  return a.op == '+' ? l + r : a.op == '-' ? l - r : l * r;
}

// The product of the literal magnitudes, a bound on how large constants can grow.
double literal_weight(const DimAst& a) {
  if (!a.op) return a.name.empty() ? std::max<double>(1, static_cast<double>(a.value)) : 1;
  double l = literal_weight(a.kids[0]), r = literal_weight(a.kids[1]);
  return a.op == '*' ? l * r : l + r;
}

// A bound on |value| of a dim expression, given one for each name: sizes that would
// overflow are reported before any is computed in 64-bit integers.
double magnitude(const DimAst& a, const std::function<double(const std::string&)>& size_of) {
  if (!a.op) return a.name.empty() ? static_cast<double>(a.value) : size_of(a.name);
  double l = magnitude(a.kids[0], size_of), r = magnitude(a.kids[1], size_of);
  return a.op == '*' ? l * r : l + r;
}

struct Relation {
  std::string lhs;
  int lhs_offset = 0;
  DimAst rhs;
  const Expr* ex = nullptr;
};

std::string binding_str(const std::vector<std::string>& names, const ir::DimBindings& at) {
  std::string s;
  for (auto& n : names) {
    if (!at.count(n)) continue;
    s += (s.empty() ? "" : ", ") + n + "=" + std::to_string(at.at(n));
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------- binding

namespace {

// The state of one entry's dim binding; Elab::bind_entry_dims drives it.
class DimBinder {
 public:
  DimBinder(Elab& el, const FunctionDef& entry) : el_(el), entry_(entry) {}

  EntryTypes run() {
    read_dims();
    read_relations();
    std::vector<ParsedAnn> params, results;
    for (auto& p : entry_.params)
      if (!held_constant(p)) params.push_back(parse_annotation(el_, *p.annotation));
    const Expr& ret = *entry_.returns;
    if (ret.kind == ExprKind::Tuple) {
      if (ret.items.empty()) el_.fail(ret.loc, "the return annotation names no outputs", kAnnHint);
      for (auto& it : ret.items) results.push_back(parse_annotation(el_, *it));
    } else {
      results.push_back(parse_annotation(el_, ret));
    }
    for (auto& r : relations_) derive(r);
    EntryTypes out;
    for (auto& a : params) out.params.push_back({a.dtype, shape_of(a)});
    for (auto& a : results) out.results.push_back({a.dtype, shape_of(a)});
    check_relations();
    check_overrides();
    // Only the dims of the entry are bound: a free dim of an unused relation is not one.
    for (auto it = el_.graph_.bound_dims.begin(); it != el_.graph_.bound_dims.end();)
      if (std::find(el_.graph_.dims.begin(), el_.graph_.dims.end(), it->first) ==
          el_.graph_.dims.end())
        it = el_.graph_.bound_dims.erase(it);
      else
        ++it;
    return out;
  }

 private:
  void read_dims() {
    auto it = el_.globals_.find("DIMS");
    if (it == el_.globals_.end()) return;
    const Value& d = *it->second;
    if (d.kind != Kind::Dict)
      el_.fail({1, 1}, "DIMS must be a dict of dim sizes", "write DIMS = dict(M=256, K=512)");
    for (size_t i = 0; i < d.keys.size(); ++i) {
      const Value& v = *d.items[i];
      if (v.kind != Kind::Int || !v.i.is_constant() || *v.i.as_constant() < 1)
        el_.fail({1, 1}, "DIMS['" + d.keys[i] + "'] must be a positive integer",
                 "write DIMS = dict(" + d.keys[i] + "=256, ...)");
      dims_default_[d.keys[i]] = *v.i.as_constant();
    }
  }

  // RELATIONS is read from its module-level assignment, a list of string literals, so
  // that a mistake inside one is located in the file.
  void read_relations() {
    if (!el_.globals_.count("RELATIONS")) return;
    const Stmt* def = nullptr;
    for (auto& sp : el_.module_.body)
      if (sp->kind == StmtKind::Assign)
        for (auto& t : sp->targets)
          if (t->kind == ExprKind::Name && t->name == "RELATIONS") def = sp.get();
    const Expr* list = def ? def->value.get() : nullptr;
    bool ok = list && (list->kind == ExprKind::List || list->kind == ExprKind::Tuple);
    for (size_t i = 0; ok && i < list->items.size(); ++i)
      ok = list->items[i]->kind == ExprKind::String;
    if (!ok)
      el_.fail(def ? def->loc : SourceLoc{1, 1},
               "RELATIONS must be one module-level list of string literals", kRelHint);
    for (auto& item : list->items) relations_.push_back(parse_relation(*item));
  }

  Relation parse_relation(const Expr& e) {
    DimReader r(el_, e, kRelHint, "relation \"" + e.text + "\"");
    r.ws();
    Relation rel;
    rel.ex = &e;
    rel.lhs_offset = static_cast<int>(r.pos);
    rel.lhs = r.name();
    if (rel.lhs.empty() || std::isdigit(static_cast<unsigned char>(rel.lhs[0])))
      r.fail(rel.lhs_offset, "a relation starts with the dim it defines");
    r.ws();
    if (r.peek() != '=') r.fail(r.pos, "expected '=' after '" + rel.lhs + "' in a relation");
    ++r.pos;
    rel.rhs = r.sum();
    r.ws();
    if (!r.at_end()) r.fail(r.pos, "unexpected text at the end of relation \"" + e.text + "\"");
    if (literal_weight(rel.rhs) > kMaxDimMagnitude)
      r.fail(0, "the integers of this relation are too large");
    return rel;
  }

  bool is_constant_name(const std::string& n) const {
    if (dims_default_.count(n) || el_.options_.dim_overrides.count(n) || derived_.count(n))
      return false;
    auto g = el_.globals_.find(n);
    return g != el_.globals_.end() && g->second->kind == Kind::Int && g->second->i.is_constant();
  }

  // The value of a name in a dim expression: a derived dim's expression, a module integer
  // constant, or a free dim (which must have a size). Records the free dims in `order`.
  DimExpr value_of(const std::string& n, SourceLoc loc, std::vector<std::string>& order) {
    if (auto d = derived_.find(n); d != derived_.end()) {
      for (auto& f : derived_order_.at(n))
        if (std::find(order.begin(), order.end(), f) == order.end()) order.push_back(f);
      return d->second;
    }
    if (is_constant_name(n)) return el_.globals_.at(n)->i;
    int64_t size = 0;
    if (auto o = el_.options_.dim_overrides.find(n); o != el_.options_.dim_overrides.end())
      size = o->second;
    else if (auto df = dims_default_.find(n); df != dims_default_.end())
      size = df->second;
    else if (auto g = el_.globals_.find(n); g != el_.globals_.end())
      el_.fail(loc, "'" + n + "' is " + kind_name(*g->second) + ", not a dim or an integer",
               "a dim expression uses dims (from DIMS or --dims) and module integer constants");
    else
      el_.fail(loc, "unknown dim '" + n + "': it has no size",
               "add it to DIMS = dict(...) or pass --dims " + n + "=SIZE");
    el_.graph_.bound_dims[n] = size;
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
    return DimExpr::symbol(n);
  }

  void derive(const Relation& r) {
    SourceLoc at = inside(r.ex->loc, r.lhs_offset);
    const std::string shown = "relation \"" + r.ex->text + "\"";
    if (derived_.count(r.lhs))
      el_.fail(at, "dim '" + r.lhs + "' is defined by two relations",
               "keep one relation per derived dim");
    if (is_constant_name(r.lhs))
      el_.fail(at, "'" + r.lhs + "' is a module constant; a relation defines a dim",
               "put " + r.lhs + " in DIMS, or use the constant on the right of '='");
    std::vector<std::pair<std::string, int>> names;
    names_of(r.rhs, names);
    for (auto& [n, off] : names) {
      if (n == r.lhs)
        el_.fail(inside(r.ex->loc, off), "dim '" + n + "' appears on both sides of " + shown,
                 kRelHint);
      for (auto& later : relations_)
        if (later.lhs == n && !derived_.count(n))
          el_.fail(inside(r.ex->loc, off),
                   "dim '" + n + "' is defined by a later relation \"" + later.ex->text + "\"",
                   "state the relation of " + n + " first");
    }
    std::vector<std::string> order;
    DimExpr e = build(r.rhs, [&](const std::string& n, int off) {
      return value_of(n, inside(r.ex->loc, off), order);
    });
    check_magnitude(r.rhs, at, r.lhs);
    magnitude_[r.lhs] = magnitude(r.rhs, [&](const std::string& n) { return size_of(n); });
    int64_t v = el_.eval_dim(e, at);
    if (v < 1)
      el_.fail(at,
               shown + " gives " + r.lhs + " = " + std::to_string(v) + " at " +
                   binding_str(order, el_.graph_.bound_dims) + "; a dim must be positive",
               "fix the relation or the sizes in DIMS / --dims");
    derived_[r.lhs] = e;
    derived_order_[r.lhs] = order;
    loc_[r.lhs] = at;
    text_[r.lhs] = r.ex->text;
  }

  Shape shape_of(const ParsedAnn& a) {
    Shape s;
    for (size_t i = 0; i < a.dims.size(); ++i) {
      const DimAst& d = a.dims[i];
      const SourceLoc start = inside(a.ex->loc, a.starts[i]);
      if (literal_weight(d) > kMaxDimMagnitude)
        el_.fail(start, "the integers of this dim are too large", kAnnHint);
      std::vector<std::string> order;
      s.push_back(build(d, [&](const std::string& n, int off) {
        return value_of(n, inside(a.ex->loc, off), order);
      }));
      check_magnitude(d, start, "this dim");
      for (auto& f : order)
        if (std::find(el_.graph_.dims.begin(), el_.graph_.dims.end(), f) == el_.graph_.dims.end())
          el_.graph_.dims.push_back(f);
    }
    return s;
  }

  // |size| of a name already resolved: a derived dim's bound, a constant, a bound size.
  double size_of(const std::string& n) const {
    if (auto m = magnitude_.find(n); m != magnitude_.end()) return m->second;
    if (auto b = el_.graph_.bound_dims.find(n); b != el_.graph_.bound_dims.end())
      return static_cast<double>(b->second);
    auto g = el_.globals_.find(n);
    if (g != el_.globals_.end() && g->second->kind == Kind::Int && g->second->i.is_constant())
      return std::fabs(static_cast<double>(*g->second->i.as_constant()));
    return 0;
  }

  void check_magnitude(const DimAst& d, SourceLoc at, const std::string& what) {
    if (magnitude(d, [&](const std::string& n) { return size_of(n); }) > kMaxDimMagnitude)
      el_.fail(at, "the size of " + what + " is too large at the bound dims",
               "sizes here must stay below 2^34 elements");
  }

  // A DIMS entry for a derived dim must agree with the relation at the DIMS sizes.
  void check_relations() {
    for (auto& [name, e] : derived_) {
      auto df = dims_default_.find(name);
      if (df == dims_default_.end()) continue;
      ir::DimBindings at_defaults;
      bool all = true;
      for (auto& f : e.symbols()) {
        all = all && dims_default_.count(f);
        if (all) at_defaults[f] = dims_default_.at(f);
      }
      if (!all) continue;
      int64_t v = e.evaluate(at_defaults);
      if (v != df->second)
        el_.fail(loc_.at(name),
                 "relation \"" + text_.at(name) + "\" contradicts DIMS: DIMS gives " + name +
                     " = " + std::to_string(df->second) + " but " + e.str() + " = " +
                     std::to_string(v) + " at " + binding_str(e.symbols(), at_defaults),
                 "fix DIMS or the relation; " + name +
                     " follows from it and may be left out of "
                     "DIMS");
    }
  }

  void check_overrides() {
    const auto& g = el_.graph_;
    for (auto& [name, size] : el_.options_.dim_overrides) {
      if (size < 1)
        throw UserError("--dims: size of '" + name + "' must be >= 1, got " + std::to_string(size));
      if (auto d = derived_.find(name); d != derived_.end()) {
        int64_t v = d->second.evaluate(g.bound_dims);
        if (v != size)
          throw UserError("--dims " + name + "=" + std::to_string(size) +
                          " breaks the relation \"" + text_.at(name) + "\": " + d->second.str() +
                          " = " + std::to_string(v) + " at " +
                          binding_str(d->second.symbols(), g.bound_dims) + "; set the free dims (" +
                          binding_str(d->second.symbols(), g.bound_dims) + ") instead");
        continue;
      }
      if (std::find(g.dims.begin(), g.dims.end(), name) == g.dims.end()) {
        std::string all;
        for (auto& d : g.dims) all += (all.empty() ? "" : ", ") + d;
        for (auto& kv : derived_) all += (all.empty() ? "" : ", ") + kv.first + " (derived)";
        throw UserError("--dims: unknown dim '" + name + "'; the dims of " + entry_.name + " are " +
                        (all.empty() ? std::string("(none)") : all));
      }
    }
  }

  Elab& el_;
  const FunctionDef& entry_;
  std::map<std::string, int64_t> dims_default_;
  std::vector<Relation> relations_;
  std::map<std::string, DimExpr>& derived_ = el_.derived_dims_;
  std::map<std::string, std::vector<std::string>> derived_order_;
  std::map<std::string, SourceLoc> loc_;
  std::map<std::string, double> magnitude_;  // per derived dim, a bound on its size
  std::map<std::string, std::string> text_;
};

}  // namespace

EntryTypes Elab::bind_entry_dims(const FunctionDef& entry) { return DimBinder(*this, entry).run(); }

}  // namespace ollie::spec::elab
