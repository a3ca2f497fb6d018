// The verifier's internals shared by verify.cpp (planning, the certificate) and
// run_suites.cpp (running the suites in the runner and checking them): the Suite, the
// small helpers both use, and the Verification class. Not a public header.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <optional>
#include <random>

#include "build/build.h"
#include "build/screen.h"
#include "runner/runner.h"
#include "support/error.h"
#include "support/random.h"
#include "support/sha256.h"
#include "verify/input_draw.h"
#include "verify/polynomial.h"
#include "verify/sweep.h"
#include "verify/verify.h"

namespace ollie::verify::detail {

struct Suite {
  std::string name;
  Distribution distribution;
  ir::Graph graph;
  bool plausible_outputs = false;  // outputs start as plausible values, not the NaN poison
  int64_t integer_range = 0;       // Distribution::Integer: float inputs in [-k, k]
  int calls = 1;  // calls in one runner process, each on fresh inputs and new buffers
  // The calls' inputs cycle through kCallMix instead of all being `distribution`.
  bool mixed = false;
  // The call-order suite: its calls are reported one by one ("call 3 of 7").
  bool call_order = false;
  // Then the same inputs again, in a second process, as rounds on ONE set of buffers
  // refilled between calls as a benchmark calls (reported as the reused-buffers suite).
  bool reused_buffers = false;
  std::string replays;                // for the sanitizer suites: the suite it repeats
  std::vector<interp::Tensor> given;  // the inputs of its one call (the user's), not drawn
  // Its first `tight_calls` calls' bounds are tightened by the honest ensemble
  // (interp::tighten); the others keep the derived bound.
  int tight_calls = 0;

  Suite(std::string name_, Distribution d, ir::Graph g)
      : name(std::move(name_)), distribution(d), graph(std::move(g)) {}
};

// The sanitizer suites get this many times the timeout: ASan and UBSan make code two to
// three times slower (more for code that the regular build vectorizes).
constexpr double kSanitizerSlowdown = 3;

inline std::string dims_text(const ir::Graph& g) {
  std::string s;
  for (const auto& d : g.dims) {
    auto it = g.bound_dims.find(d);
    s += (s.empty() ? "" : ", ") + d + "=" +
         (it == g.bound_dims.end() ? "?" : std::to_string(it->second));
  }
  return s;
}

// The reference for one call of `suite` on `inputs` (drawn with `call_seed`): the
// interpreter's value and derived bound, tightened by the honest ensemble (seeded by
// the call's seed, so a replay gets the same tolerances). Integer-exact suites compare
// bit for bit instead (bound 0; -0 and +0 compare equal).
inline interp::Result reference_of(const Suite& suite, size_t call,
                                   const std::vector<interp::Tensor>& inputs, uint64_t call_seed,
                                   const std::atomic<bool>* cancel) {
  if (suite.distribution == Distribution::Integer) {
    interp::Result ref = interp::evaluate(suite.graph, inputs, cancel);
    for (auto& b : ref.bounds) std::fill(b.data.begin(), b.data.end(), 0.0);
    ref.criteria.assign(ref.values.size(), interp::Criteria{});
    for (size_t o = 0; o < ref.values.size(); ++o) ref.criteria[o].exact = ref.values[o].size();
    return ref;
  }
  interp::EnsembleOptions ensemble;
  if (static_cast<int>(call) >= suite.tight_calls) ensemble.members = 0;
  const uint64_t seed = random::mix64(call_seed ^ 0xe45e3b1e);
  // The members on a second thread while this one computes the reference, then the rest.
  const int there = ensemble.members == 0 ? 0 : (ensemble.members + 2) / 2;
  auto others = std::async(std::launch::async, [&] {
    return interp::evaluate_members(suite.graph, inputs, 0, there, seed, cancel);
  });
  interp::Result ref;
  std::vector<std::vector<interp::Tensor>> members;
  try {
    ref = interp::evaluate(suite.graph, inputs, cancel);
    members = interp::evaluate_members(suite.graph, inputs, there, ensemble.members - there, seed,
                                       cancel);
  } catch (...) {
    others.wait();
    throw;
  }
  for (auto& m : others.get()) members.push_back(std::move(m));
  interp::tighten(ref, members, ensemble);
  return ref;
}

// A suite's result before any call is checked.
inline SuiteResult suite_result(std::string name, uint64_t seed, std::string dims) {
  SuiteResult result;
  result.name = std::move(name);
  result.seed = seed;
  result.dims = std::move(dims);
  return result;
}

// A kernel is generic (correct for every dims value) unless it says otherwise.
inline bool declares_generic(const std::string& source) {
  return source.find("// ollie: specialized") == std::string::npos;
}

// The call-order suite's inputs, call c drawn from kCallMix[c % 6]: every distribution
// in one process, so the calls are as unlike each other as the suites.
constexpr Distribution kCallMix[] = {Distribution::Normal, Distribution::Constants,
                                     Distribution::Wide,   Distribution::Special,
                                     Distribution::Offset, Distribution::Subnormal};

inline const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::Normal: return "normal";
    case Distribution::Wide: return "wide";
    case Distribution::Special: return "special-values";
    case Distribution::Offset: return "offset";
    case Distribution::Subnormal: return "subnormal";
    case Distribution::Integer: return "integer";
    case Distribution::Constants: return "exact-constants";
    case Distribution::Ties: return "rounding-ties";
  }
  return "?";
}

// Each call's distribution.
inline std::vector<Distribution> call_distributions(const Suite& suite) {
  std::vector<Distribution> ds(static_cast<size_t>(suite.calls), suite.distribution);
  if (suite.mixed)
    for (size_t c = 0; c < ds.size(); ++c) ds[c] = kCallMix[c % std::size(kCallMix)];
  return ds;
}

// Call c of a suite draws its inputs with the suite's seed + c * kCallSeedStep.
constexpr uint64_t kCallSeedStep = 1000003;

// Calls per runner process in the multi-call suites: 6 to 9, drawn per run (at least one
// call per distribution of kCallMix).
inline int calls_per_process(uint64_t seed) {
  return 6 + static_cast<int>(random::mix64(seed ^ 0xca11) % 4);
}

// Suite `index`'s buffer placement: page start, page end and random in turn.
inline runner::Placement placement_of(size_t index) {
  static constexpr runner::Placement kCycle[] = {runner::Placement::Start, runner::Placement::End,
                                                 runner::Placement::Random};
  return kCycle[index % 3];
}

inline Verdict from_status(runner::Status s) {
  switch (s) {
    case runner::Status::Ok: return Verdict::Pass;
    case runner::Status::LoadError: return Verdict::LoadError;
    case runner::Status::Timeout: return Verdict::Timeout;
    case runner::Status::Forbidden: return Verdict::Forbidden;
    case runner::Status::OutOfMemory: return Verdict::OutOfMemory;
    case runner::Status::Sanitizer: return Verdict::Sanitizer;
    case runner::Status::Tampered: return Verdict::Tampered;
    case runner::Status::Crash:
    case runner::Status::ProtocolError: return Verdict::Crash;
  }
  return Verdict::Crash;
}

// The report before anything ran: what the kernel's source says of itself.
inline Report report_of_source(const std::string& kernel_source) {
  Report report;
  report.kernel_sha256 = sha256_hex(kernel_source);
  report.generic = declares_generic(kernel_source);
  return report;
}

// The kernel and its adapter, for the options' compiler.
inline build::Request kernel_request(const ir::Graph& graph, const std::string& kernel_source,
                                     const Options& options) {
  build::Request request;
  request.units = {
      {"kernel.cpp", kernel_source},
      {"ollie_adapter.cpp", build::adapter_source(graph, {.kernel = options.kernel_symbol})}};
  if (!options.compiler.empty()) request.toolchain.compiler = options.compiler;
  return request;
}

// A base seed from the system's entropy source.
inline uint64_t fresh_seed() {
  return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

// What a failure message starts with: "normal suite (seed 123, M=5, N=37): ".
inline std::string suite_context(const std::string& label, const SuiteResult& result) {
  return label + " suite (seed " + std::to_string(result.seed) + ", " + result.dims + "): ";
}

inline runner::Options runner_options(const Options& options) {
  runner::Options run_options;
  run_options.timeout_seconds = options.timeout_seconds;
  run_options.threads = options.threads;
  run_options.runner_path = options.runner_path;
  return run_options;
}

// One call of verify(), step by step: the kernel's build, the suites planned and run in
// order, then (full) the sanitizer build's replays. A step that fails sets the report's
// verdict and message and returns false; no later step runs.
class Verification {
 public:
  Verification(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
               const Options& options)
      : graph_(graph),
        graph_at_(graph_at),
        options_(options),
        full_(options.level == Level::Full),
        report_(report_of_source(kernel_source)),
        seed_(options.seed ? options.seed : fresh_seed()),
        request_(kernel_request(graph, kernel_source, options)),
        driver_(options.cache_dir.empty() ? build::Driver() : build::Driver(options.cache_dir)),
        run_options_(runner_options(options)) {}

  Report run();

 private:
  // One suite's inputs: one set per call.
  using Calls = std::vector<std::vector<interp::Tensor>>;

  bool compile();
  void plan_suites();
  bool plan_integer_exact(const ir::Graph& g, int64_t k);
  const ir::Graph& median_sweep_graph() const;
  void plan_random_suites();
  void plan_rounding_suites();
  void plan_shape_sweep();
  void plan_tight_calls();
  bool beyond_twice_the_bound(const ir::Graph& g) const;
  std::vector<std::string> dims_beyond_twice_the_bound(const ir::Graph& g) const;
  void plan_call_suites();
  std::vector<Suite> sanitizer_replays() const;
  bool replay_with_sanitizers();
  std::optional<std::string> sanitizer_blocked() const;
  bool run_suites(const std::vector<Suite>& list, size_t first, const std::string& so_path,
                  const runner::Options& base);
  bool run_sequence(const std::vector<Suite>& list, size_t first, size_t begin, size_t end,
                    const std::string& so_path, const runner::Options& base);
  bool run_batch(const std::vector<Suite>& list, size_t first, size_t begin, size_t end,
                 const std::string& so_path, const runner::Options& base);
  std::unique_ptr<InputDraw> start_draw(const Suite& suite, size_t index) const;
  bool run_suite(const Suite& suite, size_t index, const Calls& calls, const std::string& so_path,
                 const runner::Options& base, InputDraw* next);
  bool run_failed(const runner::Outcome& outcome, const std::string& what, SuiteResult& result);
  bool check_calls(const Suite& suite, bool reused, SuiteResult& result, const Calls& outputs,
                   const std::vector<interp::Result>& refs);
  runner::Outcome call_kernel(bool reused, const Suite& suite, const Calls& calls,
                              const std::string& so_path, const runner::Options& run,
                              Calls& outputs) const;
  bool agrees(const std::string& label, uint64_t call_seed, SuiteResult& result,
              const std::vector<interp::Tensor>& outputs, const interp::Result& reference);
  void judge_weak();
  Report finish();

  const ir::Graph& graph_;
  const GraphAt& graph_at_;
  const Options& options_;
  const bool full_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  Report report_;
  const uint64_t seed_;                         // the base seed: suite i draws with seed_ + i
  const int calls_ = calls_per_process(seed_);  // calls per process in the multi-call suites
  const build::Request request_;
  build::Driver driver_;
  const runner::Options run_options_;
  std::string so_path_;           // the kernel's build
  std::vector<Suite> suites_;     // in the order they run
  std::vector<ir::Graph> sweep_;  // the shape sweep's graphs (none for a specialized kernel)
};

}  // namespace ollie::verify::detail
