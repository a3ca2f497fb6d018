// Call handlers for the scipy.special functions that numpy model code imports: erf (the
// exact GELU), expit (the sigmoid), softmax, log_softmax and logsumexp. Each computes what
// scipy's source computes, in the array's dtype (scipy keeps float32 as float32); erf is
// the IR's op, the others are compositions with the reference and bound of their steps.
#include <cmath>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

void Elab::add_scipy_builtins(BuiltinTable& t) {
  add_builtins(t, {"scipy.special.erf", "scipy.special.expit"}, &Elab::scipy_erf_expit);
  add_builtins(t, {"scipy.special.softmax", "scipy.special.log_softmax"}, &Elab::scipy_softmax);
  add_builtins(t, {"scipy.special.logsumexp"}, &Elab::scipy_logsumexp);
}

namespace {

// A float array argument: integers and bools become float64, as scipy's ufuncs make them.
ValuePtr float_arg(const BuiltinCall& c, const ValuePtr& v) {
  ValuePtr x = c.tensor_arg(v, "x");
  if (ir::is_float(c.el.node(x->t).dtype)) return x;
  return make_tensor(c.el.convert(x->t, DType::F64, c.loc));
}

}  // namespace

// scipy's shift by the max where the max is finite, 0 where it is +-inf or NaN.
ValuePtr Elab::finite_or_zero(const ValuePtr& m, SourceLoc loc) {
  ValuePtr finite =
      compare("<", make_tensor(apply_unary(OpKind::Abs, m, loc)), make_float(INFINITY), loc);
  ValueId zero = to_shape(builder_.constant(0, node(m->t).dtype, loc), node(m->t).shape, loc);
  return make_tensor(builder_.select(finite->t, m->t, zero, loc));
}

// erf(x) and expit(x) = 1 / (1 + exp(-x)).
ValuePtr Elab::scipy_erf_expit(const BuiltinCall& c) {
  auto a = c.sig({"x"}, 1);
  ValuePtr x = float_arg(c, a[0]);
  if (c.name == "scipy.special.erf")
    return make_tensor(checked(apply_unary(OpKind::Erf, x, c.loc), c.loc));
  ValuePtr e = make_tensor(checked(apply_unary(OpKind::Exp, unary("-", x, c.loc), c.loc), c.loc));
  return make_tensor(as_tensor(
      binary("/", make_float(1.0), binary("+", make_float(1.0), e, c.loc), c.loc), c.loc));
}

// softmax(x, axis=None): exp(x - max) / sum(exp(x - max)), scipy's form; log_softmax(x,
// axis=None): (x - m) - log(sum(exp(x - m))) with m the max, replaced by 0 where it is not
// finite, as scipy replaces it.
ValuePtr Elab::scipy_softmax(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"x", "axis"}, 1);
  ValuePtr x = float_arg(c, a[0]);
  ValuePtr m = reduce("max", x, a[1], true, 0, std::nullopt, loc);
  if (c.name == "scipy.special.log_softmax") m = finite_or_zero(m, loc);
  ValuePtr shifted = binary("-", x, m, loc);
  ValuePtr e = make_tensor(checked(apply_unary(OpKind::Exp, shifted, loc), loc));
  ValuePtr sum = reduce("sum", e, a[1], true, 0, std::nullopt, loc);
  if (c.name == "scipy.special.softmax")
    return make_tensor(as_tensor(binary("/", e, sum, loc), loc));
  ValuePtr log_sum = make_tensor(checked(apply_unary(OpKind::Log, sum, loc), loc));
  return make_tensor(as_tensor(binary("-", shifted, log_sum, loc), loc));
}

// logsumexp(a, axis=None, keepdims=False): m + log(sum(exp(a - m))) with m the max, 0 where
// it is not finite (scipy's form; weights `b` and return_sign are not supported).
ValuePtr Elab::scipy_logsumexp(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"a", "axis", "b", "keepdims", "return_sign"}, 1);
  if (!is_none(a[2]) || (a[4] && c.flag(a[4])))
    fail(loc, "scipy.special.logsumexp with b= or return_sign=True is not supported in a spec",
         "write it out: m + np.log(np.sum(b * np.exp(a - m)))");
  ValuePtr x = float_arg(c, a[0]);
  ValuePtr m = finite_or_zero(reduce("max", x, a[1], true, 0, std::nullopt, loc), loc);
  ValuePtr e = make_tensor(checked(apply_unary(OpKind::Exp, binary("-", x, m, loc), loc), loc));
  const bool keep = c.flag(a[3]);
  ValuePtr sum = reduce("sum", e, a[1], keep, 0, std::nullopt, loc);
  ValuePtr log_sum = make_tensor(checked(apply_unary(OpKind::Log, sum, loc), loc));
  if (!keep) m = make_tensor(builder_.reshape(m->t, node(log_sum->t).shape, loc));
  return make_tensor(as_tensor(binary("+", log_sum, m, loc), loc));
}

}  // namespace ollie::spec::elab
