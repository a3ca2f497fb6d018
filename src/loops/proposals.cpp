// The building blocks of proposed directives (proposals.h): trying one against the
// stages, building one, and what the proposers ask of a stage (its loops' strides, its
// operands' sizes, the vector width).
#include "loops/proposals.h"

#include <algorithm>

namespace ollie::loops {
namespace {

using ir::OpKind;

// The coefficient of `var` in the linear index expression `e`; nullopt when `e` is not
// linear in it with a constant coefficient.
std::optional<int64_t> coefficient(const Expr& e, const std::string& var) {
  if (!mentions(e, var)) return 0;
  switch (e->kind) {
    case ExprKind::Var: return 1;
    case ExprKind::Binary: {
      const auto a = coefficient(e->args[0], var), b = coefficient(e->args[1], var);
      if (!a || !b) return std::nullopt;
      if (e->op == OpKind::Add) return *a + *b;
      if (e->op == OpKind::Sub) return *a - *b;
      if (e->op == OpKind::Mul && e->args[1]->kind == ExprKind::IntImm)
        return *a * e->args[1]->int_value;
      if (e->op == OpKind::Mul && e->args[0]->kind == ExprKind::IntImm)
        return *b * e->args[0]->int_value;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace

bool try_apply(const ir::Graph& g, Stages& st, Schedule& out, const Directive& d,
               std::string* reason) {
  Stages copy = st;
  try {
    apply_directive(g, copy, d);
  } catch (const ScheduleError& e) {
    if (reason) *reason = e.reason();
    return false;
  }
  st = std::move(copy);
  out.directives.push_back(d);
  return true;
}

std::optional<std::pair<std::string, std::string>> split_loop(const ir::Graph& g, Stages& st,
                                                              Schedule& out,
                                                              const std::string& name,
                                                              const std::string& loop,
                                                              int64_t factor) {
  const auto& before = st.stages[static_cast<size_t>(st.find(name))].loops;
  size_t x = 0;
  while (x < before.size() && before[x].name != loop) ++x;
  if (x == before.size() ||
      !try_apply(g, st, out, make_directive(DirectiveKind::Split, name, {loop}, factor)))
    return std::nullopt;
  const auto& after = st.stages[static_cast<size_t>(st.find(name))].loops;
  return std::make_pair(after[x].name, after[x + 1].name);
}

bool reads(const Expr& e, const std::string& buffer) {
  std::vector<Expr> loads;
  collect_loads(e, buffer, loads);
  return !loads.empty();
}

Directive make_directive(DirectiveKind k, const std::string& stage, std::vector<std::string> args,
                         int64_t factor) {
  return Directive{k, stage, std::move(args), factor, 0};
}

void reorder_to(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage,
                const std::vector<std::string>& order) {
  std::vector<std::string> now;
  for (const auto& l : st.stages[static_cast<size_t>(st.find(stage))].loops)
    if (std::find(order.begin(), order.end(), l.name) != order.end()) now.push_back(l.name);
  if (now != order) try_apply(g, st, out, make_directive(DirectiveKind::Reorder, stage, order));
}

void move_innermost(const ir::Graph& g, Stages& st, Schedule& out, const std::string& stage,
                    const std::string& loop) {
  std::vector<std::string> order;
  for (const auto& l : st.stages[static_cast<size_t>(st.find(stage))].loops)
    if (l.name != loop) order.push_back(l.name);
  order.push_back(loop);
  reorder_to(g, st, out, stage, order);
}

Expr read_index(const Stage& s, const Expr& load) {
  for (const auto& p : s.packs) {
    if (p.source != load->name || p.loads_rewritten || load->args.size() != p.extent.size() + 1)
      continue;
    std::vector<Expr> idx;
    for (size_t d : packed_order(p)) idx.push_back(load->args[d + 1]);
    return substitute(flatten(idx, packed_shape(p)), s.subst);
  }
  return substitute(load->args[0], s.subst);
}

bool walks_contiguously(const Stage& s, const std::string& loop) {
  bool found = false;
  for_each_load(s.value, [&](const Expr& load) {
    if (coefficient(read_index(s, load), loop) == std::optional<int64_t>(1)) found = true;
  });
  return found;
}

int64_t bound_size(const ir::Graph& g, const ir::DimExpr& d) {
  try {
    return d.evaluate(g.bound_dims);
  } catch (const UserError&) {
    return int64_t{1} << 30;
  }
}

std::vector<Expr> operand_loads(const Stage& s) {
  std::vector<Expr> loads;
  for_each_load(s.value, [&](const Expr& load) {
    if (load->name != s.buffer) loads.push_back(load);
  });
  return loads;
}

int64_t buffer_bytes(const ir::Graph& g, const Buffer& b) {
  int64_t n = ir::dtype_bytes(b.dtype);
  for (const auto& d : b.shape) n *= std::max<int64_t>(1, bound_size(g, d));
  return n;
}

int lanes(const Target& t, ir::DType d) {
  const int bytes = d == ir::DType::F64 || d == ir::DType::I64 ? 8 : d == ir::DType::Bool ? 1 : 4;
  return std::max(1, t.vector_bytes / bytes);
}

}  // namespace ollie::loops
