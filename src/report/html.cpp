// Escaping and number formatting for the report (see html.h).
#include "report/html.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace ollie::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((c < 0x20 && ch != '\n' && ch != '\t') || c == 0x7f)
          out += "\xEF\xBF\xBD";  // U+FFFD
        else
          out += ch;
    }
  }
  return out;
}

std::string time_text(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "-";
  if (seconds >= 1) return fmt::format("{:.4g} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.4g} ms", seconds * 1e3);
  if (seconds >= 1e-6) return fmt::format("{:.4g} us", seconds * 1e6);
  return fmt::format("{:.4g} ns", seconds * 1e9);
}

std::string rate_text(double per_second, const char* unit) {
  return fmt::format("{:.4g} G{}/s", per_second / 1e9, unit);
}

std::string clock_text(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string proposer_color(const std::string& proposer) {
  static const std::map<std::string, std::string> known = {
      {"baseline", "#111111"}, {"mutate", "#1f77b4"},  {"rewrite", "#ff7f0e"},
      {"llm", "#2ca02c"},      {"cmd", "#9467bd"},     {"warm-start", "#8c564b"},
      {"restart", "#7f7f7f"},  {"confirm", "#17becf"}, {"recipe", "#bc5a45"}};
  const auto it = known.find(proposer);
  if (it != known.end()) return it->second;
  // Another proposer: a colour of its own, the same on every page.
  static const char* others[] = {"#e377c2", "#bcbd22", "#d62728", "#393b79", "#637939"};
  size_t h = 0;
  for (char c : proposer) h = h * 31 + static_cast<unsigned char>(c);
  return others[h % 5];
}

}  // namespace ollie::report
