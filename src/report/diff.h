// A line diff of two texts as side-by-side rows (internal to src/report/): the longest
// common subsequence of their lines, with a run of removed lines next to the run of added
// lines that replaces it.
#pragma once

#include <string>
#include <vector>

namespace ollie::report {

struct DiffRow {
  enum Kind { Same, Changed, Removed, Added } kind = Same;
  int left_line = 0, right_line = 0;  // 1-based; 0 where the side is empty
  std::string left, right;
};

struct Diff {
  std::vector<DiffRow> rows;
  int removed = 0, added = 0;
  // True when the texts were too long to align (more than kMaxCells line pairs after the
  // common head and tail): the rows then show the whole middle as replaced.
  bool coarse = false;
};

inline constexpr long long kMaxCells = 16'000'000;

Diff diff_lines(const std::string& left, const std::string& right);

}  // namespace ollie::report
