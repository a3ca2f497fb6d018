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

#include "build/build.h"
#include "build/screen.h"
#include "runner/runner.h"
#include "support/error.h"
#include "support/random.h"
#include "support/sha256.h"
#include "verify/input_draw.h"
#include "verify/polynomial.h"
#include "verify/sweep.h"

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
  int calls = 1;  // calls in one runner process, each on fresh inputs and new buffers
  // The calls' inputs cycle through kCallMix instead of all being `distribution`.
  bool mixed = false;
  // The call-order suite: its calls are reported one by one ("call 3 of 7").
  bool call_order = false;
  // Then the same inputs again, in a second process, as rounds on ONE set of buffers
  // refilled between calls as a benchmark calls (reported as the reused-buffers suite).
  bool reused_buffers = false;
  std::string replays;  // for the sanitizer suites: the suite it repeats

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
    s += (s.empty() ? "" : ", ") + d + "=" +
         (it == g.bound_dims.end() ? "?" : std::to_string(it->second));
  }
  return s;
}

// A kernel is generic (correct for every dims value) unless it says otherwise.
bool declares_generic(const std::string& source) {
  return source.find("// ollie: specialized") == std::string::npos;
}

// The call-order suite's inputs, call c drawn from kCallMix[c % 5]: every distribution
// in one process, so the calls are as unlike each other as the suites.
constexpr Distribution kCallMix[] = {Distribution::Normal, Distribution::Constants,
                                     Distribution::Wide, Distribution::Special,
                                     Distribution::Offset};

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::Normal: return "normal";
    case Distribution::Wide: return "wide";
    case Distribution::Special: return "special-values";
    case Distribution::Offset: return "offset";
    case Distribution::Integer: return "integer";
    case Distribution::Constants: return "exact-constants";
  }
  return "?";
}

// Each call's distribution.
std::vector<Distribution> call_distributions(const Suite& suite) {
  std::vector<Distribution> ds(static_cast<size_t>(suite.calls), suite.distribution);
  if (suite.mixed)
    for (size_t c = 0; c < ds.size(); ++c) ds[c] = kCallMix[c % std::size(kCallMix)];
  return ds;
}

// Call c of a suite draws its inputs with the suite's seed + c * kCallSeedStep.
constexpr uint64_t kCallSeedStep = 1000003;

// Calls per runner process in the multi-call suites: 5 to 9, drawn per run.
int calls_per_process(uint64_t seed) {
  return 5 + static_cast<int>(random::mix64(seed ^ 0xca11) % 5);
}

// Suite `index`'s buffer placement: page start, page end and random in turn.
runner::Placement placement_of(size_t index) {
  static constexpr runner::Placement kCycle[] = {runner::Placement::Start, runner::Placement::End,
                                                 runner::Placement::Random};
  return kCycle[index % 3];
}

Verdict from_status(runner::Status s) {
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
    case Verdict::Tampered: return "tampered";
    case Verdict::Refused: return "refused";
  }
  return "?";
}

std::optional<Verdict> verdict_from_name(std::string_view name) {
  for (Verdict v : {Verdict::Pass, Verdict::Wrong, Verdict::Crash, Verdict::Timeout,
                    Verdict::OutOfMemory, Verdict::Forbidden, Verdict::CompileError,
                    Verdict::LoadError, Verdict::Sanitizer, Verdict::Tampered, Verdict::Refused})
    if (name == verdict_name(v)) return v;
  return std::nullopt;
}

Comparison compare_outputs(const std::vector<interp::Tensor>& outputs,
                           const interp::Result& reference) {
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
        std::snprintf(text, sizeof text, "out%zu[%zu]: got %.9g, expected %.9g (bound %.3g)", o, k,
                      got[k], want[k], bound[k]);
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
      std::snprintf(text, sizeof text,
                    "out%zu: relative error %.3g over the whole output exceeds the floor %.3g", o,
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

namespace {

// The report before anything ran: what the kernel's source says of itself.
Report report_of_source(const std::string& kernel_source) {
  Report report;
  report.kernel_sha256 = sha256_hex(kernel_source);
  report.generic = declares_generic(kernel_source);
  return report;
}

// The kernel and its adapter, for the options' compiler.
build::Request kernel_request(const ir::Graph& graph, const std::string& kernel_source,
                              const Options& options) {
  build::Request request;
  request.units = {{"kernel.cpp", kernel_source},
                   {"ollie_adapter.cpp", build::adapter_source(graph)}};
  if (!options.compiler.empty()) request.toolchain.compiler = options.compiler;
  return request;
}

// A base seed from the system's entropy source.
uint64_t fresh_seed() { return (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}(); }

// What a failure message starts with: "normal suite (seed 123, M=5, N=37): ".
std::string suite_context(const std::string& label, const SuiteResult& result) {
  return label + " suite (seed " + std::to_string(result.seed) + ", " + result.dims + "): ";
}

runner::Options runner_options(const Options& options) {
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
  void plan_shape_sweep();
  void plan_call_suites();
  std::vector<Suite> sanitizer_replays() const;
  bool replay_with_sanitizers();
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

Report Verification::run() {
  if (!compile()) return finish();
  plan_suites();
  if (run_suites(suites_, 0, so_path_, run_options_) && (!full_ || replay_with_sanitizers())) {
    report_.verdict = Verdict::Pass;
    report_.message =
        "all " + std::to_string(report_.suites.size()) + " suites agree with the reference";
  }
  return finish();
}

Report Verification::finish() {
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  report_.seconds = std::chrono::duration<double>(elapsed).count();
  return report_;
}

// The kernel's build behind the screens (build/screen.h); false (refused, compile-error)
// when the screens refuse it or it does not compile.
bool Verification::compile() {
  const build::ScreenedResult screened = build::compile_screened(driver_, request_);
  const build::Result& built = screened.built;
  report_.compiler = request_.toolchain.compiler;
  report_.compiler_version = built.compiler_version.empty()
                                 ? build::compiler_version(request_.toolchain.compiler)
                                 : built.compiler_version;
  report_.flags = request_.toolchain.flags;
  if (screened.refused()) {
    report_.verdict = Verdict::Refused;
    report_.penalty = 1;
    report_.message = screened.message();
    return false;
  }
  if (!built.ok) {
    report_.verdict = Verdict::CompileError;
    report_.penalty = 1;
    report_.message = "the kernel does not compile:\n" + built.log.substr(0, 4000);
    return false;
  }
  so_path_ = built.so_path;
  return true;
}

// The suites: fresh seeds derived from `seed_`, recorded with each. The integer-exact
// suites run first: their counterexamples are the easiest to read; then those at the
// bound dims, then the shape sweep.
void Verification::plan_suites() {
  const bool exact = plan_integer_exact(graph_, kMaxIntegerRange);
  if (exact && full_) plan_integer_exact(graph_, 1);
  plan_random_suites();
  plan_call_suites();
  plan_shape_sweep();
  // And {-1, 0, 1} at the sweep's dims of median cost (odd sizes, still cheap).
  if (exact && !sweep_.empty()) plan_integer_exact(median_sweep_graph(), 1);
}

// Integer-exact where the spec is polynomial (verify/polynomial.h): the widest exact
// integer range, then (full) {-1, 0, 1}, whose exact zeros and ties float inputs never hit.
// False, and the suite listed as not applicable, when the spec is not exact at `g`.
bool Verification::plan_integer_exact(const ir::Graph& g, int64_t k) {
  const ExactRange range = exact_range(g, k);
  if (range.k > 0) {
    suites_.emplace_back("integer-exact", Distribution::Integer, g).integer_range = range.k;
  } else {
    report_.not_applicable.push_back({"integer-exact", dims_text(g), range.reason});
  }
  return range.k > 0;
}

// Random inputs at the bound dims, at the full level: each distribution as suites of
// their own, the normal ones with calls_ calls per process. At quick the normal, wide,
// special-values, offset and exact-constants inputs are the calls of the call-order
// suite (plan_call_suites), whose first call is a normal one in a fresh process.
void Verification::plan_random_suites() {
  if (!full_) return;
  for (int i = 0; i < 2; ++i)
    suites_.emplace_back("normal", Distribution::Normal, graph_).calls = calls_;
  for (int i = 0; i < 2; ++i) suites_.emplace_back("wide", Distribution::Wide, graph_);
  for (int i = 0; i < 2; ++i) suites_.emplace_back("special-values", Distribution::Special, graph_);
  for (int i = 0; i < 2; ++i)
    suites_.emplace_back("exact-constants", Distribution::Constants, graph_);
  suites_.emplace_back("offset", Distribution::Offset, graph_);
}

// A generic kernel at the sweep's dims (verify/sweep.h), one call each: normal inputs
// where a dim is large or a multiple of 256 (what those draws are for must not hide
// behind equal rows or a NaN), and at the other draws exact constants, special values
// and normal inputs in turn.
void Verification::plan_shape_sweep() {
  if (report_.generic) sweep_ = sweep_graphs(graph_, graph_at_, seed_);
  const Distribution plain[] = {Distribution::Constants, Distribution::Special,
                                Distribution::Normal};
  size_t plain_draws = 0;
  for (const auto& g : sweep_) {
    bool pinned = false;
    for (const auto& [d, v] : g.bound_dims) {
      const auto bound = graph_.bound_dims.find(d);
      pinned =
          pinned || v % 256 == 0 || (bound != graph_.bound_dims.end() && v > 2 * bound->second);
    }
    const Distribution d = pinned ? Distribution::Normal : plain[plain_draws++ % std::size(plain)];
    suites_.emplace_back("shape-sweep", d, g);
  }
}

// The sweep graph of median cost (the sweep is never empty when this is called).
const ir::Graph& Verification::median_sweep_graph() const {
  std::vector<std::pair<double, size_t>> costs;
  for (size_t j = 0; j < sweep_.size(); ++j)
    costs.emplace_back(sweep_cost(sweep_[j], sweep_[j].bound_dims), j);
  std::sort(costs.begin(), costs.end());
  return sweep_[costs[costs.size() / 2].second];
}

// How the kernel is called: on outputs that already hold plausible values, and calls_
// calls in one process on new buffers and on reused ones.
void Verification::plan_call_suites() {
  // Outputs that already hold plausible values: a kernel must still write every element.
  // First: one call, so a kernel that hangs costs one timeout.
  suites_.emplace_back("prefilled-outputs", Distribution::Normal, graph_).plausible_outputs = true;
  // calls_ (5 to 9) calls in one process, each on fresh inputs (kCallMix) and new buffers:
  // state kept between calls (a cache keyed on pointers or values, a static result, the
  // answer of an earlier call replayed) shows. Then the same inputs in another process
  // on ONE set of buffers, refilled between calls, as a benchmark calls a kernel: a
  // result replayed for the same pointers shows (the reused-buffers suite).
  Suite& calls = suites_.emplace_back("call-order", Distribution::Normal, graph_);
  calls.calls = calls_;
  calls.mixed = calls.call_order = calls.reused_buffers = true;
}

// What the sanitizer build replays: one normal trial, the call order and, for a generic
// kernel, the shape sweep's dims of median cost.
std::vector<Suite> Verification::sanitizer_replays() const {
  std::vector<Suite> replayed;
  replayed.emplace_back("sanitizer", Distribution::Normal, graph_).replays = "normal";
  Suite& call_order = replayed.emplace_back("sanitizer", Distribution::Normal, graph_);
  call_order.replays = "call-order";
  call_order.calls = calls_;
  call_order.mixed = call_order.call_order = true;
  if (!sweep_.empty()) {
    Suite& shape_sweep =
        replayed.emplace_back("sanitizer", Distribution::Normal, median_sweep_graph());
    shape_sweep.replays = "shape-sweep";
  }
  return replayed;
}

// The full level's sanitizer build and its replays (sanitizer_replays): out-of-bounds and
// freed-memory accesses, signed overflow and other undefined behaviour whose results
// happened to be right.
bool Verification::replay_with_sanitizers() {
  build::Request sanitized = request_;
  sanitized.toolchain = build::sanitizer_toolchain(request_.toolchain);
  report_.sanitizer_runtime = build::sanitizer_runtime(sanitized.toolchain.compiler);
  report_.sanitizer_flags = sanitized.toolchain.flags;
  const build::ScreenedResult screened = build::compile_screened(driver_, sanitized, true);
  const build::Result& sanitized_build = screened.built;
  if (screened.refused()) {
    report_.verdict = Verdict::Refused;
    report_.penalty = 1;
    report_.message = "the sanitizer build: " + screened.message();
    return false;
  }
  if (!sanitized_build.ok) {
    report_.verdict = Verdict::CompileError;
    report_.message = "the sanitizer build (-fsanitize=address,undefined) does not compile:\n" +
                      sanitized_build.log.substr(0, 4000);
    return false;
  }
  runner::Options sanitizer_options = run_options_;
  sanitizer_options.sanitize = true;
  sanitizer_options.sanitizer_runtime = report_.sanitizer_runtime;
  sanitizer_options.timeout_seconds = options_.timeout_seconds * kSanitizerSlowdown;
  return run_suites(sanitizer_replays(), suites_.size(), sanitized_build.so_path,
                    sanitizer_options);
}

// Shape-sweep draws run this many to a runner process (each call at its own dims), so a
// sweep of 16 draws costs 3 process starts, not 16.
constexpr size_t kSweepBatch = 6;

// Whether suite `s` can share a runner process with its neighbours: one call, no reused
// buffers, no plausible outputs, not bit-exact.
bool batchable(const Suite& s) {
  return s.name == "shape-sweep" && s.calls == 1 && !s.reused_buffers && !s.plausible_outputs &&
         s.distribution != Distribution::Integer;
}

// The end of the batch that starts at `begin` (begin + 1 when list[begin] runs alone).
size_t batch_end(const std::vector<Suite>& list, size_t begin) {
  size_t end = begin;
  while (end < list.size() && end - begin < kSweepBatch && batchable(list[end])) ++end;
  return std::max(end, begin + 1);
}

// Runs `list` in order (the i-th is suite first + i); false at the first that fails.
// Consecutive shape-sweep draws run in batches (run_batch), the rest one process each.
bool Verification::run_suites(const std::vector<Suite>& list, size_t first,
                              const std::string& so_path, const runner::Options& base) {
  for (size_t i = 0; i < list.size();) {
    size_t end = batch_end(list, i);
    if (end > i + 1) {
      if (!run_batch(list, first, i, end, so_path, base)) return false;
    } else {
      while (end < list.size() && batch_end(list, end) == end + 1) ++end;
      if (!run_sequence(list, first, i, end, so_path, base)) return false;
    }
    i = end;
  }
  return true;
}

// Runs list[begin, end) one process each. The first suite's inputs are drawn by two
// threads; each later suite's while the previous one runs (run_suite).
bool Verification::run_sequence(const std::vector<Suite>& list, size_t first, size_t begin,
                                size_t end, const std::string& so_path,
                                const runner::Options& base) {
  if (begin >= end) return true;
  std::unique_ptr<InputDraw> draw = start_draw(list[begin], first + begin);
  {
    auto helper = std::async(std::launch::async, [&] { draw->help(); });
    draw->help();
    helper.get();
  }
  Calls calls = draw->take();
  for (size_t i = begin; i < end; ++i) {
    std::unique_ptr<InputDraw> next =
        i + 1 < end ? start_draw(list[i + 1], first + i + 1) : nullptr;
    if (!run_suite(list[i], first + i, calls, so_path, base, next.get())) return false;
    if (next) calls = next->take();
  }
  return true;
}

// Runs the one-call suites list[begin, end) (shape-sweep draws, each at its own dims) as
// the calls of ONE runner process while a thread computes their references. When that
// process fails, the draws run again one process each, so the verdict names the draw
// (and when each passes alone, the batch's failure stands: state kept between calls).
bool Verification::run_batch(const std::vector<Suite>& list, size_t first, size_t begin, size_t end,
                             const std::string& so_path, const runner::Options& base) {
  std::vector<Calls> inputs;
  for (size_t i = begin; i < end; ++i) {
    std::unique_ptr<InputDraw> draw = start_draw(list[i], first + i);
    auto helper = std::async(std::launch::async, [&] { draw->help(); });
    draw->help();
    helper.get();
    inputs.push_back(draw->take());
  }
  std::atomic<bool> cancel{false};
  auto reference = std::async(std::launch::async, [&] {
    std::vector<std::vector<interp::Result>> refs;
    for (size_t i = begin; i < end && !cancel; ++i)
      refs.push_back({interp::evaluate(list[i].graph, inputs[i - begin][0], &cancel)});
    return refs;
  });
  std::vector<const ir::Graph*> graphs;
  std::vector<const std::vector<interp::Tensor>*> calls;
  for (size_t i = begin; i < end; ++i) {
    graphs.push_back(&list[i].graph);
    calls.push_back(&inputs[i - begin][0]);
  }
  runner::Options run = base;
  run.timeout_seconds = base.timeout_seconds * static_cast<double>((end - begin + 2) / 3);
  run.placement = placement_of(first + begin);
  runner::Outcome outcome = runner::run_calls(so_path, graphs, calls, run);
  if (outcome.status != runner::Status::Ok) {
    cancel = true;
    reference.wait();
    const size_t recorded = report_.suites.size();
    if (!run_sequence(list, first, begin, end, so_path, base)) return false;
    report_.suites.resize(recorded);
    SuiteResult result{
        "shape-sweep",
        seed_ + first + begin,
        "draws " + std::to_string(begin) + "-" + std::to_string(end - 1) + " in one process",
        0,
        0,
        false,
        0};
    return !run_failed(outcome, "shape-sweep (its draws in one process)", result);
  }
  const std::vector<std::vector<interp::Result>> refs = reference.get();
  for (size_t i = begin; i < end; ++i) {
    SuiteResult result{list[i].name, seed_ + first + i, dims_text(list[i].graph), 0, 0, false, 0};
    if (!check_calls(list[i], false, result, {outcome.call_outputs[i - begin]}, refs[i - begin]))
      return false;
  }
  return true;
}

// The `index`th suite's inputs (its seed is seed_ + index; call c's is that plus
// c * 1000003), allocated, not drawn yet.
std::unique_ptr<InputDraw> Verification::start_draw(const Suite& suite, size_t index) const {
  const uint64_t s = seed_ + index;
  std::vector<uint64_t> seeds;
  for (int c = 0; c < suite.calls; ++c) seeds.push_back(s + kCallSeedStep * c);
  return std::make_unique<InputDraw>(suite.graph, seeds, call_distributions(suite),
                                     suite.integer_range);
}

// Runs one suite (the `index`th: its seed is seed_ + index) of `so_path` on `calls`;
// false (and the verdict set) when it fails. The kernel runs in the runner's child
// process while a thread of this one computes the reference; both threads then draw
// `next` (the next suite's inputs, or null) as each becomes free. A run that fails
// stops the reference and the drawing unfinished.
bool Verification::run_suite(const Suite& suite, size_t index, const Calls& calls,
                             const std::string& so_path, const runner::Options& base,
                             InputDraw* next) {
  SuiteResult result{suite.name, seed_ + index, dims_text(suite.graph), 0,
                     0,          false,         suite.integer_range};
  const std::string what =
      suite.replays.empty() ? suite.name : suite.name + " (" + suite.replays + ")";
  runner::Options run = base;
  run.plausible_outputs = suite.plausible_outputs;
  // The timeout is for up to three calls (the old A, B, A); more calls get more time.
  run.timeout_seconds = base.timeout_seconds * std::max(1, (suite.calls + 2) / 3);
  // Buffers cycle between the start and the end of their pages, so a read before the
  // first element or past the last one meets a guard page in one suite or another, and a
  // random place in the page (the runner's default), so a kernel cannot tell the harness
  // by buffers at page edges.
  run.placement = placement_of(index);

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

  Calls outputs, reused_outputs;
  if (run_failed(call_kernel(false, suite, calls, so_path, run, outputs), what, result))
    return false;
  // reused_buffers: the same inputs again, as rounds on one set of buffers, in a process
  // of its own while the reference is still computed (recorded as the reused-buffers
  // suite, with the seed its inputs were drawn from; checked after this suite's calls).
  SuiteResult reused{"reused-buffers", result.seed, result.dims, 0, 0, false, 0};
  runner::Outcome reused_outcome;
  if (suite.reused_buffers) {
    run.placement = placement_of(index + 1);
    reused_outcome = call_kernel(true, suite, calls, so_path, run, reused_outputs);
  }
  if (next) next->help();
  const std::vector<interp::Result> refs = reference.get();
  if (!check_calls(suite, false, result, outputs, refs)) return false;
  if (!suite.reused_buffers) return true;
  if (run_failed(reused_outcome, reused.name, reused)) return false;
  return check_calls(suite, true, reused, reused_outputs, refs);
}

// False, with the verdict set and `result` recorded, when the run did not end Ok.
bool Verification::run_failed(const runner::Outcome& outcome, const std::string& what,
                              SuiteResult& result) {
  if (outcome.status == runner::Status::Ok) return false;
  report_.verdict = from_status(outcome.status);
  report_.penalty = 1;
  report_.message = suite_context(what, result) + outcome.message;
  report_.suites.push_back(result);
  return true;
}

// Every call's outputs against its reference; records `result` (passed or not) and
// returns whether all agree.
bool Verification::check_calls(const Suite& suite, bool reused, SuiteResult& result,
                               const Calls& outputs, const std::vector<interp::Result>& refs) {
  const std::vector<Distribution> ds = call_distributions(suite);
  const std::string n = std::to_string(outputs.size());
  for (size_t c = 0; c < outputs.size() && c < refs.size(); ++c) {
    const std::string call = std::to_string(c + 1);
    const std::string inputs = std::string(distribution_name(ds[c])) + " inputs";
    std::string label =
        suite.replays.empty() ? suite.name : suite.name + " (" + suite.replays + ")";
    if (reused)
      label =
          "reused-buffers (round " + call + " of " + n + " on one set of buffers, " + inputs + ")";
    else if (suite.mixed)
      label += " (call " + call + " of " + n + " in one process, " + inputs + ")";
    else if (outputs.size() > 1)
      label += " (call " + call + " of " + n + " in one process)";
    if (!agrees(label, result.seed + kCallSeedStep * c, result, outputs[c], refs[c])) {
      report_.suites.push_back(result);
      return false;
    }
  }
  result.passed = true;
  report_.worst = std::max(report_.worst, result.worst);
  report_.suites.push_back(result);
  return true;
}

// The suite's calls in the runner, each on fresh inputs: in one process on new buffers,
// or (reused) as the timed rounds on one set of buffers; `outputs` gets each call's
// outputs when the run is Ok.
runner::Outcome Verification::call_kernel(bool reused, const Suite& suite, const Calls& calls,
                                          const std::string& so_path, const runner::Options& run,
                                          Calls& outputs) const {
  if (reused) {
    runner::TimingOptions order;
    order.warmup_rounds = 0;
    order.min_rounds = order.max_rounds = static_cast<int>(calls.size());
    order.budget_seconds = 0;
    runner::TimedOutcome timed =
        runner::time_kernels({{so_path, "ollie_entry"}}, suite.graph, calls, run, order);
    if (timed.status == runner::Status::Ok) outputs = std::move(timed.set_outputs[0]);
    return timed;  // its Outcome part, moved
  }
  runner::Outcome outcome = runner::run_calls(so_path, suite.graph, calls, run);
  outputs = std::move(outcome.call_outputs);
  return outcome;
}

// Every output element of one call against the reference; false (and the verdict set)
// at the first element outside its bound.
bool Verification::agrees(const std::string& label, uint64_t call_seed, SuiteResult& result,
                          const std::vector<interp::Tensor>& outputs,
                          const interp::Result& reference) {
  const Comparison c = compare_outputs(outputs, reference);
  result.elements += c.elements;
  result.worst = std::max(result.worst, c.worst);
  if (c.agrees) return true;
  report_.verdict = Verdict::Wrong;
  report_.penalty = c.penalty();
  if (c.index >= 0)
    report_.counterexample = Counterexample{label,   call_seed,  result.dims, c.output,
                                            c.index, c.expected, c.got,       c.bound};
  report_.message = suite_context(label, result) + c.text;
  return false;
}

}  // namespace

Report verify(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
              const Options& options) {
  return Verification(graph, kernel_source, graph_at, options).run();
}

std::string certificate_json(const ir::Graph& graph, const std::string& spec_sha256,
                             const Report& report, const Options& options) {
  nlohmann::json j;
  j["schema"] = "ollie-certificate/1";
  j["spec"] = {{"entry", graph.entry}, {"sha256", spec_sha256}};
  j["kernel"] = {{"sha256", report.kernel_sha256}, {"generic", report.generic}};
  j["build"] = {
      {"compiler", report.compiler}, {"version", report.compiler_version}, {"flags", report.flags}};
  if (!report.sanitizer_flags.empty())
    j["sanitizer_build"] = {{"flags", report.sanitizer_flags},
                            {"preload", report.sanitizer_runtime}};
  nlohmann::json dims = nlohmann::json::object();
  for (const auto& d : graph.dims)
    if (graph.bound_dims.count(d)) dims[d] = graph.bound_dims.at(d);
  j["dims"] = dims;
  j["level"] = options.level == Level::Full ? "full" : "quick";
  nlohmann::json suites = nlohmann::json::array();
  for (const auto& s : report.suites) {
    suites.push_back({{"name", s.name},
                      {"seed", s.seed},
                      {"dims", s.dims},
                      {"elements", s.elements},
                      {"worst_fraction_of_bound", s.worst},
                      {"passed", s.passed}});
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
    j["counterexample"] = {{"suite", c.suite},   {"seed", c.seed},   {"dims", c.dims},
                           {"output", c.output}, {"index", c.index}, {"expected", c.expected},
                           {"got", c.got},       {"bound", c.bound}};
  }
  j["duration_seconds"] = report.seconds;
  return j.dump(2) + "\n";
}

}  // namespace ollie::verify
