// The random inputs of the suites: seeded draws per distribution, in chunks any thread
// may draw (input_draw.h), and make_inputs for `ollie eval` and the tests.
#include <algorithm>
#include <cmath>
#include <thread>

#include "support/error.h"
#include "support/half.h"
#include "support/random.h"
#include "verify/input_draw.h"
#include "verify/polynomial.h"

namespace ollie::verify {
namespace {

// Per parameter, 1/sqrt(fan-in) when it is (through layout ops) the right operand of a
// contraction, as a trained model's weights are drawn: unit-variance weights would push
// every product, and every exp after it, far out of range.
std::vector<double> weight_scales(const ir::Graph& g) {
  std::vector<double> scale(g.params.size(), 1.0);
  auto param_of = [&](ir::ValueId v) -> int {
    for (;;) {
      const ir::Node& n = g.node(v);
      if (n.kind == ir::OpKind::Input) {
        for (size_t i = 0; i < g.inputs.size(); ++i)
          if (g.inputs[i] == v) return static_cast<int>(i);
        return -1;
      }
      const bool layout = n.kind == ir::OpKind::Reshape || n.kind == ir::OpKind::Transpose ||
                          n.kind == ir::OpKind::Broadcast || n.kind == ir::OpKind::Slice ||
                          n.kind == ir::OpKind::Convert;
      if (!layout) return -1;
      v = n.operands[0];
    }
  };
  for (const auto& n : g.nodes) {
    if (n.kind != ir::OpKind::Contract) continue;
    const int p = param_of(n.operands[1]);
    if (p < 0) continue;
    const auto& rhs_shape = g.node(n.operands[1]).shape;
    double fan_in = 1;
    for (size_t i = 0; i < n.rhs_labels.size(); ++i)
      if (std::find(n.out_labels.begin(), n.out_labels.end(), n.rhs_labels[i]) ==
          n.out_labels.end())
        fan_in *= static_cast<double>(std::max<int64_t>(1, rhs_shape[i].evaluate(g.bound_dims)));
    scale[static_cast<size_t>(p)] =
        std::min(scale[static_cast<size_t>(p)], 1.0 / std::sqrt(fan_in));
  }
  return scale;
}

// An index array of a table with `rows` rows along the gathered axis: uniform in [-rows,
// rows), except that every run of 8 consecutive elements (from an offset drawn per set and
// parameter) holds the edges -rows, -1, 0 and rows - 1, so each suite's indices wrap
// negatives, reach both ends and repeat.
void fill_indices(double* out, size_t n, size_t first, int64_t rows, uint64_t offset,
                  random::Xoshiro256& g) {
  const double edges[] = {static_cast<double>(-rows), -1.0, 0.0, static_cast<double>(rows - 1)};
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = (first + i + offset) % 8;
    out[i] =
        r < 4 ? edges[r]
              : static_cast<double>(
                    static_cast<int64_t>(random::below(g, static_cast<uint64_t>(2 * rows))) - rows);
  }
}

// Elements per random stream: each chunk of each parameter has its own generator
// (random::Xoshiro256(seed, stream)), so a tensor's values do not depend on the others'
// sizes, and chunks may be drawn in any order with the same result.
constexpr size_t kChunk = size_t{1} << 16;

// The largest power of two at most `x` (x > 0): a weight scale that keeps products of
// exact constants exact.
double power_of_two_below(double x) { return std::exp2(std::floor(std::log2(x))); }

// Exact values real data is full of: 0, +-1, 0.5, 2 and other powers of two.
constexpr double kConstants[] = {0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.25, 4.0, -0.25};

// Distribution::Constants for out[0, n), elements first .. first + n of a parameter whose
// rows (its last dim) have `row` elements. Each row, by a hash of (seed, param, row) so the
// chunking does not matter, is one of: every element the same constant (rows of equal
// values); elements drawn from the constants, the largest of which recurs (ties for the
// max); normal values with about one in eight replaced by a constant. A parameter of one
// element (a scalar such as a temperature) is exactly 1.
void fill_constants(double* out, size_t n, size_t first, size_t row, uint64_t row_seed,
                    random::Xoshiro256& g, double scale) {
  using random::below;
  const double s = power_of_two_below(scale);
  if (first == 0 && n == 1 && row <= 1) {
    out[0] = 1.0;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t r = (first + i) / std::max<size_t>(1, row);
    const uint64_t h = random::mix64(row_seed ^ random::mix64(r + 1));
    switch (h % 3) {
      case 0: out[i] = kConstants[(h >> 8) % std::size(kConstants)] * s; break;
      case 1: out[i] = kConstants[below(g, std::size(kConstants))] * s; break;
      default:
        out[i] = below(g, 8) == 0 ? kConstants[below(g, std::size(kConstants))] * s
                                  : static_cast<double>(static_cast<float>(random::normal(g) * s));
    }
  }
}

// Fills out[0, n) with one chunk of a parameter's values (elements first .. first + n;
// rows of `row` elements, row_seed for Distribution::Constants).
void fill_chunk(double* out, size_t n, random::Xoshiro256& g, ir::DType dtype, Distribution d,
                double scale, int64_t k, size_t first, size_t row, uint64_t row_seed) {
  using random::below;
  using random::normal;
  switch (dtype) {
    case ir::DType::F32:
    case ir::DType::F64:
    case ir::DType::F16:
    case ir::DType::BF16: {
      auto keep = [dtype](double x) {
        switch (dtype) {
          case ir::DType::F32: return static_cast<double>(static_cast<float>(x));
          case ir::DType::F16: return static_cast<double>(ollie_half::round_f16(x));
          case ir::DType::BF16: return static_cast<double>(ollie_half::round_bf16(x));
          default: return x;
        }
      };
      switch (d) {
        case Distribution::Integer: {
          const auto width = static_cast<uint32_t>(2 * k + 1);  // k <= kMaxIntegerRange
          for (size_t i = 0; i < n; ++i)
            out[i] = static_cast<double>(static_cast<int64_t>(below(g, width)) - k);
          return;
        }
        case Distribution::Normal:
        case Distribution::Subnormal:  // its tiny parameters come with a tiny scale
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale);
          return;
        case Distribution::Wide:
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale * 30.0);
          return;
        case Distribution::Offset:
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale + 100.0);
          return;
        case Distribution::Ties:
          for (size_t i = 0; i < n; ++i)
            out[i] = static_cast<double>(static_cast<int64_t>(below(g, 129)) - 64) / 8.0;
          return;
        case Distribution::Constants:
          fill_constants(out, n, first, row, row_seed, g, scale);
          return;
        case Distribution::Special: {
          // About 1% of the elements: NaN, +Inf, -Inf, 0 or -0, each as likely.
          const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0};
          for (size_t i = 0; i < n; ++i) {
            double x = normal(g) * scale;
            if (below(g, 100) == 0) x = specials[below(g, 5)];
            out[i] = keep(x);
          }
          return;
        }
      }
      return;
    }
    case ir::DType::I32:
    case ir::DType::I64:
      for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<double>(static_cast<int64_t>(below(g, 17)) - 8);
      return;
    case ir::DType::Bool:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(g.next() >> 63);
      return;
  }
}

// Distribution::Subnormal: which parameters of `graph` are drawn at their dtype's smallest
// normal: the float parameter with the most elements at the bound dims (the first of
// equals), the data a spec works on (activations, a cache, a matrix), while the others
// (weights, scales) stay ordinary, so its products with them land near 2^-126.
std::vector<bool> tiny_params(const ir::Graph& graph) {
  std::vector<bool> tiny(graph.params.size(), false);
  int64_t most = -1;
  size_t largest = 0;
  for (size_t i = 0; i < graph.params.size(); ++i) {
    if (!ir::is_float(graph.params[i].dtype)) continue;
    const int64_t n =
        ir::element_count(ir::evaluate_shape(graph.params[i].shape, graph.bound_dims));
    if (n > most) most = n, largest = i;
  }
  if (most >= 0) tiny[largest] = true;
  return tiny;
}

}  // namespace

std::vector<int64_t> index_ranges(const ir::Graph& graph) {
  const auto axes = ir::gather_index_axes(graph);
  std::vector<int64_t> rows(graph.params.size(), 0);
  for (size_t p = 0; p < axes.size(); ++p)
    for (const auto& axis : axes[p]) {
      const int64_t v = axis.evaluate(graph.bound_dims);
      rows[p] = rows[p] == 0 ? v : std::min(rows[p], v);
    }
  return rows;
}

InputDraw::InputDraw(const ir::Graph& graph, const std::vector<uint64_t>& seeds, Distribution d,
                     int64_t k)
    : InputDraw(graph, seeds, std::vector<Distribution>(seeds.size(), d), k) {}

InputDraw::InputDraw(const ir::Graph& graph, const std::vector<uint64_t>& seeds,
                     const std::vector<Distribution>& ds, int64_t k)
    : seeds_(seeds),
      ds_(ds),
      k_(k),
      scales_(weight_scales(graph)),
      index_ranges_(index_ranges(graph)) {
  OLLIE_CHECK(ds.size() == seeds.size(), "one distribution per input set");
  for (Distribution d : ds)
    OLLIE_CHECK(d != Distribution::Integer || (k > 0 && k <= kMaxIntegerRange),
                "integer range out of bounds");
  for (size_t set = 0; set < seeds.size(); ++set) {
    std::vector<interp::Tensor> inputs;
    for (size_t pi = 0; pi < graph.params.size(); ++pi) {
      const auto& p = graph.params[pi];
      interp::Tensor t;
      t.dtype = p.dtype;
      t.shape = ir::evaluate_shape(p.shape, graph.bound_dims);
      t.data.resize(static_cast<size_t>(ir::element_count(t.shape)));
      for (size_t c = 0; c * kChunk < t.data.size(); ++c) chunks_.push_back({set, pi, c});
      inputs.push_back(std::move(t));
    }
    sets_.push_back(std::move(inputs));
    tiny_.push_back(ds[set] == Distribution::Subnormal ? tiny_params(graph) : std::vector<bool>());
  }
}

void InputDraw::help(const std::atomic<bool>* stop) {
  for (;;) {
    if (stop && stop->load(std::memory_order_relaxed)) return;
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= chunks_.size()) return;
    const Chunk& c = chunks_[i];
    interp::Tensor& t = sets_[c.set][c.param];
    const uint64_t stream = (uint64_t{c.param} << 32) | c.index;
    random::Xoshiro256 g(seeds_[c.set], stream);
    const size_t begin = c.index * kChunk;
    const size_t row =
        t.shape.empty() ? 1 : static_cast<size_t>(std::max<int64_t>(1, t.shape.back()));
    const uint64_t row_seed = random::mix64(seeds_[c.set] ^ random::mix64(~uint64_t{c.param}));
    if (const int64_t rows = index_ranges_[c.param]; rows > 0) {
      fill_indices(t.data.data() + begin, std::min(kChunk, t.data.size() - begin), begin, rows,
                   row_seed, g);
      continue;
    }
    const bool tiny = !tiny_[c.set].empty() && tiny_[c.set][c.param];
    const double scale = tiny ? ir::smallest_normal(t.dtype) : scales_[c.param];
    fill_chunk(t.data.data() + begin, std::min(kChunk, t.data.size() - begin), g, t.dtype,
               ds_[c.set], scale, k_, begin, row, row_seed);
  }
}

std::vector<interp::Tensor> make_inputs(const ir::Graph& graph, uint64_t seed, Distribution d,
                                        int threads) {
  int64_t k = 0;
  if (d == Distribution::Integer) {
    const ExactRange range = exact_range(graph);
    OLLIE_CHECK(range.k > 0, "integer inputs for a spec they are not exact for: " + range.reason);
    k = range.k;
  }
  InputDraw draw(graph, {seed}, d, k);
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back([&] { draw.help(); });
  draw.help();
  for (auto& h : helpers) h.join();
  return std::move(draw.take()[0]);
}

}  // namespace ollie::verify
