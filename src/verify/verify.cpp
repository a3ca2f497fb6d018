// The verifier: builds a candidate, runs it in the sandboxed runner on suites of fresh
// random inputs, compares with the reference and its bound, and writes the certificate.
#include "verify/verify.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <random>
#include <thread>

#include "build/build.h"
#include "runner/runner.h"
#include "support/error.h"
#include "support/random.h"
#include "support/sha256.h"
#include "verify/polynomial.h"

namespace ollie::verify {
namespace {

// Largest relative 2-norm error of a whole output (see `agrees`).
constexpr double kRelativeFloor = 1e-2;

struct Suite {
  std::string name;
  Distribution distribution;
  ir::Graph graph;
  bool plausible_outputs = false;  // outputs start as plausible values, not the NaN poison
  int64_t integer_range = 0;       // Distribution::Integer: float inputs in [-k, k]
  // Calls A, B, A in one process instead of one call: each on new buffers (call_order),
  // or on ONE set of buffers refilled between calls as a benchmark calls (reused_buffers).
  bool call_order = false;
  bool reused_buffers = false;
  std::string replays;             // for the sanitizer suites: the suite it repeats

  Suite(std::string name_, Distribution d, ir::Graph g)
      : name(std::move(name_)), distribution(d), graph(std::move(g)) {}
};

// The sanitizer suites get this many times the timeout: ASan and UBSan make code two to
// three times slower (more for code that the regular build vectorizes).
constexpr double kSanitizerSlowdown = 3;

std::string dims_text(const ir::Graph& g) {
  std::string s;
  for (const auto& d : g.dims) {
    auto it = g.bound_dims.find(d);
    s += (s.empty() ? "" : ", ") + d + "=" + (it == g.bound_dims.end() ? "?" : std::to_string(it->second));
  }
  return s;
}

// A kernel is generic (correct for every dims value) unless it says otherwise.
bool declares_generic(const std::string& source) { return source.find("// ollie: specialized") == std::string::npos; }

// Other dims for the shape sweep: small primes, about half the bound, the bound plus one;
// each kept only when the spec accepts it.
std::vector<ir::Graph> sweep_graphs(const ir::Graph& g, const GraphAt& graph_at, int count) {
  const int64_t primes[] = {3, 5, 7, 11, 13, 17, 19, 23};
  std::vector<ir::DimBindings> candidates(3);
  size_t i = 0;
  for (const auto& d : g.dims) {
    const int64_t bound = g.bound_dims.count(d) ? g.bound_dims.at(d) : 8;
    candidates[0][d] = primes[i++ % std::size(primes)];
    candidates[1][d] = std::max<int64_t>(1, bound / 2 + 1);
    candidates[2][d] = bound + 1;
  }
  std::vector<ir::Graph> out;
  for (const auto& dims : candidates) {
    if (static_cast<int>(out.size()) >= count) break;
    if (dims == g.bound_dims) continue;
    try {
      out.push_back(graph_at(dims));
    } catch (const UserError&) {
      // Dims this spec does not accept (tied dims such as DM = H*HD): skip them.
    }
  }
  return out;
}

Verdict from_status(runner::Status s) {
  switch (s) {
    case runner::Status::Ok: return Verdict::Pass;
    case runner::Status::LoadError: return Verdict::LoadError;
    case runner::Status::Timeout: return Verdict::Timeout;
    case runner::Status::Forbidden: return Verdict::Forbidden;
    case runner::Status::OutOfMemory: return Verdict::OutOfMemory;
    case runner::Status::Sanitizer: return Verdict::Sanitizer;
    case runner::Status::Crash: case runner::Status::ProtocolError: return Verdict::Crash;
  }
  return Verdict::Crash;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Wrong: return "wrong";
    case Verdict::Crash: return "crash";
    case Verdict::Timeout: return "timeout";
    case Verdict::OutOfMemory: return "out-of-memory";
    case Verdict::Forbidden: return "forbidden-syscall";
    case Verdict::CompileError: return "compile-error";
    case Verdict::LoadError: return "load-error";
    case Verdict::Sanitizer: return "sanitizer";
  }
  return "?";
}

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
      if (std::find(n.out_labels.begin(), n.out_labels.end(), n.rhs_labels[i]) == n.out_labels.end())
        fan_in *= static_cast<double>(std::max<int64_t>(1, rhs_shape[i].evaluate(g.bound_dims)));
    scale[static_cast<size_t>(p)] = std::min(scale[static_cast<size_t>(p)], 1.0 / std::sqrt(fan_in));
  }
  return scale;
}

namespace {

// Elements per random stream: each chunk of each parameter has its own generator
// (random::Xoshiro256(seed, stream)), so a tensor's values do not depend on the others'
// sizes, and chunks may be drawn in any order with the same result.
constexpr size_t kChunk = size_t{1} << 16;

// Fills out[0, n) with one chunk of a parameter's values.
void fill_chunk(double* out, size_t n, random::Xoshiro256& g, ir::DType dtype, Distribution d, double scale,
                int64_t k) {
  using random::below;
  using random::normal;
  switch (dtype) {
    case ir::DType::F32: case ir::DType::F64: {
      const bool f32 = dtype == ir::DType::F32;
      auto keep = [f32](double x) { return f32 ? static_cast<double>(static_cast<float>(x)) : x; };
      switch (d) {
        case Distribution::Integer: {
          const auto width = static_cast<uint32_t>(2 * k + 1);  // k <= kMaxIntegerRange
          for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(static_cast<int64_t>(below(g, width)) - k);
          return;
        }
        case Distribution::Normal:
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale);
          return;
        case Distribution::Wide:
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale * 30.0);
          return;
        case Distribution::Offset:
          for (size_t i = 0; i < n; ++i) out[i] = keep(normal(g) * scale + 100.0);
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
    case ir::DType::I32: case ir::DType::I64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(static_cast<int64_t>(below(g, 17)) - 8);
      return;
    case ir::DType::Bool:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(g.next() >> 63);
      return;
  }
}

// Draws sets of inputs for `graph` in chunks that any thread may take (help()): each
// chunk's values depend only on its set's seed, its parameter and its index, so the
// result is the same whoever draws which chunk, in whatever order.
class InputDraw {
 public:
  // One set per seed; `k` is Distribution::Integer's range. Allocates; draws nothing yet.
  InputDraw(const ir::Graph& graph, const std::vector<uint64_t>& seeds, Distribution d, int64_t k)
      : seeds_(seeds), d_(d), k_(k), scales_(weight_scales(graph)) {
    OLLIE_CHECK(d != Distribution::Integer || (k > 0 && k <= kMaxIntegerRange), "integer range out of bounds");
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
    }
  }
  InputDraw(const InputDraw&) = delete;
  InputDraw& operator=(const InputDraw&) = delete;

  // Draws chunks until none is left (or `stop` is set). Safe to call from several
  // threads at once; every chunk a call took is drawn when it returns.
  void help(const std::atomic<bool>* stop = nullptr) {
    for (;;) {
      if (stop && stop->load(std::memory_order_relaxed)) return;
      const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= chunks_.size()) return;
      const Chunk& c = chunks_[i];
      interp::Tensor& t = sets_[c.set][c.param];
      random::Xoshiro256 g(seeds_[c.set], (uint64_t{c.param} << 32) | c.index);
      const size_t begin = c.index * kChunk;
      fill_chunk(t.data.data() + begin, std::min(kChunk, t.data.size() - begin), g, t.dtype, d_, scales_[c.param], k_);
    }
  }
  // The sets, once every call of help() has returned (and none was stopped).
  std::vector<std::vector<interp::Tensor>> take() { return std::move(sets_); }

 private:
  struct Chunk {
    size_t set, param, index;
  };
  std::vector<uint64_t> seeds_;
  Distribution d_;
  int64_t k_;
  std::vector<double> scales_;
  std::vector<std::vector<interp::Tensor>> sets_;
  std::vector<Chunk> chunks_;
  std::atomic<size_t> next_{0};
};

}  // namespace

std::vector<interp::Tensor> make_inputs(const ir::Graph& graph, uint64_t seed, Distribution d, int threads) {
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

Comparison compare_outputs(const std::vector<interp::Tensor>& outputs, const interp::Result& reference) {
  Comparison c;
  for (size_t o = 0; o < reference.values.size() && o < outputs.size(); ++o) {
    const auto& got = outputs[o].data;
    const auto& want = reference.values[o].data;
    const auto& bound = reference.bounds[o].data;
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      ++c.elements;
      // A non-finite reference value must be matched exactly (NaN for NaN, the same infinity).
      const bool special = !std::isfinite(want[k]);
      const bool ok = special ? (got[k] == want[k] || (std::isnan(got[k]) && std::isnan(want[k])))
                              : std::fabs(got[k] - want[k]) <= bound[k];
      if (!ok) {
        ++c.mismatches;
        if (!c.agrees) continue;  // counted; the first one is the counterexample
        c.agrees = false;
        c.output = static_cast<int>(o);
        c.index = static_cast<int64_t>(k);
        c.expected = want[k], c.got = got[k], c.bound = bound[k];
        char text[256];
        std::snprintf(text, sizeof text, "out%zu[%zu]: got %.9g, expected %.9g (bound %.3g)", o, k, got[k], want[k],
                      bound[k]);
        c.text = text;
        continue;
      }
      if (!special && std::isfinite(bound[k]) && bound[k] > 0)
        c.worst = std::max(c.worst, std::fabs(got[k] - want[k]) / bound[k]);
    }
    // The relative floor: over the finite elements, the error must also be small next
    // to the values themselves, so no output passes because its bounds are wide (a
    // constant, zeros or noise never does) unless the reference itself is all zeros.
    double err2 = 0, want2 = 0;
    for (size_t k = 0; k < got.size() && k < want.size(); ++k)
      if (std::isfinite(want[k]) && std::isfinite(got[k])) {
        err2 += (got[k] - want[k]) * (got[k] - want[k]);
        want2 += want[k] * want[k];
      }
    if (!c.agrees) continue;  // the element counterexample stands
    if (want2 > 0 && err2 > kRelativeFloor * kRelativeFloor * want2) {
      c.agrees = false;
      c.floor_failed = true;
      c.output = static_cast<int>(o);
      char text[256];
      std::snprintf(text, sizeof text, "out%zu: relative error %.3g over the whole output exceeds the floor %.3g", o,
                    std::sqrt(err2 / want2), kRelativeFloor);
      c.text = text;
    }
  }
  if (outputs.size() != reference.values.size()) {
    c.agrees = false;
    c.text = "the kernel returned " + std::to_string(outputs.size()) + " outputs, the spec " +
             std::to_string(reference.values.size());
  }
  return c;
}

Report verify(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
              const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  Report report;
  auto finish = [&]() -> Report {
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
  };
  report.kernel_sha256 = sha256_hex(kernel_source);
  report.generic = declares_generic(kernel_source);
  const uint64_t seed = options.seed ? options.seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();

  build::Request request;
  request.units = {{"kernel.cpp", kernel_source}, {"ollie_adapter.cpp", build::adapter_source(graph)}};
  if (!options.compiler.empty()) request.toolchain.compiler = options.compiler;
  build::Driver driver = options.cache_dir.empty() ? build::Driver() : build::Driver(options.cache_dir);
  const build::Result built = driver.compile(request);
  report.compiler = request.toolchain.compiler;
  report.compiler_version = built.compiler_version;
  report.flags = request.toolchain.flags;
  if (!built.ok) {
    report.verdict = Verdict::CompileError;
    report.penalty = 1;
    report.message = "the kernel does not compile:\n" + built.log.substr(0, 4000);
    return finish();
  }

  // The suites: fresh seeds derived from `seed`, recorded with each.
  std::vector<Suite> suites;
  const bool full = options.level == Level::Full;
  // Integer-exact where the spec is polynomial (verify/polynomial.h): the widest exact
  // integer range, then (full) {-1, 0, 1}, whose exact zeros and ties float inputs never hit.
  auto integer_exact = [&](const ir::Graph& g, int64_t k) {
    const ExactRange range = exact_range(g, k);
    if (range.k > 0) {
      suites.emplace_back("integer-exact", Distribution::Integer, g);
      suites.back().integer_range = range.k;
    } else {
      report.not_applicable.push_back({"integer-exact", dims_text(g), range.reason});
    }
    return range.k > 0;
  };
  const bool exact = integer_exact(graph, kMaxIntegerRange);
  if (exact && full) integer_exact(graph, 1);
  for (int i = 0; i < (full ? 4 : 2); ++i) suites.emplace_back("normal", Distribution::Normal, graph);
  for (int i = 0; i < (full ? 2 : 1); ++i) suites.emplace_back("wide", Distribution::Wide, graph);
  for (int i = 0; i < (full ? 2 : 1); ++i) suites.emplace_back("special-values", Distribution::Special, graph);
  suites.emplace_back("offset", Distribution::Offset, graph);
  const std::vector<ir::Graph> sweep =
      report.generic ? sweep_graphs(graph, graph_at, full ? 3 : 2) : std::vector<ir::Graph>{};
  for (const auto& g : sweep) suites.emplace_back("shape-sweep", Distribution::Normal, g);
  // And {-1, 0, 1} at the second sweep dims (about half the bound: odd sizes, still cheap).
  if (exact && !sweep.empty()) integer_exact(sweep[std::min<size_t>(1, sweep.size() - 1)], 1);
  // Outputs that already hold plausible values: a kernel must still write every element.
  suites.emplace_back("prefilled-outputs", Distribution::Normal, graph);
  suites.back().plausible_outputs = true;
  // Call order A, B, A in one process, each call on new buffers: state kept between
  // calls (a cache keyed on pointers or values, a static result) shows.
  suites.emplace_back("call-order", Distribution::Normal, graph);
  suites.back().call_order = true;
  // The same order on ONE set of buffers, refilled between calls, as a benchmark calls a
  // kernel: a result replayed for the same pointers shows.
  suites.emplace_back("reused-buffers", Distribution::Normal, graph);
  suites.back().reused_buffers = true;

  runner::Options run_options;
  run_options.timeout_seconds = options.timeout_seconds;
  run_options.threads = options.threads;
  run_options.runner_path = options.runner_path;

  // Every output element of one call against the reference; false (and the verdict set)
  // at the first element outside its bound.
  auto agrees = [&](const std::string& suite, SuiteResult& result, const std::vector<interp::Tensor>& outputs,
                    const interp::Result& reference) {
    const Comparison c = compare_outputs(outputs, reference);
    result.elements += c.elements;
    result.worst = std::max(result.worst, c.worst);
    if (c.agrees) return true;
    report.verdict = Verdict::Wrong;
    report.penalty = c.penalty();
    if (c.index >= 0)
      report.counterexample =
          Counterexample{suite, result.seed, result.dims, c.output, c.index, c.expected, c.got, c.bound};
    report.message = suite + " suite (seed " + std::to_string(result.seed) + ", " + result.dims + "): " + c.text;
    return false;
  };

  // One suite's inputs: one call's, or A and B for the call order (A, B, A) and the
  // reused buffers (the timed run's rounds go A, B, A over the two sets).
  using Calls = std::vector<std::vector<interp::Tensor>>;
  auto start_draw = [&](const Suite& suite, size_t index) {
    const uint64_t s = seed + index;
    std::vector<uint64_t> seeds = {s};
    if (suite.call_order || suite.reused_buffers) seeds.push_back(s + 1000003);
    return std::make_unique<InputDraw>(suite.graph, seeds, suite.distribution, suite.integer_range);
  };

  // Runs one suite (the `index`th: its seed is seed + index) of `so_path` on `calls`;
  // false (and the verdict set) when it fails. The kernel runs in the runner's child
  // process while a thread of this one computes the reference; both threads then draw
  // `next` (the next suite's inputs, or null) as each becomes free. A run that fails
  // stops the reference and the drawing unfinished.
  auto run_suite = [&](const Suite& suite, size_t index, const Calls& calls, const std::string& so_path,
                       const runner::Options& base, InputDraw* next) {
    SuiteResult result{suite.name, seed + index, dims_text(suite.graph), 0, 0, false, suite.integer_range};
    const std::string what = suite.replays.empty() ? suite.name : suite.name + " (" + suite.replays + ")";
    runner::Options run = base;
    run.plausible_outputs = suite.plausible_outputs;
    // Buffers alternate between the start and the end of their pages, so a read before
    // the first element or past the last one meets a guard page in one suite or another.
    run.placement = index % 2 == 0 ? runner::Placement::Start : runner::Placement::End;

    std::atomic<bool> cancel{false};
    std::future<std::vector<interp::Result>> reference = std::async(std::launch::async, [&] {
      std::vector<interp::Result> refs;
      for (const auto& inputs : calls) refs.push_back(interp::evaluate(suite.graph, inputs, &cancel));
      // Integer-exact: bit for bit (bound 0; -0 and +0 compare equal).
      if (suite.distribution == Distribution::Integer)
        for (auto& ref : refs)
          for (auto& b : ref.bounds) std::fill(b.data.begin(), b.data.end(), 0.0);
      if (next) next->help(&cancel);
      return refs;
    });
    // On every way out before the reference is taken (a failed run, an exception), stop
    // it and wait: it reads `calls` and `suite`.
    struct Join {
      std::atomic<bool>& cancel;
      std::future<std::vector<interp::Result>>& future;
      ~Join() {
        if (!future.valid()) return;
        cancel = true;
        future.wait();
      }
    } join{cancel, reference};

    std::vector<std::vector<interp::Tensor>> outputs;
    runner::Outcome outcome;
    if (suite.reused_buffers) {
      runner::TimingOptions order;
      order.warmup_rounds = 0;
      order.min_rounds = order.max_rounds = 3;
      order.budget_seconds = 0;
      runner::TimedOutcome timed = runner::time_kernels({{so_path, "ollie_entry"}}, suite.graph, calls, run, order);
      if (timed.status == runner::Status::Ok) outputs = std::move(timed.set_outputs[0]);
      outcome = std::move(timed);
    } else {
      std::vector<const std::vector<interp::Tensor>*> sets = {&calls[0]};
      if (suite.call_order) sets = {&calls[0], &calls[1], &calls[0]};
      outcome = runner::run_calls(so_path, suite.graph, sets, run);
      outputs = std::move(outcome.call_outputs);
    }
    if (outcome.status != runner::Status::Ok) {
      report.verdict = from_status(outcome.status);
      report.penalty = 1;
      report.message = what + " suite (seed " + std::to_string(result.seed) + ", " + result.dims + "): " +
                       outcome.message;
      report.suites.push_back(result);
      return false;
    }
    if (next) next->help();
    const std::vector<interp::Result> refs = reference.get();
    for (size_t c = 0; c < outputs.size(); ++c) {
      const std::string label =
          suite.reused_buffers ? what + " (last call on " + (c == 0 ? "A" : "B") + " of A, B, A)"
          : suite.call_order   ? what + " (call " + std::to_string(c + 1) + " of A, B, A)"
                               : what;
      if (!agrees(label, result, outputs[c], refs[c % 2])) {
        report.suites.push_back(result);
        return false;
      }
    }
    result.passed = true;
    report.worst = std::max(report.worst, result.worst);
    report.suites.push_back(result);
    return true;
  };

  // Runs `list` in order (the i-th is suite first + i); false at the first that fails.
  // The first suite's inputs are drawn by two threads; each later suite's while the
  // previous one runs (run_suite).
  auto run_suites = [&](const std::vector<Suite>& list, size_t first, const std::string& so_path,
                        const runner::Options& base) {
    if (list.empty()) return true;
    std::unique_ptr<InputDraw> draw = start_draw(list[0], first);
    {
      auto helper = std::async(std::launch::async, [&] { draw->help(); });
      draw->help();
      helper.get();
    }
    Calls calls = draw->take();
    for (size_t i = 0; i < list.size(); ++i) {
      std::unique_ptr<InputDraw> next = i + 1 < list.size() ? start_draw(list[i + 1], first + i + 1) : nullptr;
      if (!run_suite(list[i], first + i, calls, so_path, base, next.get())) return false;
      if (next) calls = next->take();
    }
    return true;
  };

  if (!run_suites(suites, 0, built.so_path, run_options)) return finish();

  if (full) {
    // The sanitizer build replays one normal trial, the call order and, for a generic
    // kernel, one shape-sweep dims: out-of-bounds and freed-memory accesses, signed
    // overflow and other undefined behaviour whose results happened to be right.
    build::Request sanitized = request;
    sanitized.toolchain = build::sanitizer_toolchain(request.toolchain);
    report.sanitizer_runtime = build::sanitizer_runtime(sanitized.toolchain.compiler);
    report.sanitizer_flags = sanitized.toolchain.flags;
    const build::Result sanitized_build = driver.compile(sanitized);
    if (!sanitized_build.ok) {
      report.verdict = Verdict::CompileError;
      report.message = "the sanitizer build (-fsanitize=address,undefined) does not compile:\n" +
                       sanitized_build.log.substr(0, 4000);
      return finish();
    }
    runner::Options sanitizer_options = run_options;
    sanitizer_options.sanitize = true;
    sanitizer_options.sanitizer_runtime = report.sanitizer_runtime;
    sanitizer_options.timeout_seconds = options.timeout_seconds * kSanitizerSlowdown;
    std::vector<Suite> replayed;
    replayed.emplace_back("sanitizer", Distribution::Normal, graph);
    replayed.back().replays = "normal";
    replayed.emplace_back("sanitizer", Distribution::Normal, graph);
    replayed.back().replays = "call-order";
    replayed.back().call_order = true;
    if (!sweep.empty()) {
      replayed.emplace_back("sanitizer", Distribution::Normal, sweep.front());
      replayed.back().replays = "shape-sweep";
    }
    if (!run_suites(replayed, suites.size(), sanitized_build.so_path, sanitizer_options)) return finish();
  }
  report.verdict = Verdict::Pass;
  report.message = "all " + std::to_string(report.suites.size()) + " suites agree with the reference";
  return finish();
}

std::string certificate_json(const ir::Graph& graph, const std::string& spec_sha256, const Report& report,
                             const Options& options) {
  nlohmann::json j;
  j["schema"] = "ollie-certificate/1";
  j["spec"] = {{"entry", graph.entry}, {"sha256", spec_sha256}};
  j["kernel"] = {{"sha256", report.kernel_sha256}, {"generic", report.generic}};
  j["build"] = {{"compiler", report.compiler}, {"version", report.compiler_version}, {"flags", report.flags}};
  if (!report.sanitizer_flags.empty())
    j["sanitizer_build"] = {{"flags", report.sanitizer_flags}, {"preload", report.sanitizer_runtime}};
  nlohmann::json dims = nlohmann::json::object();
  for (const auto& d : graph.dims)
    if (graph.bound_dims.count(d)) dims[d] = graph.bound_dims.at(d);
  j["dims"] = dims;
  j["level"] = options.level == Level::Full ? "full" : "quick";
  nlohmann::json suites = nlohmann::json::array();
  for (const auto& s : report.suites) {
    suites.push_back({{"name", s.name}, {"seed", s.seed}, {"dims", s.dims}, {"elements", s.elements},
                      {"worst_fraction_of_bound", s.worst}, {"passed", s.passed}});
    if (s.integer_range > 0) suites.back()["integer_range"] = s.integer_range;
  }
  j["suites"] = suites;
  nlohmann::json not_applicable = nlohmann::json::array();
  for (const auto& s : report.not_applicable)
    not_applicable.push_back({{"suite", s.suite}, {"dims", s.dims}, {"reason", s.reason}});
  j["not_applicable"] = not_applicable;
  j["worst_fraction_of_bound"] = report.worst;
  j["penalty"] = report.penalty;
  j["verdict"] = verdict_name(report.verdict);
  j["message"] = report.message;
  if (report.counterexample) {
    const auto& c = *report.counterexample;
    j["counterexample"] = {{"suite", c.suite}, {"seed", c.seed},        {"dims", c.dims},
                           {"output", c.output}, {"index", c.index},    {"expected", c.expected},
                           {"got", c.got},       {"bound", c.bound}};
  }
  j["duration_seconds"] = report.seconds;
  return j.dump(2) + "\n";
}

}  // namespace ollie::verify
