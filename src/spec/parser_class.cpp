// Parser for model classes (`class RMSNorm:` with `__init__` and methods): the class
// header, where a base class is rejected, and the body of methods, docstrings and constants.
// The elaborator inlines them (elab_classes.cpp).
#include "spec/parser_internal.h"

namespace ollie::spec::parser_impl {

StmtPtr Parser::parse_class() {
  auto cls = std::make_shared<ClassDef>();
  cls->loc = take().loc;
  const Token& name = expect_name("a class name");
  cls->name = name.text;
  cls->name_loc = name.loc;
  if (accept_op("(")) {
    // `class A:`, `class A():` and `class A(object):` are the same class; a real base is not.
    if (!at_op(")")) {
      if (!(at_kw("object") && is_op(peek(1), ")")))
        fail(
            tok().loc, "class inheritance is not supported in a spec",
            "write '" + cls->name + "' without a base class and define in it every method it uses");
      take();
    }
    expect_op(")", "')' after the base class");
  }
  expect_op(":", "':' after the class name");
  parse_class_body(*cls);
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::Class;
  s->loc = cls->loc;
  s->cls = std::move(cls);
  return s;
}

void Parser::parse_class_body(ClassDef& cls) {
  if (!at(TokenKind::Newline)) {
    parse_simple_line(cls.body, false);
    return;
  }
  take();
  if (!at(TokenKind::Indent)) unexpected("an indented block after the class");
  take();
  while (!at(TokenKind::Dedent) && !at(TokenKind::End)) {
    if (at(TokenKind::Newline)) {
      take();
      continue;
    }
    if (at_kw("class"))
      fail(tok().loc, "a class inside a class is not supported",
           "define it at module level and construct it in __init__");
    const size_t before = cls.body.size();
    parse_statement(cls.body, false);
    if (cls.body.size() == before) continue;
    const Stmt& last = *cls.body.back();
    if (last.kind == StmtKind::Def &&
        (last.function->params.empty() || last.function->params[0].keyword_only))
      fail(last.function->name_loc,
           "method '" + last.function->name + "' of class " + cls.name + " has no `self` parameter",
           "write def " + last.function->name +
               "(self, ...): a spec's methods are instance methods");
  }
  take();
}

}  // namespace ollie::spec::parser_impl
