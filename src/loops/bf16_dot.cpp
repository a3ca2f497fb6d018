// The bf16_dot directive: a contraction whose terms are products of two bfloat16 loads,
// summed in float32, computed by one call of the bf16 dot-product micro-kernel
// (ollie_bf16_dot, src/emit/bf16_dot.h): its legality, the index analysis that finds the
// call's strides, and the call statement realize() writes for the stage.
#include <algorithm>
#include <set>

#include "loops/proposals.h"

namespace ollie::loops {
namespace {

using ir::DType;
using ir::OpKind;

[[noreturn]] void reject(const Directive& d, const std::string& reason,
                         const std::string& detail = "") {
  throw ScheduleError(d, reason, detail);
}

// An index as constant + sum of coefficient * loop var, the coefficients over dims only.
struct Affine {
  Expr constant = make_int(0);
  std::map<std::string, Expr> coef;  // absent: 0
};

bool has_vars(const Expr& e) {
  std::set<std::string> v;
  collect_vars(e, v);
  bool loads = false;
  for_each_load(e, [&](const Expr&) { loads = true; });
  return !v.empty() || loads;
}

Affine scaled(Affine a, const Expr& by) {
  a.constant = make_binary(OpKind::Mul, a.constant, by);
  for (auto& [v, c] : a.coef) c = make_binary(OpKind::Mul, c, by);
  return a;
}

std::optional<Affine> affine(const Expr& e) {
  if (e->dtype != DType::I64) return std::nullopt;
  if (!has_vars(e)) return Affine{e, {}};
  if (e->kind == ExprKind::Var) return Affine{make_int(0), {{e->name, make_int(1)}}};
  if (e->kind != ExprKind::Binary) return std::nullopt;
  const OpKind op = e->op;
  if (op == OpKind::Mul) {
    if (!has_vars(e->args[1])) {
      const auto a = affine(e->args[0]);
      return a ? std::optional<Affine>(scaled(*a, e->args[1])) : std::nullopt;
    }
    if (!has_vars(e->args[0])) {
      const auto b = affine(e->args[1]);
      return b ? std::optional<Affine>(scaled(*b, e->args[0])) : std::nullopt;
    }
    return std::nullopt;
  }
  if (op != OpKind::Add && op != OpKind::Sub) return std::nullopt;
  const auto a = affine(e->args[0]), b = affine(e->args[1]);
  if (!a || !b) return std::nullopt;
  Affine out = *a;
  out.constant = make_binary(op, a->constant, b->constant);
  for (const auto& [v, c] : b->coef) {
    const auto it = out.coef.find(v);
    const Expr base = it == out.coef.end() ? make_int(0) : it->second;
    out.coef[v] = make_binary(op, base, c);
  }
  return out;
}

Expr coef_of(const Affine& a, const std::string& v) {
  const auto it = a.coef.find(v);
  return it == a.coef.end() ? make_int(0) : it->second;
}

bool is_zero(const Expr& e) { return e->kind == ExprKind::IntImm && e->int_value == 0; }

// What an operand of the product is, for a refusal.
std::string operand_text(const Expr& x) {
  const Expr inner = x->kind == ExprKind::Cast ? x->args[0] : x;
  if (inner->kind == ExprKind::Load)
    return "a " + std::string(ir::dtype_name(inner->dtype)) + " load of " + inner->name;
  if (inner->kind == ExprKind::Cast && inner->dtype == DType::BF16)
    return "a " + std::string(ir::dtype_name(inner->args[0]->dtype)) + " value rounded to bf16 (" +
           to_text(inner) + ")";
  return to_text(x);
}

// The bfloat16 load a float32 operand widens, or null.
Expr bf16_load(const Expr& x) {
  if (x->kind != ExprKind::Cast || x->dtype != DType::F32) return nullptr;
  const Expr l = x->args[0];
  return l->kind == ExprKind::Load && l->dtype == DType::BF16 ? l : nullptr;
}

// The stage's loops are the ones it was built with: no split, reorder aside.
void require_initial(const Stages& st, const Stage& s, const Directive& d) {
  const std::string why =
      "bf16_dot replaces the stage's whole nest: apply it before any other "
      "directive on " +
      s.name;
  if (s.host >= 0)
    reject(d, s.name + " is computed at " + st.stages[static_cast<size_t>(s.host)].name, why);
  for (const auto& o : st.stages)
    if (o.host >= 0 && &st.stages[static_cast<size_t>(o.host)] == &s)
      reject(d, o.name + " is computed inside " + s.name, why);
  if (!s.packs.empty()) reject(d, s.name + " packs a tile of " + s.packs[0].source, why);
  if (s.accumulate_depth) reject(d, s.name + " already accumulates in registers", why);
  if (s.loops.size() != s.vars.size()) reject(d, "the loops of " + s.name + " were split", why);
  for (const auto& l : s.loops) {
    if (l.kind != ForKind::Serial)
      reject(d, "loop " + l.name + " of " + s.name + " is " + for_kind_name(l.kind), why);
    if (has_vars(l.extent))
      reject(d,
             "loop " + l.name + " of " + s.name + " has a bound over other loops or memory (" +
                 to_text(l.extent) + ")",
             "the micro-kernel runs whole rectangular contractions");
  }
  for (const auto& v : s.vars) {
    const auto it = s.subst.find(v);
    if (it == s.subst.end() || it->second->kind != ExprKind::Var)
      reject(d, "the loops of " + s.name + " were split", why);
  }
}

}  // namespace

void apply_bf16_dot(Stages& st, Stage& s, const Directive& d) {
  if (s.bf16_dot) reject(d, s.name + " is already a bf16_dot micro-kernel");
  if (!s.reduce || !s.contract || s.combine != OpKind::Add || !s.running_max.empty())
    reject(d, s.name + " is a " + s.what + ", not a contraction (a sum of products)");
  if (s.dtype != DType::F32)
    reject(d, s.name + " sums in " + ir::dtype_name(s.dtype) + ", not float32",
           "vdpbf16ps accumulates in float32");
  require_initial(st, s, d);
  const Expr value = substitute(s.value, s.subst);
  if (value->kind != ExprKind::Binary || value->op != OpKind::Mul || value->dtype != DType::F32)
    reject(d, s.name + "'s term is not a float32 product");
  for (int i = 0; i < 2; ++i)
    if (!bf16_load(value->args[static_cast<size_t>(i)]))
      reject(d,
             "operand " + std::to_string(i + 1) + " of " + s.name + "'s product is " +
                 operand_text(value->args[static_cast<size_t>(i)]) +
                 ", not a bf16 buffer loaded as such",
             "bf16_dot multiplies two bfloat16 values exactly; a float32 operand would be rounded");
  std::vector<size_t> red;
  for (size_t i = 0; i < s.loops.size(); ++i)
    if (s.loops[i].reduction) red.push_back(i);
  if (red.size() != 1)
    reject(d, s.name + " sums over " + std::to_string(red.size()) + " loops",
           "the micro-kernel sums over one loop");
  const Expr la = bf16_load(value->args[0]), lb = bf16_load(value->args[1]);
  std::vector<Expr> out_idx;
  for (const auto& i : s.store_index) out_idx.push_back(substitute(i, s.subst));
  const auto fa = affine(la->args[0]), fb = affine(lb->args[0]),
             fo = affine(flatten(out_idx, s.buffer_shape));
  if (!fa || !fb || !fo)
    reject(d, "an index of " + s.name + " is not affine in its loops",
           "a: " + to_text(la->args[0]) + ", b: " + to_text(lb->args[0]));
  // The rows: a loop that indexes a but not b; the columns: b but not a (the last of each).
  int m = -1, n = -1;
  for (size_t i = 0; i < s.loops.size(); ++i) {
    if (s.loops[i].reduction) continue;
    const bool in_a = !is_zero(coef_of(*fa, s.loops[i].name));
    const bool in_b = !is_zero(coef_of(*fb, s.loops[i].name));
    if (in_a && !in_b) m = static_cast<int>(i);
    if (in_b && !in_a) n = static_cast<int>(i);
  }
  Bf16Dot k;
  k.a = la->name;
  k.b = lb->name;
  k.a_type = la->dtype;
  k.b_type = lb->dtype;
  k.a_off = fa->constant;
  k.b_off = fb->constant;
  k.o_off = fo->constant;
  for (size_t i = 0; i < s.loops.size(); ++i) {
    if (s.loops[i].reduction || static_cast<int>(i) == m || static_cast<int>(i) == n) continue;
    const Expr v = make_var(s.loops[i].name);
    auto add = [&](Expr& off, const Affine& f) {
      off = make_binary(OpKind::Add, off, make_binary(OpKind::Mul, coef_of(f, s.loops[i].name), v));
    };
    add(k.a_off, *fa);
    add(k.b_off, *fb);
    add(k.o_off, *fo);
    k.batch.push_back(i);
  }
  auto loop_coef = [&](int i, const Affine& f) {
    return i < 0 ? make_int(0) : coef_of(f, s.loops[static_cast<size_t>(i)].name);
  };
  auto extent = [&](int i) { return i < 0 ? make_int(1) : s.loops[static_cast<size_t>(i)].extent; };
  const std::string kv = s.loops[red[0]].name;
  k.a_m = loop_coef(m, *fa);
  k.a_k = coef_of(*fa, kv);
  k.b_k = coef_of(*fb, kv);
  k.b_n = loop_coef(n, *fb);
  k.o_m = loop_coef(m, *fo);
  k.o_n = loop_coef(n, *fo);
  k.m = extent(m);
  k.n = extent(n);
  k.k = s.loops[red[0]].extent;
  k.m_loop = m;
  k.n_loop = n;
  k.k_loop = static_cast<int>(red[0]);
  s.bf16_dot = k;
}

Stmt bf16_dot_call(const Stage& s, std::set<std::string> scope,
                   const std::set<std::string>& reserved) {
  const Bf16Dot& k = *s.bf16_dot;
  std::map<std::string, Expr> names;
  std::vector<std::string> opened;
  for (size_t i : k.batch) {
    std::string name = s.loops[i].name;
    for (int j = 2; scope.count(name) || reserved.count(name); ++j)
      name = s.loops[i].name + "_" + std::to_string(j);
    scope.insert(name);
    names[s.loops[i].name] = make_var(name);
    opened.push_back(name);
  }
  const Stmt call = make_call_stmt(
      "ollie_bf16_dot",
      {make_load(k.a, k.a_type, substitute(k.a_off, names)), k.a_m, k.a_k,
       make_load(k.b, k.b_type, substitute(k.b_off, names)), k.b_k, k.b_n,
       make_load(s.buffer, s.dtype, substitute(k.o_off, names)), k.o_m, k.o_n, k.m, k.n, k.k});
  Stmt body = call;
  for (size_t j = k.batch.size(); j-- > 0;)
    body = make_for(opened[j], make_int(0), substitute(s.loops[k.batch[j]].extent, names),
                    ForKind::Serial, body);
  return body;
}

std::vector<std::string> bf16_dot_stages(const ir::Graph& g) {
  const Stages st = build_stages(g, {});
  std::vector<std::string> out;
  for (const auto& s : st.stages) {
    if (!s.contract) continue;
    Stages work = st;
    Schedule done;
    if (try_apply(g, work, done, make_directive(DirectiveKind::Bf16Dot, s.name, {})))
      out.push_back(s.name);
  }
  return out;
}

Schedule with_bf16_dot(const ir::Graph& g, const std::vector<std::string>& stages,
                       const Schedule& base) {
  Stages st = build_stages(g, {});
  Schedule out;
  for (const auto& name : stages)
    try_apply(g, st, out, make_directive(DirectiveKind::Bf16Dot, name, {}));
  for (const auto& d : base.directives) {
    const bool shapes = std::find(stages.begin(), stages.end(), d.stage) != stages.end() ||
                        std::find(stages.begin(), stages.end(), d.stage + "_rf") != stages.end();
    if (!shapes) try_apply(g, st, out, d);
  }
  return out;
}

std::vector<std::string> default_bf16_dots(const ir::Graph& g, const Schedule& base) {
  std::vector<std::string> out;
  const Stages st = build_stages(g, {});
  for (const auto& name : bf16_dot_stages(g)) {
    bool fused = false;
    for (const auto& d : base.directives)
      fused =
          fused || (d.kind == DirectiveKind::ComputeAt && (d.stage == name || d.args[0] == name));
    if (fused) continue;
    Stages work = st;
    Schedule done;
    try_apply(g, work, done, make_directive(DirectiveKind::Bf16Dot, name, {}));
    const Stage& s = work.stages[static_cast<size_t>(work.find(name))];
    const Bf16Dot& k = *s.bf16_dot;
    auto size = [&](int loop) {
      return loop < 0 ? 1 : bound_size(g, s.loops[static_cast<size_t>(loop)].nominal);
    };
    if (size(k.m_loop) >= kBf16DotMinRows && size(k.n_loop) >= kBf16DotMinColumns &&
        size(k.k_loop) >= kBf16DotMinDepth)
      out.push_back(name);
  }
  return out;
}

}  // namespace ollie::loops
