// Call handlers for numpy functions that a spec writes in terms of others: np.sign,
// np.exp2/log2/log10, np.isnan/isinf/isfinite, np.average, np.tensordot, np.moveaxis,
// np.broadcast_to, np.copy, np.flip, np.cumsum, np.finfo/np.iinfo's limits, np.nan_to_num,
// np.logaddexp, np.heaviside, and rounding to integers (floor, ceil, trunc, rint, round). Each is
// numpy's function as a composition of the ops the other handlers build, with numpy's dtypes and
// errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "support/half.h"

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

void Elab::add_derived_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.sign"}, &Elab::np_sign);
  add_builtins(t, {"np.exp2", "np.log2", "np.log10"}, &Elab::np_exp2_logs);
  add_builtins(t, {"np.isnan", "np.isinf", "np.isfinite"}, &Elab::np_isnan);
  add_builtins(t, {"np.average"}, &Elab::np_average);
  add_builtins(t, {"np.tensordot"}, &Elab::np_tensordot);
  add_builtins(t, {"np.moveaxis"}, &Elab::np_moveaxis);
  add_builtins(t, {"np.broadcast_to"}, &Elab::np_broadcast_to);
  add_builtins(t, {"np.copy"}, &Elab::np_copy);
  add_builtins(t, {"np.flip", "np.fliplr", "np.flipud"}, &Elab::np_flip);
  add_builtins(t, {"np.cumsum", "method.cumsum"}, &Elab::np_cumsum);
  add_builtins(t, {"np.finfo", "np.iinfo"}, &Elab::np_finfo);
  add_builtins(t, {"np.nan_to_num"}, &Elab::np_nan_to_num);
  add_builtins(t, {"np.logaddexp"}, &Elab::np_logaddexp);
  add_builtins(t, {"np.heaviside"}, &Elab::np_heaviside);
  add_builtins(t, {"np.floor", "np.ceil", "np.trunc", "np.fix", "np.rint"}, &Elab::np_floor);
  add_builtins(t, {"np.round", "np.around", "method.round"}, &Elab::np_round);
}

// np.sign: -1, 0 or 1 in x's dtype; NaN stays NaN, and -0.0 gives +0.0 as numpy gives it.
ValuePtr Elab::np_sign(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  const DType t = dtype_of(*x);
  if (t == DType::Bool) fail(c.loc, "np.sign of a boolean array is not defined (numpy refuses it)");
  const Shape s = shape_of(*x);
  auto filled = [&](double v) { return to_shape(builder_.constant(v, t, c.loc), s, c.loc); };
  // Not positive and not negative: zero (of either sign: +0) or NaN (x itself, x != x).
  ValueId rest = filled(0);
  if (ir::is_float(t)) rest = builder_.select(compare("!=", x, x, c.loc)->t, x->t, rest, c.loc);
  ValueId neg = builder_.select(compare("<", x, make_int(0), c.loc)->t, filled(-1), rest, c.loc);
  return make_tensor(
      builder_.select(compare(">", x, make_int(0), c.loc)->t, filled(1), neg, c.loc));
}

// np.exp2 is an op of its own; np.log2 and np.log10 are log(x) times the constant 1/ln(b):
// the reference and its bound are those of that composition (exact to the bound, as
// np.log1p is; numpy's own log2 of a power of two is exact, the composition may be an
// ulp off).
ValuePtr Elab::np_exp2_logs(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  if (dtype_of(*x) == DType::Bool)
    fail(c.loc, "np." + c.base + " of a boolean array is not supported",
         "convert it first: x.astype(np.float32)");
  if (c.base == "exp2") return make_tensor(checked(apply_unary(OpKind::Exp2, x, c.loc), c.loc));
  ValuePtr ln = make_tensor(checked(apply_unary(OpKind::Log, x, c.loc), c.loc));
  const double scale = c.base == "log2" ? std::numbers::log2e : std::numbers::log10e;
  ValuePtr r = binary("*", ln, make_float(scale), c.loc);
  return make_tensor(as_tensor(r, c.loc));
}

// np.isnan (x != x), np.isinf (|x| == inf), np.isfinite (|x| < inf): booleans; for
// integer arrays all false, false and true, as numpy gives.
ValuePtr Elab::np_isnan(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  const bool is_float = ir::is_float(dtype_of(*x));
  if (c.base == "isnan" || !is_float)
    return make_tensor(as_tensor(compare(c.base == "isfinite" ? "==" : "!=", x, x, c.loc), c.loc));
  ValuePtr magnitude = make_tensor(checked(apply_unary(OpKind::Abs, x, c.loc), c.loc));
  return make_tensor(as_tensor(
      compare(c.base == "isinf" ? "==" : "<", magnitude, make_float(INFINITY), c.loc), c.loc));
}

// np.average without weights is np.mean.
ValuePtr Elab::np_average(const BuiltinCall& c) {
  auto a = c.sig({"a", "axis", "weights", "returned", "keepdims"}, 1);
  if (!is_none(a[2]))
    fail(c.loc, "np.average with weights is not supported in a spec",
         "write it out: (a * w).sum(axis) / w.sum(axis)");
  if (a[3] && c.flag(a[3])) fail(c.loc, "np.average(returned=True) is not supported in a spec");
  return reduce("mean", c.tensor_arg(a[0], "a"), a[1], c.flag(a[4]), 0, std::nullopt, c.loc);
}

namespace {

// The axes of np.tensordot's `axes` for one operand: an int or a sequence of ints.
std::vector<int64_t> axis_list(Elab& el, const ValuePtr& v, SourceLoc loc) {
  std::vector<int64_t> out;
  if (v->kind == Kind::Tuple || v->kind == Kind::List)
    for (auto& it : v->items) out.push_back(el.to_const_int(it, loc, "a tensordot axis"));
  else
    out.push_back(el.to_const_int(v, loc, "a tensordot axis"));
  return out;
}

}  // namespace

// np.tensordot(a, b, axes=2): the sum over the last `axes` axes of a and the first of b,
// or over the pairs ([a axes], [b axes]); the result has a's free axes, then b's. Built
// as the einsum it is.
ValuePtr Elab::np_tensordot(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"a", "b", "axes"}, 2);
  ValuePtr x = c.tensor_arg(a[0], "a"), y = c.tensor_arg(a[1], "b");
  const int rx = static_cast<int>(shape_of(*x).size()), ry = static_cast<int>(shape_of(*y).size());
  std::vector<int> ax, ay;
  ValuePtr axes = a[2] ? a[2] : make_int(2);
  if (axes->kind == Kind::Tuple || axes->kind == Kind::List) {
    if (axes->items.size() != 2)
      fail(loc, "np.tensordot axes must be an int or a pair of axis lists");
    for (int64_t v : axis_list(*this, axes->items[0], loc)) ax.push_back(norm_axis(v, rx, loc));
    for (int64_t v : axis_list(*this, axes->items[1], loc)) ay.push_back(norm_axis(v, ry, loc));
  } else {
    const int64_t n = to_const_int(axes, loc, "np.tensordot axes");
    if (n < 0 || n > rx || n > ry)
      fail(loc, "np.tensordot axes=" + std::to_string(n) + " does not fit " + type_str(x->t) +
                    " and " + type_str(y->t));
    for (int i = 0; i < n; ++i) {
      ax.push_back(rx - static_cast<int>(n) + i);
      ay.push_back(i);
    }
  }
  if (ax.size() != ay.size()) fail(loc, "np.tensordot: the two axis lists differ in length");
  if (rx + ry > 26) fail(loc, "np.tensordot of arrays with more than 26 axes in all");
  std::string lx(static_cast<size_t>(rx), ' '), ly(static_cast<size_t>(ry), ' '), out;
  char next = 'a';
  for (size_t i = 0; i < ax.size(); ++i) {
    if (lx[static_cast<size_t>(ax[i])] != ' ' || ly[static_cast<size_t>(ay[i])] != ' ')
      fail(loc, "np.tensordot: an axis is summed twice");
    lx[static_cast<size_t>(ax[i])] = ly[static_cast<size_t>(ay[i])] = next++;
  }
  for (auto* labels : {&lx, &ly})
    for (char& l : *labels)
      if (l == ' ') out += (l = next++);
  return einsum(lx + "," + ly + "->" + out, {x, y}, loc);
}

// np.moveaxis(a, source, destination): the other axes keep their order.
ValuePtr Elab::np_moveaxis(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"a", "source", "destination"}, 3);
  ValuePtr x = c.tensor_arg(a[0], "a");
  const int rank = static_cast<int>(shape_of(*x).size());
  std::vector<int> src = axes_arg(a[1], rank, loc, false), dst = axes_arg(a[2], rank, loc, false);
  if (src.size() != dst.size())
    fail(loc, "np.moveaxis: `source` and `destination` must have the same number of elements");
  std::vector<int> order;
  for (int i = 0; i < rank; ++i)
    if (std::find(src.begin(), src.end(), i) == src.end()) order.push_back(i);
  std::vector<std::pair<int, int>> moves;
  for (size_t i = 0; i < src.size(); ++i) moves.emplace_back(dst[i], src[i]);
  std::sort(moves.begin(), moves.end());
  for (auto [d, s] : moves) order.insert(order.begin() + d, s);
  return make_tensor(builder_.transpose(x->t, order, loc));
}

// np.broadcast_to(array, shape): numpy's broadcasting rules, checked here.
ValuePtr Elab::np_broadcast_to(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"array", "shape", "subok"}, 2);
  ValueId x = c.array_arg(a[0], "array");
  Shape target;
  for (auto& d : c.int_seq(a[1], "a broadcast size")) target.push_back(to_dim(d, loc, "shape"));
  const Shape s = node(x).shape;
  bool ok = s.size() <= target.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const DimExpr& d = s[s.size() - 1 - i];
    ok = d == DimExpr::constant(1) || same_at_bounds(d, target[target.size() - 1 - i]);
  }
  if (!ok)
    fail(loc,
         "np.broadcast_to: " + type_str(x) + " cannot be broadcast to " + ir::shape_str(target),
         "each of its dims, aligned at the end, must equal the target's or be 1");
  return make_tensor(to_shape(x, target, loc));
}

// np.flip(m, axis=None), np.fliplr (axis 1), np.flipud (axis 0): m[..., ::-1, ...] on
// those axes.
ValuePtr Elab::np_flip(const BuiltinCall& c) {
  auto a = c.base == "flip" ? c.sig({"m", "axis"}, 1) : c.sig({"m"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "m");
  const int rank = static_cast<int>(shape_of(*x).size());
  std::vector<int> axes;
  if (c.base == "fliplr" || c.base == "flipud") {
    const int need = c.base == "fliplr" ? 2 : 1;
    if (rank < need)
      fail(c.loc, "np." + c.base + " needs an array of rank >= " + std::to_string(need));
    axes = {c.base == "fliplr" ? 1 : 0};
  } else {
    axes = axes_arg(a[1], rank, c.loc);  // None: every axis
  }
  std::vector<ValuePtr> idx;
  for (int i = 0; i < rank; ++i) {
    const bool flipped = std::find(axes.begin(), axes.end(), i) != axes.end();
    idx.push_back(make_seq(Kind::Slice, {nullptr, nullptr, flipped ? make_int(-1) : nullptr}));
  }
  return idx.empty() ? x : subscript(x, idx, c.loc);
}

// np.cumsum(a, axis=None, dtype=None) and a.cumsum(...): out[..., i] = the sum of a[..., j]
// for j <= i, as a masked sum over a square of the axis (a select, not a product with a 0/1
// matrix, so an inf or NaN past i does not reach out[i]); integers and bools sum in int64
// as numpy's do, floats in their own dtype. Quadratic in the axis: this states what is
// computed, a kernel may scan.
ValuePtr Elab::np_cumsum(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "axis", "dtype", "out"}, 1);
  if (!is_none(a[3])) fail(loc, "out= is not supported in a spec");
  ValueId x = c.array_arg(a[0], "a");
  if (is_none(a[1])) x = reshape_to(x, {make_int(-1)}, loc);
  const int rank = static_cast<int>(node(x).shape.size());
  if (rank == 0) x = reshape_to(x, {make_int(1)}, loc);
  const int axis = is_none(a[1]) ? 0 : norm_axis(to_const_int(a[1], loc, "axis"), rank, loc);
  DType t = node(x).dtype;
  if (auto dt = to_dtype(a[2], loc))
    t = *dt;
  else if (!ir::is_float(t))
    t = DType::I64;
  if (t == DType::Bool) fail(loc, "np.cumsum with a bool dtype is not supported");
  x = convert(x, t, loc);
  // The axis last, then [..., i, j]: a[..., j] where j <= i, else 0, summed over j.
  const int r = static_cast<int>(node(x).shape.size());
  std::vector<int> perm;
  for (int i = 0; i < r; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  x = builder_.transpose(x, perm, loc);
  Shape s = node(x).shape;
  const DimExpr n = s.back();
  Shape row = s, square = s;
  row.insert(row.end() - 1, DimExpr::constant(1));
  square.insert(square.end() - 1, n);
  const ValueId terms = builder_.broadcast(builder_.reshape(x, row, loc), square, loc);
  const ValueId i = builder_.iota({n, n}, 0, DType::I64, loc),
                j = builder_.iota({n, n}, 1, DType::I64, loc);
  const ValueId kept = to_shape(builder_.binary(OpKind::Le, j, i, loc), square, loc);
  const ValueId zero = to_shape(builder_.constant(0, t, loc), square, loc);
  ValueId sums =
      builder_.reduce(ir::ReduceKind::Sum, builder_.select(kept, terms, zero, loc), {r}, loc);
  std::vector<int> back(static_cast<size_t>(r));
  for (int k = 0; k < r; ++k) back[static_cast<size_t>(perm[static_cast<size_t>(k)])] = k;
  return make_tensor(checked(builder_.transpose(sums, back, loc), loc));
}

// np.finfo(dtype or array) and np.iinfo(...) (ml_dtypes.finfo too): an object whose
// attributes are the type's limits (type_info).
ValuePtr Elab::np_finfo(const BuiltinCall& c) {
  auto a = c.sig({"dtype"}, 1);
  std::optional<DType> t;
  if (a[0]->kind == Kind::Tensor && !a[0]->weak)
    t = node(a[0]->t).dtype;
  else
    t = to_dtype(a[0], c.loc);
  if (!t) fail(c.loc, "np." + c.base + " needs a dtype or an array", "e.g. np.finfo(np.float32)");
  const bool floating = ir::is_float(*t);
  if (c.base == "finfo" && !floating)
    fail(c.loc, std::string("np.finfo of ") + ir::dtype_name(*t) + ": not a floating type",
         "np.iinfo gives an integer type's limits");
  if (c.base == "iinfo" && (floating || *t == DType::Bool))
    fail(c.loc, std::string("np.iinfo of ") + ir::dtype_name(*t) + ": not an integer type",
         "np.finfo gives a floating type's limits");
  return make_named(Kind::Module, c.base + ":" + ir::dtype_name(*t));
}

// An attribute of np.finfo / np.iinfo: finfo's limits are NumPy scalars of the type (strong
// in promotion, as numpy's are), bits a Python int; iinfo's limits are Python ints.
ValuePtr Elab::type_info(const ValuePtr& info, const std::string& name, SourceLoc loc) {
  const std::string& m = info->s;
  const DType t = *ir::dtype_from_name(m.substr(6));
  const int bits = t == DType::F64 || t == DType::I64   ? 64
                   : t == DType::F32 || t == DType::I32 ? 32
                                                        : 16;
  if (name == "bits") return make_int(bits);
  if (name == "dtype") return make_dtype(t);
  if (m[0] == 'i') {
    const int64_t max = t == DType::I64 ? INT64_MAX : INT32_MAX;
    if (name == "max") return make_int(max);
    if (name == "min") return make_int(-max - 1);
    fail(loc, "np.iinfo has no attribute '" + name + "' in a spec",
         "its attributes: min, max, bits, dtype");
  }
  // Mantissa bits (without the implicit one) and exponent range of each floating type.
  const int mant = t == DType::F64 ? 52 : t == DType::F32 ? 23 : t == DType::F16 ? 10 : 7;
  const int emax = t == DType::F64 ? 1023 : t == DType::F16 ? 15 : 127;
  const double max = std::ldexp(2.0 - std::ldexp(1.0, -mant), emax);
  double v;
  if (name == "max")
    v = max;
  else if (name == "min")
    v = -max;
  else if (name == "eps")
    v = std::ldexp(1.0, -mant);
  else if (name == "tiny" || name == "smallest_normal")
    v = std::ldexp(1.0, 1 - emax);
  else if (name == "smallest_subnormal")
    v = std::ldexp(1.0, 1 - emax - mant);
  else if (name == "resolution")
    v = t == DType::F64 ? 1e-15 : t == DType::F32 ? 1e-6 : t == DType::F16 ? 1e-3 : 1e-2;
  else
    fail(loc, "np.finfo has no attribute '" + name + "' in a spec",
         "its attributes: min, max, eps, tiny, smallest_normal, smallest_subnormal, resolution, "
         "bits, dtype");
  if (name == "resolution") {  // a decimal: rounded to the type, as numpy stores it
    if (t == DType::F32) v = static_cast<double>(static_cast<float>(v));
    if (t == DType::F16) v = ollie_half::round_f16(v);
    if (t == DType::BF16) v = ollie_half::round_bf16(v);
  }
  return make_tensor(builder_.constant(v, t, loc));
}

// np.nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None): NaN, +inf and -inf
// replaced (by the type's max and min by default); integers unchanged.
ValuePtr Elab::np_nan_to_num(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"x", "copy", "nan", "posinf", "neginf"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  const DType t = dtype_of(*x);
  if (!ir::is_float(t)) return x;
  const Shape s = shape_of(*x);
  auto value = [&](const ValuePtr& given, const char* limit) {
    ValueId v = given && !is_none(given)
                    ? convert(as_tensor(given, loc), t, loc)
                    : type_info(make_named(Kind::Module, std::string("finfo:") + ir::dtype_name(t)),
                                limit, loc)
                          ->t;
    return to_shape(v, s, loc);
  };
  ValueId r = x->t;
  r = builder_.select(compare("==", x, make_float(-INFINITY), loc)->t, value(a[4], "min"), r, loc);
  r = builder_.select(compare("==", x, make_float(INFINITY), loc)->t, value(a[3], "max"), r, loc);
  ValueId nan =
      a[2] && !is_none(a[2]) ? value(a[2], "") : to_shape(builder_.constant(0, t, loc), s, loc);
  r = builder_.select(compare("!=", x, x, loc)->t, nan, r, loc);
  return make_tensor(checked(r, loc));
}

// The two operands (x1, x2) of a float ufunc, broadcast to one shape in their common
// dtype (float64 when both are integers or bools, as numpy's float loops take them).
DType Elab::float_operands(const BuiltinCall& c, std::vector<ValueId>& ids) {
  auto a = c.sig({"x1", "x2"}, 2);
  DType t = result_dtype({a[0], a[1]}, c.loc);
  if (!ir::is_float(t)) t = DType::F64;
  ids = unify({a[0], a[1]}, c.loc, t);
  return t;
}

// np.logaddexp(x1, x2) = log(exp(x1) + exp(x2)) as numpy computes it: max + log1p(exp(-|x1 -
// x2|)), and x1 + ln 2 where x1 == x2 (both infinite too); NaN stays NaN.
ValuePtr Elab::np_logaddexp(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  std::vector<ValueId> ids;
  float_operands(c, ids);
  ValuePtr x = make_tensor(ids[0]), y = make_tensor(ids[1]);
  ValuePtr big = make_tensor(builder_.binary(OpKind::Max, x->t, y->t, loc));
  ValuePtr gap =
      unary("-", make_tensor(apply_unary(OpKind::Abs, binary("-", x, y, loc), loc)), loc);
  ValuePtr e = make_tensor(apply_unary(OpKind::Exp, gap, loc));
  ValuePtr log1p = make_tensor(apply_unary(OpKind::Log, binary("+", make_float(1.0), e, loc), loc));
  ValuePtr sum = binary("+", big, log1p, loc);
  ValuePtr same = binary("+", x, make_float(std::numbers::ln2), loc);
  return make_tensor(checked(
      builder_.select(compare("==", x, y, loc)->t, as_tensor(same, loc), as_tensor(sum, loc), loc),
      loc));
}

// np.heaviside(x1, x2): 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, NaN where x1 is.
ValuePtr Elab::np_heaviside(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  std::vector<ValueId> ids;
  const DType t = float_operands(c, ids);
  ValuePtr x = make_tensor(ids[0]);
  const Shape s = node(ids[0]).shape;
  auto filled = [&](double v) { return to_shape(builder_.constant(v, t, loc), s, loc); };
  ValueId r = builder_.select(compare("==", x, make_int(0), loc)->t, ids[1], x->t, loc);
  r = builder_.select(compare("<", x, make_int(0), loc)->t, filled(0), r, loc);
  r = builder_.select(compare(">", x, make_int(0), loc)->t, filled(1), r, loc);
  return make_tensor(checked(r, loc));
}

// np.floor, np.ceil, np.trunc (np.fix), np.rint: exact ops on floats; integers and bools
// come back unchanged from the first three, as numpy 2 returns them, and rint makes
// integers float64.
ValuePtr Elab::np_floor(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "x");
  const DType t = dtype_of(*x);
  if (c.base == "rint" && t == DType::Bool)
    fail(c.loc, "np.rint of a boolean array is not supported",
         "convert it first: x.astype(np.float32)");
  if (!ir::is_float(t)) {
    if (c.base != "rint") return x;
    x = make_tensor(convert(x->t, DType::F64, c.loc));
  }
  const OpKind k = c.base == "floor"  ? OpKind::Floor
                   : c.base == "ceil" ? OpKind::Ceil
                   : c.base == "rint" ? OpKind::Rint
                                      : OpKind::Trunc;
  return make_tensor(checked(apply_unary(k, x, c.loc), c.loc));
}

// np.round(a, decimals=0) (np.around, a.round): half to even, as numpy computes it: rint
// of a times 10**decimals, divided back (for negative decimals, divided then multiplied),
// in the array's dtype. Integers with decimals >= 0 come back unchanged.
ValuePtr Elab::np_round(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "decimals", "out"}, 1);
  if (!is_none(a[2])) fail(loc, "out= is not supported in a spec");
  ValuePtr x = c.tensor_arg(a[0], "a");
  const int64_t d = a[1] ? to_const_int(a[1], loc, "decimals") : 0;
  const DType t = dtype_of(*x);
  if (!ir::is_float(t)) {
    if (d >= 0 && t != DType::Bool) return x;
    fail(loc, "np.round of an integer or boolean array with negative decimals is not supported",
         "convert it first: x.astype(np.float64)");
  }
  if (d == 0) return make_tensor(checked(apply_unary(OpKind::Rint, x, loc), loc));
  const ValuePtr scale = make_float(std::pow(10.0, static_cast<double>(d < 0 ? -d : d)));
  ValuePtr y = binary(d > 0 ? "*" : "/", x, scale, loc);
  y = make_tensor(checked(apply_unary(OpKind::Rint, y, loc), loc));
  return make_tensor(as_tensor(binary(d > 0 ? "/" : "*", y, scale, loc), loc));
}

}  // namespace ollie::spec::elab
