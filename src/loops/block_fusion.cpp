// Block fusion (proposals.h): a contraction whose register tile leaves a loop of blocks
// outside it (flash's partial output o_b[h, i, l] over key block i) hosts the whole block:
// every stage that carries the same outer loops (the block's scores, max, exponentials and
// sum) is computed at that loop, so one key block is read from memory once and used from
// cache by every stage, and the blocks run in parallel. Also the operand and row choices
// that register tiles share with the default schedule.
#include <algorithm>
#include <map>

#include "loops/proposals.h"

namespace ollie::loops {

// The loops of `s` that index its biggest operand, when one operand is at least twice as
// big (in bytes at the bound dims) as every other: the loops that do not index it
// belong inside those that do, so that its tiles are reused from cache.
std::set<std::string> big_operand_loops(const ir::Graph& g, const Stages& st, const Stage& s) {
  std::map<std::string, int64_t> bytes;
  std::map<std::string, std::set<std::string>> loops_of;
  for (const Expr& load : operand_loads(s)) {
    if (const Buffer* b = st.buffer(load->name)) {
      bytes[load->name] = buffer_bytes(g, *b);
      const Expr flat = substitute(load->args[0], s.subst);
      for (const auto& l : s.loops)
        if (mentions(flat, l.name)) loops_of[load->name].insert(l.name);
    }
  }
  std::string big;
  for (const auto& [name, n] : bytes)
    if (big.empty() || n > bytes[big]) big = name;
  for (const auto& [name, n] : bytes)
    if (name != big && 2 * n > bytes[big]) return {};
  return big.empty() ? std::set<std::string>{} : loops_of[big];
}

// The rows of a contraction's full tile: the last pure loop but `last_pure` that runs at
// least twice and indexes no element of the big operand (loops `big`), so that each
// operand row loaded serves every row of the tile (flash's partial output o_b[h, i, l]
// per key block i: the heads, not the blocks); else the last pure loop but `last_pure`.
std::string tile_row_of(const ir::Graph& graph, const Stage& s, const std::string& last_pure,
                        const std::set<std::string>& big) {
  std::string row, reusing;
  for (const auto& l : s.loops) {
    if (l.reduction || l.name == last_pure) continue;
    row = l.name;
    if (!big.count(l.name) && bound_size(graph, l.nominal) >= 2) reusing = l.name;
  }
  return reusing.empty() ? row : reusing;
}

namespace {

// Whether `s` has every loop of `prefix` among its pure loops, each with the same extent
// at the bound dims as in `host`.
bool carries(const ir::Graph& g, const Stage& s, const Stage& host,
             const std::vector<std::string>& prefix) {
  for (const auto& name : prefix) {
    const StageLoop* in_host = nullptr;
    const StageLoop* in_s = nullptr;
    for (const auto& l : host.loops)
      if (l.name == name) in_host = &l;
    for (const auto& l : s.loops)
      if (l.name == name && !l.reduction) in_s = &l;
    if (!in_host || !in_s || bound_size(g, in_host->nominal) != bound_size(g, in_s->nominal))
      return false;
  }
  return true;
}

// Whether loop `loop` of `s` walks blocks of its big operand along its reduction loop
// `red`: some operand's index moves as far for loop + 1 as for red + extent(red) (flash's
// c_kv[b, i*256 + i1, l]), so each iteration of `loop` reads its own contiguous block.
bool walks_blocks(const Stage& s, const std::string& loop, const StageLoop& red) {
  for (const Expr& load : operand_loads(s)) {
    const Expr flat = substitute(load->args[0], s.subst);
    if (!mentions(flat, loop) || !mentions(flat, red.name)) continue;
    std::map<std::string, Expr> one_block, one_extent;
    for (const auto& l : s.loops) {
      one_block[l.name] = make_int(l.name == loop ? 1 : 0);
      one_extent[l.name] = l.name == red.name ? make_dim(red.nominal) : make_int(0);
    }
    if (equal(substitute(flat, one_block), substitute(flat, one_extent))) return true;
  }
  return false;
}

// The block plan of contraction stage `h` (index `hi`), or nullopt.
std::optional<BlockPlan> plan_for(const ir::Graph& g, const Stages& st, size_t hi,
                                  const Target& target) {
  const Stage& h = st.stages[hi];
  std::vector<std::string> pure;
  for (const auto& l : h.loops)
    if (!l.reduction) pure.push_back(l.name);
  if (!h.contract || pure.size() < 3 || !h.loops.back().reduction) return std::nullopt;
  const std::set<std::string> big = big_operand_loops(g, st, h);
  const std::string col = pure.back(), row = tile_row_of(g, h, col, big);
  BlockPlan plan;
  plan.host = h.name;
  std::vector<std::string> outer;
  for (const auto& p : pure)
    if (p != row && p != col) outer.push_back(p);
  const StageLoop& red = h.loops.back();
  for (const auto& l : h.loops)
    if (!l.reduction && l.name != row && l.name != col && big.count(l.name) &&
        bound_size(g, l.nominal) >= 2 * target.cores && walks_blocks(h, l.name, red))
      plan.loop = l.name;
  if (plan.loop.empty() || big.count(row)) return std::nullopt;
  for (const auto& p : outer) {
    plan.prefix.push_back(p);
    if (p == plan.loop) break;
  }
  // The stages that feed the host through stages carrying the prefix, then those that
  // read one of them (the block's own sum, read only by the combination after it).
  std::set<std::string> fed = {h.buffer};
  for (size_t j = hi; j-- > 0;) {
    const Stage& p = st.stages[j];
    bool feeds = false;
    for (size_t r = j + 1; r <= hi && !feeds; ++r)
      feeds = fed.count(st.stages[r].buffer) && reads(st.stages[r].value, p.buffer);
    if (feeds && carries(g, p, h, plan.prefix)) {
      fed.insert(p.buffer);
      plan.members.insert(p.name);
    }
  }
  for (size_t j = 0; j < st.stages.size(); ++j) {
    const Stage& p = st.stages[j];
    if (j == hi || plan.members.count(p.name) || !carries(g, p, h, plan.prefix)) continue;
    for (const auto& m : fed)
      if (m != h.buffer && reads(p.value, m)) {
        plan.members.insert(p.name);
        break;
      }
  }
  // A softmax in blocks: some member takes the max over the host's reduction loop (the
  // block's max). A head loop of per-head weights (out = o_lat @ w_uv at B = 4) walks
  // blocks of its operand too, but its stages are no such blocks; fused per head they
  // lost the fusion the default gives them.
  bool block_max = false;
  for (const auto& p : st.stages)
    if (plan.members.count(p.name) && p.reduce && p.combine == ir::OpKind::Max)
      for (const auto& l : p.loops) block_max |= l.reduction && l.name == red.name;
  if (plan.members.size() < 2 || !block_max) return std::nullopt;
  return plan;
}

}  // namespace

std::optional<BlockPlan> block_plan(const ir::Graph& g, const Stages& st, const Target& target) {
  for (size_t i = st.stages.size(); i-- > 0;)
    if (auto plan = plan_for(g, st, i, target)) return plan;
  return std::nullopt;
}

void block_major(const ir::Graph& g, Stages& st, Schedule& out, const BlockPlan& plan,
                 const std::string& stage) {
  const Stage& s = st.stages[static_cast<size_t>(st.find(stage))];
  std::vector<std::string> order = plan.prefix;
  for (const auto& l : s.loops)
    if (std::find(plan.prefix.begin(), plan.prefix.end(), l.name) == plan.prefix.end())
      order.push_back(l.name);
  std::vector<std::string> now;
  for (const auto& l : s.loops) now.push_back(l.name);
  if (order != now) try_apply(g, st, out, make_directive(DirectiveKind::Reorder, stage, order));
}

void fuse_block(const ir::Graph& g, Stages& st, Schedule& out, const BlockPlan& plan) {
  for (size_t j = st.stages.size(); j-- > 0;) {
    const Stage& p = st.stages[j];
    if (!plan.members.count(p.name) || p.host >= 0) continue;
    try_apply(g, st, out, make_directive(DirectiveKind::ComputeAt, p.name, {plan.host, plan.loop}));
  }
}

}  // namespace ollie::loops
