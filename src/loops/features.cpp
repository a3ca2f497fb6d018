// Features of a lowered loop nest (features.h): one walk over the kernel's statements that
// keeps the loops around the current point, and at each store estimates its work and the
// footprint of its accesses at every level from the loops' trip counts.
#include "loops/features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace ollie::loops {
namespace {

using ir::OpKind;

struct Loop {
  std::string var;
  ForKind kind;
  bool reduction;
  int64_t trip;
};

// One access of a store: a load in its value or index, or the store itself.
struct Access {
  std::string buffer;
  int bytes;                   // of one element
  std::set<std::string> vars;  // the loop variables its flat index reads
  std::string key;             // buffer and index: the same element stream twice counts once
};

// Float operations in `e`: arithmetic, calls and comparisons on float operands.
double float_ops(const Expr& e) {
  double n = 0;
  for_each_expr(e, [&](const Expr& x) {
    const bool op = x->kind == ExprKind::Unary || x->kind == ExprKind::Binary ||
                    x->kind == ExprKind::Call || x->kind == ExprKind::Select;
    const bool on_floats =
        ir::is_float(x->dtype) || (!x->args.empty() && ir::is_float(x->args.back()->dtype));
    if (op && on_floats) ++n;
  });
  return n;
}

std::optional<int64_t> binary_value(OpKind op, int64_t a, int64_t b) {
  switch (op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return b == 0 ? std::nullopt : std::optional<int64_t>(a / b);
    case OpKind::FloorDiv:
      if (b == 0) return std::nullopt;
      return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
    case OpKind::Mod: {
      if (b == 0) return std::nullopt;
      const int64_t m = a % b;
      return m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
    }
    case OpKind::Min: return std::min(a, b);
    case OpKind::Max: return std::max(a, b);
    case OpKind::Lt: return a < b;
    case OpKind::Le: return a <= b;
    case OpKind::Gt: return a > b;
    case OpKind::Ge: return a >= b;
    case OpKind::Eq: return a == b;
    case OpKind::Ne: return a != b;
    case OpKind::And: return a && b;
    case OpKind::Or: return a || b;
    default: return std::nullopt;
  }
}

class Walker {
 public:
  explicit Walker(const ir::DimBindings& dims) : dims_(dims) {}

  KernelFeatures run(const Kernel& k) {
    for (const auto& b : k.buffers)
      elements_[b.name] = ir::element_count(ir::evaluate_shape(b.shape, dims_));
    if (k.body) stmt(k.body);
    for (const auto& s : out_.stores) {
      out_.flops += s.flops;
      out_.bytes += s.bytes;
      out_.accessed_bytes += s.accessed_bytes;
    }
    return out_;
  }

 private:
  // An integer expression's value with the loop variables at their first iteration.
  std::optional<int64_t> value(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return e->int_value;
      case ExprKind::Dim: try { return e->dim.evaluate(dims_);
        } catch (const std::exception&) {
          return std::nullopt;
        }
      case ExprKind::Var: {
        const auto it = vars_.find(e->name);
        return it == vars_.end() ? std::nullopt : std::optional<int64_t>(it->second);
      }
      case ExprKind::Cast: return value(e->args[0]);
      case ExprKind::Select: {
        const auto c = value(e->args[0]);
        return c ? value(e->args[*c ? 1 : 2]) : std::nullopt;
      }
      case ExprKind::Binary: {
        const auto a = value(e->args[0]), b = value(e->args[1]);
        return a && b ? binary_value(e->op, *a, *b) : std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  double executions() const {
    double n = 1;
    for (const auto& l : loops_) n *= static_cast<double>(l.trip);
    return n;
  }

  void stmt(const Stmt& s) {
    switch (s->kind) {
      case StmtKind::Block:
        for (const auto& b : s->body) stmt(b);
        return;
      case StmtKind::If: stmt(s->body[0]); return;
      case StmtKind::Allocate: {
        const int64_t n = value(s->size).value_or(1);
        elements_[s->name] = n;
        local_depth_[s->name] = loops_.size();
        out_.local_bytes += n * ir::dtype_bytes(s->dtype);
        stmt(s->body[0]);
        return;
      }
      case StmtKind::For: loop(s); return;
      case StmtKind::Store: store(s); return;
      case StmtKind::Call: return;  // a micro-kernel: not modelled
    }
  }

  void loop(const Stmt& s) {
    const int64_t trip = std::max<int64_t>(0, value(s->extent).value_or(1));
    if (s->for_kind == ForKind::Vectorized) ++out_.vectorized_loops;
    if (s->for_kind == ForKind::Unrolled) ++out_.unrolled_loops;
    const bool parallel = s->for_kind == ForKind::Parallel;
    if (parallel) {
      ++out_.parallel_loops;
      const bool nested = std::any_of(loops_.begin(), loops_.end(),
                                      [](const Loop& l) { return l.kind == ForKind::Parallel; });
      if (!nested) out_.parallel_regions += static_cast<int64_t>(executions());
    }
    const auto saved =
        vars_.find(s->name) == vars_.end() ? std::nullopt : std::optional<int64_t>(vars_[s->name]);
    vars_[s->name] = value(s->min).value_or(0);
    loops_.push_back({s->name, s->for_kind, s->reduction, trip});
    stmt(s->body[0]);
    loops_.pop_back();
    if (saved)
      vars_[s->name] = *saved;
    else
      vars_.erase(s->name);
  }

  std::vector<Access> accesses_of(const Stmt& s) const {
    std::vector<Access> out;
    auto add = [&](const std::string& buffer, ir::DType dtype, const Expr& index) {
      Access a{buffer, ir::dtype_bytes(dtype), {}, buffer + "[" + to_text(index) + "]"};
      collect_vars(index, a.vars);
      out.push_back(std::move(a));
    };
    add(s->name, s->value->dtype, s->index);
    for (const Expr* e : {&s->value, &s->index})
      for_each_load(*e, [&](const Expr& l) { add(l->name, l->dtype, l->args[0]); });
    return out;
  }

  // Distinct elements `a` touches inside the loops from depth `level` inward.
  double footprint(const Access& a, size_t level) const {
    double n = 1;
    for (size_t j = level; j < loops_.size(); ++j)
      if (a.vars.count(loops_[j].var)) n *= static_cast<double>(loops_[j].trip);
    const auto it = elements_.find(a.buffer);
    return it == elements_.end() ? n : std::min(n, static_cast<double>(it->second));
  }

  double distinct_bytes(const std::vector<Access>& accesses, size_t level) const {
    std::set<std::string> seen;
    double bytes = 0;
    for (const auto& a : accesses)
      if (seen.insert(a.key).second) bytes += a.bytes * footprint(a, level);
    return bytes;
  }

  void store(const Stmt& s) {
    const std::vector<Access> accesses = accesses_of(s);
    const double per_execution = float_ops(s->value);
    StoreFeatures f;
    f.buffer = s->name;
    double inner = 1;  // iterations of the loops from the current level inward
    std::vector<LevelFeatures> levels(loops_.size() + 1);
    for (size_t l = loops_.size() + 1; l-- > 0;) {
      LevelFeatures& lf = levels[l];
      if (l < loops_.size()) {
        lf.loop = loops_[l].var;
        lf.kind = loops_[l].kind;
        lf.trip = loops_[l].trip;
        inner *= static_cast<double>(lf.trip);
      }
      lf.flops = per_execution * inner;
      lf.bytes = distinct_bytes(accesses, l);
    }
    f.levels = std::move(levels);
    f.executions = executions();
    f.flops = f.levels[0].flops;
    f.bytes = f.levels[0].bytes;
    for (const auto& a : accesses) f.accessed_bytes += a.bytes * f.executions;
    if (!loops_.empty()) f.innermost_trip = loops_.back().trip;
    for (const auto& l : loops_) {
      if (l.kind == ForKind::Vectorized) f.vector_lanes = l.trip;
      if (l.kind == ForKind::Parallel)
        f.parallel_extent = std::max<int64_t>(1, f.parallel_extent) * l.trip;
      if (l.kind == ForKind::Unrolled) {
        ++f.unrolled_loops;
        f.unroll_factor *= l.trip;
      }
    }
    f.accumulator_elements = accumulator(s, accesses[0]);
    f.reuse_bytes = reuse(accesses);
    out_.stores.push_back(std::move(f));
  }

  // The elements of the local array `s` accumulates into inside a reduction loop (inside
  // the array's allocation, a loop its index does not read); 0 when it does not.
  int64_t accumulator(const Stmt& s, const Access& stored) {
    const auto local = local_depth_.find(s->name);
    if (local == local_depth_.end()) return 0;
    for (size_t j = local->second; j < loops_.size(); ++j)
      if (loops_[j].reduction && !stored.vars.count(loops_[j].var)) {
        if (counted_accumulators_.insert(s->name).second)
          out_.accumulator_elements += elements_.at(s->name);
        return elements_.at(s->name);
      }
    return 0;
  }

  double reuse(const std::vector<Access>& accesses) const {
    double worst = 0;
    for (size_t i = 1; i < accesses.size(); ++i)  // the loads (accesses[0] is the store)
      for (size_t j = loops_.size(); j-- > 0;)
        if (loops_[j].trip > 1 && !accesses[i].vars.count(loops_[j].var)) {
          worst = std::max(worst, distinct_bytes(accesses, j + 1));
          break;
        }
    return worst;
  }

  const ir::DimBindings& dims_;
  std::map<std::string, int64_t> vars_, elements_;
  std::map<std::string, size_t> local_depth_;  // local buffer -> loops around its allocation
  std::set<std::string> counted_accumulators_;
  std::vector<Loop> loops_;
  KernelFeatures out_;
};

}  // namespace

KernelFeatures kernel_features(const Kernel& kernel, const ir::DimBindings& dims) {
  return Walker(dims).run(kernel);
}

}  // namespace ollie::loops
