// Shape-level numpy semantics for the elaborator: axes, reductions (sum/max/min/mean/
// var), reshape with -1, einsum and indexing/slicing over symbolic dims.
#include <algorithm>
#include <set>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

namespace {

DimExpr product(const Shape& s) {
  DimExpr p = DimExpr::constant(1);
  for (auto& d : s) p = p * d;
  return p;
}

}  // namespace

int Elab::norm_axis(int64_t axis, int rank, SourceLoc loc) {
  if (axis < -rank || axis >= rank)
    fail(loc,
         "axis " + std::to_string(axis) + " is out of bounds for an array of rank " +
             std::to_string(rank),
         rank == 0
             ? std::string("a 0-d array has no axes")
             : "use an axis between " + std::to_string(-rank) + " and " + std::to_string(rank - 1));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int> Elab::axes_arg(const ValuePtr& axis, int rank, SourceLoc loc, bool allow_none) {
  std::vector<int> out;
  if (!axis || axis->kind == Kind::None) {
    if (!allow_none) fail(loc, "axis=None is not supported here", "give an integer axis");
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  if (axis->kind == Kind::Tuple || axis->kind == Kind::List) {
    for (auto& a : axis->items) out.push_back(norm_axis(to_const_int(a, loc, "axis"), rank, loc));
  } else {
    out.push_back(norm_axis(to_const_int(axis, loc, "axis"), rank, loc));
  }
  std::set<int> seen(out.begin(), out.end());
  if (seen.size() != out.size()) fail(loc, "repeated axis in 'axis'");
  return out;
}

ValuePtr Elab::reduce(const std::string& what, const ValuePtr& xv, const ValuePtr& axis,
                      bool keepdims, int64_t ddof, std::optional<DType> dtype, SourceLoc loc) {
  if (xv->kind != Kind::Tensor && !is_scalar(*xv))
    fail(loc, "np." + what + " needs an array, got " + kind_name(*xv));
  ValueId x = as_tensor(xv, loc);
  const Shape shape = node(x).shape;
  const int rank = static_cast<int>(shape.size());
  std::vector<int> axes = axes_arg(axis, rank, loc);
  std::sort(axes.begin(), axes.end());
  DType t = node(x).dtype;
  if (dtype)
    t = *dtype;
  else if (what == "sum" && !ir::is_float(t))
    t = DType::I64;
  else if ((what == "mean" || what == "var" || what == "std") && !ir::is_float(t))
    t = DType::F64;
  if ((what == "max" || what == "min") && t == DType::Bool)
    fail(loc, "np." + what + " of a boolean array is not supported",
         "convert with .astype(np.int64) first");
  if (t == DType::Bool) fail(loc, "np." + what + " with a bool dtype is not supported");
  x = convert(x, t, loc);
  Shape kept_shape = shape;
  DimExpr n = DimExpr::constant(1);
  for (int a : axes) {
    n = n * shape[static_cast<size_t>(a)];
    kept_shape[static_cast<size_t>(a)] = DimExpr::constant(1);
  }
  auto keep = [&](ValueId v) { return keepdims ? builder_.reshape(v, kept_shape, loc) : v; };
  auto divide = [&](ValueId s, const DimExpr& count) {
    if (eval_dim(count, loc) <= 0 && what != "sum")
      fail(loc, "np." + what + " over " +
                    (count.is_constant() ? std::string("zero") : count.str()) +
                    " elements (with ddof) is undefined at these dims");
    ValueId c = builder_.dim_constant(count, t, loc);
    return builder_.binary(OpKind::Div, s, to_shape(c, node(s).shape, loc), loc);
  };
  if (what == "sum" || what == "max" || what == "min") {
    if (axes.empty()) return make_tensor(x);
    ir::ReduceKind k = what == "sum"   ? ir::ReduceKind::Sum
                       : what == "max" ? ir::ReduceKind::Max
                                       : ir::ReduceKind::Min;
    if (k != ir::ReduceKind::Sum && eval_dim(n, loc) == 0)
      fail(loc, "np." + what + " of an empty array has no identity");
    return make_tensor(keep(builder_.reduce(k, x, axes, loc)));
  }
  if (what == "mean") {
    if (axes.empty()) return make_tensor(x);
    return make_tensor(keep(divide(builder_.reduce(ir::ReduceKind::Sum, x, axes, loc), n)));
  }
  if (what == "var" || what == "std") {
    ValuePtr mean = reduce("mean", make_tensor(x), axis, true, 0, std::nullopt, loc);
    ValueId d = builder_.binary(OpKind::Sub, x, to_shape(mean->t, shape, loc), loc);
    ValueId sq = builder_.powi(d, 2, loc);
    ValueId s = axes.empty() ? sq : builder_.reduce(ir::ReduceKind::Sum, sq, axes, loc);
    ValueId v = divide(s, n - DimExpr::constant(ddof));
    if (what == "std") v = builder_.unary(OpKind::Sqrt, v, loc);
    return make_tensor(keep(v));
  }
  fail(loc, "unsupported reduction np." + what);
}

ValueId Elab::reshape_to(ValueId x, const std::vector<ValuePtr>& dims, SourceLoc loc) {
  const Shape& from = node(x).shape;
  Shape to;
  int infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    DimExpr d = to_dim(dims[i], loc, "a reshape size");
    if (auto c = d.as_constant(); c && *c < 0) {
      if (*c != -1)
        fail(loc, "reshape size " + std::to_string(*c) + " is negative",
             "use -1 for the one size to infer");
      if (infer >= 0) fail(loc, "can only infer one size in a reshape (two -1s)");
      infer = static_cast<int>(i);
    }
    to.push_back(d);
  }
  DimExpr total = product(from);
  // "M*K = 12", or just "12" when the size is a constant.
  auto with_value = [](const DimExpr& e, int64_t v) {
    return e.is_constant() ? std::to_string(v) : e.str() + " = " + std::to_string(v);
  };
  std::string shown = "cannot reshape " + type_str(x) + " into " + ir::shape_str(to);
  if (infer >= 0) {
    Shape rest = to;
    rest.erase(rest.begin() + infer);
    DimExpr known = product(rest);
    int64_t tv = eval_dim(total, loc), kv = eval_dim(known, loc);
    if (kv <= 0 || tv % kv != 0)
      fail(loc,
           shown + ": " + with_value(total, tv) + " elements are not divisible by " +
               with_value(known, kv),
           "the known sizes must divide the element count at the bound dims");
    auto q = total.exact_div(known);
    // exact_div divides by a single term only; a known size like Q*(R - 1) is a sum, so
    // also try each product of the old sizes as the quotient: [Q, Q, R - 1] -> [-1, Q*(R - 1)]
    // infers Q. Checked symbolically (q * known == total), so a hit is exact for all dims.
    if (!q && from.size() <= 12) {
      for (uint32_t mask = 0; mask < (1u << from.size()) && !q; ++mask) {
        DimExpr cand = DimExpr::constant(1);
        for (size_t i = 0; i < from.size(); ++i)
          if (mask & (1u << i)) cand = cand * from[i];
        if (cand * known == total) q = cand;
      }
    }
    if (!q)
      fail(loc,
           shown + ": cannot infer -1 symbolically, " + total.str() + " is not a multiple of " +
               known.str(),
           "give every size explicitly (e.g. from x.shape)");
    if (eval_dim(*q, loc) * kv != tv)
      fail(loc, shown + ": " + total.str() + " is not divisible by " + known.str() +
                    " at the bound dims");
    to[static_cast<size_t>(infer)] = *q;
  }
  for (auto& d : to) d = with_divisibility(d);
  check_shape(to, loc);
  if (!(product(to) == total) && eval_dim(product(to), loc) != eval_dim(total, loc))
    fail(loc,
         shown + ": the element counts " + total.str() + " and " + product(to).str() + " differ",
         "the new shape must have as many elements as the old one");
  return builder_.reshape(x, to, loc);
}

// ---------------------------------------------------------------------------- einsum

// '...' in np.einsum's operands and output replaced by letters the spec does not use, as
// many as each operand's rank leaves unnamed (right-aligned across operands, as numpy
// broadcasts them); the output's '...' takes them all.
void Elab::expand_ellipsis(const std::string& spec, const std::vector<ValueId>& ids,
                           std::vector<std::string>& ins, std::string& out, SourceLoc loc) {
  std::string unused;
  for (char c = 'z'; c >= 'a'; --c)
    if (spec.find(c) == std::string::npos) unused += c;
  for (char c = 'Z'; c >= 'A'; --c)
    if (spec.find(c) == std::string::npos) unused += c;
  std::vector<size_t> unnamed(ins.size(), 0);
  size_t most = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].find("...") == std::string::npos) continue;
    const size_t named = ins[i].size() - 3, rank = node(ids[i]).shape.size();
    if (named > rank)
      fail(loc, "np.einsum operand " + std::to_string(i) + " is " + type_str(ids[i]) + " but '" +
                    ins[i] + "' names " + std::to_string(named) + " axes besides '...'");
    unnamed[i] = rank - named;
    most = std::max(most, unnamed[i]);
  }
  if (most > unused.size()) fail(loc, "np.einsum '" + spec + "': too many axes for '...'");
  // The ellipsis axes' letters, outermost first; operand i takes the last unnamed[i].
  const std::string letters = unused.substr(0, most);
  for (size_t i = 0; i < ins.size(); ++i) {
    const size_t at = ins[i].find("...");
    if (at != std::string::npos) ins[i].replace(at, 3, letters.substr(most - unnamed[i]));
  }
  const size_t at = out.find("...");
  if (at != std::string::npos)
    out.replace(at, 3, letters);
  else if (most > 0)
    fail(loc, "np.einsum '" + spec + "': the operands' '...' axes are missing from the output",
         "numpy refuses this too: write '...' in the output (e.g. \"...i,ij->...j\")");
}

ValuePtr Elab::einsum(const std::string& spec, const std::vector<ValuePtr>& ops, SourceLoc loc) {
  std::string s;
  for (char c : spec)
    if (c != ' ') s += c;
  auto arrow = s.find("->");
  if (arrow == std::string::npos) {
    // numpy's implicit mode: the labels that appear once, in ASCII order (upper case
    // first), after the broadcast axes when an operand has '...'.
    std::map<char, int> count;
    for (char c : s)
      if (c != ',' && c != '.') ++count[c];
    std::string implicit = s.find("...") != std::string::npos ? "..." : "";
    for (auto [c, n] : count)
      if (n == 1) implicit += c;
    arrow = s.size();
    s += "->" + implicit;
  }
  std::vector<std::string> ins;
  std::string lhs = s.substr(0, arrow), out = s.substr(arrow + 2);
  size_t p = 0;
  while (true) {
    size_t c = lhs.find(',', p);
    ins.push_back(lhs.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  if (ins.size() != ops.size())
    fail(loc, "np.einsum '" + spec + "' names " + std::to_string(ins.size()) + " operands but " +
                  std::to_string(ops.size()) + " were given");
  auto label = [&](char c) -> int {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    fail(loc, std::string("invalid label '") + c + "' in np.einsum '" + spec + "'",
         "labels are letters a-z, A-Z");
  };
  std::map<int, DimExpr> size;
  std::vector<std::vector<int>> labels;
  std::vector<ValuePtr> tens;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i]->kind != Kind::Tensor && !is_scalar(*ops[i]))
      fail(loc, "np.einsum operand " + std::to_string(i) + " is " + kind_name(*ops[i]));
    tens.push_back(ops[i]);
  }
  DType t = result_dtype(tens, loc);
  if (t == DType::Bool) fail(loc, "np.einsum of boolean arrays is not supported");
  std::vector<ValueId> ids;
  for (size_t i = 0; i < ops.size(); ++i) ids.push_back(as_tensor(ops[i], loc, t));
  if (s.find("...") != std::string::npos) expand_ellipsis(spec, ids, ins, out, loc);
  for (size_t i = 0; i < ops.size(); ++i) {
    const ValueId id = ids[i];
    const Shape& sh = node(id).shape;
    if (ins[i].size() != sh.size())
      fail(loc, "np.einsum operand " + std::to_string(i) + " is " + type_str(id) + " but '" +
                    ins[i] + "' names " + std::to_string(ins[i].size()) + " axes");
    std::vector<int> ls;
    for (size_t k = 0; k < ins[i].size(); ++k) {
      int l = label(ins[i][k]);
      if (std::find(ls.begin(), ls.end(), l) != ls.end())
        fail(loc,
             std::string("label '") + ins[i][k] + "' repeats within operand '" + ins[i] +
                 "' (a trace or diagonal)",
             "a spec supports einsum without repeated labels in one operand; use np.diagonal-free "
             "formulations");
      auto [it, fresh] = size.emplace(l, sh[k]);
      if (!fresh && it->second != sh[k])
        fail(loc,
             std::string("np.einsum label '") + ins[i][k] + "' has sizes " + it->second.str() +
                 " and " + sh[k].str(),
             it->second.is_constant() != sh[k].is_constant() ? mismatch_hint(it->second, sh[k])
                                                             : "");
      ls.push_back(l);
    }
    labels.push_back(ls);
  }
  std::vector<int> out_l;
  for (char c : out) {
    int l = label(c);
    if (!size.count(l))
      fail(loc,
           std::string("output label '") + c + "' of np.einsum '" + spec + "' is in no operand");
    if (std::find(out_l.begin(), out_l.end(), l) != out_l.end())
      fail(loc, std::string("output label '") + c + "' repeats in np.einsum '" + spec + "'");
    out_l.push_back(l);
  }
  ValueId cur = ids[0];
  std::vector<int> cur_l = labels[0];
  auto needed_after = [&](size_t i) {
    std::set<int> need(out_l.begin(), out_l.end());
    for (size_t j = i + 1; j < labels.size(); ++j) need.insert(labels[j].begin(), labels[j].end());
    return need;
  };
  if (ids.size() == 1) {
    std::vector<int> sum_axes;
    std::vector<int> kept;
    for (size_t k = 0; k < cur_l.size(); ++k) {
      if (std::find(out_l.begin(), out_l.end(), cur_l[k]) == out_l.end())
        sum_axes.push_back(static_cast<int>(k));
      else
        kept.push_back(cur_l[k]);
    }
    if (!sum_axes.empty()) cur = builder_.reduce(ir::ReduceKind::Sum, cur, sum_axes, loc);
    std::vector<int> perm;
    for (int l : out_l)
      perm.push_back(static_cast<int>(std::find(kept.begin(), kept.end(), l) - kept.begin()));
    return make_tensor(builder_.transpose(cur, perm, loc));
  }
  for (size_t i = 1; i < ids.size(); ++i) {
    std::vector<int> next_l;
    if (i + 1 == ids.size()) {
      next_l = out_l;
    } else {
      std::set<int> need = needed_after(i);
      for (int l : cur_l)
        if (need.count(l) && std::find(next_l.begin(), next_l.end(), l) == next_l.end())
          next_l.push_back(l);
      for (int l : labels[i])
        if (need.count(l) && std::find(next_l.begin(), next_l.end(), l) == next_l.end())
          next_l.push_back(l);
    }
    cur = checked(builder_.contract(cur, ids[i], cur_l, labels[i], next_l, loc), loc);
    cur_l = next_l;
  }
  return make_tensor(cur);
}

// ---------------------------------------------------------------------------- indexing

// numpy's fancy index by one constant list of integers (x[:, [2, 0, 1]]): the rows it
// names, in its order, repeats allowed, each checked and negative ones wrapped as an
// integer index is; the result's axis stands where the list stands, as numpy puts a single
// advanced index (first, when integers apart from it make the advanced indices
// non-adjacent). Built as the concatenation of those integer indexings.
ValuePtr Elab::list_subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx, size_t at,
                              SourceLoc loc) {
  const ValuePtr& list = idx[at];
  for (size_t i = 0; i < idx.size(); ++i)
    if (i != at && (idx[i]->kind == Kind::List || idx[i]->kind == Kind::Tuple))
      fail(loc, "indexing with several lists (fancy indexing) is not supported in a spec",
           "index with one list, then the other in a second subscript");
  if (list->items.empty()) fail(loc, "indexing with an empty list is not supported in a spec");
  for (auto& v : list->items)
    if (v->kind != Kind::Int || !v->i.is_constant())
      fail(loc, "indexing with a list of " + kind_name(*v) + " is not supported in a spec",
           "a list index holds constant integers (x[:, [2, 0, 1]]); use np.where for masks");
  // The output axis of the list: the axes that the indices before it keep or add.
  const int rank = static_cast<int>(shape_of(*base).size());
  int consumers = 0, position = 0;
  for (auto& v : idx)
    if (v->kind == Kind::Int || v->kind == Kind::Slice || v.get() == list.get()) ++consumers;
  for (size_t i = 0; i < at; ++i) {
    const Kind k = idx[i]->kind;
    if (k == Kind::None || k == Kind::Slice) ++position;
    if (k == Kind::Ellipsis) position += std::max(0, rank - consumers);
  }
  // Integers count as advanced indices beside a list: when a slice, None or ... separates
  // them from it, numpy puts the list's axis first.
  size_t first = at, last = at;
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]->kind == Kind::Int) first = std::min(first, i), last = std::max(last, i);
  for (size_t i = first; i <= last; ++i)
    if (i != at && idx[i]->kind != Kind::Int) position = 0;
  std::vector<ValueId> rows;
  for (auto& v : list->items) {
    std::vector<ValuePtr> one = idx;
    one[at] = v;
    ValueId r = as_tensor(subscript(base, one, loc), loc);
    Shape s = node(r).shape;
    s.insert(s.begin() + position, DimExpr::constant(1));
    rows.push_back(builder_.reshape(r, s, loc));
  }
  return make_tensor(checked(builder_.concat(rows, position, loc), loc));
}

// A subscript with slices of negative step (x[::-1], x[5:1:-2]): the subscript with those
// axes whole, then each such axis read backwards by a gather whose rows are computed
// (start - |step| * i, always inside the axis), with Python's bounds: defaults from the
// end, negative bounds counted from the end, then clamped.
ValuePtr Elab::reversed_subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx,
                                  SourceLoc loc) {
  const int rank = static_cast<int>(shape_of(*base).size());
  int consumers = 0;
  for (auto& v : idx)
    if (v->kind == Kind::Int || v->kind == Kind::Slice) ++consumers;
  std::vector<ValuePtr> whole = idx;
  struct Reversal {
    int axis;      // in the result of the whole-axes subscript
    int64_t step;  // > 0: the magnitude of the slice's step
    ValuePtr start, stop;
  };
  std::vector<Reversal> reversals;
  int position = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    const ValuePtr& v = idx[i];
    if (v->kind == Kind::None) ++position;
    if (v->kind == Kind::Ellipsis) position += std::max(0, rank - consumers);
    if (v->kind != Kind::Slice) continue;
    const int64_t step =
        v->items[2] && !is_none(v->items[2]) ? to_const_int(v->items[2], loc, "slice step") : 1;
    if (step < 0) {
      reversals.push_back({position, -step, v->items[0], v->items[1]});
      whole[i] = make_seq(Kind::Slice, {nullptr, nullptr, nullptr});
    }
    ++position;
  }
  ValueId x = as_tensor(subscript(base, whole, loc), loc);
  for (const Reversal& r : reversals) {
    const DimExpr d = node(x).shape[static_cast<size_t>(r.axis)];
    const int64_t dv = eval_dim(d, loc);
    // Python's slice bounds for a negative step: start in [-1, d - 1], stop in [-1, d - 1].
    auto bound = [&](const ValuePtr& b, bool is_start) -> DimExpr {
      if (is_none(b)) return is_start ? d - DimExpr::constant(1) : DimExpr::constant(-1);
      DimExpr e = to_dim(b, loc, "a slice bound");
      int64_t ev = eval_dim(e, loc);
      if (ev < 0) {
        e = d + e;
        ev += dv;
      }
      if (ev < 0) return DimExpr::constant(-1);
      if (ev > dv - 1) return d - DimExpr::constant(1);
      return e;
    };
    const DimExpr start = bound(r.start, true), stop = bound(r.stop, false);
    const int64_t span = eval_dim(start, loc) - eval_dim(stop, loc);
    const DimExpr len = span <= 0 ? DimExpr::constant(0)
                                  : (start - stop + DimExpr::constant(r.step - 1)).floordiv(r.step);
    check_shape({len}, loc);
    const ValueId i = builder_.iota({len}, 0, DType::I64, loc);
    const ValueId step =
        to_shape(builder_.constant(static_cast<double>(r.step), DType::I64, loc), {len}, loc);
    ValueId rows = builder_.binary(OpKind::Mul, i, step, loc);
    rows = builder_.binary(OpKind::Sub,
                           to_shape(builder_.dim_constant(start, DType::I64, loc), {len}, loc),
                           rows, loc);
    x = checked(builder_.gather(x, rows, r.axis, loc), loc);
  }
  return make_tensor(x);
}

ValuePtr Elab::subscript(const ValuePtr& base, const std::vector<ValuePtr>& idx_in, SourceLoc loc) {
  std::vector<ValuePtr> idx = idx_in;
  if (idx.size() == 1 && idx[0]->kind == Kind::Tuple) idx = idx[0]->items;
  if (base->kind == Kind::Tuple || base->kind == Kind::List) {
    if (idx.size() != 1)
      fail(loc,
           "a " + std::string(base->kind == Kind::Tuple ? "tuple" : "list") + " takes one index");
    const auto& items = base->items;
    int64_t n = static_cast<int64_t>(items.size());
    if (idx[0]->kind == Kind::Slice) {
      int64_t step = idx[0]->items[2] ? to_const_int(idx[0]->items[2], loc, "slice step") : 1;
      if (step == 0) fail(loc, "slice step cannot be zero");
      auto bound = [&](const ValuePtr& v, int64_t dflt) {
        if (!v || v->kind == Kind::None) return dflt;
        int64_t k = to_const_int(v, loc, "slice bound");
        if (k < 0) k += n;
        return step > 0 ? std::clamp<int64_t>(k, 0, n) : std::clamp<int64_t>(k, -1, n - 1);
      };
      int64_t lo = bound(idx[0]->items[0], step > 0 ? 0 : n - 1),
              hi = bound(idx[0]->items[1], step > 0 ? n : -1);
      std::vector<ValuePtr> out;
      for (int64_t k = lo; step > 0 ? k < hi : k > hi; k += step)
        out.push_back(items[static_cast<size_t>(k)]);
      return make_seq(base->kind, out);
    }
    int64_t k = to_const_int(idx[0], loc, "index");
    if (k < -n || k >= n)
      fail(loc, "index " + std::to_string(k) + " is out of range for a sequence of length " +
                    std::to_string(n));
    return items[static_cast<size_t>(k < 0 ? k + n : k)];
  }
  if (base->kind == Kind::Dict) {
    if (idx.size() != 1 || idx[0]->kind != Kind::Str) fail(loc, "dict keys are strings in a spec");
    auto it = std::find(base->keys.begin(), base->keys.end(), idx[0]->s);
    if (it == base->keys.end()) fail(loc, "key '" + idx[0]->s + "' is not in the dict");
    auto g = globals_.find("DIMS");
    if (g != globals_.end() && g->second.get() == base.get()) {
      auto is_dim = [&](const std::string& n) {
        return std::find(graph_.dims.begin(), graph_.dims.end(), n) != graph_.dims.end();
      };
      if (is_dim(idx[0]->s))
        return make_int(DimExpr::symbol(idx[0]->s));  // a dim of the entry stays symbolic
      // A dim that RELATIONS derive is its expression over the free dims.
      auto d = derived_dims_.find(idx[0]->s);
      if (d != derived_dims_.end()) {
        auto syms = d->second.symbols();
        if (std::all_of(syms.begin(), syms.end(), is_dim)) return make_int(d->second);
      }
    }
    return base->items[static_cast<size_t>(it - base->keys.begin())];
  }
  if (base->kind != Kind::Tensor || base->weak) fail(loc, kind_name(*base) + " cannot be indexed");

  ValueId x = base->t;
  const Shape shape = node(x).shape;
  const int rank = static_cast<int>(shape.size());
  int consumers = 0, ellipses = 0;
  for (auto& v : idx)
    if (v->kind == Kind::Tensor) return gather_subscript(x, idx, loc);
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i]->kind == Kind::List || idx[i]->kind == Kind::Tuple)
      return list_subscript(base, idx, i, loc);
  for (auto& v : idx) {
    if (v->kind == Kind::Int || v->kind == Kind::Slice)
      ++consumers;
    else if (v->kind == Kind::Ellipsis)
      ++ellipses;
    else if (v->kind == Kind::Bool)
      fail(loc, "indexing with True/False is not supported in a spec", "use None to add an axis");
    else if (v->kind != Kind::None)
      fail(loc, "an index must be an integer, a slice, None or ..., not " + kind_name(*v));
  }
  if (ellipses > 1) fail(loc, "an index can only have a single ellipsis ('...')");
  if (consumers > rank)
    fail(loc, "too many indices for " + type_str(x) + ": " + std::to_string(consumers) +
                  " indices for rank " + std::to_string(rank));
  std::vector<ir::SliceAxis> slices;
  for (auto& d : shape) slices.push_back({DimExpr(), d, 1});
  Shape out;
  bool sliced = false;
  int axis = 0;
  for (auto& v : idx) {
    if (v->kind == Kind::None) {
      out.push_back(DimExpr::constant(1));
      continue;
    }
    if (v->kind == Kind::Ellipsis) {
      for (int k = 0; k < rank - consumers; ++k, ++axis)
        out.push_back(shape[static_cast<size_t>(axis)]);
      continue;
    }
    const DimExpr& d = shape[static_cast<size_t>(axis)];
    int64_t dv = eval_dim(d, loc);
    auto& sl = slices[static_cast<size_t>(axis)];
    if (v->kind == Kind::Int) {
      DimExpr k = v->i;
      int64_t kv = eval_dim(k, loc);
      if (kv < 0) {
        k = d + k;
        kv += dv;
      }
      if (kv < 0 || kv >= dv)
        fail(loc, "index " + v->i.str() + " is out of bounds for axis " + std::to_string(axis) +
                      " with size " + d.str() + " = " + std::to_string(dv));
      sl = {k, k + DimExpr::constant(1), 1};
      sliced = true;
      ++axis;
      continue;
    }
    // A slice: normalize negative bounds with the dim and clamp like Python.
    int64_t step = v->items[2] && v->items[2]->kind != Kind::None
                       ? to_const_int(v->items[2], loc, "slice step")
                       : 1;
    if (step == 0) fail(loc, "slice step cannot be zero");
    if (step < 0) return reversed_subscript(base, idx, loc);
    auto bound = [&](const ValuePtr& b, bool is_lower) -> std::pair<DimExpr, int64_t> {
      if (!b || b->kind == Kind::None)
        return is_lower ? std::pair{DimExpr(), int64_t{0}} : std::pair{d, dv};
      DimExpr e = to_dim(b, loc, "a slice bound");
      int64_t ev = eval_dim(e, loc);
      if (ev < 0) {
        e = d + e;
        ev += dv;
      }
      if (ev < 0) return {DimExpr(), 0};
      if (ev > dv) return {d, dv};
      return {e, ev};
    };
    auto [lo, lov] = bound(v->items[0], true);
    auto [hi, hiv] = bound(v->items[1], false);
    if (hiv < lov) {
      hi = lo;
      hiv = lov;
    }
    sl = {lo, hi, step};
    if (!(lo == DimExpr() && hi == d && step == 1)) sliced = true;
    out.push_back(sl.length());
    ++axis;
  }
  for (; axis < rank; ++axis) out.push_back(shape[static_cast<size_t>(axis)]);
  ValueId r = x;
  if (sliced) r = checked(builder_.slice(x, slices, loc), loc);
  return make_tensor(builder_.reshape(r, out, loc));
}

}  // namespace ollie::spec::elab
