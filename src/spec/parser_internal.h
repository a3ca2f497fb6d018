// Internal to the spec parser (parser.cpp: the module and its statements, parser_expr.cpp:
// expressions): the recursive-descent Parser and what both halves share.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "spec/ast.h"
#include "spec/lexer.h"

namespace ollie::spec::parser_impl {

// Recursion depth bound: nested brackets, unary operators, ternaries and `**` chains
// each add a level, so no input can overflow the stack.
constexpr int kMaxDepth = 200;

bool is_keyword(const std::string& s);

struct Rejection {
  const char* keyword;
  const char* message;
  const char* hint;
};

// The rejection when `t` is a Python keyword that starts a construct outside the spec
// language, else null.
const Rejection* rejection_for(const Token& t);

class Parser {
 public:
  Parser(const std::string& file, const std::string& source, std::vector<Token> tokens)
      : file_(file), src_(source), toks_(std::move(tokens)) {}

  std::vector<StmtPtr> parse_module_body();

 private:
  // ---- token access --------------------------------------------------------------

  const Token& tok() const { return toks_[pos_]; }
  const Token& peek(size_t n) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool at(TokenKind k) const { return tok().kind == k; }
  static bool is_op(const Token& t, const char* s) {
    return t.kind == TokenKind::Op && t.text == s;
  }
  static bool is_kw(const Token& t, const char* s) {
    return t.kind == TokenKind::Name && t.text == s;
  }
  bool at_op(const char* s) const { return is_op(tok(), s); }
  bool at_kw(const char* s) const { return is_kw(tok(), s); }
  // Never moves past End, so a loop that keeps taking cannot run off the vector.
  const Token& take() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }

  [[noreturn]] void fail(SourceLoc at, const std::string& message,
                         const std::string& hint = "") const {
    throw SpecError(file_, src_, at, message, hint);
  }

  [[noreturn]] void reject(const Rejection& r, SourceLoc at) const { fail(at, r.message, r.hint); }

  [[noreturn]] void unexpected(const std::string& expected) const;
  void item_separator(const char* close, const std::string& what);
  bool accept_op(const char* s);
  void expect_op(const char* s, const std::string& what);
  const Token& expect_name(const std::string& what);
  void check_comprehension(const char* kind) const;

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, SourceLoc at) : p(parser) {
      if (p.depth_ >= kMaxDepth)
        p.fail(at,
               "expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)",
               "split the expression into several assignments");
      ++p.depth_;
    }
    ~DepthGuard() { --p.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
  };

  // ---- statements (parser.cpp) ---------------------------------------------------

  void parse_statement(std::vector<StmtPtr>& body, bool in_function);
  void check_compound_start(const Token& t, bool in_function) const;
  bool is_main_guard() const;
  void skip_clause();
  void parse_simple_line(std::vector<StmtPtr>& body, bool in_function);
  StmtPtr parse_simple(bool in_function);
  std::string parse_dotted_name(const std::string& what);
  std::string parse_as_name();
  StmtPtr parse_import();
  StmtPtr parse_from();
  static bool is_aug_assign(const Token& t);
  StmtPtr parse_expr_statement();
  void check_single_target(const ExprPtr& e, const char* what) const;
  void check_target(const ExprPtr& e) const;
  StmtPtr parse_def();
  void parse_params(FunctionDef& fn);
  void parse_block(std::vector<StmtPtr>& body, const char* owner);
  StmtPtr parse_for();
  StmtPtr parse_if();
  ExprPtr parse_target_list();

  // ---- classes (parser_class.cpp) -----------------------------------------------

  StmtPtr parse_class();
  void parse_class_body(ClassDef& cls);

  // ---- expressions (parser_expr.cpp) ---------------------------------------------

  bool starts_expression() const;
  ExprPtr parse_star_expressions();
  ExprPtr parse_star_or_expression();
  ExprPtr parse_expression();
  ExprPtr parse_bool_op(const char* op, ExprPtr (Parser::*operand)());
  ExprPtr parse_disjunction();
  ExprPtr parse_conjunction();
  ExprPtr parse_inversion();
  std::string comparison_op(int& width) const;
  ExprPtr parse_comparison();
  // Left-associative binary levels, loosest first; level 6 is the unary/power level.
  static constexpr int kFactorLevel = 6;
  static bool level_has(int level, const std::string& op);
  ExprPtr parse_binary(int level);
  ExprPtr parse_bitor();
  ExprPtr parse_factor();
  ExprPtr parse_power();
  ExprPtr parse_primary();
  ExprPtr parse_call(const ExprPtr& callee);
  ExprPtr parse_subscript(const ExprPtr& base);
  ExprPtr parse_slice_item();
  ExprPtr parse_atom();
  ExprPtr parse_paren();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  // Python-level structure (parser_static.cpp): lambdas, comprehensions, f-strings.
  ExprPtr parse_lambda();
  std::vector<ComprehensionFor> parse_comprehension_clauses();
  ExprPtr make_list_comp(const ExprPtr& element);
  ExprPtr parse_fstring(const Token& t);

  const std::string& file_;
  const std::string& src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace ollie::spec::parser_impl
