// The syntax tree of a spec file: the Python subset ollie reads (docs/spec-language.md).
// Produced by the parser (parser.h), consumed by the elaborator (elaborate.h), which
// gives it numpy meaning and builds the tensor IR. Nodes are immutable once parsed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace ollie::spec {

struct Expr;
struct Stmt;
struct ClassDef;
using ExprPtr = std::shared_ptr<const Expr>;
using StmtPtr = std::shared_ptr<const Stmt>;

enum class ExprKind {
  Name,       // name
  Int,        // int_value
  Float,      // float_value
  String,     // text (contents, escapes resolved; adjacent literals concatenated)
  Bool,       // bool_value (True / False)
  None,       // None
  Ellipsis,   // ...
  Tuple,      // items (parenthesized or bare `a, b`)
  List,       // items
  Dict,       // keys[i] -> items[i]
  Attribute,  // value.name
  Call,       // value(items..., keywords...)
  Subscript,  // value[items...]; several items when the index is a tuple `x[a, b]`
  Slice,      // lower:upper:step inside a subscript; absent parts are null
  Unary,      // op value: op is "-", "+", "~", "not"
  Binary,   // lhs op rhs: op is "+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>"
  Compare,  // items[0] ops[0] items[1] ops[1] items[2] ...: "<", "<=", ">", ">=", "==", "!=", "is",
            // "is not", "in", "not in"
  BoolOp,   // items joined by op "and" / "or"
  IfExp,    // items[0] if items[1] else items[2]
  Starred,  // *value (in calls and tuple displays)
  Lambda,   // lambda params: body; function holds the params and a body of one Return
  ListComp,  // [value for ... in ... if ...]; also a generator expression (read as a list)
  FString,   // f"..": items are the parts, String literals and formatted expressions
  DictComp,  // {keys[0]: value for ... in ... if ...}
};

struct FunctionDef;

// One `for target in iter if cond ...` clause of a comprehension.
struct ComprehensionFor {
  ExprPtr target;
  ExprPtr iter;
  std::vector<ExprPtr> conditions;
};

struct Keyword {
  std::string name;  // empty for **kwargs (rejected by the elaborator)
  ExprPtr value;
  SourceLoc loc;
};

struct Expr {
  ExprKind kind = ExprKind::None;
  SourceLoc loc;                 // first character of the expression
  std::string name;              // Name, Attribute
  std::string text;              // String
  int64_t int_value = 0;         // Int
  double float_value = 0.0;      // Float
  bool bool_value = false;       // Bool
  std::string op;                // Unary, Binary, BoolOp
  SourceLoc op_loc;              // Unary, Binary: the operator token; Attribute: the name
  std::vector<std::string> ops;  // Compare
  ExprPtr value;               // Attribute / Call / Subscript base, Unary operand, Starred operand
  ExprPtr lhs, rhs;            // Binary
  ExprPtr lower, upper, step;  // Slice (each may be null)
  std::vector<ExprPtr> items;  // Tuple, List, Call args, Subscript indices, Compare operands,
                               // BoolOp, IfExp, Dict values
  std::vector<ExprPtr> keys;   // Dict keys
  std::vector<Keyword> keywords;                // Call
  std::shared_ptr<const FunctionDef> function;  // Lambda
  std::vector<ComprehensionFor> comprehension;  // ListComp
};

struct Param {
  std::string name;
  SourceLoc loc;
  ExprPtr annotation;         // may be null
  ExprPtr default_value;      // may be null
  bool keyword_only = false;  // after a bare `*`
};

struct FunctionDef {
  std::string name;
  SourceLoc loc;       // the `def` keyword
  SourceLoc name_loc;  // the function name
  std::vector<Param> params;
  ExprPtr returns;  // the return annotation, may be null
  std::vector<StmtPtr> body;
};

enum class StmtKind {
  Expr,        // value (a docstring or a bare call)
  Assign,      // targets[0] = targets[1] = ... = value; a target may be a Tuple/List to unpack
  AugAssign,   // targets[0] op= value; op is "+", "-", "*", "/", "@", ...
  AnnAssign,   // targets[0]: annotation = value (value may be null)
  Return,      // value (may be null)
  Def,         // function
  Import,      // import a.b as c: names[i] = ("a.b", "c" or "")
  ImportFrom,  // from module import x as y: names[i] = ("x", "y" or "")
  Pass,
  Assert,  // value, message (may be null)
  Class,   // cls (model classes: parser_class.cpp, elab_classes.cpp)
  For,     // for targets[0] in value: body (unrolled by the elaborator)
  If,      // if value: body else: orelse (an `elif` is an If alone in orelse)
};

struct Stmt {
  StmtKind kind = StmtKind::Pass;
  SourceLoc loc;
  std::vector<ExprPtr> targets;
  ExprPtr value;
  ExprPtr annotation;                                      // AnnAssign
  ExprPtr message;                                         // Assert
  std::string op;                                          // AugAssign
  std::shared_ptr<const FunctionDef> function;             // Def
  std::shared_ptr<const ClassDef> cls;                     // Class
  std::string module;                                      // ImportFrom
  std::vector<std::pair<std::string, std::string>> names;  // Import, ImportFrom
  std::vector<StmtPtr> body, orelse;                       // For, If
};

// `class Name:` at module level: methods (Def statements, `self` first), docstrings and
// constant assignments. No base class.
struct ClassDef {
  std::string name;
  SourceLoc loc;       // the `class` keyword
  SourceLoc name_loc;  // the class name
  std::vector<StmtPtr> body;
};

// A parsed spec file. The module-level `if __name__ == "__main__":` block is
// skipped by the parser (it is for running the spec under numpy, not part of it).
struct Module {
  std::string file;    // as given by the user, for messages
  std::string source;  // the whole text, for carets in messages
  std::vector<StmtPtr> body;
};

}  // namespace ollie::spec
