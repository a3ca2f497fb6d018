// Small text helpers shared by the stages: trimming, splitting into lines, the current
// time as ISO-8601 UTC text. Each caller names the variant it needs; no locale is used.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ollie::strings {

// The characters trim strips by default: space, tab, carriage return, newline.
inline constexpr std::string_view kBlanks = " \t\r\n";
// Within one line of text: space, tab and a stray carriage return.
inline constexpr std::string_view kLineBlanks = " \t\r";

// `s` without the characters of `blanks` at either end ("" when it has nothing else).
std::string trim(std::string_view s, std::string_view blanks = kBlanks);

// What split_lines does with the line ends.
enum class LineEnd {
  Lf,    // only '\n' ends a line; a '\r' stays in the text
  CrLf,  // a '\r' that ends a line (before its '\n' or at the end of the text) is dropped
};

// The lines of `text`, split at '\n' as std::getline does: empty lines inside are kept,
// and a final '\n' does not start another line ("" has no lines, "\n" has one empty).
std::vector<std::string> split_lines(std::string_view text, LineEnd end = LineEnd::Lf);

// The lines of `text` that are not empty (split at '\n' only).
std::vector<std::string> nonempty_lines(std::string_view text);

// `text` with every byte that is not printable ASCII, a newline or a tab replaced by '?'
// (what a child process printed, made safe for messages and JSON).
std::string printable(std::string text);

// Now, as "YYYY-MM-DDTHH:MM:SSZ" (UTC).
std::string utc_now_iso8601();
// Now, as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, milliseconds).
std::string utc_now_iso8601_ms();

}  // namespace ollie::strings
