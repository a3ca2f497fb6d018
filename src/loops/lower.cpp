// Lowering of the tensor IR to loop nests: one nest per materialized op, with layout
// ops, Convert, Const and Iota folded into index arithmetic and loads of their users.
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "loops/loops.h"

namespace ollie::loops {
namespace {

using ir::DimExpr;
using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

const std::set<std::string>& cpp_keywords() {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      "int32_t", "int64_t", "ollie_kernel", "ollie_entry", "buffers", "std", "dims"};
  return words;
}

// Whether a node gets a buffer of its own (the rest are folded into their users' loads).
bool materialized(OpKind k) {
  switch (k) {
    case OpKind::Input: case OpKind::Const: case OpKind::Iota: case OpKind::Convert:
    case OpKind::Broadcast: case OpKind::Reshape: case OpKind::Transpose: case OpKind::Slice:
      return false;
    default: return true;
  }
}

// The library function computing an op, which has the op's own name (exp, log, ...).
const char* call_name(OpKind k) {
  switch (k) {
    case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Tanh:
    case OpKind::Erf: case OpKind::Sin: case OpKind::Cos: case OpKind::Pow:
      return ir::op_name(k);
    default: return nullptr;
  }
}

bool is_elementwise(OpKind k) {
  return ir::is_elementwise_unary(k) || ir::is_elementwise_binary(k) || k == OpKind::Select;
}

// compute_inline: the elementwise values that are cheaper recomputed inside their only
// consumer's loop than stored and reloaded. A value qualifies when, following it through
// index-only layout ops, it is read exactly once per element: by one elementwise, Reduce
// or Concat nest. A Broadcast or Contract consumer would recompute it many times, and an
// output must be stored anyway, so those keep their buffer. (Schedules will later make
// this a per-producer choice; this is the default.)
std::set<ValueId> compute_inline(const ir::Graph& g) {
  std::vector<std::vector<ValueId>> users(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].operands) users[static_cast<size_t>(o)].push_back(static_cast<ValueId>(i));
  std::vector<int> output_refs(g.nodes.size(), 0);
  for (ValueId o : g.outputs) ++output_refs[static_cast<size_t>(o)];
  const int kMany = 1 << 20;
  // Element reads of `v` per element by materialized nests (kMany: more than once).
  std::function<int(ValueId)> reads = [&](ValueId v) {
    int n = output_refs[static_cast<size_t>(v)];
    for (ValueId u : users[static_cast<size_t>(v)]) {
      const OpKind k = g.node(u).kind;
      if (k == OpKind::Reshape || k == OpKind::Transpose || k == OpKind::Slice || k == OpKind::Convert)
        n += reads(u);
      else if (is_elementwise(k) || k == OpKind::Reduce || k == OpKind::Concat)
        n += 1;
      else
        n += kMany;
      if (n > 1) return kMany;
    }
    return n;
  };
  std::set<ValueId> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const auto v = static_cast<ValueId>(i);
    if (is_elementwise(g.node(v).kind) && g.node(v).kind != OpKind::Convert && output_refs[i] == 0 && reads(v) == 1)
      out.insert(v);
  }
  return out;
}

Expr zero(DType t) { return ir::is_float(t) ? make_float(0, t) : make_int(0, t); }

struct Loop {
  DimExpr extent;
  bool reduction;
};

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, bool inline_elementwise) : g_(g), inline_elementwise_(inline_elementwise) {}

  Kernel run() {
    ir::verify(g_);
    k_.entry = g_.entry;
    k_.dims = g_.dims;
    reserved_ = cpp_keywords();
    for (size_t i = 0; i < g_.results.size(); ++i) reserved_.insert("out" + std::to_string(i));
    for (size_t i = 0; i < g_.params.size(); ++i) {
      std::string name = g_.params[i].name.empty() ? "in" + std::to_string(i) : g_.params[i].name;
      while (reserved_.count(name) || name.rfind("__", 0) == 0) name += "_";
      reserved_.insert(name);
      k_.buffers.push_back({name, BufferRole::Input, g_.params[i].dtype, g_.params[i].shape});
      buf_[g_.inputs[i]] = name;
    }
    for (size_t i = 0; i < g_.results.size(); ++i) {
      const std::string name = "out" + std::to_string(i);
      k_.buffers.push_back({name, BufferRole::Output, g_.results[i].dtype, g_.results[i].shape});
      const ValueId v = g_.outputs[i];
      if (materialized(g_.node(v).kind) && !buf_.count(v)) buf_[v] = name;
    }
    for (const auto& d : g_.dims) {
      std::string name = d;
      while (reserved_.count(name)) name = "dim_" + name;
      reserved_.insert(name);
      k_.dim_names.push_back(name);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) reserved_.insert("t" + std::to_string(i));
    if (inline_elementwise_) inlined_ = compute_inline(g_);

    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto v = static_cast<ValueId>(i);
      if (!materialized(g_.node(v).kind) || inlined_.count(v)) continue;
      if (!buf_.count(v)) {
        const std::string name = "t" + std::to_string(i);
        buf_[v] = name;
        locals_.push_back({name, BufferRole::Local, g_.node(v).dtype, g_.node(v).shape});
      }
      lower_node(v);
    }
    for (size_t i = 0; i < g_.results.size(); ++i) {
      const ValueId v = g_.outputs[i];
      const std::string name = "out" + std::to_string(i);
      if (buf_.at_or(v) == name) continue;
      emit(nest(g_.node(v).shape, true, [&](const std::vector<Expr>& idx) {
        return make_store(name, flatten(idx, g_.node(v).shape), access(v, idx));
      }));
    }
    Stmt body = make_block(stmts_);
    for (auto it = locals_.rbegin(); it != locals_.rend(); ++it)
      body = make_allocate(it->name, it->dtype, size_of(it->shape), body);
    k_.body = body;
    return k_;
  }

 private:
  struct BufMap : std::map<ValueId, std::string> {
    std::string at_or(ValueId v) const {
      auto it = find(v);
      return it == end() ? std::string() : it->second;
    }
  };

  void emit(Stmt s) { stmts_.push_back(std::move(s)); }

  static Expr size_of(const ir::Shape& shape) {
    DimExpr n = DimExpr::constant(1);
    for (const auto& d : shape) n = n * d;
    return make_dim(n);
  }

  // Row-major flat index of `idx` in `shape`, Horner form: ((i0*d1 + i1)*d2 + i2).
  static Expr flatten(const std::vector<Expr>& idx, const ir::Shape& shape) {
    Expr flat = make_int(0);
    for (size_t i = 0; i < shape.size(); ++i)
      flat = make_binary(OpKind::Add, make_binary(OpKind::Mul, flat, make_dim(shape[i])), idx[i]);
    return flat;
  }

  static std::vector<Expr> unflatten(const Expr& flat, const ir::Shape& shape) {
    std::vector<Expr> idx(shape.size());
    DimExpr stride = DimExpr::constant(1);
    for (size_t i = shape.size(); i-- > 0;) {
      Expr q = make_binary(OpKind::FloorDiv, flat, make_dim(stride));
      idx[i] = i == 0 ? q : make_binary(OpKind::Mod, q, make_dim(shape[i]));
      stride = stride * shape[i];
    }
    return idx;
  }

  std::string var_name(const DimExpr& extent, std::set<std::string>& taken) {
    std::string base = "i";
    auto syms = extent.symbols();
    if (syms.size() == 1 && extent == DimExpr::symbol(syms[0])) {
      base.clear();
      for (char c : syms[0]) base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string name = base;
    for (int n = 1; reserved_.count(name) || taken.count(name) || k_dim_name_clash(name); ++n)
      name = base + std::to_string(n);
    taken.insert(name);
    return name;
  }
  bool k_dim_name_clash(const std::string& name) const {
    for (const auto& d : k_.dim_names)
      if (d == name) return true;
    return false;
  }

  // A loop nest over `loops` (outermost first). Outermost loop Parallel when it walks a
  // symbolic dim and carries no reduction; innermost Vectorized when the nest is a pure
  // elementwise one (`elementwise`).
  Stmt nest(const std::vector<Loop>& loops, bool elementwise,
            const std::function<Stmt(const std::vector<Expr>&)>& body) {
    std::set<std::string> taken;
    std::vector<std::string> names;
    std::vector<Expr> vars;
    for (const auto& l : loops) {
      names.push_back(var_name(l.extent, taken));
      vars.push_back(make_var(names.back()));
    }
    Stmt s = body(vars);
    for (size_t i = loops.size(); i-- > 0;) {
      ForKind kind = ForKind::Serial;
      if (i == 0 && !loops[i].reduction && !loops[i].extent.is_constant()) kind = ForKind::Parallel;
      else if (i + 1 == loops.size() && elementwise) kind = ForKind::Vectorized;
      s = make_for(names[i], make_int(0), make_dim(loops[i].extent), kind, s, loops[i].reduction);
    }
    return s;
  }
  Stmt nest(const ir::Shape& shape, bool elementwise, const std::function<Stmt(const std::vector<Expr>&)>& body) {
    std::vector<Loop> loops;
    for (const auto& d : shape) loops.push_back({d, false});
    return nest(loops, elementwise, body);
  }

  // The element of value `v` at flat index `flat` (row-major in v's shape).
  Expr access_flat(ValueId v, const Expr& flat) {
    const Node& n = g_.node(v);
    if (auto b = buf_.at_or(v); !b.empty()) return make_load(b, n.dtype, flat);
    if (n.kind == OpKind::Reshape) return access_flat(n.operands[0], flat);
    return access(v, unflatten(flat, n.shape));
  }

  // The element of value `v` at multi-index `idx`.
  Expr access(ValueId v, const std::vector<Expr>& idx) {
    const Node& n = g_.node(v);
    if (auto b = buf_.at_or(v); !b.empty()) return make_load(b, n.dtype, flatten(idx, n.shape));
    switch (n.kind) {
      case OpKind::Const:
        if (n.const_dim) return make_cast(n.dtype, make_dim(*n.const_dim));
        if (ir::is_float(n.dtype)) return make_float(n.const_value, n.dtype);
        return make_int(static_cast<int64_t>(n.const_value), n.dtype);
      case OpKind::Iota: return make_cast(n.dtype, idx[static_cast<size_t>(n.axis)]);
      case OpKind::Convert: return make_cast(n.dtype, access(n.operands[0], idx));
      case OpKind::Broadcast: {
        const auto& from = g_.node(n.operands[0]).shape;
        std::vector<Expr> sub(idx.size());
        for (size_t i = 0; i < idx.size(); ++i)
          sub[i] = from[i] == DimExpr::constant(1) ? make_int(0) : idx[i];
        return access(n.operands[0], sub);
      }
      case OpKind::Reshape: return access_flat(n.operands[0], flatten(idx, n.shape));
      case OpKind::Transpose: {
        std::vector<Expr> sub(idx.size());
        for (size_t i = 0; i < idx.size(); ++i) sub[static_cast<size_t>(n.axes[i])] = idx[i];
        return access(n.operands[0], sub);
      }
      case OpKind::Slice: {
        std::vector<Expr> sub(idx.size());
        for (size_t i = 0; i < idx.size(); ++i)
          sub[i] = make_binary(OpKind::Add, make_dim(n.slices[i].start),
                               make_binary(OpKind::Mul, idx[i], make_int(n.slices[i].step)));
        return access(n.operands[0], sub);
      }
      default:
        if (inlined_.count(v)) return elementwise(v, idx);
        throw InternalError(std::string("loops: ") + ir::op_name(n.kind) + " was not materialized");
    }
  }

  // The elementwise value of `v` at `idx`, from its operands' elements.
  Expr elementwise(ValueId v, const std::vector<Expr>& idx) {
    const Node& n = g_.node(v);
    std::vector<Expr> a;
    for (ValueId o : n.operands) a.push_back(access(o, idx));
    if (n.kind == OpKind::PowI) return make_powi(a[0], n.exponent);
    if (n.kind == OpKind::Select) return make_select(a[0], a[1], a[2]);
    if (const char* fn = call_name(n.kind)) return make_call(fn, a);
    if (a.size() == 1) return make_unary(n.kind, a[0]);
    return make_binary(n.kind, a[0], a[1]);
  }

  void lower_node(ValueId v) {
    const Node& n = g_.node(v);
    const std::string& out = buf_.at(v);
    switch (n.kind) {
      case OpKind::Reduce: return lower_reduce(v, out);
      case OpKind::Contract: return lower_contract(v, out);
      case OpKind::Concat: {
        DimExpr offset;
        for (ValueId o : n.operands) {
          const auto& shape = g_.node(o).shape;
          emit(nest(shape, true, [&](const std::vector<Expr>& idx) {
            std::vector<Expr> at = idx;
            auto ax = static_cast<size_t>(n.axis);
            at[ax] = make_binary(OpKind::Add, make_dim(offset), idx[ax]);
            return make_store(out, flatten(at, n.shape), access(o, idx));
          }));
          offset = offset + shape[static_cast<size_t>(n.axis)];
        }
        return;
      }
      default:
        emit(nest(n.shape, true, [&](const std::vector<Expr>& idx) {
          return make_store(out, flatten(idx, n.shape), elementwise(v, idx));
        }));
    }
  }

  Expr reduce_init(ir::ReduceKind kind, DType t) {
    if (kind == ir::ReduceKind::Sum) return zero(t);
    const bool is_max = kind == ir::ReduceKind::Max;
    const double inf = std::numeric_limits<double>::infinity();
    switch (t) {
      case DType::F32: case DType::F64: return make_float(is_max ? -inf : inf, t);
      case DType::I32:
        return make_int(is_max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max(), t);
      case DType::I64:
        return make_int(is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max(), t);
      case DType::Bool: return make_int(is_max ? 0 : 1, t);
    }
    throw InternalError("loops: bad dtype");
  }

  void lower_reduce(ValueId v, const std::string& out) {
    const Node& n = g_.node(v);
    const ValueId src = n.operands[0];
    const auto& in_shape = g_.node(src).shape;
    emit(nest(n.shape, true, [&](const std::vector<Expr>& idx) {
      return make_store(out, flatten(idx, n.shape), reduce_init(n.reduce, n.dtype));
    }));
    // Kept axes outside (parallel-safe), reduced axes inside.
    std::vector<Loop> loops;
    std::vector<size_t> order;
    std::set<int> red(n.axes.begin(), n.axes.end());
    for (size_t i = 0; i < in_shape.size(); ++i)
      if (!red.count(static_cast<int>(i))) { loops.push_back({in_shape[i], false}); order.push_back(i); }
    for (size_t i = 0; i < in_shape.size(); ++i)
      if (red.count(static_cast<int>(i))) { loops.push_back({in_shape[i], true}); order.push_back(i); }
    const OpKind combine = n.reduce == ir::ReduceKind::Sum ? OpKind::Add
                           : n.reduce == ir::ReduceKind::Max ? OpKind::Max : OpKind::Min;
    emit(nest(loops, false, [&](const std::vector<Expr>& vars) {
      std::vector<Expr> in_idx(in_shape.size()), out_idx;
      for (size_t j = 0; j < order.size(); ++j) in_idx[order[j]] = vars[j];
      for (size_t i = 0; i < in_shape.size(); ++i)
        if (!red.count(static_cast<int>(i))) out_idx.push_back(in_idx[i]);
      Expr at = flatten(out_idx, n.shape);
      return make_store(out, at, make_binary(combine, make_load(out, n.dtype, at), access(src, in_idx)));
    }));
  }

  void lower_contract(ValueId v, const std::string& out) {
    const Node& n = g_.node(v);
    const ValueId lhs = n.operands[0], rhs = n.operands[1];
    std::map<int, DimExpr> extent;
    std::vector<int> summed;
    auto note = [&](const std::vector<int>& labels, const ir::Shape& shape) {
      for (size_t i = 0; i < labels.size(); ++i) {
        if (extent.count(labels[i])) continue;
        extent[labels[i]] = shape[i];
        bool in_out = false;
        for (int o : n.out_labels) in_out = in_out || o == labels[i];
        if (!in_out) summed.push_back(labels[i]);
      }
    };
    note(n.lhs_labels, g_.node(lhs).shape);
    note(n.rhs_labels, g_.node(rhs).shape);
    emit(nest(n.shape, true, [&](const std::vector<Expr>& idx) {
      return make_store(out, flatten(idx, n.shape), zero(n.dtype));
    }));
    std::vector<Loop> loops;
    std::vector<int> labels;
    for (size_t i = 0; i < n.out_labels.size(); ++i) { loops.push_back({n.shape[i], false}); labels.push_back(n.out_labels[i]); }
    for (int l : summed) { loops.push_back({extent.at(l), true}); labels.push_back(l); }
    emit(nest(loops, false, [&](const std::vector<Expr>& vars) {
      std::map<int, Expr> var_of;
      for (size_t j = 0; j < labels.size(); ++j) var_of[labels[j]] = vars[j];
      auto pick = [&](const std::vector<int>& ls) {
        std::vector<Expr> idx;
        for (int l : ls) idx.push_back(var_of.at(l));
        return idx;
      };
      Expr at = flatten(pick(n.out_labels), n.shape);
      Expr prod = make_binary(OpKind::Mul, access(lhs, pick(n.lhs_labels)), access(rhs, pick(n.rhs_labels)));
      return make_store(out, at, make_binary(OpKind::Add, make_load(out, n.dtype, at), prod));
    }));
  }

  const ir::Graph& g_;
  bool inline_elementwise_;
  std::set<ValueId> inlined_;
  Kernel k_;
  BufMap buf_;
  std::vector<Buffer> locals_;
  std::vector<Stmt> stmts_;
  std::set<std::string> reserved_;
};

}  // namespace

Kernel lower(const ir::Graph& graph, const LowerOptions& options) {
  return Lowerer(graph, options.inline_elementwise).run();
}

std::vector<std::string> abi_param_names(const ir::Graph& graph) {
  Kernel k = Lowerer(graph, false).run();
  std::vector<std::string> names;
  for (const auto& b : k.buffers)
    if (b.role == BufferRole::Input) names.push_back(b.name);
  return names;
}

}  // namespace ollie::loops
