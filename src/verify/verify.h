// The verifier (stage 4): checks a candidate kernel against the spec's contract. It
// compiles the kernel, runs it in the sandboxed runner on suites of fresh random inputs
// (several distributions, special values, other dims for generic kernels), compares
// every output element with the reference interpreter's value and derived bound, and
// returns a verdict with the first counterexample and a certificate of what was checked.
// At the full level a build with AddressSanitizer and UndefinedBehaviorSanitizer then
// replays a few of the suites.
// The reference is computed in this process; the kernel only ever runs in the runner.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::verify {

enum class Level { Quick, Full };

enum class Verdict {
  Pass,
  Wrong,
  Crash,
  Timeout,
  OutOfMemory,
  Forbidden,
  CompileError,
  LoadError,
  Sanitizer,
  Tampered,
  Refused,
  Weak,
  TooSlow
};
// "pass", "wrong", "crash", "timeout", "out-of-memory", "forbidden-syscall", "compile-error",
// "load-error", "sanitizer" (the full level's AddressSanitizer/UndefinedBehaviorSanitizer build
// reported an error), "tampered" (the kernel changed what it must leave alone: its read-only
// inputs, the floating-point environment, the harness's memory), "refused" (the source asks
// for something a kernel never needs, found before it was compiled or loaded: system calls,
// constructors, inline assembly, the environment, ...), "weak" (every element agreed, but
// for some output most elements had no finite bound from either criterion: only the
// relative floor checked them, a pass that means little; Options::accept_weak makes it
// a pass), "too-slow" (never the verifier's: the search gave up on a candidate whose first
// timed calls were far slower than its chain could accept, before or instead of verifying
// or fully timing it; docs/search.md, "Giving up on slow candidates")
const char* verdict_name(Verdict v);
// The verdict named `name` (verdict_name's text, as the run database stores it); nullopt
// for any other text.
std::optional<Verdict> verdict_from_name(std::string_view name);

// How a suite draws its float inputs.
enum class Distribution { Normal, Wide, Special, Offset, Integer, Constants, Subnormal, Ties };
// Seeded inputs for `graph` at its bound dims: Normal is normal(0, 1); Wide is
// normal(0, 1) times 30 (large magnitudes: overflow-prone code fails); Special is Normal
// with about 1% of the elements replaced by NaN, +Inf, -Inf, 0 and -0; Offset is Normal
// plus 100 (means far from zero: one-pass variances cancel catastrophically); Integer is
// uniform integers in [-k, k], k = exact_range(graph).k (verify/polynomial.h; throws
// InternalError when the graph has none); Constants is exact values real data is full of:
// per row (the last dim) either one constant repeated, or elements drawn from 0, +-1,
// +-0.5, +-2, 0.25, 4 (so the max recurs: ties), or normal values with about 1 in 8 of
// them such constants; a one-element parameter (a temperature, a scale) is exactly 1.
// Subnormal is Normal, but the float parameter with the most elements (the data: the
// activations, the cache, a matrix; the first of equals) is normal(0, 1) times its
// dtype's smallest normal number (2^-126 for f32 and bf16, 2^-14 for f16): about two
// thirds of its values subnormal, and their products with the other parameters' ordinary
// values below float32's normal range, so a kernel that flushes subnormal inputs or
// results (FTZ/DAZ, vdpbf16ps, a flushing conversion) differs from the spec.
// Ties (for specs that round to integers: np.round, np.rint, floor, ceil, trunc) is
// multiples of 1/8 in [-8, 8], exact in every float dtype: integers, halves and quarters,
// so x, 2x, 3x, 4x ... land on integers and on the .5 ties where rounding half to even
// and half away from zero differ.
// Integers are small (-8..8), bools coin flips.
// Drawn in chunks by `threads` threads; the values do not depend on how many.
std::vector<interp::Tensor> make_inputs(const ir::Graph& graph, uint64_t seed, Distribution d,
                                        int threads = 1);

struct Counterexample {
  std::string suite;
  uint64_t seed = 0;
  std::string dims;   // "M=5, N=37"
  int output = 0;     // result index
  int64_t index = 0;  // flat element index
  double expected = 0, got = 0, bound = 0;
};

struct SuiteResult {
  std::string name;
  uint64_t seed = 0;
  std::string dims;
  int64_t elements = 0;  // output elements compared
  double worst = 0;      // largest |got - expected| / bound over finite, bounded elements
  bool passed = false;
  int64_t integer_range =
      0;  // integer-exact: float inputs drawn from [-integer_range, integer_range]
  // Per output, which criterion bounded how many elements over the suite's calls.
  std::vector<interp::Criteria> criteria;
  int tight_calls = 0;  // calls whose bounds the honest ensemble tightened
};

// Adds `more` to `sum` output by output (growing it as needed).
void add_criteria(std::vector<interp::Criteria>& sum, const std::vector<interp::Criteria>& more);

// A suite that does not apply to this spec, and why (e.g. integer-exact on a spec that
// is not polynomial).
struct NotApplicable {
  std::string suite, dims, reason;
};

struct Report {
  Verdict verdict = Verdict::Pass;
  std::string message;  // for a person: what failed and how
  std::optional<Counterexample> counterexample;
  std::vector<SuiteResult> suites;
  std::vector<NotApplicable> not_applicable;
  // Suites that could not run in this environment (not the kernel's doing: e.g. the
  // sanitizer build under an address-space limit), and why; the verdict stands without them.
  std::vector<NotApplicable> not_run;
  double worst = 0;  // over all suites
  // Per output, which criterion bounded how many elements over the calls the honest
  // ensemble tightened (the verdict is weak when, for some output, most were unbounded).
  std::vector<interp::Criteria> criteria;
  bool weak = false;  // so bounded: the verdict weak (or pass, with Options::accept_weak)
  // The search's correctness penalty: 0 on pass; for wrong, the fraction of the failing
  // suite's elements out of bound (Comparison::penalty); 1 for every other verdict.
  double penalty = 0;
  double seconds = 0;  // wall time of the whole verification
  std::string compiler, compiler_version;
  std::vector<std::string> flags;
  // The full level's sanitizer build (empty when it was not made): its flags and the
  // runtime the runner preloaded.
  std::vector<std::string> sanitizer_flags;
  std::string sanitizer_runtime;
  std::string kernel_sha256;
  bool generic = true;  // the kernel claims every dims value (no `// ollie: specialized` line)
};

struct Options {
  Level level = Level::Quick;
  uint64_t seed = 0;  // 0: fresh from std::random_device (recorded in the report)
  double timeout_seconds = 60;
  int threads = 0;
  std::string compiler;      // empty: the build driver's default (g++)
  std::string runner_path;   // empty: next to the running executable
  std::string cache_dir;     // empty: the build driver's default
  bool accept_weak = false;  // a weak pass is reported as pass (the certificate still says weak)
  // Realistic inputs from the user, one tensor per parameter at the bound dims: when given,
  // the first suite after integer-exact ("user-inputs") calls the kernel on exactly these,
  // with the honest ensemble's tolerance.
  std::vector<interp::Tensor> user_inputs;
  // The name the kernel exports (`--symbol`, emit::check_symbol): the adapter calls it.
  std::string kernel_symbol = "ollie_kernel";
};

// The graph of the same spec at other dims (for the shape sweep of a generic kernel);
// throws UserError when those dims are not valid for the spec.
using GraphAt = std::function<ir::Graph(const ir::DimBindings& dims)>;

// Verifies `kernel_source` (C++ in the kernel ABI) against `graph`. Never throws for
// anything the kernel does; throws UserError for bad options.
Report verify(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
              const Options& options);

// How one call's outputs compare with the reference.
struct Comparison {
  bool agrees = true;
  int64_t elements = 0;  // elements compared
  double worst = 0;      // largest |got - expected| / bound over finite, bounded elements
  // The first failure: an element outside its bound (output, index, expected, got, bound)
  // or, with index -1, an output whose relative error exceeds the floor.
  int output = 0;
  int64_t index = -1;
  double expected = 0, got = 0, bound = 0;
  std::string text;           // "out0[17]: got 1.5, expected 1.25 (bound 1e-06)"
  int64_t mismatches = 0;     // elements outside their bound (all of them are compared)
  bool floor_failed = false;  // every element within bound, but an output over the relative floor
  // How wrong, in (0, 1] when it does not agree: the fraction of elements out of bound
  // (at least 1e-3 per disagreement, so one bad element still counts), 0.5 for a floor failure.
  double penalty() const {
    if (agrees) return 0;
    if (mismatches == 0) return 0.5;
    const double fraction =
        static_cast<double>(mismatches) / static_cast<double>(std::max<int64_t>(1, elements));
    return std::min(1.0, std::max(1e-3, fraction));
  }
};
// Every element within its derived bound (a non-finite reference value matched exactly),
// and over each output's finite elements a relative 2-norm error of at most 1%, so that
// zeros, a constant or noise never pass on wide bounds. The verifier's comparison, also
// used on the outputs of timed runs.
Comparison compare_outputs(const std::vector<interp::Tensor>& outputs,
                           const interp::Result& reference);

// The certificate (docs/verifier.md documents the schema) as JSON text.
std::string certificate_json(const ir::Graph& graph, const std::string& spec_sha256,
                             const Report& report, const Options& options);

}  // namespace ollie::verify
