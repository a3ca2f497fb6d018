// Applies schedule directives to stages, each after its legality check: a rejected
// directive throws ScheduleError naming the loop and the dependence, and changes nothing.
#include <algorithm>
#include <functional>

#include "loops/stages.h"

namespace ollie::loops {

Canonical canonical(const Stages& st, int s, int t) {
  const Stage& st_s = st.stages[static_cast<size_t>(s)];
  if (t < st_s.shared) return canonical(st, st_s.host, t);
  return {s, t};
}

std::string canonical_name(const Canonical& c) {
  return "@" + std::to_string(c.owner) + "." + std::to_string(c.index);
}

// Expression over stage `s`'s vars, rewritten over canonical loop names.
Expr in_canonical(const Stages& st, int s, const Expr& e) {
  const Stage& stage = st.stages[static_cast<size_t>(s)];
  std::map<std::string, Expr> names;
  for (size_t t = 0; t < stage.loops.size(); ++t)
    names[stage.loops[t].name] = make_var(canonical_name(canonical(st, s, static_cast<int>(t))));
  std::map<std::string, Expr> vars;
  for (const auto& [v, x] : stage.subst) vars[v] = substitute(x, names);
  return substitute(e, vars);
}

std::vector<size_t> packed_order(const PackedTile& p) {
  std::vector<size_t> order;
  for (size_t d = 0; d < p.extent.size(); ++d) order.push_back(d);
  if (p.transposed && order.size() >= 2) std::swap(order[order.size() - 2], order.back());
  return order;
}

ir::Shape packed_shape(const PackedTile& p) {
  ir::Shape shape;
  for (size_t d : packed_order(p)) shape.push_back(p.extent[d]);
  return shape;
}

namespace {

using ir::DimExpr;
using ir::OpKind;

[[noreturn]] void reject(const Directive& d, const std::string& reason,
                         const std::string& detail = "") {
  throw ScheduleError(d, reason, detail);
}

std::string loop_list(const Stage& s) {
  std::string out;
  for (const auto& l : s.loops) out += (out.empty() ? "" : ", ") + l.name;
  return out;
}

Stage& stage_named(Stages& st, const Directive& d, const std::string& name) {
  const int i = st.find(name);
  if (i < 0) {
    std::string all;
    for (const auto& s : st.stages) all += (all.empty() ? "" : ", ") + s.name;
    reject(
        d, "there is no stage " + name,
        "the stages are: " + all + " (elementwise values read once are inlined into their reader)");
  }
  return st.stages[static_cast<size_t>(i)];
}

int loop_index(const Stages&, const Stage& s, const Directive& d, const std::string& loop) {
  for (size_t i = 0; i < s.loops.size(); ++i)
    if (s.loops[i].name == loop) return static_cast<int>(i);
  reject(d, s.name + " has no loop " + loop, "its loops are: " + loop_list(s));
}

int index_of(const Stages& st, const Stage& s) { return static_cast<int>(&s - st.stages.data()); }

// The stages computed at `host` inside its loop `depth - 1` or deeper.
std::vector<const Stage*> children_inside(const Stages& st, const Stage& host, int depth) {
  std::vector<const Stage*> out;
  for (const auto& c : st.stages)
    if (c.host == index_of(st, host) && c.shared >= depth) out.push_back(&c);
  return out;
}

// Rejects changing loop `x` (and those inside it) of `s` when other stages depend on them.
void require_own_loop(const Stages& st, const Stage& s, const Directive& d, int x) {
  const auto& name = s.loops[static_cast<size_t>(x)].name;
  if (x < s.shared)
    reject(d,
           "loop " + name + " of " + s.name + " is shared with its host " +
               st.stages[static_cast<size_t>(s.host)].name,
           "compute_at made the host's loop serve both stages; schedule that loop on the host");
  for (const Stage* c : children_inside(st, s, x + 1))
    reject(d, c->name + " is computed inside loop " + name + " of " + s.name,
           "changing the loop would change the loops it shares; schedule " + s.name +
               " before compute_at");
  for (const auto& p : s.packs)
    if (p.depth > x)
      reject(d, "a tile of " + p.source + " is packed inside loop " + name,
             "pack after the loops are split and ordered");
}

// Rejects reshaping the loops of `s` (split, reorder) once its accumulator tile is fixed.
void require_no_accumulator(const Stage& s, const Directive& d) {
  if (s.accumulate_depth)
    reject(d,
           s.name + " accumulates in registers inside loop " +
               s.loops[static_cast<size_t>(s.accumulate_depth - 1)].name,
           "the tile is fixed by the loops it was made with: accumulate after the loops are split "
           "and ordered");
}

std::string fresh_loop_name(const Stages& st, const Stage& s, const std::string& base) {
  auto taken = [&](const std::string& n) {
    if (st.reserved.count(n)) return true;
    for (const auto& l : s.loops)
      if (l.name == n) return true;
    for (const auto& v : s.vars)
      if (v == n) return true;
    return false;
  };
  std::string name = base;
  for (int i = 2; taken(name); ++i) name = base + std::to_string(i);
  return name;
}

// ---- Dependences ----
//
// Every loop that a stage runs inside is owned by exactly one stage (a shared loop is its
// host's). Dependences are checked over these canonical loops: a writer W and a reader R
// of a buffer run inside the same first `c` loops; W's nest must run before R's within
// them, and at each iteration R may read only elements W writes at that iteration.

std::string loop_label(const Stages& st, const Canonical& c) {
  const Stage& s = st.stages[static_cast<size_t>(c.owner)];
  return s.name + "." + s.loops[static_cast<size_t>(c.index)].name;
}

// Where stage `s`'s store runs within one iteration of the common loops `0 .. c - 1`
// (owned by `owner`; the root when c == 0), as a path compared lexicographically: at
// each level the stages computed there come in stage order (0, index), then the
// enclosing stage's own continuation (1).
std::vector<std::pair<int, int>> order_path(const Stages& st, int s, int c, int owner) {
  std::vector<int> chain;  // s, its host, ..., up to (not including) owner
  for (int cur = s; cur != owner && cur >= 0; cur = st.stages[static_cast<size_t>(cur)].host)
    chain.push_back(cur);
  std::vector<std::pair<int, int>> path;
  for (size_t i = chain.size(); i-- > 0;) {
    const Stage& x = st.stages[static_cast<size_t>(chain[i])];
    if (owner >= 0 && x.shared > c) {
      path.push_back({1, 0});  // inside the enclosing stage's deeper loops
      return path;
    }
    path.push_back({0, chain[i]});
  }
  path.push_back({1, 0});
  return path;
}

struct Violation {
  std::string reason, detail;
};

std::optional<Violation> check_dependences(const Stages& st) {
  const int n = static_cast<int>(st.stages.size());
  // Each nested stage writes, at one iteration of its shared loops, a slice of its own.
  for (int w = 0; w < n; ++w) {
    const Stage& W = st.stages[static_cast<size_t>(w)];
    if (W.shared == 0) continue;
    std::vector<Expr> idx;
    for (const auto& i : W.store_index) idx.push_back(in_canonical(st, w, i));
    for (int t = 0; t < W.shared; ++t) {
      const std::string loop = canonical_name(canonical(st, w, t));
      bool found = false;
      for (const auto& i : idx) found = found || mentions(i, loop);
      if (!found)
        return Violation{
            W.name + " would be recomputed at every iteration of " +
                loop_label(st, canonical(st, w, t)) + ", which does not index its elements",
            "a stage can only be computed inside loops that select the elements it writes"};
    }
  }
  for (int w = 0; w < n; ++w) {
    const Stage& W = st.stages[static_cast<size_t>(w)];
    for (int r = 0; r < n; ++r) {
      if (r == w) continue;
      const Stage& R = st.stages[static_cast<size_t>(r)];
      std::vector<Expr> loads;
      collect_loads(R.value, W.buffer, loads);
      for (auto& l : loads) l = in_canonical(st, r, l);
      for (const auto& l : extent_loads(st, r, W.buffer)) loads.push_back(l);  // domain guards
      bool packs_it = false;
      for (const auto& p : R.packs) packs_it = packs_it || p.source == W.buffer;
      if (loads.empty() && !packs_it) continue;
      // Common enclosing loops.
      int c = 0;
      while (c < static_cast<int>(W.loops.size()) && c < static_cast<int>(R.loops.size()) &&
             canonical(st, w, c) == canonical(st, r, c))
        ++c;
      const int owner = c ? canonical(st, w, c - 1).owner : -1;
      if (order_path(st, w, c, owner) >= order_path(st, r, c, owner))
        return Violation{
            R.name + " reads " + W.buffer + " before " + W.name + " writes it",
            c ? "inside " + loop_label(st, canonical(st, w, c - 1)) + " the reader runs first"
              : "the reader's nest runs first"};
      if (c == 0) continue;
      if (packs_it)
        return Violation{R.name + " packs a tile of " + W.buffer + ", which " + W.name +
                             " writes one slice at a time inside " +
                             loop_label(st, canonical(st, w, c - 1)),
                         "pack only inputs and buffers completed before the reader's nest"};
      for (int t = 0; t < c; ++t)
        if (W.loops[static_cast<size_t>(t)].reduction)
          return Violation{R.name + " reads " + W.buffer + " inside the reduction loop " +
                               loop_label(st, canonical(st, w, t)) + " of " + W.name,
                           "it would read partial results"};
      std::vector<Expr> widx;
      for (const auto& i : W.store_index) widx.push_back(in_canonical(st, w, i));
      std::set<std::string> common;
      for (int t = 0; t < c; ++t) common.insert(canonical_name(canonical(st, w, t)));
      for (const auto& load : loads) {
        if (load->args.size() != widx.size() + 1)
          return Violation{"cannot tell which elements of " + W.buffer + " " + R.name + " reads",
                           "the read goes through a reshape; only direct indexing can be checked"};
        for (int t = 0; t < c; ++t) {
          const std::string loop = canonical_name(canonical(st, w, t));
          bool ok = false;
          for (size_t d = 0; d < widx.size() && !ok; ++d) {
            std::set<std::string> used;
            collect_vars(widx[d], used);
            bool only_common = true;
            for (const auto& u : used) only_common = only_common && common.count(u);
            ok = only_common && mentions(widx[d], loop) && equal(widx[d], load->args[d + 1]);
            // Or a block of rows, written whole at each iteration (row_blocks.cpp).
            ok = ok || same_block(st, w, widx, d, r, load->args[d + 1], loop);
          }
          if (!ok)
            return Violation{
                R.name + " reads elements of " + W.buffer + " that " + W.name +
                    " writes at other iterations of " + loop_label(st, canonical(st, w, t)),
                "at one iteration of a shared loop a reader may only read the slice written at "
                "that iteration"};
        }
      }
    }
  }
  return std::nullopt;
}

// ---- Directives ----

// A sum vectorized along its last reduction loop may keep a few pure loops of constant
// size inside that loop (a dot-product tile, e.g. 4 heads of attention scores against one
// key row): each of their iterations is its own accumulator, the loads of the operand
// they do not index are shared, and the independent sums hide the latency of the adds.
constexpr int64_t kMaxDotTile = 16;

// Whether loops[x] may be the vectorized reduction loop of such a sum: every loop inside
// it pure, neither vectorized nor parallel, with constant sizes whose product is at most
// kMaxDotTile (none inside: the plain vectorized sum).
bool vector_sum_loop(const Stage& s, const std::vector<StageLoop>& loops, size_t x) {
  if (!loops[x].reduction || !s.reduce || s.combine != OpKind::Add) return false;
  int64_t tile = 1;
  for (size_t t = x + 1; t < loops.size(); ++t) {
    const auto size = loops[t].nominal.as_constant();
    if (loops[t].reduction || !size || loops[t].kind == ForKind::Vectorized ||
        loops[t].kind == ForKind::Parallel)
      return false;
    tile *= *size;
    if (tile > kMaxDotTile) return false;
  }
  return true;
}

void split(Stages& st, Stage& s, const Directive& d) {
  const int x = loop_index(st, s, d, d.args[0]);
  require_own_loop(st, s, d, x);
  require_no_accumulator(s, d);
  const StageLoop old = s.loops[static_cast<size_t>(x)];
  const int64_t f = d.factor;
  const std::string outer = fresh_loop_name(st, s, old.name + "_o");
  s.loops.push_back({outer, nullptr, {}, false, ForKind::Serial});  // reserve the name
  const std::string inner = fresh_loop_name(st, s, old.name + "_i");
  s.loops.pop_back();
  const Expr fe = make_int(f);
  const bool plain = old.extent->kind == ExprKind::IntImm || old.extent->kind == ExprKind::Dim;
  const DimExpr outer_nominal = (old.nominal + DimExpr::constant(f - 1)).floordiv(f);
  const Expr outer_extent =
      plain ? make_dim(outer_nominal)
            : make_binary(OpKind::Div, make_binary(OpKind::Add, old.extent, make_int(f - 1)), fe);
  bool divides = false;
  if (plain)
    if (auto c = old.nominal.as_constant()) divides = *c % f == 0;
  // A loop bounded by its reader's demand stops its outer loop there; the inner loop
  // keeps whole blocks up to the full extent (demand_full_extent).
  const std::optional<Expr> full = demand_full_extent(old.extent);
  if (full)
    if (auto c = old.nominal.as_constant()) divides = *c % f == 0;
  Expr inner_extent = fe;
  if (!divides)
    inner_extent = make_binary(OpKind::Min, fe,
                               make_binary(OpKind::Sub, full ? *full : old.extent,
                                           make_binary(OpKind::Mul, make_var(outer), fe)));
  StageLoop o{outer, outer_extent, outer_nominal, old.reduction, ForKind::Serial};
  StageLoop i{inner, inner_extent, DimExpr::constant(f), old.reduction, ForKind::Serial};
  if (auto c = old.nominal.as_constant(); c && *c < f) i.nominal = DimExpr::constant(*c);
  s.loops[static_cast<size_t>(x)] = o;
  s.loops.insert(s.loops.begin() + x + 1, i);
  const std::map<std::string, Expr> by{
      {old.name,
       make_binary(OpKind::Add, make_binary(OpKind::Mul, make_var(outer), fe), make_var(inner))}};
  for (auto& [v, e] : s.subst) e = substitute(e, by);
  // The guarded tail of an earlier split of this loop now depends on both new loops.
  for (auto& lp : s.loops) lp.extent = substitute(lp.extent, by);
}

void reorder(Stages& st, Stage& s, const Directive& d) {
  std::vector<int> pos;
  for (const auto& l : d.args) {
    const int x = loop_index(st, s, d, l);
    if (std::find(pos.begin(), pos.end(), x) != pos.end())
      reject(d, "loop " + l + " is named twice");
    pos.push_back(x);
  }
  std::vector<int> slots = pos;
  std::sort(slots.begin(), slots.end());
  require_own_loop(st, s, d, slots[0]);
  require_no_accumulator(s, d);
  std::vector<StageLoop> loops = s.loops;
  for (size_t i = 0; i < pos.size(); ++i)
    loops[static_cast<size_t>(slots[i])] = s.loops[static_cast<size_t>(pos[i])];
  for (size_t i = 0; i < loops.size(); ++i) {
    for (size_t j = i + 1; j < loops.size(); ++j)  // a causal bound outside a block of rows
      if (const auto hull = block_bound(loops[i].extent, loops[j])) loops[i].extent = *hull;
    for (size_t j = i + 1; j < loops.size(); ++j)
      if (mentions(loops[i].extent, loops[j].name))
        reject(d, "the extent of loop " + loops[i].name + " depends on loop " + loops[j].name,
               loops[i].name +
                   (causal_bound(loops[i].extent) ? " follows a causal mask bounded by "
                                                  : " is the guarded tail of a split of ") +
                   loops[j].name + "; it must stay inside it");
    if (loops[i].kind == ForKind::Vectorized && i + 1 != loops.size() &&
        !vector_sum_loop(s, loops, i))
      reject(d, "loop " + loops[i].name + " is vectorized and must stay innermost",
             "only a vectorized sum keeps pure loops inside it: constant sizes (split factors), at "
             "most " +
                 std::to_string(kMaxDotTile) + " accumulators");
  }
  s.loops = std::move(loops);
}

void set_kind(Stages& st, Stage& s, const Directive& d, ForKind kind) {
  const int x = loop_index(st, s, d, d.args[0]);
  if (kind == ForKind::Vectorized) {
    require_own_loop(st, s, d, x);
  } else if (x < s.shared) {
    reject(d,
           "loop " + d.args[0] + " of " + s.name + " is shared with its host " +
               st.stages[static_cast<size_t>(s.host)].name,
           "schedule that loop on the host");
  }
  for (int t = 0; t < x; ++t)
    if (s.loops[static_cast<size_t>(t)].kind == ForKind::Vectorized && kind != ForKind::Unrolled)
      reject(
          d,
          "loop " + d.args[0] + " is inside the vectorized loop " +
              s.loops[static_cast<size_t>(t)].name,
          "only a serial or unrolled loop of a dot-product tile can run inside a vectorized sum");
  StageLoop& l = s.loops[static_cast<size_t>(x)];
  // A sum may be vectorized along its last reduction loop: the emitter accumulates in a
  // scalar that OpenMP splits over lanes (reassociation is exact in the IR's reals), one
  // per iteration of the small pure loops inside it (vector_sum_loop).
  const bool vector_sum =
      kind == ForKind::Vectorized && vector_sum_loop(s, s.loops, static_cast<size_t>(x));
  if (kind != ForKind::Unrolled && l.reduction && !vector_sum) {
    std::string at;
    for (size_t i = 0; i < s.store_index.size(); ++i)
      at += (i ? ", " : "") + to_text(s.store_index[i]);
    reject(d, "loop " + l.name + " carries the reduction into " + s.buffer + "[" + at + "]",
           "every iteration of " + l.name + " updates the same element; rfactor " + s.name + " " +
               l.name +
               " first to get a loop of independent partial results (only a sum's innermost loop "
               "vectorizes as is)");
  }
  if (kind == ForKind::Vectorized && x + 1 != static_cast<int>(s.loops.size()) && !vector_sum)
    reject(d, "loop " + l.name + " is not innermost (" + s.loops.back().name + " is inside it)",
           "reorder it innermost first (a sum's last reduction loop may keep small constant pure "
           "loops inside)");
  l.kind = kind;
}

void compute_at(Stages& st, Stage& p, const Directive& d) {
  Stage& h = stage_named(st, d, d.args[0]);
  const int pi = index_of(st, p), hi = index_of(st, h);
  if (pi == hi) reject(d, p.name + " cannot be computed inside itself");
  if (p.host >= 0)
    reject(d, p.name + " is already computed at " + st.stages[static_cast<size_t>(p.host)].name);
  if (hi < pi)
    reject(d, h.name + " runs before " + p.name, "a stage can only move into a later stage");
  for (const auto& o : st.stages)
    if (&o != &p && o.buffer == p.buffer)
      reject(d, p.name + " writes " + p.buffer + " together with " + o.name,
             "the parts of a concatenation stay at the root");
  const int j = loop_index(st, h, d, d.args[1]);
  const int k = j + 1;
  if (j < h.shared)
    reject(d,
           "loop " + d.args[1] + " of " + h.name + " is shared with its host " +
               st.stages[static_cast<size_t>(h.host)].name,
           "compute " + p.name + " at " + st.stages[static_cast<size_t>(h.host)].name + " instead");
  for (int t = 0; t <= j; ++t)
    if (h.loops[static_cast<size_t>(t)].kind == ForKind::Vectorized)
      reject(d, "loop " + h.loops[static_cast<size_t>(t)].name + " of " + h.name +
                    " is vectorized; nothing can be computed inside it");
  if (static_cast<int>(p.loops.size()) < k)
    reject(d, p.name + " has " + std::to_string(p.loops.size()) + " loops; it cannot share " +
                  std::to_string(k) + " loops of " + h.name);
  std::map<std::string, Expr> rename;
  for (int t = 0; t < k; ++t) {
    const StageLoop& pl = p.loops[static_cast<size_t>(t)];
    const StageLoop& hl = h.loops[static_cast<size_t>(t)];
    if (pl.reduction)
      reject(d, "loop " + pl.name + " of " + p.name +
                    " is a reduction loop; only pure loops can be shared");
    if (!equal(substitute(pl.extent, rename), hl.extent))
      reject(d,
             "loop " + pl.name + " of " + p.name + " walks [0, " + to_text(pl.extent) +
                 ") but loop " + hl.name + " of " + h.name + " walks [0, " + to_text(hl.extent) +
                 ")",
             "shared loops must have the same extents: split both stages alike first");
    rename[pl.name] = make_var(hl.name);
  }
  for (const auto& pk : p.packs)
    if (!pk.root && pk.depth < k)
      reject(d, p.name + " packs a tile of " + pk.source + " outside the loops it would share");
  if (p.accumulate_depth && p.accumulate_depth < k)
    reject(d, p.name + " accumulates in registers outside the loops it would share");
  const Stages before = st;
  Stage& moved = st.stages[static_cast<size_t>(pi)];
  moved.host = hi;
  moved.shared = k;
  if (auto v = check_dependences(st)) {
    st = before;
    reject(d, v->reason, v->detail);
  }
}

void rfactor(Stages& st, Stage& s, const Directive& d) {
  const int x = loop_index(st, s, d, d.args[0]);
  const StageLoop l = s.loops[static_cast<size_t>(x)];
  if (!s.reduce || !l.reduction)
    reject(d, "loop " + l.name + " of " + s.name + " is not a reduction loop");
  if (!s.running_max.empty())
    reject(d, s.name + " is an exp-weighted sum",
           "its partial sums would each need their own running max");
  if (s.host >= 0) reject(d, s.name + " is computed at a host", "rfactor before compute_at");
  for (const auto& c : st.stages)
    if (c.host == index_of(st, s))
      reject(d, c.name + " is computed inside " + s.name, "rfactor before compute_at");
  if (!s.packs.empty()) reject(d, s.name + " packs tiles", "rfactor before pack");
  if (s.accumulate_depth)
    reject(d, s.name + " accumulates in registers", "rfactor before accumulate");
  // A causal domain's bound: the partial results past it would never be written (a split
  // tail's inner loop is fine: its extent depends on the outer reduction loop, so the
  // partial results are initialised over the whole buffer).
  std::string bounded_by;
  bool by_reduction = false;
  for (const auto& o : s.loops) {
    if (o.name == l.name || !mentions(l.extent, o.name)) continue;
    if (o.reduction)
      by_reduction = true;
    else
      bounded_by += (bounded_by.empty() ? "" : ", ") + o.name;
  }
  if (!bounded_by.empty() && !by_reduction)
    reject(
        d,
        "loop " + l.name + " of " + s.name + " follows a causal mask bounded by loop " + bounded_by,
        "its extent is " + to_text(l.extent) +
            "; the partial results past the mask would never be written: split " + l.name +
            " and rfactor the inner loop");
  // The reduction loops go innermost in the reduced stage: a pure loop whose extent (a
  // split tail) depends on one of them would be walked outside it.
  for (const auto& p : s.loops)
    for (const auto& r : s.loops)
      if (!p.reduction && r.reduction && mentions(p.extent, r.name))
        reject(d,
               "the extent of loop " + p.name + " of " + s.name +
                   " depends on the reduction loop " + r.name,
               "it is the guarded tail of a split of " + r.name + " and could not stay inside it");
  const std::string rf_name = s.name + "_rf";
  if (st.find(rf_name) >= 0) reject(d, s.name + " is already factored (" + rf_name + " exists)");
  std::string buffer = s.buffer + "_rf";
  for (int i = 2; st.buffer(buffer) || st.reserved.count(buffer); ++i)
    buffer = s.buffer + "_rf" + std::to_string(i);
  std::string var = l.name;
  for (int i = 2; std::find(s.vars.begin(), s.vars.end(), var) != s.vars.end(); ++i)
    var = l.name + std::to_string(i);

  // The factored stage: the same loops and value, with `l` pure and one partial result
  // per value of it. The partial results are the buffer's last dim when `l` is the
  // innermost loop (a row max's vector of partials, side by side), else its first: the
  // loops inside `l` then walk each partial result as they walked the output (o_lat's
  // split key axis: one contiguous [H, L] accumulator per part, not L strided ones).
  const bool partials_last = x + 1 == static_cast<int>(s.loops.size());
  auto with_partial = [&](auto list, auto item) {
    if (partials_last)
      list.push_back(item);
    else
      list.insert(list.begin(), item);
    return list;
  };
  Stage rf = s;
  rf.name = rf_name;
  rf.buffer = buffer;
  rf.buffer_shape = with_partial(rf.buffer_shape, l.nominal);
  rf.vars.push_back(var);
  rf.subst[var] = make_var(l.name);
  rf.store_index = with_partial(rf.store_index, make_var(var));
  rf.loops[static_cast<size_t>(x)].reduction = false;
  rf.what = s.what + " (partial results over " + l.name + ")";
  rf.contract = false;
  for (auto& lp : rf.loops) lp.kind = lp.reduction ? ForKind::Serial : lp.kind;

  // The stage itself now reduces the partial results over `l`.
  Stage red = s;
  std::vector<std::string> vars;
  std::map<std::string, Expr> subst;
  std::set<std::string> reduced;
  for (const auto& lp : s.loops)
    if (lp.reduction) reduced.insert(lp.name);
  std::vector<StageLoop> loops;
  for (const auto& lp : s.loops)
    if (!lp.reduction) loops.push_back(lp);
  // The reduction over the partial results goes innermost: no loop outside it stays vectorized.
  for (auto& lp : loops) lp.kind = lp.kind == ForKind::Vectorized ? ForKind::Serial : lp.kind;
  loops.push_back({l.name, make_dim(l.nominal), l.nominal, true, ForKind::Serial});
  for (const auto& v : s.vars) {
    std::set<std::string> used;
    collect_vars(s.subst.at(v), used);
    bool pure = true;
    for (const auto& u : used) pure = pure && !reduced.count(u);
    if (pure) {
      vars.push_back(v);
      subst[v] = s.subst.at(v);
    }
  }
  vars.push_back(var);
  subst[var] = make_var(l.name);
  red.vars = vars;
  red.subst = subst;
  red.loops = loops;
  const std::vector<Expr> rf_idx = with_partial(s.store_index, make_var(var));
  red.value = make_load(buffer, s.dtype, flatten(rf_idx, rf.buffer_shape), rf_idx);

  const int si = index_of(st, s);
  st.locals.push_back({buffer, BufferRole::Local, s.dtype, rf.buffer_shape});
  st.reserved.insert(buffer);
  st.stages[static_cast<size_t>(si)] = red;
  st.stages.insert(st.stages.begin() + si, rf);
  for (auto& o : st.stages)
    if (o.host >= si) ++o.host;
}

// The copy's layout: `transposed` swaps the tile's last two dims.
void pack_layout(const Buffer& b, const Directive& d, PackedTile& tile) {
  if (d.args.size() < 3) return;
  if (d.args[2] != "transposed")
    reject(d, "unknown pack layout '" + d.args[2] + "'",
           "the layout after the loop is `transposed` (the tile's last two dims swapped), or "
           "nothing");
  if (b.shape.size() < 2)
    reject(d, b.name + " has " + std::to_string(b.shape.size()) +
                  " dim; only a tile of two dims "
                  "or more can be transposed");
  tile.transposed = true;
}

// The whole of `source`, copied once before the root nest `s` runs in: legal for inputs
// and for buffers that nest does not write (check_dependences).
PackedTile root_tile(const Buffer& b) {
  PackedTile tile;
  tile.root = true;
  tile.depth = 0;
  for (size_t dim = 0; dim < b.shape.size(); ++dim) tile.start.push_back(make_int(0));
  tile.extent = b.shape;
  return tile;
}

// The tile of `buffer` read by `s` inside its first `depth` loops: per dim, an index of the
// form start + sum(c_i * inner_i) with constant c_i >= 0 over the inner loops.
PackedTile loop_tile(const Stage& s, const Buffer& b, const Directive& d, int depth,
                     const std::vector<Expr>& loads) {
  const std::string& source = d.args[0];
  std::map<std::string, DimExpr> inner;
  for (size_t t = static_cast<size_t>(depth); t < s.loops.size(); ++t)
    inner[s.loops[t].name] = s.loops[t].nominal;
  PackedTile tile;
  tile.depth = depth;
  // Affine decomposition of each dim of the first load; all loads must agree on the start.
  for (size_t li = 0; li < loads.size(); ++li) {
    const Expr load = substitute(loads[li], s.subst);
    if (load->args.size() != b.shape.size() + 1)
      reject(d, "cannot tell which elements of " + source + " " + s.name + " reads (a reshape)");
    std::vector<Expr> start;
    ir::Shape extent;
    for (size_t dim = 0; dim < b.shape.size(); ++dim) {
      // Split e into (outer part, sum of c * inner).
      std::map<std::string, int64_t> coef;
      std::function<Expr(const Expr&, int64_t)> walk = [&](const Expr& e, int64_t scale) -> Expr {
        if (e->kind == ExprKind::Var && inner.count(e->name)) {
          coef[e->name] += scale;
          return make_int(0);
        }
        if (e->kind == ExprKind::Binary && e->op == OpKind::Add)
          return make_binary(OpKind::Add, walk(e->args[0], scale), walk(e->args[1], scale));
        if (e->kind == ExprKind::Binary && e->op == OpKind::Mul &&
            e->args[1]->kind == ExprKind::IntImm)
          return walk(e->args[0], scale * e->args[1]->int_value);
        for (const auto& [n, _] : inner)
          if (mentions(e, n))
            reject(d, "the index of " + source + " in " + s.name + " is not affine in loop " + n);
        return scale == 1 ? e : make_binary(OpKind::Mul, e, make_int(scale));
      };
      const Expr outer = walk(load->args[dim + 1], 1);
      DimExpr ext = DimExpr::constant(1);
      for (const auto& [n, c] : coef) {
        if (c < 0) reject(d, "the index of " + source + " decreases with loop " + n);
        ext = ext + DimExpr::constant(c) * (inner.at(n) - DimExpr::constant(1));
      }
      start.push_back(outer);
      extent.push_back(ext);
    }
    if (li == 0) {
      tile.start = start;
      tile.extent = extent;
    } else {
      for (size_t dim = 0; dim < start.size(); ++dim)
        if (!equal(start[dim], tile.start[dim]) || extent[dim] != tile.extent[dim])
          reject(d, s.name + " reads " + source + " at two different tiles");
    }
  }
  return tile;
}

// A fresh name for the copy of `source` that stage `s` reads.
std::string pack_local_name(const Stages& st, const Stage& s, const std::string& source) {
  std::string local = source + "_" + s.name + "_pack";
  for (char& c : local) c = c == '.' ? '_' : c;
  for (int i = 2; st.buffer(local) || st.reserved.count(local); ++i)
    local = source + "_pack" + std::to_string(i);
  return local;
}

// Names `tile`'s copy, adds it to the stage's packs and its local buffer to the nest.
void add_pack(Stages& st, Stage& s, PackedTile& tile, ir::DType dtype) {
  tile.local = pack_local_name(st, s, tile.source);
  st.reserved.insert(tile.local);
  st.locals.push_back({tile.local, BufferRole::Local, dtype, packed_shape(tile)});
  s.packs.push_back(tile);
}

bool same_tile(const PackedTile& a, const PackedTile& b) {
  for (size_t dim = 0; dim < a.start.size(); ++dim)
    if (!equal(a.start[dim], b.start[dim]) || a.extent[dim] != b.extent[dim]) return false;
  return true;
}

// `pack S B root` where S reads B at tiles smaller than B (a head's q and k slices of one
// qkv buffer): each distinct tile, over all of S's loops, is copied once before the root
// nest, and S's loads of it read the copy. False (nothing changed) when some load is not
// affine in S's loops, or S reads all of B: the whole buffer is then copied. B is a copy:
// adding the locals may move the buffer it names.
bool pack_root_tiles(Stages& st, Stage& s, const Buffer b, const Directive& d,
                     const std::vector<Expr>& loads) {
  std::vector<PackedTile> tiles;
  try {
    for (const Expr& load : loads) {
      PackedTile t = loop_tile(s, b, d, 0, {load});
      bool known = false;
      for (const auto& u : tiles) known = known || same_tile(u, t);
      if (!known) tiles.push_back(t);
    }
  } catch (const ScheduleError&) {
    return false;
  }
  bool whole = tiles.size() == 1 && tiles[0].extent == b.shape;
  for (const auto& e : tiles[0].start)
    whole = whole && e->kind == ExprKind::IntImm && !e->int_value;
  if (whole) return false;
  for (auto& t : tiles) pack_layout(b, d, t);  // may reject: before anything changes
  for (auto& t : tiles) {
    t.source = b.name;
    t.root = true;
    t.loads_rewritten = true;
    add_pack(st, s, t, b.dtype);
  }
  std::function<Expr(const Expr&)> reread = [&](const Expr& e) -> Expr {
    if (e->kind == ExprKind::Load && e->name == b.name) {
      const PackedTile mine = loop_tile(s, b, d, 0, {e});
      for (const auto& t : tiles) {
        if (!same_tile(t, mine)) continue;
        std::vector<Expr> idx;
        for (size_t dim : packed_order(t))
          idx.push_back(make_binary(OpKind::Sub, e->args[dim + 1], t.start[dim]));
        return make_load(t.local, e->dtype, flatten(idx, packed_shape(t)), idx);
      }
    }
    if (e->args.empty()) return e;
    std::vector<Expr> a;
    for (const auto& x : e->args) a.push_back(reread(x));
    return rebuild(e, std::move(a));
  };
  s.value = reread(s.value);
  return true;
}

// The tile of `b` that `s` reads inside loop d.args[1] (`pack S B LOOP`), after the
// checks that the loop can hold a copy.
PackedTile pack_tile_at_loop(const Stages& st, const Stage& s, const Buffer& b, const Directive& d,
                             const std::vector<Expr>& loads) {
  const int x = loop_index(st, s, d, d.args[1]);
  const int depth = x + 1;
  if (depth < s.shared)
    reject(
        d, "loop " + d.args[1] + " is shared with the host; pack inside the stage's own loops",
        "or pack the whole buffer once before the nest: pack " + s.name + " " + b.name + " root");
  if (depth == static_cast<int>(s.loops.size()))
    reject(d, "loop " + d.args[1] + " is innermost: the tile would be one element");
  if (s.loops[static_cast<size_t>(x)].kind == ForKind::Vectorized)
    reject(d, "loop " + d.args[1] + " is vectorized");
  return loop_tile(s, b, d, depth, loads);
}

// pack STAGE BUFFER LOOP|root [transposed]: a tile of BUFFER (or the tiles the stage reads
// over all its loops, before the root nest) copied into a contiguous local buffer that
// STAGE reads instead.
void pack(Stages& st, Stage& s, const Directive& d) {
  const std::string& source = d.args[0];
  const Buffer* b = st.buffer(source);
  if (!b) reject(d, "there is no buffer " + source);
  if (source == s.buffer)
    reject(d, s.name + " writes " + source + "; only buffers it reads can be packed");
  for (const auto& p : s.packs)
    if (p.source == source) reject(d, source + " is already packed in " + s.name);
  std::vector<Expr> loads;
  collect_loads(s.value, source, loads);
  if (loads.empty()) reject(d, s.name + " does not read " + source);
  const Stages before = st;
  if (d.args[1] != "root" || !pack_root_tiles(st, s, *b, d, loads)) {
    PackedTile tile = d.args[1] == "root" ? root_tile(*b) : pack_tile_at_loop(st, s, *b, d, loads);
    tile.source = source;
    pack_layout(*b, d, tile);
    add_pack(st, s, tile, b->dtype);
  }
  if (auto v = check_dependences(st)) {
    st = before;
    reject(d, v->reason, v->detail);
  }
}

// Keeps the part of the output that `s` writes inside loop LOOP in a local array of
// accumulators: initialised at the start of LOOP's body, updated by the reduction loops
// (all inside LOOP), and stored once after them. The pure loops inside LOOP index the
// tile, so their extents must be constants (split factors); their product is its size.
void accumulate(Stages& st, Stage& s, const Directive& d) {
  const int x = loop_index(st, s, d, d.args[0]);
  const StageLoop& l = s.loops[static_cast<size_t>(x)];
  if (!s.reduce)
    reject(d, s.name + " is not a reduction", "only a reduction's output has accumulators");
  if (!s.running_max.empty())
    reject(d, s.name + " is an exp-weighted sum",
           "its running max lives beside its output, not in accumulators");
  if (s.accumulate_depth) reject(d, s.name + " already accumulates in registers");
  if (l.reduction)
    reject(d, "loop " + l.name + " of " + s.name + " is a reduction loop",
           "accumulate at a pure loop outside every reduction loop");
  if (x < s.shared)
    reject(d,
           "loop " + l.name + " is shared with the host; accumulate inside the stage's own loops");
  if (l.kind == ForKind::Vectorized) reject(d, "loop " + l.name + " is vectorized");
  // A reduction loop may run outside the tile (a GEMM's k blocks around its tiles: cache
  // blocking): each tile then continues from the partial results stored after the previous
  // block, so every element still combines its terms in the same order.
  int64_t elements = 1;
  bool any_reduction = false;
  for (size_t t = static_cast<size_t>(x) + 1; t < s.loops.size(); ++t) {
    const StageLoop& in = s.loops[t];
    if (in.reduction) {
      any_reduction = true;
      continue;
    }
    const auto n = in.nominal.as_constant();
    if (!n)
      reject(
          d,
          "loop " + in.name + " inside " + l.name + " walks [0, " + to_text(in.extent) +
              "), not a constant",
          "the tile's loops need constant extents: split " + in.name + " by a small factor first");
    for (const auto& other : s.loops)
      if (other.reduction && mentions(in.extent, other.name))
        reject(d,
               "the extent of loop " + in.name + " of " + s.name +
                   " depends on the reduction loop " + other.name,
               "the tile's loops must not change size along the reduction");
    elements *= std::max<int64_t>(1, *n);
  }
  if (!any_reduction) reject(d, "no reduction loop of " + s.name + " runs inside loop " + l.name);
  const int64_t bytes = elements * static_cast<int64_t>(ir::dtype_bytes(s.dtype));
  if (bytes > kMaxAccumulatorBytes)
    reject(d,
           "the tile inside loop " + l.name + " is " + std::to_string(bytes) +
               " bytes of accumulators",
           "at most " + std::to_string(kMaxAccumulatorBytes) +
               " bytes stay in registers: split the loops inside " + l.name +
               " by smaller factors");
  std::string name = s.name + "_acc";
  for (char& c : name) c = c == '.' ? '_' : c;
  const std::string base = name;
  for (int i = 2; st.buffer(name) || st.reserved.count(name); ++i) name = base + std::to_string(i);
  st.reserved.insert(name);
  s.accumulator = name;
  s.accumulate_depth = x + 1;
}

}  // namespace

void apply_directive(const ir::Graph&, Stages& st, const Directive& d) {
  Stage& s = stage_named(st, d, d.stage);
  if (s.bf16_dot)
    reject(d, s.name + " is computed by the bf16_dot micro-kernel",
           "bf16_dot replaces the stage's whole nest; no other directive may name it");
  if (d.kind == DirectiveKind::ComputeAt) {
    const int h = st.find(d.args[0]);
    if (h >= 0 && st.stages[static_cast<size_t>(h)].bf16_dot)
      reject(d, d.args[0] + " is computed by the bf16_dot micro-kernel; it has no loops to share");
  }
  switch (d.kind) {
    case DirectiveKind::Split: return split(st, s, d);
    case DirectiveKind::Reorder: return reorder(st, s, d);
    case DirectiveKind::Parallel: return set_kind(st, s, d, ForKind::Parallel);
    case DirectiveKind::Vectorize: return set_kind(st, s, d, ForKind::Vectorized);
    case DirectiveKind::Unroll: return set_kind(st, s, d, ForKind::Unrolled);
    case DirectiveKind::ComputeAt: return compute_at(st, s, d);
    case DirectiveKind::Rfactor: return rfactor(st, s, d);
    case DirectiveKind::Pack: return pack(st, s, d);
    case DirectiveKind::Accumulate: return accumulate(st, s, d);
    case DirectiveKind::Bf16Dot: return apply_bf16_dot(st, s, d);
    case DirectiveKind::Inline: break;
  }
  throw InternalError("apply_directive: inline is applied by lower()");
}

}  // namespace ollie::loops
