// Tokenizer for spec files: Python's tokens (names, numbers, strings, operators,
// NEWLINE/INDENT/DEDENT), each with its 1-based line and character column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace ollie::spec {

enum class TokenKind {
  Name,     // identifiers and keywords alike; the parser tells them apart
  Number,   // int_value or float_value, see the flags
  String,   // text holds the contents with escapes resolved
  Op,       // operators and delimiters, text is the spelling ("**=", "(", "->", ":=")
  Newline,  // end of a logical line
  Indent,
  Dedent,
  End,  // end of input, always the last token
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;
  SourceLoc loc;
  // Number. Python-valid literals the spec language rejects (imaginary, integers that
  // do not fit int64) are lexed and flagged, so that a skipped `__main__` block may
  // still hold them; the parser reports them where they are used.
  bool is_float = false;
  bool is_imaginary = false;
  bool too_large = false;
  int64_t int_value = 0;
  double float_value = 0.0;
  // String. Same policy: bytes and f-strings are lexed, rejected by the parser.
  bool is_bytes = false;
  bool is_fstring = false;
};

// Most brackets open at once; deeper input is an error, never a stack overflow.
inline constexpr int kMaxBracketDepth = 200;

// Splits `source` into tokens. Throws SpecError (naming `file`) on text that is not
// valid Python tokens: NUL bytes, invalid UTF-8, unterminated strings or brackets,
// inconsistent indentation, malformed numbers, stray characters.
std::vector<Token> tokenize(const std::string& file, const std::string& source);

// A short description of a token for "expected X, found Y" messages.
std::string describe(const Token& token);

}  // namespace ollie::spec
