// Call handlers for numpy's layout functions and array methods: reshape, transpose,
// swapaxes, expand_dims, squeeze, astype, copy, flatten/ravel and asarray.
#include <algorithm>

#include "spec/elab_internal.h"

namespace ollie::spec::elab {

void Elab::add_layout_builtins(BuiltinTable& t) {
  add_builtins(t, {"np.reshape", "method.reshape"}, &Elab::np_reshape);
  add_builtins(t, {"np.transpose", "method.transpose"}, &Elab::np_transpose);
  add_builtins(t, {"np.swapaxes", "method.swapaxes"}, &Elab::np_swapaxes);
  add_builtins(t, {"np.expand_dims"}, &Elab::np_expand_dims);
  add_builtins(t, {"np.squeeze", "method.squeeze"}, &Elab::np_squeeze);
  add_builtins(t, {"method.astype"}, &Elab::np_astype);
  add_builtins(t, {"method.copy"}, &Elab::np_copy);
  add_builtins(t, {"method.flatten", "method.ravel"}, &Elab::np_flatten);
  add_builtins(t, {"np.asarray", "np.array"}, &Elab::np_asarray);
}

// np.reshape(a, shape) and a.reshape(shape) / a.reshape(*shape)
ValuePtr Elab::np_reshape(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  ValuePtr x;
  std::vector<ValuePtr> dims;
  if (c.method) {
    x = c.fn.self;
    for (auto& [k, v] : c.args.kw)
      if (k != "order" && k != "shape")
        fail(loc, ".reshape() got an unexpected keyword argument '" + k + "'");
    std::vector<ValuePtr> pos = c.args.pos;
    for (auto& [k, v] : c.args.kw)
      if (k == "shape") pos.push_back(v);
    if (pos.size() == 1)
      dims = c.int_seq(pos[0], "a reshape size");
    else
      dims = pos;
  } else {
    auto a = c.sig({"a", "newshape", "order"}, 2);
    x = c.tensor_arg(a[0], "a");
    dims = c.int_seq(a[1], "a reshape size");
  }
  return make_tensor(reshape_to(x->t, dims, loc));
}

// np.transpose(a, axes) and a.transpose(axes) / a.transpose(*axes)
ValuePtr Elab::np_transpose(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  ValuePtr x;
  ValuePtr axes;
  if (c.method) {
    x = c.fn.self;
    if (!c.args.kw.empty()) fail(loc, ".transpose() takes no keyword arguments");
    if (c.args.pos.size() == 1)
      axes = c.args.pos[0];
    else if (c.args.pos.size() > 1)
      axes = make_seq(Kind::Tuple, c.args.pos);
  } else {
    auto a = c.sig({"a", "axes"}, 1);
    x = c.tensor_arg(a[0], "a");
    axes = a[1];
  }
  int rank = static_cast<int>(shape_of(*x).size());
  std::vector<int> perm;
  if (is_none(axes)) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  } else {
    if (axes->kind != Kind::Tuple && axes->kind != Kind::List)
      fail(loc, "transpose axes must be a tuple of all axes");
    perm = axes_arg(axes, rank, loc);
    if (static_cast<int>(perm.size()) != rank)
      fail(loc,
           "transpose axes " + std::to_string(perm.size()) + " don't match an array of rank " +
               std::to_string(rank),
           "give a permutation of all the axes");
  }
  return make_tensor(builder_.transpose(x->t, perm, loc));
}

ValuePtr Elab::np_swapaxes(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "axis1", "axis2"}, 3);
  ValuePtr x = c.tensor_arg(a[0], "a");
  int rank = static_cast<int>(shape_of(*x).size());
  int i = norm_axis(to_const_int(a[1], loc, "axis1"), rank, loc),
      j = norm_axis(to_const_int(a[2], loc, "axis2"), rank, loc);
  std::vector<int> perm;
  for (int k = 0; k < rank; ++k) perm.push_back(k);
  std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  return make_tensor(builder_.transpose(x->t, perm, loc));
}

ValuePtr Elab::np_expand_dims(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.sig({"a", "axis"}, 2);
  ValuePtr x = c.tensor_arg(a[0], "a");
  const Shape& s = shape_of(*x);
  size_t n = (a[1]->kind == Kind::Tuple || a[1]->kind == Kind::List) ? a[1]->items.size() : 1;
  std::vector<int> axes = axes_arg(a[1], static_cast<int>(s.size() + n), loc, false);
  Shape out(s.size() + n);
  std::vector<bool> is_new(out.size(), false);
  for (int ax : axes) is_new[static_cast<size_t>(ax)] = true;
  size_t k = 0;
  for (size_t i = 0; i < out.size(); ++i) out[i] = is_new[i] ? DimExpr::constant(1) : s[k++];
  return make_tensor(builder_.reshape(x->t, out, loc));
}

ValuePtr Elab::np_squeeze(const BuiltinCall& c) {
  SourceLoc loc = c.loc;
  auto a = c.fsig({"a", "axis"}, 1);
  ValuePtr x = c.tensor_arg(a[0], "a");
  const Shape& s = shape_of(*x);
  std::vector<int> axes;
  if (is_none(a[1])) {
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] == DimExpr::constant(1)) axes.push_back(static_cast<int>(i));
  } else {
    axes = axes_arg(a[1], static_cast<int>(s.size()), loc);
    for (int ax : axes)
      if (s[static_cast<size_t>(ax)] != DimExpr::constant(1))
        fail(loc, "cannot squeeze axis " + std::to_string(ax) + " of " + type_str(x->t) +
                      ": its size is " + s[static_cast<size_t>(ax)].str() + ", not 1");
  }
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) out.push_back(s[i]);
  return make_tensor(builder_.reshape(x->t, out, loc));
}

ValuePtr Elab::np_astype(const BuiltinCall& c) {
  auto a = c.fsig({"self", "dtype", "copy"}, 2);
  auto t = to_dtype(a[1], c.loc);
  if (!t) fail(c.loc, ".astype() needs a dtype", "e.g. .astype(np.float32)");
  return make_tensor(convert(a[0]->t, *t, c.loc));
}

// a.copy() and np.copy(a): arrays are values in a spec, so a copy is the array itself.
ValuePtr Elab::np_copy(const BuiltinCall& c) {
  ValueId x = c.method ? c.fn.self->t : c.array_arg(c.sig({"a", "order", "subok"}, 1)[0], "a");
  if (c.method) c.sig({"order"}, 0);
  auto r = std::make_shared<Value>(*make_tensor(x));  // a new array: a write
  r->copied = true;                                   // into x leaves it alone
  return r;
}

// .flatten(), .ravel()
ValuePtr Elab::np_flatten(const BuiltinCall& c) {
  c.sig({"order"}, 0);
  return make_tensor(reshape_to(c.fn.self->t, {make_int(-1)}, c.loc));
}

// np.asarray, np.array: of an array (or a scalar) only; list literals are rejected.
ValuePtr Elab::np_asarray(const BuiltinCall& c) {
  auto a = c.sig({"a", "dtype"}, 1);
  auto t = to_dtype(a[1], c.loc);
  ValuePtr x = c.tensor_arg(a[0], "a");
  return make_tensor(t ? convert(x->t, *t, c.loc) : x->t);
}

}  // namespace ollie::spec::elab
