// Lowering of the tensor IR to stages: one perfect loop nest per materialized op, with
// layout ops, gathers, Convert, Const and Iota folded into index arithmetic and loads of
// their users (a gather's row index is itself a load: table[wrap(ids[t]), d]).
#include <array>
#include <cctype>
#include <optional>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "loops/stages.h"

namespace ollie::loops {
namespace {

using ir::DimExpr;
using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::ValueId;

const std::set<std::string>& cpp_keywords() {
  static const std::set<std::string> words = {"alignas",       "alignof",      "and",
                                              "and_eq",        "asm",          "auto",
                                              "bitand",        "bitor",        "bool",
                                              "break",         "case",         "catch",
                                              "char",          "char8_t",      "char16_t",
                                              "char32_t",      "class",        "compl",
                                              "concept",       "const",        "consteval",
                                              "constexpr",     "constinit",    "const_cast",
                                              "continue",      "co_await",     "co_return",
                                              "co_yield",      "decltype",     "default",
                                              "delete",        "do",           "double",
                                              "dynamic_cast",  "else",         "enum",
                                              "explicit",      "export",       "extern",
                                              "false",         "float",        "for",
                                              "friend",        "goto",         "if",
                                              "inline",        "int",          "long",
                                              "mutable",       "namespace",    "new",
                                              "noexcept",      "not",          "not_eq",
                                              "nullptr",       "operator",     "or",
                                              "or_eq",         "private",      "protected",
                                              "public",        "register",     "reinterpret_cast",
                                              "requires",      "return",       "short",
                                              "signed",        "sizeof",       "static",
                                              "static_assert", "static_cast",  "struct",
                                              "switch",        "template",     "this",
                                              "thread_local",  "throw",        "true",
                                              "try",           "typedef",      "typeid",
                                              "typename",      "union",        "unsigned",
                                              "using",         "virtual",      "void",
                                              "volatile",      "wchar_t",      "while",
                                              "xor",           "xor_eq",       "int32_t",
                                              "int64_t",       "ollie_kernel", "ollie_entry",
                                              "buffers",       "std",          "dims"};
  return words;
}

// Whether a node gets a buffer of its own (the rest are folded into their users' loads).
bool materialized(OpKind k) {
  switch (k) {
    case OpKind::Input:
    case OpKind::Const:
    case OpKind::Iota:
    case OpKind::Convert:
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Gather: return false;
    default: return true;
  }
}

// The library function computing an op, which has the op's own name (exp, log, ...).
const char* call_name(OpKind k) {
  switch (k) {
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
    case OpKind::Pow: return ir::op_name(k);
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
std::set<ValueId> compute_inline_set(const ir::Graph& g) {
  std::vector<std::vector<ValueId>> users(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].operands)
      users[static_cast<size_t>(o)].push_back(static_cast<ValueId>(i));
  std::vector<int> output_refs(g.nodes.size(), 0);
  for (ValueId o : g.outputs) ++output_refs[static_cast<size_t>(o)];
  const int kMany = 1 << 20;
  // Element reads of `v` per element by materialized nests (kMany: more than once).
  std::function<int(ValueId)> reads = [&](ValueId v) {
    int n = output_refs[static_cast<size_t>(v)];
    for (ValueId u : users[static_cast<size_t>(v)]) {
      const OpKind k = g.node(u).kind;
      if (k == OpKind::Reshape || k == OpKind::Transpose || k == OpKind::Slice ||
          k == OpKind::Convert)
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
    if (is_elementwise(g.node(v).kind) && g.node(v).kind != OpKind::Convert &&
        output_refs[i] == 0 && reads(v) == 1)
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
  Lowerer(const ir::Graph& g, std::set<ValueId> inlined) : g_(g), inlined_(std::move(inlined)) {}

  Stages run() {
    ir::verify(g_);
    Kernel& k = st_.kernel;
    k.entry = g_.entry;
    k.dims = g_.dims;
    st_.reserved = cpp_keywords();
    for (size_t i = 0; i < g_.results.size(); ++i) st_.reserved.insert("out" + std::to_string(i));
    for (size_t i = 0; i < g_.params.size(); ++i) {
      std::string name = g_.params[i].name.empty() ? "in" + std::to_string(i) : g_.params[i].name;
      while (st_.reserved.count(name) || name.rfind("__", 0) == 0) name += "_";
      st_.reserved.insert(name);
      k.buffers.push_back({name, BufferRole::Input, g_.params[i].dtype, g_.params[i].shape});
      buf_[g_.inputs[i]] = name;
    }
    for (size_t i = 0; i < g_.results.size(); ++i) {
      const std::string name = "out" + std::to_string(i);
      k.buffers.push_back({name, BufferRole::Output, g_.results[i].dtype, g_.results[i].shape});
      const ValueId v = g_.outputs[i];
      if (materialized(g_.node(v).kind) && !buf_.count(v)) buf_[v] = name;
    }
    for (const auto& d : g_.dims) {
      std::string name = d;
      while (st_.reserved.count(name)) name = "dim_" + name;
      st_.reserved.insert(name);
      k.dim_names.push_back(name);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) st_.reserved.insert("t" + std::to_string(i));

    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const auto v = static_cast<ValueId>(i);
      if (!materialized(g_.node(v).kind) || inlined_.count(v)) continue;
      if (!buf_.count(v)) {
        const std::string name = "t" + std::to_string(i);
        buf_[v] = name;
        st_.locals.push_back({name, BufferRole::Local, g_.node(v).dtype, g_.node(v).shape});
      }
      lower_node(v);
    }
    for (size_t i = 0; i < g_.results.size(); ++i) {
      const ValueId v = g_.outputs[i];
      const std::string name = "out" + std::to_string(i);
      if (buf_.at_or(v) == name) continue;
      const Node& n = g_.node(v);
      Stage& s = new_stage(name, name, n.dtype, n.shape, loops_of(n.shape), "copy");
      s.store_index = vars_of(s);
      s.value = access(v, s.store_index);
    }
    return std::move(st_);
  }

 private:
  struct BufMap : std::map<ValueId, std::string> {
    std::string at_or(ValueId v) const {
      auto it = find(v);
      return it == end() ? std::string() : it->second;
    }
  };

  static std::vector<Loop> loops_of(const ir::Shape& shape) {
    std::vector<Loop> loops;
    for (const auto& d : shape) loops.push_back({d, false});
    return loops;
  }
  static std::vector<Expr> vars_of(const Stage& s) {
    std::vector<Expr> vars;
    for (const auto& v : s.vars) vars.push_back(make_var(v));
    return vars;
  }

  // The row-major multi-index of `flat` in `shape` (non-negative: C division suffices).
  static std::vector<Expr> unflatten(const Expr& flat, const ir::Shape& shape) {
    std::vector<Expr> idx(shape.size());
    DimExpr stride = DimExpr::constant(1);
    for (size_t i = shape.size(); i-- > 0;) {
      Expr q = make_binary(OpKind::Div, flat, make_dim(stride));
      idx[i] = i == 0 ? q
                      : make_binary(OpKind::Sub, q,
                                    make_binary(OpKind::Mul,
                                                make_binary(OpKind::Div, q, make_dim(shape[i])),
                                                make_dim(shape[i])));
      stride = stride * shape[i];
    }
    return idx;
  }

  // Whether `a` divides `b` for every value of the dims. exact_div alone does not say so:
  // it floors an inexact coefficient (N / (64*N) is 0), which made a split of one axis,
  // [64*(N//64)] -> [(N//64), 64], look like a merge with the next dim and lowered it
  // through flat-index divisions.
  static bool divides(const DimExpr& a, const DimExpr& b) {
    const std::optional<DimExpr> q = b.exact_div(a);
    return q && *q * a == b;
  }

  // Groups of consecutive dims with equal products in `from` and `to` (a reshape merges
  // or splits within groups), as [begin, end) pairs per side; empty when none is found.
  static std::vector<std::array<size_t, 4>> reshape_groups(const ir::Shape& from,
                                                           const ir::Shape& to) {
    std::vector<std::array<size_t, 4>> groups;
    size_t i = 0, j = 0;
    while (i < from.size() && j < to.size()) {
      size_t i1 = i + 1, j1 = j + 1;
      DimExpr a = from[i], b = to[j];
      while (a != b) {
        if (j1 < to.size() && !divides(a, b) && divides(b, a)) {
          b = b * to[j1++];
        } else if (i1 < from.size() && divides(a, b)) {
          a = a * from[i1++];
        } else {
          return {};
        }
      }
      groups.push_back({i, i1, j, j1});
      i = i1;
      j = j1;
    }
    if (i != from.size() || j != to.size()) return {};
    return groups;
  }

  std::string var_name(const DimExpr& extent, std::set<std::string>& taken) {
    std::string base = "i";
    auto syms = extent.symbols();
    if (syms.size() == 1 && extent == DimExpr::symbol(syms[0])) {
      base.clear();
      for (char c : syms[0]) base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string name = base;
    for (int n = 1; st_.reserved.count(name) || taken.count(name) || dim_name_clash(name); ++n)
      name = base + std::to_string(n);
    taken.insert(name);
    return name;
  }
  bool dim_name_clash(const std::string& name) const {
    for (const auto& d : st_.kernel.dim_names)
      if (d == name) return true;
    return false;
  }

  // A new stage writing `buffer` with one loop per `loops` entry (outermost first), each
  // walking its own variable; the caller fills in the store.
  Stage& new_stage(const std::string& name, const std::string& buffer, DType dtype,
                   const ir::Shape& shape, const std::vector<Loop>& loops,
                   const std::string& what) {
    Stage s;
    s.name = name;
    s.buffer = buffer;
    s.dtype = dtype;
    s.buffer_shape = shape;
    s.what = what;
    std::set<std::string> taken;
    for (const auto& l : loops) {
      const std::string v = var_name(l.extent, taken);
      s.vars.push_back(v);
      s.loops.push_back({v, make_dim(l.extent), l.extent, l.reduction, ForKind::Serial});
      s.subst[v] = make_var(v);
    }
    st_.stages.push_back(std::move(s));
    return st_.stages.back();
  }

  Expr load(const std::string& b, DType t, const std::vector<Expr>& idx, const ir::Shape& shape) {
    return make_load(b, t, flatten(idx, shape), idx);
  }

  // The element of value `v` at flat index `flat` (row-major in v's shape).
  Expr access_flat(ValueId v, const Expr& flat) {
    const Node& n = g_.node(v);
    if (auto b = buf_.at_or(v); !b.empty())
      return make_load(b, n.dtype, flat, unflatten(flat, n.shape));
    if (n.kind == OpKind::Reshape) return access_flat(n.operands[0], flat);
    return access(v, unflatten(flat, n.shape));
  }

  // The element of value `v` at multi-index `idx`.
  Expr access(ValueId v, const std::vector<Expr>& idx) {
    const Node& n = g_.node(v);
    if (auto b = buf_.at_or(v); !b.empty()) return load(b, n.dtype, idx, n.shape);
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
      case OpKind::Reshape: {
        // Adding or removing unit dims (keepdims, x[:, None]) keeps each index as it is.
        const auto& from = g_.node(n.operands[0]).shape;
        const DimExpr one = DimExpr::constant(1);
        std::vector<size_t> kept_to, kept_from;
        for (size_t i = 0; i < n.shape.size(); ++i)
          if (n.shape[i] != one) kept_to.push_back(i);
        for (size_t i = 0; i < from.size(); ++i)
          if (from[i] != one) kept_from.push_back(i);
        bool same = kept_to.size() == kept_from.size();
        for (size_t i = 0; same && i < kept_to.size(); ++i)
          same = n.shape[kept_to[i]] == from[kept_from[i]];
        if (!same) {
          // Merging or splitting groups of dims: each group maps on its own.
          const auto groups = reshape_groups(from, n.shape);
          if (groups.empty()) return access_flat(n.operands[0], flatten(idx, n.shape));
          std::vector<Expr> sub;
          for (const auto& [i0, i1, j0, j1] : groups) {
            const ir::Shape to_part(n.shape.begin() + static_cast<long>(j0),
                                    n.shape.begin() + static_cast<long>(j1));
            const ir::Shape from_part(from.begin() + static_cast<long>(i0),
                                      from.begin() + static_cast<long>(i1));
            const std::vector<Expr> part(idx.begin() + static_cast<long>(j0),
                                         idx.begin() + static_cast<long>(j1));
            for (const auto& e : unflatten(flatten(part, to_part), from_part)) sub.push_back(e);
          }
          // A buffer is read at the reshaped flat index (the same element, linear in the
          // loops), with the source's multi-index kept for dependence analysis.
          const ValueId src = n.operands[0];
          if (auto b = buf_.at_or(src); !b.empty())
            return make_load(b, g_.node(src).dtype, flatten(idx, n.shape), sub);
          return access(src, sub);
        }
        std::vector<Expr> sub(from.size(), make_int(0));
        for (size_t i = 0; i < kept_to.size(); ++i) sub[kept_from[i]] = idx[kept_to[i]];
        return access(n.operands[0], sub);
      }
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
      case OpKind::Gather: return access(n.operands[0], gather_index(n, idx));
      default:
        if (inlined_.count(v)) return elementwise(v, idx);
        throw InternalError(std::string("loops: ") + ir::op_name(n.kind) + " was not materialized");
    }
  }

  // The table's multi-index that gather `n` reads at its own `idx`: the index array's
  // element, wrapped as numpy wraps a negative index (i + V for i < 0), at the gathered axis.
  std::vector<Expr> gather_index(const Node& n, const std::vector<Expr>& idx) {
    const auto axis = static_cast<size_t>(n.axis);
    const size_t rank = n.along ? 1 : g_.node(n.operands[1]).shape.size();
    const DimExpr rows = g_.node(n.operands[0]).shape[axis];
    const std::vector<Expr> at =
        n.along ? idx
                : std::vector<Expr>(idx.begin() + static_cast<long>(axis),
                                    idx.begin() + static_cast<long>(axis + rank));
    const Expr i = make_cast(DType::I64, access(n.operands[1], at));
    const Expr row = make_select(make_binary(OpKind::Lt, i, make_int(0)),
                                 make_binary(OpKind::Add, i, make_dim(rows)), i);
    std::vector<Expr> sub(idx.begin(), idx.begin() + static_cast<long>(axis));
    sub.push_back(row);
    sub.insert(sub.end(), idx.begin() + static_cast<long>(axis + rank), idx.end());
    return sub;
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
    const std::string out = buf_.at(v);
    switch (n.kind) {
      case OpKind::Reduce: return lower_reduce(v, out);
      case OpKind::Contract:
      case OpKind::ExpContract: return lower_contract(v, out);
      case OpKind::Concat: {
        DimExpr offset;
        for (size_t part = 0; part < n.operands.size(); ++part) {
          const ValueId o = n.operands[part];
          const auto& shape = g_.node(o).shape;
          Stage& s = new_stage(out + "." + std::to_string(part), out, n.dtype, n.shape,
                               loops_of(shape), "concat part");
          std::vector<Expr> idx = vars_of(s), at = idx;
          const auto ax = static_cast<size_t>(n.axis);
          at[ax] = make_binary(OpKind::Add, make_dim(offset), idx[ax]);
          s.store_index = at;
          s.value = access(o, idx);
          offset = offset + shape[ax];
        }
        return;
      }
      default: {
        Stage& s = new_stage(out, out, n.dtype, n.shape, loops_of(n.shape), ir::op_name(n.kind));
        s.store_index = vars_of(s);
        s.value = elementwise(v, s.store_index);
      }
    }
  }

  Expr reduce_init(ir::ReduceKind kind, DType t) {
    if (kind == ir::ReduceKind::Sum) return zero(t);
    const bool is_max = kind == ir::ReduceKind::Max;
    const double inf = std::numeric_limits<double>::infinity();
    switch (t) {
      case DType::F32:
      case DType::F64:
      case DType::F16:
      case DType::BF16: return make_float(is_max ? -inf : inf, t);
      case DType::I32:
        return make_int(
            is_max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max(), t);
      case DType::I64:
        return make_int(
            is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max(), t);
      case DType::Bool: return make_int(is_max ? 0 : 1, t);
    }
    throw InternalError("loops: bad dtype");
  }

  void lower_reduce(ValueId v, const std::string& out) {
    const Node& n = g_.node(v);
    const ValueId src = n.operands[0];
    const auto& in_shape = g_.node(src).shape;
    // Kept axes outside, reduced axes inside.
    std::vector<Loop> loops;
    std::vector<size_t> order;
    std::set<int> red(n.axes.begin(), n.axes.end());
    for (size_t i = 0; i < in_shape.size(); ++i)
      if (!red.count(static_cast<int>(i))) {
        loops.push_back({in_shape[i], false});
        order.push_back(i);
      }
    for (size_t i = 0; i < in_shape.size(); ++i)
      if (red.count(static_cast<int>(i))) {
        loops.push_back({in_shape[i], true});
        order.push_back(i);
      }
    const char* kind = n.reduce == ir::ReduceKind::Sum   ? "sum"
                       : n.reduce == ir::ReduceKind::Max ? "max"
                                                         : "min";
    Stage& s = new_stage(out, out, n.dtype, n.shape, loops, std::string("Reduce ") + kind);
    std::vector<Expr> vars = vars_of(s), in_idx(in_shape.size()), out_idx;
    for (size_t j = 0; j < order.size(); ++j) in_idx[order[j]] = vars[j];
    for (size_t i = 0; i < in_shape.size(); ++i)
      if (!red.count(static_cast<int>(i))) out_idx.push_back(in_idx[i]);
    s.store_index = out_idx;
    s.value = access(src, in_idx);
    s.reduce = true;
    s.combine = n.reduce == ir::ReduceKind::Sum   ? OpKind::Add
                : n.reduce == ir::ReduceKind::Max ? OpKind::Max
                                                  : OpKind::Min;
    s.init = reduce_init(n.reduce, n.dtype);
  }

  // Contract, and ExpContract (an online softmax's exp-weighted sum, docs/schedules.md):
  // one stage, its value online(score, rhs) realized as the running update.
  void lower_contract(ValueId v, const std::string& out) {
    const Node& n = g_.node(v);
    const bool weighted = n.kind == OpKind::ExpContract;
    const ValueId lhs = n.operands[0], rhs = n.operands.size() == 2 ? n.operands[1] : -1;
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
    if (rhs >= 0) note(n.rhs_labels, g_.node(rhs).shape);
    std::vector<Loop> loops;
    std::vector<int> labels;
    for (size_t i = 0; i < n.out_labels.size(); ++i) {
      loops.push_back({n.shape[i], false});
      labels.push_back(n.out_labels[i]);
    }
    for (int l : summed) {
      loops.push_back({extent.at(l), true});
      labels.push_back(l);
    }
    Stage& s = new_stage(out, out, n.dtype, n.shape, loops,
                         weighted ? (n.base2 ? "ExpContract base 2" : "ExpContract") : "Contract");
    const std::vector<Expr> vars = vars_of(s);
    std::map<int, Expr> var_of;
    for (size_t j = 0; j < labels.size(); ++j) var_of[labels[j]] = vars[j];
    auto pick = [&](const std::vector<int>& ls) {
      std::vector<Expr> idx;
      for (int l : ls) idx.push_back(var_of.at(l));
      return idx;
    };
    s.store_index = pick(n.out_labels);
    s.reduce = true;
    s.init = zero(n.dtype);
    if (!weighted) {
      s.value = make_binary(OpKind::Mul, access(lhs, pick(n.lhs_labels)),
                            access(rhs, pick(n.rhs_labels)));
      s.combine = OpKind::Add;
      s.contract = true;
      return;
    }
    const Expr x = rhs >= 0 ? access(rhs, pick(n.rhs_labels)) : make_float(1.0, n.dtype);
    s.value = make_call(n.base2 ? "online2" : "online", {access(lhs, pick(n.lhs_labels)), x});
    s.combine = OpKind::ExpContract;
    // The running max, one per output element, beside the output.
    std::string name = out + "_max";
    while (st_.reserved.count(name) || st_.reserved.count(name + "_w")) name += "_";
    st_.reserved.insert(name);
    st_.reserved.insert(name + "_w");  // the step's weights (realize.cpp, online_weights)
    st_.locals.push_back({name, BufferRole::Local, n.dtype, n.shape});
    s.running_max = name;
  }

  const ir::Graph& g_;
  std::set<ValueId> inlined_;
  Stages st_;
  BufMap buf_;
};

}  // namespace

Expr flatten(const std::vector<Expr>& idx, const ir::Shape& shape) {
  Expr flat = make_int(0);
  for (size_t i = 0; i < shape.size(); ++i)
    flat = make_binary(OpKind::Add, make_binary(OpKind::Mul, flat, make_dim(shape[i])), idx[i]);
  return flat;
}

std::set<ValueId> default_inlined(const ir::Graph& graph) { return compute_inline_set(graph); }

Stages build_stages(const ir::Graph& graph, const std::set<ValueId>& inline_nodes) {
  std::set<ValueId> inlined = compute_inline_set(graph);
  inlined.insert(inline_nodes.begin(), inline_nodes.end());
  Stages st = Lowerer(graph, std::move(inlined)).run();
  restrict_domains(st);
  return st;
}

int Stages::find(const std::string& stage) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].name == stage) return static_cast<int>(i);
  return -1;
}

const Buffer* Stages::buffer(const std::string& name) const {
  for (const auto& b : kernel.buffers)
    if (b.name == name) return &b;
  for (const auto& b : locals)
    if (b.name == name) return &b;
  return nullptr;
}

std::vector<std::string> abi_param_names(const ir::Graph& graph) {
  Stages st = build_stages(graph, {});
  std::vector<std::string> names;
  for (const auto& b : st.kernel.buffers)
    if (b.role == BufferRole::Input) names.push_back(b.name);
  return names;
}

}  // namespace ollie::loops
