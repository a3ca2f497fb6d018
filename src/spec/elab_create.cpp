// numpy array creation and joining for the elaborator: full/zeros/ones/*_like,
// tri/triu/tril, arange, concatenate, stack, split, repeat and tile.
#include <cmath>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

ValuePtr Elab::call_numpy_more(const Value& fn, const CallArgs& args, SourceLoc loc) {
  const std::string& name = fn.s;
  const bool method = name.rfind("method.", 0) == 0;
  std::string base = method ? name.substr(7) : name.rfind("np.", 0) == 0 ? name.substr(3) : name;
  CallArgs full = args;
  if (method) {
    full.pos.insert(full.pos.begin(), fn.self);
    full.pos_loc.insert(full.pos_loc.begin(), loc);
  }
  auto sig = [&](const std::vector<std::string>& names, size_t required) {
    return bind_args(*this, full, name, names, required, loc);
  };
  auto tensor = [&](const ValuePtr& v, const std::string& what) -> ValueId {
    if (v->kind == Kind::Tensor && !v->weak) return v->t;
    if (is_scalar(*v)) return as_tensor(v, loc);
    fail(loc, name + ": " + what + " must be an array, got " + kind_name(*v));
  };
  auto shape_arg = [&](const ValuePtr& v) {
    Shape s;
    if (v->kind == Kind::Tuple || v->kind == Kind::List) {
      for (auto& it : v->items) s.push_back(to_dim(it, loc, "a size in the shape"));
    } else {
      s.push_back(to_dim(v, loc, "the shape"));
    }
    check_shape(s, loc);
    return s;
  };
  auto filled = [&](Shape s, const ValuePtr& fill, std::optional<DType> dt) {  // s by value: nodes grow
    DType t = dt ? *dt : result_dtype({fill}, loc);
    ValueId c = as_tensor(fill, loc, t);
    if (!node(c).shape.empty()) return to_shape(c, s, loc);
    ValueId r = builder_.reshape(c, Shape(s.size(), DimExpr::constant(1)), loc);
    return checked(builder_.broadcast(r, s, loc), loc);
  };

  if (base == "full" || base == "zeros" || base == "ones") {
    bool is_full = base == "full";
    auto a = is_full ? sig({"shape", "fill_value", "dtype"}, 2) : sig({"shape", "dtype"}, 1);
    auto dt = to_dtype(is_full ? a[2] : a[1], loc);
    if (!is_full && !dt) dt = DType::F64;
    ValuePtr fill = is_full ? a[1] : make_int(base == "ones" ? 1 : 0);
    return make_tensor(filled(shape_arg(a[0]), fill, dt));
  }
  if (base == "zeros_like" || base == "ones_like" || base == "full_like") {
    bool is_full = base == "full_like";
    auto a = is_full ? sig({"a", "fill_value", "dtype"}, 2) : sig({"a", "dtype"}, 1);
    ValueId x = tensor(a[0], "a");
    auto dt = to_dtype(is_full ? a[2] : a[1], loc);
    if (!dt) dt = node(x).dtype;
    ValuePtr fill = is_full ? a[1] : make_int(base == "ones_like" ? 1 : 0);
    return make_tensor(filled(node(x).shape, fill, dt));
  }
  if (base == "tri") {
    auto a = sig({"N", "M", "k", "dtype"}, 1);
    DimExpr n = to_dim(a[0], loc, "N"), m = is_none(a[1]) ? n : to_dim(a[1], loc, "M");
    DimExpr k = is_none(a[2]) ? DimExpr() : to_dim(a[2], loc, "k");
    auto dt = to_dtype(a[3], loc);
    Shape s = {n, m};
    check_shape(s, loc);
    ValueId i = builder_.iota(s, 0, DType::I64, loc), j = builder_.iota(s, 1, DType::I64, loc);
    ValueId ik = builder_.binary(OpKind::Add, i, to_shape(builder_.dim_constant(k, DType::I64, loc), s, loc), loc);
    ValueId mask = builder_.binary(OpKind::Le, j, ik, loc);
    return make_tensor(convert(mask, dt.value_or(DType::F64), loc));
  }
  if (base == "triu" || base == "tril") {
    auto a = sig({"m", "k"}, 1);
    ValueId x = tensor(a[0], "m");
    const Shape xs = node(x).shape;
    if (xs.size() < 2) fail(loc, "np." + base + " needs an array of rank >= 2, got " + type_str(x));
    DimExpr k = is_none(a[1]) ? DimExpr() : to_dim(a[1], loc, "k");
    Shape s = {xs[xs.size() - 2], xs.back()};
    ValueId i = builder_.iota(s, 0, DType::I64, loc), j = builder_.iota(s, 1, DType::I64, loc);
    ValueId ik = builder_.binary(OpKind::Add, i, to_shape(builder_.dim_constant(k, DType::I64, loc), s, loc), loc);
    ValueId mask = builder_.binary(base == "triu" ? OpKind::Ge : OpKind::Le, j, ik, loc);
    mask = to_shape(mask, xs, loc);
    ValueId zero = to_shape(builder_.constant(0, node(x).dtype, loc), xs, loc);
    return make_tensor(builder_.select(mask, x, zero, loc));
  }
  if (base == "arange") {
    auto a = sig({"start", "stop", "step", "dtype"}, 1);
    ValuePtr start = a[0], stop = a[1], step = a[2];
    if (is_none(stop)) { stop = start; start = make_int(0); }
    if (is_none(step)) step = make_int(1);
    auto dt = to_dtype(a[3], loc);
    bool all_int = true;
    for (auto& v : {start, stop, step}) {
      if (v->kind == Kind::Tensor) to_dim(v, loc, "an np.arange bound");
      if (v->kind == Kind::Float) all_int = false;
      else if (v->kind != Kind::Int && v->kind != Kind::Bool) fail(loc, "np.arange bounds must be numbers, not " + kind_name(*v));
    }
    if (all_int) {
      DimExpr lo = to_dim(start, loc, "start"), hi = to_dim(stop, loc, "stop");
      int64_t st = to_const_int(step, loc, "the np.arange step");
      if (st == 0) fail(loc, "np.arange step must not be zero");
      // numpy's length is ceil((stop - start) / step). When the step divides the range at
      // the bound dims we use the exact quotient, so arange(0, HD, 2) lines up with HD//2
      // as real specs expect (for other dims numpy itself would fail to broadcast).
      DimExpr span = st > 0 ? hi - lo : lo - hi;
      int64_t ast = st > 0 ? st : -st;
      int64_t sv = eval_dim(span, loc);
      DimExpr len = sv % ast == 0 ? span.floordiv(ast) : (span + DimExpr::constant(ast - 1)).floordiv(ast);
      if (eval_dim(len, loc) < 0) len = DimExpr();
      Shape s = {len};
      check_shape(s, loc);
      ValueId r = builder_.iota(s, 0, DType::I64, loc);
      if (st != 1) r = builder_.binary(OpKind::Mul, r, to_shape(builder_.constant(static_cast<double>(st), DType::I64, loc), s, loc), loc);
      if (lo != DimExpr()) r = builder_.binary(OpKind::Add, r, to_shape(builder_.dim_constant(lo, DType::I64, loc), s, loc), loc);
      return make_tensor(dt ? convert(r, *dt, loc) : r);
    }
    auto num = [&](const ValuePtr& v) -> double {
      if (v->kind == Kind::Float) return v->f;
      if (v->kind == Kind::Bool) return v->b;
      if (auto c = v->i.as_constant()) return static_cast<double>(*c);
      fail(loc, "np.arange with float and dim bounds together is not supported", "use integer bounds, then scale");
    };
    double lo = num(start), hi = num(stop), st = num(step);
    if (st == 0 || !std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(st)) fail(loc, "np.arange bounds must be finite and the step nonzero");
    double n = std::ceil((hi - lo) / st);
    if (n > 1e9) fail(loc, "np.arange is too large for a spec");
    int64_t len = n > 0 ? static_cast<int64_t>(n) : 0;
    Shape s = {DimExpr::constant(len)};
    ValueId r = builder_.iota(s, 0, DType::F64, loc);
    r = builder_.binary(OpKind::Mul, r, to_shape(builder_.constant(st, DType::F64, loc), s, loc), loc);
    r = builder_.binary(OpKind::Add, r, to_shape(builder_.constant(lo, DType::F64, loc), s, loc), loc);
    return make_tensor(dt ? convert(r, *dt, loc) : r);
  }
  if (base == "concatenate" || base == "stack") {
    auto a = sig({"arrays", "axis"}, 1);
    if (a[0]->kind != Kind::Tuple && a[0]->kind != Kind::List)
      fail(loc, "np." + base + " takes a list or tuple of arrays", "e.g. np." + base + "([a, b], axis=0)");
    if (a[0]->items.empty()) fail(loc, "np." + base + " needs at least one array");
    if (!is_none(a[1]) && a[1]->kind != Kind::Int) fail(loc, "np." + base + " axis must be an integer");
    std::vector<ValuePtr> xs;
    for (auto& it : a[0]->items) {
      if (it->kind != Kind::Tensor || it->weak) fail(loc, "np." + base + " of " + kind_name(*it) + " is not supported; pass arrays");
      xs.push_back(it);
    }
    if (is_none(a[1]) && !a[1]) {}
    DType t = result_dtype(xs, loc);
    std::vector<ValueId> ids;
    for (auto& x : xs) ids.push_back(convert(x->t, t, loc));
    const Shape s0 = node(ids[0]).shape;
    int64_t ax_raw = is_none(a[1]) ? 0 : to_const_int(a[1], loc, "axis");
    if (a[1] && a[1]->kind == Kind::None) fail(loc, "np." + base + " with axis=None is not supported", "reshape the arrays first");
    if (base == "stack") {
      int ax = norm_axis(ax_raw, static_cast<int>(s0.size()) + 1, loc);
      // All shapes are checked before any is reshaped, so the message shows them as given.
      for (auto& id : ids)
        if (node(id).shape != s0)
          fail(loc, "np.stack needs arrays of equal shape: " + type_str(ids[0]) + " and " + type_str(id));
      for (auto& id : ids) {
        Shape e = s0;
        e.insert(e.begin() + ax, DimExpr::constant(1));
        id = builder_.reshape(id, e, loc);
      }
      return make_tensor(checked(builder_.concat(ids, ax, loc), loc));
    }
    if (s0.empty()) fail(loc, "np.concatenate of 0-d arrays is not possible", "use np.stack");
    int ax = norm_axis(ax_raw, static_cast<int>(s0.size()), loc);
    for (auto& id : ids) {
      const Shape& s = node(id).shape;
      bool ok = s.size() == s0.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int>(d) == ax || s[d] == s0[d];
      if (!ok)
        fail(loc, "np.concatenate: " + type_str(ids[0]) + " and " + type_str(id) + " differ off axis " + std::to_string(ax),
             "all dims except the concatenation axis must be equal");
    }
    return make_tensor(checked(builder_.concat(ids, ax, loc), loc));
  }
  if (base == "split") {
    auto a = sig({"ary", "indices_or_sections", "axis"}, 2);
    ValueId x = tensor(a[0], "ary");
    const Shape s = node(x).shape;
    if (s.empty()) fail(loc, "np.split of a 0-d array");
    int ax = norm_axis(is_none(a[2]) ? 0 : to_const_int(a[2], loc, "axis"), static_cast<int>(s.size()), loc);
    const DimExpr d = s[static_cast<size_t>(ax)];
    int64_t dv = eval_dim(d, loc);
    std::vector<DimExpr> cuts = {DimExpr()};
    if (a[1]->kind == Kind::Int) {
      int64_t n = to_const_int(a[1], loc, "the number of sections");
      if (n <= 0 || n > 4096)
        fail(loc, "np.split needs between 1 and 4096 sections, got " + std::to_string(n),
             "split into as many sections as the axis can be divided into, e.g. np.split(x, 2, axis=-1)");
      if (dv % n != 0)
        fail(loc, "np.split: " + d.str() + " = " + std::to_string(dv) + " does not divide into " + std::to_string(n) + " equal sections",
             "use a section count that divides the dim, or give split indices");
      DimExpr part = d.floordiv(n);
      for (int64_t k = 1; k < n; ++k) cuts.push_back(part * DimExpr::constant(k));
      // n divides d at the bound dims: end at part*n so every section has the same symbolic size.
      cuts.push_back(part * DimExpr::constant(n));
      std::vector<ValuePtr> parts;
      for (size_t k = 0; k + 1 < cuts.size(); ++k) {
        std::vector<ir::SliceAxis> sl;
        for (auto& dd : s) sl.push_back({DimExpr(), dd, 1});
        sl[static_cast<size_t>(ax)] = {cuts[k], cuts[k + 1], 1};
        parts.push_back(make_tensor(checked(builder_.slice(x, sl, loc), loc)));
      }
      return make_seq(Kind::List, parts);
    } else if (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List) {
      if (a[1]->items.size() > 4096) fail(loc, "too many split indices");
      for (auto& it : a[1]->items) {
        DimExpr c = to_dim(it, loc, "a split index");
        int64_t cv = eval_dim(c, loc);
        if (cv < 0) { c = d + c; cv += dv; }
        if (cv < 0) c = DimExpr();
        else if (cv > dv) c = d;
        cuts.push_back(c);
      }
    } else {
      fail(loc, "np.split takes a section count or a list of indices, not " + kind_name(*a[1]));
    }
    cuts.push_back(d);
    std::vector<ValuePtr> parts;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      std::vector<ir::SliceAxis> sl;
      for (auto& dd : s) sl.push_back({DimExpr(), dd, 1});
      DimExpr lo = cuts[k], hi = cuts[k + 1];
      if (eval_dim(hi, loc) < eval_dim(lo, loc)) hi = lo;
      sl[static_cast<size_t>(ax)] = {lo, hi, 1};
      parts.push_back(make_tensor(checked(builder_.slice(x, sl, loc), loc)));
    }
    return make_seq(Kind::List, parts);
  }
  if (base == "repeat") {
    auto a = sig({"a", "repeats", "axis"}, 2);
    ValueId x = tensor(a[0], "a");
    int64_t r = to_const_int(a[1], loc, "repeats");
    if (r < 0) fail(loc, "np.repeat count must be non-negative");
    if (is_none(a[2])) {
      x = reshape_to(x, {make_int(-1)}, loc);
    }
    Shape s = node(x).shape;
    if (s.empty()) fail(loc, "np.repeat of a 0-d array with an axis");
    int ax = is_none(a[2]) ? 0 : norm_axis(to_const_int(a[2], loc, "axis"), static_cast<int>(s.size()), loc);
    Shape ins = s, big = s, out = s;
    ins.insert(ins.begin() + ax + 1, DimExpr::constant(1));
    big.insert(big.begin() + ax + 1, DimExpr::constant(r));
    out[static_cast<size_t>(ax)] = s[static_cast<size_t>(ax)] * DimExpr::constant(r);
    check_shape(big, loc);
    ValueId y = builder_.broadcast(builder_.reshape(x, ins, loc), big, loc);
    return make_tensor(builder_.reshape(y, out, loc));
  }
  if (base == "tile") {
    auto a = sig({"A", "reps"}, 2);
    ValueId x = tensor(a[0], "A");
    std::vector<int64_t> reps;
    if (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List)
      for (auto& it : a[1]->items) reps.push_back(to_const_int(it, loc, "reps"));
    else
      reps.push_back(to_const_int(a[1], loc, "reps"));
    for (auto r : reps)
      if (r < 0) fail(loc, "np.tile reps must be non-negative");
    Shape s = node(x).shape;
    while (s.size() < reps.size()) s.insert(s.begin(), DimExpr::constant(1));
    while (reps.size() < s.size()) reps.insert(reps.begin(), 1);
    x = builder_.reshape(x, s, loc);
    Shape ins, big, out;
    for (size_t i = 0; i < s.size(); ++i) {
      ins.push_back(DimExpr::constant(1));
      ins.push_back(s[i]);
      big.push_back(DimExpr::constant(reps[i]));
      big.push_back(s[i]);
      out.push_back(s[i] * DimExpr::constant(reps[i]));
    }
    check_shape(big, loc);
    ValueId y = builder_.broadcast(builder_.reshape(x, ins, loc), big, loc);
    return make_tensor(builder_.reshape(y, out, loc));
  }
  fail(loc, name + " is not supported in a spec");
}

}  // namespace ollie::spec::elab
