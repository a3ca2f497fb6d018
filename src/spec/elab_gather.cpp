// Data-dependent indexing (an embedding gather): table[ids], table[:, ids], np.take, the
// .take method and np.take_along_axis, with one integer index array that is an input of
// the entry. The
// verifier draws such an input inside [-V, V), the only indices numpy accepts
// (docs/spec-language.md, "Indexing with an array").
#include <optional>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

const char* kGatherForms =
    "a spec supports one integer index array that is an input of the entry (\"i64[T]\" or "
    "\"i32[T]\"), alone or with full slices: table[ids], table[ids, :], table[:, ids], "
    "np.take(table, ids, axis=0), table.take(ids, axis=0), np.take_along_axis(x, ids, axis)";

// start + step * i for i = 0, 1, ...: what np.arange(start, stop, step) builds.
struct Progression {
  DimExpr start;
  int64_t step = 1;
};

// A scalar integer constant (a Const or a dim's value, broadcast or reshaped to 1-D).
std::optional<DimExpr> constant_of(const Elab& el, ValueId v) {
  const ir::Node& n = el.node(v);
  if (n.kind == OpKind::Broadcast || n.kind == OpKind::Reshape)
    return constant_of(el, n.operands[0]);
  if (n.kind != OpKind::Const || ir::is_float(n.dtype)) return std::nullopt;
  if (n.const_dim) return *n.const_dim;
  return DimExpr::constant(static_cast<int64_t>(n.const_value));
}

// The arithmetic progression a 1-D integer value is, when np.arange built it.
std::optional<Progression> progression_of(const Elab& el, ValueId v) {
  const ir::Node& n = el.node(v);
  if (n.shape.size() != 1 || ir::is_float(n.dtype) || n.dtype == DType::Bool) return std::nullopt;
  switch (n.kind) {
    case OpKind::Iota: return Progression{DimExpr(), 1};
    case OpKind::Convert: return progression_of(el, n.operands[0]);
    case OpKind::Mul: {
      auto p = progression_of(el, n.operands[0]);
      auto c = constant_of(el, n.operands[1]);
      if (!p || !c || !c->is_constant() || *c->as_constant() <= 0 || p->start != DimExpr())
        return std::nullopt;
      return Progression{DimExpr(), p->step * *c->as_constant()};
    }
    case OpKind::Add: {
      auto p = progression_of(el, n.operands[0]);
      auto c = constant_of(el, n.operands[1]);
      if (!p || !c) return std::nullopt;
      return Progression{p->start + *c, p->step};
    }
    default: return std::nullopt;
  }
}

// Whether `v` is an integer input of the entry, through layout ops and integer converts.
bool from_integer_input(const Elab& el, ValueId v) {
  for (;;) {
    const ir::Node& n = el.node(v);
    if (n.dtype != DType::I32 && n.dtype != DType::I64) return false;
    switch (n.kind) {
      case OpKind::Input: return true;
      case OpKind::Convert:
      case OpKind::Reshape:
      case OpKind::Transpose:
      case OpKind::Slice:
      case OpKind::Broadcast: v = n.operands[0]; break;
      default: return false;
    }
  }
}

}  // namespace

ValueId Elab::take(ValueId table, ValueId ids, int axis, SourceLoc loc) {
  const DType t = node(ids).dtype;
  if (t == DType::Bool)
    fail(loc,
         "data-dependent shape: boolean mask indexing x[mask] has a size that depends on the "
         "values; the shape of every value must follow from the dims",
         "use np.where(mask, x, 0) to keep the shape");
  if (t != DType::I32 && t != DType::I64)
    fail(loc,
         std::string("indexing with an array of ") + ir::dtype_name(t) +
             ": numpy accepts only integer index arrays (it raises IndexError for floats)",
         kGatherForms);
  const DimExpr rows = node(table).shape[static_cast<size_t>(axis)];
  // np.arange(...) as the index is a strided slice (the same elements, no data read).
  if (auto p = progression_of(*this, ids)) {
    const DimExpr len = node(ids).shape[0];
    const int64_t n = eval_dim(len, loc), first = eval_dim(p->start, loc);
    const int64_t last = first + (n - 1) * p->step, size = eval_dim(rows, loc);
    if (n > 0 && first < 0)
      fail(loc,
           "an np.arange index with negative values (numpy wraps them: " + std::to_string(first) +
               " is row " + rows.str() + " - " + std::to_string(-first) +
               ") is not supported in a spec",
           "slice the rows instead, e.g. x[-3:] for np.arange(-3, 0)");
    if (n > 0 && last >= size)
      fail(loc,
           "index " + std::to_string(last) + " of the np.arange index is out of bounds for axis " +
               std::to_string(axis) + " with size " + rows.str() + " = " + std::to_string(size),
           "numpy raises IndexError here; index inside the axis, or slice (x[:n] clips)");
    std::vector<ir::SliceAxis> sl;
    for (auto& d : node(table).shape) sl.push_back({DimExpr(), d, 1});
    const DimExpr stop =
        n > 0 ? p->start + len * DimExpr::constant(p->step) - DimExpr::constant(p->step - 1)
              : p->start;
    sl[static_cast<size_t>(axis)] = {p->start, stop, p->step};
    return checked(builder_.slice(table, sl, loc), loc);
  }
  if (!from_integer_input(*this, ids))
    fail(loc,
         "the index array of a gather must be an integer input of the entry (or np.arange): the "
         "verifier draws such an input inside [-V, V), the only indices numpy accepts, while "
         "indices computed from values could leave that range",
         kGatherForms);
  return checked(builder_.gather(table, ids, axis, loc), loc);
}

ValuePtr Elab::gather_subscript(ValueId x, const std::vector<ValuePtr>& idx, SourceLoc loc) {
  const int rank = static_cast<int>(node(x).shape.size());
  int arrays = 0, before = 0, consumers = 0;
  bool ellipsis_before = false;
  for (auto& v : idx) {
    if (v->kind == Kind::Tensor) {
      ++arrays;
      ++consumers;
      continue;
    }
    const bool full_slice = v->kind == Kind::Slice && is_none(v->items[0]) &&
                            is_none(v->items[1]) && is_none(v->items[2]);
    if (v->kind == Kind::Ellipsis) {
      if (arrays == 0) ellipsis_before = true;
      continue;
    }
    if (!full_slice)
      fail(loc,
           "an index array combined with " + kind_name(*v) +
               " is not supported (numpy's rules for mixed advanced indexing)",
           std::string(kGatherForms) + "; index or slice in a separate step: x[:, 0][ids]");
    ++consumers;
    if (arrays == 0) ++before;
  }
  if (arrays > 1)
    fail(loc, "indexing with several index arrays (x[i, j]) is not supported in a spec",
         kGatherForms);
  if (consumers > rank)
    fail(loc, "too many indices for " + type_str(x) + ": " + std::to_string(consumers) +
                  " indices for rank " + std::to_string(rank));
  const int axis = ellipsis_before ? before + rank - consumers : before;
  ValueId ids = -1;
  for (auto& v : idx)
    if (v->kind == Kind::Tensor) ids = v->weak ? as_tensor(v, loc) : v->t;
  return make_tensor(take(x, ids, axis, loc));
}

ValuePtr Elab::range_index(const ValuePtr& base, const Expr& index) {
  if (base->kind != Kind::Tensor || base->weak || index.kind != ExprKind::Call || !index.value ||
      index.value->kind != ExprKind::Name || !index.keywords.empty())
    return nullptr;
  const ValuePtr fn = eval(index.value);
  if (fn->kind != Kind::Builtin || fn->s != "range") return nullptr;
  CallArgs args;
  for (const auto& a : index.items) {
    if (a->kind == ExprKind::Starred) return nullptr;
    args.pos.push_back(eval(a));
    args.pos_loc.push_back(a->loc);
  }
  return call_builtin(*make_named(Kind::Builtin, "np.arange"), args, index.loc);
}

// np.take(a, indices, axis=None, out=None, mode='raise') and a.take(indices, axis)
ValuePtr Elab::np_take(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "indices", "axis", "out", "mode"}, 2);
  ValueId x = c.tensor_arg(a[0], "the array")->t;
  if (!is_none(a[3])) fail(loc, c.shown + " with out= is not supported in a spec");
  if (!is_none(a[4]) && !(a[4]->kind == Kind::Str && a[4]->s == "raise"))
    fail(loc, c.shown + " with mode other than 'raise' is not supported in a spec",
         "indices outside [-V, V) are outside the spec's domain, as numpy's default mode says");
  if (a[1]->kind != Kind::Tensor || a[1]->weak)
    fail(loc, c.shown + " indices must be an integer array, got " + kind_name(*a[1]), kGatherForms);
  int axis = 0;
  if (is_none(a[2])) {
    DimExpr n = DimExpr::constant(1);
    for (auto& d : node(x).shape) n = n * d;
    x = builder_.reshape(x, {n}, loc);
  } else {
    axis = norm_axis(to_const_int(a[2], loc, "axis"), static_cast<int>(node(x).shape.size()), loc);
  }
  return make_tensor(take(x, a[1]->t, axis, loc));
}

// np.take_along_axis(arr, indices, axis): indices of arr's rank, the two broadcast against
// each other off the axis (numpy's rule), the result shaped like the broadcast indices.
ValuePtr Elab::np_take_along_axis(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"arr", "indices", "axis"}, 3);
  ValueId x = c.tensor_arg(a[0], "the array")->t;
  if (a[1]->kind != Kind::Tensor || a[1]->weak)
    fail(loc, "np.take_along_axis indices must be an integer array, got " + kind_name(*a[1]),
         kGatherForms);
  ValueId ids = a[1]->t;
  int axis = 0;
  if (is_none(a[2])) {
    if (node(ids).shape.size() != 1)
      fail(loc, "np.take_along_axis with axis=None needs 1-D indices, got " + type_str(ids));
    DimExpr n = DimExpr::constant(1);
    for (auto& d : node(x).shape) n = n * d;
    x = builder_.reshape(x, {n}, loc);
  } else {
    axis = norm_axis(to_const_int(a[2], loc, "axis"), static_cast<int>(node(x).shape.size()), loc);
  }
  const Shape xs = node(x).shape, is = node(ids).shape;
  if (xs.size() != is.size())
    fail(loc,
         "np.take_along_axis needs indices of the array's rank: " + type_str(x) + " and " +
             type_str(ids),
         "add unit axes to the indices (ids[:, None]) as numpy requires");
  Shape xt = xs, it = is;
  const DimExpr one = DimExpr::constant(1);
  for (size_t d = 0; d < xs.size(); ++d) {
    if (static_cast<int>(d) == axis || xs[d] == is[d]) continue;
    if (xs[d] != one && is[d] != one)
      fail(loc, "np.take_along_axis shapes " + type_str(x) + " and " + type_str(ids) +
                    " do not broadcast off axis " + std::to_string(axis));
    xt[d] = it[d] = xs[d] == one ? is[d] : xs[d];
  }
  x = to_shape(x, xt, loc);
  ids = to_shape(ids, it, loc);
  const DType t = node(ids).dtype;
  if (t != DType::I32 && t != DType::I64)
    fail(loc,
         std::string("np.take_along_axis with indices of ") + ir::dtype_name(t) +
             ": numpy accepts only integer indices",
         kGatherForms);
  if (!from_integer_input(*this, ids))
    fail(loc,
         "the indices of np.take_along_axis must be an integer input of the entry: the verifier "
         "draws such an input inside [-V, V), the only indices numpy accepts",
         kGatherForms);
  return make_tensor(checked(builder_.gather_along(x, ids, axis, loc), loc));
}

void Elab::add_gather_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.take", "method.take"}, &Elab::np_take);
  add_builtins(t, {"np.take_along_axis"}, &Elab::np_take_along_axis);
}

}  // namespace ollie::spec::elab
