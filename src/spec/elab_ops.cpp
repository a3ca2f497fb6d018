// numpy operator semantics for the elaborator: NEP 50 dtype promotion, broadcasting,
// Python-scalar folding, arithmetic and comparison operators, and `@` (matmul).
#include <cmath>
#include <limits>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

constexpr int64_t kMaxInt = int64_t{1} << 40;

// Python kind order for weak scalars: bool < int < float.
int py_rank(const Elab& el, const Value& v) {
  switch (v.kind) {
    case Kind::Bool: return 0;
    case Kind::Int: return 1;
    case Kind::Float: return 2;
    case Kind::Tensor: {
      DType t = el.dtype_of(v);
      return t == DType::Bool ? 0 : ir::is_float(t) ? 2 : 1;
    }
    default: return -1;
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  bool fa = ir::is_float(a), fb = ir::is_float(b);
  if (fa && fb) {
    // f16 and bf16 below f32 below f64; f16 with bf16 gives f32 (ml_dtypes' rule).
    if (a == DType::F64 || b == DType::F64) return DType::F64;
    return DType::F32;
  }
  if (!fa && !fb) return DType::I64;
  return DType::F64;  // any float with an i32 or i64 array: numpy gives f64
}

double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t int_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

ValueId Elab::convert(ValueId id, DType t, SourceLoc loc) {
  if (node(id).dtype == t) return id;
  return builder_.convert(id, t, loc);
}

ValueId Elab::as_tensor(const ValuePtr& v, SourceLoc loc, std::optional<DType> dtype) {
  if (!in_entry_)
    fail(loc, "arrays at module level are not supported in a spec",
         "create arrays inside the entry function");
  switch (v->kind) {
    case Kind::Tensor:
      if (dtype && v->weak && ir::is_float(*dtype) && node(v->t).dtype != *dtype)
        return builder_.convert(v->t, *dtype, loc, /*weak=*/true);  // NEP 50: keeps its exact value
      return dtype ? convert(v->t, *dtype, loc) : v->t;
    case Kind::Bool: return builder_.constant(v->b ? 1.0 : 0.0, dtype.value_or(DType::Bool), loc);
    case Kind::Int: {
      DType t = dtype.value_or(DType::I64);
      if (t == DType::Bool) {
        ValueId i = builder_.dim_constant(v->i, DType::I64, loc);
        return builder_.binary(OpKind::Ne, i, builder_.constant(0, DType::I64, loc), loc);
      }
      return builder_.dim_constant(v->i, t, loc);
    }
    case Kind::Float: {
      DType t = dtype.value_or(DType::F64);
      if (!ir::is_float(t)) {
        if (!std::isfinite(v->f))
          fail(loc, "cannot convert " + std::to_string(v->f) + " to an integer dtype");
        if (t == DType::Bool) return builder_.constant(v->f != 0 ? 1 : 0, t, loc);
        return builder_.constant(std::trunc(v->f), t, loc);
      }
      return builder_.constant(v->f, t, loc);
    }
    default: fail(loc, "expected an array or a number, got " + kind_name(*v));
  }
}

DType Elab::result_dtype(const std::vector<ValuePtr>& vs, SourceLoc loc) {
  std::optional<DType> strong;
  int weak = -1;
  for (auto& v : vs) {
    if (v->kind == Kind::Tensor && !v->weak) {
      strong = strong ? promote_types(*strong, dtype_of(*v)) : dtype_of(*v);
    } else {
      int r = py_rank(*this, *v);
      if (r < 0) fail(loc, "expected an array or a number, got " + kind_name(*v));
      weak = std::max(weak, r);
    }
  }
  if (!strong) return weak == 0 ? DType::Bool : weak == 1 ? DType::I64 : DType::F64;
  if (weak == 2 && !ir::is_float(*strong)) return DType::F64;
  if (weak == 1 && *strong == DType::Bool) return DType::I64;
  return *strong;
}

// What to do about dims `a` and `b` that do not unify: when one is a literal that the
// other equals at the bound dims (model code that writes a head size 32 where the
// annotations say HD), the two ways to say what is meant.
std::string Elab::mismatch_hint(const DimExpr& a, const DimExpr& b) const {
  const std::string general =
      "numpy broadcasting aligns shapes from the right; a dim must be equal or 1 (reshape or add "
      "None axes)";
  const DimExpr* literal = a.is_constant() ? &a : b.is_constant() ? &b : nullptr;
  const DimExpr* symbolic = literal == &a ? &b : &a;
  if (!literal || symbolic->is_constant()) return general;
  try {
    if (symbolic->evaluate(graph_.bound_dims) != *literal->as_constant()) return general;
  } catch (const UserError&) {
    return general;
  }
  const std::string n = literal->str(), d = symbolic->str();
  return "the literal " + n + " equals " + d +
         " at the bound dims, but ollie checks the spec at "
         "other sizes too: if it holds only where " +
         d + " is " + n + ", say so in the spec (RELATIONS = [\"" + d + " = " + n +
         "\"], for a dim name), else compute the size from an array's shape (x.shape[-1]) "
         "instead of writing " +
         n;
}

bool Elab::same_at_bounds(const DimExpr& a, const DimExpr& b) const {
  // Only sizes built with floor division (HD//2, 2*(HD//2)) qualify: they equal their
  // counterpart wherever the spec is valid under numpy, whereas plain dims that merely
  // happen to have equal sizes in DIMS must still be reported as a mismatch.
  if (a == b) return true;
  if (a.str().find("//") == std::string::npos && b.str().find("//") == std::string::npos)
    return false;
  try {
    return a.evaluate(graph_.bound_dims) == b.evaluate(graph_.bound_dims);
  } catch (const UserError&) {
    return false;
  }
}

Shape Elab::broadcast_shapes(const std::vector<ValueId>& ids, SourceLoc loc) {
  Shape out;
  const DimExpr one = DimExpr::constant(1);
  for (size_t k = 0; k < ids.size(); ++k) {
    const Shape& s = node(ids[k]).shape;
    Shape r(std::max(out.size(), s.size()), one);
    for (size_t i = 0; i < r.size(); ++i) {
      const DimExpr* a = i + out.size() >= r.size() ? &out[i + out.size() - r.size()] : nullptr;
      const DimExpr* c = i + s.size() >= r.size() ? &s[i + s.size() - r.size()] : nullptr;
      if (!a)
        r[i] = *c;
      else if (!c)
        r[i] = *a;
      // A literal 1 yields to the other dim before same_at_bounds is asked: 1 and Q//2
      // agree at Q = 3, but only Q//2 stays right (and matches later ops) for every Q.
      else if (*a == *c || *c == one)
        r[i] = *a;
      else if (*a == one || same_at_bounds(*a, *c))
        r[i] = *a == one ? *c : *a;
      else {
        std::string lhs =
            k == 1 ? type_str(ids[0])
                   : std::string(ir::dtype_name(node(ids[0]).dtype)) + ir::shape_str(out);
        fail(loc,
             "cannot broadcast " + lhs + " and " + type_str(ids[k]) + ": dims " + a->str() +
                 " and " + c->str() + " differ",
             mismatch_hint(*a, *c));
      }
    }
    out = r;
  }
  return out;
}

ValueId Elab::to_shape(ValueId id, const Shape& shape_ref, SourceLoc loc) {
  // Copies: the arguments may point into graph_.nodes, which grows below.
  const Shape shape = shape_ref;
  const Shape s = node(id).shape;
  if (s == shape) return id;
  OLLIE_CHECK(s.size() <= shape.size(), "to_shape lowers the rank");
  Shape padded(shape.size() - s.size(), DimExpr::constant(1));
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t i = 0; i < padded.size(); ++i)
    if (same_at_bounds(padded[i], shape[i])) padded[i] = shape[i];
  id = builder_.reshape(id, padded, loc);
  return checked(builder_.broadcast(id, shape, loc), loc);
}

std::vector<ValueId> Elab::unify(const std::vector<ValuePtr>& vs, SourceLoc loc,
                                 std::optional<DType> dtype) {
  DType t = dtype ? *dtype : result_dtype(vs, loc);
  std::vector<ValueId> ids;
  for (auto& v : vs) ids.push_back(as_tensor(v, loc, t));
  Shape s = broadcast_shapes(ids, loc);
  for (auto& id : ids) id = to_shape(id, s, loc);
  return ids;
}

// ---------------------------------------------------------------------------- scalars

namespace {

ValuePtr fold_int(Elab& el, const std::string& op, const DimExpr& a, const DimExpr& b,
                  SourceLoc loc) {
  auto ca = a.as_constant(), cb = b.as_constant();
  auto guard = [&](const DimExpr& r) {
    int64_t v = el.eval_dim(r, loc);
    if (v > kMaxInt || v < -kMaxInt)
      el.fail(loc, "integer " + r.str() + " is too large for a spec");
    return make_int(r);
  };
  auto magnitude_ok = [&](const DimExpr& d) {
    if (auto c = d.as_constant()) return *c <= kMaxInt && *c >= -kMaxInt;
    int64_t v = el.eval_dim(d, loc);
    return v <= kMaxInt && v >= -kMaxInt;
  };
  if (!magnitude_ok(a) || !magnitude_ok(b)) el.fail(loc, "integer too large for a spec");
  if (op == "+") return guard(a + b);
  if (op == "-") return guard(a - b);
  if (op == "*") {
    long double va = static_cast<long double>(el.eval_dim(a, loc)),
                vb = static_cast<long double>(el.eval_dim(b, loc));
    if (va * vb > kMaxInt || va * vb < -kMaxInt)
      el.fail(loc, "integer product " + a.str() + " * " + b.str() + " is too large for a spec");
    return guard(a * b);
  }
  if (op == "//" || op == "%") {
    if (cb && *cb == 0) el.fail(loc, "integer division or modulo by zero");
    if (ca && cb)
      return make_int(op == "//" ? int_floordiv(*ca, *cb) : *ca - int_floordiv(*ca, *cb) * *cb);
    // A dim divisor divides exactly where a relation makes it a factor: (H*HD) // H == HD.
    if (auto q = cb ? std::nullopt : a.exact_div(b); q && *q * b == a)
      return make_int(op == "//" ? *q : DimExpr());
    if (!cb || *cb < 0)
      el.fail(loc, "'" + op + "' of dims needs a positive constant divisor (got " + b.str() + ")",
              "divide by a constant (D // 2), or state the relation that makes the divisor a "
              "factor (RELATIONS = [\"D = H * HD\"] makes D // H exact)");
    DimExpr q = a.floordiv(*cb);
    return op == "//" ? make_int(q) : guard(a - q * b);
  }
  if (op == "**") {
    if (!cb) el.fail(loc, "the exponent of an integer power must be a constant");
    if (*cb < 0) {
      if (!ca) return nullptr;  // a float result of a symbolic base: computed as an array scalar
      return make_float(std::pow(static_cast<double>(*ca), static_cast<double>(*cb)));
    }
    if (ca && (*ca == 0 || *ca == 1 || *ca == -1)) {
      // Any exponent: answer directly (a loop over a huge exponent would hang; found by fuzzing).
      if (*ca == 0) return make_int(DimExpr::constant(*cb == 0 ? 1 : 0));
      if (*ca == 1) return make_int(DimExpr::constant(1));
      return make_int(DimExpr::constant(*cb % 2 == 0 ? 1 : -1));
    }
    if (*cb > 64) el.fail(loc, "integer power too large for a spec");
    DimExpr r = DimExpr::constant(1);
    for (int64_t k = 0; k < *cb; ++k) {
      long double v = static_cast<long double>(el.eval_dim(r, loc)) *
                      static_cast<long double>(el.eval_dim(a, loc));
      if (v > kMaxInt || v < -kMaxInt)
        el.fail(loc, "integer power " + a.str() + " ** " + b.str() + " is too large for a spec");
      r = r * a;
    }
    return make_int(r);
  }
  if (op == "/") {
    if (cb && *cb == 0) el.fail(loc, "division by zero");
    if (ca && cb) return make_float(static_cast<double>(*ca) / static_cast<double>(*cb));
    return nullptr;
  }
  if (op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>") {
    if (!ca || !cb) el.fail(loc, "bitwise '" + op + "' on dims is not supported");
    if ((op == "<<" || op == ">>") && (*cb < 0 || *cb > 40))
      el.fail(loc, "shift count out of range");
    int64_t r = op == "&"    ? (*ca & *cb)
                : op == "|"  ? (*ca | *cb)
                : op == "^"  ? (*ca ^ *cb)
                : op == "<<" ? (*ca << *cb)
                             : (*ca >> *cb);
    return guard(DimExpr::constant(r));
  }
  return nullptr;
}

}  // namespace

ValuePtr Elab::binary(const std::string& op, const ValuePtr& a, const ValuePtr& b, SourceLoc loc) {
  auto bad = [&]() -> ValuePtr {
    fail(loc,
         "unsupported operand types for " + op + ": " + kind_name(*a) + " and " + kind_name(*b));
  };
  // Sequences: shape arithmetic like x.shape[:-1] + (-1, 2).
  bool seq_a = a->kind == Kind::Tuple || a->kind == Kind::List,
       seq_b = b->kind == Kind::Tuple || b->kind == Kind::List;
  if (seq_a || seq_b) {
    if (op == "+" && seq_a && seq_b && a->kind == b->kind) {
      auto items = a->items;
      items.insert(items.end(), b->items.begin(), b->items.end());
      if (items.size() > 4096) fail(loc, "sequence too long");
      return make_seq(a->kind, items);
    }
    if (op == "*" && (seq_a != seq_b)) {
      const ValuePtr& s = seq_a ? a : b;
      int64_t n = to_const_int(seq_a ? b : a, loc, "sequence repeat count");
      if (n * static_cast<int64_t>(s->items.size()) > 4096) fail(loc, "sequence too long");
      std::vector<ValuePtr> items;
      // An empty sequence repeated any number of times is empty: no loop over a huge count
      // (found by fuzzing: `3306285477545 * ()`).
      if (!s->items.empty())
        for (int64_t k = 0; k < n; ++k) items.insert(items.end(), s->items.begin(), s->items.end());
      return make_seq(s->kind, items);
    }
    return bad();
  }
  if (a->kind == Kind::Str && b->kind == Kind::Str && op == "+") return make_str(a->s + b->s);
  bool sa = is_scalar(*a), sb = is_scalar(*b);
  bool ta = a->kind == Kind::Tensor, tb = b->kind == Kind::Tensor;
  if ((!sa && !ta) || (!sb && !tb)) return bad();

  // Python scalars with known values fold like Python.
  if (!ta && !tb) {
    int ra = py_rank(*this, *a), rb = py_rank(*this, *b);
    if (op == "&" || op == "|" || op == "^") {
      if (ra == 0 && rb == 0)
        return make_bool(op == "&" ? (a->b && b->b) : op == "|" ? (a->b || b->b) : (a->b != b->b));
    }
    if (ra <= 1 && rb <= 1 && op != "@") {
      DimExpr ia = a->kind == Kind::Bool ? DimExpr::constant(a->b) : a->i;
      DimExpr ib = b->kind == Kind::Bool ? DimExpr::constant(b->b) : b->i;
      if (auto r = fold_int(*this, op, ia, ib, loc)) return r;
    } else if (op != "@") {
      auto num = [&](const Value& v) -> std::optional<double> {
        if (v.kind == Kind::Float) return v.f;
        if (v.kind == Kind::Bool) return v.b ? 1.0 : 0.0;
        if (auto c = v.i.as_constant()) return static_cast<double>(*c);
        return std::nullopt;
      };
      auto x = num(*a), y = num(*b);
      if (x && y) {
        if ((op == "/" || op == "//" || op == "%") && *y == 0) fail(loc, "float division by zero");
        if (op == "+") return make_float(*x + *y);
        if (op == "-") return make_float(*x - *y);
        if (op == "*") return make_float(*x * *y);
        if (op == "/") return make_float(*x / *y);
        if (op == "//") return make_float(py_floordiv(*x, *y));
        if (op == "%") return make_float(py_mod(*x, *y));
        if (op == "**") {
          if (*x == 0 && *y < 0) fail(loc, "0.0 cannot be raised to a negative power");
          if (*x < 0 && *y != std::floor(*y))
            fail(loc, "a negative number to a fractional power is complex",
                 "a spec computes in real numbers");
          return make_float(std::pow(*x, *y));
        }
        return bad();
      }
    }
    if (!in_entry_)
      fail(loc, "this module constant depends on a dim; compute it inside the entry function");
  }
  if (op == "@") {
    if (!ta || !tb || a->weak || b->weak)
      fail(loc, "matmul of a scalar is not allowed", "use * to scale by a scalar");
    return matmul(a, b, loc);
  }
  bool weak = !(ta && !a->weak) && !(tb && !b->weak);
  DType t = result_dtype({a, b}, loc);
  OpKind k;
  if (op == "+")
    k = t == DType::Bool ? OpKind::Or : OpKind::Add;
  else if (op == "*")
    k = t == DType::Bool ? OpKind::And : OpKind::Mul;
  else if (op == "-") {
    if (t == DType::Bool)
      fail(loc, "numpy does not subtract booleans",
           "use ^ (xor) or & ~ for masks, or .astype(np.int64) first");
    k = OpKind::Sub;
  } else if (op == "/") {
    if (!ir::is_float(t)) t = DType::F64;
    k = OpKind::Div;
  } else if (op == "//" || op == "%") {
    if (t == DType::Bool) t = DType::I64;
    k = op == "//" ? OpKind::FloorDiv : OpKind::Mod;
  } else if (op == "**") {
    if (t == DType::Bool) t = DType::I64;
    if (!tb && b->kind == Kind::Int && b->i.is_constant()) {
      int64_t e = *b->i.as_constant();
      if (e < 0 && !ir::is_float(t))
        fail(loc, "integers to negative integer powers are not allowed",
             "convert first: x.astype(np.float64) ** " + std::to_string(e));
      if (e > 1024 || e < -1024)
        fail(loc, "exponent " + std::to_string(e) + " is too large for a spec");
      return make_tensor(checked(builder_.powi(as_tensor(a, loc, t), e, loc), loc), weak);
    }
    if (!tb && b->kind == Kind::Float) {
      if (b->f == 0.5 && ir::is_float(t))
        return make_tensor(builder_.unary(OpKind::Sqrt, as_tensor(a, loc, t), loc), weak);
      if (b->f == std::floor(b->f) && std::fabs(b->f) <= 1024 && ir::is_float(t))
        return make_tensor(builder_.powi(as_tensor(a, loc, t), static_cast<int64_t>(b->f), loc),
                           weak);
    }
    if (!ir::is_float(t))
      fail(loc, "integer ** integer array powers are not supported in a spec",
           "convert first with .astype(np.float64), or use a constant integer exponent");
    k = OpKind::Pow;
  } else if (op == "&" || op == "|" || op == "^") {
    if (t != DType::Bool)
      fail(loc, "bitwise '" + op + "' is only supported on boolean masks here",
           "compare first, e.g. (x > 0) " + op + " (y > 0)");
    k = op == "&" ? OpKind::And : op == "|" ? OpKind::Or : OpKind::Ne;
  } else {
    fail(loc, "operator '" + op + "' is not supported on arrays in a spec");
  }
  auto ids = unify({a, b}, loc, t);
  return make_tensor(checked(builder_.binary(k, ids[0], ids[1], loc), loc), weak);
}

ValuePtr Elab::unary(const std::string& op, const ValuePtr& a, SourceLoc loc) {
  if (a->kind == Kind::Bool || a->kind == Kind::Int) {
    DimExpr v = a->kind == Kind::Bool ? DimExpr::constant(a->b) : a->i;
    if (op == "-") return make_int(v * DimExpr::constant(-1));
    if (op == "+") return make_int(v);
    if (op == "~") return make_int(v * DimExpr::constant(-1) - DimExpr::constant(1));
  }
  if (a->kind == Kind::Float) {
    if (op == "-") return make_float(-a->f);
    if (op == "+") return a;
    fail(loc, "bad operand type for unary " + op + ": a float");
  }
  if (a->kind != Kind::Tensor) fail(loc, "bad operand type for unary " + op + ": " + kind_name(*a));
  DType t = dtype_of(*a);
  if (op == "+") return a;
  if (op == "-") {
    if (t == DType::Bool) fail(loc, "numpy does not negate booleans", "use ~mask for logical not");
    return make_tensor(builder_.unary(OpKind::Neg, a->t, loc), a->weak);
  }
  if (op == "~") {
    if (t == DType::Bool) return make_tensor(builder_.unary(OpKind::Not, a->t, loc), a->weak);
    if (ir::is_float(t))
      fail(loc, "~ is not defined for float arrays", "use ~ on boolean masks, e.g. ~(x > 0)");
    const Shape s = shape_of(*a);
    ValueId n = builder_.unary(OpKind::Neg, a->t, loc);
    ValueId one = to_shape(builder_.constant(1, t, loc), s, loc);
    return make_tensor(builder_.binary(OpKind::Sub, n, one, loc), a->weak);
  }
  fail(loc, "unsupported unary operator '" + op + "'");
}

ValuePtr Elab::compare(const std::string& op, const ValuePtr& a, const ValuePtr& b, SourceLoc loc) {
  if (op == "is" || op == "is not") {
    bool same;
    if (a->kind == Kind::None || b->kind == Kind::None)
      same = a->kind == b->kind;
    else if (a->kind == Kind::DType && b->kind == Kind::DType)
      same = a->dtype == b->dtype;
    else if (a->kind == Kind::Bool && b->kind == Kind::Bool)
      same = a->b == b->b;
    else
      same = a.get() == b.get();
    return make_bool(op == "is" ? same : !same);
  }
  if (op == "in" || op == "not in") {
    if (b->kind == Kind::Dict && a->kind == Kind::Str) {
      bool found = std::find(b->keys.begin(), b->keys.end(), a->s) != b->keys.end();
      return make_bool(op == "in" ? found : !found);
    }
    if (b->kind != Kind::Tuple && b->kind != Kind::List)
      fail(loc, "'in' is only supported on tuples, lists and dicts");
    bool found = false;
    for (auto& it : b->items) {
      ValuePtr r = compare("==", a, it, loc);
      if (r->kind == Kind::Bool && r->b) found = true;
    }
    return make_bool(op == "in" ? found : !found);
  }
  OpKind k = op == "<"    ? OpKind::Lt
             : op == "<=" ? OpKind::Le
             : op == ">"  ? OpKind::Gt
             : op == ">=" ? OpKind::Ge
             : op == "==" ? OpKind::Eq
                          : OpKind::Ne;
  bool ta = a->kind == Kind::Tensor, tb = b->kind == Kind::Tensor;
  if (!ta && !tb) {
    bool both_num = is_scalar(*a) && is_scalar(*b);
    if ((op == "==" || op == "!=") && !both_num) {
      bool eq;
      if (a->kind == Kind::Str || b->kind == Kind::Str)
        eq = a->kind == b->kind && a->s == b->s;
      else if (a->kind == Kind::DType || b->kind == Kind::DType)
        eq = a->kind == b->kind && a->dtype == b->dtype;
      else if (a->kind == Kind::None || b->kind == Kind::None)
        eq = a->kind == b->kind;
      else if ((a->kind == Kind::Tuple || a->kind == Kind::List) &&
               (b->kind == Kind::Tuple || b->kind == Kind::List)) {
        eq = a->kind == b->kind && a->items.size() == b->items.size();
        for (size_t i = 0; eq && i < a->items.size(); ++i) {
          ValuePtr r = compare("==", a->items[i], b->items[i], loc);
          eq = r->kind == Kind::Bool && r->b;
        }
      } else {
        eq = false;
      }
      return make_bool(op == "==" ? eq : !eq);
    }
    if ((op == "==" || op == "!=") && a->kind == Kind::Int && b->kind == Kind::Int && a->i == b->i)
      return make_bool(op == "==");
    if (!is_scalar(*a) || !is_scalar(*b))
      fail(loc, "cannot compare " + kind_name(*a) + " and " + kind_name(*b) + " with " + op);
    auto num = [&](const Value& v) -> double {
      if (v.kind == Kind::Float) return v.f;
      if (v.kind == Kind::Bool) return v.b ? 1.0 : 0.0;
      return static_cast<double>(eval_dim(v.i, loc));
    };
    double x = num(*a), y = num(*b);
    bool r = k == OpKind::Lt   ? x < y
             : k == OpKind::Le ? x <= y
             : k == OpKind::Gt ? x > y
             : k == OpKind::Ge ? x >= y
             : k == OpKind::Eq ? x == y
                               : x != y;
    return make_bool(r);
  }
  if ((!ta && !is_scalar(*a)) || (!tb && !is_scalar(*b)))
    fail(loc, "cannot compare " + kind_name(*a) + " and " + kind_name(*b) + " with " + op);
  auto ids = unify({a, b}, loc);
  return make_tensor(checked(builder_.binary(k, ids[0], ids[1], loc), loc),
                     (!ta || a->weak) && (!tb || b->weak));
}

ValueId Elab::apply_unary(OpKind k, const ValuePtr& x, SourceLoc loc) {
  ValueId id = as_tensor(x, loc);
  DType t = node(id).dtype;
  if (k == OpKind::Abs || k == OpKind::Neg) {
    if (t == DType::Bool)
      fail(loc, std::string(ir::op_name(k)) + " of a boolean array is not supported",
           "convert with .astype(...) first");
    return builder_.unary(k, id, loc);
  }
  if (!ir::is_float(t)) id = convert(id, DType::F64, loc);
  return builder_.unary(k, id, loc);
}

// ---------------------------------------------------------------------------- matmul

ValuePtr Elab::matmul(const ValuePtr& a, const ValuePtr& b, SourceLoc loc) {
  ValueId x = a->t, y = b->t;
  const Shape xs = node(x).shape, ys = node(y).shape;
  std::string shown = type_str(x) + " @ " + type_str(y);
  if (xs.empty() || ys.empty())
    fail(loc, "matmul of a 0-d array: " + shown, "use * to scale by a scalar");
  DType t = result_dtype({a, b}, loc);
  if (t == DType::Bool)
    fail(loc, "matmul of boolean arrays is not supported",
         "convert with .astype(np.float32) first");
  x = convert(x, t, loc);
  y = convert(y, t, loc);
  const DimExpr& kx = xs.back();
  const DimExpr& ky = ys.size() == 1 ? ys[0] : ys[ys.size() - 2];
  if (kx != ky)
    fail(loc, "matmul shape mismatch: " + shown + ": " + kx.str() + " != " + ky.str(),
         kx.is_constant() != ky.is_constant()
             ? mismatch_hint(kx, ky)
             : "the last dim of the left operand must equal the second-to-last dim of the right "
               "one");
  // Batch dims broadcast; an operand whose batch dims are not a suffix of the result's is
  // broadcast explicitly, otherwise it keeps its shape and shares the trailing batch labels.
  Shape bx(xs.begin(), xs.end() - std::min<size_t>(xs.size(), 2)),
      by(ys.begin(), ys.end() - std::min<size_t>(ys.size(), 2));
  if (xs.size() == 1) bx.clear();
  if (ys.size() == 1) by.clear();
  Shape batch;
  {
    const DimExpr one = DimExpr::constant(1);
    size_t n = std::max(bx.size(), by.size());
    for (size_t i = 0; i < n; ++i) {
      const DimExpr* p = i + bx.size() >= n ? &bx[i + bx.size() - n] : nullptr;
      const DimExpr* q = i + by.size() >= n ? &by[i + by.size() - n] : nullptr;
      if (!p)
        batch.push_back(*q);
      else if (!q)
        batch.push_back(*p);
      else if (*p == *q || *q == one)
        batch.push_back(*p);
      else if (*p == one)
        batch.push_back(*q);
      else
        fail(loc,
             "matmul batch dims do not broadcast: " + shown + ": " + p->str() + " != " + q->str());
    }
  }
  auto fix_batch = [&](ValueId v, const Shape& vb, const Shape& core) {
    bool suffix = true;
    for (size_t i = 0; i < vb.size(); ++i)
      suffix = suffix && vb[i] == batch[batch.size() - vb.size() + i];
    if (suffix) return v;
    Shape full = batch;
    full.insert(full.end(), core.begin(), core.end());
    return to_shape(v, full, loc);
  };
  Shape cx(xs.end() - std::min<size_t>(xs.size(), 2), xs.end()),
      cy(ys.end() - std::min<size_t>(ys.size(), 2), ys.end());
  x = fix_batch(x, bx, cx);
  y = fix_batch(y, by, cy);
  size_t nbx = node(x).shape.size() - cx.size(), nby = node(y).shape.size() - cy.size();
  const int M = 100, K = 101, N = 102;  // placeholders renumbered below
  std::vector<int> lx, ly, lo;
  int nb = static_cast<int>(batch.size());
  for (size_t i = 0; i < nbx; ++i) lx.push_back(nb - static_cast<int>(nbx) + static_cast<int>(i));
  for (size_t i = 0; i < nby; ++i) ly.push_back(nb - static_cast<int>(nby) + static_cast<int>(i));
  for (int i = 0; i < nb; ++i) lo.push_back(i);
  if (cx.size() == 2) {
    lx.push_back(M);
    lo.push_back(M);
  }
  lx.push_back(K);
  ly.push_back(K);
  if (cy.size() == 2) {
    ly.push_back(N);
    lo.push_back(N);
  }
  auto renum = [&](std::vector<int>& v) {
    for (auto& l : v) l = l == M ? nb : l == K ? nb + 1 : l == N ? nb + 2 : l;
  };
  renum(lx);
  renum(ly);
  renum(lo);
  return make_tensor(checked(builder_.contract(x, y, lx, ly, lo, loc), loc));
}

}  // namespace ollie::spec::elab
