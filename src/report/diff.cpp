// The line diff (see diff.h): the common head and tail first, then a longest common
// subsequence of the middle by dynamic programming.
#include "report/diff.h"

#include <algorithm>
#include <cstdint>

#include "support/strings.h"

namespace ollie::report {

namespace {

using Lines = std::vector<std::string>;

// Ops over the middle: 0 same, 1 removed (left), 2 added (right).
std::vector<int> lcs_ops(const Lines& a, size_t a0, size_t a1, const Lines& b, size_t b0,
                         size_t b1) {
  const size_t n = a1 - a0, m = b1 - b0;
  std::vector<int> ops;
  if (static_cast<long long>(n) * static_cast<long long>(m) > kMaxCells) {
    ops.assign(n, 1);
    ops.insert(ops.end(), m, 2);
    return ops;
  }
  // len[i][j]: the LCS of a[a0+i..a1) and b[b0+j..b1).
  std::vector<uint32_t> len((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      ops.push_back(0), ++i, ++j;
    } else if (j == m || (i < n && at(i + 1, j) >= at(i, j + 1))) {
      ops.push_back(1), ++i;
    } else {
      ops.push_back(2), ++j;
    }
  }
  return ops;
}

// Appends a run of removed and added lines, paired row by row.
void flush(Diff& d, std::vector<int>& rem, std::vector<int>& add, const Lines& a, const Lines& b) {
  const size_t rows = std::max(rem.size(), add.size());
  for (size_t k = 0; k < rows; ++k) {
    DiffRow r;
    if (k < rem.size()) r.left_line = rem[k] + 1, r.left = a[static_cast<size_t>(rem[k])];
    if (k < add.size()) r.right_line = add[k] + 1, r.right = b[static_cast<size_t>(add[k])];
    r.kind = k < rem.size() && k < add.size() ? DiffRow::Changed
             : k < rem.size()                 ? DiffRow::Removed
                                              : DiffRow::Added;
    d.rows.push_back(std::move(r));
  }
  d.removed += static_cast<int>(rem.size());
  d.added += static_cast<int>(add.size());
  rem.clear();
  add.clear();
}

}  // namespace

Diff diff_lines(const std::string& left, const std::string& right) {
  const Lines a = strings::split_lines(left), b = strings::split_lines(right);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  Diff d;
  const size_t a1 = a.size() - tail, b1 = b.size() - tail;
  d.coarse = static_cast<long long>(a1 - head) * static_cast<long long>(b1 - head) > kMaxCells;
  std::vector<int> ops(head, 0);
  const std::vector<int> middle = lcs_ops(a, head, a1, b, head, b1);
  ops.insert(ops.end(), middle.begin(), middle.end());
  ops.insert(ops.end(), tail, 0);
  std::vector<int> rem, add;
  int i = 0, j = 0;
  for (int op : ops) {
    if (op == 1) {
      rem.push_back(i++);
    } else if (op == 2) {
      add.push_back(j++);
    } else {
      flush(d, rem, add, a, b);
      d.rows.push_back(
          {DiffRow::Same, i + 1, j + 1, a[static_cast<size_t>(i)], b[static_cast<size_t>(j)]});
      ++i, ++j;
    }
  }
  flush(d, rem, add, a, b);
  return d;
}

}  // namespace ollie::report
