// Random schedules: random moves against the stages for the property tests
// (random_schedule) and one random step from a schedule for the search's mutate proposer
// (mutate_schedule). Each proposal is kept only when apply_directive accepts it.
#include <algorithm>
#include <optional>
#include <random>

#include "loops/proposals.h"

namespace ollie::loops {
namespace {

// One random directive against the stages as they are (nullopt when the draw made no
// sense, e.g. a reorder of a one-loop stage). Not necessarily legal.
std::optional<Directive> random_directive(const Stages& st, std::mt19937_64& rng) {
  auto pick = [&](size_t n) {
    return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng));
  };
  const int64_t factors[] = {2, 3, 4, 5, 8, 16};
  const Stage& s = st.stages[pick(st.stages.size())];
  if (s.loops.empty()) return std::nullopt;
  auto loop = [&](const Stage& x) { return x.loops[pick(x.loops.size())].name; };
  switch (pick(9)) {
    case 0:
      return make_directive(DirectiveKind::Split, s.name, {loop(s)},
                            factors[pick(std::size(factors))]);
    case 1: {
      std::vector<std::string> ls;
      for (const auto& l : s.loops) ls.push_back(l.name);
      std::shuffle(ls.begin(), ls.end(), rng);
      ls.resize(std::max<size_t>(2, pick(ls.size()) + 1));
      if (ls.size() < 2 || s.loops.size() < 2) return std::nullopt;
      return make_directive(DirectiveKind::Reorder, s.name, ls);
    }
    case 2: return make_directive(DirectiveKind::Parallel, s.name, {loop(s)});
    case 3: return make_directive(DirectiveKind::Vectorize, s.name, {loop(s)});
    case 4: return make_directive(DirectiveKind::Unroll, s.name, {loop(s)});
    case 5: {
      // Mostly into a stage that reads it (or that stage's host): the moves that can be
      // legal; sometimes anywhere, to exercise the rejections.
      std::vector<const Stage*> hosts;
      for (const auto& r : st.stages) {
        if (&r == &s || !reads(r.value, s.buffer)) continue;
        hosts.push_back(&r);
        if (r.host >= 0) hosts.push_back(&st.stages[static_cast<size_t>(r.host)]);
      }
      const Stage& h = !hosts.empty() && pick(4) != 0 ? *hosts[pick(hosts.size())]
                                                      : st.stages[pick(st.stages.size())];
      if (h.loops.empty()) return std::nullopt;
      return make_directive(DirectiveKind::ComputeAt, s.name, {h.name, loop(h)});
    }
    case 6: {
      std::vector<std::string> bufs;
      for (const Expr& load : operand_loads(s)) bufs.push_back(load->name);
      if (bufs.empty()) return std::nullopt;
      // At one of its loops or the whole buffer before the nest; sometimes transposed.
      std::vector<std::string> args = {bufs[pick(bufs.size())], pick(3) ? loop(s) : "root"};
      if (pick(3) == 0) args.push_back("transposed");
      return make_directive(DirectiveKind::Pack, s.name, args);
    }
    case 7: return make_directive(DirectiveKind::Accumulate, s.name, {loop(s)});
    default: return make_directive(DirectiveKind::Rfactor, s.name, {loop(s)});
  }
}

// A random reduction stage (empty when there is none without accumulators yet).
std::string random_reduction(const Stages& st, std::mt19937_64& rng) {
  std::vector<std::string> reductions;
  for (const auto& s : st.stages)
    if (s.reduce && !s.accumulate_depth && s.running_max.empty()) reductions.push_back(s.name);
  if (reductions.empty()) return "";
  return reductions[std::uniform_int_distribution<size_t>(0, reductions.size() - 1)(rng)];
}

// A random reduction stage and a random recipe (recipes.cpp) for it.
std::optional<std::pair<std::string, RecipeKind>> draw_recipe(const Stages& st,
                                                              std::mt19937_64& rng) {
  const std::string stage = random_reduction(st, rng);
  if (stage.empty()) return std::nullopt;
  return std::make_pair(
      stage, kRecipes[std::uniform_int_distribution<size_t>(0, std::size(kRecipes) - 1)(rng)]);
}

// A random recipe for a random reduction stage, applied to `st`.
std::optional<std::pair<RecipeKind, std::vector<Directive>>> random_recipe(const ir::Graph& g,
                                                                           Stages& st,
                                                                           std::mt19937_64& rng,
                                                                           const Target& target) {
  const auto drawn = draw_recipe(st, rng);
  if (!drawn) return std::nullopt;
  const auto& [stage, kind] = *drawn;
  auto ds = apply_recipe(g, st, stage, kind, rng, target);
  if (!ds) return std::nullopt;
  return std::make_pair(kind, std::move(*ds));
}

// The directives of `base` that shape stage `stage`'s own loops (all but where it is
// computed), which a recipe for it replaces.
bool shapes(const Directive& d, const std::string& stage) {
  return (d.stage == stage || d.stage == stage + "_rf") && d.kind != DirectiveKind::ComputeAt &&
         d.kind != DirectiveKind::Inline;
}

// Draws of random_directive that propose a whole recipe instead (1 in this many).
constexpr int kRecipeOdds = 8;

// Applies the directives of `schedule` in order, keeping the legal ones.
Schedule replay_legal(const ir::Graph& graph, Stages& st,
                      const std::vector<Directive>& directives) {
  Schedule out;
  for (const auto& d : directives) try_apply(graph, st, out, d);
  return out;
}

// A recipe for a random reduction stage in place of the directives that shaped it: applied
// before the rest of `base` (replayed, the legal ones) or, when that fails, after it.
bool recipe_step(const ir::Graph& graph, const Schedule& base, std::mt19937_64& rng, Mutation& m) {
  const Target target = host_target();
  const auto drawn = draw_recipe(build_stages(graph, {}), rng);
  if (!drawn) return false;
  const auto& [stage, kind] = *drawn;
  std::vector<Directive> rest;
  for (const auto& d : base.directives)
    if (!shapes(d, stage)) rest.push_back(d);
  const uint64_t sizes = rng();
  for (const bool first : {true, false}) {
    Stages st = build_stages(graph, {});
    std::mt19937_64 draw(sizes);
    Schedule out = first ? Schedule{} : replay_legal(graph, st, rest);
    const auto ds = apply_recipe(graph, st, stage, kind, draw, target);
    if (!ds) continue;
    out.directives.insert(out.directives.end(), ds->begin(), ds->end());
    if (first) {
      const Schedule after = replay_legal(graph, st, rest);
      out.directives.insert(out.directives.end(), after.directives.begin(), after.directives.end());
    }
    m.schedule = out;
    m.move = std::string("recipe ") + recipe_name(kind) + " for " + stage + ":";
    for (size_t i = 0; i < ds->size(); ++i) m.move += (i ? "; " : " ") + to_text((*ds)[i]);
    return true;
  }
  return false;
}

}  // namespace

Schedule random_schedule(const ir::Graph& graph, uint64_t seed, int moves,
                         std::vector<RejectedDirective>* rejected, const Target& target) {
  std::mt19937_64 rng(seed);
  Schedule out;
  Stages st = build_stages(graph, {});
  const bool from_default = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
  // One time in 4 a bfloat16 contraction starts as the bf16_dot micro-kernel (drawn only
  // where there is one, so other graphs draw the same schedules as before).
  const std::vector<std::string> dots = bf16_dot_stages(graph);
  if (!dots.empty() && std::uniform_int_distribution<int>(0, 3)(rng) == 0)
    try_apply(
        graph, st, out,
        make_directive(DirectiveKind::Bf16Dot,
                       dots[std::uniform_int_distribution<size_t>(0, dots.size() - 1)(rng)], {}));
  if (from_default)
    for (const auto& d : default_schedule(graph, target).directives) try_apply(graph, st, out, d);
  for (int m = 0; m < moves; ++m) {
    if (std::uniform_int_distribution<int>(0, kRecipeOdds - 1)(rng) == 0) {
      if (const auto recipe = random_recipe(graph, st, rng, target))
        out.directives.insert(out.directives.end(), recipe->second.begin(), recipe->second.end());
      continue;
    }
    const std::optional<Directive> d = random_directive(st, rng);
    if (!d) continue;
    std::string reason;
    const Schedule before = out;
    if (!try_apply(graph, st, out, *d, &reason) && rejected)
      rejected->push_back({before, *d, reason});
  }
  return out;
}

std::optional<Mutation> mutate_schedule(const ir::Graph& graph, const Schedule& base, uint64_t seed,
                                        int attempts) {
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) {
    return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng));
  };
  const std::string base_text = to_text(base);
  const std::vector<std::string> dots = bf16_dot_stages(graph);
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Stages st = build_stages(graph, {});
    Mutation m;
    const size_t n = base.directives.size();
    // Where a bfloat16 contraction could take the bf16_dot micro-kernel, sometimes it does
    // (drawn only there, so other graphs draw the same mutations as before).
    if (!dots.empty() && pick(kRecipeOdds) == 0) {
      const std::string stage = dots[pick(dots.size())];
      m.schedule = with_bf16_dot(graph, {stage}, base);
      m.move = "bf16_dot " + stage + " in place of the directives that shaped it";
      if (to_text(m.schedule) == base_text) continue;
      return m;
    }
    const size_t kind = n == 0 ? 0 : pick(4);
    if (kind == 0 && pick(kRecipeOdds) == 0) {  // a whole recipe for one stage
      if (!recipe_step(graph, base, rng, m)) continue;
    } else if (kind == 0) {  // add one legal directive at the end
      m.schedule = replay_legal(graph, st, base.directives);
      const std::optional<Directive> d = random_directive(st, rng);
      if (!d || !try_apply(graph, st, m.schedule, *d)) continue;
      m.move = "add " + to_text(*d);
    } else if (kind == 1) {  // drop one directive (and any that needed it)
      const size_t i = pick(n);
      std::vector<Directive> rest = base.directives;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      m.schedule = replay_legal(graph, st, rest);
      m.move = "drop " + to_text(base.directives[i]);
    } else if (kind == 2) {  // retune a split factor
      std::vector<size_t> splits;
      for (size_t i = 0; i < n; ++i)
        if (base.directives[i].kind == DirectiveKind::Split) splits.push_back(i);
      if (splits.empty()) continue;
      const int64_t factors[] = {2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128};
      std::vector<Directive> changed = base.directives;
      Directive& d = changed[splits[pick(splits.size())]];
      const int64_t old = d.factor;
      d.factor = factors[pick(std::size(factors))];
      if (d.factor == old) continue;
      m.schedule = replay_legal(graph, st, changed);
      m.move = "split factor " + std::to_string(old) + " -> " + std::to_string(d.factor) + " in " +
               to_text(d);
    } else {  // move one directive elsewhere in the order
      const size_t from = pick(n), to = pick(n);
      if (from == to) continue;
      std::vector<Directive> moved = base.directives;
      const Directive d = moved[from];
      moved.erase(moved.begin() + static_cast<std::ptrdiff_t>(from));
      moved.insert(moved.begin() + static_cast<std::ptrdiff_t>(to), d);
      m.schedule = replay_legal(graph, st, moved);
      m.move = "move " + to_text(d) + " from position " + std::to_string(from + 1) + " to " +
               std::to_string(to + 1);
    }
    if (to_text(m.schedule) == base_text) continue;  // no change after all
    return m;
  }
  return std::nullopt;
}

}  // namespace ollie::loops
