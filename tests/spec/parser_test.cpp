// Tests of the spec lexer and parser: the AST of representative inputs, and located
// errors (line, column, message, hint) for syntax outside the spec language.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "spec/lexer.h"
#include "spec/parser.h"
#include "spec/spec.h"

namespace ollie::spec {
namespace {

// An S-expression of an expression, so tests can pin the whole tree in one string.
std::string dump(const ExprPtr& e) {
  if (!e) return "_";
  std::ostringstream out;
  auto list = [&](const char* head, const std::vector<ExprPtr>& items) {
    out << "(" << head;
    for (const auto& item : items) out << " " << dump(item);
    out << ")";
  };
  switch (e->kind) {
    case ExprKind::Name: out << e->name; break;
    case ExprKind::Int: out << e->int_value; break;
    case ExprKind::Float: out << e->float_value << "f"; break;
    case ExprKind::String: out << '"' << e->text << '"'; break;
    case ExprKind::Bool: out << (e->bool_value ? "True" : "False"); break;
    case ExprKind::None: out << "None"; break;
    case ExprKind::Ellipsis: out << "..."; break;
    case ExprKind::Tuple: list("tuple", e->items); break;
    case ExprKind::List: list("list", e->items); break;
    case ExprKind::Dict:
      out << "(dict";
      for (size_t i = 0; i < e->keys.size(); ++i)
        out << " " << dump(e->keys[i]) << ":" << dump(e->items[i]);
      out << ")";
      break;
    case ExprKind::Attribute: out << "(. " << dump(e->value) << " " << e->name << ")"; break;
    case ExprKind::Call:
      out << "(call " << dump(e->value);
      for (const auto& a : e->items) out << " " << dump(a);
      for (const auto& k : e->keywords)
        out << " " << (k.name.empty() ? "**" : k.name + "=") << dump(k.value);
      out << ")";
      break;
    case ExprKind::Subscript:
      out << "(sub " << dump(e->value);
      for (const auto& a : e->items) out << " " << dump(a);
      out << ")";
      break;
    case ExprKind::Slice:
      out << "(slice " << dump(e->lower) << " " << dump(e->upper) << " " << dump(e->step) << ")";
      break;
    case ExprKind::Unary: out << "(" << e->op << " " << dump(e->value) << ")"; break;
    case ExprKind::Binary:
      out << "(" << e->op << " " << dump(e->lhs) << " " << dump(e->rhs) << ")";
      break;
    case ExprKind::Compare:
      out << "(cmp " << dump(e->items[0]);
      for (size_t i = 0; i < e->ops.size(); ++i)
        out << " " << e->ops[i] << " " << dump(e->items[i + 1]);
      out << ")";
      break;
    case ExprKind::BoolOp: list(e->op.c_str(), e->items); break;
    case ExprKind::IfExp: list("ifexp", e->items); break;
    case ExprKind::Starred: out << "(* " << dump(e->value) << ")"; break;
    case ExprKind::Lambda:
      out << "(lambda";
      for (const auto& p : e->function->params)
        out << " " << p.name << (p.default_value ? "=" + dump(p.default_value) : "");
      out << " : " << dump(e->function->body.at(0)->value) << ")";
      break;
    case ExprKind::ListComp:
      out << "(comp " << dump(e->value);
      for (const auto& c : e->comprehension) {
        out << " for " << dump(c.target) << " in " << dump(c.iter);
        for (const auto& cond : c.conditions) out << " if " << dump(cond);
      }
      out << ")";
      break;
    case ExprKind::FString: list("f", e->items); break;
    case ExprKind::DictComp:
      out << "(dictcomp " << dump(e->keys.at(0)) << ":" << dump(e->value);
      for (const auto& c : e->comprehension)
        out << " for " << dump(c.target) << " in " << dump(c.iter);
      out << ")";
      break;
  }
  return out.str();
}

Module parse(const std::string& src) { return parse_module("t.py", src); }

// The expression of a one-line module `x = <expr>`.
std::string expr(const std::string& text) {
  Module m = parse("x = " + text + "\n");
  EXPECT_EQ(m.body.size(), 1u);
  EXPECT_EQ(m.body[0]->kind, StmtKind::Assign);
  return dump(m.body[0]->value);
}

TEST(Parser, Precedence) {
  EXPECT_EQ(expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr("-x ** 2"), "(- (** x 2))");
  EXPECT_EQ(expr("2 ** 3 ** 2"), "(** 2 (** 3 2))");
  EXPECT_EQ(expr("2 ** -1"), "(** 2 (- 1))");
  EXPECT_EQ(expr("a @ b + bias"), "(+ (@ a b) bias)");
  EXPECT_EQ(expr("a // b % c"), "(% (// a b) c)");
  EXPECT_EQ(expr("a | b ^ c & d << 1"), "(| a (^ b (& c (<< d 1))))");
  EXPECT_EQ(expr("not a and b or c"), "(or (and (not a) b) c)");
  EXPECT_EQ(expr("a < b <= c"), "(cmp a < b <= c)");
  EXPECT_EQ(expr("a is not None"), "(cmp a is not None)");
  EXPECT_EQ(expr("a not in b"), "(cmp a not in b)");
  EXPECT_EQ(expr("a if c > 0 else b"), "(ifexp a (cmp c > 0) b)");
  EXPECT_EQ(expr("~a"), "(~ a)");
  EXPECT_EQ(expr("(a + b) * c"), "(* (+ a b) c)");
}

TEST(Parser, Literals) {
  EXPECT_EQ(expr("0x1F + 0o17 + 0b101 + 1_000"), "(+ (+ (+ 31 15) 5) 1000)");
  EXPECT_EQ(expr("1.5e3"), "1500f");
  EXPECT_EQ(expr(".5"), "0.5f");
  EXPECT_EQ(expr("1."), "1f");
  EXPECT_EQ(expr("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(expr("'ab' \"cd\" r'\\n'"), "\"abcd\\n\"");
  EXPECT_EQ(expr("'a\\tb\\x41\\u00e9'"), "\"a\tbA\xC3\xA9\"");
  EXPECT_EQ(expr("(True, False, None, ...)"), "(tuple True False None ...)");
  EXPECT_EQ(expr("()"), "(tuple)");
  EXPECT_EQ(expr("(x,)"), "(tuple x)");
  EXPECT_EQ(expr("[1, 2,]"), "(list 1 2)");
  EXPECT_EQ(expr("{'M': 256, 'N': 128}"), "(dict \"M\":256 \"N\":128)");
}

TEST(Parser, SlicesAndCalls) {
  EXPECT_EQ(expr("a[1:, ::2, None, ..., -1]"),
            "(sub a (slice 1 _ _) (slice _ _ 2) None ... (- 1))");
  EXPECT_EQ(expr("a[:n-1:]"), "(sub a (slice _ (- n 1) _))");
  EXPECT_EQ(expr("x.T[0]"), "(sub (. x T) 0)");
  EXPECT_EQ(expr("np.sum(x, axis=-1, keepdims=True)"),
            "(call (. np sum) x axis=(- 1) keepdims=True)");
  EXPECT_EQ(expr("f(*args, **kw)"), "(call f (* args) **kw)");
  EXPECT_EQ(expr("x.reshape(2, -1).T"), "(. (call (. x reshape) 2 (- 1)) T)");
}

TEST(Parser, FunctionsAndStatements) {
  Module m = parse(
      "\"\"\"Module docstring.\"\"\"\n"
      "import numpy as np\n"
      "from __future__ import annotations\n"
      "DIMS = dict(M=256, N=128)\n"
      "\n"
      "def f(a: \"f32[M, K]\", b, *, eps=1e-5) -> (\"f32[M]\", \"f32[M]\"):\n"
      "    \"\"\"Doc.\"\"\"\n"
      "    # a comment\n"
      "    s, t = a.sum(axis=1), b\n"
      "    u = v = s + \\\n"
      "        t\n"
      "    u += (1 +\n"
      "          2)\n"
      "    w: float = 2.0\n"
      "    assert u is not None, 'msg'\n"
      "    pass\n"
      "    return s, t\n");
  ASSERT_EQ(m.body.size(), 5u);
  EXPECT_EQ(m.body[0]->kind, StmtKind::Expr);
  EXPECT_EQ(dump(m.body[0]->value), "\"Module docstring.\"");
  EXPECT_EQ(m.body[1]->kind, StmtKind::Import);
  EXPECT_EQ(m.body[1]->names[0], (std::pair<std::string, std::string>("numpy", "np")));
  EXPECT_EQ(m.body[2]->kind, StmtKind::ImportFrom);
  EXPECT_EQ(m.body[2]->module, "__future__");
  EXPECT_EQ(dump(m.body[3]->value), "(call dict M=256 N=128)");
  const auto& def = m.body[4];
  ASSERT_EQ(def->kind, StmtKind::Def);
  const FunctionDef& fn = *def->function;
  EXPECT_EQ(fn.name, "f");
  EXPECT_EQ(fn.loc.line, 6);
  EXPECT_EQ(fn.name_loc.col, 5);
  ASSERT_EQ(fn.params.size(), 3u);
  EXPECT_EQ(dump(fn.params[0].annotation), "\"f32[M, K]\"");
  EXPECT_EQ(fn.params[1].annotation, nullptr);
  EXPECT_TRUE(fn.params[2].keyword_only);
  EXPECT_FALSE(fn.params[1].keyword_only);
  EXPECT_EQ(dump(fn.params[2].default_value), "1e-05f");
  EXPECT_EQ(dump(fn.returns), "(tuple \"f32[M]\" \"f32[M]\")");
  ASSERT_EQ(fn.body.size(), 8u);
  EXPECT_EQ(dump(fn.body[0]->value), "\"Doc.\"");
  EXPECT_EQ(fn.body[1]->kind, StmtKind::Assign);
  EXPECT_EQ(dump(fn.body[1]->targets[0]), "(tuple s t)");
  EXPECT_EQ(dump(fn.body[1]->value), "(tuple (call (. a sum) axis=1) b)");
  EXPECT_EQ(fn.body[2]->targets.size(), 2u);
  EXPECT_EQ(dump(fn.body[2]->value), "(+ s t)");
  EXPECT_EQ(fn.body[3]->kind, StmtKind::AugAssign);
  EXPECT_EQ(fn.body[3]->op, "+");
  EXPECT_EQ(dump(fn.body[3]->value), "(+ 1 2)");
  EXPECT_EQ(fn.body[4]->kind, StmtKind::AnnAssign);
  EXPECT_EQ(dump(fn.body[4]->annotation), "float");
  EXPECT_EQ(fn.body[5]->kind, StmtKind::Assert);
  EXPECT_EQ(dump(fn.body[5]->message), "\"msg\"");
  EXPECT_EQ(fn.body[6]->kind, StmtKind::Pass);
  EXPECT_EQ(fn.body[7]->kind, StmtKind::Return);
  EXPECT_EQ(dump(fn.body[7]->value), "(tuple s t)");
  EXPECT_EQ(fn.body[7]->loc.line, 17);
  EXPECT_EQ(fn.body[7]->loc.col, 5);
}

TEST(Parser, Locations) {
  Module m = parse("def f(x):\n    return np.exp(x) * 2\n");
  const auto& ret = m.body[0]->function->body[0];
  EXPECT_EQ(ret->value->kind, ExprKind::Binary);
  EXPECT_EQ(ret->value->loc.col, 12);     // first character of the expression
  EXPECT_EQ(ret->value->op_loc.col, 22);  // the '*'
  EXPECT_EQ(ret->value->lhs->loc.col, 12);
  // Columns count characters, not bytes.
  Module u = parse("s = 'é' + y\n");
  EXPECT_EQ(u.body[0]->value->rhs->loc.col, 11);
}

TEST(Parser, MainGuardIsSkipped) {
  for (const char* guard : {"if __name__ == \"__main__\":", "if '__main__' == __name__:"}) {
    Module m = parse(std::string("import numpy as np\n") + guard +
                     "\n"
                     "    for i in range(3):\n"
                     "        while True:\n"
                     "            print(f\"{i:>3}\", 1j, 10**100)\n"
                     "    class A: pass\n"
                     "else:\n"
                     "    pass\n"
                     "y = 1\n");
    ASSERT_EQ(m.body.size(), 2u) << guard;
    EXPECT_EQ(m.body[1]->kind, StmtKind::Assign);
    EXPECT_EQ(m.body[1]->loc.line, 9);
  }
  EXPECT_EQ(parse("if __name__ == '__main__': main()\nz = 2\n").body.size(), 1u);
}

TEST(Parser, SemicolonsAndOneLineDef) {
  Module m = parse("a = 1; b = 2;\ndef f(x): return x\n");
  ASSERT_EQ(m.body.size(), 3u);
  EXPECT_EQ(m.body[2]->function->body[0]->kind, StmtKind::Return);
}

TEST(Parser, ImportsAndMisc) {
  Module m = parse(
      "\xEF\xBB\xBF"
      "from a.b import (c as d, e,)\nimport x.y, z as w\nprint(1)\n");
  ASSERT_EQ(m.body.size(), 3u);
  EXPECT_EQ(m.body[0]->module, "a.b");
  EXPECT_EQ(m.body[0]->names[0], (std::pair<std::string, std::string>("c", "d")));
  EXPECT_EQ(m.body[0]->names[1], (std::pair<std::string, std::string>("e", "")));
  EXPECT_EQ(m.body[0]->loc.col, 1);  // the BOM takes no column
  EXPECT_EQ(m.body[1]->names[0].first, "x.y");
  EXPECT_EQ(m.body[1]->names[1].second, "w");
  EXPECT_EQ(dump(m.body[2]->value), "(call print 1)");  // the elaborator rejects print
  EXPECT_EQ(expr("f(a)(b)[c].d"), "(. (sub (call (call f a) b) c) d)");
  EXPECT_EQ(expr("'''a\nb'''"), "\"a\nb\"");
  EXPECT_EQ(parse("x = [\n  1,\n\n  2]  # c\n\n\n").body.size(), 1u);
  EXPECT_EQ(parse("").body.size(), 0u);
  EXPECT_EQ(parse("x = 1").body.size(), 1u);  // no final newline
}

TEST(Parser, LambdasComprehensionsFStrings) {
  EXPECT_EQ(expr("lambda a, b=2: a * b"), "(lambda a b=2 : (* a b))");
  EXPECT_EQ(expr("lambda: 1"), "(lambda : 1)");
  EXPECT_EQ(expr("[f(h) for h in hs]"), "(comp (call f h) for h in hs)");
  EXPECT_EQ(expr("[a + b for a, b in zip(x, y) if a > 0 if b for c in z]"),
            "(comp (+ a b) for (tuple a b) in (call zip x y) if (cmp a > 0) if b for c in z)");
  EXPECT_EQ(expr("np.stack(g(t) for t in ts)"),
            "(call (. np stack) (comp (call g t) for t in ts))");
  EXPECT_EQ(expr("(t for t in ts)"), "(comp t for t in ts)");
  EXPECT_EQ(expr("{k: f(v) for k, v in d.items()}"),
            "(dictcomp k:(call f v) for (tuple k v) in (call (. d items)))");
  EXPECT_EQ(expr("f'blocks.{i}.w'"), "(f \"blocks.\" i \".w\")");
  EXPECT_EQ(expr("f'{a + 1}{{x}}'"), "(f (+ a 1) \"{x}\")");
  EXPECT_EQ(expr("f(**kw, eps=1)"), "(call f **kw eps=1)");
  // A field's location is its place in the line.
  Module m = parse("x = f'ab{cd}'\n");
  EXPECT_EQ(m.body[0]->value->items.at(1)->loc.col, 10);
}

TEST(Parser, ForAndIfStatements) {
  Module m = parse(
      "def f(x):\n"
      "    for i, (a, b) in enumerate(z):\n"
      "        if i == 0:\n"
      "            x = a\n"
      "        elif i > 2: x = b\n"
      "        else:\n"
      "            pass\n"
      "    return x\n");
  const auto& body = m.body.at(0)->function->body;
  ASSERT_EQ(body.size(), 2u);
  const Stmt& loop = *body[0];
  EXPECT_EQ(loop.kind, StmtKind::For);
  EXPECT_EQ(dump(loop.targets.at(0)), "(tuple i (tuple a b))");
  EXPECT_EQ(dump(loop.value), "(call enumerate z)");
  ASSERT_EQ(loop.body.size(), 1u);
  const Stmt& cond = *loop.body[0];
  EXPECT_EQ(cond.kind, StmtKind::If);
  EXPECT_EQ(dump(cond.value), "(cmp i == 0)");
  ASSERT_EQ(cond.orelse.size(), 1u);
  const Stmt& elif = *cond.orelse[0];
  EXPECT_EQ(elif.kind, StmtKind::If);
  EXPECT_EQ(dump(elif.value), "(cmp i > 2)");
  EXPECT_EQ(elif.body.size(), 1u);
  ASSERT_EQ(elif.orelse.size(), 1u);
  EXPECT_EQ(elif.orelse[0]->kind, StmtKind::Pass);
}

TEST(Lexer, TokensAndIndentation) {
  auto toks = tokenize("t.py", "def f():\n\tif x:\n\t\ty **= 2\n");
  std::string kinds;
  for (const Token& t : toks) {
    switch (t.kind) {
      case TokenKind::Indent: kinds += "> "; break;
      case TokenKind::Dedent: kinds += "< "; break;
      case TokenKind::Newline: kinds += "NL "; break;
      case TokenKind::End: kinds += "END"; break;
      default: kinds += t.text + " ";
    }
  }
  EXPECT_EQ(kinds, "def f ( ) : NL > if x : NL > y **= 2 NL < < END");
  ASSERT_EQ(toks[12].text, "y");
  EXPECT_EQ(toks[12].loc.line, 3);
  EXPECT_EQ(toks[12].loc.col, 3);  // two tabs count one column each
}

// ---- bad input: every error is located and says what to write instead ------------

struct Bad {
  std::string source;
  int line;
  int col;
  std::string message;
  std::string hint;
};

void expect_error(const Bad& b) {
  try {
    parse_module("bad.py", b.source);
    ADD_FAILURE() << "no error for:\n" << b.source;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.loc().line, b.line) << e.what();
    EXPECT_EQ(e.loc().col, b.col) << e.what();
    EXPECT_NE(e.message().find(b.message), std::string::npos) << e.what();
    std::string what = e.what();
    if (!b.hint.empty()) {
      size_t hint = what.find("\nhint: ");
      ASSERT_NE(hint, std::string::npos) << what;
      EXPECT_NE(what.find(b.hint, hint), std::string::npos) << what;
    }
    EXPECT_EQ(
        what.rfind("bad.py:" + std::to_string(b.line) + ":" + std::to_string(b.col) + ": error: ",
                   0),
        0u)
        << what;
  }
}

const char* kDef = "def f(x):\n";

TEST(ParserErrors, ForLoopAtModuleLevel) {
  expect_error({"for i in range(3):\n    pass\n", 1, 1, "loops at module level are not supported",
                "inside a function"});
}

TEST(ParserErrors, WhileLoop) {
  expect_error({std::string(kDef) + "    while x:\n        pass\n", 2, 5,
                "while loops are not supported", "for i in range(n)"});
}

TEST(ParserErrors, BreakAndForElse) {
  expect_error({std::string(kDef) + "    for i in x:\n        break\n", 3, 9,
                "'break' is not supported in an unrolled loop", "np.where"});
  expect_error({std::string(kDef) + "    for i in x:\n        pass\n    else:\n        pass\n", 4,
                5, "'else' after a for loop is not supported", "after the loop"});
  expect_error({std::string(kDef) + "    for i x:\n        pass\n", 2, 11,
                "expected 'in' after the loop variable", ""});
}

TEST(ParserErrors, ElseWithoutIf) {
  expect_error({std::string(kDef) + "    else:\n        pass\n", 2, 5,
                "'else' without a matching 'if'", "right after the if block"});
  expect_error({std::string(kDef) + "    if x:\n    return x\n", 3, 5,
                "expected an indented block after the if", ""});
}

TEST(ParserErrors, ModuleLevelIf) {
  expect_error({"import sys\nif sys.argv:\n    pass\n", 2, 1, "module-level 'if'", "__main__"});
}

TEST(ParserErrors, ClassInheritance) {
  expect_error({"class A(B):\n    pass\n", 1, 9, "class inheritance is not supported",
                "without a base class"});
}

TEST(ParserErrors, LambdaAndComprehensions) {
  expect_error({std::string(kDef) + "    g = lambda *t: t\n", 2, 16,
                "*args and **kwargs in a lambda are not supported", "name each parameter"});
  expect_error({std::string(kDef) + "    g = 1 + lambda t: t\n", 2, 13,
                "a lambda here must be in parentheses", "(lambda t: ...)"});
  expect_error({std::string(kDef) + "    g = lambda t=1, u: t\n", 2, 21,
                "lambda parameter without a default follows one with a default", "'u'"});
  expect_error({std::string(kDef) + "    return {k: v, 1: 2 for k in x}\n", 2, 24,
                "dict comprehensions with several entries are not supported",
                "list comprehension"});
  expect_error({std::string(kDef) + "    return [*x for y in x]\n", 2, 13,
                "a starred expression cannot be a comprehension's item", "without *"});
  expect_error({std::string(kDef) + "    return [y for y x]\n", 2, 21,
                "expected 'in' in the comprehension", ""});
}

TEST(ParserErrors, FStrings) {
  expect_error({"x = f'a{y:3d}'\n", 1, 10, "format specs in f-strings are not supported",
                "f\"blocks.{i}\""});
  expect_error({"x = f'a{y'\n", 1, 9, "'{' without a matching '}'", "close it"});
  expect_error({"x = f'a}'\n", 1, 8, "single '}' in an f-string", "'}}'"});
  expect_error({"x = f'{}'\n", 1, 8, "empty expression in an f-string", ""});
  expect_error({"x = f'{a b}'\n", 1, 10, "after the f-string's expression", ""});
  expect_error({"x = 'a' f'{y}'\n", 1, 9, "an f-string joined to other string literals", ""});
}

TEST(ParserErrors, UnterminatedString) {
  expect_error({"x = 1\ny = 'abc\n", 2, 5, "unterminated string literal", "close the string"});
  expect_error(
      {"x = \"\"\"abc\n\n", 1, 5, "unterminated triple-quoted string", "three matching quotes"});
}

TEST(ParserErrors, UnclosedBracket) {
  expect_error({"x = np.sum(a,\n  axis=1\ny = 2\n", 1, 11, "'(' was never closed", "')'"});
  expect_error({"x = [1, 2)\n", 1, 10, "closing ')' does not match opening '['", "']'"});
}

TEST(ParserErrors, BadDedent) {
  expect_error({"def f(x):\n        y = x\n    return y\n", 3, 5,
                "unindent does not match any outer indentation level", "same column"});
}

TEST(ParserErrors, UnexpectedIndent) {
  expect_error({"x = 1\n    y = 2\n", 2, 5, "unexpected indent", "same column"});
}

TEST(ParserErrors, TabsMixedWithSpaces) {
  expect_error({"def f(x):\n        y = x\n\treturn y\n", 3, 2,
                "inconsistent use of tabs and spaces", "spaces only"});
}

TEST(ParserErrors, StarArgs) {
  expect_error(
      {"def f(x, *args):\n    pass\n", 1, 10, "*args parameters are not supported", "explicitly"});
  expect_error({"def f(x, **kw):\n    pass\n", 1, 10, "**kwargs parameters are not supported",
                "explicitly"});
  expect_error({"def f(x, /):\n    pass\n", 1, 10, "positional-only parameters", "remove the '/'"});
}

TEST(ParserErrors, Decorator) {
  expect_error({"import functools\n@functools.cache\ndef f(x):\n    return x\n", 2, 1,
                "decorators are not supported", "remove the decorator"});
}

TEST(ParserErrors, NestedDef) {
  expect_error({std::string(kDef) + "    def g(y):\n        return y\n    return g(x)\n", 2, 5,
                "nested function definitions are not supported", "define helpers at module level"});
}

TEST(ParserErrors, Walrus) {
  expect_error({std::string(kDef) + "    return (n := x) + 1\n", 2, 15,
                "assignment expressions (:=) are not supported", "separate line"});
}

TEST(ParserErrors, TooDeepNesting) {
  expect_error({"x = " + std::string(1000, '(') + "1" + std::string(1000, ')') + "\n", 1, 205,
                "nested too deeply", "several assignments"});
  // Unary operators nest without brackets; the parser's own depth guard catches them.
  expect_error({"x = " + std::string(100000, '-') + "1\n", 1, 204, "nested too deeply",
                "several assignments"});
  expect_error({"x = " + std::string(5000, '~') + "1\n", 1, 204, "nested too deeply",
                "several assignments"});
}

TEST(ParserErrors, NulByte) {
  expect_error({std::string("x = 1\ny = \0 2\n", 14), 2, 5, "NUL byte", "remove the NUL"});
  // The message must survive what() being a C string: the NUL is not echoed.
  try {
    parse_module("bad.py", std::string("\0x", 2));
    ADD_FAILURE();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("  ?x\n  ^\nhint: "), std::string::npos) << e.what();
  }
}

TEST(ParserErrors, InvalidUtf8) {
  expect_error({"x = 1  # caf\xE9\n", 1, 13, "invalid UTF-8", "save the file as UTF-8"});
}

TEST(ParserErrors, IntegerTooLarge) {
  expect_error({"x = 1 + 99999999999999999999\n", 1, 9, "integer literal too large", "64 bits"});
}

TEST(ParserErrors, UnexpectedToken) {
  expect_error(
      {"def f(x):\n    return x +\n", 2, 15, "expected an expression, found end of line", ""});
  expect_error({"def f(x) -> 'f32[N]'\n    return x\n", 1, 21,
                "expected ':' after the function signature", ""});
  expect_error({"def f(x):\n", 2, 1, "expected an indented block", ""});
}

TEST(ParserErrors, OtherRejectedSyntax) {
  expect_error({std::string(kDef) + "    with open(x) as f:\n        pass\n", 2, 5,
                "'with' statements", "remove the with"});
  expect_error({std::string(kDef) + "    try:\n        pass\n", 2, 5, "exception handling",
                "remove the try"});
  expect_error({std::string(kDef) + "    raise ValueError(x)\n", 2, 5, "'raise' is not supported",
                "assert"});
  expect_error({std::string(kDef) + "    global G\n", 2, 5, "'global'", "module-level constants"});
  expect_error({std::string(kDef) + "    del x\n", 2, 5, "'del'", "stop using"});
  expect_error({std::string(kDef) + "    yield x\n", 2, 5, "generators", "return the result"});
  expect_error({"async def f(x):\n    pass\n", 1, 1, "async", "plain def"});
  expect_error({std::string(kDef) + "    return await x\n", 2, 12, "'await'", "synchronous"});
  expect_error(
      {std::string(kDef) + "    *a, b = x\n", 2, 5, "starred assignment targets", "exactly"});
  expect_error({"x = 3j\n", 1, 5, "complex", "real numbers"});
  expect_error({"x = b'abc'\n", 1, 5, "bytes literals", "plain string"});
  expect_error({"x = 012\n", 1, 5, "leading zeros", "0o17"});
  expect_error({"x = {1, 2}\n", 1, 6, "set displays", "list or a tuple"});
  expect_error({"x = a ! b\n", 1, 7, "invalid character '!'", "'!='"});
  expect_error({"x = 1 \\ 2\n", 1, 7, "after line continuation", "last character"});
  expect_error({"return 1\n", 1, 1, "'return' outside a function", "inside a def"});
  expect_error({"f(x) = 1\n", 1, 1, "cannot assign to a function call", "name"});
  expect_error(
      {"f(a=1, b)\n", 1, 8, "positional argument follows keyword argument", "before keyword"});
  expect_error({"x = 1\r2\n", 1, 6, "carriage return", "line endings"});
}

// ---- fuzzer findings (scripts/fuzz.sh): each input must end in a result or a UserError --

void expect_terminates(const std::string& source) {
  try {
    compile_spec("fuzz.py", source, {});
  } catch (const UserError&) {
  }
}

// Found by spec_fuzzer: `0**60**6` folded 0 ** 46656000000 one multiplication at a time
// in the elaborator (elab_ops.cpp fold_int) and never finished; bases 0, 1 and -1 are
// now answered directly.
TEST(FuzzRegressions, HugePowerOfZeroBase) {
  expect_terminates("0**60**6");
  expect_terminates("x = (-1) ** 10**15\n");
  expect_terminates("x = 1 ** 10**18\n");
}

// Found by spec_fuzzer: `3306285477545 * ()` looped once per repetition of an empty tuple.
TEST(FuzzRegressions, HugeRepeatOfEmptyTuple) {
  expect_terminates("7*7(+4+3306285477545*())");
  expect_terminates("x = () * 10**15\n");
}

}  // namespace
}  // namespace ollie::spec
