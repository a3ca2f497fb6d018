// The shape sweep's stratified dims (sweep.h): remainders, multiples of 256, large and
// tiny sizes per dim, shrunk to a cost budget, and repaired for specs with tied dims.
#include "verify/sweep.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "support/error.h"
#include "support/random.h"

namespace ollie::verify {
namespace {

// What the stratification fixed for one dim of one draw; shrinking keeps it.
enum class Pin { None, Large, Multiple256 };

struct Draw {
  ir::DimBindings dims;
  std::vector<Pin> pins;  // per dim of the graph, in g.dims order
};

int64_t bound_of(const ir::Graph& g, const std::string& d) {
  auto it = g.bound_dims.find(d);
  return it == g.bound_dims.end() ? 8 : std::max<int64_t>(1, it->second);
}

int64_t uniform_in(random::Xoshiro256& rng, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(hi - lo + 1));
}

// The smallest size >= lo with remainder r mod 16.
int64_t at_least_with_remainder(int64_t lo, int64_t r) { return lo + ((r - lo % 16) + 16) % 16; }

// A size with remainder r (1..15) for a dim bound at b: half the time next to a multiple
// of 64 (just above or just below), else anywhere up to about the bound.
int64_t mixed_size(random::Xoshiro256& rng, int64_t r, int64_t b) {
  if (rng.next() & 1) {
    const int64_t j = uniform_in(rng, 1, std::max<int64_t>(1, b / 64));
    return (rng.next() & 1) ? 64 * j + r : 64 * j - 16 + r;
  }
  return r + 16 * uniform_in(rng, 0, std::max<int64_t>(1, b / 16));
}

// One dim's value in the draw that has remainder r for it.
int64_t drawn_size(random::Xoshiro256& rng, int64_t r, int64_t b, Pin pin) {
  if (pin == Pin::Large) {
    // In [2b + 1, 4b] with remainder r when that range has room; else the smallest such
    // above (fit_cost brings it down toward 2b + 1 when its cost is over the large cap).
    const int64_t lo = at_least_with_remainder(2 * b + 1, r);
    const int64_t steps = std::max<int64_t>(0, (4 * b - lo) / 16);
    return std::max<int64_t>(1, lo + 16 * uniform_in(rng, 0, steps));
  }
  if (r == 0) return 256 * uniform_in(rng, 1, std::max<int64_t>(1, b / 256));
  if (r <= 3) return r;
  return mixed_size(rng, r, b);
}

// Halves a large size's excess over 2b + 1 (b its dim's bound), keeping its remainder mod
// 16; false when it is at that floor.
bool shrink_large(int64_t& v, int64_t b) {
  const int64_t floor = at_least_with_remainder(2 * b + 1, v % 16);
  if (v <= floor) return false;
  v = floor + 16 * (((v - floor) / 16) / 2);
  return true;
}

// Shrinks a value keeping what the stratification chose: its remainder mod 16, a multiple
// of 256 stays one (at least 256); a large one does not shrink. Returns false when it cannot.
bool shrink(int64_t& v, Pin pin) {
  if (pin == Pin::Large) return false;
  if (pin == Pin::Multiple256) {
    if (v <= 256) return false;
    v = 256 * std::max<int64_t>(1, v / 512);
    return true;
  }
  if (v <= 16) return false;
  const int64_t r = v % 16, m = v / 16;
  v = r == 0 ? 16 * std::max<int64_t>(1, m / 2) : r + 16 * (m / 2);
  return true;
}

// Whether the draw pins a dim large.
bool has_large(const Draw& draw) {
  return std::find(draw.pins.begin(), draw.pins.end(), Pin::Large) != draw.pins.end();
}

// Shrinks unpinned size i, unless that leaves a large draw fewer than `floor` result
// elements (the error of a kernel wrong only at a large size must show on more than one or
// two elements, which may be near zero by chance). False when it did not shrink.
bool shrink_unpinned(const ir::Graph& g, Draw& draw, size_t i, double floor) {
  int64_t& v = draw.dims[g.dims[i]];
  const int64_t before = v;
  if (draw.pins[i] != Pin::None || !shrink(v, Pin::None)) return false;
  if (floor > 0 && sweep_result_elements(g, draw.dims) < floor) {
    v = before;
    return false;
  }
  return true;
}

// Shrinks the draw's largest unpinned sizes until it costs at most `cap` or none can shrink.
void fit_others(const ir::Graph& g, Draw& draw, double cap) {
  const double floor =
      has_large(draw) ? std::min(kSweepLargeElements, sweep_result_elements(g, g.bound_dims)) : 0;
  for (int guard = 0; guard < 256 && sweep_cost(g, draw.dims) > cap; ++guard) {
    std::vector<size_t> order(g.dims.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return draw.dims[g.dims[a]] > draw.dims[g.dims[b]]; });
    bool shrunk = false;
    for (size_t i : order)
      if (shrink_unpinned(g, draw, i, floor)) {
        shrunk = true;
        break;
      }
    if (!shrunk)
      for (size_t i : order)
        if (draw.pins[i] != Pin::None && shrink(draw.dims[g.dims[i]], draw.pins[i])) {
          shrunk = true;
          break;
        }
    if (!shrunk) return;
  }
}

// fit_others; then, while the draw costs more than `large_cap`, its large sizes toward
// twice their bound (a dim whose cost grows faster than linearly stays nearer 2x, one
// that grows linearly reaches 4x).
void fit_cost(const ir::Graph& g, Draw& draw, double cap, double large_cap) {
  fit_others(g, draw, cap);
  for (int guard = 0; guard < 64 && sweep_cost(g, draw.dims) > large_cap; ++guard) {
    bool shrunk = false;
    for (size_t i = 0; i < g.dims.size() && !shrunk; ++i)
      shrunk =
          draw.pins[i] == Pin::Large && shrink_large(draw.dims[g.dims[i]], bound_of(g, g.dims[i]));
    if (!shrunk) return;
    fit_others(g, draw, cap);
  }
}

// A random permutation of 0..n-1.
std::vector<int> permutation(random::Xoshiro256& rng, int n) {
  std::vector<int> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (int i = n - 1; i > 0; --i)
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(uniform_in(rng, 0, i))]);
  return p;
}

// One dim's remainder per draw (the first 16 draws): a random permutation of 0..15 with
// 0 at draw zj (its multiple of 256) and at least 4 at draw lj (its large size, which
// must not take the remainders that fix 1, 2, 3 or the multiple of 256), and at the other
// dims' large draws (`others_large`) none of the sizes 1, 2, 3: a large draw with the
// others at size 1 has a single result element, too few to see a kernel wrong by a small
// factor only at that large size.
std::vector<int> remainders(random::Xoshiro256& rng, int lj, int zj,
                            const std::vector<int>& others_large) {
  std::vector<int> r = permutation(rng, 16);
  auto at = [&](int j) -> int& { return r[static_cast<size_t>(j)]; };
  if (zj < 16)
    for (int k = 0; k < 16; ++k)
      if (at(k) == 0) std::swap(at(k), at(zj));
  auto is_other_large = [&](int j) {
    return std::find(others_large.begin(), others_large.end(), j) != others_large.end();
  };
  // Draw j's remainder swapped for one of at least 4 from a draw that may take 1, 2, 3.
  auto at_least_4 = [&](int j) {
    for (int k = 0; k < 16; ++k)
      if (k != zj && k != lj && k != j && !is_other_large(k) && at(k) >= 4) {
        std::swap(at(k), at(j));
        return;
      }
  };
  if (lj < 16 && lj != zj && at(lj) < 4) at_least_4(lj);
  for (int j : others_large)
    if (j < 16 && j != zj && j != lj && at(j) >= 1 && at(j) <= 3) at_least_4(j);
  return r;
}

// The draw made acceptable to a spec that rejects it: first one dim one larger (a spec
// that needs an even size, such as RoPE's pairs), else the drawn sizes the spec accepts
// added one dim at a time to the bound dims (dims tied by a reshape, DM = H * HD), kept
// only when that costs at most `cap` or twice the draw (the bound sizes kept do not shrink).
std::optional<ir::Graph> accepted_part(const ir::Graph& g, const GraphAt& graph_at,
                                       const ir::DimBindings& drawn, double cap) {
  for (const auto& d : g.dims) {
    ir::DimBindings trial = drawn;
    ++trial[d];
    try {
      return graph_at(trial);
    } catch (const UserError&) {
      // Not this dim: try the next one.
    }
  }
  ir::DimBindings current = g.bound_dims;
  std::optional<ir::Graph> best;
  for (const auto& d : g.dims) {
    ir::DimBindings trial = current;
    trial[d] = drawn.at(d);
    if (trial == current) continue;
    try {
      best = graph_at(trial);
      current = trial;
    } catch (const UserError&) {
      // This dim's drawn size is not accepted with the others: keep its bound size.
    }
  }
  const double allowed = std::max(cap, 2 * sweep_cost(g, drawn));
  if (best && allowed > 0 && sweep_cost(*best, best->bound_dims) > allowed) return std::nullopt;
  return best;
}

}  // namespace

double sweep_cost(const ir::Graph& g, const ir::DimBindings& dims) {
  ir::Graph at = g;
  at.bound_dims = dims;
  try {
    const ir::Cost c = ir::cost(at);
    // Every value the reference interpreter makes (with its bound) costs it about as
    // much as a few multiply-adds: attention's S x S scores dominate at small head sizes.
    double elements = 0;
    for (const auto& n : at.nodes)
      elements += static_cast<double>(ir::element_count(ir::evaluate_shape(n.shape, dims)));
    return static_cast<double>(c.flops) + 4 * elements;
  } catch (const std::exception&) {
    return 0;
  }
}

double sweep_result_elements(const ir::Graph& g, const ir::DimBindings& dims) {
  double elements = 0;
  try {
    for (ir::ValueId v : g.outputs)
      elements += static_cast<double>(
          ir::element_count(ir::evaluate_shape(g.nodes[static_cast<size_t>(v)].shape, dims)));
  } catch (const std::exception&) {
    return 0;
  }
  return elements;
}

std::vector<ir::DimBindings> sweep_dims(const ir::Graph& g, uint64_t seed, int draws) {
  random::Xoshiro256 rng(seed, 0x5eeb);
  const int n = std::max(1, draws);
  std::vector<Draw> out(static_cast<size_t>(n));
  for (auto& d : out) d.pins.assign(g.dims.size(), Pin::None);
  // The draws that pin a dim (large, or a multiple of 256): two per dim, all different
  // while there are enough, so no draw pins two dims and the others can always shrink.
  const std::vector<int> special = permutation(rng, n);
  for (size_t di = 0; di < g.dims.size(); ++di) {
    const std::string& name = g.dims[di];
    const int64_t b = bound_of(g, name);
    const int lj = special[(2 * di) % static_cast<size_t>(n)];
    const int zj = special[(2 * di + 1) % static_cast<size_t>(n)];
    std::vector<int> others_large;
    for (size_t dk = 0; dk < g.dims.size(); ++dk)
      if (dk != di) others_large.push_back(special[(2 * dk) % static_cast<size_t>(n)]);
    const std::vector<int> remainder = remainders(rng, lj, zj, others_large);
    for (int j = 0; j < n; ++j) {
      const int64_t r = j < 16 ? remainder[static_cast<size_t>(j)] : uniform_in(rng, 0, 15);
      const Pin pin = lj == j ? Pin::Large : r == 0 ? Pin::Multiple256 : Pin::None;
      Draw& draw = out[static_cast<size_t>(j)];
      draw.dims[name] = drawn_size(rng, r, b, pin);
      draw.pins[di] = pin;
    }
  }
  const double bound_cost = sweep_cost(g, g.bound_dims);
  const double cap = kSweepDrawShare * bound_cost;
  std::vector<ir::DimBindings> dims;
  for (auto& draw : out) {
    if (cap > 0) fit_cost(g, draw, cap, kSweepLargeShare * bound_cost);
    dims.push_back(draw.dims);
  }
  return dims;
}

std::vector<ir::Graph> sweep_graphs(const ir::Graph& g, const GraphAt& graph_at, uint64_t seed,
                                    int draws) {
  const double cap = 4 * kSweepDrawShare * sweep_cost(g, g.bound_dims);
  std::vector<ir::Graph> out;
  for (const auto& dims : sweep_dims(g, seed, draws)) {
    if (dims == g.bound_dims) continue;
    try {
      out.push_back(graph_at(dims));
    } catch (const UserError&) {
      if (auto part = accepted_part(g, graph_at, dims, cap)) out.push_back(std::move(*part));
    }
  }
  return out;
}

}  // namespace ollie::verify
