// Formatting of located diagnostics (file:line:col, source line, caret, hint).
#include "support/error.h"

#include <sstream>

namespace ollie {

namespace {

std::string source_line(const std::string& source, int line) {
  int current = 1;
  size_t start = 0;
  while (current < line) {
    size_t nl = source.find('\n', start);
    if (nl == std::string::npos) return "";
    start = nl + 1;
    ++current;
  }
  size_t end = source.find('\n', start);
  std::string text =
      source.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!text.empty() && text.back() == '\r') text.pop_back();
  return text;
}

}  // namespace

std::string format_diagnostic(const std::string& file, const std::string& source, SourceLoc loc,
                              const std::string& message, const std::string& hint) {
  std::ostringstream out;
  out << file;
  if (loc.valid()) out << ":" << loc.line << ":" << loc.col;
  out << ": error: " << message << "\n";
  if (loc.valid()) {
    std::string text = source_line(source, loc.line);
    out << "  " << text << "\n  ";
    // Keep tabs so the caret lines up under tab-indented source.
    for (int i = 1; i < loc.col && i - 1 < static_cast<int>(text.size()); ++i)
      out << (text[i - 1] == '\t' ? '\t' : ' ');
    out << "^\n";
  }
  if (!hint.empty()) out << "hint: " << hint << "\n";
  std::string s = out.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace ollie
