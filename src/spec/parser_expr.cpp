// Recursive-descent parser for spec expressions, loosest binding first: conditional,
// or/and/not, comparisons, binary levels, unary and '**', calls, subscripts and atoms.
#include "spec/parser_internal.h"

namespace ollie::spec::parser_impl {

namespace {

std::shared_ptr<Expr> make(ExprKind kind, SourceLoc loc) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

}  // namespace

bool Parser::starts_expression() const {
  const Token& t = tok();
  switch (t.kind) {
    case TokenKind::Name:
      return !is_keyword(t.text) || t.text == "True" || t.text == "False" || t.text == "None" ||
             t.text == "not" || t.text == "lambda" || t.text == "await" || t.text == "yield";
    case TokenKind::Number:
    case TokenKind::String: return true;
    case TokenKind::Op:
      for (const char* s : {"(", "[", "{", "-", "+", "~", "...", "*"})
        if (t.text == s) return true;
      return false;
    default: return false;
  }
}

// `a, *b, c` without brackets: assignment sides and return values.
ExprPtr Parser::parse_star_expressions() {
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

ExprPtr Parser::parse_star_or_expression() {
  if (!at_op("*")) return parse_expression();
  SourceLoc loc = take().loc;
  DepthGuard guard(*this, loc);
  auto e = make(ExprKind::Starred, loc);
  e->value = parse_bitor();
  return e;
}

ExprPtr Parser::parse_expression() {
  DepthGuard guard(*this, tok().loc);
  if (at_kw("lambda")) return parse_lambda();
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

ExprPtr Parser::parse_bool_op(const char* op, ExprPtr (Parser::*operand)()) {
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

ExprPtr Parser::parse_disjunction() { return parse_bool_op("or", &Parser::parse_conjunction); }

ExprPtr Parser::parse_conjunction() { return parse_bool_op("and", &Parser::parse_inversion); }

ExprPtr Parser::parse_inversion() {
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
std::string Parser::comparison_op(int& width) const {
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

ExprPtr Parser::parse_comparison() {
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

bool Parser::level_has(int level, const std::string& op) {
  static const std::vector<std::vector<std::string>> levels = {
      {"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"}};
  const auto& ops = levels[static_cast<size_t>(level)];
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

ExprPtr Parser::parse_binary(int level) {
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

ExprPtr Parser::parse_bitor() { return parse_binary(0); }

ExprPtr Parser::parse_factor() {
  if (!at_op("-") && !at_op("+") && !at_op("~")) return parse_power();
  const Token& op = take();
  DepthGuard guard(*this, op.loc);
  auto e = make(ExprKind::Unary, op.loc);
  e->op = op.text;
  e->op_loc = op.loc;
  e->value = parse_factor();
  return e;
}

ExprPtr Parser::parse_power() {
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

ExprPtr Parser::parse_primary() {
  ExprPtr e = parse_atom();
  while (true) {
    if (at_op(".")) {
      take();
      auto a = make(ExprKind::Attribute, e->loc);
      a->value = e;
      a->op_loc = tok().loc;
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

ExprPtr Parser::parse_call(const ExprPtr& callee) {
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
        if (k.name == name)
          fail(loc, "keyword argument '" + name + "' repeated", "pass each keyword once");
      call->keywords.push_back({name, parse_expression(), loc});
    } else {
      ExprPtr arg = parse_expression();
      if (at_kw("for")) arg = make_list_comp(arg);
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

ExprPtr Parser::parse_subscript(const ExprPtr& base) {
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

ExprPtr Parser::parse_slice_item() {
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

ExprPtr Parser::parse_atom() {
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
        fail(loc, "complex (imaginary) literals are not supported in a spec",
             "use real numbers only");
      if (t.too_large)
        fail(loc, "integer literal too large",
             "integers must fit in 64 bits; write a float such as 1e30 if you need a big constant");
      auto e = make(t.is_float ? ExprKind::Float : ExprKind::Int, loc);
      e->int_value = t.int_value;
      e->float_value = t.float_value;
      take();
      return e;
    }
    case TokenKind::String: {
      auto e = make(ExprKind::String, loc);
      if (t.is_fstring && peek(1).kind != TokenKind::String) return parse_fstring(take());
      while (at(TokenKind::String)) {
        const Token& s = take();
        if (s.is_fstring)
          fail(s.loc, "an f-string joined to other string literals is not supported",
               "write one f-string");
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
    default: break;
  }
  unexpected("an expression");
}

ExprPtr Parser::parse_paren() {
  SourceLoc loc = take().loc;
  if (accept_op(")")) return make(ExprKind::Tuple, loc);
  ExprPtr first = parse_star_or_expression();
  if (at_kw("for")) first = make_list_comp(first);
  if (at_op(")")) {
    if (first->kind == ExprKind::Starred)
      fail(first->loc, "a starred expression cannot stand alone in parentheses",
           "add a comma to make a tuple: (*a,)");
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

ExprPtr Parser::parse_list() {
  SourceLoc loc = take().loc;
  auto list = make(ExprKind::List, loc);
  while (!at_op("]")) {
    list->items.push_back(parse_star_or_expression());
    if (list->items.size() == 1 && at_kw("for")) {
      ExprPtr comp = make_list_comp(list->items[0]);
      expect_op("]", "']' after the list comprehension");
      return comp;
    }
    item_separator("]", "',' or ']'");
  }
  take();
  return list;
}

ExprPtr Parser::parse_dict() {
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
    if (dict->keys.size() == 1 && at_kw("for")) {
      auto comp = make(ExprKind::DictComp, loc);
      comp->keys = dict->keys;
      comp->value = dict->items[0];
      comp->comprehension = parse_comprehension_clauses();
      expect_op("}", "'}' after the dict comprehension");
      return comp;
    }
    check_comprehension("dict comprehensions with several entries");
    item_separator("}", "',' or '}'");
  }
  take();
  return dict;
}

}  // namespace ollie::spec::parser_impl
