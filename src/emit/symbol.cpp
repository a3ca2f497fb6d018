// The kernel's exported name (`--symbol`): its check, and the renaming of a stored kernel
// (which always exports ollie_kernel) to it, so two kernels can be linked into one program.
#include <array>
#include <regex>
#include <string_view>

#include "emit/emit.h"
#include "support/error.h"

namespace ollie::emit {

bool is_c_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

namespace {

bool is_keyword(const std::string& s) {
  static constexpr std::array<std::string_view, 64> kKeywords = {
      "alignas",  "alignof",  "asm",      "auto",    "bool",      "break",     "case",
      "catch",    "char",     "class",    "const",   "constexpr", "continue",  "decltype",
      "default",  "delete",   "do",       "double",  "else",      "enum",      "explicit",
      "export",   "extern",   "false",    "float",   "for",       "friend",    "goto",
      "if",       "inline",   "int",      "long",    "mutable",   "namespace", "new",
      "noexcept", "nullptr",  "operator", "private", "protected", "public",    "register",
      "restrict", "return",   "short",    "signed",  "sizeof",    "static",    "struct",
      "switch",   "template", "this",     "throw",   "true",      "try",       "typedef",
      "typename", "union",    "unsigned", "using",   "virtual",   "void",      "volatile",
      "while"};
  for (std::string_view k : kKeywords)
    if (s == k) return true;
  return false;
}

}  // namespace

void check_symbol(const std::string& symbol) {
  if (!is_c_identifier(symbol))
    throw UserError("--symbol '" + symbol +
                    "': not a C identifier; use letters, digits and '_', not starting with a "
                    "digit, e.g. --symbol matmul_f32");
  if (is_keyword(symbol))
    throw UserError("--symbol '" + symbol + "': a C/C++ keyword; choose another name");
  if (symbol == "ollie_entry" || symbol == "ollie_signature")
    throw UserError("--symbol '" + symbol +
                    "': the runner's adapter defines this name; choose another");
}

std::string with_symbol(const std::string& source, const std::string& symbol) {
  if (symbol == kDefaultSymbol) return source;
  static const std::regex kName(R"(\bollie_kernel\b)");
  return std::regex_replace(source, kName, symbol);
}

}  // namespace ollie::emit
