// Recipes (proposals.h): whole known-good schedules for one reduction stage, proposed in
// one step by the random schedules and the search's mutate proposer, so that the search
// does not have to find a GEMM micro-kernel or an outer-product score tile one directive
// at a time. Each recipe's sizes are drawn from the machine (vector width, L1 size);
// random moves then tune them (split factors) like any directive.
#include <algorithm>
#include <random>
#include <utility>

#include "loops/proposals.h"

namespace ollie::loops {
namespace {

size_t pick(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng));
}

// Applies `directives` to a copy of the stages; all must be legal.
bool apply_all(const ir::Graph& g, Stages& st, Schedule& out, const std::vector<Directive>& ds) {
  Stages work = st;
  Schedule done;
  for (const auto& d : ds)
    if (!try_apply(g, work, done, d)) return false;
  st = std::move(work);
  out.directives.insert(out.directives.end(), done.directives.begin(), done.directives.end());
  return true;
}

}  // namespace

std::optional<std::vector<Directive>> blocked_tile(const ir::Graph& g, Stages& st,
                                                   const std::string& name, int64_t rows,
                                                   int64_t vectors, int64_t block,
                                                   const Target& target) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(name))];
  std::vector<std::string> pure, reduced;
  for (const auto& l : s.loops) (l.reduction ? reduced : pure).push_back(l.name);
  if (reduced.size() != 1 || pure.size() < 2 || s.accumulate_depth || !s.contract ||
      !s.packs.empty() || (block > 0 && bound_size(g, s.loops.back().nominal) <= block))
    return std::nullopt;
  const std::string col = pure.back(), row = pure[pure.size() - 2];
  // The operand the columns stream: indexed by the column and the reduction loops.
  std::string streamed;
  for (const Expr& load : operand_loads(s)) {
    const Expr flat = substitute(load->args[0], s.subst);
    if (mentions(flat, col) && mentions(flat, reduced[0]) && !mentions(flat, row))
      streamed = load->name;
  }
  Stages work = st;
  Schedule done;
  // block <= 0: the whole reduction is one block (a panel of every row of the operand).
  const auto k = block > 0 ? split_loop(g, work, done, name, reduced[0], block)
                           : std::optional(std::pair<std::string, std::string>{"", reduced[0]});
  const auto r = k ? split_loop(g, work, done, name, row, rows) : std::nullopt;
  const auto c =
      r ? split_loop(g, work, done, name, col, vectors * lanes(target, s.dtype)) : std::nullopt;
  if (!c) return std::nullopt;
  std::vector<std::string> order;
  for (const auto& p : pure)
    if (p != row && p != col) order.push_back(p);
  for (const auto& l : {k->first, c->first, r->first, k->second, r->second, c->second})
    if (!l.empty()) order.push_back(l);
  std::vector<Directive> rest = {make_directive(DirectiveKind::Reorder, name, order)};
  if (!streamed.empty())
    rest.push_back(make_directive(DirectiveKind::Pack, name, {streamed, c->first}));
  rest.push_back(make_directive(DirectiveKind::Accumulate, name, {r->first}));
  rest.push_back(make_directive(DirectiveKind::Vectorize, name, {c->second}));
  rest.push_back(make_directive(DirectiveKind::Unroll, name, {r->second}));
  if (!apply_all(g, work, done, rest)) return std::nullopt;
  if (target.cores > 1 && work.stages[static_cast<size_t>(work.find(name))].host < 0)
    try_apply(g, work, done, make_directive(DirectiveKind::Parallel, name, {c->first}));
  st = std::move(work);
  return done.directives;
}

int64_t l1_block(const Target& target, int64_t vectors) {
  const int64_t panel_row = vectors * target.vector_bytes;
  const int64_t block = std::max<int64_t>(32, target.l1_bytes / 2 / panel_row);
  int64_t power = 32;
  while (power * 2 <= block) power *= 2;
  return power;
}

const char* recipe_name(RecipeKind kind) {
  switch (kind) {
    case RecipeKind::Tile: return "register tile";
    case RecipeKind::RowTile: return "row tile";
    case RecipeKind::OuterProduct: return "outer-product tile";
    case RecipeKind::Blocked: return "cache-blocked tile";
    case RecipeKind::SplitK: return "split-K";
  }
  return "recipe";
}

std::optional<std::vector<Directive>> apply_recipe(const ir::Graph& g, Stages& st,
                                                   const std::string& name, RecipeKind kind,
                                                   std::mt19937_64& rng, const Target& target) {
  const auto [rows, vectors] = kRegisterTiles[pick(rng, std::size(kRegisterTiles))];
  const int64_t row_vectors = static_cast<int64_t>(1 + pick(rng, 4));
  Stages work = st;
  Schedule done;
  std::optional<std::vector<Directive>> tile;
  switch (kind) {
    case RecipeKind::Tile: tile = register_tile(g, work, name, rows, vectors, target); break;
    case RecipeKind::RowTile: tile = register_tile(g, work, name, 1, row_vectors, target); break;
    case RecipeKind::OuterProduct: {
      std::string column;
      if (!transpose_operand(g, work, done, name, kMinTransposeReuse / 8, &column))
        return std::nullopt;
      const int64_t tile_rows = static_cast<int64_t>(1 + pick(rng, 8));
      tile = register_tile(g, work, name, tile_rows, row_vectors, target, true, column);
      break;
    }
    case RecipeKind::Blocked: {
      // A third of the time no block: the panel spans the whole reduction.
      const size_t size = pick(rng, 3);
      const int64_t block = size == 0 ? 0 : l1_block(target, vectors) * (size == 2 ? 2 : 1);
      tile = blocked_tile(g, work, name, rows, vectors, block, target);
      break;
    }
    case RecipeKind::SplitK:
      if (!split_k(g, work, done, name, target, true)) return std::nullopt;
      tile = std::vector<Directive>{};
      break;
  }
  if (!tile) return std::nullopt;
  done.directives.insert(done.directives.end(), tile->begin(), tile->end());
  st = std::move(work);
  return done.directives;
}

}  // namespace ollie::loops
