// Construction (with invariant checks) and the stable text form of the loop-nest IR.
#include "loops/loops.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace ollie::loops {
namespace {

using ir::DType;
using ir::OpKind;

std::shared_ptr<ExprNode> node(ExprKind kind, DType dtype) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->dtype = dtype;
  return n;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw InternalError("loops: " + what);
}

bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

std::optional<int64_t> int_const(const Expr& e) {
  if (e->kind == ExprKind::IntImm) return e->int_value;
  return std::nullopt;
}

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const char* binary_symbol(OpKind op) {
  switch (op) {
    case OpKind::Add: return "+";
    case OpKind::Sub: return "-";
    case OpKind::Mul: return "*";
    case OpKind::Div: return "/";
    case OpKind::Lt: return "<";
    case OpKind::Le: return "<=";
    case OpKind::Gt: return ">";
    case OpKind::Ge: return ">=";
    case OpKind::Eq: return "==";
    case OpKind::Ne: return "!=";
    case OpKind::And: return "&&";
    case OpKind::Or: return "||";
    default: return nullptr;
  }
}

}  // namespace

Expr make_int(int64_t value, DType dtype) {
  require(!ir::is_float(dtype), "IntImm needs an integer or bool dtype");
  auto n = node(ExprKind::IntImm, dtype);
  n->int_value = value;
  return n;
}

Expr make_float(double value, DType dtype) {
  require(ir::is_float(dtype), "FloatImm needs a float dtype");
  auto n = node(ExprKind::FloatImm, dtype);
  n->float_value = value;
  return n;
}

Expr make_var(const std::string& name) {
  require(!name.empty(), "Var needs a name");
  auto n = node(ExprKind::Var, DType::I64);
  n->name = name;
  return n;
}

Expr make_dim(const ir::DimExpr& dim) {
  if (auto c = dim.as_constant()) return make_int(*c);
  auto n = node(ExprKind::Dim, DType::I64);
  n->dim = dim;
  return n;
}

Expr make_load(const std::string& buffer, DType dtype, Expr index, std::vector<Expr> multi) {
  require(!buffer.empty(), "Load needs a buffer");
  require(index && index->dtype == DType::I64, "Load index must be i64");
  for (const auto& i : multi) require(i && i->dtype == DType::I64, "Load multi-index must be i64");
  auto n = node(ExprKind::Load, dtype);
  n->name = buffer;
  n->args = {std::move(index)};
  for (auto& i : multi) n->args.push_back(std::move(i));
  return n;
}

Expr substitute(const Expr& e, const std::map<std::string, Expr>& vars) {
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Dim: return e;
    case ExprKind::Var: {
      auto it = vars.find(e->name);
      return it == vars.end() ? e : it->second;
    }
    default: break;
  }
  std::vector<Expr> a;
  bool changed = false;
  for (const auto& x : e->args) {
    a.push_back(substitute(x, vars));
    changed = changed || a.back() != x;
  }
  return changed ? rebuild(e, std::move(a)) : e;
}

Expr rebuild(const Expr& e, std::vector<Expr> a) {
  OLLIE_CHECK(a.size() == e->args.size(), "rebuild: operand count differs");
  switch (e->kind) {
    case ExprKind::Load: {
      Expr flat = a[0];
      a.erase(a.begin());
      return make_load(e->name, e->dtype, flat, a);
    }
    case ExprKind::Unary:
      return e->op == OpKind::PowI ? make_powi(a[0], e->int_value) : make_unary(e->op, a[0]);
    case ExprKind::Binary: return make_binary(e->op, a[0], a[1]);
    case ExprKind::Select:
      return is_guarded_select(e) ? make_guarded_select(a[0], a[1], a[2])
                                  : make_select(a[0], a[1], a[2]);
    case ExprKind::Cast: return make_cast(e->dtype, a[0]);
    case ExprKind::Call: return make_call(e->name, a);
    default: return e;
  }
}

bool equal(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->dtype != b->dtype || a->args.size() != b->args.size()) return false;
  switch (a->kind) {
    case ExprKind::IntImm: return a->int_value == b->int_value;
    case ExprKind::FloatImm:
      return a->float_value == b->float_value ||
             (std::isnan(a->float_value) && std::isnan(b->float_value));
    case ExprKind::Var: return a->name == b->name;
    case ExprKind::Dim: return a->dim == b->dim;
    default: break;
  }
  if (a->name != b->name || a->op != b->op || a->int_value != b->int_value) return false;
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!equal(a->args[i], b->args[i])) return false;
  return true;
}

void collect_loads(const Expr& e, const std::string& buffer, std::vector<Expr>& out) {
  for_each_load(e, [&](const Expr& load) {
    if (load->name == buffer) out.push_back(load);
  });
}

void collect_vars(const Expr& e, std::set<std::string>& out) {
  for_each_expr(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var) out.insert(x->name);
  });
}

bool mentions(const Expr& e, const std::string& var) {
  if (e->kind == ExprKind::Var) return e->name == var;
  for (const auto& x : e->args)
    if (mentions(x, var)) return true;
  return false;
}

Expr make_unary(OpKind op, Expr a) {
  require(a != nullptr, "Unary needs an operand");
  switch (op) {
    case OpKind::Neg:
    case OpKind::Abs: require(a->dtype != DType::Bool, "Neg/Abs of a bool"); break;
    case OpKind::Not: require(a->dtype == DType::Bool, "Not needs a bool operand"); break;
    default: require(false, std::string("not a unary op: ") + ir::op_name(op));
  }
  auto n = node(ExprKind::Unary, a->dtype);
  n->op = op;
  n->args = {std::move(a)};
  return n;
}

Expr make_powi(Expr a, int64_t exponent) {
  require(a && a->dtype != DType::Bool, "PowI needs a numeric operand");
  auto n = node(ExprKind::Unary, a->dtype);
  n->op = OpKind::PowI;
  n->int_value = exponent;
  n->args = {std::move(a)};
  return n;
}

Expr make_binary(OpKind op, Expr a, Expr b) {
  require(a && b, "Binary needs two operands");
  require(a->dtype == b->dtype, std::string("Binary ") + ir::op_name(op) +
                                    " operands differ in dtype: " + ir::dtype_name(a->dtype) +
                                    " vs " + ir::dtype_name(b->dtype));
  DType out = a->dtype;
  if (ir::is_comparison(op)) {
    out = DType::Bool;
  } else if (op == OpKind::And || op == OpKind::Or) {
    require(a->dtype == DType::Bool, "And/Or need bool operands");
  } else {
    switch (op) {
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Max:
      case OpKind::Min:
      case OpKind::FloorDiv:
      case OpKind::Mod:
        require(a->dtype != DType::Bool, std::string(ir::op_name(op)) + " of bools");
        break;
      default: require(false, std::string("not a binary op: ") + ir::op_name(op));
    }
  }
  // Fold index arithmetic so flat indices stay readable (i64 only: exact).
  if (out == DType::I64) {
    auto ca = int_const(a), cb = int_const(b);
    if (ca && cb) {
      switch (op) {
        case OpKind::Add: return make_int(*ca + *cb);
        case OpKind::Sub: return make_int(*ca - *cb);
        case OpKind::Mul: return make_int(*ca * *cb);
        default: break;
      }
    }
    if (op == OpKind::Add && ca == 0) return b;
    if ((op == OpKind::Add || op == OpKind::Sub) && cb == 0) return a;
    if (op == OpKind::Mul && (ca == 0 || cb == 0)) return make_int(0);
    if (op == OpKind::Mul && ca == 1) return b;
    if ((op == OpKind::Mul || op == OpKind::FloorDiv || op == OpKind::Div) && cb == 1) return a;
    if (op == OpKind::Div && ca && cb && *ca >= 0 && *cb > 0) return make_int(*ca / *cb);
    if (op == OpKind::Mod && cb == 1) return make_int(0);
  }
  auto n = node(ExprKind::Binary, out);
  n->op = op;
  n->args = {std::move(a), std::move(b)};
  return n;
}

namespace {
Expr select_node(Expr cond, Expr a, Expr b, bool guarded) {
  require(cond && a && b, "Select needs three operands");
  require(cond->dtype == DType::Bool, "Select condition must be bool");
  require(a->dtype == b->dtype, "Select branches differ in dtype");
  auto n = node(ExprKind::Select, a->dtype);
  n->args = {std::move(cond), std::move(a), std::move(b)};
  n->int_value = guarded ? 1 : 0;
  return n;
}
}  // namespace

Expr make_select(Expr cond, Expr a, Expr b) {
  return select_node(std::move(cond), std::move(a), std::move(b), false);
}

Expr make_guarded_select(Expr cond, Expr a, Expr b) {
  return select_node(std::move(cond), std::move(a), std::move(b), true);
}

bool is_guarded_select(const Expr& e) { return e->kind == ExprKind::Select && e->int_value == 1; }

Expr make_cast(DType to, Expr a) {
  require(a != nullptr, "Cast needs an operand");
  if (a->dtype == to) return a;
  if (a->kind == ExprKind::IntImm && is_int(to)) return make_int(a->int_value, to);
  auto n = node(ExprKind::Cast, to);
  n->args = {std::move(a)};
  return n;
}

Expr make_call(const std::string& fn, std::vector<Expr> args) {
  static const std::vector<std::string> unary = {"exp", "exp2", "log",   "sqrt", "tanh",  "erf",
                                                 "sin", "cos",  "floor", "ceil", "trunc", "rint"};
  bool known_unary = false;
  for (const auto& u : unary) known_unary = known_unary || u == fn;
  // online / online2 (score, x): the step of an exp-weighted contraction stage, only in a
  // stage's value; realize turns it into the running update, so it is never emitted.
  const bool two = fn == "pow" || fn == "online" || fn == "online2";
  require(known_unary || two, "unknown call " + fn);
  require(args.size() == (two ? 2u : 1u), fn + ": wrong number of arguments");
  for (const auto& a : args) require(a && ir::is_float(a->dtype), fn + " needs float arguments");
  if (args.size() == 2) require(args[0]->dtype == args[1]->dtype, fn + " operands differ in dtype");
  auto n = node(ExprKind::Call, args[0]->dtype);
  n->name = fn;
  n->args = std::move(args);
  return n;
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
  }
  return "?";
}

Stmt make_for(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body,
              bool reduction) {
  require(!var.empty() && body, "For needs a var and a body");
  require(min && min->dtype == DType::I64 && extent && extent->dtype == DType::I64,
          "For bounds must be i64");
  require(!(reduction && kind == ForKind::Parallel), "a reduction loop cannot be parallel: " + var);
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::For;
  n->name = var;
  n->min = std::move(min);
  n->extent = std::move(extent);
  n->for_kind = kind;
  n->reduction = reduction;
  n->body = {std::move(body)};
  return n;
}

Stmt make_block(std::vector<Stmt> stmts) {
  for (const auto& s : stmts) require(s != nullptr, "Block with a null stmt");
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::Block;
  n->body = std::move(stmts);
  return n;
}

Stmt make_store(const std::string& buffer, Expr index, Expr value) {
  require(!buffer.empty() && value, "Store needs a buffer and a value");
  require(index && index->dtype == DType::I64, "Store index must be i64");
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::Store;
  n->name = buffer;
  n->index = std::move(index);
  n->value = std::move(value);
  n->dtype = n->value->dtype;
  return n;
}

Stmt make_allocate(const std::string& buffer, DType dtype, Expr size, Stmt body) {
  require(!buffer.empty() && body, "Allocate needs a buffer and a body");
  require(size && size->dtype == DType::I64, "Allocate size must be i64");
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::Allocate;
  n->name = buffer;
  n->dtype = dtype;
  n->size = std::move(size);
  n->body = {std::move(body)};
  return n;
}

Stmt make_if(Expr cond, Stmt then_body, Stmt else_body) {
  require(cond && cond->dtype == DType::Bool, "If condition must be bool");
  require(then_body && else_body, "If needs both branches");
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::If;
  n->cond = std::move(cond);
  n->body = {std::move(then_body), std::move(else_body)};
  return n;
}

Stmt make_call_stmt(const std::string& fn, std::vector<Expr> args) {
  require(!fn.empty(), "Call needs a function");
  for (const auto& a : args) require(a != nullptr, "Call with a null argument");
  auto n = std::make_shared<StmtNode>();
  n->kind = StmtKind::Call;
  n->name = fn;
  n->args = std::move(args);
  return n;
}

std::string to_text(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm:
      if (e->dtype == DType::I64) return std::to_string(e->int_value);
      return std::string(ir::dtype_name(e->dtype)) + "(" + std::to_string(e->int_value) + ")";
    case ExprKind::FloatImm:
      return std::string(ir::dtype_name(e->dtype)) + "(" + float_text(e->float_value) + ")";
    case ExprKind::Var: return e->name;
    case ExprKind::Dim: return e->dim.str();
    case ExprKind::Load: return e->name + "[" + to_text(e->args[0]) + "]";
    case ExprKind::Unary:
      if (e->op == OpKind::PowI)
        return "powi(" + to_text(e->args[0]) + ", " + std::to_string(e->int_value) + ")";
      if (e->op == OpKind::Neg) return "-" + to_text(e->args[0]);
      if (e->op == OpKind::Not) return "!" + to_text(e->args[0]);
      return "abs(" + to_text(e->args[0]) + ")";
    case ExprKind::Binary:
      if (const char* sym = binary_symbol(e->op))
        return "(" + to_text(e->args[0]) + " " + sym + " " + to_text(e->args[1]) + ")";
      return std::string(ir::op_name(e->op)) + "(" + to_text(e->args[0]) + ", " +
             to_text(e->args[1]) + ")";
    case ExprKind::Select:
      return "select(" + to_text(e->args[0]) + ", " + to_text(e->args[1]) + ", " +
             to_text(e->args[2]) + ")";
    case ExprKind::Cast:
      return std::string(ir::dtype_name(e->dtype)) + "(" + to_text(e->args[0]) + ")";
    case ExprKind::Call: {
      std::string s = e->name + "(";
      for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + to_text(e->args[i]);
      return s + ")";
    }
  }
  return "?";
}

std::string to_text(const Stmt& s, int indent) {
  const std::string pad(static_cast<size_t>(indent) * 2, ' ');
  std::ostringstream out;
  switch (s->kind) {
    case StmtKind::For:
      out << pad
          << (s->for_kind == ForKind::Serial ? "" : std::string(for_kind_name(s->for_kind)) + " ")
          << "for " << s->name << " in [" << to_text(s->min) << ", " << to_text(s->extent) << ")"
          << (s->reduction ? " reduce" : "") << ":\n"
          << to_text(s->body[0], indent + 1);
      break;
    case StmtKind::Block:
      for (const auto& b : s->body) out << to_text(b, indent);
      break;
    case StmtKind::Store:
      out << pad << s->name << "[" << to_text(s->index) << "] = " << to_text(s->value) << "\n";
      break;
    case StmtKind::Allocate:
      out << pad << "allocate " << s->name << ": " << ir::dtype_name(s->dtype) << "["
          << to_text(s->size) << "]\n"
          << to_text(s->body[0], indent);
      break;
    case StmtKind::If:
      out << pad << "if " << to_text(s->cond) << ":\n"
          << to_text(s->body[0], indent + 1) << pad << "else:\n"
          << to_text(s->body[1], indent + 1);
      break;
    case StmtKind::Call:
      out << pad << "call " << s->name << "(";
      for (size_t i = 0; i < s->args.size(); ++i)
        out << (i ? ", " : "") << (s->args[i]->kind == ExprKind::Load ? "&" : "")
            << to_text(s->args[i]);
      out << ")\n";
      break;
  }
  return out.str();
}

std::string to_text(const Kernel& k) {
  std::ostringstream out;
  out << "kernel " << k.entry << "(";
  for (size_t i = 0; i < k.buffers.size(); ++i) {
    const auto& b = k.buffers[i];
    out << (i ? ", " : "") << (b.role == BufferRole::Input ? "in " : "out ") << b.name << ": "
        << ir::dtype_name(b.dtype) << ir::shape_str(b.shape);
  }
  out << ") dims [";
  for (size_t i = 0; i < k.dims.size(); ++i) out << (i ? ", " : "") << k.dims[i];
  out << "]\n" << to_text(k.body, 1);
  return out.str();
}

}  // namespace ollie::loops
