// Elementwise ops of the reference interpreter: each op's exact value in double and its
// per-element bound, following the table in docs/error-bounds.md.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>

#include "interp/kernels.h"

namespace ollie::interp::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Evaluates r = f(a) everywhere, and e = bound(a, e_a, r) unless the input is exact
// and the op adds no error of its own (then every bound stays zero).
// Adds the underflow term `eta` (kernels.h: underflow_unit for IEEE arithmetic,
// library_underflow_unit for library functions) to bound `e` of result `r` when the
// computed result may land below the normal range and so round absolutely (or flush, for a
// library function): |r| < tiny + e, tiny the smallest normal of `dtype`. An exact zero
// (r = 0, e = 0) stays exact: no rounding happens there.
inline double with_underflow(double r, double e, double tiny, double eta) {
  if (eta == 0.0 || (r == 0.0 && e == 0.0) || !(std::fabs(r) < tiny + e)) return e;
  return e + eta;
}

// Rule for ops that know nothing about saturated operands: unbounded (always sound).
struct NoSat {
  template <class... Args>
  SatResult operator()(Args...) const {
    return unbounded();
  }
};

template <class F, class B, class S = NoSat>
Value map1(const Value& a, ir::DType dtype, double eta, F f, B bound, S sat = S{}) {
  Value out;
  out.t.dtype = dtype;
  out.t.shape = a.t.shape;
  const size_t n = a.t.data.size();
  out.t.data.resize(n);
  const double* x = a.t.data.data();
  double* r = out.t.data.data();
  for (size_t i = 0; i < n; ++i) r[i] = f(x[i]);
  if (!a.exact() || eta > 0) {
    const double tiny = subnormal_threshold(dtype);
    out.e.resize(n);
    for (size_t i = 0; i < n; ++i)
      out.e[i] = with_underflow(r[i], bound(x[i], a.exact() ? 0.0 : a.e[i], r[i]), tiny, eta);
    if (!a.lo.empty())
      for (size_t i = 0; i < n; ++i)
        if (a.lo[i] > 0) set_state(out, i, sat(x[i], a.e[i], a.lo[i], r[i]));
    finalize(out);
  }
  return out;
}

// `sat(x, e_x, lo_x, y, e_y, lo_y, r)` is asked for elements where an operand is
// saturated (lo > 0; 0 for the other operand when it is not).
template <class F, class B, class S = NoSat>
Value map2(const Value& a, const Value& b, ir::DType dtype, double eta, F f, B bound, S sat = S{}) {
  Value out;
  out.t.dtype = dtype;
  out.t.shape = a.t.shape;
  const size_t n = a.t.data.size();
  out.t.data.resize(n);
  const double* x = a.t.data.data();
  const double* y = b.t.data.data();
  double* r = out.t.data.data();
  for (size_t i = 0; i < n; ++i) r[i] = f(x[i], y[i]);
  if (!a.exact() || !b.exact() || eta > 0) {
    const double tiny = subnormal_threshold(dtype);
    out.e.resize(n);
    for (size_t i = 0; i < n; ++i)
      out.e[i] = with_underflow(
          r[i], bound(x[i], a.exact() ? 0.0 : a.e[i], y[i], b.exact() ? 0.0 : b.e[i], r[i]), tiny,
          eta);
    if (!a.lo.empty() || !b.lo.empty())
      for (size_t i = 0; i < n; ++i) {
        const double la = a.lo.empty() ? 0.0 : a.lo[i], lb = b.lo.empty() ? 0.0 : b.lo[i];
        if (la > 0 || lb > 0)
          set_state(
              out, i,
              sat(x[i], a.exact() ? 0.0 : a.e[i], la, y[i], b.exact() ? 0.0 : b.e[i], lb, r[i]));
      }
    finalize(out);
  }
  return out;
}

// |(|a| + e)^n - |a|^n| for n > 0, never below its first-order part (which the
// subtraction could lose to cancellation when e is tiny).
double power_spread(double a, double e, int64_t n) {
  if (e == 0.0) return 0.0;
  const double m = std::fabs(a);
  const double nd = static_cast<double>(n);
  const double exact = std::pow(m + e, nd) - std::pow(m, nd);
  const double first = nd * mul0(std::pow(m, nd - 1), e);
  return std::max(exact, first);
}

// numpy's floor division and modulo for floats (npy_divmod), so signed zeros and
// rounding match numpy.
void float_divmod(double a, double b, double& floordiv, double& mod) {
  mod = std::fmod(a, b);
  if (b == 0.0) {
    floordiv = a / b;
    return;
  }
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
}

// Python floor division on integers held in doubles; numpy gives 0 for x // 0.
void int_divmod(double a, double b, double& floordiv, double& mod) {
  const auto x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  if (y == 0) {
    floordiv = 0.0;
    mod = 0.0;
    return;
  }
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  floordiv = static_cast<double>(q);
  mod = static_cast<double>(x - q * y);
}

// Saturated stays saturated, its magnitude bound shrunk by `factor` (1 - the op's
// relative rounding error: rounding is monotone, so |fl(y)| >= lo·(1 - k·u)).
auto keep_saturated(double factor) {
  return [factor](double, double, double lo, double) { return saturated(lo * factor); };
}

// tanh and erf of a saturated value: the implementation lies between f(lo) and ±1.
template <class F>
auto toward_one(F f, double ku) {
  return [f, ku](double, double, double lo, double r) {
    const double ar = std::fabs(r);
    return bounded(std::max(ar - f(lo) * (1.0 - ku), 1.0 + ku - ar));
  };
}

double nan_max(double a, double b) {
  return (std::isnan(a) || std::isnan(b)) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return (std::isnan(a) || std::isnan(b)) ? kNaN : std::min(a, b);
}

Value eval_convert(const ir::Node& n, const Value& a) {
  const ir::DType from = a.t.dtype, to = n.dtype;
  auto value = [to](double x) { return round_to(to, x); };
  if (from == ir::DType::Bool || from == to)
    // Same values (0/1, or an unchanged dtype): the uncertainty carries over unchanged.
    return map1(
        a, to, 0.0, value, [](double, double e, double) { return e; }, keep_saturated(1.0));
  if (ir::is_float(to) && n.weak) {
    // A Python scalar taking the array's dtype: the reference keeps its exact value.
    const double u = ir::unit_roundoff(to), eta = underflow_unit(to);
    return map1(
        a, to, 0.0, [](double x) { return x; },
        [u, eta, to](double x, double e, double) {
          return e + (round_to(to, x) != x ? u * std::fabs(x) + eta : 0.0);
        },
        keep_saturated(1.0 - u));
  }
  if (to == ir::DType::F16 || to == ir::DType::BF16) {
    // Rounding is monotone: an implementation's operand lies in [x - e, x + e], so its
    // rounded value lies between the roundings of the two ends. The bound is the larger
    // distance from r to them: 0 unless that interval holds a rounding boundary (then the
    // neighbour), so a kernel that rounds toward zero is off by a whole spacing where the
    // bound is 0. (e + u|r| would miss a neighbour one spacing away when the operand's
    // uncertainty straddles a tie, common with f32 arithmetic and a 16-bit result.)
    // Subnormal results round the same way (gradual underflow, as numpy and ml_dtypes
    // round): a conversion that flushes them is off by up to the smallest normal, and wrong.
    const double u = ir::unit_roundoff(to);
    return map1(
        a, to, 0.0, value,
        [to](double x, double e, double r) {
          if (e == 0) return 0.0;
          const double lo = round_to(to, x - e), hi = round_to(to, x + e);
          return std::max(std::fabs(lo - r), std::fabs(hi - r));
        },
        keep_saturated(1.0 - u));
  }
  if (ir::is_float(to)) {
    const double u = ir::unit_roundoff(to), eta = underflow_unit(to);
    // An exact input rounds exactly as the reference did (subnormal results too: gradual
    // underflow); an uncertain one may round to a neighbour, one more rounding error away.
    return map1(
        a, to, 0.0, value,
        [u, eta](double, double e, double r) { return e > 0 ? e + u * std::fabs(r) + eta : 0.0; },
        keep_saturated(1.0 - u));
  }
  if (to == ir::DType::Bool)
    return map1(
        a, to, 0.0, value,
        [](double x, double e, double) { return (e > 0 && e >= std::fabs(x)) ? 1.0 : 0.0; },
        // A saturated value is certainly nonzero.
        [](double, double, double, double) { return bounded(0.0); });
  return map1(a, to, 0.0, value, [](double, double e, double) { return e > 0 ? e + 1.0 : 0.0; });
}

Value eval_powi(const ir::Node& n, const Value& a) {
  const int64_t p = n.exponent;
  const double pd = static_cast<double>(p);
  const double u = rounding_unit(n.dtype);
  const int64_t mag = p < 0 ? -p : p;
  auto value = [pd](double x) { return std::pow(x, pd); };
  if (p == 0)
    return map1(
        a, n.dtype, 0.0, [](double) { return 1.0; }, [](double, double, double) { return 0.0; });
  const double rounding = static_cast<double>(mag) * u;
  if (p > 0)
    return map1(
        a, n.dtype, u > 0 && p > 1 ? library_underflow_unit(n.dtype) : 0.0, value,
        [p, rounding](double x, double e, double r) {
          return power_spread(x, e, p) + rounding * std::fabs(r);
        },
        [pd, rounding](double, double, double lo, double) {
          return saturated(std::pow(lo, pd) * (1.0 - rounding));
        });
  // x^-m as 1 / x^m, with the Div rule applied to a numerator that is exactly 1.
  return map1(
      a, n.dtype, u > 0 ? library_underflow_unit(n.dtype) : 0.0, value,
      [mag, rounding](double x, double e, double r) {
        const double denom = std::pow(std::fabs(x), static_cast<double>(mag));
        const double e_denom = power_spread(x, e, mag);
        if (!(denom > e_denom)) return kInf;
        return mul0(std::fabs(r), e_denom) / (denom - e_denom) + rounding * std::fabs(r);
      },
      [pd, rounding, eta = library_underflow_unit(n.dtype)](double, double, double lo, double r) {
        // |x| >= lo, so |x^-m| <= lo^-m: both it and r lie in [0, lo^-m] in magnitude.
        return bounded(std::pow(lo, pd) * (1.0 + rounding) + std::fabs(r) + eta);
      });
}

}  // namespace

Value eval_unary(const ir::Node& n, const Value& a) {
  const double u = rounding_unit(n.dtype);
  const double ku = kLibraryUlps * u;
  // Library functions exist only on floats; they always round.
  const double lib_eta = u > 0 ? library_underflow_unit(n.dtype) : 0.0;
  const double ieee_eta = u > 0 ? underflow_unit(n.dtype) : 0.0;
  switch (n.kind) {
    case ir::OpKind::Neg:
      return map1(
          a, n.dtype, 0.0, [](double x) { return -x; }, [](double, double e, double) { return e; },
          keep_saturated(1.0));
    case ir::OpKind::Abs:
      return map1(
          a, n.dtype, 0.0, [](double x) { return std::fabs(x); },
          [](double, double e, double) { return e; }, keep_saturated(1.0));
    case ir::OpKind::Not:
      return map1(
          a, n.dtype, 0.0, [](double x) { return x != 0.0 ? 0.0 : 1.0; },
          [](double, double e, double) { return e; });
    case ir::OpKind::Exp:
      return map1(
          a, n.dtype, lib_eta, [](double x) { return std::exp(x); },
          [ku](double, double e, double r) { return mul0(r, std::expm1(e)) + ku * r; },
          [ku, eta = library_underflow_unit(n.dtype)](double x, double, double lo, double r) {
            // exp(+huge) is huge; exp(-huge) and r both lie in [0, exp(-lo)].
            if (x > 0) return saturated(std::exp(lo) * (1.0 - ku));
            return bounded(std::exp(-lo) * (1.0 + ku) + std::fabs(r) + eta);
          });
    case ir::OpKind::Exp2:
      // exp2(x) = exp(x ln2): exp's rule with the input error scaled by ln2.
      return map1(
          a, n.dtype, lib_eta, [](double x) { return std::exp2(x); },
          [ku](double, double e, double r) {
            return mul0(r, std::expm1(e * std::numbers::ln2)) + ku * r;
          },
          [ku, eta = library_underflow_unit(n.dtype)](double x, double, double lo, double r) {
            if (x > 0) return saturated(std::exp2(lo) * (1.0 - ku));
            return bounded(std::exp2(-lo) * (1.0 + ku) + std::fabs(r) + eta);
          });
    case ir::OpKind::Log:
      return map1(
          a, n.dtype, lib_eta, [](double x) { return std::log(x); },
          [ku](double x, double e, double r) {
            if (!(x > e)) return kInf;
            return -std::log1p(-e / x) + ku * std::fabs(r);
          },
          [ku](double x, double, double lo, double) {
            // log of a negative value is NaN for sure (the reference is NaN too, exact).
            return x > 0 ? saturated(std::log(lo) * (1.0 - ku)) : unbounded();
          });
    case ir::OpKind::Sqrt:
      return map1(
          a, n.dtype, ieee_eta, [](double x) { return std::sqrt(x); },
          [u](double x, double e, double r) {
            if (x == 0.0) return std::sqrt(e);
            return std::min(e / std::sqrt(x), std::sqrt(e)) + u * r;  // sqrt is correctly rounded
          },
          [u](double x, double, double lo, double) {
            return x > 0 ? saturated(std::sqrt(lo) * (1.0 - u)) : unbounded();
          });
    case ir::OpKind::Tanh:
      return map1(
          a, n.dtype, lib_eta, [](double x) { return std::tanh(x); },
          [ku](double x, double e, double r) {
            const double t = std::tanh(std::max(0.0, std::fabs(x) - e));
            return mul0(e, 1.0 - t * t) + ku * std::fabs(r);
          },
          toward_one([](double x) { return std::tanh(x); }, ku));
    case ir::OpKind::Erf:
      return map1(
          a, n.dtype, lib_eta, [](double x) { return std::erf(x); },
          [ku](double x, double e, double r) {
            const double m = std::max(0.0, std::fabs(x) - e);
            return 2.0 / std::sqrt(std::numbers::pi) * mul0(e, std::exp(-m * m)) +
                   ku * std::fabs(r);
          },
          toward_one([](double x) { return std::erf(x); }, ku));
    case ir::OpKind::Sin:
    case ir::OpKind::Cos: {
      const bool is_sin = n.kind == ir::OpKind::Sin;
      return map1(
          a, n.dtype, lib_eta, [is_sin](double x) { return is_sin ? std::sin(x) : std::cos(x); },
          [ku, u](double, double e, double r) { return e + ku * (std::fabs(r) + u); });
    }
    case ir::OpKind::Floor:
    case ir::OpKind::Ceil:
    case ir::OpKind::Trunc:
    case ir::OpKind::Rint: {
      // Exact, monotone and piecewise constant: an input off by e moves the result by at
      // most the jumps between x - e and x + e.
      double (*f)(double) =
          n.kind == ir::OpKind::Floor   ? static_cast<double (*)(double)>(std::floor)
          : n.kind == ir::OpKind::Ceil  ? static_cast<double (*)(double)>(std::ceil)
          : n.kind == ir::OpKind::Trunc ? static_cast<double (*)(double)>(std::trunc)
                                        : static_cast<double (*)(double)>(std::nearbyint);
      return map1(
          a, n.dtype, 0.0, f,
          [f](double x, double e, double r) {
            if (e == 0.0) return 0.0;
            return std::max(f(x + e) - r, r - f(x - e));
          },
          keep_saturated(1.0));
    }
    case ir::OpKind::PowI: return eval_powi(n, a);
    case ir::OpKind::Convert: return eval_convert(n, a);
    default: OLLIE_CHECK(false, std::string("eval_unary with ") + ir::op_name(n.kind));
  }
  return {};
}

Value eval_binary(const ir::Node& n, const Value& a, const Value& b) {
  const double u = rounding_unit(n.dtype);
  const double ieee_eta = u > 0 ? underflow_unit(n.dtype) : 0.0;
  const double lib_eta = u > 0 ? library_underflow_unit(n.dtype) : 0.0;
  const bool is_int = !ir::is_float(a.t.dtype);
  switch (n.kind) {
    case ir::OpKind::Add:
    case ir::OpKind::Sub: {
      const bool add = n.kind == ir::OpKind::Add;
      return map2(
          a, b, n.dtype, ieee_eta, [add](double x, double y) { return add ? x + y : x - y; },
          [u](double, double ea, double, double eb, double r) {
            return ea + eb + u * std::fabs(r);
          },
          [u, add](double x, double ea, double la, double y, double eb, double lb, double) {
            const double ys = add ? y : -y;
            // Both saturated: the same sign adds up, opposite signs may be inf - inf.
            if (la > 0 && lb > 0)
              return (x > 0) == (ys > 0) ? saturated((la + lb) * (1.0 - u)) : unbounded();
            if (la > 0) return saturated((la - std::fabs(y) - eb) * (1.0 - u));
            return saturated((lb - std::fabs(x) - ea) * (1.0 - u));
          });
    }
    case ir::OpKind::Mul:
      return map2(
          a, b, n.dtype, ieee_eta, [](double x, double y) { return x * y; },
          [u](double x, double ea, double y, double eb, double r) {
            return mul0(std::fabs(y), ea) + mul0(std::fabs(x), eb) + mul0(ea, eb) +
                   u * std::fabs(r);
          },
          [u](double x, double ea, double la, double y, double eb, double lb, double) {
            if (la > 0 && lb > 0) return saturated(la * lb * (1.0 - u));
            // The other factor must be certainly nonzero: inf * 0 is NaN.
            const double least = la > 0 ? std::fabs(y) - eb : std::fabs(x) - ea;
            if (!(least > 0)) return unbounded();
            return saturated((la > 0 ? la : lb) * least * (1.0 - u));
          });
    case ir::OpKind::Div:
      // Integer "/" truncates (C semantics); the front end converts numpy true division to float
      // first.
      return map2(
          a, b, n.dtype, ieee_eta,
          [is_int](double x, double y) { return is_int ? std::trunc(x / y) : x / y; },
          [u](double, double ea, double y, double eb, double r) {
            const double by = std::fabs(y);
            if (!(by > eb)) return kInf;
            return (ea + mul0(std::fabs(r), eb)) / (by - eb) + u * std::fabs(r);
          },
          [u, eta = underflow_unit(n.dtype)](double x, double ea, double la, double y, double eb,
                                             double lb, double r) {
            if (la > 0 && lb > 0) return unbounded();  // inf / inf is NaN
            if (la > 0) {
              if (!(std::fabs(y) > eb)) return unbounded();
              return saturated(la / (std::fabs(y) + eb) * (1.0 - u));
            }
            // Finite over huge: the implementation and r both lie in [0, (|x| + e_x)/lo] in
            // magnitude.
            return bounded((std::fabs(x) + ea) / lb * (1.0 + u) + std::fabs(r) + eta);
          });
    case ir::OpKind::Pow:
      return map2(
          a, b, n.dtype, lib_eta, [](double x, double y) { return std::pow(x, y); },
          [u](double x, double ea, double y, double eb, double r) {
            const double ar = std::fabs(r);
            const double lib = kLibraryUlps * u * ar;
            if (ea == 0.0 && eb == 0.0) return lib;
            if (!(x > ea)) return kInf;
            // |b' ln a' - b ln a| <= |b| |ln a' - ln a| + e_b |ln a'|, with
            // |ln a' - ln a| <= -log(1 - e_a/a); then |a'^b' - a^b| <= |r| (e^δ - 1).
            const double dlog = -std::log1p(-ea / x);
            const double delta = mul0(std::fabs(y), dlog) + mul0(eb, std::fabs(std::log(x)) + dlog);
            return mul0(ar, std::expm1(delta)) * (1.0 + 1e-6) + lib;
          });
    case ir::OpKind::Max:
    case ir::OpKind::Min: {
      const bool is_max = n.kind == ir::OpKind::Max;
      return map2(
          a, b, n.dtype, 0.0,
          [is_max](double x, double y) { return is_max ? nan_max(x, y) : nan_min(x, y); },
          [is_max](double x, double ea, double y, double eb, double r) {
            // Interval rule: the result lies in [max(x-ea, y-eb), max(x+ea, y+eb)]
            // (mirrored for min), so the losing operand's error counts only if it can win.
            if (!std::isfinite(r)) return std::max(ea, eb);
            // As distances from r, so the winner's error comes out exactly.
            const double dx = x - r, dy = y - r;
            const double below = is_max ? std::min(ea - dx, eb - dy) : std::max(ea - dx, eb - dy);
            const double above = is_max ? std::max(dx + ea, dy + eb) : std::min(dx + ea, dy + eb);
            return std::max(below, above);
          },
          [is_max](double x, double ea, double la, double y, double eb, double lb, double r) {
            const Interval p = interval_of(x, ea, la), q = interval_of(y, eb, lb);
            return from_interval(r, is_max ? Interval{std::max(p.lo, q.lo), std::max(p.hi, q.hi)}
                                           : Interval{std::min(p.lo, q.lo), std::min(p.hi, q.hi)});
          });
    }
    case ir::OpKind::FloorDiv:
    case ir::OpKind::Mod: {
      const bool want_div = n.kind == ir::OpKind::FloorDiv;
      return map2(
          a, b, n.dtype, want_div ? 0.0 : ieee_eta,
          [is_int, want_div](double x, double y) {
            double q, m;
            if (is_int)
              int_divmod(x, y, q, m);
            else
              float_divmod(x, y, q, m);
            return want_div ? q : m;
          },
          // Discontinuous: any uncertainty in the operands can move the result anywhere.
          // On exact operands the quotient is an exact integer, but a float modulo whose
          // sign differs from the divisor's is fmod + b, which rounds once (-1e-8 % 0.5).
          [u, want_div](double, double ea, double, double eb, double r) {
            if (ea != 0.0 || eb != 0.0) return kInf;
            return want_div ? 0.0 : u * std::fabs(r);
          });
    }
    case ir::OpKind::Lt:
    case ir::OpKind::Le:
    case ir::OpKind::Gt:
    case ir::OpKind::Ge:
    case ir::OpKind::Eq:
    case ir::OpKind::Ne: {
      const ir::OpKind k = n.kind;
      auto cmp = [k](double x, double y) -> double {
        switch (k) {
          case ir::OpKind::Lt: return x < y;
          case ir::OpKind::Le: return x <= y;
          case ir::OpKind::Gt: return x > y;
          case ir::OpKind::Ge: return x >= y;
          case ir::OpKind::Eq: return x == y;
          default: return x != y;
        }
      };
      return map2(
          a, b, n.dtype, 0.0, cmp,
          [](double x, double ea, double y, double eb, double) {
            const double slack = ea + eb;
            return (slack > 0 && std::fabs(x - y) <= slack) ? 1.0 : 0.0;
          },
          [k](double x, double ea, double la, double y, double eb, double lb, double) {
            // Certain when the operands' intervals decide the comparison alone.
            const Interval p = interval_of(x, ea, la), q = interval_of(y, eb, lb);
            const bool below = p.hi<q.lo, above = p.lo> q.hi;
            bool certain = false;
            switch (k) {
              case ir::OpKind::Lt: certain = below || p.lo >= q.hi; break;
              case ir::OpKind::Le: certain = p.hi <= q.lo || above; break;
              case ir::OpKind::Gt: certain = above || p.hi <= q.lo; break;
              case ir::OpKind::Ge: certain = p.lo >= q.hi || below; break;
              default: certain = below || above; break;  // Eq, Ne: only disjoint intervals decide
            }
            return bounded(certain ? 0.0 : 1.0);
          });
    }
    case ir::OpKind::And:
    case ir::OpKind::Or: {
      const bool is_and = n.kind == ir::OpKind::And;
      return map2(
          a, b, n.dtype, 0.0,
          [is_and](double x, double y) -> double {
            return is_and ? (x != 0 && y != 0) : (x != 0 || y != 0);
          },
          // A certain false (and) or certain true (or) operand decides alone.
          [is_and](double x, double ea, double y, double eb, double) {
            const double decisive = is_and ? 0.0 : 1.0;
            if ((ea == 0 && x == decisive) || (eb == 0 && y == decisive)) return 0.0;
            return (ea > 0 || eb > 0) ? 1.0 : 0.0;
          });
    }
    default: OLLIE_CHECK(false, std::string("eval_binary with ") + ir::op_name(n.kind));
  }
  return {};
}

Value eval_select(const Value& c, const Value& x, const Value& y, ir::DType dtype) {
  Value out;
  out.t.dtype = dtype;
  out.t.shape = x.t.shape;
  const size_t n = x.t.data.size();
  out.t.data.resize(n);
  for (size_t i = 0; i < n; ++i) out.t.data[i] = c.t.data[i] != 0.0 ? x.t.data[i] : y.t.data[i];
  if (c.exact() && x.exact() && y.exact()) return out;
  out.e.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double ex = x.exact() ? 0.0 : x.e[i], ey = y.exact() ? 0.0 : y.e[i];
    if (c.exact() || c.e[i] == 0.0) {
      const Value& chosen = c.t.data[i] != 0.0 ? x : y;
      out.e[i] = c.t.data[i] != 0.0 ? ex : ey;
      if (chosen.saturated(i)) set_state(out, i, saturated(chosen.lo[i]));
    } else {
      // (A saturated branch has e = inf, so an uncertain choice is unbounded.)
      // Either branch may be taken: cover the distance between them.
      const double xv = x.t.data[i], yv = y.t.data[i];
      out.e[i] = std::max(ex, ey) + (xv == yv ? 0.0 : std::fabs(xv - yv));
    }
  }
  finalize(out);
  return out;
}

}  // namespace ollie::interp::detail
