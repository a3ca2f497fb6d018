// Parsing of the Python-level structure a spec evaluates at elaboration time: lambda
// expressions, list comprehensions (and generator expressions, read as lists) and f-strings.
#include "spec/parser_internal.h"

namespace ollie::spec::parser_impl {

namespace {

std::shared_ptr<Expr> make(ExprKind kind, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

// The column where an f-string's contents start: after its prefix letters and quotes.
int fstring_content_col(const std::string& src, SourceLoc at) {
  size_t line_start = 0;
  for (int l = 1; l < at.line && line_start != std::string::npos; ++l) {
    line_start = src.find('\n', line_start);
    if (line_start != std::string::npos) ++line_start;
  }
  if (line_start == std::string::npos) return at.col;
  size_t p = line_start + static_cast<size_t>(at.col - 1);
  while (p < src.size() && src[p] != '"' && src[p] != '\'') ++p;
  if (p >= src.size()) return at.col;
  char q = src[p];
  size_t quotes = (src.compare(p, 3, std::string(3, q)) == 0) ? 3 : 1;
  return static_cast<int>(p + quotes - line_start) + 1;
}

}  // namespace

// `lambda a, b=1: expression`: a function whose body returns the expression.
ExprPtr Parser::parse_lambda() {
  SourceLoc loc = take().loc;
  auto fn = std::make_shared<FunctionDef>();
  fn->name = "<lambda>";
  fn->loc = loc;
  fn->name_loc = loc;
  bool seen_default = false;
  while (!at_op(":")) {
    if (at_op("*") || at_op("**"))
      fail(tok().loc, "*args and **kwargs in a lambda are not supported",
           "name each parameter of the lambda");
    Param p;
    const Token& name = expect_name("a parameter name or ':' in the lambda");
    p.name = name.text;
    p.loc = name.loc;
    if (accept_op("=")) {
      p.default_value = parse_expression();
      seen_default = true;
    } else if (seen_default) {
      fail(p.loc, "lambda parameter without a default follows one with a default",
           "give '" + p.name + "' a default too");
    }
    fn->params.push_back(std::move(p));
    if (!accept_op(",")) break;
  }
  expect_op(":", "':' after the lambda's parameters");
  auto ret = std::make_shared<Stmt>();
  ret->kind = StmtKind::Return;
  ret->loc = tok().loc;
  ret->value = parse_expression();
  fn->body.push_back(ret);
  auto e = make(ExprKind::Lambda, loc);
  e->function = std::move(fn);
  return e;
}

// One or more `for target in iterable` clauses, each with its `if` conditions.
std::vector<ComprehensionFor> Parser::parse_comprehension_clauses() {
  std::vector<ComprehensionFor> clauses;
  while (at_kw("for")) {
    take();
    if (at_kw("async")) fail(tok().loc, "async comprehensions are not supported");
    ComprehensionFor c;
    c.target = parse_target_list();
    if (!at_kw("in")) unexpected("'in' in the comprehension");
    take();
    c.iter = parse_disjunction();
    while (at_kw("if")) {
      take();
      c.conditions.push_back(parse_disjunction());
    }
    clauses.push_back(std::move(c));
  }
  return clauses;
}

ExprPtr Parser::make_list_comp(const ExprPtr& element) {
  if (element->kind == ExprKind::Starred)
    fail(element->loc, "a starred expression cannot be a comprehension's item",
         "write the item without *");
  auto e = make(ExprKind::ListComp, element->loc);
  e->value = element;
  e->comprehension = parse_comprehension_clauses();
  return e;
}

// f"blocks.{i}.w": literal parts and `{expression}` parts, parsed from the token's text.
ExprPtr Parser::parse_fstring(const Token& t) {
  auto e = make(ExprKind::FString, t.loc);
  const std::string& s = t.text;
  int col0 = fstring_content_col(src_, t.loc);
  std::string literal;
  auto flush = [&](size_t at) {
    if (literal.empty()) return;
    auto part = make(ExprKind::String, {t.loc.line, col0 + static_cast<int>(at)});
    part->text = literal;
    e->items.push_back(part);
    literal.clear();
  };
  for (size_t p = 0; p < s.size(); ++p) {
    if ((s[p] == '{' || s[p] == '}') && p + 1 < s.size() && s[p + 1] == s[p]) {
      literal += s[p++];
      continue;
    }
    if (s[p] == '}')
      fail({t.loc.line, col0 + static_cast<int>(p)}, "single '}' in an f-string",
           "write '}}' for a literal brace");
    if (s[p] != '{') {
      literal += s[p];
      continue;
    }
    flush(p);
    size_t start = p + 1, q = start;
    int depth = 0;
    for (; q < s.size(); ++q) {
      char c = s[q];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || (c == '}' && depth > 0)) --depth;
      if (depth == 0 && (c == '}' || c == '!' || c == ':')) break;
    }
    SourceLoc at{t.loc.line, col0 + static_cast<int>(start)};
    if (q >= s.size()) fail(at, "'{' without a matching '}' in an f-string", "close it with '}'");
    if (s[q] != '}')
      fail({t.loc.line, col0 + static_cast<int>(q)},
           "conversions and format specs in f-strings are not supported",
           "write the plain field, e.g. f\"blocks.{i}\"");
    std::vector<Token> toks = tokenize(file_, s.substr(start, q - start));
    for (Token& k : toks) k.loc = {at.line, at.col + k.loc.col - 1};
    Parser sub(file_, src_, std::move(toks));
    while (sub.at(TokenKind::Newline)) sub.take();
    if (sub.at(TokenKind::End)) fail(at, "empty expression in an f-string", "write f\"{name}\"");
    e->items.push_back(sub.parse_expression());
    while (sub.at(TokenKind::Newline)) sub.take();
    if (!sub.at(TokenKind::End)) sub.unexpected("'}' after the f-string's expression");
    p = q;
  }
  flush(s.size());
  return e;
}

}  // namespace ollie::spec::parser_impl
