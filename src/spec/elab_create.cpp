// Call handlers for numpy's array creation: full/zeros/ones, their *_like forms,
// tri/triu/tril, eye/identity, arange and pad (constant mode).
#include <cmath>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

// A shape argument: one size or a tuple/list of sizes, checked at the bound dims.
Shape shape_arg(const BuiltinCall& c, const ValuePtr& v) {
  Shape s;
  if (v->kind == Kind::Tuple || v->kind == Kind::List) {
    for (auto& it : v->items) s.push_back(c.el.to_dim(it, c.loc, "a size in the shape"));
  } else {
    s.push_back(c.el.to_dim(v, c.loc, "the shape"));
  }
  c.el.check_shape(s, c.loc);
  return s;
}

// An array of shape s filled with `fill` (a scalar, or an array broadcast to s), of dtype
// dt or else the fill's. s by value: it may be a node's shape, and nodes grow.
ValueId filled(const BuiltinCall& c, Shape s, const ValuePtr& fill, std::optional<DType> dt) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  DType t = dt ? *dt : el.result_dtype({fill}, loc);
  ValueId v = el.as_tensor(fill, loc, t);
  if (!el.node(v).shape.empty()) return el.to_shape(v, s, loc);
  ValueId r = el.b().reshape(v, Shape(s.size(), DimExpr::constant(1)), loc);
  return el.checked(el.b().broadcast(r, s, loc), loc);
}

// The boolean mask of shape s = (rows, cols) that is true where col <= row + k (cmp Le: on
// and below the k-th diagonal) or col >= row + k (cmp Ge: on and above it).
ValueId diagonal_mask(const BuiltinCall& c, const Shape& s, const DimExpr& k, OpKind cmp) {
  ir::Builder& b = c.el.b();
  SourceLoc loc = c.loc;
  ValueId i = b.iota(s, 0, DType::I64, loc), j = b.iota(s, 1, DType::I64, loc);
  ValueId ik =
      b.binary(OpKind::Add, i, c.el.to_shape(b.dim_constant(k, DType::I64, loc), s, loc), loc);
  return b.binary(cmp, j, ik, loc);
}

// np.arange with integer bounds (dims allowed): int64 values start, start + step, ...
ValueId arange_of_ints(const BuiltinCall& c, const ValuePtr& start, const ValuePtr& stop,
                       const ValuePtr& step) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  DimExpr lo = el.to_dim(start, loc, "start"), hi = el.to_dim(stop, loc, "stop");
  int64_t st = el.to_const_int(step, loc, "the np.arange step");
  if (st == 0) el.fail(loc, "np.arange step must not be zero");
  // numpy's length is ceil((stop - start) / step). When the step divides the range at
  // the bound dims we use the exact quotient, so arange(0, HD, 2) lines up with HD//2
  // as real specs expect (for other dims numpy itself would fail to broadcast).
  DimExpr span = st > 0 ? hi - lo : lo - hi;
  int64_t ast = st > 0 ? st : -st;
  int64_t sv = el.eval_dim(span, loc);
  DimExpr len =
      sv % ast == 0 ? span.floordiv(ast) : (span + DimExpr::constant(ast - 1)).floordiv(ast);
  if (el.eval_dim(len, loc) < 0) len = DimExpr();
  Shape s = {len};
  el.check_shape(s, loc);
  ir::Builder& b = el.b();
  ValueId r = b.iota(s, 0, DType::I64, loc);
  if (st != 1) {
    const ValueId stride = b.constant(static_cast<double>(st), DType::I64, loc);
    r = b.binary(OpKind::Mul, r, el.to_shape(stride, s, loc), loc);
  }
  if (lo != DimExpr())
    r = b.binary(OpKind::Add, r, el.to_shape(b.dim_constant(lo, DType::I64, loc), s, loc), loc);
  return r;
}

// np.arange with a float among its bounds (no dims then): float64 values.
ValueId arange_of_floats(const BuiltinCall& c, const ValuePtr& start, const ValuePtr& stop,
                         const ValuePtr& step) {
  Elab& el = c.el;
  SourceLoc loc = c.loc;
  auto num = [&](const ValuePtr& v) -> double {
    if (v->kind == Kind::Float) return v->f;
    if (v->kind == Kind::Bool) return v->b;
    if (auto k = v->i.as_constant()) return static_cast<double>(*k);
    el.fail(loc, "np.arange with float and dim bounds together is not supported",
            "use integer bounds, then scale");
  };
  double lo = num(start), hi = num(stop), st = num(step);
  if (st == 0 || !std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(st))
    el.fail(loc, "np.arange bounds must be finite and the step nonzero");
  double n = std::ceil((hi - lo) / st);
  if (n > 1e9) el.fail(loc, "np.arange is too large for a spec");
  int64_t len = n > 0 ? static_cast<int64_t>(n) : 0;
  Shape s = {DimExpr::constant(len)};
  ir::Builder& b = el.b();
  ValueId r = b.iota(s, 0, DType::F64, loc);
  r = b.binary(OpKind::Mul, r, el.to_shape(b.constant(st, DType::F64, loc), s, loc), loc);
  return b.binary(OpKind::Add, r, el.to_shape(b.constant(lo, DType::F64, loc), s, loc), loc);
}

}  // namespace

void Elab::add_creation_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.full", "np.zeros", "np.ones"}, &Elab::np_full);
  add_builtins(t, {"np.full_like", "np.zeros_like", "np.ones_like"}, &Elab::np_full_like);
  add_builtins(t, {"np.tri"}, &Elab::np_tri);
  add_builtins(t, {"np.triu", "np.tril"}, &Elab::np_triu_tril);
  add_builtins(t, {"np.arange"}, &Elab::np_arange);
  add_builtins(t, {"np.eye", "np.identity"}, &Elab::np_eye);
  add_builtins(t, {"np.pad"}, &Elab::np_pad);
}

// np.full(shape, fill_value, dtype), np.zeros(shape, dtype), np.ones(shape, dtype)
ValuePtr Elab::np_full(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  bool is_full = c.base == "full";
  auto a = is_full ? c.sig({"shape", "fill_value", "dtype"}, 2) : c.sig({"shape", "dtype"}, 1);
  auto dt = to_dtype(is_full ? a[2] : a[1], loc);
  if (!is_full && !dt) dt = DType::F64;
  ValuePtr fill = is_full ? a[1] : make_int(c.base == "ones" ? 1 : 0);
  return make_tensor(filled(c, shape_arg(c, a[0]), fill, dt));
}

// np.full_like(a, fill_value, dtype), np.zeros_like(a, dtype), np.ones_like(a, dtype)
ValuePtr Elab::np_full_like(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  bool is_full = c.base == "full_like";
  auto a = is_full ? c.sig({"a", "fill_value", "dtype"}, 2) : c.sig({"a", "dtype"}, 1);
  ValueId x = c.array_arg(a[0], "a");
  auto dt = to_dtype(is_full ? a[2] : a[1], loc);
  if (!dt) dt = node(x).dtype;
  ValuePtr fill = is_full ? a[1] : make_int(c.base == "ones_like" ? 1 : 0);
  return make_tensor(filled(c, node(x).shape, fill, dt));
}

// np.tri(N, M, k, dtype): ones on and below the k-th diagonal of an N x M array.
ValuePtr Elab::np_tri(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"N", "M", "k", "dtype"}, 1);
  DimExpr n = to_dim(a[0], loc, "N"), m = is_none(a[1]) ? n : to_dim(a[1], loc, "M");
  DimExpr k = is_none(a[2]) ? DimExpr() : to_dim(a[2], loc, "k");
  auto dt = to_dtype(a[3], loc);
  Shape s = {n, m};
  check_shape(s, loc);
  ValueId mask = diagonal_mask(c, s, k, OpKind::Le);
  return make_tensor(convert(mask, dt.value_or(DType::F64), loc));
}

// np.eye(N, M=None, k=0, dtype=float) and np.identity(n, dtype=float): ones on the k-th
// diagonal.
ValuePtr Elab::np_eye(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  const bool eye = c.base == "eye";
  auto a = eye ? c.sig({"N", "M", "k", "dtype"}, 1) : c.sig({"n", "dtype"}, 1);
  DimExpr n = to_dim(a[0], loc, "N");
  DimExpr m = eye && !is_none(a[1]) ? to_dim(a[1], loc, "M") : n;
  DimExpr k = eye && !is_none(a[2]) ? to_dim(a[2], loc, "k") : DimExpr();
  auto dt = to_dtype(a[eye ? 3 : 1], loc);
  Shape s = {n, m};
  check_shape(s, loc);
  return make_tensor(convert(diagonal_mask(c, s, k, OpKind::Eq), dt.value_or(DType::F64), loc));
}

// np.triu(m, k) and np.tril(m, k): m with zeros below (triu) or above (tril) the k-th
// diagonal of its last two axes.
ValuePtr Elab::np_triu_tril(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"m", "k"}, 1);
  ValueId x = c.array_arg(a[0], "m");
  const Shape xs = node(x).shape;
  if (xs.size() < 2) fail(loc, "np." + c.base + " needs an array of rank >= 2, got " + type_str(x));
  DimExpr k = is_none(a[1]) ? DimExpr() : to_dim(a[1], loc, "k");
  Shape s = {xs[xs.size() - 2], xs.back()};
  ValueId mask = diagonal_mask(c, s, k, c.base == "triu" ? OpKind::Ge : OpKind::Le);
  mask = to_shape(mask, xs, loc);
  ValueId zero = to_shape(builder_.constant(0, node(x).dtype, loc), xs, loc);
  return make_tensor(builder_.select(mask, x, zero, loc));
}

// np.arange(stop) and np.arange(start, stop, step, dtype)
ValuePtr Elab::np_arange(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"start", "stop", "step", "dtype"}, 1);
  ValuePtr start = a[0], stop = a[1], step = a[2];
  if (is_none(stop)) {
    stop = start;
    start = make_int(0);
  }
  if (is_none(step)) step = make_int(1);
  auto dt = to_dtype(a[3], loc);
  bool all_int = true;
  for (auto& v : {start, stop, step}) {
    if (v->kind == Kind::Tensor) to_dim(v, loc, "an np.arange bound");
    if (v->kind == Kind::Float)
      all_int = false;
    else if (v->kind != Kind::Int && v->kind != Kind::Bool)
      fail(loc, "np.arange bounds must be numbers, not " + kind_name(*v));
  }
  ValueId r =
      all_int ? arange_of_ints(c, start, stop, step) : arange_of_floats(c, start, stop, step);
  return make_tensor(dt ? convert(r, *dt, loc) : r);
}

namespace {

// np.pad's pad_width, numpy's forms: n, (n,), (before, after), ((before, after),) for every
// axis, or one (before, after) or (n,) per axis.
std::vector<std::pair<DimExpr, DimExpr>> pad_widths(const BuiltinCall& c, const ValuePtr& v,
                                                    size_t rank) {
  Elab& el = c.el;
  auto is_seq = [](const ValuePtr& x) { return x->kind == Kind::Tuple || x->kind == Kind::List; };
  auto pair_of = [&](const ValuePtr& x) -> std::pair<DimExpr, DimExpr> {
    if (!is_seq(x)) return {el.to_dim(x, c.loc, "a pad width"), el.to_dim(x, c.loc, "a pad width")};
    if (x->items.size() == 1) {
      const DimExpr n = el.to_dim(x->items[0], c.loc, "a pad width");
      return {n, n};
    }
    if (x->items.size() != 2)
      el.fail(c.loc, "np.pad: a pad width is n or (before, after), got " +
                         std::to_string(x->items.size()) + " values");
    return {el.to_dim(x->items[0], c.loc, "a pad width"),
            el.to_dim(x->items[1], c.loc, "a pad width")};
  };
  std::vector<std::pair<DimExpr, DimExpr>> out;
  if (is_seq(v) && !v->items.empty() && is_seq(v->items[0])) {
    if (v->items.size() != 1 && v->items.size() != rank)
      el.fail(c.loc,
              "np.pad: " + std::to_string(v->items.size()) + " pad widths for an array of rank " +
                  std::to_string(rank),
              "give one (before, after) per axis, or one for all");
    for (size_t i = 0; i < rank; ++i)
      out.push_back(pair_of(v->items[v->items.size() == 1 ? 0 : i]));
  } else {
    out.assign(rank, pair_of(v));
  }
  for (auto& [before, after] : out)
    if (el.eval_dim(before, c.loc) < 0 || el.eval_dim(after, c.loc) < 0)
      el.fail(c.loc, "np.pad: pad widths must be non-negative");
  return out;
}

}  // namespace

// np.pad(array, pad_width, mode='constant', constant_values=0): each axis grown by its
// before and after widths of the constant (cast to the array's dtype, as numpy casts it),
// built as concatenations.
ValuePtr Elab::np_pad(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"array", "pad_width", "mode", "constant_values"}, 2);
  ValueId x = c.array_arg(a[0], "array");
  if (a[2] && !(a[2]->kind == Kind::Str && a[2]->s == "constant"))
    fail(loc, "np.pad with a mode other than 'constant' is not supported in a spec",
         "write edge or reflect padding with slices and np.concatenate");
  ValuePtr fill = a[3] ? a[3] : make_int(0);
  if (fill->kind == Kind::Tuple || fill->kind == Kind::List)
    fail(loc, "np.pad with per-axis constant_values is not supported in a spec",
         "pad with one constant, or pad each axis in its own np.pad");
  const DType t = node(x).dtype;
  const auto widths = pad_widths(c, a[1], node(x).shape.size());
  for (size_t axis = 0; axis < widths.size(); ++axis) {
    std::vector<ValueId> parts;
    for (const DimExpr& w : {widths[axis].first, widths[axis].second}) {
      if (eval_dim(w, loc) == 0) continue;
      Shape s = node(x).shape;
      s[axis] = w;
      parts.push_back(filled(c, s, fill, t));
    }
    if (parts.empty()) continue;
    const bool before = eval_dim(widths[axis].first, loc) > 0;
    parts.insert(parts.begin() + (before ? 1 : 0), x);
    x = checked(builder_.concat(parts, static_cast<int>(axis), loc), loc);
  }
  return make_tensor(x);
}

}  // namespace ollie::spec::elab
