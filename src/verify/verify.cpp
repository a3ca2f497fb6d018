// The verifier: builds a candidate, runs it in the sandboxed runner on suites of fresh
// random inputs, compares with the reference and its bound, and writes the certificate.
#include "verify/verify.h"

#include <sys/resource.h>

#include <map>

#include <nlohmann/json.hpp>

#include "verify/verification.h"

namespace ollie::verify {

using namespace detail;

namespace {

// Largest relative 2-norm error of a whole output (see `agrees`).
constexpr double kRelativeFloor = 1e-2;

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
    case Verdict::Weak: return "weak";
    case Verdict::TooSlow: return "too-slow";
  }
  return "?";
}

std::optional<Verdict> verdict_from_name(std::string_view name) {
  for (Verdict v :
       {Verdict::Pass, Verdict::Wrong, Verdict::Crash, Verdict::Timeout, Verdict::OutOfMemory,
        Verdict::Forbidden, Verdict::CompileError, Verdict::LoadError, Verdict::Sanitizer,
        Verdict::Tampered, Verdict::Refused, Verdict::Weak, Verdict::TooSlow})
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
    // Elements below the dtype's normal range have no relative accuracy (a tiny input
    // times a tiny weight underflows to 0 in any kernel): only their bound checks them.
    const ir::DType dtype = reference.values[o].dtype;
    const double tiny = ir::is_float(dtype) ? ir::smallest_normal(dtype) : 0.0;
    double err2 = 0, want2 = 0;
    for (size_t k = 0; k < got.size() && k < want.size(); ++k)
      if (std::isfinite(want[k]) && std::isfinite(got[k]) && std::fabs(want[k]) >= tiny) {
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

void add_criteria(std::vector<interp::Criteria>& sum, const std::vector<interp::Criteria>& more) {
  if (sum.size() < more.size()) sum.resize(more.size());
  for (size_t o = 0; o < more.size(); ++o) {
    sum[o].exact += more[o].exact;
    sum[o].derived += more[o].derived;
    sum[o].ensemble += more[o].ensemble;
    sum[o].unbounded += more[o].unbounded;
  }
}

namespace detail {

Report Verification::run() {
  if (!compile()) return finish();
  plan_suites();
  if (run_suites(suites_, 0, so_path_, run_options_) && (!full_ || replay_with_sanitizers())) {
    report_.verdict = Verdict::Pass;
    report_.message =
        "all " + std::to_string(report_.suites.size()) + " suites agree with the reference";
    for (const auto& s : report_.not_run)
      report_.message +=
          "; the " + s.suite + " suites did not run in this environment: " + s.reason;
    judge_weak();
  }
  return finish();
}

// A pass is weak when, over the calls the honest ensemble tightened, most of some
// output's finite elements had no finite bound from either criterion: only the relative
// floor checked them.
void Verification::judge_weak() {
  for (size_t o = 0; o < report_.criteria.size(); ++o) {
    const interp::Criteria& c = report_.criteria[o];
    if (c.unbounded == 0 || 2 * c.unbounded <= c.finite()) continue;
    report_.weak = true;
    const std::string what = "out" + std::to_string(o) + ": " + std::to_string(c.unbounded) +
                             " of its " + std::to_string(c.finite()) +
                             " finite elements had no finite bound (neither the derived bound "
                             "nor the honest ensemble's tolerance), so only the 1% relative "
                             "floor checked them";
    if (options_.accept_weak) {
      report_.message += "; weak (accepted): " + what;
    } else {
      report_.verdict = Verdict::Weak;
      report_.penalty = 0.25;
      report_.message = "weak: every element agreed, but " + what +
                        " (a pass that means little; --accept-weak takes it)";
    }
    return;
  }
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
  if (!options_.user_inputs.empty()) {
    Suite& user = suites_.emplace_back("user-inputs", Distribution::Normal, graph_);
    user.given = options_.user_inputs;
  }
  plan_random_suites();
  plan_rounding_suites();
  plan_call_suites();
  plan_shape_sweep();
  plan_tight_calls();
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

// Where the spec rounds to integers (np.round, np.rint, floor, ceil, trunc): inputs on the
// integers and the .5 ties, which random floats never hit, at every level (a kernel that
// rounds half away from zero, or floors x - tiny, differs only there).
void Verification::plan_rounding_suites() {
  bool rounds = false;
  for (const auto& n : graph_.nodes)
    rounds = rounds || (n.kind >= ir::OpKind::Floor && n.kind <= ir::OpKind::Rint);
  if (!rounds) return;
  for (int i = 0; i < (full_ ? 2 : 1); ++i)
    suites_.emplace_back("rounding-ties", Distribution::Ties, graph_);
}

// Random inputs at the bound dims, at the full level: each distribution as suites of
// their own, the normal ones with calls_ calls per process. At quick the normal, wide,
// special-values, offset, exact-constants and subnormal inputs are the calls of the call-order
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
  for (int i = 0; i < 2; ++i) suites_.emplace_back("subnormal", Distribution::Subnormal, graph_);
}

// A generic kernel at the sweep's dims (verify/sweep.h), one call each: normal inputs
// where a dim is large, a multiple of 256 or 1 to 3 (what those draws are for must not
// hide behind equal rows or a NaN), and at the other draws exact constants, special values,
// normal and subnormal inputs in turn.
void Verification::plan_shape_sweep() {
  if (report_.generic) sweep_ = sweep_graphs(graph_, graph_at_, seed_);
  const Distribution plain[] = {Distribution::Constants, Distribution::Special,
                                Distribution::Normal, Distribution::Subnormal};
  size_t plain_draws = 0;
  for (const auto& g : sweep_) {
    bool pinned = beyond_twice_the_bound(g);
    // Sizes 1 to 3 are where a tail's special cases run: a bug there must not hide behind
    // rows that come out equal (rows of one constant, NaN rows, the uniform softmax of
    // subnormal data). Measured: a kernel wrong only for rows % 4 == 2 passed about one
    // quick verification in 250 when the draws at 2 rows fell on those distributions.
    for (const auto& [d, v] : g.bound_dims) pinned = pinned || v % 256 == 0 || v <= 3;
    const Distribution d = pinned ? Distribution::Normal : plain[plain_draws++ % std::size(plain)];
    suites_.emplace_back("shape-sweep", d, g);
  }
}

// Which calls the honest ensemble tightens (docs/verifier.md, "Tolerances"): at full,
// every call with float inputs; at quick, where its members cost about twice the
// reference, the call-order suite's first call (normal inputs at the bound dims) and the
// shape-sweep draws with a dim beyond twice its bound that cost at most a quarter of the
// bound dims, and for every dim the cheapest draw that takes it beyond twice its bound
// with kSweepLargeElements result elements (any, when none has that many).
// Without that last rule a kernel wrong by a small factor only where one dim is large
// (a long reduction, K > 256) passed about one quick verification in 400: the one draw
// with K beyond twice its bound cost over a quarter (its other dims cannot shrink below
// the share), so only the derived bound of a long dot product judged it, and that bound
// is loose enough for a 1e-4 scale on 24 elements.
void Verification::plan_tight_calls() {
  const double bound_cost = sweep_cost(graph_, graph_.bound_dims);
  const double enough =
      std::min(kSweepLargeElements, sweep_result_elements(graph_, graph_.bound_dims));
  // Per dim beyond twice its bound: the draw to tighten, ranked by (too few elements, cost).
  std::map<std::string, std::pair<Suite*, std::pair<bool, double>>> cheapest;
  for (Suite& suite : suites_) {
    if (suite.distribution == Distribution::Integer) continue;
    if (full_) {
      suite.tight_calls = suite.calls;
    } else if (suite.call_order || !suite.given.empty()) {
      suite.tight_calls = 1;
    } else if (suite.name == "shape-sweep" && beyond_twice_the_bound(suite.graph)) {
      const double cost = sweep_cost(suite.graph, suite.graph.bound_dims);
      if (cost <= 0.25 * bound_cost) suite.tight_calls = 1;
      const std::pair<bool, double> rank{
          sweep_result_elements(suite.graph, suite.graph.bound_dims) < enough, cost};
      for (const std::string& dim : dims_beyond_twice_the_bound(suite.graph)) {
        auto [it, fresh] = cheapest.try_emplace(dim, &suite, rank);
        if (!fresh && rank < it->second.second) it->second = {&suite, rank};
      }
    }
  }
  for (auto& [dim, suite_cost] : cheapest) suite_cost.first->tight_calls = 1;
}

// Whether some dim of `g` is more than twice its size at the bound dims.
bool Verification::beyond_twice_the_bound(const ir::Graph& g) const {
  return !dims_beyond_twice_the_bound(g).empty();
}

// The dims of `g` more than twice their size at the bound dims.
std::vector<std::string> Verification::dims_beyond_twice_the_bound(const ir::Graph& g) const {
  std::vector<std::string> dims;
  for (const auto& [d, v] : g.bound_dims) {
    const auto bound = graph_.bound_dims.find(d);
    if (bound != graph_.bound_dims.end() && v > 2 * bound->second) dims.push_back(d);
  }
  return dims;
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
  // calls_ (6 to 9) calls in one process, each on fresh inputs (kCallMix) and new buffers:
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
  if (const auto blocked = sanitizer_blocked()) {
    report_.not_run.push_back({"sanitizer", dims_text(graph_), *blocked});
    return true;
  }
  const Report before = report_;
  if (run_suites(sanitizer_replays(), suites_.size(), sanitized_build.so_path, sanitizer_options))
    return true;
  // AddressSanitizer could not set itself up (its shadow memory): the environment's failure,
  // not the kernel's.
  const std::string& message = report_.message;
  const size_t at = message.find("ReserveShadowMemoryRange failed");
  if (at == std::string::npos &&
      message.find("AddressSanitizer failed to allocate") == std::string::npos)
    return false;
  const std::string what = message.substr(
      message.find("==ERROR") != std::string::npos ? message.find("==ERROR") : 0, 300);
  report_ = before;
  report_.not_run.push_back(
      {"sanitizer", dims_text(graph_),
       "AddressSanitizer could not reserve its shadow memory in this environment (" + what +
           "); raise the address-space limit (`ulimit -v unlimited`) to run it"});
  return true;
}

// Why the sanitizer build cannot run here, if it cannot: AddressSanitizer reserves some
// 16 TiB of address space for its shadow memory on x86-64, which an address-space limit
// (`ulimit -v`, common on shared clusters) forbids.
std::optional<std::string> Verification::sanitizer_blocked() const {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur >= (rlim_t{1} << 45))
    return std::nullopt;
  return "the address-space limit (ulimit -v) is " + std::to_string(limit.rlim_cur >> 30) +
         " GiB, and AddressSanitizer reserves about 16 TiB for its shadow memory; raise the "
         "limit (`ulimit -v unlimited`) to run the sanitizer suites";
}

}  // namespace detail

Report verify(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
              const Options& options) {
  return Verification(graph, kernel_source, graph_at, options).run();
}

namespace {

// Per output, how many elements each criterion bounded.
nlohmann::json criteria_json(const std::vector<interp::Criteria>& criteria) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : criteria)
    j.push_back({{"exact", c.exact},
                 {"derived", c.derived},
                 {"ensemble", c.ensemble},
                 {"unbounded", c.unbounded}});
  return j;
}

}  // namespace

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
    if (s.tight_calls > 0) suites.back()["ensemble_calls"] = s.tight_calls;
    suites.back()["criteria"] = criteria_json(s.criteria);
  }
  j["suites"] = suites;
  j["criteria"] = criteria_json(report.criteria);
  j["weak"] = report.weak;
  nlohmann::json not_applicable = nlohmann::json::array();
  for (const auto& s : report.not_applicable)
    not_applicable.push_back({{"suite", s.suite}, {"dims", s.dims}, {"reason", s.reason}});
  j["not_applicable"] = not_applicable;
  nlohmann::json not_run = nlohmann::json::array();
  for (const auto& s : report.not_run)
    not_run.push_back({{"suite", s.suite}, {"dims", s.dims}, {"reason", s.reason}});
  j["not_run"] = not_run;
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
