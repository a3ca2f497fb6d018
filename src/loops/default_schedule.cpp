// The default schedule (the baseline every search starts from) and random schedules
// (random moves for the property tests and, later, the search's mutate proposer). Both
// propose directives and keep only those apply_directive accepts.
#include <algorithm>
#include <functional>
#include <random>

#include "loops/stages.h"

namespace ollie::loops {
namespace {

using ir::OpKind;

// Applies `d` to a copy of `st`; on success keeps it and records it in `out`.
bool try_apply(const ir::Graph& g, Stages& st, Schedule& out, const Directive& d, std::string* reason = nullptr) {
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

Directive make(DirectiveKind k, const std::string& stage, std::vector<std::string> args, int64_t factor = 0) {
  return Directive{k, stage, std::move(args), factor, 0};
}

// Whether some load in `e` indexes its last dimension with exactly loop variable `var`
// (after the stage's substitution): the loop walks that buffer contiguously.
bool walks_contiguously(const Stage& s, const std::string& loop) {
  bool found = false;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e->kind == ExprKind::Load && e->args.size() > 1) {
      const Expr last = substitute(e->args.back(), s.subst);
      if (last->kind == ExprKind::Var && last->name == loop) found = true;
    }
    for (const auto& a : e->args) walk(a);
  };
  walk(s.value);
  return found;
}

int lanes(const Target& t, ir::DType d) {
  const int bytes = d == ir::DType::F64 || d == ir::DType::I64 ? 8 : d == ir::DType::Bool ? 1 : 4;
  return std::max(1, t.vector_bytes / bytes);
}

}  // namespace

Schedule default_schedule(const ir::Graph& graph, const Target& target) {
  Stages st = build_stages(graph, {});
  Schedule out;
  // 1. Loop order and vector loops, stage by stage.
  const std::vector<std::string> names = [&] {
    std::vector<std::string> n;
    for (const auto& s : st.stages) n.push_back(s.name);
    return n;
  }();
  for (const auto& name : names) {
    const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
    if (s.loops.empty()) continue;
    const StageLoop& inner = s.loops.back();
    if (!inner.reduction) {
      try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {inner.name}));
      continue;
    }
    // A reduction with its reduction loops innermost.
    std::string last_pure;
    std::vector<std::string> reduced;
    for (const auto& l : s.loops) {
      if (l.reduction) reduced.push_back(l.name);
      else last_pure = l.name;
    }
    if (s.contract && !last_pure.empty() && walks_contiguously(s, last_pure)) {
      // Contraction: the output's last loop innermost, vectorized (out[m, n] += a[m, k] * b[k, n]).
      std::vector<std::string> order = reduced;
      order.push_back(last_pure);
      try_apply(graph, st, out, make(DirectiveKind::Reorder, name, order));
      try_apply(graph, st, out, make(DirectiveKind::Vectorize, name, {last_pure}));
      continue;
    }
    const int w = lanes(target, s.dtype);
    if (walks_contiguously(s, inner.name) && w > 1) {
      // A row reduction: w partial results side by side, vectorized, then reduced.
      const std::string r = inner.name;
      if (try_apply(graph, st, out, make(DirectiveKind::Split, name, {r}, w))) {
        const Stage& split = st.stages[static_cast<size_t>(st.find(name))];
        const std::string ri = split.loops.back().name;
        if (try_apply(graph, st, out, make(DirectiveKind::Rfactor, name, {ri})))
          try_apply(graph, st, out, make(DirectiveKind::Vectorize, name + "_rf", {ri}));
      }
    }
  }
  // 2. Fusion: each producer computed inside the outer loops of the root nest that reads
  // it, as deep as is legal, consumers first.
  for (int i = static_cast<int>(st.stages.size()) - 1; i >= 0; --i) {
    const Stage& p = st.stages[static_cast<size_t>(i)];
    int host = -1;
    bool unique = true;
    for (size_t r = 0; r < st.stages.size(); ++r) {
      if (static_cast<int>(r) == i) continue;
      std::function<bool(const Expr&)> reads = [&](const Expr& e) {
        if (e->kind == ExprKind::Load && e->name == p.buffer) return true;
        for (const auto& a : e->args)
          if (reads(a)) return true;
        return false;
      };
      if (!reads(st.stages[r].value)) continue;
      int root = static_cast<int>(r);
      while (st.stages[static_cast<size_t>(root)].host >= 0) root = st.stages[static_cast<size_t>(root)].host;
      if (host >= 0 && host != root) unique = false;
      host = root;
    }
    if (host < 0 || !unique || host == i) continue;
    const Stage& h = st.stages[static_cast<size_t>(host)];
    const std::string pname = p.name, hname = h.name;
    for (size_t k = h.loops.size(); k-- > 0;) {
      if (h.loops[k].reduction || h.loops[k].kind == ForKind::Vectorized) continue;
      if (try_apply(graph, st, out, make(DirectiveKind::ComputeAt, pname, {hname, h.loops[k].name}))) break;
    }
  }
  // 3. The outermost pure loop of every root nest runs in parallel when it walks a dim.
  if (target.cores > 1)
    for (const auto& s : std::vector<Stage>(st.stages)) {
      if (s.host >= 0) continue;
      for (const auto& l : s.loops) {
        if (l.reduction || l.kind == ForKind::Vectorized) break;
        if (l.nominal.is_constant() && *l.nominal.as_constant() < 2) continue;
        try_apply(graph, st, out, make(DirectiveKind::Parallel, s.name, {l.name}));
        break;
      }
    }
  return out;
}

Schedule random_schedule(const ir::Graph& graph, uint64_t seed, int moves, std::vector<RejectedDirective>* rejected,
                         const Target& target) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  Schedule out;
  Stages st = build_stages(graph, {});
  if (pick(2) == 0)
    for (const auto& d : default_schedule(graph, target).directives) try_apply(graph, st, out, d);
  const int64_t factors[] = {2, 3, 4, 5, 8, 16};
  for (int m = 0; m < moves; ++m) {
    const Stage& s = st.stages[pick(st.stages.size())];
    if (s.loops.empty()) continue;
    auto loop = [&](const Stage& x) { return x.loops[pick(x.loops.size())].name; };
    Directive d;
    switch (pick(8)) {
      case 0: d = make(DirectiveKind::Split, s.name, {loop(s)}, factors[pick(std::size(factors))]); break;
      case 1: {
        std::vector<std::string> ls;
        for (const auto& l : s.loops) ls.push_back(l.name);
        std::shuffle(ls.begin(), ls.end(), rng);
        ls.resize(std::max<size_t>(2, pick(ls.size()) + 1));
        if (ls.size() < 2 || s.loops.size() < 2) continue;
        d = make(DirectiveKind::Reorder, s.name, ls);
        break;
      }
      case 2: d = make(DirectiveKind::Parallel, s.name, {loop(s)}); break;
      case 3: d = make(DirectiveKind::Vectorize, s.name, {loop(s)}); break;
      case 4: d = make(DirectiveKind::Unroll, s.name, {loop(s)}); break;
      case 5: {
        const Stage& h = st.stages[pick(st.stages.size())];
        if (h.loops.empty()) continue;
        d = make(DirectiveKind::ComputeAt, s.name, {h.name, loop(h)});
        break;
      }
      case 6: {
        std::vector<std::string> bufs;
        std::function<void(const Expr&)> walk = [&](const Expr& e) {
          if (e->kind == ExprKind::Load && e->name != s.buffer) bufs.push_back(e->name);
          for (const auto& a : e->args) walk(a);
        };
        walk(s.value);
        if (bufs.empty()) continue;
        d = make(DirectiveKind::Pack, s.name, {bufs[pick(bufs.size())], loop(s)});
        break;
      }
      default: d = make(DirectiveKind::Rfactor, s.name, {loop(s)}); break;
    }
    std::string reason;
    const Schedule before = out;
    if (!try_apply(graph, st, out, d, &reason) && rejected) rejected->push_back({before, d, reason});
  }
  return out;
}

}  // namespace ollie::loops
