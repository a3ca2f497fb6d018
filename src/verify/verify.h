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
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::verify {

enum class Level { Quick, Full };

enum class Verdict { Pass, Wrong, Crash, Timeout, OutOfMemory, Forbidden, CompileError, LoadError, Sanitizer };
// "pass", "wrong", "crash", "timeout", "out-of-memory", "forbidden-syscall", "compile-error", "load-error",
// "sanitizer" (the full level's AddressSanitizer/UndefinedBehaviorSanitizer build reported an error)
const char* verdict_name(Verdict v);

// How a suite draws its float inputs.
enum class Distribution { Normal, Wide, Special, Offset };
// Seeded inputs for `graph` at its bound dims: Normal is normal(0, 1); Wide is
// normal(0, 1) times 30 (large magnitudes: overflow-prone code fails); Special is Normal
// with about 1% of the elements replaced by NaN, +Inf, -Inf, 0 and -0; Offset is Normal
// plus 100 (means far from zero: one-pass variances cancel catastrophically). Integers are small
// (-8..8), bools coin flips.
std::vector<interp::Tensor> make_inputs(const ir::Graph& graph, uint64_t seed, Distribution d);

struct Counterexample {
  std::string suite;
  uint64_t seed = 0;
  std::string dims;          // "M=5, N=37"
  int output = 0;            // result index
  int64_t index = 0;         // flat element index
  double expected = 0, got = 0, bound = 0;
};

struct SuiteResult {
  std::string name;
  uint64_t seed = 0;
  std::string dims;
  int64_t elements = 0;      // output elements compared
  double worst = 0;          // largest |got - expected| / bound over finite, bounded elements
  bool passed = false;
};

struct Report {
  Verdict verdict = Verdict::Pass;
  std::string message;       // for a person: what failed and how
  std::optional<Counterexample> counterexample;
  std::vector<SuiteResult> suites;
  double worst = 0;          // over all suites
  double seconds = 0;        // wall time of the whole verification
  std::string compiler, compiler_version;
  std::vector<std::string> flags;
  // The full level's sanitizer build (empty when it was not made): its flags and the
  // runtime the runner preloaded.
  std::vector<std::string> sanitizer_flags;
  std::string sanitizer_runtime;
  std::string kernel_sha256;
  bool generic = true;       // the kernel claims every dims value (no `// ollie: specialized` line)
};

struct Options {
  Level level = Level::Quick;
  uint64_t seed = 0;          // 0: fresh from std::random_device (recorded in the report)
  double timeout_seconds = 60;
  int threads = 0;
  std::string compiler;      // empty: the build driver's default (g++)
  std::string runner_path;   // empty: next to the running executable
  std::string cache_dir;     // empty: the build driver's default
};

// The graph of the same spec at other dims (for the shape sweep of a generic kernel);
// throws UserError when those dims are not valid for the spec.
using GraphAt = std::function<ir::Graph(const ir::DimBindings& dims)>;

// Verifies `kernel_source` (C++ in the kernel ABI) against `graph`. Never throws for
// anything the kernel does; throws UserError for bad options.
Report verify(const ir::Graph& graph, const std::string& kernel_source, const GraphAt& graph_at,
              const Options& options);

// The certificate (docs/verifier.md documents the schema) as JSON text.
std::string certificate_json(const ir::Graph& graph, const std::string& spec_sha256, const Report& report,
                             const Options& options);

}  // namespace ollie::verify
