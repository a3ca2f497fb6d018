// Text for the report's HTML (internal to src/report/): escaping every string that comes
// from a run database (kernel sources, model text, notes), and numbers as people read them.
#pragma once

#include <string>
#include <string_view>

namespace ollie::report {

// `text` safe inside an HTML element or a quoted attribute: & < > " ' become entities,
// and control characters other than newline and tab become U+FFFD.
std::string escape(std::string_view text);

// "1.234 ms", "56.7 us", "2.5 s"; "-" for 0.
std::string time_text(double seconds);
// "12.3 GFLOP/s" from FLOP/s, "45.6 GB/s" from bytes/s.
std::string rate_text(double per_second, const char* unit);
// "0:42", "12:05", "1:02:03".
std::string clock_text(double seconds);
// The colour of a proposer in every chart and legend.
std::string proposer_color(const std::string& proposer);

}  // namespace ollie::report
