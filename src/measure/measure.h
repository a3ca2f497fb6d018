// The measurement stage (DESIGN.md section 6): how long a kernel takes, measured in the
// runner (never in this process), summarized robustly, compared side by side, and
// checked: the outputs of the timed calls themselves are compared with the reference,
// so a kernel cannot be right when verified and fast-but-wrong when timed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::measure {

// A robust summary of repeated timings (seconds).
struct Stats {
  int n = 0;
  double median = 0, min = 0, max = 0;
  double mad = 0;     // median absolute deviation from the median (unscaled)
  int outliers = 0;   // samples above median + 5 x 1.4826 x MAD (a noisy machine's interruptions)
  double spread() const { return median > 0 ? mad / median : 0; }  // MAD relative to the median
};
Stats summarize(std::vector<double> samples);

struct BenchOptions {
  int threads = 0;               // OMP threads for the kernels; 0 = every core
  bool cold = false;             // flush the caches before every call
  uint64_t flush_bytes = 0;      // cold: bytes written between calls; 0 = twice the last-level cache, at least 64 MiB
  double budget_seconds = 1.0;   // time the rounds for this long (after min_rounds)
  int warmup_rounds = 2;
  int min_rounds = 10;
  int max_rounds = 100000;
  uint64_t seed = 0;             // inputs; 0 = fresh (recorded)
  double timeout_seconds = 300;  // the whole timed run
  std::string compiler;          // empty: the build driver's default
  std::string cache_dir;         // empty: the build driver's default
  std::string runner_path;       // empty: next to the running executable
};

struct KernelTiming {
  std::string name;              // as the caller named it (a file name)
  Stats stats;
  bool outputs_agree = false;    // the outputs of its timed calls, on every input set
  std::string output_problem;    // when not: which set, which element, by how much
  double compile_seconds = 0;
};

enum class BenchStatus { Ok, CompileError, RunFailed, Wrong };
const char* bench_status_name(BenchStatus s);  // "ok", "compile-error", "run-failed", "wrong"

struct BenchReport {
  BenchStatus status = BenchStatus::Ok;
  std::string message;
  std::vector<KernelTiming> kernels;
  std::optional<Stats> ratio;    // two kernels: per-round time of the first over the second
  int rounds = 0;
  int threads = 0;
  bool cold = false;
  uint64_t flush_bytes = 0;
  uint64_t seed = 0;
  double warmup_seconds = 0;
  double load_average = 0;       // 1-minute load average when the run started
  std::vector<std::string> noise; // why the timings may not be trustworthy (empty when clean)
};

struct BenchKernel {
  std::string name;
  std::string source;            // C++ in the kernel ABI
};

// Compiles each kernel (one, or two side by side), times them in one runner session on
// two input sets drawn like the verifier's normal suite (inputs at fixed addresses,
// refilled between rounds, outputs poisoned before every call), and compares the outputs
// of each kernel's timed calls with the reference. Never throws for what a kernel does.
BenchReport bench(const ir::Graph& graph, const std::vector<BenchKernel>& kernels, const BenchOptions& options);

// Bytes of the last-level cache (sysconf, else /sys), 0 when unknown.
uint64_t last_level_cache_bytes();

}  // namespace ollie::measure
