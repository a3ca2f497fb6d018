// The reference's gather (numpy take(table, indices, axis), or take_along_axis): copies
// elements of the table, so
// each element keeps its source's value, bound and saturation. An index outside [-V, V)
// is outside the spec's domain: numpy raises IndexError, and so does the reference.
#include <string>

#include "interp/kernels.h"

namespace ollie::interp::detail {

namespace {

// The row index `raw` names in an axis of `rows`, wrapped as numpy wraps a negative one;
// throws UserError outside [-rows, rows).
int64_t wrapped_row(double raw, int64_t rows, size_t axis) {
  const auto i = static_cast<int64_t>(raw);
  if (i < -rows || i >= rows)
    throw UserError("index " + std::to_string(i) + " is out of bounds for axis " +
                    std::to_string(axis) + " with size " + std::to_string(rows) +
                    " (numpy raises IndexError): a gather's indices must lie in [-" +
                    std::to_string(rows) + ", " + std::to_string(rows) + ")");
  return i < 0 ? i + rows : i;
}

// take_along_axis: out[o, j, i] = table[o, w(indices[o, j, i]), i].
Value eval_gather_along(const ir::Node& n, const Value& table, const Value& indices,
                        const std::vector<int64_t>& shape) {
  const auto axis = static_cast<size_t>(n.axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t rows = table.t.shape[axis], count = shape[axis];
  Value out;
  out.t.dtype = n.dtype;
  out.t.shape = shape;
  out.t.data.resize(indices.t.data.size());
  if (!table.exact()) out.e.resize(out.t.data.size());
  if (!table.lo.empty()) out.lo.resize(out.t.data.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        const auto at = static_cast<size_t>((o * count + j) * inner + i);
        const int64_t row = wrapped_row(indices.t.data[at], rows, axis);
        const auto from = static_cast<size_t>((o * rows + row) * inner + i);
        out.t.data[at] = table.t.data[from];
        if (!table.exact()) out.e[at] = table.e[from];
        if (!table.lo.empty()) out.lo[at] = table.lo[from];
      }
  return out;
}

}  // namespace

Value eval_gather(const ir::Node& n, const Value& table, const Value& indices,
                  const std::vector<int64_t>& shape) {
  OLLIE_CHECK(indices.exact(), "gather indices carry a bound");
  if (n.along) return eval_gather_along(n, table, indices, shape);
  const auto axis = static_cast<size_t>(n.axis);
  const auto& ts = table.t.shape;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= ts[d];
  for (size_t d = axis + 1; d < ts.size(); ++d) inner *= ts[d];
  const int64_t rows = ts[axis], count = indices.t.size();
  Value out;
  out.t.dtype = n.dtype;
  out.t.shape = shape;
  out.t.data.resize(static_cast<size_t>(outer * count * inner));
  if (!table.exact()) out.e.resize(out.t.data.size());
  if (!table.lo.empty()) out.lo.resize(out.t.data.size());
  for (int64_t j = 0; j < count; ++j) {
    const int64_t row = wrapped_row(indices.t.data[static_cast<size_t>(j)], rows, axis);
    for (int64_t o = 0; o < outer; ++o) {
      const auto from = static_cast<size_t>((o * rows + row) * inner);
      const auto to = static_cast<size_t>((o * count + j) * inner);
      const auto len = static_cast<size_t>(inner);
      std::copy_n(table.t.data.begin() + static_cast<long>(from), len,
                  out.t.data.begin() + static_cast<long>(to));
      if (!table.exact())
        std::copy_n(table.e.begin() + static_cast<long>(from), len,
                    out.e.begin() + static_cast<long>(to));
      if (!table.lo.empty())
        std::copy_n(table.lo.begin() + static_cast<long>(from), len,
                    out.lo.begin() + static_cast<long>(to));
    }
  }
  return out;
}

}  // namespace ollie::interp::detail
