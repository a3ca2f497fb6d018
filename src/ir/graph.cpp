// Graph construction (Builder) and the invariant checker shared by Builder and verify().
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "ir/ir.h"

namespace ollie::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
  }
  return "?";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  for (DType t :
       {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool, DType::F16, DType::BF16})
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32: return 4;
    case DType::F64:
    case DType::I64: return 8;
    case DType::Bool: return 1;
    case DType::F16:
    case DType::BF16: return 2;
  }
  return 0;
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::F32: return 0x1p-24;
    case DType::F64: return 0x1p-53;
    case DType::F16: return 0x1p-11;
    case DType::BF16: return 0x1p-8;
    default: return 0.0;
  }
}

double largest_finite(DType t) {
  switch (t) {
    case DType::F32: return static_cast<double>(std::numeric_limits<float>::max());
    case DType::F16: return 65504.0;
    case DType::BF16: return 0x1.fep127;
    default: return std::numeric_limits<double>::max();
  }
}

double smallest_normal(DType t) {
  switch (t) {
    case DType::F32:
    case DType::BF16: return 0x1p-126;
    case DType::F64: return 0x1p-1022;
    case DType::F16: return 0x1p-14;
    default: return 0.0;
  }
}

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::Input: return "input";
    case OpKind::Const: return "const";
    case OpKind::Iota: return "iota";
    case OpKind::Neg: return "neg";
    case OpKind::Abs: return "abs";
    case OpKind::Exp: return "exp";
    case OpKind::Exp2: return "exp2";
    case OpKind::Log: return "log";
    case OpKind::Sqrt: return "sqrt";
    case OpKind::Tanh: return "tanh";
    case OpKind::Erf: return "erf";
    case OpKind::Sin: return "sin";
    case OpKind::Cos: return "cos";
    case OpKind::Floor: return "floor";
    case OpKind::Ceil: return "ceil";
    case OpKind::Trunc: return "trunc";
    case OpKind::Rint: return "rint";
    case OpKind::PowI: return "powi";
    case OpKind::Not: return "not";
    case OpKind::Convert: return "convert";
    case OpKind::Add: return "add";
    case OpKind::Sub: return "sub";
    case OpKind::Mul: return "mul";
    case OpKind::Div: return "div";
    case OpKind::Pow: return "pow";
    case OpKind::Max: return "max";
    case OpKind::Min: return "min";
    case OpKind::FloorDiv: return "floordiv";
    case OpKind::Mod: return "mod";
    case OpKind::Lt: return "lt";
    case OpKind::Le: return "le";
    case OpKind::Gt: return "gt";
    case OpKind::Ge: return "ge";
    case OpKind::Eq: return "eq";
    case OpKind::Ne: return "ne";
    case OpKind::And: return "and";
    case OpKind::Or: return "or";
    case OpKind::Select: return "select";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::Reshape: return "reshape";
    case OpKind::Transpose: return "transpose";
    case OpKind::Slice: return "slice";
    case OpKind::Concat: return "concat";
    case OpKind::Gather: return "gather";
    case OpKind::Reduce: return "reduce";
    case OpKind::Contract: return "contract";
    case OpKind::ExpContract: return "exp_contract";
  }
  return "?";
}

bool is_elementwise_unary(OpKind k) { return k >= OpKind::Neg && k <= OpKind::Convert; }
bool is_elementwise_binary(OpKind k) { return k >= OpKind::Add && k <= OpKind::Or; }
bool is_comparison(OpKind k) { return k >= OpKind::Lt && k <= OpKind::Ne; }

const char* reduce_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

namespace {

// take(table, indices, axis)'s shape: table's with dim `axis` replaced by indices'.
Shape gather_shape(const Shape& table, const Shape& indices, int axis) {
  Shape s(table.begin(), table.begin() + axis);
  s.insert(s.end(), indices.begin(), indices.end());
  s.insert(s.end(), table.begin() + axis + 1, table.end());
  return s;
}

bool is_transcendental(OpKind k) {
  return k == OpKind::Exp || k == OpKind::Exp2 || k == OpKind::Log || k == OpKind::Sqrt ||
         k == OpKind::Tanh || k == OpKind::Erf || k == OpKind::Sin || k == OpKind::Cos;
}

// Element counts equal: symbolically, or at the bound dims when floordivs hide it.
bool same_count(const Graph& g, const Shape& a, const Shape& b) {
  DimExpr pa = DimExpr::constant(1), pb = DimExpr::constant(1);
  for (auto& d : a) pa = pa * d;
  for (auto& d : b) pb = pb * d;
  if (pa == pb) return true;
  try {
    return pa.evaluate(g.bound_dims) == pb.evaluate(g.bound_dims);
  } catch (const UserError&) {
    return false;
  }
}

// The shape and dtype a node must have, given its operands; problems are appended.
void check_node(const Graph& g, ValueId id, const Node& n, std::vector<std::string>& problems) {
  auto fail = [&](const std::string& what) {
    problems.push_back("%" + std::to_string(id) + " (" + op_name(n.kind) + "): " + what);
  };
  for (ValueId op : n.operands) {
    if (op < 0 || op >= id) {
      fail("operand %" + std::to_string(op) + " does not precede it");
      return;
    }
  }
  auto opnd = [&](size_t i) -> const Node& { return g.nodes[static_cast<size_t>(n.operands[i])]; };
  auto expect_operands = [&](size_t count) {
    if (n.operands.size() != count) {
      fail("expects " + std::to_string(count) + " operands, has " +
           std::to_string(n.operands.size()));
      return false;
    }
    return true;
  };
  auto expect_shape = [&](const Shape& s) {
    if (n.shape != s) fail("shape " + shape_str(n.shape) + " should be " + shape_str(s));
  };
  auto expect_dtype = [&](DType t) {
    if (n.dtype != t)
      fail(std::string("dtype ") + dtype_name(n.dtype) + " should be " + dtype_name(t));
  };
  const int rank = static_cast<int>(n.shape.size());

  switch (n.kind) {
    case OpKind::Input:
      if (!expect_operands(0)) return;
      if (n.input_index < 0 || n.input_index >= static_cast<int>(g.params.size()))
        fail("input index out of range");
      break;
    case OpKind::Const:
      if (!expect_operands(0)) return;
      if (rank != 0) fail("a const is a scalar");
      if (!std::isfinite(n.const_value) && !is_float(n.dtype))
        fail("non-finite constant of an exact dtype");
      break;
    case OpKind::Iota:
      if (!expect_operands(0)) return;
      if (n.axis < 0 || n.axis >= rank) fail("iota axis out of range");
      if (n.dtype == DType::Bool) fail("iota of bool");
      break;
    case OpKind::Not:
      if (!expect_operands(1)) return;
      expect_shape(opnd(0).shape);
      expect_dtype(DType::Bool);
      if (opnd(0).dtype != DType::Bool) fail("not of a non-bool");
      break;
    case OpKind::Convert:
      if (!expect_operands(1)) return;
      expect_shape(opnd(0).shape);
      if (n.weak && (!is_float(n.dtype) || n.shape.size() != 0))
        fail("a weak convert makes a float scalar");
      break;
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Exp2:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Tanh:
    case OpKind::Erf:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Trunc:
    case OpKind::Rint:
    case OpKind::PowI:
      if (!expect_operands(1)) return;
      expect_shape(opnd(0).shape);
      expect_dtype(opnd(0).dtype);
      if (n.dtype == DType::Bool) fail("arithmetic on bool");
      if (is_transcendental(n.kind) && !is_float(n.dtype)) fail("transcendental of a non-float");
      if ((n.kind >= OpKind::Floor && n.kind <= OpKind::Rint) && !is_float(n.dtype))
        fail("rounding to an integer value of a non-float");
      if (n.kind == OpKind::PowI && n.exponent < 0 && !is_float(n.dtype))
        fail("negative power of an integer");
      break;
    case OpKind::Select:
      if (!expect_operands(3)) return;
      if (opnd(0).dtype != DType::Bool) fail("select condition is not bool");
      if (opnd(0).shape != opnd(1).shape || opnd(1).shape != opnd(2).shape)
        fail("select operand shapes differ");
      if (opnd(1).dtype != opnd(2).dtype) fail("select branch dtypes differ");
      expect_shape(opnd(1).shape);
      expect_dtype(opnd(1).dtype);
      break;
    case OpKind::Broadcast: {
      if (!expect_operands(1)) return;
      const Node& x = opnd(0);
      expect_dtype(x.dtype);
      if (x.shape.size() != n.shape.size()) {
        fail("broadcast changes rank");
        break;
      }
      for (size_t i = 0; i < x.shape.size(); ++i)
        if (x.shape[i] != n.shape[i] && x.shape[i] != DimExpr::constant(1))
          fail("broadcast dim " + std::to_string(i) + " " + x.shape[i].str() + " -> " +
               n.shape[i].str());
      break;
    }
    case OpKind::Reshape:
      if (!expect_operands(1)) return;
      expect_dtype(opnd(0).dtype);
      if (!same_count(g, opnd(0).shape, n.shape))
        fail("reshape " + shape_str(opnd(0).shape) + " -> " + shape_str(n.shape) +
             " changes the element count");
      break;
    case OpKind::Transpose: {
      if (!expect_operands(1)) return;
      const Node& x = opnd(0);
      expect_dtype(x.dtype);
      std::vector<int> sorted = n.axes;
      std::sort(sorted.begin(), sorted.end());
      bool perm_ok = sorted.size() == x.shape.size();
      for (size_t i = 0; perm_ok && i < sorted.size(); ++i)
        perm_ok = sorted[i] == static_cast<int>(i);
      if (!perm_ok) {
        fail("not a permutation");
        break;
      }
      Shape s;
      for (int a : n.axes) s.push_back(x.shape[static_cast<size_t>(a)]);
      expect_shape(s);
      break;
    }
    case OpKind::Slice: {
      if (!expect_operands(1)) return;
      const Node& x = opnd(0);
      expect_dtype(x.dtype);
      if (n.slices.size() != x.shape.size()) {
        fail("one slice per axis needed");
        break;
      }
      Shape s;
      for (auto& sl : n.slices) {
        if (sl.step < 1) fail("slice step < 1");
        s.push_back(sl.length());
      }
      expect_shape(s);
      break;
    }
    case OpKind::Concat: {
      if (n.operands.empty()) {
        fail("concat of nothing");
        break;
      }
      const Node& x = opnd(0);
      if (n.axis < 0 || n.axis >= static_cast<int>(x.shape.size())) {
        fail("concat axis out of range");
        break;
      }
      Shape s = x.shape;
      s[static_cast<size_t>(n.axis)] = DimExpr();
      for (size_t i = 0; i < n.operands.size(); ++i) {
        const Node& y = opnd(i);
        if (y.dtype != x.dtype) fail("concat dtypes differ");
        if (y.shape.size() != x.shape.size()) {
          fail("concat ranks differ");
          return;
        }
        for (size_t d = 0; d < y.shape.size(); ++d)
          if (static_cast<int>(d) != n.axis && y.shape[d] != x.shape[d])
            fail("concat dims differ off the axis");
        s[static_cast<size_t>(n.axis)] =
            s[static_cast<size_t>(n.axis)] + y.shape[static_cast<size_t>(n.axis)];
      }
      expect_shape(s);
      expect_dtype(x.dtype);
      break;
    }
    case OpKind::Gather: {
      if (!expect_operands(2)) return;
      const Node& table = opnd(0);
      const Node& idx = opnd(1);
      if (idx.dtype != DType::I32 && idx.dtype != DType::I64) fail("gather indices not integer");
      if (n.axis < 0 || n.axis >= static_cast<int>(table.shape.size())) {
        fail("gather axis out of range");
        break;
      }
      if (n.along) {
        bool same = idx.shape.size() == table.shape.size();
        for (size_t d = 0; same && d < idx.shape.size(); ++d)
          same = static_cast<int>(d) == n.axis || idx.shape[d] == table.shape[d];
        if (!same) fail("take_along_axis indices differ from the table off the axis");
        expect_shape(idx.shape);
      } else {
        expect_shape(gather_shape(table.shape, idx.shape, n.axis));
      }
      expect_dtype(table.dtype);
      break;
    }
    case OpKind::Reduce: {
      if (!expect_operands(1)) return;
      const Node& x = opnd(0);
      expect_dtype(x.dtype);
      if (x.dtype == DType::Bool) fail("reduce of bool");
      std::set<int> seen;
      for (size_t i = 0; i < n.axes.size(); ++i) {
        int a = n.axes[i];
        if (a < 0 || a >= static_cast<int>(x.shape.size())) {
          fail("reduce axis out of range");
          return;
        }
        if (i && n.axes[i - 1] >= a) fail("reduce axes not sorted and unique");
        seen.insert(a);
      }
      Shape s;
      for (size_t d = 0; d < x.shape.size(); ++d)
        if (!seen.count(static_cast<int>(d))) s.push_back(x.shape[d]);
      expect_shape(s);
      break;
    }
    case OpKind::Contract:
    case OpKind::ExpContract: {
      const bool weighted = n.kind == OpKind::ExpContract;
      if (weighted && n.operands.size() == 1) {
        if (!n.rhs_labels.empty()) fail("exp_contract without rhs has rhs labels");
      } else if (!expect_operands(2)) {
        return;
      }
      const Node& a = opnd(0);
      const Node& b = n.operands.size() == 2 ? opnd(1) : a;
      if (a.dtype != b.dtype) fail("contract dtypes differ");
      expect_dtype(a.dtype);
      if (a.dtype == DType::Bool) fail("contract of bool");
      if (weighted && !is_float(a.dtype)) fail("exp_contract of a non-float dtype");
      if (n.lhs_labels.size() != a.shape.size() ||
          (n.operands.size() == 2 && n.rhs_labels.size() != b.shape.size())) {
        fail("label count differs from operand rank");
        return;
      }
      if (weighted)
        for (int l : n.rhs_labels)
          if (std::count(n.out_labels.begin(), n.out_labels.end(), l) == 0 &&
              std::count(n.lhs_labels.begin(), n.lhs_labels.end(), l) == 0)
            fail("exp_contract sums label " + std::to_string(l) + ", which does not index lhs");
      std::map<int, DimExpr> size;
      auto bind = [&](const std::vector<int>& labels, const Shape& shape) {
        for (size_t i = 0; i < labels.size(); ++i) {
          auto [it, fresh] = size.emplace(labels[i], shape[i]);
          if (!fresh && it->second != shape[i])
            fail("label " + std::to_string(labels[i]) + " has two sizes");
        }
      };
      bind(n.lhs_labels, a.shape);
      if (n.operands.size() == 2) bind(n.rhs_labels, b.shape);
      Shape s;
      std::set<int> out_seen;
      for (int l : n.out_labels) {
        if (!size.count(l)) {
          fail("output label not in an operand");
          return;
        }
        if (!out_seen.insert(l).second) fail("output label repeated");
        s.push_back(size[l]);
      }
      expect_shape(s);
      break;
    }
    default: {  // binary elementwise
      OLLIE_CHECK(is_elementwise_binary(n.kind), "unhandled op kind in check_node");
      if (!expect_operands(2)) return;
      const Node& a = opnd(0);
      const Node& b = opnd(1);
      if (a.shape != b.shape)
        fail("operand shapes differ: " + shape_str(a.shape) + " vs " + shape_str(b.shape));
      if (a.dtype != b.dtype)
        fail(std::string("operand dtypes differ: ") + dtype_name(a.dtype) + " vs " +
             dtype_name(b.dtype));
      expect_shape(a.shape);
      if (is_comparison(n.kind) || n.kind == OpKind::And || n.kind == OpKind::Or) {
        expect_dtype(DType::Bool);
        if ((n.kind == OpKind::And || n.kind == OpKind::Or) && a.dtype != DType::Bool)
          fail("logical op on non-bool");
      } else {
        expect_dtype(a.dtype);
        if (a.dtype == DType::Bool) fail("arithmetic on bool");
        if (n.kind == OpKind::Pow && !is_float(a.dtype)) fail("pow of a non-float");
      }
      break;
    }
  }
  for (const auto& d : n.shape)
    for (const auto& s : d.symbols())
      if (!g.bound_dims.empty() && !g.bound_dims.count(s)) fail("dim '" + s + "' is not bound");
}

}  // namespace

std::vector<std::string> check_invariants(const Graph& g) {
  std::vector<std::string> problems;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    check_node(g, static_cast<ValueId>(i), g.nodes[i], problems);
  if (g.inputs.size() != g.params.size()) problems.push_back("one Input node per param needed");
  for (size_t i = 0; i < g.inputs.size() && i < g.params.size(); ++i) {
    ValueId id = g.inputs[i];
    if (id < 0 || id >= static_cast<ValueId>(g.nodes.size())) {
      problems.push_back("input id out of range");
      continue;
    }
    const Node& n = g.node(id);
    if (n.kind != OpKind::Input || n.input_index != static_cast<int>(i) ||
        n.shape != g.params[i].shape || n.dtype != g.params[i].dtype)
      problems.push_back("input " + std::to_string(i) + " does not match param " +
                         g.params[i].name);
  }
  if (g.outputs.size() != g.results.size())
    problems.push_back("one output value per result needed");
  for (size_t i = 0; i < g.outputs.size() && i < g.results.size(); ++i) {
    ValueId id = g.outputs[i];
    if (id < 0 || id >= static_cast<ValueId>(g.nodes.size())) {
      problems.push_back("output id out of range");
      continue;
    }
    const Node& n = g.node(id);
    if (n.shape != g.results[i].shape || n.dtype != g.results[i].dtype)
      problems.push_back("output " + std::to_string(i) + " does not match its result annotation");
  }
  for (const auto& d : g.dims)
    if (!g.bound_dims.count(d)) problems.push_back("dim '" + d + "' is not bound");
  return problems;
}

void verify(const Graph& g) {
  auto problems = check_invariants(g);
  if (problems.empty()) return;
  std::string msg = "malformed IR:";
  for (auto& p : problems) msg += "\n  " + p;
  throw InternalError(msg);
}

// ----------------------------------------------------------------------------
// Builder

namespace {

// The fields every node has; op-specific attributes are set by the caller.
Node make_node(OpKind kind, std::vector<ValueId> operands, Shape shape, DType dtype,
               SourceLoc loc) {
  Node n;
  n.kind = kind;
  n.operands = std::move(operands);
  n.shape = std::move(shape);
  n.dtype = dtype;
  n.loc = loc;
  return n;
}

}  // namespace

ValueId Builder::push(Node node) {
  ValueId id = static_cast<ValueId>(graph_.nodes.size());
  std::vector<std::string> problems;
  check_node(graph_, id, node, problems);
  if (!problems.empty()) {
    std::string msg = "building IR:";
    for (auto& p : problems) msg += "\n  " + p;
    throw InternalError(msg);
  }
  graph_.nodes.push_back(std::move(node));
  return id;
}

ValueId Builder::input(int index, const std::string& name, DType dtype, const Shape& shape,
                       SourceLoc loc) {
  Node n = make_node(OpKind::Input, {}, shape, dtype, loc);
  n.input_index = index;
  n.name = name;
  return push(std::move(n));
}

ValueId Builder::constant(double value, DType dtype, SourceLoc loc) {
  Node n = make_node(OpKind::Const, {}, {}, dtype, loc);
  n.const_value = value;
  return push(std::move(n));
}

ValueId Builder::dim_constant(const DimExpr& value, DType dtype, SourceLoc loc) {
  if (auto c = value.as_constant()) return constant(static_cast<double>(*c), dtype, loc);
  Node n = make_node(OpKind::Const, {}, {}, dtype, loc);
  n.const_dim = value;
  return push(std::move(n));
}

ValueId Builder::iota(const Shape& shape, int axis, DType dtype, SourceLoc loc) {
  Node n = make_node(OpKind::Iota, {}, shape, dtype, loc);
  n.axis = axis;
  return push(std::move(n));
}

ValueId Builder::unary(OpKind kind, ValueId x, SourceLoc loc) {
  OLLIE_CHECK(is_elementwise_unary(kind) && kind != OpKind::Convert && kind != OpKind::PowI,
              std::string("Builder::unary with ") + op_name(kind));
  DType t = kind == OpKind::Not ? DType::Bool : node(x).dtype;
  return push(make_node(kind, {x}, node(x).shape, t, loc));
}

ValueId Builder::powi(ValueId x, int64_t exponent, SourceLoc loc) {
  Node n = make_node(OpKind::PowI, {x}, node(x).shape, node(x).dtype, loc);
  n.exponent = exponent;
  return push(std::move(n));
}

ValueId Builder::convert(ValueId x, DType to, SourceLoc loc, bool weak) {
  Node n = make_node(OpKind::Convert, {x}, node(x).shape, to, loc);
  n.weak = weak;
  return push(std::move(n));
}

ValueId Builder::binary(OpKind kind, ValueId a, ValueId b, SourceLoc loc) {
  OLLIE_CHECK(is_elementwise_binary(kind), std::string("Builder::binary with ") + op_name(kind));
  DType t = (is_comparison(kind) || kind == OpKind::And || kind == OpKind::Or) ? DType::Bool
                                                                               : node(a).dtype;
  return push(make_node(kind, {a, b}, node(a).shape, t, loc));
}

ValueId Builder::select(ValueId cond, ValueId a, ValueId b, SourceLoc loc) {
  return push(make_node(OpKind::Select, {cond, a, b}, node(a).shape, node(a).dtype, loc));
}

ValueId Builder::broadcast(ValueId x, const Shape& shape, SourceLoc loc) {
  if (node(x).shape == shape) return x;
  return push(make_node(OpKind::Broadcast, {x}, shape, node(x).dtype, loc));
}

ValueId Builder::reshape(ValueId x, const Shape& shape, SourceLoc loc) {
  if (node(x).shape == shape) return x;
  return push(make_node(OpKind::Reshape, {x}, shape, node(x).dtype, loc));
}

ValueId Builder::transpose(ValueId x, const std::vector<int>& perm, SourceLoc loc) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  if (identity && perm.size() == node(x).shape.size()) return x;
  Shape shape;
  for (int a : perm) {
    OLLIE_CHECK(a >= 0 && a < static_cast<int>(node(x).shape.size()),
                "transpose axis out of range");
    shape.push_back(node(x).shape[static_cast<size_t>(a)]);
  }
  Node n = make_node(OpKind::Transpose, {x}, shape, node(x).dtype, loc);
  n.axes = perm;
  return push(std::move(n));
}

ValueId Builder::slice(ValueId x, const std::vector<SliceAxis>& slices, SourceLoc loc) {
  Shape shape;
  for (auto& s : slices) shape.push_back(s.length());
  Node n = make_node(OpKind::Slice, {x}, shape, node(x).dtype, loc);
  n.slices = slices;
  return push(std::move(n));
}

ValueId Builder::concat(const std::vector<ValueId>& xs, int axis, SourceLoc loc) {
  OLLIE_CHECK(!xs.empty(), "concat of nothing");
  if (xs.size() == 1) return xs[0];
  Shape shape = node(xs[0]).shape;
  OLLIE_CHECK(axis >= 0 && axis < static_cast<int>(shape.size()), "concat axis out of range");
  DimExpr total;
  for (ValueId v : xs) {
    OLLIE_CHECK(node(v).shape.size() == shape.size(), "concat ranks differ");
    total = total + node(v).shape[static_cast<size_t>(axis)];
  }
  shape[static_cast<size_t>(axis)] = total;
  Node n = make_node(OpKind::Concat, xs, shape, node(xs[0]).dtype, loc);
  n.axis = axis;
  return push(std::move(n));
}

ValueId Builder::gather(ValueId table, ValueId indices, int axis, SourceLoc loc) {
  const Shape& t = node(table).shape;
  OLLIE_CHECK(axis >= 0 && axis < static_cast<int>(t.size()), "gather axis out of range");
  Node n = make_node(OpKind::Gather, {table, indices}, gather_shape(t, node(indices).shape, axis),
                     node(table).dtype, loc);
  n.axis = axis;
  return push(std::move(n));
}

ValueId Builder::gather_along(ValueId table, ValueId indices, int axis, SourceLoc loc) {
  OLLIE_CHECK(axis >= 0 && axis < static_cast<int>(node(table).shape.size()),
              "gather axis out of range");
  Node n = make_node(OpKind::Gather, {table, indices}, node(indices).shape, node(table).dtype, loc);
  n.axis = axis;
  n.along = true;
  return push(std::move(n));
}

ValueId Builder::reduce(ReduceKind kind, ValueId x, std::vector<int> axes, SourceLoc loc) {
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const Shape& s = node(x).shape;
  Shape shape;
  for (size_t d = 0; d < s.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int>(d))) shape.push_back(s[d]);
  Node n = make_node(OpKind::Reduce, {x}, shape, node(x).dtype, loc);
  n.reduce = kind;
  n.axes = axes;
  return push(std::move(n));
}

ValueId Builder::contract(ValueId lhs, ValueId rhs, const std::vector<int>& lhs_labels,
                          const std::vector<int>& rhs_labels, const std::vector<int>& out_labels,
                          SourceLoc loc) {
  std::map<int, DimExpr> size;
  for (size_t i = 0; i < lhs_labels.size() && i < node(lhs).shape.size(); ++i)
    size[lhs_labels[i]] = node(lhs).shape[i];
  for (size_t i = 0; i < rhs_labels.size() && i < node(rhs).shape.size(); ++i)
    size[rhs_labels[i]] = node(rhs).shape[i];
  Shape shape;
  for (int l : out_labels) shape.push_back(size[l]);
  Node n = make_node(OpKind::Contract, {lhs, rhs}, shape, node(lhs).dtype, loc);
  n.lhs_labels = lhs_labels;
  n.rhs_labels = rhs_labels;
  n.out_labels = out_labels;
  return push(std::move(n));
}

ValueId Builder::exp_contract(ValueId lhs, ValueId rhs, const std::vector<int>& lhs_labels,
                              const std::vector<int>& rhs_labels,
                              const std::vector<int>& out_labels, bool base2, SourceLoc loc) {
  std::map<int, DimExpr> size;
  for (size_t i = 0; i < lhs_labels.size() && i < node(lhs).shape.size(); ++i)
    size[lhs_labels[i]] = node(lhs).shape[i];
  if (rhs >= 0)
    for (size_t i = 0; i < rhs_labels.size() && i < node(rhs).shape.size(); ++i)
      size[rhs_labels[i]] = node(rhs).shape[i];
  Shape shape;
  for (int l : out_labels) shape.push_back(size[l]);
  std::vector<ValueId> operands{lhs};
  if (rhs >= 0) operands.push_back(rhs);
  Node n = make_node(OpKind::ExpContract, operands, shape, node(lhs).dtype, loc);
  n.lhs_labels = lhs_labels;
  n.rhs_labels = rhs >= 0 ? rhs_labels : std::vector<int>{};
  n.out_labels = out_labels;
  n.base2 = base2;
  return push(std::move(n));
}

}  // namespace ollie::ir
