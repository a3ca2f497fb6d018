// The text helpers of strings.h.
#include "support/strings.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace ollie::strings {

std::string trim(std::string_view s, std::string_view blanks) {
  const size_t b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(blanks);
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_lines(std::string_view text, LineEnd end) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t stop = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, stop - start));
    start = stop + 1;
  }
  if (end == LineEnd::CrLf)
    for (auto& l : lines)
      if (!l.empty() && l.back() == '\r') l.pop_back();
  return lines;
}

std::vector<std::string> nonempty_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::string& line : split_lines(text))
    if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

std::string printable(std::string text) {
  for (char& c : text)
    if (!(c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f))) c = '?';
  return text;
}

namespace {

// `ms` milliseconds since the epoch as UTC text, to the second; `with_ms` adds ".mmm".
std::string iso8601(int64_t ms, bool with_ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (with_ms)
    std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  else
    std::snprintf(buf + n, sizeof buf - n, "Z");
  return buf;
}

int64_t now_ms() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
}

}  // namespace

std::string utc_now_iso8601() { return iso8601(now_ms(), false); }

std::string utc_now_iso8601_ms() { return iso8601(now_ms(), true); }

}  // namespace ollie::strings
