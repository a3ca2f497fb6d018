// Tokenizer for spec files, following CPython's tokenizer rules closely enough that
// every file numpy can run lexes the same way, and every bad byte gets a located error.
#include "spec/lexer.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace ollie::spec {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

std::string hex_byte(unsigned char b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Longest match first, so "**=" wins over "**" and "*".
const char* const kOperators[] = {
    "**=", "//=", ">>=", "<<=", "...", "**", "//", "<<", ">>", "<=", ">=", "==",
    "!=",  "->",  ":=",  "+=",  "-=",  "*=", "/=", "%=", "@=", "&=", "|=", "^=",
    "+",   "-",   "*",   "/",   "%",   "@",  "&",  "|",  "^",  "~",  "<",  ">",
    "(",   ")",   "[",   "]",   "{",   "}",  ",",  ":",  ".",  ";",  "=",
};

struct IndentLevel {
  int width = 0;      // tabs advance to the next multiple of 8, as CPython
  int alt_width = 0;  // tabs count 1: disagreement means tabs and spaces are mixed ambiguously
};

class Lexer {
 public:
  Lexer(const std::string& file, const std::string& src) : file_(file), src_(src) {}

  std::vector<Token> run() {
    validate_encoding();
    if (src_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // a UTF-8 BOM is invisible
    indents_.push_back({});
    bool at_line_start = true;
    while (true) {
      if (at_line_start && brackets_.empty()) {
        if (!handle_line_start()) break;
        at_line_start = false;
      }
      if (eof()) break;
      char c = cur();
      if (c == ' ' || c == '\t' || c == '\f') {
        bump();
      } else if (c == '#') {
        skip_comment();
      } else if (c == '\\') {
        line_continuation();
      } else if (c == '\n' || c == '\r') {
        SourceLoc at = loc();
        consume_newline();
        if (brackets_.empty()) {
          push(TokenKind::Newline, "", at);
          at_line_start = true;
        }
      } else if (is_ident_start(c)) {
        lex_name_or_string();
      } else if (is_digit(c) || (c == '.' && is_digit(peek(1)))) {
        lex_number();
      } else if (c == '"' || c == '\'') {
        lex_string(loc(), false, false, false);
      } else {
        lex_operator();
      }
    }
    if (!brackets_.empty()) {
      auto [ch, at] = brackets_.back();
      fail(at, std::string("'") + ch + "' was never closed",
           std::string("add the matching '") + closer(ch) + "'");
    }
    SourceLoc end = loc();
    if (!tokens_.empty() && tokens_.back().kind != TokenKind::Newline &&
        tokens_.back().kind != TokenKind::Dedent)
      push(TokenKind::Newline, "", end);
    for (size_t i = 1; i < indents_.size(); ++i) push(TokenKind::Dedent, "", end);
    push(TokenKind::End, "", end);
    return std::move(tokens_);
  }

 private:
  bool eof() const { return pos_ >= src_.size(); }
  char cur() const { return eof() ? '\0' : src_[pos_]; }
  char peek(size_t n) const { return pos_ + n < src_.size() ? src_[pos_ + n] : '\0'; }
  SourceLoc loc() const { return {line_, col_}; }

  // Columns count characters, so UTF-8 continuation bytes do not advance them.
  void bump() {
    unsigned char b = static_cast<unsigned char>(src_[pos_++]);
    if (b == '\n') {
      ++line_;
      col_ = 1;
    } else if (!is_continuation(b)) {
      ++col_;
    }
  }

  [[noreturn]] void fail(SourceLoc at, const std::string& message, const std::string& hint = "") {
    throw SpecError(file_, src_, at, message, hint);
  }

  void push(TokenKind kind, std::string text, SourceLoc at) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.loc = at;
    tokens_.push_back(std::move(t));
  }

  static char closer(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

  // The echoed source line must not carry the bad byte: what() is a C string, so a NUL
  // would cut the message short, and a stray byte would make the message invalid UTF-8.
  [[noreturn]] void fail_at_byte(size_t index, SourceLoc at, const std::string& message,
                                 const std::string& hint) {
    std::string shown = src_;
    shown[index] = '?';
    for (size_t k = index + 1;
         k < shown.size() && is_continuation(static_cast<unsigned char>(shown[k])); ++k)
      shown[k] = '?';
    throw SpecError(file_, shown, at, message, hint);
  }

  // A first pass so that later code may assume valid UTF-8 without NUL bytes.
  void validate_encoding() {
    int line = 1, col = 1;
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    size_t n = src_.size();
    for (size_t i = 0; i < n;) {
      unsigned char b = s[i];
      SourceLoc at{line, col};
      if (b == 0)
        fail_at_byte(i, at, "NUL byte in source",
                     "a spec is a text file; remove the NUL (\\0) character");
      if (b == '\r' && (i + 1 >= n || s[i + 1] != '\n'))
        fail_at_byte(i, at, "carriage return (\\r) without a following newline",
                     "save the file with \\n (Unix) or \\r\\n (Windows) line endings");
      size_t len = 1;
      unsigned char lo = 0x80, hi = 0xBF;
      if (b < 0x80) {
        len = 1;
      } else if (b >= 0xC2 && b <= 0xDF) {
        len = 2;
      } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        if (b == 0xE0) lo = 0xA0;
        if (b == 0xED) hi = 0x9F;  // no UTF-16 surrogates
      } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        if (b == 0xF0) lo = 0x90;
        if (b == 0xF4) hi = 0x8F;
      } else {
        fail_at_byte(i, at, "invalid UTF-8 byte " + hex_byte(b), "save the file as UTF-8");
      }
      for (size_t k = 1; k < len; ++k) {
        unsigned char lim_lo = k == 1 ? lo : 0x80, lim_hi = k == 1 ? hi : 0xBF;
        if (i + k >= n || s[i + k] < lim_lo || s[i + k] > lim_hi)
          fail_at_byte(i, at, "invalid UTF-8 sequence starting with byte " + hex_byte(b),
                       "save the file as UTF-8");
      }
      if (b == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
      i += len;
    }
  }

  // Measures the indentation of a new line, skips it if blank, emits INDENT/DEDENTs.
  // Returns false at end of input.
  bool handle_line_start() {
    while (true) {
      int width = 0, alt = 0;
      while (!eof() && (cur() == ' ' || cur() == '\t' || cur() == '\f')) {
        if (cur() == ' ') {
          ++width;
          ++alt;
        } else if (cur() == '\t') {
          width = (width / 8 + 1) * 8;
          ++alt;
        } else {
          width = alt = 0;  // form feed resets the count, as in CPython
        }
        bump();
      }
      if (eof()) return false;
      if (cur() == '#') skip_comment();
      if (eof()) return false;
      if (cur() == '\n' || cur() == '\r') {
        consume_newline();
        continue;
      }
      SourceLoc at = loc();
      IndentLevel top = indents_.back();
      const char* tab_hint = "indent with spaces only (4 per level)";
      if (width == top.width) {
        if (alt != top.alt_width)
          fail(at, "inconsistent use of tabs and spaces in indentation", tab_hint);
      } else if (width > top.width) {
        if (alt <= top.alt_width)
          fail(at, "inconsistent use of tabs and spaces in indentation", tab_hint);
        indents_.push_back({width, alt});
        push(TokenKind::Indent, "", at);
      } else {
        while (indents_.size() > 1 && width < indents_.back().width) {
          indents_.pop_back();
          push(TokenKind::Dedent, "", at);
        }
        if (width != indents_.back().width)
          fail(at, "unindent does not match any outer indentation level",
               "indent this line to the same column as the block it belongs to");
        if (alt != indents_.back().alt_width)
          fail(at, "inconsistent use of tabs and spaces in indentation", tab_hint);
      }
      return true;
    }
  }

  void skip_comment() {
    while (!eof() && cur() != '\n' && cur() != '\r') bump();
  }

  void consume_newline() {
    if (cur() == '\r') bump();
    if (cur() == '\n') bump();
  }

  void line_continuation() {
    SourceLoc at = loc();
    bump();
    if (eof())
      fail(at, "unexpected end of file after line continuation character '\\'",
           "remove the trailing backslash");
    if (cur() != '\n' && cur() != '\r')
      fail(at, "unexpected character after line continuation character '\\'",
           "a backslash continues a line only as the very last character of the line");
    consume_newline();
    if (eof())
      fail(at, "unexpected end of file after line continuation character '\\'",
           "remove the trailing backslash");
  }

  void lex_name_or_string() {
    SourceLoc at = loc();
    size_t start = pos_;
    while (!eof() && is_ident_char(cur())) bump();
    std::string name = src_.substr(start, pos_ - start);
    if (!eof() && static_cast<unsigned char>(cur()) >= 0x80)
      fail(loc(), "non-ASCII character in a name", "use ASCII letters, digits and '_' in names");
    if ((cur() == '"' || cur() == '\'') && name.size() <= 2) {
      bool raw = false, bytes = false, fstr = false, other = false;
      for (char c : name) {
        char l = static_cast<char>(c | 0x20);
        if (l == 'r' && !raw)
          raw = true;
        else if (l == 'b' && !bytes && !fstr)
          bytes = true;
        else if (l == 'f' && !fstr && !bytes)
          fstr = true;
        else if (l == 'u' && name.size() == 1) {
        } else
          other = true;
      }
      if (!other) {
        lex_string(at, raw, bytes, fstr);
        return;
      }
    }
    push(TokenKind::Name, std::move(name), at);
  }

  // Reads digits of the given base, with single '_' separators between digits.
  // Returns the digits without separators; `ok` is false on a misplaced '_'.
  std::string read_digits(int base, bool allow_leading_underscore, bool& ok) {
    std::string out;
    ok = true;
    bool need_digit = allow_leading_underscore && cur() == '_';
    if (need_digit) bump();
    while (!eof()) {
      char c = cur();
      if (c == '_') {
        if (out.empty() && !need_digit) {
          ok = false;
          return out;
        }
        bump();
        if (eof() || digit_value(cur()) >= base) {
          ok = false;
          return out;
        }
        continue;
      }
      if (digit_value(c) >= base || (base == 10 && !is_digit(c))) break;
      out += c;
      bump();
    }
    return out;
  }

  void lex_number() {
    SourceLoc at = loc();
    Token t;
    t.kind = TokenKind::Number;
    t.loc = at;
    size_t start = pos_;
    char p = static_cast<char>(peek(1) | 0x20);
    bool ok = true;
    if (cur() == '0' && (p == 'x' || p == 'o' || p == 'b')) {
      int base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
      const char* kind = p == 'x' ? "hexadecimal" : p == 'o' ? "octal" : "binary";
      bump();
      bump();
      std::string digits = read_digits(base, true, ok);
      if (!ok || digits.empty() || is_ident_char(cur()))
        fail(at, std::string("invalid ") + kind + " literal",
             std::string("a ") + kind + " literal needs at least one valid digit after its prefix");
      convert_int(t, digits, base);
    } else {
      std::string digits;
      if (cur() != '.') {
        digits = read_digits(10, false, ok);
        if (!ok)
          fail(at, "invalid decimal literal", "'_' may only separate two digits, as in 1_000");
      }
      std::string text = digits;
      if (cur() == '.') {
        t.is_float = true;
        text += '.';
        bump();
        if (is_digit(cur())) {
          text += read_digits(10, false, ok);
          if (!ok)
            fail(at, "invalid decimal literal", "'_' may only separate two digits, as in 1_000");
        }
      }
      if ((cur() == 'e' || cur() == 'E') &&
          (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
        t.is_float = true;
        text += 'e';
        bump();
        if (cur() == '+' || cur() == '-') {
          text += cur();
          bump();
        }
        text += read_digits(10, false, ok);
        if (!ok)
          fail(at, "invalid decimal literal", "'_' may only separate two digits, as in 1e1_0");
      }
      if (cur() == 'j' || cur() == 'J') {
        t.is_imaginary = true;
        bump();
      }
      if (is_ident_char(cur()))
        fail(at, "invalid decimal literal", "separate a number from a following name with a space");
      if (t.is_float || t.is_imaginary) {
        t.is_float = true;
        t.float_value = std::strtod(text.c_str(), nullptr);
      } else {
        if (digits.size() > 1 && digits[0] == '0' &&
            digits.find_first_not_of('0') != std::string::npos)
          fail(at, "leading zeros in decimal integer literals are not permitted",
               "drop the leading zeros, or write 0o17 for an octal number");
        convert_int(t, digits, 10);
      }
    }
    t.text = src_.substr(start, pos_ - start);
    tokens_.push_back(std::move(t));
  }

  static void convert_int(Token& t, const std::string& digits, int base) {
    uint64_t value = 0;
    const uint64_t limit = static_cast<uint64_t>(INT64_MAX);
    for (char c : digits) {
      uint64_t d = static_cast<uint64_t>(digit_value(c));
      if (value > (limit - d) / static_cast<uint64_t>(base)) {
        t.too_large = true;
        return;
      }
      value = value * static_cast<uint64_t>(base) + d;
    }
    t.int_value = static_cast<int64_t>(value);
  }

  void lex_string(SourceLoc at, bool raw, bool bytes, bool fstr) {
    char quote = cur();
    bool triple = peek(1) == quote && peek(2) == quote;
    bump();
    if (triple) {
      bump();
      bump();
    }
    std::string out;
    const char* unterminated_hint =
        triple ? "close it with three matching quotes"
               : "close the string on the same line, or use a triple-quoted string";
    while (true) {
      if (eof())
        fail(at, triple ? "unterminated triple-quoted string" : "unterminated string literal",
             unterminated_hint);
      char c = cur();
      if (c == quote) {
        if (!triple) {
          bump();
          break;
        }
        if (peek(1) == quote && peek(2) == quote) {
          bump();
          bump();
          bump();
          break;
        }
      }
      if ((c == '\n' || c == '\r') && !triple)
        fail(at, "unterminated string literal", unterminated_hint);
      if (c == '\\') {
        bump();
        if (eof()) continue;  // reported as unterminated above
        if (raw) {
          out += '\\';
          if (cur() == '\r' || cur() == '\n') {
            if (cur() == '\r') bump();
            bump();
            out += '\n';
          } else {
            out += cur();
            bump();
          }
          continue;
        }
        read_escape(out, bytes);
        continue;
      }
      if (c == '\r' && peek(1) == '\n') {
        bump();
        continue;
      }
      out += c;
      bump();
    }
    Token t;
    t.kind = TokenKind::String;
    t.loc = at;
    t.text = std::move(out);
    t.is_bytes = bytes;
    t.is_fstring = fstr;
    tokens_.push_back(std::move(t));
  }

  // Called just after a backslash in a non-raw string.
  void read_escape(std::string& out, bool bytes) {
    SourceLoc at{loc().line, loc().col - 1};
    char c = cur();
    auto simple = [&](char v) {
      out += v;
      bump();
    };
    switch (c) {
      case '\r':
        bump();
        if (cur() == '\n') bump();
        return;
      case '\n': bump(); return;  // backslash-newline continues the string
      case '\\': return simple('\\');
      case '\'': return simple('\'');
      case '"': return simple('"');
      case 'a': return simple('\a');
      case 'b': return simple('\b');
      case 'f': return simple('\f');
      case 'n': return simple('\n');
      case 'r': return simple('\r');
      case 't': return simple('\t');
      case 'v': return simple('\v');
      default: break;
    }
    if (c >= '0' && c <= '7') {
      uint32_t v = 0;
      for (int k = 0; k < 3 && cur() >= '0' && cur() <= '7'; ++k) {
        v = v * 8 + static_cast<uint32_t>(cur() - '0');
        bump();
      }
      if (bytes)
        out += static_cast<char>(v & 0xFF);
      else
        append_utf8(out, v);
      return;
    }
    int hex_len = c == 'x' ? 2 : (c == 'u' && !bytes) ? 4 : (c == 'U' && !bytes) ? 8 : 0;
    if (hex_len == 0) {  // unknown escapes keep their backslash, as in Python
      out += '\\';
      return;
    }
    bump();
    uint32_t v = 0;
    for (int k = 0; k < hex_len; ++k) {
      if (eof() || digit_value(cur()) >= 16)
        fail(at, std::string("truncated \\") + c + " escape",
             std::string("write exactly ") + std::to_string(hex_len) +
                 " hexadecimal digits after \\" + c);
      v = v * 16 + static_cast<uint32_t>(digit_value(cur()));
      bump();
    }
    if (bytes && c == 'x') {
      out += static_cast<char>(v);
    } else {
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        fail(at, "invalid unicode escape",
             "use a code point up to \\U0010FFFF that is not a surrogate");
      append_utf8(out, v);
    }
  }

  void lex_operator() {
    SourceLoc at = loc();
    char c = cur();
    if (static_cast<unsigned char>(c) >= 0x80)
      fail(at, "non-ASCII character outside a string or comment",
           "use ASCII operators and names; non-ASCII text belongs in strings or comments");
    for (const char* op : kOperators) {
      size_t len = std::strlen(op);
      if (src_.compare(pos_, len, op) != 0) continue;
      for (size_t k = 0; k < len; ++k) bump();
      if (len == 1 && (c == '(' || c == '[' || c == '{')) {
        if (static_cast<int>(brackets_.size()) >= kMaxBracketDepth)
          fail(at,
               "brackets nested too deeply (more than " + std::to_string(kMaxBracketDepth) +
                   " levels)",
               "split the expression into several assignments");
        brackets_.push_back({c, at});
      } else if (len == 1 && (c == ')' || c == ']' || c == '}')) {
        if (brackets_.empty())
          fail(at, std::string("unmatched '") + c + "'", "remove it, or add the opening bracket");
        auto [open, open_at] = brackets_.back();
        if (closer(open) != c)
          fail(at,
               std::string("closing '") + c + "' does not match opening '" + open + "' at line " +
                   std::to_string(open_at.line) + " column " + std::to_string(open_at.col),
               std::string("close the '") + open + "' with '" + closer(open) + "'");
        brackets_.pop_back();
      }
      push(TokenKind::Op, op, at);
      return;
    }
    if (c == '!')
      fail(at, "invalid character '!'", "write 'not x' for negation, '!=' for inequality");
    std::string shown =
        (c >= 32 && c < 127) ? std::string("'") + c + "'" : hex_byte(static_cast<unsigned char>(c));
    fail(at, "invalid character " + shown + " in source",
         "remove it; it is not part of Python syntax");
  }

  const std::string& file_;
  const std::string& src_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
  std::vector<Token> tokens_;
  std::vector<IndentLevel> indents_;
  std::vector<std::pair<char, SourceLoc>> brackets_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& file, const std::string& source) {
  return Lexer(file, source).run();
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::Name: return "'" + token.text + "'";
    case TokenKind::Number: return "number " + token.text;
    case TokenKind::String: return "a string";
    case TokenKind::Op: return "'" + token.text + "'";
    case TokenKind::Newline: return "end of line";
    case TokenKind::Indent: return "an indented block";
    case TokenKind::Dedent: return "the end of the block";
    case TokenKind::End: return "end of file";
  }
  return "a token";
}

}  // namespace ollie::spec
