// DimExpr: canonical integer polynomials over dim symbols, with floor-division atoms.
#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "ir/ir.h"

namespace ollie::ir {

struct DimExpr::FloorDivAtom {
  DimExpr numerator;
  int64_t divisor;
};

namespace {

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

DimExpr::DimExpr() = default;

DimExpr DimExpr::constant(int64_t value) {
  DimExpr e;
  if (value != 0) e.terms_[{}] = value;
  return e;
}

DimExpr DimExpr::symbol(const std::string& name) {
  DimExpr e;
  e.terms_[{name}] = 1;
  return e;
}

DimExpr DimExpr::operator+(const DimExpr& other) const {
  DimExpr r = *this;
  for (const auto& [key, coeff] : other.terms_) {
    int64_t c = (r.terms_[key] += coeff);
    if (c == 0) r.terms_.erase(key);
  }
  r.floordivs_.insert(other.floordivs_.begin(), other.floordivs_.end());
  return r;
}

DimExpr DimExpr::operator-(const DimExpr& other) const {
  return *this + other * DimExpr::constant(-1);
}

DimExpr DimExpr::operator*(const DimExpr& other) const {
  DimExpr r;
  for (const auto& [ka, ca] : terms_) {
    for (const auto& [kb, cb] : other.terms_) {
      std::vector<std::string> key = ka;
      key.insert(key.end(), kb.begin(), kb.end());
      std::sort(key.begin(), key.end());
      int64_t c = (r.terms_[key] += ca * cb);
      if (c == 0) r.terms_.erase(key);
    }
  }
  r.floordivs_ = floordivs_;
  r.floordivs_.insert(other.floordivs_.begin(), other.floordivs_.end());
  return r;
}

DimExpr DimExpr::floordiv(int64_t divisor) const {
  OLLIE_CHECK(divisor > 0, "DimExpr::floordiv by a non-positive constant");
  if (divisor == 1) return *this;
  // floor(q + R/c) = q + floor(R/c) when q is an integer: divide the terms whose
  // coefficients are multiples of c, keep the rest R as one floordiv atom.
  DimExpr exact, rest;
  for (const auto& [key, coeff] : terms_) {
    if (coeff % divisor == 0)
      exact.terms_[key] = coeff / divisor;
    else
      rest.terms_[key] = coeff;
  }
  exact.floordivs_ = floordivs_;
  rest.floordivs_ = floordivs_;
  if (rest.terms_.empty()) return exact;
  if (auto c = rest.as_constant()) return exact + DimExpr::constant(floor_div_int(*c, divisor));
  // floor(g·Y / (g·d)) = floor(Y / d) for an integer Y: cancel the common factor of the
  // remainder's coefficients and the divisor, so (8*X)//16 and (2*X)//4 are both X//2.
  int64_t common = divisor;
  for (const auto& [key, coeff] : rest.terms_)
    common = std::gcd(common, coeff < 0 ? -coeff : coeff);
  if (common > 1) {
    for (auto& [key, coeff] : rest.terms_) coeff /= common;
    divisor /= common;
    if (divisor == 1) return exact + rest;
  }
  // Drop atom definitions the remainder does not use, so equal atoms compare equal.
  DimExpr clean;
  clean.terms_ = rest.terms_;
  for (const auto& [key, coeff] : rest.terms_)
    for (const auto& atom : key)
      if (auto it = rest.floordivs_.find(atom); it != rest.floordivs_.end())
        clean.floordivs_.insert(*it);
  std::string numerator = clean.terms_.size() == 1 ? clean.str() : "(" + clean.str() + ")";
  std::string name = "(" + numerator + "//" + std::to_string(divisor) + ")";
  DimExpr atom;
  atom.terms_[{name}] = 1;
  atom.floordivs_ = clean.floordivs_;
  atom.floordivs_[name] = std::make_shared<FloorDivAtom>(FloorDivAtom{clean, divisor});
  return exact + atom;
}

std::optional<DimExpr> DimExpr::exact_div(const DimExpr& divisor) const {
  if (divisor.terms_.size() != 1) return std::nullopt;  // only monomial divisors
  const auto& [dkey, dcoeff] = *divisor.terms_.begin();
  if (dcoeff <= 0) return std::nullopt;
  DimExpr quotient;
  quotient.floordivs_ = floordivs_;
  for (const auto& [key, coeff] : terms_) {
    // Remove the divisor's atoms (a multiset) from this term's atoms.
    std::vector<std::string> rest;
    std::multiset<std::string> need(dkey.begin(), dkey.end());
    for (const auto& atom : key) {
      auto it = need.find(atom);
      if (it != need.end())
        need.erase(it);
      else
        rest.push_back(atom);
    }
    if (!need.empty()) return std::nullopt;
    quotient.terms_[rest] = coeff;
  }
  // The coefficient may not divide symbolically (e.g. HD / 2); the caller checks
  // exactness at the bound dims.
  return quotient.floordiv(dcoeff);
}

bool DimExpr::operator==(const DimExpr& other) const { return terms_ == other.terms_; }

bool DimExpr::operator<(const DimExpr& other) const { return terms_ < other.terms_; }

int64_t DimExpr::coefficient_of(const DimExpr& atom) const {
  if (atom.terms_.size() != 1 || atom.terms_.begin()->second != 1) return 0;
  auto it = terms_.find(atom.terms_.begin()->first);
  return it == terms_.end() ? 0 : it->second;
}

std::optional<int64_t> DimExpr::as_constant() const {
  if (terms_.empty()) return 0;
  if (terms_.size() == 1 && terms_.begin()->first.empty()) return terms_.begin()->second;
  return std::nullopt;
}

std::vector<std::string> DimExpr::symbols() const {
  std::set<std::string> out;
  for (const auto& [key, coeff] : terms_) {
    for (const auto& atom : key) {
      auto it = floordivs_.find(atom);
      if (it == floordivs_.end()) {
        out.insert(atom);
      } else {
        for (auto& s : it->second->numerator.symbols()) out.insert(s);
      }
    }
  }
  return {out.begin(), out.end()};
}

int64_t DimExpr::evaluate(const DimBindings& dims) const {
  int64_t total = 0;
  for (const auto& [key, coeff] : terms_) {
    int64_t term = coeff;
    for (const auto& atom : key) {
      auto fd = floordivs_.find(atom);
      if (fd != floordivs_.end()) {
        term *= floor_div_int(fd->second->numerator.evaluate(dims), fd->second->divisor);
        continue;
      }
      auto it = dims.find(atom);
      if (it == dims.end())
        throw UserError("dim '" + atom + "' has no value: give it one in DIMS or with --dims " +
                        atom + "=N");
      term *= it->second;
    }
    total += term;
  }
  return total;
}

std::string DimExpr::str() const {
  if (terms_.empty()) return "0";
  std::ostringstream out;
  bool first = true;
  auto emit = [&](const std::vector<std::string>& key, int64_t coeff) {
    int64_t mag = coeff < 0 ? -coeff : coeff;
    if (first) {
      if (coeff < 0) out << "-";
    } else {
      out << (coeff < 0 ? " - " : " + ");
    }
    first = false;
    bool need_star = false;
    if (key.empty() || mag != 1) {
      out << mag;
      need_star = true;
    }
    for (const auto& atom : key) {
      if (need_star) out << "*";
      out << atom;
      need_star = true;
    }
  };
  // Symbolic terms first (in key order), the constant last: "D + 1".
  for (const auto& [key, coeff] : terms_)
    if (!key.empty()) emit(key, coeff);
  if (auto it = terms_.find({}); it != terms_.end()) emit(it->first, it->second);
  return out.str();
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].str();
  }
  return s + "]";
}

std::vector<int64_t> evaluate_shape(const Shape& shape, const DimBindings& dims) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const auto& d : shape) out.push_back(d.evaluate(dims));
  return out;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

DimExpr SliceAxis::length() const {
  // ceil((stop - start) / step) == (stop - start + step - 1) // step
  return (stop - start + DimExpr::constant(step - 1)).floordiv(step);
}

}  // namespace ollie::ir
