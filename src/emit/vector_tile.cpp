// The vector form of a register tile (vector_tile.h): the tile's loops written out over
// named vector accumulators, operand loads as unaligned vector loads or broadcasts.
#include "emit/vector_tile.h"

#include <map>
#include <optional>
#include <vector>

namespace ollie::emit {

const char* kVectorHelpers = R"(namespace {

typedef float ollie_f32x16 __attribute__((vector_size(64)));
typedef float ollie_f32x8 __attribute__((vector_size(32)));
typedef double ollie_f64x8 __attribute__((vector_size(64)));
typedef double ollie_f64x4 __attribute__((vector_size(32)));
template <class V, class T> inline V ollie_vload(const T* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T> inline void ollie_vstore(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}
// x - (+0) is x for every x, -0 and NaN included (x + 0 would turn -0 into +0).
template <class V, class T> inline V ollie_splat(T x) { return x - V{}; }
template <class V> inline V ollie_vmax(V a, V b) { return (a > b || a != a) ? a : b; }
template <class V> inline V ollie_vmin(V a, V b) { return (a < b || a != a) ? a : b; }

}  // namespace
)";

// The coefficient of `var` in `e` when `e` is affine in it with a constant coefficient.
std::optional<int64_t> stride_of(const loops::Expr& e, const std::string& var) {
  if (!loops::mentions(e, var)) return 0;
  switch (e->kind) {
    case loops::ExprKind::Var: return 1;
    case loops::ExprKind::Binary: {
      const auto a = stride_of(e->args[0], var), b = stride_of(e->args[1], var);
      if (!a || !b) return std::nullopt;
      if (e->op == ir::OpKind::Add) return *a + *b;
      if (e->op == ir::OpKind::Sub) return *a - *b;
      if (e->op == ir::OpKind::Mul && e->args[1]->kind == loops::ExprKind::IntImm && *b == 0)
        return *a * e->args[1]->int_value;
      if (e->op == ir::OpKind::Mul && e->args[0]->kind == loops::ExprKind::IntImm && *a == 0)
        return *b * e->args[0]->int_value;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

namespace {

using ir::OpKind;
using loops::Expr;
using loops::ExprKind;
using loops::Stmt;
using loops::StmtKind;

// Whether `s` stores to or loads from `buffer` anywhere.
bool touches(const Stmt& s, const std::string& buffer) {
  bool hit = s->kind == StmtKind::Store && s->name == buffer;
  for (const Expr& e : {s->min, s->extent, s->index, s->value, s->cond, s->size})
    if (e) loops::for_each_load(e, [&](const Expr& l) { hit = hit || l->name == buffer; });
  for (const Stmt& b : s->body) hit = hit || touches(b, buffer);
  return hit;
}

// Whether loop variable `var` indexes `buffer` (stored or loaded) inside `s`.
bool indexes(const Stmt& s, const std::string& buffer, const std::string& var) {
  bool hit = s->kind == StmtKind::Store && s->name == buffer && loops::mentions(s->index, var);
  for (const Expr& e : {s->min, s->extent, s->index, s->value, s->cond, s->size})
    if (e)
      loops::for_each_load(e, [&](const Expr& l) {
        hit = hit || (l->name == buffer && loops::mentions(l->args[0], var));
      });
  for (const Stmt& b : s->body) hit = hit || indexes(b, buffer, var);
  return hit;
}

// The text of one step of the tile: vector temporaries (loads, broadcasts) and the
// accumulator updates that read them.
struct Step {
  std::string prefix;  // of the temporaries' names
  std::vector<std::string> decls, updates;
  std::map<std::string, std::string> temps;  // value text -> temporary
};

class VectorTile {
 public:
  VectorTile(const Stmt& alloc, int lanes, std::string type, const PlainPrinter& plain)
      : acc_(alloc->name), lanes_(lanes), type_(std::move(type)), plain_(plain) {}

  bool ok() const { return ok_; }
  std::string vector_name(int64_t k) const { return acc_ + "_v" + std::to_string(k); }

  // The statements of the full tile, in the vector form.
  void region(const Stmt& s, int depth, std::ostringstream& out) {
    if (!ok_) return;
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    if (!touches(s, acc_)) return plain_.stmt(s, depth, out);
    switch (s->kind) {
      case StmtKind::Block:
        for (const Stmt& b : s->body) region(b, depth, out);
        return;
      case StmtKind::If:
        out << pad << "if (" << plain_.expr(s->cond) << ") {\n";
        region(s->body[0], depth + 1, out);
        out << pad << "} else {\n";
        region(s->body[1], depth + 1, out);
        out << pad << "}\n";
        return;
      case StmtKind::For: {
        if (indexes(s, acc_, s->name)) {
          Step st;
          st.prefix = acc_ + "_s" + std::to_string(steps_++) + "_";
          step(s, {}, st);
          write(st.decls, pad, out);
          write(st.updates, pad, out);
          return;
        }
        if (s->for_kind == loops::ForKind::Parallel || s->for_kind == loops::ForKind::Vectorized)
          return refuse();
        const Stmt& body = s->body[0];
        if (body->kind == StmtKind::For && indexes(body, acc_, body->name))
          return unrolled(s, depth, out);
        out << pad << "for (int64_t " << s->name << " = " << plain_.expr(s->min) << "; " << s->name
            << " < " << bound(s) << "; ++" << s->name << ") {\n";
        region(body, depth + 1, out);
        out << pad << "}\n";
        return;
      }
      default: return refuse();
    }
  }

 private:
  void refuse() { ok_ = false; }

  static void write(const std::vector<std::string>& lines, const std::string& pad,
                    std::ostringstream& out) {
    for (const auto& l : lines) out << pad << l << "\n";
  }

  std::string bound(const Stmt& s) const {
    const bool from_zero = s->min->kind == ExprKind::IntImm && s->min->int_value == 0;
    return from_zero ? plain_.expr(s->extent)
                     : plain_.expr(s->min) + " + " + plain_.expr(s->extent);
  }

  // The reduction loop `s` right around the tile: kTileUnroll steps per trip, the loads of
  // step u + 1 written before the updates of step u; the remaining steps one at a time.
  void unrolled(const Stmt& s, int depth, std::ostringstream& out) {
    const std::string pad(static_cast<size_t>(depth) * 2, ' '), i = s->name;
    out << pad << "{\n"
        << pad << "  const int64_t " << i << "_end = " << bound(s) << ";\n"
        << pad << "  int64_t " << i << " = " << plain_.expr(s->min) << ";\n"
        << pad << "  for (; " << i << " + " << kTileUnroll << " <= " << i << "_end; " << i
        << " += " << kTileUnroll << ") {\n";
    std::vector<Step> steps(kTileUnroll);
    for (int u = 0; u < kTileUnroll; ++u) {
      steps[static_cast<size_t>(u)].prefix = i + "_u" + std::to_string(u) + "_";
      const Expr at = loops::make_binary(OpKind::Add, loops::make_var(i), loops::make_int(u));
      step(s->body[0], {{i, at}}, steps[static_cast<size_t>(u)]);
    }
    const std::string in = pad + "    ";
    write(steps[0].decls, in, out);
    for (size_t u = 0; u < steps.size(); ++u) {
      if (u + 1 < steps.size()) write(steps[u + 1].decls, in, out);
      write(steps[u].updates, in, out);
    }
    out << pad << "  }\n" << pad << "  for (; " << i << " < " << i << "_end; ++" << i << ") {\n";
    Step rest;
    rest.prefix = i + "_r_";
    step(s->body[0], {}, rest);
    write(rest.decls, in, out);
    write(rest.updates, in, out);
    out << pad << "  }\n" << pad << "}\n";
  }

  // The tile loops of `s` written out (their values substituted in `vars`), the innermost,
  // vectorized one in vectors of lanes_.
  void step(const Stmt& s, std::map<std::string, Expr> vars, Step& st) {
    if (!ok_) return;
    if (s->kind == StmtKind::Block) {
      for (const Stmt& b : s->body) step(b, vars, st);
      return;
    }
    if (s->kind != StmtKind::For) return refuse();
    const Expr min = loops::substitute(s->min, vars), extent = loops::substitute(s->extent, vars);
    if (min->kind != ExprKind::IntImm || min->int_value != 0 || extent->kind != ExprKind::IntImm)
      return refuse();
    const int64_t n = extent->int_value;
    if (s->for_kind != loops::ForKind::Vectorized) {
      for (int64_t v = 0; v < n; ++v) {
        vars[s->name] = loops::make_int(v);
        step(s->body[0], vars, st);
      }
      return;
    }
    if (n % lanes_ != 0) return refuse();
    std::vector<Stmt> stores;
    if (s->body[0]->kind == StmtKind::Store)
      stores.push_back(s->body[0]);
    else if (s->body[0]->kind == StmtKind::Block)
      stores = s->body[0]->body;
    for (int64_t c = 0; c < n / lanes_; ++c)
      for (const Stmt& store : stores) {
        if (store->kind != StmtKind::Store) return refuse();
        store_chunk(store, vars, s->name, c * lanes_, st);
      }
  }

  // The accumulator vector that `index` (lane `lane` = base + 0..lanes_) selects.
  std::optional<int64_t> acc_vector(const Expr& index, const std::string& lane, int64_t base) {
    if (stride_of(index, lane) != 1) return std::nullopt;
    const Expr at = loops::substitute(index, {{lane, loops::make_int(base)}});
    if (at->kind != ExprKind::IntImm || at->int_value % lanes_ != 0) return std::nullopt;
    return at->int_value / lanes_;
  }

  void store_chunk(const Stmt& store, const std::map<std::string, Expr>& vars,
                   const std::string& lane, int64_t base, Step& st) {
    const Expr index = loops::substitute(store->index, vars);
    const Expr value = loops::substitute(store->value, vars);
    if (store->name == acc_) {
      const auto k = acc_vector(index, lane, base);
      if (!k) return refuse();
      const std::string a = vector_name(*k);
      const bool update = value->kind == ExprKind::Binary &&
                          value->args[0]->kind == ExprKind::Load && value->args[0]->name == acc_ &&
                          loops::equal(value->args[0]->args[0], index);
      if (update && touches_expr(value->args[1])) return refuse();
      if (!update && touches_expr(value)) return refuse();
      const std::string v = vexpr(update ? value->args[1] : value, lane, base, st);
      if (!update) {
        st.updates.push_back(a + " = " + v + ";");
      } else if (value->op == OpKind::Add || value->op == OpKind::Sub || value->op == OpKind::Mul) {
        const char* op = value->op == OpKind::Add   ? " + "
                         : value->op == OpKind::Sub ? " - "
                                                    : " * ";
        st.updates.push_back(a + " = " + a + op + v + ";");
      } else if (value->op == OpKind::Max || value->op == OpKind::Min) {
        st.updates.push_back(a + " = ollie_v" + (value->op == OpKind::Max ? "max" : "min") + "(" +
                             a + ", " + v + ");");
      } else {
        refuse();
      }
      return;
    }
    // The store-back of a vector: contiguous, or lane by lane.
    if (value->kind != ExprKind::Load || value->name != acc_) return refuse();
    const auto k = acc_vector(value->args[0], lane, base);
    if (!k) return refuse();
    if (stride_of(index, lane) == 1) {
      const Expr at = loops::substitute(index, {{lane, loops::make_int(base)}});
      st.updates.push_back("ollie_vstore(&" + store->name + "[" + plain_.expr(at) + "], " +
                           vector_name(*k) + ");");
      return;
    }
    for (int l = 0; l < lanes_; ++l) {
      const Expr at = loops::substitute(index, {{lane, loops::make_int(base + l)}});
      st.updates.push_back(store->name + "[" + plain_.expr(at) + "] = " + vector_name(*k) + "[" +
                           std::to_string(l) + "];");
    }
  }

  bool touches_expr(const Expr& e) const {
    bool hit = false;
    loops::for_each_load(e, [&](const Expr& l) { hit = hit || l->name == acc_; });
    return hit;
  }

  std::string temp(const std::string& text, Step& st) {
    auto it = st.temps.find(text);
    if (it != st.temps.end()) return it->second;
    const std::string name = st.prefix + "t" + std::to_string(st.temps.size());
    st.temps[text] = name;
    st.decls.push_back("const " + type_ + " " + name + " = " + text + ";");
    return name;
  }

  // The vector of `e` over lanes base..base + lanes_ of `lane`: arithmetic as vector
  // operations (the same tree as the scalar form, so the compiler contracts the same
  // multiply-adds), leaves broadcast, loads along the lane contiguous or gathered.
  std::string vexpr(const Expr& e, const std::string& lane, int64_t base, Step& st) {
    const bool varies = loops::mentions(e, lane);
    switch (e->kind) {
      case ExprKind::Load: {
        // A 16-bit float buffer converts as it loads (ollie_half's ollie_vload, found by
        // argument-dependent lookup): only into float vectors.
        const bool half = e->dtype == ir::DType::F16 || e->dtype == ir::DType::BF16;
        if (half && type_.rfind("ollie_f32", 0) != 0) break;
        if (!varies) return temp("ollie_splat<" + type_ + ">(" + plain_.expr(e) + ")", st);
        if (stride_of(e->args[0], lane) == 1) {
          const Expr at = loops::substitute(e->args[0], {{lane, loops::make_int(base)}});
          return temp("ollie_vload<" + type_ + ">(&" + e->name + "[" + plain_.expr(at) + "])", st);
        }
        std::string lanes;
        for (int l = 0; l < lanes_; ++l)
          lanes += (l ? ", " : "") +
                   plain_.expr(loops::substitute(e, {{lane, loops::make_int(base + l)}}));
        return temp(type_ + "{" + lanes + "}", st);
      }
      case ExprKind::Binary: {
        const bool arithmetic = e->op == OpKind::Add || e->op == OpKind::Sub ||
                                e->op == OpKind::Mul || e->op == OpKind::Div ||
                                e->op == OpKind::Max || e->op == OpKind::Min;
        if (!arithmetic || e->dtype != e->args[0]->dtype) break;
        const std::string a = vexpr(e->args[0], lane, base, st);
        const std::string b = vexpr(e->args[1], lane, base, st);
        switch (e->op) {
          case OpKind::Add: return "(" + a + " + " + b + ")";
          case OpKind::Sub: return "(" + a + " - " + b + ")";
          case OpKind::Mul: return "(" + a + " * " + b + ")";
          case OpKind::Div: return "(" + a + " / " + b + ")";
          case OpKind::Max: return "ollie_vmax(" + a + ", " + b + ")";
          default: return "ollie_vmin(" + a + ", " + b + ")";
        }
      }
      case ExprKind::Unary:
        if (e->op == OpKind::Neg) return "(-" + vexpr(e->args[0], lane, base, st) + ")";
        break;
      case ExprKind::Cast: {
        // A 16-bit float widened to float is exact: the float vector its load gives.
        const ir::DType from = e->args[0]->dtype;
        if (e->dtype == ir::DType::F32 && (from == ir::DType::F16 || from == ir::DType::BF16))
          return vexpr(e->args[0], lane, base, st);
        break;
      }
      default: break;
    }
    if (varies) {
      refuse();
      return "";
    }
    return temp("ollie_splat<" + type_ + ">(" + plain_.expr(e) + ")", st);
  }

  std::string acc_;
  int lanes_;
  std::string type_;
  const PlainPrinter& plain_;
  bool ok_ = true;
  int steps_ = 0;  // tile steps written outside a reduction loop (their temporaries' names)
};

}  // namespace

bool emit_vector_tile(const Stmt& alloc, int vector_bytes, int depth, const PlainPrinter& plain,
                      std::ostringstream& out) {
  if (vector_bytes < 32 || !alloc->register_tile) return false;
  if (alloc->dtype != ir::DType::F32 && alloc->dtype != ir::DType::F64) return false;
  if (alloc->size->kind != ExprKind::IntImm) return false;
  const bool f32 = alloc->dtype == ir::DType::F32;
  const int bytes = vector_bytes >= 64 ? 64 : 32;
  const int lanes_used = bytes / (f32 ? 4 : 8);
  const int64_t size = alloc->size->int_value;
  // 32 vector registers with AVX-512, 16 without; a few stay free for the operands.
  const int64_t budget = bytes == 64 ? 28 : 12;
  if (size % lanes_used != 0 || size / lanes_used > budget) return false;
  const std::string type =
      std::string(f32 ? "ollie_f32x" : "ollie_f64x") + std::to_string(lanes_used);
  VectorTile tile(alloc, lanes_used, type, plain);
  const std::string pad(static_cast<size_t>(depth) * 2, ' ');
  const Stmt& body = alloc->body[0];
  const bool versioned = body->kind == StmtKind::If;
  std::ostringstream text;
  tile.region(versioned ? body->body[0] : body, depth + (versioned ? 2 : 1), text);
  if (!tile.ok()) return false;
  const std::string in = pad + (versioned ? "    " : "  ");
  if (versioned) out << pad << "if (" << plain.expr(body->cond) << ") {\n";
  out << pad << (versioned ? "  {\n" : "{\n");
  out << in << "// register tile: " << size / lanes_used << " vectors of " << lanes_used
      << " lanes\n";
  for (int64_t k = 0; k < size / lanes_used; ++k)
    out << in << type << " " << tile.vector_name(k) << " = {};\n";
  out << text.str() << pad << (versioned ? "  }\n" : "}\n");
  if (versioned) {
    out << pad << "} else {\n";
    plain.stmt(loops::make_allocate(alloc->name, alloc->dtype, alloc->size, body->body[1]),
               depth + 1, out);
    out << pad << "}\n";
  }
  return true;
}

}  // namespace ollie::emit
