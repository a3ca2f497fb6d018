// Call handlers for numpy's joining, splitting and copying of arrays: concatenate, stack,
// hstack, vstack, split, array_split, repeat and tile.
#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

// What np.concatenate and np.stack share: the arrays, converted to their common dtype,
// and the axis as given (0 when absent).
struct JoinOperands {
  std::vector<ValueId> ids;
  int64_t axis = 0;
};

JoinOperands join_operands(const BuiltinCall& c) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  const std::string& base = c.base;
  const bool stacks = base == "hstack" || base == "vstack";
  auto a = stacks ? c.sig({"tup"}, 1) : c.sig({"arrays", "axis"}, 1);
  if (stacks) a.push_back(nullptr);
  if (a[0]->kind != Kind::Tuple && a[0]->kind != Kind::List)
    el.fail(loc, "np." + base + " takes a list or tuple of arrays",
            stacks ? "e.g. np." + base + "([a, b])" : "e.g. np." + base + "([a, b], axis=0)");
  if (a[0]->items.empty()) el.fail(loc, "np." + base + " needs at least one array");
  if (!is_none(a[1]) && a[1]->kind != Kind::Int)
    el.fail(loc, "np." + base + " axis must be an integer");
  std::vector<ValuePtr> xs;
  for (auto& it : a[0]->items) {
    if (it->kind != Kind::Tensor || it->weak)
      el.fail(loc, "np." + base + " of " + kind_name(*it) + " is not supported; pass arrays");
    xs.push_back(it);
  }
  DType t = el.result_dtype(xs, loc);
  JoinOperands out;
  for (auto& x : xs) out.ids.push_back(el.convert(x->t, t, loc));
  out.axis = is_none(a[1]) ? 0 : el.to_const_int(a[1], loc, "axis");
  if (a[1] && a[1]->kind == Kind::None)
    el.fail(loc, "np." + base + " with axis=None is not supported", "reshape the arrays first");
  return out;
}

// x's part [lo, hi) along axis ax, whole along every other axis.
ValuePtr part_along(const BuiltinCall& c, ValueId x, int ax, const DimExpr& lo, const DimExpr& hi) {
  std::vector<ir::SliceAxis> sl;
  for (auto& dd : c.el.node(x).shape) sl.push_back({DimExpr(), dd, 1});
  sl[static_cast<size_t>(ax)] = {lo, hi, 1};
  return make_tensor(c.el.checked(c.el.b().slice(x, sl, c.loc), c.loc));
}

// np.split(x, n): n equal parts of x along axis ax, whose size is d (dv at the bound dims).
ValuePtr split_in_sections(const BuiltinCall& c, ValueId x, int ax, const ValuePtr& count,
                           const DimExpr& d, int64_t dv) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  int64_t n = el.to_const_int(count, loc, "the number of sections");
  if (n <= 0 || n > 4096)
    el.fail(loc, "np.split needs between 1 and 4096 sections, got " + std::to_string(n),
            "split into as many sections as the axis can be divided into, "
            "e.g. np.split(x, 2, axis=-1)");
  if (dv % n != 0)
    el.fail(loc,
            "np.split: " + d.str() + " = " + std::to_string(dv) + " does not divide into " +
                std::to_string(n) + " equal sections",
            "use a section count that divides the dim, or give split indices");
  el.learn_divisible(d, n);
  std::vector<DimExpr> cuts = {DimExpr()};
  DimExpr part = d.floordiv(n);
  for (int64_t k = 1; k < n; ++k) cuts.push_back(part * DimExpr::constant(k));
  // n divides d at the bound dims: end at part*n so every section has the same symbolic size.
  cuts.push_back(part * DimExpr::constant(n));
  std::vector<ValuePtr> parts;
  for (size_t k = 0; k + 1 < cuts.size(); ++k)
    parts.push_back(part_along(c, x, ax, cuts[k], cuts[k + 1]));
  return make_seq(Kind::List, parts);
}

// np.array_split(x, n): numpy's rule for n that need not divide d: the first d % n parts
// have d // n + 1 elements, the rest d // n. Part j has (d + n - 1 - j) // n elements, an
// expression generic in the dims (d // n each when n divides d symbolically).
ValuePtr array_split_in_sections(const BuiltinCall& c, ValueId x, int ax, const ValuePtr& count,
                                 const DimExpr& d) {
  Elab& el = c.el;
  int64_t n = el.to_const_int(count, c.loc, "the number of sections");
  if (n <= 0 || n > 4096)
    el.fail(c.loc, "np.array_split needs between 1 and 4096 sections, got " + std::to_string(n),
            "e.g. np.array_split(x, 3, axis=-1)");
  std::vector<ValuePtr> parts;
  DimExpr lo;
  for (int64_t j = 0; j < n; ++j) {
    DimExpr hi = lo + (d + DimExpr::constant(n - 1 - j)).floordiv(n);
    parts.push_back(part_along(c, x, ax, lo, hi));
    lo = hi;
  }
  return make_seq(Kind::List, parts);
}

// np.split(x, [i, j, ...]): the parts of x between the indices along axis ax, as numpy
// clips them (negative ones count from the end d, dv at the bound dims).
ValuePtr split_at_indices(const BuiltinCall& c, ValueId x, int ax, const ValuePtr& indices,
                          const DimExpr& d, int64_t dv) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  if (indices->items.size() > 4096) el.fail(loc, "too many split indices");
  std::vector<DimExpr> cuts = {DimExpr()};
  for (auto& it : indices->items) {
    DimExpr cut = el.to_dim(it, loc, "a split index");
    int64_t cv = el.eval_dim(cut, loc);
    if (cv < 0) {
      cut = d + cut;
      cv += dv;
    }
    if (cv < 0)
      cut = DimExpr();
    else if (cv > dv)
      cut = d;
    cuts.push_back(cut);
  }
  cuts.push_back(d);
  std::vector<ValuePtr> parts;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    DimExpr lo = cuts[k], hi = cuts[k + 1];
    if (el.eval_dim(hi, loc) < el.eval_dim(lo, loc)) hi = lo;
    parts.push_back(part_along(c, x, ax, lo, hi));
  }
  return make_seq(Kind::List, parts);
}

// x reshaped to `ins` (a unit axis where each copy axis goes), broadcast to `big` (the
// copies) and reshaped to `out` (the copies merged into the axes they repeat).
ValuePtr copies(const BuiltinCall& c, ValueId x, const Shape& ins, const Shape& big,
                const Shape& out) {
  c.el.check_shape(big, c.loc);
  ir::Builder& b = c.el.b();
  ValueId y = b.broadcast(b.reshape(x, ins, c.loc), big, c.loc);
  return make_tensor(b.reshape(y, out, c.loc));
}

}  // namespace

void Elab::add_joining_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.concatenate"}, &Elab::np_concatenate);
  add_builtins(t, {"np.stack"}, &Elab::np_stack);
  add_builtins(t, {"np.split", "np.array_split"}, &Elab::np_split);
  add_builtins(t, {"np.hstack", "np.vstack"}, &Elab::np_hvstack);
  add_builtins(t, {"np.repeat", "method.repeat"}, &Elab::np_repeat);
  add_builtins(t, {"np.tile"}, &Elab::np_tile);
}

// np.concatenate(arrays, axis)
ValuePtr Elab::np_concatenate(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  JoinOperands j = join_operands(c);
  const Shape s0 = node(j.ids[0]).shape;
  if (s0.empty()) fail(loc, "np.concatenate of 0-d arrays is not possible", "use np.stack");
  int ax = norm_axis(j.axis, static_cast<int>(s0.size()), loc);
  for (auto& id : j.ids) {
    const Shape& s = node(id).shape;
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int>(d) == ax || s[d] == s0[d];
    if (!ok)
      fail(loc,
           "np.concatenate: " + type_str(j.ids[0]) + " and " + type_str(id) + " differ off axis " +
               std::to_string(ax),
           "all dims except the concatenation axis must be equal");
  }
  return make_tensor(checked(builder_.concat(j.ids, ax, loc), loc));
}

// np.stack(arrays, axis)
ValuePtr Elab::np_stack(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  JoinOperands j = join_operands(c);
  const Shape s0 = node(j.ids[0]).shape;
  int ax = norm_axis(j.axis, static_cast<int>(s0.size()) + 1, loc);
  // All shapes are checked before any is reshaped, so the message shows them as given.
  for (auto& id : j.ids)
    if (node(id).shape != s0)
      fail(loc,
           "np.stack needs arrays of equal shape: " + type_str(j.ids[0]) + " and " + type_str(id));
  for (auto& id : j.ids) {
    Shape e = s0;
    e.insert(e.begin() + ax, DimExpr::constant(1));
    id = builder_.reshape(id, e, loc);
  }
  return make_tensor(checked(builder_.concat(j.ids, ax, loc), loc));
}

// A list or tuple literal where numpy wants an array (np.array([a, b]), np.sum([x, y],
// axis=0), np.array([1.0, 2.0])): what numpy's np.array makes of it. Arrays of one shape
// stack along a new first axis in their common dtype; Python numbers make a 1-D array
// (float64 when one is a float, else int64, bool when all are bools); nested lists
// recurse. Ragged lists and arrays mixed with numbers are refused, as numpy refuses them.
ValueId Elab::array_literal(const ValuePtr& list, SourceLoc loc) {
  if (list->items.empty())
    fail(loc, "an empty list as an array is not supported in a spec",
         "build it with np.zeros((0,), dtype=...)");
  std::vector<ValuePtr> xs;
  bool arrays = false, numbers = false, floats = false, ints = false;
  for (auto& it : list->items) {
    ValuePtr x = it;
    if (x->kind == Kind::List || x->kind == Kind::Tuple) x = make_tensor(array_literal(x, loc));
    if (x->kind == Kind::Tensor && !x->weak) {
      arrays = true;
    } else if (is_scalar(*x)) {
      numbers = true;
      const bool is_float =
          x->kind == Kind::Float || (x->kind == Kind::Tensor && ir::is_float(node(x->t).dtype));
      floats = floats || is_float;
      ints = ints || (!is_float && x->kind != Kind::Bool &&
                      !(x->kind == Kind::Tensor && node(x->t).dtype == DType::Bool));
    } else {
      fail(loc, "a list holding " + kind_name(*x) + " is not an array",
           "a list literal as an array holds arrays of one shape, or numbers");
    }
    xs.push_back(x);
  }
  if (arrays && numbers)
    fail(loc, "a list mixing arrays and numbers has an inhomogeneous shape (numpy refuses it)",
         "make the numbers arrays of the same shape (np.full_like(x, 1.0))");
  const DType t = arrays   ? result_dtype(xs, loc)
                  : floats ? DType::F64
                  : ints   ? DType::I64
                           : DType::Bool;
  std::vector<ValueId> rows;
  for (auto& x : xs) rows.push_back(as_tensor(x, loc, t));
  const Shape s0 = node(rows[0]).shape;
  for (auto& id : rows)
    if (node(id).shape != s0)
      fail(loc, "a list of arrays of different shapes (" + type_str(rows[0]) + " and " +
                    type_str(id) + ") is not an array (numpy refuses it as inhomogeneous)");
  for (auto& id : rows) {
    Shape e = s0;
    e.insert(e.begin(), DimExpr::constant(1));
    id = builder_.reshape(convert(id, t, loc), e, loc);
  }
  return checked(builder_.concat(rows, 0, loc), loc);
}

// np.split(ary, indices_or_sections, axis)
ValuePtr Elab::np_split(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"ary", "indices_or_sections", "axis"}, 2);
  ValueId x = c.array_arg(a[0], "ary");
  const Shape s = node(x).shape;
  if (s.empty()) fail(loc, c.shown + " of a 0-d array", "split an array of rank 1 or more");
  const int64_t axis = is_none(a[2]) ? 0 : to_const_int(a[2], loc, "axis");
  int ax = norm_axis(axis, static_cast<int>(s.size()), loc);
  const DimExpr d = s[static_cast<size_t>(ax)];
  int64_t dv = eval_dim(d, loc);
  if (a[1]->kind == Kind::Int)
    return c.base == "array_split" ? array_split_in_sections(c, x, ax, a[1], d)
                                   : split_in_sections(c, x, ax, a[1], d, dv);
  if (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List)
    return split_at_indices(c, x, ax, a[1], d, dv);
  fail(loc, c.shown + " takes a section count or a list of indices, not " + kind_name(*a[1]));
}

// np.hstack(tup): 1-D arrays joined end to end, others along axis 1; np.vstack(tup): the
// arrays as 2-D rows (a 1-D [N] is [1, N], a 0-d one [1, 1]) joined along axis 0.
ValuePtr Elab::np_hvstack(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  JoinOperands j = join_operands(c);
  const bool vertical = c.base == "vstack";
  for (auto& id : j.ids) {
    Shape s = node(id).shape;
    const size_t min_rank = vertical ? 2 : 1;
    while (s.size() < min_rank) s.insert(s.begin(), DimExpr::constant(1));
    id = builder_.reshape(id, s, loc);
  }
  int ax = vertical || node(j.ids[0]).shape.size() == 1 ? 0 : 1;
  const Shape s0 = node(j.ids[0]).shape;
  for (auto& id : j.ids) {
    const Shape& s = node(id).shape;
    bool ok = s.size() == s0.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int>(d) == ax || s[d] == s0[d];
    if (!ok)
      fail(loc,
           c.shown + ": " + type_str(j.ids[0]) + " and " + type_str(id) + " differ off axis " +
               std::to_string(ax),
           vertical ? "the rows must have equal sizes: all dims but the first must be equal"
                    : "all dims but the joined one must be equal");
  }
  return make_tensor(checked(builder_.concat(j.ids, ax, loc), loc));
}

// np.repeat(a, repeats, axis): each element `repeats` times along the axis (of the
// flattened array when there is none).
ValuePtr Elab::np_repeat(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "repeats", "axis"}, 2);
  ValueId x = c.array_arg(a[0], "a");
  int64_t r = to_const_int(a[1], loc, "repeats");
  if (r < 0) fail(loc, "np.repeat count must be non-negative");
  if (is_none(a[2])) x = reshape_to(x, {make_int(-1)}, loc);
  Shape s = node(x).shape;
  if (s.empty()) fail(loc, "np.repeat of a 0-d array with an axis");
  const int rank = static_cast<int>(s.size());
  int ax = is_none(a[2]) ? 0 : norm_axis(to_const_int(a[2], loc, "axis"), rank, loc);
  Shape ins = s, big = s, out = s;
  ins.insert(ins.begin() + ax + 1, DimExpr::constant(1));
  big.insert(big.begin() + ax + 1, DimExpr::constant(r));
  out[static_cast<size_t>(ax)] = s[static_cast<size_t>(ax)] * DimExpr::constant(r);
  return copies(c, x, ins, big, out);
}

// np.tile(A, reps): A repeated reps[i] times along each axis i (shapes aligned at the end).
ValuePtr Elab::np_tile(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"A", "reps"}, 2);
  ValueId x = c.array_arg(a[0], "A");
  std::vector<int64_t> reps;
  if (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List)
    for (auto& it : a[1]->items) reps.push_back(to_const_int(it, loc, "reps"));
  else
    reps.push_back(to_const_int(a[1], loc, "reps"));
  for (auto r : reps)
    if (r < 0) fail(loc, "np.tile reps must be non-negative");
  Shape s = node(x).shape;
  while (s.size() < reps.size()) s.insert(s.begin(), DimExpr::constant(1));
  while (reps.size() < s.size()) reps.insert(reps.begin(), 1);
  x = builder_.reshape(x, s, loc);
  Shape ins, big, out;
  for (size_t i = 0; i < s.size(); ++i) {
    ins.push_back(DimExpr::constant(1));
    ins.push_back(s[i]);
    big.push_back(DimExpr::constant(reps[i]));
    big.push_back(s[i]);
    out.push_back(s[i] * DimExpr::constant(reps[i]));
  }
  return copies(c, x, ins, big, out);
}

}  // namespace ollie::spec::elab
