// Recursive-descent parser for spec files: tokens (lexer.h) to the AST (ast.h). Python
// syntax outside the spec subset is rejected here, at its keyword, with what to write instead.
#include "spec/parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "spec/lexer.h"

namespace ollie::spec {

namespace {

// Recursion depth bound: nested brackets, unary operators, ternaries and `**` chains
// each add a level, so no input can overflow the stack.
constexpr int kMaxDepth = 200;

const char* const kKeywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};

bool is_keyword(const std::string& s) {
  for (const char* k : kKeywords)
    if (s == k) return true;
  return false;
}

const char* const kLoopHint =
    "use vectorized numpy, e.g. np.einsum or broadcasting; a spec describes a whole-tensor computation";
const char* const kComprehensionHint =
    "use np.stack/np.concatenate over explicit items, or vectorize the computation";

struct Rejection {
  const char* keyword;
  const char* message;
  const char* hint;
};

// Python keywords that start a construct outside the spec language.
const Rejection kRejected[] = {
    {"for", "loops are not supported", kLoopHint},
    {"while", "loops are not supported", kLoopHint},
    {"break", "loops are not supported ('break')", kLoopHint},
    {"continue", "loops are not supported ('continue')", kLoopHint},
    {"class", "classes are not supported in a spec", "write the computation as functions at module level"},
    {"lambda", "lambda expressions are not supported", "define a helper function with def at module level and call it"},
    {"with", "'with' statements are not supported", "a spec is straight-line numpy code; remove the with block"},
    {"try", "exception handling ('try') is not supported", "a spec cannot catch errors; remove the try block"},
    {"except", "exception handling ('except') is not supported", "a spec cannot catch errors; remove the try block"},
    {"finally", "exception handling ('finally') is not supported", "a spec cannot catch errors; remove the try block"},
    {"raise", "'raise' is not supported", "state preconditions with assert instead"},
    {"global", "'global' declarations are not supported", "read module-level constants directly and return new values"},
    {"nonlocal", "'nonlocal' declarations are not supported", "pass values as parameters and return new values"},
    {"del", "'del' is not supported", "simply stop using the name"},
    {"yield", "generators ('yield') are not supported", "return the result instead"},
    {"async", "async code is not supported", "write a plain def and call functions directly"},
    {"await", "'await' is not supported", "call functions directly; a spec is synchronous numpy code"},
};

const Rejection* rejection_for(const Token& t) {
  if (t.kind != TokenKind::Name) return nullptr;
  for (const Rejection& r : kRejected)
    if (t.text == r.keyword) return &r;
  return nullptr;
}

std::shared_ptr<Expr> make(ExprKind kind, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

std::shared_ptr<Stmt> make_stmt(StmtKind kind, SourceLoc loc) {
  auto s = std::make_shared<Stmt>();
  s->kind = kind;
  s->loc = loc;
  return s;
}

class Parser {
 public:
  Parser(const std::string& file, const std::string& source, std::vector<Token> tokens)
      : file_(file), src_(source), toks_(std::move(tokens)) {}

  std::vector<StmtPtr> parse_module_body() {
    std::vector<StmtPtr> body;
    while (!at(TokenKind::End)) {
      if (at(TokenKind::Newline)) {
        take();
        continue;
      }
      parse_statement(body, false);
    }
    return body;
  }

 private:
  // ---- token access --------------------------------------------------------------

  const Token& tok() const { return toks_[pos_]; }
  const Token& peek(size_t n) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool at(TokenKind k) const { return tok().kind == k; }
  static bool is_op(const Token& t, const char* s) { return t.kind == TokenKind::Op && t.text == s; }
  static bool is_kw(const Token& t, const char* s) { return t.kind == TokenKind::Name && t.text == s; }
  bool at_op(const char* s) const { return is_op(tok(), s); }
  bool at_kw(const char* s) const { return is_kw(tok(), s); }
  // Never moves past End, so a loop that keeps taking cannot run off the vector.
  const Token& take() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }

  [[noreturn]] void fail(SourceLoc at, const std::string& message, const std::string& hint = "") const {
    throw SpecError(file_, src_, at, message, hint);
  }

  [[noreturn]] void reject(const Rejection& r, SourceLoc at) const { fail(at, r.message, r.hint); }

  // "expected X, found Y", or a more specific message when Y is a known construct.
  [[noreturn]] void unexpected(const std::string& expected) const {
    const Token& t = tok();
    if (is_op(t, ":="))
      fail(t.loc, "assignment expressions (:=) are not supported", "assign on a separate line: name = value");
    if (const Rejection* r = rejection_for(t)) reject(*r, t.loc);
    if (t.kind == TokenKind::Indent)
      fail(t.loc, "unexpected indent", "indent only the body of a def; statements of one block start in the same column");
    if (t.kind == TokenKind::End) fail(t.loc, "unexpected end of file, expected " + expected);
    fail(t.loc, "expected " + expected + ", found " + describe(t));
  }

  // After an item of a bracketed list: takes a ',' or stops before `close`.
  void item_separator(const char* close, const std::string& what) {
    if (at_op(",")) take();
    else if (!at_op(close)) unexpected(what);
  }

  bool accept_op(const char* s) {
    if (!at_op(s)) return false;
    take();
    return true;
  }

  void expect_op(const char* s, const std::string& what) {
    if (!at_op(s)) unexpected(what);
    take();
  }

  const Token& expect_name(const std::string& what) {
    if (!at(TokenKind::Name) || is_keyword(tok().text)) unexpected(what);
    return take();
  }

  void check_comprehension(const char* kind) const {
    if (at_kw("for") || at_kw("async"))
      fail(tok().loc, std::string(kind) + " are not supported", kComprehensionHint);
  }

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, SourceLoc at) : p(parser) {
      if (p.depth_ >= kMaxDepth)
        p.fail(at, "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)",
               "split the expression into several assignments");
      ++p.depth_;
    }
    ~DepthGuard() { --p.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
  };

  // ---- statements ----------------------------------------------------------------

  void parse_statement(std::vector<StmtPtr>& body, bool in_function) {
    const Token& t = tok();
    if (t.kind == TokenKind::Indent) unexpected("a statement");
    check_compound_start(t, in_function);
    if (is_kw(t, "def")) {
      body.push_back(parse_def());
      return;
    }
    if (is_kw(t, "if")) {
      if (!is_main_guard())
        fail(t.loc, "module-level 'if' is not supported",
             "a spec is straight-line code; only an `if __name__ == \"__main__\":` block is allowed (and ignored)");
      skip_clause();
      while (at_kw("elif") || at_kw("else")) skip_clause();
      return;
    }
    if (is_kw(t, "elif") || is_kw(t, "else"))
      fail(t.loc, "'" + t.text + "' without a matching 'if'", "remove it; a spec has no if statements");
    parse_simple_line(body, in_function);
  }

  // Rejects decorators, nested defs and `if` in functions, wherever they appear.
  void check_compound_start(const Token& t, bool in_function) const {
    if (is_op(t, "@"))
      fail(t.loc, "decorators are not supported", "remove the decorator line; spec functions are plain functions");
    if (in_function && is_kw(t, "def"))
      fail(t.loc, "nested function definitions are not supported", "define helpers at module level");
    if (in_function && is_kw(t, "if"))
      fail(t.loc, "data-dependent control flow is not supported", "use np.where(cond, a, b)");
  }

  // `if __name__ == "__main__":` in either operand order, with either quotes.
  bool is_main_guard() const {
    auto is_name = [](const Token& t) { return t.kind == TokenKind::Name && t.text == "__name__"; };
    auto is_main = [](const Token& t) {
      return t.kind == TokenKind::String && !t.is_bytes && !t.is_fstring && t.text == "__main__";
    };
    const Token &a = peek(1), &op = peek(2), &b = peek(3);
    return is_op(op, "==") && is_op(peek(4), ":") && ((is_name(a) && is_main(b)) || (is_main(a) && is_name(b)));
  }

  // Skips a clause header through its NEWLINE, then its indented block if any, without
  // parsing: the `__main__` block may hold any Python. The lexer balances INDENT/DEDENT.
  void skip_clause() {
    while (!at(TokenKind::Newline) && !at(TokenKind::End)) take();
    if (at(TokenKind::Newline)) take();
    if (!at(TokenKind::Indent)) return;
    take();
    int depth = 1;
    while (depth > 0 && !at(TokenKind::End)) {
      const Token& t = take();
      if (t.kind == TokenKind::Indent) ++depth;
      if (t.kind == TokenKind::Dedent) --depth;
    }
  }

  void parse_simple_line(std::vector<StmtPtr>& body, bool in_function) {
    while (true) {
      body.push_back(parse_simple(in_function));
      if (!accept_op(";")) break;
      if (at(TokenKind::Newline)) break;
    }
    if (!at(TokenKind::Newline)) {
      if (tok().kind == TokenKind::Name && !is_keyword(tok().text) && !at(TokenKind::End))
        unexpected("end of line (is an operator or ',' missing?)");
      unexpected("end of line");
    }
    take();
  }

  StmtPtr parse_simple(bool in_function) {
    const Token& t = tok();
    SourceLoc loc = t.loc;
    if (const Rejection* r = rejection_for(t)) reject(*r, loc);
    check_compound_start(t, in_function);
    if (is_kw(t, "def") || is_kw(t, "if"))
      fail(loc, "'" + t.text + "' must start its own line", "put it on a new line");
    if (is_kw(t, "pass")) {
      take();
      return make_stmt(StmtKind::Pass, loc);
    }
    if (is_kw(t, "return")) {
      if (!in_function) fail(loc, "'return' outside a function", "return values from inside a def");
      take();
      auto s = make_stmt(StmtKind::Return, loc);
      if (!at(TokenKind::Newline) && !at_op(";")) s->value = parse_star_expressions();
      return s;
    }
    if (is_kw(t, "assert")) {
      take();
      auto s = make_stmt(StmtKind::Assert, loc);
      s->value = parse_expression();
      if (accept_op(",")) s->message = parse_expression();
      return s;
    }
    if (is_kw(t, "import")) return parse_import();
    if (is_kw(t, "from")) return parse_from();
    return parse_expr_statement();
  }

  std::string parse_dotted_name(const std::string& what) {
    std::string name = expect_name(what).text;
    while (accept_op(".")) {
      name += "." + expect_name("a name after '.'").text;
    }
    return name;
  }

  std::string parse_as_name() {
    if (!at_kw("as")) return "";
    take();
    return expect_name("a name after 'as'").text;
  }

  StmtPtr parse_import() {
    auto s = make_stmt(StmtKind::Import, take().loc);
    while (true) {
      std::string name = parse_dotted_name("a module name");
      s->names.emplace_back(name, parse_as_name());
      if (!accept_op(",")) break;
    }
    return s;
  }

  StmtPtr parse_from() {
    auto s = make_stmt(StmtKind::ImportFrom, take().loc);
    while (at_op(".") || at_op("...")) s->module += take().text;
    if (s->module.empty() || !at_kw("import")) s->module += parse_dotted_name("a module name");
    if (!at_kw("import")) unexpected("'import'");
    take();
    if (at_op("*"))
      fail(tok().loc, "star imports are not supported", "import the names you use explicitly");
    bool paren = accept_op("(");
    while (true) {
      std::string name = expect_name("a name to import").text;
      s->names.emplace_back(name, parse_as_name());
      if (!accept_op(",")) break;
      if (paren && at_op(")")) break;
    }
    if (paren) expect_op(")", "')'");
    return s;
  }

  static bool is_aug_assign(const Token& t) {
    static const char* const ops[] = {"+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", "<<=", ">>=", "**="};
    if (t.kind != TokenKind::Op) return false;
    for (const char* op : ops)
      if (t.text == op) return true;
    return false;
  }

  StmtPtr parse_expr_statement() {
    SourceLoc loc = tok().loc;
    ExprPtr first = parse_star_expressions();
    if (at_op(":")) {
      check_single_target(first, "annotated");
      take();
      auto s = make_stmt(StmtKind::AnnAssign, loc);
      s->targets.push_back(first);
      s->annotation = parse_expression();
      if (accept_op("=")) s->value = parse_star_expressions();
      return s;
    }
    if (is_aug_assign(tok())) {
      check_single_target(first, "augmented");
      auto s = make_stmt(StmtKind::AugAssign, loc);
      std::string op = take().text;
      op.pop_back();
      s->op = op;
      s->targets.push_back(first);
      s->value = parse_star_expressions();
      return s;
    }
    if (!at_op("=")) {
      auto s = make_stmt(StmtKind::Expr, loc);
      s->value = first;
      return s;
    }
    auto s = make_stmt(StmtKind::Assign, loc);
    s->targets.push_back(first);
    while (accept_op("=")) {
      s->targets.push_back(parse_star_expressions());
    }
    s->value = s->targets.back();
    s->targets.pop_back();
    for (const ExprPtr& target : s->targets) check_target(target);
    return s;
  }

  void check_single_target(const ExprPtr& e, const char* what) const {
    if (e->kind == ExprKind::Name || e->kind == ExprKind::Attribute || e->kind == ExprKind::Subscript) return;
    fail(e->loc, std::string("only a single name, attribute or subscript can be the target of an ") + what +
                     " assignment",
         "assign to one name, e.g. `y = ...`");
  }

  void check_target(const ExprPtr& e) const {
    switch (e->kind) {
      case ExprKind::Name:
      case ExprKind::Attribute:
      case ExprKind::Subscript:
        return;
      case ExprKind::Tuple:
      case ExprKind::List:
        for (const ExprPtr& item : e->items) check_target(item);  // depth bounded by parsing
        return;
      case ExprKind::Starred:
        fail(e->loc, "starred assignment targets (*rest) are not supported",
             "unpack into exactly as many names as there are values: a, b, c = ...");
      case ExprKind::Call:
        fail(e->loc, "cannot assign to a function call", "the left side of '=' must be a name or a tuple of names");
      default:
        fail(e->loc, "cannot assign to this expression", "the left side of '=' must be a name or a tuple of names");
    }
  }

  StmtPtr parse_def() {
    SourceLoc def_loc = take().loc;
    auto fn = std::make_shared<FunctionDef>();
    fn->loc = def_loc;
    const Token& name = expect_name("a function name");
    fn->name = name.text;
    fn->name_loc = name.loc;
    expect_op("(", "'(' after the function name");
    parse_params(*fn);
    if (accept_op("->")) fn->returns = parse_expression();
    expect_op(":", "':' after the function signature");
    parse_block(fn->body);
    auto s = make_stmt(StmtKind::Def, def_loc);
    s->function = std::move(fn);
    return s;
  }

  void parse_params(FunctionDef& fn) {
    bool keyword_only = false, seen_default = false;
    while (!at_op(")")) {
      SourceLoc loc = tok().loc;
      if (at_op("*")) {
        take();
        if (at(TokenKind::Name))
          fail(loc, "*args parameters are not supported", "list the parameters explicitly");
        if (keyword_only) fail(loc, "'*' may appear only once in a parameter list", "remove the second '*'");
        if (!at_op(",")) fail(loc, "a bare '*' must be followed by keyword-only parameters", "add a parameter after '*,' or remove the '*'");
        keyword_only = true;
      } else if (at_op("**")) {
        fail(loc, "**kwargs parameters are not supported", "list the keyword parameters explicitly");
      } else if (at_op("/")) {
        fail(loc, "positional-only parameters ('/') are not supported", "remove the '/'");
      } else {
        Param p;
        const Token& name = expect_name("a parameter name");
        p.name = name.text;
        p.loc = name.loc;
        p.keyword_only = keyword_only;
        for (const Param& other : fn.params)
          if (other.name == p.name)
            fail(p.loc, "duplicate parameter '" + p.name + "'", "give each parameter a different name");
        if (accept_op(":")) p.annotation = parse_expression();
        if (at_op("=")) {
          take();
          p.default_value = parse_expression();
          seen_default = true;
        } else if (seen_default && !keyword_only) {
          fail(p.loc, "parameter without a default follows a parameter with a default",
               "give '" + p.name + "' a default, or move it before the defaulted parameters");
        }
        fn.params.push_back(std::move(p));
      }
      item_separator(")", "',' or ')'");
    }
    if (keyword_only && (fn.params.empty() || !fn.params.back().keyword_only))
      fail(tok().loc, "a bare '*' must be followed by keyword-only parameters", "add a parameter after '*,' or remove the '*'");
    take();
  }

  void parse_block(std::vector<StmtPtr>& body) {
    if (!at(TokenKind::Newline)) {
      parse_simple_line(body, true);
      return;
    }
    take();
    if (!at(TokenKind::Indent)) unexpected("an indented block after the def");
    take();
    while (!at(TokenKind::Dedent) && !at(TokenKind::End)) {
      if (at(TokenKind::Newline)) {
        take();
        continue;
      }
      parse_statement(body, true);
    }
    take();
  }

  // ---- expressions ---------------------------------------------------------------

  bool starts_expression() const {
    const Token& t = tok();
    switch (t.kind) {
      case TokenKind::Name:
        return !is_keyword(t.text) || t.text == "True" || t.text == "False" || t.text == "None" ||
               t.text == "not" || t.text == "lambda" || t.text == "await" || t.text == "yield";
      case TokenKind::Number:
      case TokenKind::String:
        return true;
      case TokenKind::Op:
        for (const char* s : {"(", "[", "{", "-", "+", "~", "...", "*"})
          if (t.text == s) return true;
        return false;
      default:
        return false;
    }
  }

  // `a, *b, c` without brackets: assignment sides and return values.
  ExprPtr parse_star_expressions() {
    ExprPtr first = parse_star_or_expression();
    if (!at_op(",")) return first;
    auto tuple = make(ExprKind::Tuple, first->loc);
    tuple->items.push_back(first);
    while (accept_op(",")) {
      if (!starts_expression()) break;
      tuple->items.push_back(parse_star_or_expression());
    }
    return tuple;
  }

  ExprPtr parse_star_or_expression() {
    if (!at_op("*")) return parse_expression();
    SourceLoc loc = take().loc;
    DepthGuard guard(*this, loc);
    auto e = make(ExprKind::Starred, loc);
    e->value = parse_bitor();
    return e;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this, tok().loc);
    if (const Rejection* r = rejection_for(tok())) reject(*r, tok().loc);
    ExprPtr body = parse_disjunction();
    if (!at_kw("if")) return body;
    take();
    auto e = make(ExprKind::IfExp, body->loc);
    e->items.push_back(body);
    e->items.push_back(parse_disjunction());
    if (!at_kw("else")) unexpected("'else' in a conditional expression");
    take();
    e->items.push_back(parse_expression());
    return e;
  }

  ExprPtr parse_bool_op(const char* op, ExprPtr (Parser::*operand)()) {
    ExprPtr first = (this->*operand)();
    if (!at_kw(op)) return first;
    auto e = make(ExprKind::BoolOp, first->loc);
    e->op = op;
    e->items.push_back(first);
    while (at_kw(op)) {
      take();
      e->items.push_back((this->*operand)());
    }
    return e;
  }

  ExprPtr parse_disjunction() { return parse_bool_op("or", &Parser::parse_conjunction); }
  ExprPtr parse_conjunction() { return parse_bool_op("and", &Parser::parse_inversion); }

  ExprPtr parse_inversion() {
    if (!at_kw("not")) return parse_comparison();
    SourceLoc loc = take().loc;
    DepthGuard guard(*this, loc);
    auto e = make(ExprKind::Unary, loc);
    e->op = "not";
    e->op_loc = loc;
    e->value = parse_inversion();
    return e;
  }

  // The comparison operator at the cursor ("" if none); `width` is its token count.
  std::string comparison_op(int& width) const {
    const Token& t = tok();
    width = 1;
    if (t.kind == TokenKind::Op)
      for (const char* s : {"<", "<=", ">", ">=", "==", "!="})
        if (t.text == s) return s;
    if (is_kw(t, "in")) return "in";
    if (is_kw(t, "not") && is_kw(peek(1), "in")) {
      width = 2;
      return "not in";
    }
    if (is_kw(t, "is")) {
      if (is_kw(peek(1), "not")) {
        width = 2;
        return "is not";
      }
      return "is";
    }
    return "";
  }

  ExprPtr parse_comparison() {
    ExprPtr first = parse_bitor();
    int width = 0;
    std::string op = comparison_op(width);
    if (op.empty()) return first;
    auto e = make(ExprKind::Compare, first->loc);
    e->items.push_back(first);
    while (!op.empty()) {
      for (int i = 0; i < width; ++i) take();
      e->ops.push_back(op);
      e->items.push_back(parse_bitor());
      op = comparison_op(width);
    }
    return e;
  }

  // Left-associative binary levels, loosest first; level 6 is the unary/power level.
  static constexpr int kFactorLevel = 6;
  static bool level_has(int level, const std::string& op) {
    static const std::vector<std::vector<std::string>> levels = {
        {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"}};
    const auto& ops = levels[static_cast<size_t>(level)];
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  }

  ExprPtr parse_binary(int level) {
    if (level == kFactorLevel) return parse_factor();
    ExprPtr lhs = parse_binary(level + 1);
    while (at(TokenKind::Op) && level_has(level, tok().text)) {
      const Token& op = take();
      auto e = make(ExprKind::Binary, lhs->loc);
      e->op = op.text;
      e->op_loc = op.loc;
      e->lhs = lhs;
      e->rhs = parse_binary(level + 1);
      lhs = e;
    }
    return lhs;
  }

  ExprPtr parse_bitor() { return parse_binary(0); }

  ExprPtr parse_factor() {
    if (!at_op("-") && !at_op("+") && !at_op("~")) return parse_power();
    const Token& op = take();
    DepthGuard guard(*this, op.loc);
    auto e = make(ExprKind::Unary, op.loc);
    e->op = op.text;
    e->op_loc = op.loc;
    e->value = parse_factor();
    return e;
  }

  ExprPtr parse_power() {
    ExprPtr base = parse_primary();
    if (!at_op("**")) return base;
    const Token& op = take();
    DepthGuard guard(*this, op.loc);
    auto e = make(ExprKind::Binary, base->loc);
    e->op = "**";
    e->op_loc = op.loc;
    e->lhs = base;
    e->rhs = parse_factor();  // right-associative, and 2**-1 is allowed
    return e;
  }

  ExprPtr parse_primary() {
    ExprPtr e = parse_atom();
    while (true) {
      if (at_op(".")) {
        take();
        auto a = make(ExprKind::Attribute, e->loc);
        a->value = e;
        a->name = expect_name("an attribute name after '.'").text;
        e = a;
      } else if (at_op("(")) {
        e = parse_call(e);
      } else if (at_op("[")) {
        e = parse_subscript(e);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_call(const ExprPtr& callee) {
    take();
    auto call = make(ExprKind::Call, callee->loc);
    call->value = callee;
    while (!at_op(")")) {
      SourceLoc loc = tok().loc;
      if (at_op("*")) {
        take();
        auto star = make(ExprKind::Starred, loc);
        star->value = parse_expression();
        call->items.push_back(star);
      } else if (at_op("**")) {
        take();
        call->keywords.push_back({"", parse_expression(), loc});
      } else if (at(TokenKind::Name) && !is_keyword(tok().text) && is_op(peek(1), "=")) {
        std::string name = take().text;
        take();
        for (const Keyword& k : call->keywords)
          if (k.name == name) fail(loc, "keyword argument '" + name + "' repeated", "pass each keyword once");
        call->keywords.push_back({name, parse_expression(), loc});
      } else {
        ExprPtr arg = parse_expression();
        check_comprehension("generator expressions");
        if (!call->keywords.empty())
          fail(arg->loc, "positional argument follows keyword argument",
               "put positional arguments before keyword arguments");
        call->items.push_back(arg);
      }
      item_separator(")", "',' or ')' in the argument list");
    }
    take();
    return call;
  }

  ExprPtr parse_subscript(const ExprPtr& base) {
    take();
    auto sub = make(ExprKind::Subscript, base->loc);
    sub->value = base;
    if (at_op("]")) unexpected("an index");
    while (!at_op("]")) {
      sub->items.push_back(parse_slice_item());
      item_separator("]", "',' or ']' in the index");
    }
    take();
    return sub;
  }

  ExprPtr parse_slice_item() {
    SourceLoc loc = tok().loc;
    ExprPtr lower;
    if (!at_op(":")) {
      lower = parse_star_or_expression();
      if (!at_op(":")) return lower;
    }
    take();
    auto slice = make(ExprKind::Slice, loc);
    slice->lower = lower;
    if (!at_op(":") && !at_op(",") && !at_op("]")) slice->upper = parse_expression();
    if (accept_op(":") && !at_op(",") && !at_op("]")) slice->step = parse_expression();
    return slice;
  }

  ExprPtr parse_atom() {
    const Token& t = tok();
    SourceLoc loc = t.loc;
    switch (t.kind) {
      case TokenKind::Name: {
        if (const Rejection* r = rejection_for(t)) reject(*r, loc);
        if (t.text == "True" || t.text == "False") {
          auto e = make(ExprKind::Bool, loc);
          e->bool_value = t.text == "True";
          take();
          return e;
        }
        if (t.text == "None") {
          take();
          return make(ExprKind::None, loc);
        }
        if (is_keyword(t.text)) unexpected("an expression");
        auto e = make(ExprKind::Name, loc);
        e->name = take().text;
        return e;
      }
      case TokenKind::Number: {
        if (t.is_imaginary)
          fail(loc, "complex (imaginary) literals are not supported in a spec", "use real numbers only");
        if (t.too_large)
          fail(loc, "integer literal too large", "integers must fit in 64 bits; write a float such as 1e30 if you need a big constant");
        auto e = make(t.is_float ? ExprKind::Float : ExprKind::Int, loc);
        e->int_value = t.int_value;
        e->float_value = t.float_value;
        take();
        return e;
      }
      case TokenKind::String: {
        auto e = make(ExprKind::String, loc);
        while (at(TokenKind::String)) {
          const Token& s = take();
          if (s.is_fstring)
            fail(s.loc, "f-strings are not supported in a spec", "use a plain string literal");
          if (s.is_bytes)
            fail(s.loc, "bytes literals are not supported in a spec", "use a plain string literal");
          e->text += s.text;
        }
        return e;
      }
      case TokenKind::Op:
        if (t.text == "...") {
          take();
          return make(ExprKind::Ellipsis, loc);
        }
        if (t.text == "(") return parse_paren();
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    unexpected("an expression");
  }

  ExprPtr parse_paren() {
    SourceLoc loc = take().loc;
    if (accept_op(")")) return make(ExprKind::Tuple, loc);
    ExprPtr first = parse_star_or_expression();
    check_comprehension("generator expressions");
    if (at_op(")")) {
      if (first->kind == ExprKind::Starred)
        fail(first->loc, "a starred expression cannot stand alone in parentheses", "add a comma to make a tuple: (*a,)");
      take();
      return first;  // parentheses only group
    }
    auto tuple = make(ExprKind::Tuple, loc);
    tuple->items.push_back(first);
    if (!at_op(",")) unexpected("',' or ')'");
    while (accept_op(",")) {
      if (at_op(")")) break;
      tuple->items.push_back(parse_star_or_expression());
    }
    expect_op(")", "',' or ')'");
    return tuple;
  }

  ExprPtr parse_list() {
    SourceLoc loc = take().loc;
    auto list = make(ExprKind::List, loc);
    while (!at_op("]")) {
      list->items.push_back(parse_star_or_expression());
      check_comprehension("list comprehensions");
      item_separator("]", "',' or ']'");
    }
    take();
    return list;
  }

  ExprPtr parse_dict() {
    SourceLoc loc = take().loc;
    auto dict = make(ExprKind::Dict, loc);
    while (!at_op("}")) {
      if (at_op("**"))
        fail(tok().loc, "dict unpacking (**) is not supported", "write the entries out explicitly");
      ExprPtr key = parse_star_or_expression();
      if (!at_op(":")) {
        check_comprehension("set comprehensions");
        fail(key->loc, "set displays are not supported in a spec", "use a list or a tuple");
      }
      take();
      dict->keys.push_back(key);
      dict->items.push_back(parse_expression());
      check_comprehension("dict comprehensions");
      item_separator("}", "',' or '}'");
    }
    take();
    return dict;
  }

  const std::string& file_;
  const std::string& src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Module parse_module(const std::string& file, const std::string& source) {
  Module module;
  module.file = file;
  module.source = source;
  Parser parser(module.file, module.source, tokenize(file, source));
  module.body = parser.parse_module_body();
  return module;
}

}  // namespace ollie::spec
