// Statements whose structure is decided while elaborating: `for` loops unrolled over static
// sequences, `if` on Python values (constants, dims), and item assignment into a local
// array turned into a functional update (the name then refers to the updated array).
#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

constexpr size_t kMaxItems = 4096;
constexpr int64_t kMaxUnrolled = int64_t{1} << 16;

const char* kArrayIfHint =
    "an `if` is decided while reading the spec, on Python values (constants, dims, shapes); "
    "select elementwise with np.where(cond, a, b)";

}  // namespace

void Elab::exec_block(const std::vector<StmtPtr>& body, ValuePtr* ret, bool* returned) {
  for (auto& st : body) {
    exec(*st, ret, returned);
    if (*returned) return;
  }
}

std::vector<ValuePtr> Elab::static_items(const ValuePtr& v, SourceLoc loc,
                                         const std::string& what) {
  switch (v->kind) {
    case Kind::Tuple:
    case Kind::List: return v->items;
    case Kind::Dict: {
      std::vector<ValuePtr> keys;
      for (auto& k : v->keys) keys.push_back(make_str(k));
      return keys;
    }
    case Kind::Int:
      fail(loc, "cannot " + what + " over an int", "write range(n) to count from 0 to n - 1");
    case Kind::Tensor: {
      if (v->weak) break;
      const Shape s = shape_of(*v);
      if (s.empty()) fail(loc, "cannot " + what + " over a 0-d array");
      auto n = s[0].as_constant();
      if (!n || static_cast<size_t>(*n) > kMaxItems)
        fail(loc,
             "cannot " + what + " over an array of type " + type_str(v->t) + ": its length " +
                 s[0].str() + " is not a constant, so it cannot be unrolled",
             "vectorize over that axis (broadcasting, np.einsum), or loop over range(n) with a "
             "constant n");
      std::vector<ValuePtr> rows;
      for (int64_t k = 0; k < *n; ++k) rows.push_back(subscript(v, {make_int(k)}, loc));
      return rows;
    }
    default: break;
  }
  fail(loc, "cannot " + what + " over " + kind_name(*v),
       "loop over range(n), a list, a tuple, zip(...) or enumerate(...)");
}

// Nested loops multiply: one budget for the whole spec keeps reading it quick.
void Elab::count_iteration(SourceLoc loc) {
  if (++unrolled_ > kMaxUnrolled)
    fail(loc,
         "the spec unrolls to more than " + std::to_string(kMaxUnrolled) +
             " loop and comprehension iterations",
         "vectorize the inner loops (broadcasting, np.einsum) instead of unrolling them");
}

void Elab::exec_for(const Stmt& s, ValuePtr* ret, bool* returned) {
  std::vector<ValuePtr> items = static_items(eval(s.value), s.value->loc, "loop");
  if (items.size() > kMaxItems)
    fail(s.value->loc, "loop of " + std::to_string(items.size()) + " iterations is too long",
         "a loop is unrolled; keep it below 4096 iterations or vectorize it");
  for (auto& item : items) {
    count_iteration(s.value->loc);
    assign(s.targets.at(0), item);
    exec_block(s.body, ret, returned);
    if (*returned) return;
  }
}

void Elab::exec_if(const Stmt& s, ValuePtr* ret, bool* returned) {
  ValuePtr c = eval(s.value);
  if (c->kind == Kind::Tensor && !c->weak)
    fail(s.value->loc, "`if` on an array: which branch runs would depend on the data",
         kArrayIfHint);
  if (c->kind == Kind::Tensor)
    fail(s.value->loc, "`if` on a float computed from dims cannot be decided here",
         "compare integers (dims, sizes, constants) instead");
  exec_block(truthy(c, s.value->loc) ? s.body : s.orelse, ret, returned);
}

// ---------------------------------------------------------------------------- item assignment

void Elab::assign_item(const Expr& target, const ValuePtr& v) {
  if (target.value->kind != ExprKind::Name)
    fail(target.loc, "item assignment into an expression is not supported in a spec",
         "assign into a local name: y = x[...]; y[i] = v");
  ValuePtr base = lookup(target.value->name, target.value->loc);
  std::vector<ValuePtr> idx;
  for (auto& it : target.items) idx.push_back(eval(it));
  if (idx.size() == 1 && idx[0]->kind == Kind::Tuple) idx = idx[0]->items;
  SourceLoc loc = target.loc;
  if (base->kind == Kind::List || base->kind == Kind::Dict) {
    auto copy = std::make_shared<Value>(*base);
    if (base->kind == Kind::List) {
      int64_t n = static_cast<int64_t>(base->items.size());
      int64_t k = idx.size() == 1 ? to_const_int(idx[0], loc, "a list index") : n;
      if (k < -n || k >= n) fail(loc, "list assignment index out of range");
      copy->items[static_cast<size_t>(k < 0 ? k + n : k)] = v;
    } else {
      if (idx.size() != 1 || idx[0]->kind != Kind::Str)
        fail(loc, "dict keys are strings in a spec");
      auto pos = std::find(copy->keys.begin(), copy->keys.end(), idx[0]->s);
      if (pos == copy->keys.end()) {
        copy->keys.push_back(idx[0]->s);
        copy->items.push_back(v);
      } else {
        copy->items[static_cast<size_t>(pos - copy->keys.begin())] = v;
      }
    }
    assign(target.value, copy);
    return;
  }
  if (base->kind != Kind::Tensor || base->weak)
    fail(loc, "cannot assign into an item of " + kind_name(*base),
         "item assignment works on local arrays, lists and dicts");
  check_no_views(*base, target.value->name, loc);
  if (idx.size() == 1 && idx[0]->kind == Kind::Tensor && !idx[0]->weak &&
      node(idx[0]->t).dtype == DType::Bool)
    return assign_masked(target, base, idx[0], v);
  const Shape shape = shape_of(*base);  // a copy: building nodes moves the graph's storage
  int rank = static_cast<int>(shape.size());
  // Expand `...` to full slices.
  std::vector<ValuePtr> full;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i]->kind != Kind::Ellipsis) {
      full.push_back(idx[i]);
      continue;
    }
    for (int k = 0; k < rank - static_cast<int>(idx.size()) + 1; ++k) full.push_back(nullptr);
  }
  if (static_cast<int>(full.size()) > rank)
    fail(loc, "too many indices (" + std::to_string(full.size()) + ") for an array of type " +
                  type_str(base->t));
  std::vector<std::pair<DimExpr, DimExpr>> region;
  Shape view, whole;
  for (int a = 0; a < rank; ++a) {
    const DimExpr& d = shape[static_cast<size_t>(a)];
    int64_t dv = eval_dim(d, loc);
    ValuePtr ix = a < static_cast<int>(full.size()) ? full[static_cast<size_t>(a)] : nullptr;
    auto bound = [&](const ValuePtr& b, const DimExpr& dflt) {
      if (is_none(b)) return dflt;
      DimExpr e = to_dim(b, loc, "an index in an assignment target");
      int64_t ev = eval_dim(e, loc);
      if (ev < 0) {
        e = d + e;
        ev += dv;
      }
      if (ev < 0) return DimExpr::constant(0);
      return ev > dv ? d : e;
    };
    if (ix && ix->kind == Kind::None)
      fail(loc, "np.newaxis in an assignment target is not supported", "index existing axes only");
    if (ix && ix->kind == Kind::Tensor && !ix->weak)
      fail(loc, "assignment through an array index depends on the data",
           "write y = np.where(mask, new_values, y)");
    if (ix && ix->kind == Kind::Slice) {
      if (ix->items[2] && !is_none(ix->items[2]) &&
          to_const_int(ix->items[2], loc, "a slice step") != 1)
        fail(loc, "slice steps in an assignment target are not supported",
             "assign a contiguous slice a:b");
      DimExpr lo = bound(ix->items[0], DimExpr::constant(0)), hi = bound(ix->items[1], d);
      if (eval_dim(hi, loc) < eval_dim(lo, loc)) hi = lo;
      region.push_back({lo, hi});
      view.push_back(hi - lo);
      whole.push_back(hi - lo);
    } else if (ix) {
      DimExpr k = bound(ix, d);
      int64_t kv = eval_dim(k, loc);
      if (kv < 0 || kv >= dv)
        fail(loc, "index " + k.str() + " is out of bounds for axis " + std::to_string(a) +
                      " with size " + d.str());
      region.push_back({k, k + DimExpr::constant(1)});
      whole.push_back(DimExpr::constant(1));
    } else {
      region.push_back({DimExpr::constant(0), d});
      view.push_back(d);
      whole.push_back(d);
    }
  }
  ValueId val = convert(as_tensor(v, loc), dtype_of(*base), loc);
  check_fits(val, view, loc);
  val = builder_.reshape(to_shape(val, view, loc), whole, loc);
  ValueId updated = update_region(base->t, region, 0, val, loc);
  if (node(updated).shape != shape) updated = builder_.reshape(updated, shape, loc);
  ValuePtr result = make_tensor(checked(updated, loc));
  rebind_aliases(base.get(), result);
  assign(target.value, result);
}

// x[mask] = v with a boolean mask of x's shape, or of its leading axes (whole rows): numpy
// writes v into every selected element, or every selected row when v broadcasts to a row.
// That is np.where(mask, v, x), and the shape stays the data's. A v with one value per
// selected element would need their count, which depends on the data: refused.
void Elab::assign_masked(const Expr& target, const ValuePtr& base, const ValuePtr& mask,
                         const ValuePtr& v) {
  SourceLoc loc = target.loc;
  const Shape shape = shape_of(*base), mask_shape = shape_of(*mask);
  bool ok = mask_shape.size() <= shape.size();
  for (size_t k = 0; ok && k < mask_shape.size(); ++k) ok = same_at_bounds(mask_shape[k], shape[k]);
  if (!ok)
    fail(loc,
         "a boolean mask of shape " + ir::shape_str(mask_shape) + " does not match " +
             type_str(base->t) + "'s leading axes",
         "numpy needs the mask's shape to be the array's, or its leading axes'");
  const Shape row(shape.begin() + static_cast<long>(mask_shape.size()), shape.end());
  ValueId val = convert(as_tensor(v, loc), dtype_of(*base), loc);
  const Shape& vs = node(val).shape;
  bool fits = vs.size() <= row.size();
  for (size_t k = 0; fits && k < vs.size(); ++k) {
    const DimExpr& have = vs[vs.size() - 1 - k];
    fits = have == DimExpr::constant(1) || same_at_bounds(have, row[row.size() - 1 - k]);
  }
  if (!fits)
    fail(loc,
         "x[mask] = v with v of " + type_str(val) +
             ": one value per selected element needs their "
             "count, which depends on the data",
         "assign a scalar or one row of shape " + ir::shape_str(row) +
             ", or write x = np.where(mask, values, x)");
  Shape padded = mask_shape;
  padded.resize(shape.size(), DimExpr::constant(1));
  ValueId m = to_shape(builder_.reshape(mask->t, padded, loc), shape, loc);
  ValuePtr result =
      make_tensor(checked(builder_.select(m, to_shape(val, shape, loc), base->t, loc), loc));
  rebind_aliases(base.get(), result);
  assign(target.value, result);
}

void Elab::check_no_views(const Value& base, const std::string& name, SourceLoc loc) const {
  auto views_base = [&](const ValuePtr& v) {
    if (!v || v->kind != Kind::Tensor || v->weak || v->copied || v.get() == &base) return false;
    ValueId id = v->t;
    int steps = 0;
    for (; id != base.t; ++steps) {
      const ir::Node& n = node(id);
      if (n.kind != OpKind::Slice && n.kind != OpKind::Reshape && n.kind != OpKind::Transpose)
        return false;
      id = n.operands.at(0);
    }
    return steps > 0;
  };
  auto check = [&](const Scope& scope) {
    for (auto& [other, v] : scope)
      if (views_base(v))
        fail(loc,
             "'" + other + "' is a view of '" + name +
                 "' taken before this write: numpy would show the write through it, ollie "
                 "would not",
             "take the slice after the write, or copy it: " + other + " = ....copy()");
  };
  for (auto& f : frames_) check(*f.scope);
  check(globals_);
}

// numpy's rule for the value of an item assignment: it broadcasts to the region's shape.
void Elab::check_fits(ValueId value, const Shape& region, SourceLoc loc) {
  const Shape& s = node(value).shape;
  bool ok = s.size() <= region.size();
  for (size_t k = 0; ok && k < s.size(); ++k) {
    const DimExpr& have = s[s.size() - 1 - k];
    const DimExpr& want = region[region.size() - 1 - k];
    ok = have == DimExpr::constant(1) || have == want || same_at_bounds(have, want);
  }
  if (!ok)
    fail(loc,
         "cannot assign " + type_str(value) + " into a region of shape " + ir::shape_str(region),
         "the value must broadcast to the indexed region, as in numpy");
}

// `base` with `value` written over region[axis:] (whole along the axes before `axis`): the
// pieces before and after the region on this axis, and the region updated on the next axes.
ValueId Elab::update_region(ValueId base, const std::vector<std::pair<DimExpr, DimExpr>>& region,
                            size_t axis, ValueId value, SourceLoc loc) {
  if (axis == region.size()) return value;
  Shape shape = node(base).shape;
  const DimExpr& d = shape[axis];
  const auto& [lo, hi] = region[axis];
  auto piece = [&](const DimExpr& a, const DimExpr& b) {
    std::vector<ir::SliceAxis> slices;
    for (size_t k = 0; k < shape.size(); ++k)
      slices.push_back(k == axis ? ir::SliceAxis{a, b, 1}
                                 : ir::SliceAxis{DimExpr::constant(0), shape[k], 1});
    return builder_.slice(base, slices, loc);
  };
  bool from_start = lo == DimExpr::constant(0), to_end = hi == d;
  bool rest_whole = true;  // the value covers the region's slab on every later axis
  for (size_t k = axis + 1; k < region.size(); ++k)
    rest_whole =
        rest_whole && region[k].first == DimExpr::constant(0) && region[k].second == shape[k];
  ValueId middle = rest_whole ? value
                   : from_start && to_end
                       ? update_region(base, region, axis + 1, value, loc)
                       : update_region(piece(lo, hi), region, axis + 1, value, loc);
  std::vector<ValueId> parts;
  if (!from_start && eval_dim(lo, loc) > 0) parts.push_back(piece(DimExpr::constant(0), lo));
  parts.push_back(middle);
  if (!to_end && eval_dim(d - hi, loc) > 0) parts.push_back(piece(hi, d));
  if (parts.size() == 1) return middle;
  return builder_.concat(parts, static_cast<int>(axis), loc);
}

// ---------------------------------------------------------------------------- call sites

std::string Elab::call_context() const {
  // call_stack_ holds the entry first while elaborating it; call_sites_ one entry per helper.
  size_t first_helper = call_stack_.size() - call_sites_.size();
  std::string s;
  for (size_t i = call_stack_.size(); i-- > first_helper;) {
    if (call_stack_.size() - i > 3) {
      s += "; ...";
      break;
    }
    const std::string& name = call_stack_[i]->name;
    SourceLoc at = call_sites_[i - first_helper];
    s += std::string(s.empty() ? " (in " : "; in ") +
         (name == "<lambda>" ? std::string("a lambda") : name) + ", called from " +
         (i > 0 ? call_stack_[i - 1]->name : std::string("module level")) + " at " + module_.file +
         ":" + std::to_string(at.line) + ":" + std::to_string(at.col);
  }
  return s.empty() ? "" : s + ")";
}

}  // namespace ollie::spec::elab
