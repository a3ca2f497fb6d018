// Writes loop-nest kernels as readable C++ (one loop per line, OpenMP pragmas for
// parallel and vectorized loops) plus the documenting header.
#include "emit/emit.h"

#include "emit/half_blocks.h"
#include "emit/vector_tile.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace ollie::emit {
namespace {

using ir::DType;
using ir::OpKind;
using loops::Expr;
using loops::ExprKind;
using loops::Stmt;
using loops::StmtKind;

// Numpy semantics that C++ operators do not give directly (NaN-propagating max/min,
// floor division and modulo, integer powers).
const char* kHelpers = R"(namespace {

template <class T> inline T ollie_max(T a, T b) { return (a > b || a != a) ? a : b; }
// np.where's element: both arms already computed (a call evaluates its arguments), so a
// loop of selects has no branch to keep it from vectorizing.
template <class T> inline T ollie_select(bool c, T a, T b) { return c ? a : b; }
template <class T> inline T ollie_min(T a, T b) { return (a < b || a != a) ? a : b; }

template <class T> inline T ollie_powi(T x, int64_t n) {
  if (n < 0) return T(1) / ollie_powi(x, -n);
  T r = T(1);
  for (; n; n >>= 1, x *= x)
    if (n & 1) r *= x;
  return r;
}

template <class T> inline T ollie_mod(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    T m = std::fmod(a, b);
    if (b == 0) return m;
    if (m != 0) return ((b < 0) != (m < 0)) ? m + b : m;
    return std::copysign(T(0), b);
  }
}

template <class T> inline T ollie_floordiv(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  } else {
    if (b == 0) return a / b;
    T m = std::fmod(a, b);
    T d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= T(1);
    if (d == 0) return std::copysign(T(0), a / b);
    T f = std::floor(d);
    return d - f > T(0.5) ? f + T(1) : f;
  }
}

}  // namespace
)";

// Constant-size local buffers up to this size are stack arrays.
constexpr int64_t kStackBytes = 64 * 1024;

// ollie_math: vectorizable exp, tanh, log (and erf for float) within 2 ulps
// (src/emit/kernel_math.h, pasted as text).
const char* kKernelMath =
#include "emit/kernel_math_text.inc"
    ;

// ollie_half: float16 and bfloat16 conversions and storage types (src/support/half.h,
// pasted as text into kernels that use them).
const char* kHalf =
#include "emit/half_text.inc"
    ;

// The bf16 dot-product micro-kernel (src/support/bf16_dot.h) that a bf16_dot stage calls,
// pasted with kHalf (such a stage loads bfloat16 values).
const char* kBf16Dot =
#include "emit/bf16_dot_text.inc"
    ;

bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

// The C++ type a value of dtype `t` is computed in: float for the 16-bit floats (they
// are rounded only where the spec converts to them and where they are stored).
const char* value_type(DType t) { return is_half(t) ? "float" : c_type(t); }

// The element type a kernel reads and writes a buffer through: for the 16-bit floats,
// ollie_half's types that convert to float on a load and round on a store.
const char* storage_type(DType t) {
  if (t == DType::F16) return "ollie_half::f16";
  if (t == DType::BF16) return "ollie_half::bf16";
  if (t == DType::Bool) return "uint8_t";
  return c_type(t);
}

// The element type of a local buffer: floats for the 16-bit floats (values already
// rounded where the spec converts), bytes for bools (g++ 12 does not vectorize a loop
// that loads `bool`s, one that loads bytes of 0 and 1 it does).
const char* local_type(DType t) { return t == DType::Bool ? "uint8_t" : value_type(t); }

// A parameter read and written through another element type than the ABI's: the 16-bit
// floats (ollie_half's types) and bools (bytes, see local_type).
bool retyped(DType t) { return is_half(t) || t == DType::Bool; }

// A conversion to a 16-bit float: round to nearest even as numpy (f16, from a double
// directly) and ml_dtypes (bf16, through float) do.
std::string round_to_half(DType to, DType from, const std::string& x) {
  const std::string via = from == DType::F64 && to == DType::F16 ? "double" : "float";
  return std::string(to == DType::F16 ? "ollie_half::round_f16" : "ollie_half::round_bf16") +
         "(static_cast<" + via + ">(" + x + "))";
}

bool uses_half(const ir::Graph& g) {
  for (const auto& n : g.nodes)
    if (is_half(n.dtype)) return true;
  return false;
}

// The function computing a call: ollie_math's where it has one for the type.
std::string call_function(const std::string& fn, DType t) {
  const bool has = fn == "exp" || fn == "exp2" || fn == "tanh" || fn == "log" ||
                   (fn == "erf" && t == DType::F32);
  return (has && ir::is_float(t) ? "ollie_math::" : "std::") + fn;
}

class Printer {
 public:
  Printer(const loops::Kernel& k, int vector_bytes) : vector_bytes_(vector_bytes) {
    for (size_t i = 0; i < k.dims.size(); ++i) dim_names_[k.dims[i]] = k.dim_names[i];
    for (const auto& b : k.buffers)
      if (is_half(b.dtype)) half_buffers_[b.name] = b.dtype;
  }

  std::string expr(const Expr& e) {
    switch (e->kind) {
      case ExprKind::IntImm: return int_text(e->int_value, e->dtype);
      case ExprKind::FloatImm: return float_text(e->float_value, e->dtype);
      case ExprKind::Var: return e->name;
      case ExprKind::Dim: return dim_text(e->dim);
      case ExprKind::Load:
        // A 16-bit float reads as float (explicitly, so templates see float); in a block,
        // as its lane of the block converted before the loop.
        if (is_half(e->dtype)) {
          const std::string element = e->name + "[" + expr(e->args[0]) + "]";
          const auto it = block_lanes_.find(element);
          return "static_cast<float>(" + (it == block_lanes_.end() ? element : it->second) + ")";
        }
        return e->name + "[" + expr(e->args[0]) + "]";
      case ExprKind::Unary:
        switch (e->op) {
          case OpKind::Neg: return "(-" + expr(e->args[0]) + ")";
          case OpKind::Not: return "(!" + expr(e->args[0]) + ")";
          case OpKind::Abs: return "std::abs(" + expr(e->args[0]) + ")";
          default: {
            // Small powers as products (vectorizable); others by repeated squaring.
            const int64_t n = e->int_value;
            if (n < 1 || n > 4 || !ir::is_float(e->dtype))
              return "ollie_powi(" + expr(e->args[0]) + ", " + std::to_string(n) + ")";
            const std::string a = expr(e->args[0]);
            std::string p = a;
            for (int64_t i = 1; i < n; ++i) p += " * " + a;
            return "(" + p + ")";
          }
        }
      case ExprKind::Binary: {
        const std::string a = expr(e->args[0]), b = expr(e->args[1]);
        // Explicit template arguments: an i64 index may meet a plain int literal.
        const std::string t = value_type(e->args[0]->dtype);
        switch (e->op) {
          case OpKind::Add: return "(" + a + " + " + b + ")";
          case OpKind::Sub: return "(" + a + " - " + b + ")";
          case OpKind::Mul: return "(" + a + " * " + b + ")";
          case OpKind::Div: return "(" + a + " / " + b + ")";
          case OpKind::Lt: return "(" + a + " < " + b + ")";
          case OpKind::Le: return "(" + a + " <= " + b + ")";
          case OpKind::Gt: return "(" + a + " > " + b + ")";
          case OpKind::Ge: return "(" + a + " >= " + b + ")";
          case OpKind::Eq: return "(" + a + " == " + b + ")";
          case OpKind::Ne: return "(" + a + " != " + b + ")";
          case OpKind::And: return "(" + a + " && " + b + ")";
          case OpKind::Or: return "(" + a + " || " + b + ")";
          case OpKind::Max: return "ollie_max<" + t + ">(" + a + ", " + b + ")";
          case OpKind::Min: return "ollie_min<" + t + ">(" + a + ", " + b + ")";
          case OpKind::FloorDiv: return "ollie_floordiv<" + t + ">(" + a + ", " + b + ")";
          case OpKind::Mod: return "ollie_mod<" + t + ">(" + a + ", " + b + ")";
          default: throw InternalError(std::string("emit: binary ") + ir::op_name(e->op));
        }
      }
      case ExprKind::Select:
        if (loops::is_guarded_select(e))
          return "(" + expr(e->args[0]) + " ? " + expr(e->args[1]) + " : " + expr(e->args[2]) + ")";
        return std::string("ollie_select<") + value_type(e->dtype) + ">(" + expr(e->args[0]) +
               ", " + expr(e->args[1]) + ", " + expr(e->args[2]) + ")";
      case ExprKind::Cast:
        if (is_half(e->dtype)) return round_to_half(e->dtype, e->args[0]->dtype, expr(e->args[0]));
        return std::string("static_cast<") + value_type(e->dtype) + ">(" + expr(e->args[0]) + ")";
      case ExprKind::Call: {
        std::string s = call_function(e->name, e->args[0]->dtype) + "(";
        for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + expr(e->args[i]);
        return s + ")";
      }
    }
    throw InternalError("emit: unknown expr");
  }

  void stmt(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    switch (s->kind) {
      case StmtKind::For: {
        if (s->for_kind == loops::ForKind::Vectorized && s->reduction)
          return vector_sum(s, depth, out);
        const bool work_shared = std::exchange(work_shared_, false);
        if (work_shared) {
          out << pad << "#pragma omp for\n";
        } else if (s->for_kind == loops::ForKind::Parallel && scratch_loop(s, depth, out)) {
          break;
        } else if (s->for_kind == loops::ForKind::Vectorized && blocked_loop(s, depth, out)) {
          return;
        }
        switch (work_shared ? loops::ForKind::Serial : s->for_kind) {
          case loops::ForKind::Parallel: out << pad << "#pragma omp parallel for\n"; break;
          case loops::ForKind::Vectorized: out << pad << "#pragma omp simd\n"; break;
          case loops::ForKind::Unrolled:
            // A short loop of constant trip count unrolls fully (a register tile's rows).
            out << pad << "#pragma GCC unroll "
                << (s->extent->kind == ExprKind::IntImm && s->extent->int_value <= 16
                        ? s->extent->int_value
                        : 8)
                << "\n";
            break;
          case loops::ForKind::Serial: break;
        }
        const bool from_zero = s->min->kind == ExprKind::IntImm && s->min->int_value == 0;
        const std::string lo = expr(s->min);
        std::string hi = from_zero ? expr(s->extent) : lo + " + " + expr(s->extent);
        // A causal domain's bound reads memory: evaluated once, before the loop (a pragma
        // must stay right above its loop, so only for plain loops).
        bool loads = false;
        loops::for_each_load(s->extent, [&](const Expr&) { loads = true; });
        const bool hoist = loads && s->for_kind == loops::ForKind::Serial;
        if (hoist) {
          out << pad << "{ const int64_t " << s->name << "_end = " << hi << ";\n";
          hi = s->name + "_end";
        }
        out << pad << "for (int64_t " << s->name << " = " << lo << "; " << s->name << " < " << hi
            << "; ++" << s->name << ") {\n";
        stmt(s->body[0], depth + 1, out);
        out << pad << (hoist ? "}}\n" : "}\n");
        break;
      }
      case StmtKind::Block:
        for (const auto& b : s->body) stmt(b, depth, out);
        break;
      case StmtKind::Store: {
        const std::string element = s->name + "[" + expr(s->index) + "]";
        const auto it = block_lanes_.find(element);
        out << pad << (it == block_lanes_.end() ? element : it->second) << " = "
            << stored(s->name, s->value) << ";\n";
        break;
      }
      case StmtKind::Allocate: {
        if (s->register_tile && emit_vector_tile(s, vector_bytes_, depth, plain(), out)) break;
        const char* t = local_type(s->dtype);
        if (scratch_.count(s->name)) {
          // A per-thread scratch buffer, allocated once before the parallel loop.
          out << pad << t << "* __restrict " << s->name << " = " << s->name << "_mem.get();\n";
        } else if (on_heap(s)) {
          // On the heap: intermediates grow with the dims and would overflow the stack.
          out << pad << "std::unique_ptr<" << t << "[]> " << s->name << "_mem(new " << t << "["
              << expr(s->size) << "]);\n"
              << pad << t << "* __restrict " << s->name << " = " << s->name << "_mem.get();\n";
        } else {
          // Small tiles of constant size live on the stack (private to the thread).
          out << pad << "alignas(64) " << t << " " << s->name << "["
              << std::max<int64_t>(s->size->int_value, 1) << "];\n";
        }
        stmt(s->body[0], depth, out);
        break;
      }
      case StmtKind::If:
        out << pad << "if (" << expr(s->cond) << ") {\n";
        stmt(s->body[0], depth + 1, out);
        out << pad << "} else {\n";
        stmt(s->body[1], depth + 1, out);
        out << pad << "}\n";
        break;
      case StmtKind::Call:  // a micro-kernel: element addresses and values
        out << pad << s->name << "(";
        for (size_t i = 0; i < s->args.size(); ++i) {
          const Expr& a = s->args[i];
          out << (i ? ", " : "")
              << (a->kind == ExprKind::Load ? "&" + a->name + "[" + expr(a->args[0]) + "]"
                                            : expr(a));
        }
        out << ");\n";
        break;
    }
  }

 private:
  // Whether local buffer `a` (an Allocate) lives on the heap: its size is not a constant,
  // or too big for the stack.
  static bool on_heap(const Stmt& a) {
    const int64_t bytes = is_half(a->dtype) ? 4 : ir::dtype_bytes(a->dtype);
    return a->size->kind != ExprKind::IntImm || a->size->int_value * bytes > kStackBytes;
  }

  // The heap buffers allocated inside `s` (not inside a nested parallel loop) whose size
  // depends only on the dims, by name, with their size as printed; a name allocated at
  // several sites with different sizes maps to "".
  void heap_locals(const Stmt& s, std::map<std::string, std::pair<Stmt, std::string>>& found) {
    if (s->kind == StmtKind::Allocate && on_heap(s)) {
      bool dims_only = true;
      loops::for_each_expr(s->size, [&](const Expr& e) {
        dims_only = dims_only && e->kind != ExprKind::Var && e->kind != ExprKind::Load;
      });
      const std::string size = dims_only ? expr(s->size) : "";
      const auto [it, fresh] = found.emplace(s->name, std::make_pair(s, size));
      if (!fresh && it->second.second != size) it->second.second = "";
    }
    for (const auto& b : s->body)
      if (b && !(b->kind == StmtKind::For && b->for_kind == loops::ForKind::Parallel))
        heap_locals(b, found);
  }

  // A parallel loop whose iterations allocate heap buffers of a size fixed by the dims (a
  // fused row's scores, `new float[S]` per row): each thread allocates them once, in an
  // `omp parallel` region around the work-shared loop (`omp for`: the iterations are dealt
  // to the threads as `omp parallel for` deals them), and every iteration reuses its
  // thread's copy. False, with nothing written, when the loop allocates none.
  bool scratch_loop(const Stmt& s, int depth, std::ostringstream& out) {
    std::map<std::string, std::pair<Stmt, std::string>> found;
    heap_locals(s->body[0], found);
    std::vector<std::string> names;
    for (const auto& [name, at] : found)
      if (!at.second.empty() && !scratch_.count(name)) names.push_back(name);
    if (names.empty()) return false;
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    out << pad << "#pragma omp parallel\n" << pad << "{\n";
    for (const auto& name : names) {
      const Stmt& a = found.at(name).first;
      const char* t = local_type(a->dtype);
      out << pad << "  std::unique_ptr<" << t << "[]> " << name << "_mem(new " << t << "["
          << found.at(name).second << "]);  // scratch, one per thread\n";
      scratch_.insert(name);
    }
    work_shared_ = true;  // the loop, below its `omp for`, as a plain loop
    stmt(s, depth + 1, out);
    for (const auto& name : names) scratch_.erase(name);
    out << pad << "}\n";
    return true;
  }

  PlainPrinter plain() {
    return {[this](const Expr& e) { return expr(e); },
            [this](const Stmt& st, int d, std::ostringstream& o) { stmt(st, d, o); }};
  }

  // A vectorized loop of stores that loads or stores an ABI buffer of 16-bit floats with
  // unit stride (half_blocks.h): chunks of kHalfBlockLanes iterations, each converting
  // those elements as vectors around a vectorized loop over its lanes, then the remaining
  // iterations as the plain loop. False, writing nothing, where that does not apply.
  bool blocked_loop(const Stmt& s, int depth, std::ostringstream& out) {
    std::vector<Stmt> stores;
    const Stmt& body = s->body[0];
    for (const Stmt& b : body->kind == StmtKind::Block ? body->body : std::vector<Stmt>{body}) {
      if (b->kind != StmtKind::Store) return false;
      stores.push_back(b);
    }
    if (s->extent->kind == ExprKind::IntImm && s->extent->int_value < kHalfBlockLanes) return false;
    const std::string i = s->name, chunk = i + "_vec", lane = i + "_lane", end = i + "_end";
    const auto blocks = half_blocks(stores, {}, i, half_buffers_, plain(), i + "_");
    if (blocks.empty()) return false;
    const std::string pad(static_cast<size_t>(depth) * 2, ' '), p = pad + "  ";
    const std::string lanes = std::to_string(kHalfBlockLanes);
    out << pad << "{\n"
        << p << "const int64_t " << end << " = " << expr(s->min) << " + " << expr(s->extent)
        << ";\n"
        << p << "int64_t " << chunk << " = " << expr(s->min) << ";\n"
        << p << "for (; " << chunk << " + " << lanes << " <= " << end << "; " << chunk
        << " += " << lanes << ") {\n";
    write_half_block_heads(blocks, i, chunk, p + "  ", plain(), out);
    open_lane_loop(p, lane, lanes, i, chunk, out);
    block_lanes_ = half_block_lanes(blocks, lane, plain());
    stmt(body, depth + 3, out);
    block_lanes_.clear();
    out << p << "  }\n";
    write_half_block_tails(blocks, i, chunk, p + "  ", plain(), out);
    out << p << "}\n"
        << p << "#pragma omp simd\n"
        << p << "for (int64_t " << i << " = " << chunk << "; " << i << " < " << end << "; ++" << i
        << ") {\n";
    stmt(body, depth + 2, out);
    out << p << "}\n" << pad << "}\n";
    return true;
  }

  // A vectorized reduction loop (a sum: the only combine a schedule may vectorize) around
  // `B[i] = B[i] + v`: the sum runs in a scalar accumulator that OpenMP splits over lanes.
  // Small pure loops of constant size may sit inside it (a dot-product tile): one
  // accumulator per iteration, the loop body written out once per accumulator. A tile
  // cut by a split tail (extent min(c, ...)) runs the general form: the small loops
  // outside, one accumulator each.
  void vector_sum(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    std::vector<Stmt> inner;  // the tile's loops, outermost first
    Stmt st = s->body[0];
    while (st->kind == StmtKind::For) {
      inner.push_back(st);
      st = st->body[0];
    }
    OLLIE_CHECK(st->kind == StmtKind::Store && st->value->kind == ExprKind::Binary &&
                    st->value->op == OpKind::Add && st->value->args[0]->kind == ExprKind::Load &&
                    st->value->args[0]->name == st->name,
                "emit: a vectorized reduction loop must hold one sum update, in " + s->name);
    // Each tile loop's constant size, and the condition that a tile is whole.
    std::vector<int64_t> sizes;
    std::vector<std::string> whole;
    for (const Stmt& l : inner) {
      OLLIE_CHECK(l->min->kind == ExprKind::IntImm && l->min->int_value == 0,
                  "emit: a loop inside the vectorized sum " + s->name + " must start at 0");
      const Expr& e = l->extent;
      if (e->kind == ExprKind::IntImm) {
        sizes.push_back(e->int_value);
      } else {
        OLLIE_CHECK(
            e->kind == ExprKind::Binary && e->op == OpKind::Min &&
                e->args[0]->kind == ExprKind::IntImm,
            "emit: a loop inside the vectorized sum " + s->name + " must have a constant size");
        sizes.push_back(e->args[0]->int_value);
        whole.push_back(expr(e) + " == " + std::to_string(e->args[0]->int_value));
      }
    }
    const std::string type = value_type(st->value->dtype);
    // One accumulator per (index, update) pair, each summed in a vector of lanes.
    auto sums = [&](const std::vector<std::pair<Expr, Expr>>& updates, const std::string& p) {
      out << p << "{\n";
      for (size_t k = 0; k < updates.size(); ++k)
        out << p << "  " << type << " " << acc_name(st->name, updates.size(), k) << " = "
            << st->name << "[" << expr(updates[k].first) << "];\n";
      lane_sums(s, type, st->name, updates, p + "  ", out);
      for (size_t k = 0; k < updates.size(); ++k)
        out << p << "  " << st->name << "[" << expr(updates[k].first)
            << "] = " << acc_name(st->name, updates.size(), k) << ";\n";
      out << p << "}\n";
    };
    // The whole tile: every combination of the tile loops' values, substituted.
    std::vector<std::pair<Expr, Expr>> tile;
    std::vector<int64_t> at(inner.size(), 0);
    for (bool more = true; more;) {
      std::map<std::string, Expr> vars;
      for (size_t k = 0; k < inner.size(); ++k) vars[inner[k]->name] = loops::make_int(at[k]);
      tile.emplace_back(loops::substitute(st->index, vars),
                        loops::substitute(st->value->args[1], vars));
      more = false;
      for (size_t k = inner.size(); k-- > 0;) {
        if (++at[k] < sizes[k]) {
          more = true;
          break;
        }
        at[k] = 0;
      }
    }
    if (whole.empty()) return sums(tile, pad);
    std::string cond;
    for (const auto& w : whole) cond += (cond.empty() ? "" : " && ") + ("(" + w + ")");
    out << pad << "if (" << cond << ") {\n";
    sums(tile, pad + "  ");
    out << pad << "} else {\n";
    std::string p = pad + "  ";
    for (const Stmt& l : inner) {
      out << p << "for (int64_t " << l->name << " = 0; " << l->name << " < " << expr(l->extent)
          << "; ++" << l->name << ") {\n";
      p += "  ";
    }
    sums({{st->index, st->value->args[1]}}, p);
    for (size_t k = inner.size(); k-- > 0;) {
      p.resize(p.size() - 2);
      out << p << "}\n";
    }
    out << pad << "}\n";
  }

  // The sum loop `s` over each update added into its scalar accumulator (acc_name): the
  // whole chunks of kSumLanes elements into a vector of lanes per accumulator (vectorized),
  // the tail into the scalar, then the lanes folded in halves and added. (OpenMP's
  // `simd reduction` folds its lanes one scalar add at a time through the stack: a
  // 64-long dot product took twice as long with it, GCC 12.)
  void lane_sums(const Stmt& s, const std::string& type, const std::string& buffer,
                 const std::vector<std::pair<Expr, Expr>>& updates, const std::string& p,
                 std::ostringstream& out) {
    const size_t n = updates.size();
    const std::string i = s->name, chunk = i + "_vec", lane = i + "_lane", end = i + "_end";
    const std::string lanes = std::to_string(kSumLanes);
    out << p << "const int64_t " << end << " = " << expr(s->min) << " + " << expr(s->extent)
        << ";\n"
        << p << "int64_t " << chunk << " = " << expr(s->min) << ";\n";
    for (size_t k = 0; k < n; ++k)
      out << p << "alignas(64) " << type << " " << acc_name(buffer, n, k) << "_lanes[" << lanes
          << "] = {};\n";
    out << p << "for (; " << chunk << " + " << lanes << " <= " << end << "; " << chunk
        << " += " << lanes << ") {\n";
    // The terms' 16-bit loads with unit stride, converted a chunk at a time (half_blocks.h).
    std::vector<Expr> terms;
    for (const auto& u : updates) terms.push_back(u.second);
    auto blocks = half_blocks({}, terms, i, half_buffers_, plain(), i + "_");
    std::erase_if(blocks, [&](const HalfBlock& b) { return b.buffer == buffer; });
    write_half_block_heads(blocks, i, chunk, p + "  ", plain(), out);
    open_lane_loop(p, lane, lanes, i, chunk, out);
    block_lanes_ = half_block_lanes(blocks, lane, plain());
    for (size_t k = 0; k < n; ++k) {
      const std::string a = acc_name(buffer, n, k) + "_lanes[" + lane + "]";
      out << p << "    " << a << " = " << a << " + " << expr(updates[k].second) << ";\n";
    }
    block_lanes_.clear();
    out << p << "  }\n" << p << "}\n";
    out << p << "for (int64_t " << i << " = " << chunk << "; " << i << " < " << end << "; ++" << i
        << ") {\n";
    for (size_t k = 0; k < n; ++k) {
      const std::string a = acc_name(buffer, n, k);
      out << p << "  " << a << " = " << a << " + " << expr(updates[k].second) << ";\n";
    }
    out << p << "}\n";
    for (int half = kSumLanes / 2; half >= 1; half /= 2) {
      out << p << "#pragma omp simd\n"
          << p << "for (int64_t " << lane << " = 0; " << lane << " < " << half << "; ++" << lane
          << ") {\n";
      for (size_t k = 0; k < n; ++k) {
        const std::string a = acc_name(buffer, n, k) + "_lanes";
        out << p << "  " << a << "[" << lane << "] += " << a << "[" << lane << " + " << half
            << "];\n";
      }
      out << p << "}\n";
    }
    for (size_t k = 0; k < n; ++k) {
      const std::string a = acc_name(buffer, n, k);
      out << p << a << " = " << a << " + " << a << "_lanes[0];\n";
    }
  }

  // Lanes of a vectorized sum: a 64-byte vector of float (a double sum keeps 16 too, two
  // vectors, so the adds of a short sum do not wait on each other).
  static constexpr int kSumLanes = 16;
  static_assert(kSumLanes == kHalfBlockLanes, "a sum's chunk converts its blocks whole");

  static std::string acc_name(const std::string& buffer, size_t count, size_t k) {
    return count == 1 ? buffer + "_acc" : buffer + "_acc" + std::to_string(k);
  }

  static std::string int_text(int64_t v, DType t) {
    if (t == DType::Bool) return v ? "true" : "false";
    if (v == std::numeric_limits<int64_t>::min()) return "std::numeric_limits<int64_t>::min()";
    std::string s = std::to_string(v);
    if (t == DType::I64) return (v > INT32_MAX || v < INT32_MIN) ? "int64_t(" + s + "LL)" : s;
    if (v == INT32_MIN) return "std::numeric_limits<int32_t>::min()";
    return "int32_t(" + s + ")";
  }

  static std::string float_text(double v, DType t) {
    const std::string ty = value_type(t);
    if (std::isnan(v)) return "std::numeric_limits<" + ty + ">::quiet_NaN()";
    if (std::isinf(v))
      return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + ty + ">::infinity()";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (t == DType::F32 || is_half(t)) s += "f";
    return v < 0 ? "(" + s + ")" : s;
  }

  // DimExpr text ("2*D + 1", "(HD//2)") is C++ once dims map to their local names and
  // floor division of non-negative sizes becomes '/'.
  std::string dim_text(const ir::DimExpr& d) {
    const std::string s = d.str();
    std::string out;
    for (size_t i = 0; i < s.size();) {
      if (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_') {
        size_t j = i;
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
        const std::string id = s.substr(i, j - i);
        auto it = dim_names_.find(id);
        out += it == dim_names_.end() ? id : it->second;
        i = j;
      } else if (s.compare(i, 2, "//") == 0) {
        out += "/";
        i += 2;
      } else {
        out += s[i++];
      }
    }
    const bool atom = out.find_first_of(" +-*/()") == std::string::npos;
    return atom ? out : "(" + out + ")";
  }

  // The `omp simd` loop over a chunk's lanes, opened at indent `p` + 2, with the original
  // loop variable `i` defined as chunk + lane.
  static void open_lane_loop(const std::string& p, const std::string& lane,
                             const std::string& lanes, const std::string& i,
                             const std::string& chunk, std::ostringstream& out) {
    out << p << "  #pragma omp simd\n"
        << p << "  for (int64_t " << lane << " = 0; " << lane << " < " << lanes << "; ++" << lane
        << ") {\n"
        << p << "    const int64_t " << i << " = " << chunk << " + " << lane << ";\n";
  }

  std::map<std::string, std::string> dim_names_;
  std::map<std::string, DType> half_buffers_;  // the ABI's 16-bit float buffers
  std::set<std::string> scratch_;  // per-thread scratch buffers of the parallel loop emitted
  bool work_shared_ = false;       // the next For is a parallel region's `omp for` loop
  // While a block's lanes are written: element text -> its lane (half_blocks.h).
  std::map<std::string, std::string> block_lanes_;

  // The value a store writes. An ABI buffer of 16-bit floats rounds what it is assigned
  // (ollie_half's operator=), so a float rounded to its dtype just before is stored
  // unrounded: rounding twice to the same dtype is rounding once (the first result is
  // exact in float, and a NaN keeps its payload), and it saves a conversion per element.
  std::string stored(const std::string& buffer, const Expr& value) {
    const auto it = half_buffers_.find(buffer);
    if (it != half_buffers_.end() && value->kind == ExprKind::Cast && value->dtype == it->second &&
        value->args[0]->dtype == DType::F32)
      return expr(value->args[0]);
    return expr(value);
  }
  int vector_bytes_;
};

std::string bound_dims_text(const ir::Graph& g) {
  std::string s;
  for (const auto& d : g.dims) {
    auto it = g.bound_dims.find(d);
    s += (s.empty() ? "" : ", ") + d + "=" +
         (it == g.bound_dims.end() ? "?" : std::to_string(it->second));
  }
  return s;
}

// The register tiles' vector width when EmitOptions leaves it to the host: the host's, or
// OLLIE_VECTOR_BYTES (16 for the plain form, to compare the two).
int tile_vector_bytes() {
  const char* env = std::getenv("OLLIE_VECTOR_BYTES");
  if (!env || !*env) return loops::host_target().vector_bytes;
  const std::string v = env;
  if (v != "16" && v != "32" && v != "64")
    throw UserError(
        "OLLIE_VECTOR_BYTES is '" + v +
        "': set it to 16 (plain register tiles), 32 (AVX2) or 64 (AVX-512), or unset it");
  return std::stoi(v);
}

}  // namespace

const char* c_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int32_t";
    case DType::I64: return "int64_t";
    case DType::Bool: return "bool";
    case DType::F16:
    case DType::BF16: return "uint16_t";  // the bit pattern (support/half.h)
  }
  throw InternalError("emit: unknown dtype");
}

std::string kernel_declaration(const ir::Graph& graph, const std::string& symbol) {
  const std::vector<std::string> names = loops::abi_param_names(graph);
  std::ostringstream out;
  out << "extern \"C\" void " << symbol << "(";
  for (size_t i = 0; i < graph.params.size(); ++i)
    out << "const " << c_type(graph.params[i].dtype) << "* " << names[i] << ", ";
  for (size_t i = 0; i < graph.results.size(); ++i)
    out << c_type(graph.results[i].dtype) << "* out" << i << ", ";
  out << "const int64_t* dims);";
  return out.str();
}

std::string kernel_prelude(bool half) {
  return std::string(
             "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <limits>\n"
             "#include <memory>\n#include <type_traits>\n\n") +
         kHelpers + "\n" + kVectorHelpers + "\n" + kKernelMath + "\n" +
         (half ? std::string(kHalf) + "\n" + kBf16Dot + "\n" : std::string());
}

std::string emit_kernel(const loops::Kernel& kernel, const ir::Graph& graph,
                        const EmitOptions& options) {
  std::ostringstream out;
  if (options.prelude) {
    out << "// Generated by ollie from the spec entry `" << graph.entry << "`.\n"
        << "// dims (ABI order): [";
    for (size_t i = 0; i < graph.dims.size(); ++i) out << (i ? ", " : "") << graph.dims[i];
    out << "]; bound for this build: " << bound_dims_text(graph) << ".\n"
        << "// The kernel is generic: every size is read from `dims`.\n";
    if (!options.schedule_text.empty()) {
      out << "// Schedule:\n";
      std::istringstream lines(options.schedule_text);
      for (std::string line; std::getline(lines, line);) out << "//   " << line << "\n";
    }
    out << kernel_prelude(uses_half(graph));
  }
  // The ABI's declaration, with the buffers' promise not to alias spelled __restrict
  // (a top-level qualifier of a parameter: the function type is unchanged).
  const std::vector<std::string> names = loops::abi_param_names(graph);
  // A 16-bit float buffer comes as uint16_t (the ABI) under a raw name, and is read and
  // written through ollie_half's type under its own; a bool buffer through bytes.
  std::vector<std::pair<std::string, std::string>> halves;  // raw name, typed declaration
  auto param = [&](DType t, const std::string& name, bool input) {
    const std::string c = input ? "const " : "";
    if (!retyped(t)) return c + c_type(t) + "* __restrict " + name;
    const std::string raw = "ollie_raw_" + name, typed = c + storage_type(t) + "*";
    halves.emplace_back(
        raw, typed + " __restrict " + name + " = reinterpret_cast<" + typed + ">(" + raw + ");");
    return c + c_type(t) + "* __restrict " + raw;
  };
  out << "extern \"C\" void " << options.symbol << "(";
  for (size_t i = 0; i < graph.params.size(); ++i)
    out << param(graph.params[i].dtype, names[i], true) << ", ";
  for (size_t i = 0; i < graph.results.size(); ++i)
    out << param(graph.results[i].dtype, "out" + std::to_string(i), false) << ", ";
  out << "const int64_t* dims) {\n";
  for (const auto& h : halves) out << "  " << h.second << "\n";
  for (size_t i = 0; i < kernel.dims.size(); ++i)
    out << "  [[maybe_unused]] const int64_t " << kernel.dim_names[i] << " = dims[" << i << "];\n";
  Printer p(kernel, options.vector_bytes > 0 ? options.vector_bytes : tile_vector_bytes());
  p.stmt(kernel.body, 1, out);
  out << "}\n";
  return out.str();
}

std::string emit_header(const ir::Graph& graph, const std::string& symbol) {
  const std::vector<std::string> names = loops::abi_param_names(graph);
  // Another symbol's header gets its own dims namespace, so two headers go in one file.
  const std::string dims_namespace = symbol == kDefaultSymbol ? "ollie_dims" : symbol + "_dims";
  std::ostringstream out;
  out << "// Generated by ollie: the kernel ABI of the spec entry `" << graph.entry << "`.\n"
      << "// Tensors are dense, row-major and must not alias; sizes come from `dims`.\n"
      << "#pragma once\n\n#include <cstdint>\n\n"
      << "// Parameters, in order:\n";
  const auto index_axes = ir::gather_index_axes(graph);
  for (size_t i = 0; i < graph.params.size(); ++i) {
    out << "//   " << names[i] << ": \"" << ir::dtype_name(graph.params[i].dtype)
        << ir::shape_str(graph.params[i].shape) << "\"  (input " << i << ")";
    for (const auto& v : index_axes[i])  // numpy's domain: docs/spec-language.md
      out << ", indices into an axis of " << v.str() << " in [-" << v.str() << ", " << v.str()
          << "), a negative one counting from the end";
    out << "\n";
  }
  for (size_t i = 0; i < graph.results.size(); ++i)
    out << "//   out" << i << ": \"" << ir::dtype_name(graph.results[i].dtype)
        << ir::shape_str(graph.results[i].shape) << "\"  (result " << i << ")\n";
  out << "//   dims: the sizes, in the order below.\n"
      << kernel_declaration(graph, symbol) << "\n\n"
      << "// dims[i] order and the sizes bound for this run.\n"
      << "namespace " << dims_namespace << " {\n"
      << "constexpr int64_t count = " << graph.dims.size() << ";\n";
  for (size_t i = 0; i < graph.dims.size(); ++i) {
    auto it = graph.bound_dims.find(graph.dims[i]);
    out << "constexpr int64_t " << graph.dims[i] << " = "
        << (it == graph.bound_dims.end() ? 0 : it->second) << ";  // dims[" << i << "]\n";
  }
  out << "}  // namespace " << dims_namespace << "\n";
  return out.str();
}

}  // namespace ollie::emit
