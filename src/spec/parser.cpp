// Recursive-descent parser for spec files: tokens (lexer.h) to the AST (ast.h), the module
// and its statements; expressions are in parser_expr.cpp. Python syntax outside the spec
// subset is rejected here, at its keyword, with what to write instead.
#include "spec/parser.h"

#include "spec/parser_internal.h"

namespace ollie::spec {

namespace parser_impl {

namespace {

const char* const kKeywords[] = {
    "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
    "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
    "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
    "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};

const char* const kLoopHint =
    "write `for i in range(n):` with a count known from constants or dims (it is unrolled), or "
    "use vectorized numpy";
const char* const kBreakHint =
    "guard the rest of the body with an `if` on Python values, or select with np.where";

// Python keywords that start a construct outside the spec language.
const Rejection kRejected[] = {
    {"for", "loops at module level are not supported",
     "put the loop inside a function, where it is unrolled"},
    {"while", "while loops are not supported", kLoopHint},
    {"break", "'break' is not supported in an unrolled loop", kBreakHint},
    {"continue", "'continue' is not supported in an unrolled loop", kBreakHint},
    {"lambda", "a lambda here must be in parentheses", "write (lambda t: ...)"},
    {"with", "'with' statements are not supported",
     "a spec is straight-line numpy code; remove the with block"},
    {"try", "exception handling ('try') is not supported",
     "a spec cannot catch errors; remove the try block"},
    {"except", "exception handling ('except') is not supported",
     "a spec cannot catch errors; remove the try block"},
    {"finally", "exception handling ('finally') is not supported",
     "a spec cannot catch errors; remove the try block"},
    {"raise", "'raise' is not supported", "state preconditions with assert instead"},
    {"global", "'global' declarations are not supported",
     "read module-level constants directly and return new values"},
    {"nonlocal", "'nonlocal' declarations are not supported",
     "pass values as parameters and return new values"},
    {"del", "'del' is not supported", "simply stop using the name"},
    {"yield", "generators ('yield') are not supported", "return the result instead"},
    {"async", "async code is not supported", "write a plain def and call functions directly"},
    {"await", "'await' is not supported",
     "call functions directly; a spec is synchronous numpy code"},
};

std::shared_ptr<Stmt> make_stmt(StmtKind kind, SourceLoc loc) {
  auto s = std::make_shared<Stmt>();
  s->kind = kind;
  s->loc = loc;
  return s;
}

}  // namespace

bool is_keyword(const std::string& s) {
  for (const char* k : kKeywords)
    if (s == k) return true;
  return false;
}

const Rejection* rejection_for(const Token& t) {
  if (t.kind != TokenKind::Name) return nullptr;
  for (const Rejection& r : kRejected)
    if (t.text == r.keyword) return &r;
  return nullptr;
}

std::vector<StmtPtr> Parser::parse_module_body() {
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

// ---------------------------------------------------------------------------- token helpers

// "expected X, found Y", or a more specific message when Y is a known construct.
void Parser::unexpected(const std::string& expected) const {
  const Token& t = tok();
  if (is_op(t, ":="))
    fail(t.loc, "assignment expressions (:=) are not supported",
         "assign on a separate line: name = value");
  if (const Rejection* r = rejection_for(t)) reject(*r, t.loc);
  if (t.kind == TokenKind::Indent)
    fail(t.loc, "unexpected indent",
         "indent only the body of a def; statements of one block start in the same column");
  if (t.kind == TokenKind::End) fail(t.loc, "unexpected end of file, expected " + expected);
  fail(t.loc, "expected " + expected + ", found " + describe(t));
}

// After an item of a bracketed list: takes a ',' or stops before `close`.
void Parser::item_separator(const char* close, const std::string& what) {
  if (at_op(","))
    take();
  else if (!at_op(close))
    unexpected(what);
}

bool Parser::accept_op(const char* s) {
  if (!at_op(s)) return false;
  take();
  return true;
}

void Parser::expect_op(const char* s, const std::string& what) {
  if (!at_op(s)) unexpected(what);
  take();
}

const Token& Parser::expect_name(const std::string& what) {
  if (!at(TokenKind::Name) || is_keyword(tok().text)) unexpected(what);
  return take();
}

void Parser::check_comprehension(const char* kind) const {
  if (at_kw("for") || at_kw("async"))
    fail(tok().loc, std::string(kind) + " are not supported",
         "use a list comprehension [f(x) for x in xs], or write the items out");
}

// ---------------------------------------------------------------------------- statements

void Parser::parse_statement(std::vector<StmtPtr>& body, bool in_function) {
  const Token& t = tok();
  if (t.kind == TokenKind::Indent) unexpected("a statement");
  check_compound_start(t, in_function);
  if (is_kw(t, "def")) {
    body.push_back(parse_def());
    return;
  }
  if (is_kw(t, "class")) {
    body.push_back(parse_class());
    return;
  }
  if (is_kw(t, "if")) {
    if (in_function) {
      body.push_back(parse_if());
      return;
    }
    if (!is_main_guard())
      fail(t.loc, "module-level 'if' is not supported",
           "a spec is straight-line code; only an `if __name__ == \"__main__\":` block is allowed "
           "(and ignored)");
    skip_clause();
    while (at_kw("elif") || at_kw("else")) skip_clause();
    return;
  }
  if (is_kw(t, "elif") || is_kw(t, "else"))
    fail(t.loc, "'" + t.text + "' without a matching 'if'",
         "put it right after the if block, at the same indentation");
  if (in_function && is_kw(t, "for")) {
    body.push_back(parse_for());
    return;
  }
  parse_simple_line(body, in_function);
}

// Rejects decorators and nested defs, wherever they appear.
void Parser::check_compound_start(const Token& t, bool in_function) const {
  if (is_op(t, "@"))
    fail(t.loc, "decorators are not supported",
         "remove the decorator line; spec functions are plain functions");
  if (in_function && is_kw(t, "def"))
    fail(t.loc, "nested function definitions are not supported", "define helpers at module level");
  if (in_function && is_kw(t, "class"))
    fail(t.loc, "a class inside a function is not supported", "define the class at module level");
}

// `if __name__ == "__main__":` in either operand order, with either quotes.
bool Parser::is_main_guard() const {
  auto is_name = [](const Token& t) { return t.kind == TokenKind::Name && t.text == "__name__"; };
  auto is_main = [](const Token& t) {
    return t.kind == TokenKind::String && !t.is_bytes && !t.is_fstring && t.text == "__main__";
  };
  const Token &a = peek(1), &op = peek(2), &b = peek(3);
  return is_op(op, "==") && is_op(peek(4), ":") &&
         ((is_name(a) && is_main(b)) || (is_main(a) && is_name(b)));
}

// Skips a clause header through its NEWLINE, then its indented block if any, without
// parsing: the `__main__` block may hold any Python. The lexer balances INDENT/DEDENT.
void Parser::skip_clause() {
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

void Parser::parse_simple_line(std::vector<StmtPtr>& body, bool in_function) {
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

StmtPtr Parser::parse_simple(bool in_function) {
  const Token& t = tok();
  SourceLoc loc = t.loc;
  if (const Rejection* r = rejection_for(t)) reject(*r, loc);
  check_compound_start(t, in_function);
  if (is_kw(t, "def") || is_kw(t, "if") || is_kw(t, "class") || (in_function && is_kw(t, "for")))
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

std::string Parser::parse_dotted_name(const std::string& what) {
  std::string name = expect_name(what).text;
  while (accept_op(".")) {
    name += "." + expect_name("a name after '.'").text;
  }
  return name;
}

std::string Parser::parse_as_name() {
  if (!at_kw("as")) return "";
  take();
  return expect_name("a name after 'as'").text;
}

StmtPtr Parser::parse_import() {
  auto s = make_stmt(StmtKind::Import, take().loc);
  while (true) {
    std::string name = parse_dotted_name("a module name");
    s->names.emplace_back(name, parse_as_name());
    if (!accept_op(",")) break;
  }
  return s;
}

StmtPtr Parser::parse_from() {
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

bool Parser::is_aug_assign(const Token& t) {
  static const char* const ops[] = {
      "+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", "<<=", ">>=", "**="};
  if (t.kind != TokenKind::Op) return false;
  for (const char* op : ops)
    if (t.text == op) return true;
  return false;
}

StmtPtr Parser::parse_expr_statement() {
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

void Parser::check_single_target(const ExprPtr& e, const char* what) const {
  if (e->kind == ExprKind::Name || e->kind == ExprKind::Attribute || e->kind == ExprKind::Subscript)
    return;
  fail(e->loc,
       std::string("only a single name, attribute or subscript can be the target of an ") + what +
           " assignment",
       "assign to one name, e.g. `y = ...`");
}

void Parser::check_target(const ExprPtr& e) const {
  switch (e->kind) {
    case ExprKind::Name:
    case ExprKind::Attribute:
    case ExprKind::Subscript: return;
    case ExprKind::Tuple:
    case ExprKind::List:
      for (const ExprPtr& item : e->items) check_target(item);  // depth bounded by parsing
      return;
    case ExprKind::Starred:
      fail(e->loc, "starred assignment targets (*rest) are not supported",
           "unpack into exactly as many names as there are values: a, b, c = ...");
    case ExprKind::Call:
      fail(e->loc, "cannot assign to a function call",
           "the left side of '=' must be a name or a tuple of names");
    default:
      fail(e->loc, "cannot assign to this expression",
           "the left side of '=' must be a name or a tuple of names");
  }
}

StmtPtr Parser::parse_def() {
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
  parse_block(fn->body, "the def");
  auto s = make_stmt(StmtKind::Def, def_loc);
  s->function = std::move(fn);
  return s;
}

void Parser::parse_params(FunctionDef& fn) {
  bool keyword_only = false, seen_default = false;
  while (!at_op(")")) {
    SourceLoc loc = tok().loc;
    if (at_op("*")) {
      take();
      if (at(TokenKind::Name))
        fail(loc, "*args parameters are not supported", "list the parameters explicitly");
      if (keyword_only)
        fail(loc, "'*' may appear only once in a parameter list", "remove the second '*'");
      if (!at_op(","))
        fail(loc, "a bare '*' must be followed by keyword-only parameters",
             "add a parameter after '*,' or remove the '*'");
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
          fail(p.loc, "duplicate parameter '" + p.name + "'",
               "give each parameter a different name");
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
    fail(tok().loc, "a bare '*' must be followed by keyword-only parameters",
         "add a parameter after '*,' or remove the '*'");
  take();
}

// `for target in iterable:` and its block; the elaborator unrolls it.
StmtPtr Parser::parse_for() {
  auto s = make_stmt(StmtKind::For, take().loc);
  s->targets.push_back(parse_target_list());
  if (!at_kw("in")) unexpected("'in' after the loop variable");
  take();
  s->value = parse_star_expressions();
  expect_op(":", "':' after the loop header");
  parse_block(s->body, "the for");
  if (at_kw("else"))
    fail(tok().loc, "'else' after a for loop is not supported",
         "put the statements after the loop");
  return s;
}

// `if cond:` with its `elif` and `else` clauses; an elif becomes an If alone in orelse.
StmtPtr Parser::parse_if() {
  auto s = make_stmt(StmtKind::If, take().loc);
  s->value = parse_expression();
  expect_op(":", "':' after the condition");
  parse_block(s->body, "the if");
  if (at_kw("elif")) {
    s->orelse.push_back(parse_if());
  } else if (at_kw("else")) {
    take();
    expect_op(":", "':' after else");
    parse_block(s->orelse, "the else");
  }
  return s;
}

// Loop variables: a name or names separated by commas, possibly bracketed (`i, (a, b)`).
ExprPtr Parser::parse_target_list() {
  ExprPtr first = parse_bitor();
  check_target(first);
  if (!at_op(",")) return first;
  auto tuple = std::make_shared<Expr>();
  tuple->kind = ExprKind::Tuple;
  tuple->loc = first->loc;
  tuple->items.push_back(first);
  while (accept_op(",") && !at_kw("in")) {
    tuple->items.push_back(parse_bitor());
    check_target(tuple->items.back());
  }
  return tuple;
}

void Parser::parse_block(std::vector<StmtPtr>& body, const char* owner) {
  if (!at(TokenKind::Newline)) {
    parse_simple_line(body, true);
    return;
  }
  take();
  if (!at(TokenKind::Indent)) unexpected(std::string("an indented block after ") + owner);
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

}  // namespace parser_impl

Module parse_module(const std::string& file, const std::string& source) {
  Module module;
  module.file = file;
  module.source = source;
  parser_impl::Parser parser(module.file, module.source, tokenize(file, source));
  module.body = parser.parse_module_body();
  return module;
}

}  // namespace ollie::spec
