// Turns scheduled stages into the kernel body (stages computed at their hosts' loops,
// reduction initialisation, packed tiles, local buffers).
#include <functional>
#include <limits>
#include <memory>

#include "loops/stages.h"

namespace ollie::loops {
namespace {

using ir::OpKind;

// Rows of the source a transposed copy gathers per block: one 64-byte line of float32.
constexpr int64_t kTransposeBlock = 16;

class Realizer {
 public:
  explicit Realizer(const Stages& st) : st_(st) {
    for (size_t i = 0; i < st.stages.size(); ++i) {
      if (st.stages[i].host >= 0) children_[st.stages[i].host].push_back(static_cast<int>(i));
      for (const auto& p : st.stages[i].packs) packed_.insert(p.local);
    }
    for (size_t i = 0; i < st.stages.size(); ++i) find_fold(static_cast<int>(i));
  }

  Stmt run() {
    std::vector<Stmt> nests;
    for (size_t i = 0; i < st_.stages.size(); ++i)
      if (st_.stages[i].host < 0) nests.push_back(root_nest(static_cast<int>(i)));
    Stmt body = make_block(nests);
    for (auto it = st_.locals.rbegin(); it != st_.locals.rend(); ++it) {
      if (packed_.count(it->name) || folds_.count(it->name)) continue;
      body = make_allocate(it->name, it->dtype, size_of(it->shape), body);
    }
    return body;
  }

 private:
  // The root nest of stage `root` with the whole-buffer packs of the stages in it copied
  // before it (once per call, outside any parallel loop) and alive until its end.
  Stmt root_nest(int root) {
    std::vector<const PackedTile*> packs;
    std::function<void(int)> gather = [&](int si) {
      for (const auto& p : st_.stages[static_cast<size_t>(si)].packs)
        if (p.root) packs.push_back(&p);
      if (auto it = children_.find(si); it != children_.end())
        for (int c : it->second) gather(c);
    };
    gather(root);
    Stmt nest = body_at(root, 0, {}, {});
    if (packs.empty()) return nest;
    std::vector<Stmt> body;
    for (const PackedTile* p : packs) body.push_back(pack_copy(*p, {}, {}));
    body.push_back(nest);
    Stmt out = make_block(body);
    for (const PackedTile* p : packs)
      out = make_allocate(p->local, st_.buffer(p->source)->dtype, size_of(p->extent), out);
    return out;
  }

  // Storage folding: a local buffer written by a stage computed at a host's loops, and
  // read only inside those same loops, needs just the slice of one iteration. It is then
  // allocated inside the innermost shared loop, without the dims the shared loops index.
  struct Fold {
    Canonical at;                // allocated in the body of this loop
    std::vector<bool> keep;      // the dims that remain
    std::vector<int64_t> block;  // per dim: the rows of a row block kept (0: not one)
    ir::Shape shape;             // the folded shape
  };

  void find_fold(int pi) {
    const Stage& p = st_.stages[static_cast<size_t>(pi)];
    if (p.host < 0) return;
    const Buffer* b = st_.buffer(p.buffer);
    if (!b || b->role != BufferRole::Local) return;
    std::vector<Expr> widx;
    for (const auto& i : p.store_index) widx.push_back(in_canonical(st_, pi, i));
    std::set<std::string> shared;
    for (int t = 0; t < p.shared; ++t) shared.insert(canonical_name(canonical(st_, pi, t)));
    Fold f{canonical(st_, pi, p.shared - 1), {}, {}, {}};
    std::vector<std::set<std::string>> used(widx.size());
    for (size_t d = 0; d < widx.size(); ++d) {
      collect_vars(widx[d], used[d]);
      bool only_shared = true;
      for (const auto& u : used[d]) only_shared = only_shared && shared.count(u);
      f.keep.push_back(!only_shared);
      // A block of rows `o * c + i` (o shared, i the producer's own): c rows kept.
      const auto rb = only_shared ? std::nullopt : row_block(widx[d]);
      const bool block = rb && shared.count(rb->outer) && !mentions(rb->inner, rb->outer) &&
                         block_rows(st_, pi, rb->inner, rb->size, true);
      f.block.push_back(block ? rb->size : 0);
      if (!only_shared) f.shape.push_back(block ? ir::DimExpr::constant(rb->size) : b->shape[d]);
    }
    for (size_t ri = 0; ri < st_.stages.size(); ++ri) {
      const Stage& r = st_.stages[ri];
      if (static_cast<int>(ri) != pi && r.buffer == p.buffer) return;  // another writer
      for (const auto& pk : r.packs)
        if (pk.source == p.buffer) return;
      std::vector<Expr> loads;
      collect_loads(r.value, p.buffer, loads);
      for (auto& l : loads) l = in_canonical(st_, static_cast<int>(ri), l);
      for (const auto& l : extent_loads(st_, static_cast<int>(ri), p.buffer)) loads.push_back(l);
      if (loads.empty() || static_cast<int>(ri) == pi) continue;
      for (int t = 0; t < p.shared; ++t)
        if (static_cast<int>(r.loops.size()) <= t ||
            !(canonical(st_, static_cast<int>(ri), t) == canonical(st_, pi, t)))
          return;  // read outside the shared loops
      for (const auto& c : loads) {
        if (c->args.size() != widx.size() + 1) return;
        for (size_t d = 0; d < widx.size(); ++d) {
          if (!f.keep[d] && !equal(c->args[d + 1], widx[d])) return;
          const auto rb = f.block[d] ? row_block(c->args[d + 1]) : std::nullopt;
          if (f.block[d] &&
              (!rb || rb->size != f.block[d] || rb->outer != row_block(widx[d])->outer))
            return;  // a read outside the block
        }
      }
    }
    // A slice of a constant size up to 64 KiB lives on the stack; any other on the heap, at
    // whatever depth: a heap slice per row of attention_prefill's [h, s] nest (2 KiB) costs
    // far less than the whole H x S x S buffer it replaces (8 MiB per stage, paged in anew
    // by every call; docs/schedules.md "Storage").
    folds_[p.buffer] = f;
    if (!p.running_max.empty()) folds_[p.running_max] = f;
  }

  // The row within its block of a block dim's index `o * c + i` (i; `idx mod c` if it
  // has another form), or `idx` itself when `size` is 0 (not a block dim).
  static Expr block_row(const Expr& idx, int64_t size) {
    if (!size) return idx;
    const auto rb = row_block(idx);
    if (rb && rb->size == size) return rb->inner;
    return make_binary(ir::OpKind::Mod, idx, make_int(size));
  }

  // The flat index of `idx` in `buffer` (of shape `shape`), folded when it is.
  Expr flat_index(const std::string& buffer, const std::vector<Expr>& idx,
                  const ir::Shape& shape) const {
    auto it = folds_.find(buffer);
    if (it == folds_.end()) return flatten(idx, shape);
    std::vector<Expr> kept;
    for (size_t d = 0; d < idx.size(); ++d)
      if (it->second.keep[d]) kept.push_back(block_row(idx[d], it->second.block[d]));
    return flatten(kept, it->second.shape);
  }

  // Loads of folded buffers index their slice.
  Expr refold(const Expr& e) const {
    if (folds_.empty()) return e;
    std::vector<Expr> a;
    bool changed = false;
    for (const auto& x : e->args) {
      a.push_back(refold(x));
      changed = changed || a.back() != x;
    }
    if (e->kind == ExprKind::Load) {
      auto it = folds_.find(e->name);
      if (it != folds_.end()) {
        const std::vector<Expr> multi(a.begin() + 1, a.end());
        OLLIE_CHECK(multi.size() == it->second.keep.size(),
                    "refold: load of " + e->name + " without its multi-index");
        return make_load(e->name, e->dtype, flat_index(e->name, multi, {}), multi);
      }
    }
    return changed ? rebuild(e, std::move(a)) : e;
  }

  static Expr size_of(const ir::Shape& shape) {
    ir::DimExpr n = ir::DimExpr::constant(1);
    for (const auto& d : shape) n = n * d;
    return make_dim(n);
  }

  std::string fresh(const std::string& base, const std::set<std::string>& scope) const {
    std::string name = base;
    for (int i = 2; scope.count(name) || st_.reserved.count(name); ++i)
      name = base + "_" + std::to_string(i);
    return name;
  }

  // The statements of stage `s` once its first `t` loops are open; `names` maps those
  // loops' names to the realized loop variables, `scope` holds every loop variable in scope.
  Stmt body_at(int si, int t, std::map<std::string, Expr> names, std::set<std::string> scope) {
    const Stage& s = st_.stages[static_cast<size_t>(si)];
    if (s.bf16_dot) return bf16_dot_call(s, scope, st_.reserved);  // no children, no packs
    std::vector<Stmt> out;
    if (auto it = children_.find(si); it != children_.end())
      for (int c : it->second) {
        const Stage& child = st_.stages[static_cast<size_t>(c)];
        if (child.shared != t) continue;
        std::map<std::string, Expr> cnames;
        for (int i = 0; i < t; ++i)
          cnames[child.loops[static_cast<size_t>(i)].name] =
              names.at(s.loops[static_cast<size_t>(i)].name);
        out.push_back(body_at(c, t, cnames, scope));
      }
    for (const auto& p : s.packs)
      if (!p.root && p.depth == t) out.push_back(pack_copy(p, names, scope));
    const int n = static_cast<int>(s.loops.size());
    if (s.reduce && (!s.accumulate_depth || reduction_outside_tile(s))) {
      int r = 0;
      while (r < n && !s.loops[static_cast<size_t>(r)].reduction) ++r;
      bool innermost = true;
      for (int i = r; i < n; ++i)
        innermost = innermost && s.loops[static_cast<size_t>(i)].reduction;
      if (innermost && r == t) out.push_back(init_at(s, element(s, names)));
      if (!innermost && t == r) out.push_back(init_nest(s, t, names, scope));
    }
    if (t == n) {
      out.push_back(store(s, names));
    } else if (!s.running_max.empty() && t == hoist_depth(s)) {
      out.push_back(online_weights(si, t, names, scope));
    } else if (s.accumulate_depth && s.accumulate_depth == t) {
      out.push_back(accumulator_tile(si, t, names, scope));
    } else {
      out.push_back(loop_at(si, t, names, scope));
    }
    Stmt body = out.size() == 1 ? out[0] : make_block(out);
    // A packed tile lives from its copy to the end of the loop body it was copied in.
    for (const auto& p : s.packs)
      if (!p.root && p.depth == t)
        body = make_allocate(p.local, st_.buffer(p.source)->dtype, size_of(p.extent), body);
    // So does a folded buffer, in the body of its innermost shared loop.
    if (t > 0 && t > s.shared)
      for (const auto& [name, f] : folds_)
        if (f.at == Canonical{si, t - 1})
          body = make_allocate(name, st_.buffer(name)->dtype, size_of(f.shape), body);
    return body;
  }

  // Loop `t` of stage `si` around the rest of the stage. Inside a full accumulator tile
  // (full_tile_stage_), the tile's pure loops run their constant nominal extents.
  Stmt loop_at(int si, int t, std::map<std::string, Expr> names, std::set<std::string> scope) {
    const Stage& s = st_.stages[static_cast<size_t>(si)];
    const StageLoop& l = s.loops[static_cast<size_t>(t)];
    const std::string name = fresh(l.name, scope);
    Expr extent = refold(substitute(l.extent, names));  // a causal domain's guard may load
    if (full_tile_stage_ == si && t >= s.accumulate_depth && !l.reduction)
      extent = make_int(*l.nominal.as_constant());
    // The copy for tiles cut by a tail runs rarely: it is not worth the code of unrolling.
    const ForKind kind =
        cut_tile_stage_ == si && l.kind == ForKind::Unrolled ? ForKind::Serial : l.kind;
    names[l.name] = make_var(name);
    scope.insert(name);
    return make_for(name, make_int(0), extent, kind, body_at(si, t + 1, names, scope), l.reduction);
  }

  // Whether a reduction loop of `s` runs outside its accumulator tile (cache blocking).
  static bool reduction_outside_tile(const Stage& s) {
    for (int t = 0; t + 1 < s.accumulate_depth; ++t)
      if (s.loops[static_cast<size_t>(t)].reduction) return true;
    return false;
  }

  // The pure loops of `s` inside its accumulator tile (those that index the tile).
  static std::vector<const StageLoop*> tile_loops(const Stage& s) {
    std::vector<const StageLoop*> out;
    for (size_t t = static_cast<size_t>(s.accumulate_depth); t < s.loops.size(); ++t)
      if (!s.loops[t].reduction) out.push_back(&s.loops[t]);
    return out;
  }

  // The element of the accumulator tile that the open loops (`names`) select: row-major
  // over the tile's loops and their constant extents.
  static Expr accumulator_index(const Stage& s, const std::map<std::string, Expr>& names) {
    std::vector<Expr> idx;
    ir::Shape shape;
    for (const StageLoop* l : tile_loops(s)) {
      idx.push_back(names.at(l->name));
      shape.push_back(ir::DimExpr::constant(*l->nominal.as_constant()));
    }
    return flatten(idx, shape);
  }

  // accumulate: at the start of loop depth `t`'s body, the tile of accumulators is set to
  // the reduction's identity, the stage's loops reduce into it, and it is stored once. A
  // tile that the split tails may cut short runs a general copy; full ones (the usual
  // case) a copy whose tile loops have constant trip counts, so that the compiler keeps
  // the accumulators in registers.
  Stmt accumulator_tile(int si, int t, const std::map<std::string, Expr>& names,
                        const std::set<std::string>& scope) {
    const Stage& s = st_.stages[static_cast<size_t>(si)];
    const std::vector<const StageLoop*> tile = tile_loops(s);
    int64_t size = 1;
    for (const StageLoop* l : tile) size *= std::max<int64_t>(1, *l->nominal.as_constant());
    // The tile is full when every tile loop whose extent is not a constant (a split tail
    // guard over loops outside the tile) runs its nominal extent.
    Expr full;
    bool versionable = true;
    for (const StageLoop* l : tile) {
      if (l->extent->kind == ExprKind::IntImm) continue;
      for (size_t i = static_cast<size_t>(t); i < s.loops.size(); ++i)
        versionable = versionable && !mentions(l->extent, s.loops[i].name);
      const Expr is_full = make_binary(OpKind::Eq, substitute(l->extent, names),
                                       make_int(*l->nominal.as_constant()));
      full = full ? make_binary(OpKind::And, full, is_full) : is_full;
    }
    auto version = [&](bool full_tile) {
      const int saved = full_tile_stage_, saved_cut = cut_tile_stage_;
      full_tile_stage_ = full_tile ? si : -1;
      cut_tile_stage_ = full_tile ? -1 : si;
      std::set<std::string> inner_scope = scope;
      const std::string a = fresh("a", inner_scope);
      Stmt init = make_for(a, make_int(0), make_int(size), ForKind::Vectorized,
                           make_store(s.accumulator, make_var(a), s.init));
      Stmt nest = loop_at(si, t, names, scope);
      // The store-back: a nest over the tile's loops (constant extents in a full tile).
      std::map<std::string, Expr> wnames = names;
      std::vector<std::pair<std::string, Expr>> opened;
      for (const StageLoop* l : tile) {
        const Expr extent =
            full_tile ? make_int(*l->nominal.as_constant()) : substitute(l->extent, wnames);
        const std::string name = fresh(l->name, inner_scope);
        inner_scope.insert(name);
        wnames[l->name] = make_var(name);
        opened.push_back({name, extent});
      }
      auto over_tile = [&](Stmt body) {
        for (size_t i = opened.size(); i-- > 0;)
          body = make_for(opened[i].first, make_int(0), opened[i].second,
                          i + 1 == opened.size() ? ForKind::Vectorized : ForKind::Serial, body);
        return body;
      };
      const Expr element_at = make_load(s.buffer, s.dtype, store_index(s, wnames));
      const Expr acc_at = accumulator_index(s, wnames);
      // Outside reduction loops: the tile continues from the stored partial results (in a
      // tile cut by a tail, the elements past it are neither loaded, updated nor stored).
      if (reduction_outside_tile(s))
        init = over_tile(make_store(s.accumulator, acc_at, element_at));
      Stmt back = over_tile(
          make_store(s.buffer, store_index(s, wnames), make_load(s.accumulator, s.dtype, acc_at)));
      full_tile_stage_ = saved;
      cut_tile_stage_ = saved_cut;
      return make_block({init, nest, back});
    };
    Stmt body = full && versionable ? make_if(full, version(true), version(false)) : version(!full);
    // Marked for the emitter, which may keep a full tile in named vector values.
    auto tile_alloc =
        std::make_shared<StmtNode>(*make_allocate(s.accumulator, s.dtype, make_int(size), body));
    tile_alloc->register_tile = true;
    return tile_alloc;
  }

  std::map<std::string, Expr> vars(const Stage& s, const std::map<std::string, Expr>& names) const {
    std::map<std::string, Expr> out;
    for (const auto& [v, e] : s.subst) out[v] = substitute(e, names);
    return out;
  }

  // The multi-index of the element the stage writes, over the open loops.
  std::vector<Expr> element(const Stage& s, const std::map<std::string, Expr>& names) const {
    const auto v = vars(s, names);
    std::vector<Expr> idx;
    for (const auto& i : s.store_index) idx.push_back(substitute(i, v));
    return idx;
  }

  Expr store_index(const Stage& s, const std::map<std::string, Expr>& names) const {
    return flat_index(s.buffer, element(s, names), s.buffer_shape);
  }

  // A reduction's initial value at element `idx` (and, for an exp-weighted contraction,
  // its running max: -inf).
  Stmt init_at(const Stage& s, const std::vector<Expr>& idx) const {
    Stmt init = make_store(s.buffer, flat_index(s.buffer, idx, s.buffer_shape), s.init);
    if (s.running_max.empty()) return init;
    const Expr ninf = make_float(-std::numeric_limits<double>::infinity(), s.dtype);
    return make_block(
        {init, make_store(s.running_max, flat_index(s.running_max, idx, s.buffer_shape), ninf)});
  }

  // Where an exp-weighted contraction computes its step's weights once for the loops
  // inside: the outermost depth after its last reduction loop from which every loop is one
  // the score does not vary along (attention's d, inside the keys' loop). -1 when there
  // is none (or a tile packed, or a stage computed, inside it would be read before it is
  // written): then every output element keeps its own running max.
  int hoist_depth(const Stage& s) const {
    const int n = static_cast<int>(s.loops.size());
    int last = -1;
    for (int i = 0; i < n; ++i)
      if (s.loops[static_cast<size_t>(i)].reduction) last = i;
    if (last < 0) return -1;
    const Expr score = substitute(s.value->args[0], s.subst);
    int h = n;
    while (h - 1 > last && !mentions(score, s.loops[static_cast<size_t>(h - 1)].name)) --h;
    for (const auto& p : s.packs)
      if (p.depth > h) return -1;
    // Likewise a stage computed inside: what it writes there is not ready for the weights.
    const int si = static_cast<int>(&s - st_.stages.data());
    if (auto it = children_.find(si); it != children_.end())
      for (int c : it->second)
        if (st_.stages[static_cast<size_t>(c)].shared > h) return -1;
    return h < n ? h : -1;
  }

  // At the hoist depth: the step's two weights, exp(m - c) for the sum so far and
  // exp(score - c) for this step (c the grown max, 0 while it is -inf), in a local pair
  // that the loops inside read; then the grown max.
  Stmt online_weights(int si, int t, const std::map<std::string, Expr>& names,
                      const std::set<std::string>& scope) {
    const Stage& s = st_.stages[static_cast<size_t>(si)];
    std::map<std::string, Expr> at = names;
    for (const auto& l : s.loops)
      if (!at.count(l.name)) at[l.name] = make_int(0);
    const std::vector<Expr> idx = element(s, at);
    const Expr value = refold(repack(s, substitute(s.value, vars(s, at)), at));
    const std::string fn = value->name == "online2" ? "exp2" : "exp";
    const Expr score = value->args[0];
    const Expr mat = flat_index(s.running_max, idx, s.buffer_shape);
    const Expr m = make_load(s.running_max, s.dtype, mat, idx);
    const Expr grown = make_binary(OpKind::Max, m, score);
    const Expr ninf = make_float(-std::numeric_limits<double>::infinity(), s.dtype);
    const Expr shift =
        make_select(make_binary(OpKind::Eq, grown, ninf), make_float(0, s.dtype), grown);
    const std::string w = s.running_max + "_w";
    Stmt body = make_block(
        {make_store(w, make_int(0), make_call(fn, {make_binary(OpKind::Sub, m, shift)})),
         make_store(w, make_int(1), make_call(fn, {make_binary(OpKind::Sub, score, shift)})),
         loop_at(si, t, names, scope), make_store(s.running_max, mat, grown)});
    return make_allocate(w, s.dtype, make_int(2), body);
  }

  // One step of an exp-weighted contraction (value online(score, x)) at element `idx`:
  //   m' = max(m, score), c = (m' == -inf ? 0 : m'),
  //   acc = acc * exp(m - c) + exp(score - c) * x, m = m'
  // exp(m - c) rescales the sum when the max grows (1 when it does not); shifting by 0
  // while every score so far is -inf keeps them adding 0 (not NaN), as ExpContract says.
  Stmt online_step(const Stage& s, const std::vector<Expr>& idx, const Expr& value) const {
    const Expr at = flat_index(s.buffer, idx, s.buffer_shape);
    const Expr mat = flat_index(s.running_max, idx, s.buffer_shape);
    const std::string fn = value->name == "online2" ? "exp2" : "exp";
    const Expr score = value->args[0], x = value->args[1];
    const Expr m = make_load(s.running_max, s.dtype, mat, idx);
    const Expr grown = make_binary(OpKind::Max, m, score);
    const Expr ninf = make_float(-std::numeric_limits<double>::infinity(), s.dtype);
    const Expr shift =
        make_select(make_binary(OpKind::Eq, grown, ninf), make_float(0, s.dtype), grown);
    const Expr acc = make_binary(
        OpKind::Add,
        make_binary(OpKind::Mul, make_load(s.buffer, s.dtype, at, idx),
                    make_call(fn, {make_binary(OpKind::Sub, m, shift)})),
        make_binary(OpKind::Mul, make_call(fn, {make_binary(OpKind::Sub, score, shift)}), x));
    return make_block({make_store(s.buffer, at, acc), make_store(s.running_max, mat, grown)});
  }

  // Loads of packed buffers read their local tile instead.
  Expr repack(const Stage& s, const Expr& e, const std::map<std::string, Expr>& names) const {
    if (s.packs.empty()) return e;
    if (e->kind == ExprKind::Load) {
      for (const auto& p : s.packs) {
        if (p.source != e->name || p.loads_rewritten) continue;
        std::vector<Expr> idx;
        for (size_t d : packed_order(p))
          idx.push_back(make_binary(OpKind::Sub, e->args[d + 1], substitute(p.start[d], names)));
        return make_load(p.local, e->dtype, flatten(idx, packed_shape(p)), idx);
      }
      return e;
    }
    if (e->args.empty()) return e;
    bool changed = false;
    std::vector<Expr> a;
    for (const auto& x : e->args) {
      a.push_back(repack(s, x, names));
      changed = changed || a.back() != x;
    }
    return changed ? rebuild(e, std::move(a)) : e;
  }

  Stmt store(const Stage& s, const std::map<std::string, Expr>& names) const {
    const Expr at = store_index(s, names);
    Expr value = refold(repack(s, substitute(s.value, vars(s, names)), names));
    if (s.accumulate_depth) {
      const Expr acc = accumulator_index(s, names);
      return make_store(s.accumulator, acc,
                        make_binary(s.combine, make_load(s.accumulator, s.dtype, acc), value));
    }
    if (!s.running_max.empty() && hoist_depth(s) >= 0) {
      // acc = acc * exp(m - c) + exp(score - c) * x with the weights of this step.
      const std::string w = s.running_max + "_w";
      return make_store(s.buffer, at,
                        make_binary(OpKind::Add,
                                    make_binary(OpKind::Mul, make_load(s.buffer, s.dtype, at),
                                                make_load(w, s.dtype, make_int(0))),
                                    make_binary(OpKind::Mul, make_load(w, s.dtype, make_int(1)),
                                                value->args[1])));
    }
    if (!s.running_max.empty()) return online_step(s, element(s, names), value);
    if (s.reduce) value = make_binary(s.combine, make_load(s.buffer, s.dtype, at), value);
    return make_store(s.buffer, at, value);
  }

  // The initialisation of a reduction whose pure loops are not all outside its reduction
  // loops: a nest over the pure loops inside the first reduction loop (depth t), just
  // before it.
  Stmt init_nest(const Stage& s, int t, std::map<std::string, Expr> names,
                 std::set<std::string> scope) const {
    std::vector<const StageLoop*> loops;
    for (size_t i = static_cast<size_t>(t); i < s.loops.size(); ++i)
      if (!s.loops[i].reduction) loops.push_back(&s.loops[i]);
    // A pure loop whose extent depends on a reduction loop (the split tail of a factored
    // reduction) cannot be walked here; then walk the buffer's own dims instead.
    for (const StageLoop* l : loops)
      for (const auto& other : s.loops)
        if (other.reduction && mentions(l->extent, other.name))
          return init_by_dims(s, names, scope);
    std::vector<std::pair<std::string, Expr>> opened;
    for (const StageLoop* l : loops) {
      const Expr extent = substitute(l->extent, names);
      const std::string name = fresh(l->name, scope);
      scope.insert(name);
      names[l->name] = make_var(name);
      opened.push_back({name, extent});
    }
    Stmt body = init_at(s, element(s, names));
    for (size_t i = opened.size(); i-- > 0;)
      body = make_for(opened[i].first, make_int(0), opened[i].second,
                      i + 1 == opened.size() ? ForKind::Vectorized : ForKind::Serial, body);
    return body;
  }

  // The initialisation over every buffer dim not fixed by the open loops (`names`).
  Stmt init_by_dims(const Stage& s, const std::map<std::string, Expr>& names,
                    std::set<std::string> scope) const {
    const auto v = vars(s, names);
    std::vector<Expr> idx;
    std::vector<std::pair<std::string, Expr>> opened;
    for (size_t d = 0; d < s.store_index.size(); ++d) {
      const Expr e = substitute(s.store_index[d], v);
      bool free = false;
      for (const auto& l : s.loops) free = free || (!names.count(l.name) && mentions(e, l.name));
      if (!free) {
        idx.push_back(e);
        continue;
      }
      OLLIE_CHECK(s.store_index[d]->kind == ExprKind::Var,
                  "init of " + s.name + ": a free dim is not a plain var");
      const std::string name = fresh(s.store_index[d]->name, scope);
      scope.insert(name);
      idx.push_back(make_var(name));
      opened.push_back({name, make_dim(s.buffer_shape[d])});
    }
    Stmt body = init_at(s, idx);
    for (size_t i = opened.size(); i-- > 0;)
      body = make_for(opened[i].first, make_int(0), opened[i].second,
                      i + 1 == opened.size() ? ForKind::Vectorized : ForKind::Serial, body);
    return body;
  }

  // Copies the tile of p.source into p.local (zeros past the source's edges), in the
  // copy's layout: its loops walk the copy's dims in order, the last one vectorized. A
  // transposed copy gathers along the source's rows, in blocks of kTransposeBlock rows
  // with the source's last dim inside the block loop: each block reads its rows' cache
  // lines once, one after the other (without blocks every column would gather from every
  // row of the tile, reading each line 16 times, from DRAM when the tile is big). A root
  // copy runs its outer loop in parallel: it is outside every parallel region.
  Stmt pack_copy(const PackedTile& p, const std::map<std::string, Expr>& names,
                 std::set<std::string> scope) const {
    const Buffer* src = st_.buffer(p.source);
    const std::vector<size_t> order = packed_order(p);
    std::vector<Expr> at(p.extent.size());
    std::vector<std::string> loop_names(p.extent.size());
    // The transposed copy's vectorized dim, walked in blocks (SIZE_MAX: none).
    const size_t blocked = order.size() >= 2 && order.back() != p.extent.size() - 1 &&
                                   !(p.extent[order.back()].as_constant() &&
                                     *p.extent[order.back()].as_constant() <= kTransposeBlock)
                               ? order.back()
                               : SIZE_MAX;
    std::string block_outer;
    std::vector<Expr> position(p.extent.size());
    for (size_t d = 0; d < p.extent.size(); ++d) {
      const std::string name = fresh("p" + std::to_string(d), scope);
      scope.insert(name);
      loop_names[d] = name;
      position[d] = make_var(name);
      if (d == blocked) {
        block_outer = fresh(name + "_o", scope);
        scope.insert(block_outer);
        position[d] = make_binary(
            OpKind::Add, make_binary(OpKind::Mul, make_var(block_outer), make_int(kTransposeBlock)),
            make_var(name));
      }
    }
    Expr inside;
    for (size_t d = 0; d < p.extent.size(); ++d) {
      at[d] = make_binary(OpKind::Add, substitute(p.start[d], names), position[d]);
      if (p.root && !p.loads_rewritten) continue;  // the whole buffer: always inside
      const Expr ok = make_binary(OpKind::Lt, at[d], make_dim(src->shape[d]));
      inside = inside ? make_binary(OpKind::And, inside, ok) : ok;
    }
    std::vector<Expr> idx;
    for (size_t d : order) idx.push_back(position[d]);
    const Expr zero =
        ir::is_float(src->dtype) ? make_float(0, src->dtype) : make_int(0, src->dtype);
    Expr value = make_load(p.source, src->dtype, flatten(at, src->shape), at);
    if (inside) value = make_guarded_select(inside, value, zero);
    Stmt body = make_store(p.local, flatten(idx, packed_shape(p)), value);
    for (size_t k = order.size(); k-- > 0;) {
      const size_t d = order[k];
      const bool outermost = k == 0 && blocked == SIZE_MAX;
      const ForKind kind = k + 1 == order.size()                     ? ForKind::Vectorized
                           : p.root && outermost && order.size() > 1 ? ForKind::Parallel
                                                                     : ForKind::Serial;
      if (d != blocked) {
        body = make_for(loop_names[d], make_int(0), make_dim(p.extent[d]), kind, body);
        continue;
      }
      // The block's rows: kTransposeBlock, fewer in the last block.
      const Expr extent = make_dim(p.extent[d]);
      const Expr rest =
          make_binary(OpKind::Sub, extent,
                      make_binary(OpKind::Mul, make_var(block_outer), make_int(kTransposeBlock)));
      const auto whole = p.extent[d].as_constant();
      const bool divides = whole && *whole % kTransposeBlock == 0;
      body = make_for(loop_names[d], make_int(0),
                      divides ? make_int(kTransposeBlock)
                              : make_binary(OpKind::Min, make_int(kTransposeBlock), rest),
                      kind, body);
    }
    if (blocked == SIZE_MAX) return body;
    // The block loop, outside the copy's other dims (at the root, in parallel).
    const Expr blocks = make_binary(
        OpKind::Div,
        make_binary(OpKind::Add, make_dim(p.extent[blocked]), make_int(kTransposeBlock - 1)),
        make_int(kTransposeBlock));
    return make_for(block_outer, make_int(0), blocks, p.root ? ForKind::Parallel : ForKind::Serial,
                    body);
  }

  const Stages& st_;
  std::map<int, std::vector<int>> children_;
  std::set<std::string> packed_;
  std::map<std::string, Fold> folds_;
  int full_tile_stage_ = -1;  // the stage whose full accumulator tile is being realized
  int cut_tile_stage_ = -1;   // the stage whose cut (general) accumulator tile is
};

}  // namespace

Kernel realize(const Stages& st) {
  Kernel k = st.kernel;
  k.body = Realizer(st).run();
  return k;
}

}  // namespace ollie::loops
