// The measurement stage (docs/design.md section 8). Owns: how long a kernel takes, measured in
// the runner (never in this process), summarized robustly, compared side by side, and
// checked (the outputs of the timed calls themselves are compared with the reference, so
// a kernel cannot be right when verified and fast-but-wrong when timed); and machine
// calibration and the roofline: this machine's identity
// (CPU model, ISA, cores, last-level cache), the one-time measurement of its peak float32
// FLOP/s (an FMA loop) and memory bandwidth (a STREAM-style triad), single core and all
// cores, the per-machine cache of those figures (<cache>/machine.json), and the roofline of
// a tensor-IR graph (its FLOPs and compulsory bytes, ir::cost) against them, including how
// to express a measured time as GFLOP/s, GB/s and a fraction of the roofline.
//
// The calibration kernels (peak_kernels.cc) are ollie's own trusted code: they are compiled
// with the build driver at the candidates' flags (-O3 -march=native -fopenmp) and run
// inside the ollie process. Candidate kernels never run here; they run in the runner.
//
// Conventions (docs/measurement.md says more):
// - FLOP/s of the FMA loop = 2 * vector lanes * FMAs per second (an FMA is two FLOPs).
// - Triad bandwidth: STREAM's convention, 3 arrays x 4 bytes per element per pass (b and c
//   read, a written once). With ordinary stores the hardware also reads `a` before writing
//   it (write-allocate), so the bus carries 4/3 of the counted bytes; the counted figure
//   matches what ir::cost counts for a kernel (each input read once, each output written
//   once), so a kernel's bytes / triad bandwidth is a like-for-like bound.
// - Arrays are 4 x the last-level cache each, capped (CalibrateOptions::max_array_bytes,
//   default 1 GiB, and 1/8 of available memory), so three arrays stay far out of cache;
//   MachinePeaks::triad_sizing says which rule set the size.
// - Peaks at t threads scale linearly from the 1-core figure (t = 1) to the all-core
//   figure (t = cores); t is clamped to [1, cores].
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::measure {

// What a cache file must match to be reused.
struct MachineIdentity {
  std::string cpu_model;  // /proc/cpuinfo "model name" (or "CPU implementer/part" on ARM)
  std::string isa;  // vector ISA flags present, widest first: "avx512f avx512bw ... fma avx2 avx"
  int cores = 0;    // hardware threads this process may run on (sched_getaffinity)
};
MachineIdentity host_identity();

// Size in bytes of the last-level data or unified cache (sysfs, else sysconf); 0 if unknown.
int64_t llc_bytes();
// Size in bytes of one core's level-2 data or unified cache (sysfs, else sysconf); 0 if unknown.
int64_t l2_bytes();
// Hardware threads per core (SMT), from cpu0's thread siblings; 1 if unknown.
int threads_per_core();
// MemAvailable from /proc/meminfo; 0 if unknown.
int64_t available_memory_bytes();

// The triad's per-array size and a sentence saying why.
struct TriadSize {
  int64_t bytes = 0;
  std::string why;
};
// 4 x llc (32 MiB assumed when llc is 0), capped at max_array_bytes and at available / 8 (when
// available > 0), rounded down to a multiple of 4 KiB, at least 1 MiB.
TriadSize triad_array_size(int64_t llc, int64_t max_array_bytes, int64_t available);
// The last-level-cache triad's per-array size: llc / 8 (32 MiB assumed when llc is 0), so the
// three arrays take 3/8 of the cache, rounded down to 4 KiB, at least 64 KiB.
TriadSize llc_triad_array_size(int64_t llc);

struct MachinePeaks {
  int format = 1;  // bump when a field's meaning changes (old files are re-measured)
  std::string cpu_model;
  std::string isa;
  int cores = 0;
  int threads_per_core = 1;
  std::string date;            // ISO 8601 UTC, when measured
  std::string compiler;        // compiler version line and the flags of the calibration build
  int vector_bits = 0;         // width of the FMA loop's vectors in that build
  int fma_chains = 0;          // independent FMA accumulators per thread
  double clock_hz = 0;         // estimate from a dependent-add chain, 1 core; 0 if unknown
  double fma_flops_1core = 0;  // float32 FLOP/s
  double fma_flops_all = 0;    // float32 FLOP/s with one thread per core
  double triad_bytes_per_s_1core = 0;
  double triad_bytes_per_s_all = 0;
  int64_t llc_bytes = 0;
  int64_t triad_array_bytes = 0;  // each of the three arrays
  std::string triad_sizing;       // why that size
  std::string triad_convention;   // how bytes are counted
  // The same triad on arrays that fit the last-level cache (llc_triad_array_size): the
  // bandwidth a kernel whose data stays in that cache between calls can reach. 0 when not
  // measured: a machine.json written before ollie measured it (still read; the roofline
  // then falls back to the DRAM figure and says so).
  double llc_bytes_per_s_1core = 0;
  double llc_bytes_per_s_all = 0;
  int64_t llc_triad_array_bytes = 0;
  // Low-precision peaks, 0 where the calibration build has no such instruction (a cache file
  // without them is re-measured):
  // bfloat16 products summed in float32 (AVX512_BF16's vdpbf16ps, 4 FLOPs per float32 lane)
  // and float16 FMAs (AVX512_FP16). AMX's tdpbf16ps is not measured yet.
  double bf16_dot_flops_1core = 0;
  double bf16_dot_flops_all = 0;
  double f16_fma_flops_1core = 0;
  double f16_fma_flops_all = 0;
  double load_average = -1;  // 1-minute load average when the calibration started
  double seconds = 0;        // wall time of the calibration

  MachineIdentity identity() const { return {cpu_model, isa, cores}; }
};

// nlohmann::json conversions (ADL): every field by name; from_json throws UserError naming
// a missing or mistyped field (the last-level-cache triad's fields may be missing: 0).
void to_json(nlohmann::json& j, const MachinePeaks& p);
void from_json(const nlohmann::json& j, MachinePeaks& p);
std::string to_json_text(const MachinePeaks& p);  // pretty, 2-space indent, trailing newline

struct CalibrateOptions {
  // Each timed sample runs at least this long; the FMA loop's iteration count is doubled
  // until it does. The defaults take 10-20 s with 1 GiB arrays (most of it the triad's
  // page faults and passes).
  double sample_seconds = 0.2;
  int repetitions = 5;  // best of this many samples per figure
  int64_t max_array_bytes = int64_t{1} << 30;
  std::string build_cache_dir;                       // empty: build::default_cache_dir()
  std::function<void(const std::string&)> progress;  // one line per step, if set
};

// Compiles and runs the calibration kernels; throws UserError if they do not compile.
MachinePeaks calibrate(const CalibrateOptions& options = {});

// $OLLIE_CACHE_DIR (ollie's one cache directory, which the build cache also uses), else
// $XDG_CACHE_HOME/ollie, else ~/.cache/ollie. machine.json lives directly in it
// (machine-<N>cpus.json for a process allowed on only N of the online CPUs).
std::string default_cache_dir();

struct CachedPeaks {
  MachinePeaks peaks;
  std::string path;  // <cache_dir>/machine.json, or machine-<N>cpus.json (see above)
  bool measured_now = false;
  std::string why;  // why it was (or was not) measured now
};
// The peaks from the cache file when its format, cpu model, isa and cores match
// this machine and `recalibrate` is false; otherwise calibrates and (re)writes the file
// atomically. A file that cannot be read or parsed is replaced, and `why` says so.
CachedPeaks machine_peaks(const std::string& cache_dir, bool recalibrate,
                          const CalibrateOptions& options = {});

// ---------------------------------------------------------------------------- roofline

// The peaks a kernel with `threads` threads can reach (threads <= 0: all cores); linear
// between the 1-core and the all-core figures.
struct ThreadPeaks {
  int threads = 0;
  double flops_per_s = 0;
  double bytes_per_s = 0;           // DRAM (the triad out of cache)
  double llc_bytes_per_s = 0;       // the last-level cache (its triad); 0 when not measured
  double bf16_dot_flops_per_s = 0;  // 0 when the machine has none (then flops_per_s applies)
};
ThreadPeaks peaks_at(const MachinePeaks& peaks, int threads);

struct Roofline {
  double flops = 0;           // ir::cost FLOPs at the bound dims
  double bytes = 0;           // ir::cost compulsory bytes
  double intensity = 0;       // flops / bytes (0 when bytes is 0)
  double peak_flops = 0;      // FLOP/s at the thread count
  double bandwidth = 0;       // bytes/s at the thread count
  double bound_seconds = 0;   // max(flops / peak_flops, bytes / bandwidth): no kernel is faster
  bool memory_bound = false;  // bytes / bandwidth > flops / peak_flops
  int threads = 0;
  // Which memory `bandwidth` is, and why: "DRAM" with cold caches or a working set larger
  // than the last-level cache, "last-level cache" when hot and it fits (see roofline()).
  std::string ceiling = "DRAM";
  // min(peak_flops, intensity * bandwidth): the attainable FLOP/s.
  double attainable_flops() const;
};
// `bf16_product_flops` (part of `flops`, ir::Cost): counted at the bf16 dot-product peak
// where the machine has a faster one than its float32 FMAs.
Roofline roofline(double flops, double bytes, const ThreadPeaks& peaks,
                  double bf16_product_flops = 0);
Roofline roofline(const ir::Graph& graph_at_bound_dims, const MachinePeaks& peaks, int threads);
// The roofline under a timing regime: with cold caches the memory ceiling is DRAM's (the
// triad); hot, it is the last-level cache's when the compulsory bytes fit that cache and
// its bandwidth was measured, else DRAM's (`ceiling` says which and why).
Roofline roofline(double flops, double bytes, const MachinePeaks& peaks, int threads, bool cold,
                  double bf16_product_flops = 0);
Roofline roofline(const ir::Graph& graph_at_bound_dims, const MachinePeaks& peaks, int threads,
                  bool cold);

// ---------------------------------------------------------------------------- regime

// How `optimize` times its candidates when neither --cold nor --hot is given. A kernel's
// data stays in cache between two of its calls in real use only when the program does
// little in between; in a model, the other layers' weights and caches pass through the
// caches between two calls of one kernel, so what the kernel reads comes from DRAM unless
// it is small enough to stay in the cores' private caches. Cold when the working set (the
// compulsory bytes: inputs read once, outputs written once) exceeds what the level-2
// caches of the kernel's threads hold (threads x l2_per_core), or kColdLlcFraction of the
// last-level cache (a hot timing of more than that measures a cache the kernel partly
// evicts itself); hot otherwise. docs/measurement.md gives the numbers behind it.
constexpr double kColdLlcFraction = 0.5;
struct Regime {
  bool cold = false;
  std::string why;  // a sentence: the working set against the caches, or the flag given
};
// llc 0: 32 MiB assumed; l2_per_core 0: the LLC rule alone; threads < 1: 1.
Regime choose_regime(int64_t working_set_bytes, int64_t llc_bytes, int64_t l2_per_core,
                     int threads);
// "cold" or "hot".
inline const char* regime_name(bool cold) { return cold ? "cold" : "hot"; }

// A measured time as rates and as a fraction of the roofline: bound_seconds / seconds
// (1 = at the roofline; above 1 means the kernel beat the model, e.g. data stayed in cache).
struct Throughput {
  double seconds = 0;
  double gflops_per_s = 0;
  double gbytes_per_s = 0;  // compulsory bytes / seconds, 1e9 bytes
  double roofline_fraction = 0;
};
Throughput throughput(const Roofline& roof, double seconds);

// Why `seconds` cannot be a true time of a kernel with roofline `roof` ("" when it can).
// The compute roof (FLOPs / peak FLOP/s) is a hard lower bound at any cache state: below
// 0.9 of it is refused. The memory roof is one only with cold caches (hot, the data may
// come from cache faster than the triad's DRAM bandwidth), and the triad is not the last
// word on bandwidth (read-only streams can go faster), so with `cold` below 0.5 of it is
// refused. What is refused is reported as a measurement error or a cheating kernel.
constexpr double kComputeRoofSlack = 0.9;
constexpr double kMemoryRoofSlack = 0.5;
std::string below_roofline(const Roofline& roof, double seconds, bool cold);

// ---------------------------------------------------------------------------- timing

// A robust summary of repeated timings (seconds).
struct Stats {
  int n = 0;
  double median = 0, min = 0, max = 0;
  double mad = 0;    // median absolute deviation from the median (unscaled)
  int outliers = 0;  // samples above median + 5 x 1.4826 x MAD (a noisy machine's interruptions)
  double spread() const { return median > 0 ? mad / median : 0; }  // MAD relative to the median
};
Stats summarize(std::vector<double> samples);

struct BenchOptions {
  int threads = 0;    // OMP threads for the kernels; 0 = every core
  bool cold = false;  // flush the caches before every call
  uint64_t flush_bytes =
      0;  // cold: bytes written between calls; 0 = twice the last-level cache, at least 64 MiB
  double budget_seconds = 1.0;  // time the rounds for this long (after min_rounds)
  int warmup_rounds = 2;
  int min_rounds = 10;
  int max_rounds = 100000;
  uint64_t seed = 0;             // inputs; 0 = fresh (recorded)
  double timeout_seconds = 300;  // the whole timed run
  std::string compiler;          // empty: the build driver's default
  std::string cache_dir;         // empty: the build driver's default
  // Each kernel through the screen (build/screen.h) before it is timed. false only for
  // instruments that test the timing itself (tests' kernels that sleep or read the
  // environment): never for a candidate.
  bool screen = true;
  std::string runner_path;  // empty: next to the running executable
  // Fresh inputs (runner::TimingOptions::fresh_inputs): timed calls checked per kernel
  // (a random sample, chosen after the calls) and elements changed per input per call.
  int check_calls = 8;
  int fresh_points = 64;
  // The name every kernel exports (`--symbol`, emit::check_symbol): the adapter calls it.
  std::string kernel_symbol = "ollie_kernel";
  // Pace (runner::TimingOptions; the search's giving up on hopeless candidates, two
  // kernels with the reference second). 0: off. A call of the first kernel longer than
  // call_limit_seconds, or its fastest call over abandon_ratio times the second's once
  // each was clocked twice, ends the timing: BenchStatus::Abandoned. The timed rounds
  // stop after cap_seconds once two were made, even before min_rounds.
  double call_limit_seconds = 0;
  double abandon_ratio = 0;
  double cap_seconds = 0;
  // false: the timed calls' outputs are not compared with the reference (saves the
  // reference's work). Only for a probe whose times can do nothing but reject a kernel
  // (the search's speed probe before verification); never for a time that is reported.
  bool check_outputs = true;
};

struct KernelTiming {
  std::string name;  // as the caller named it (a file name)
  Stats stats;
  bool outputs_agree = false;  // the outputs of its checked timed calls
  std::string output_problem;  // when not: which call, which element, by how much
  int checked_calls = 0;       // timed calls whose outputs were checked
  double compile_seconds = 0;
};

// Refused: a kernel's source or build failed the screens (build/screen.h) and never ran.
// Abandoned: the first kernel was slower than BenchOptions' pace allows (its times are
// not a measurement: BenchReport::fastest_ratio says how much slower it was).
enum class BenchStatus { Ok, CompileError, RunFailed, Wrong, Refused, Abandoned };
// "ok", "compile-error", "run-failed", "wrong", "refused", "abandoned"
const char* bench_status_name(BenchStatus s);

struct BenchReport {
  BenchStatus status = BenchStatus::Ok;
  std::string message;
  std::vector<KernelTiming> kernels;
  std::optional<Stats> ratio;  // two kernels: per-round time of the first over the second
  int rounds = 0;
  int threads = 0;
  bool cold = false;
  uint64_t flush_bytes = 0;
  uint64_t seed = 0;
  double warmup_seconds = 0;
  double load_average = 0;  // 1-minute load average when the run started
  // CPUs' worth of work other processes did while the kernels were timed: the machine's
  // busy CPU time (/proc/stat) minus this process's and its runner child's, per second
  // of wall clock; -1 when unknown. The figure to read first on a shared machine.
  double others_cpus = -1;
  std::vector<std::string> noise;  // why the timings may not be trustworthy (empty when clean)
  // Pace (BenchOptions::abandon_ratio, call_limit_seconds): each kernel's fastest clocked
  // call (warm-up rounds included; 0: none), and their ratio, first over second (0:
  // unknown; with over_call_limit at least call_limit_seconds over the second's fastest).
  std::vector<double> fastest;
  double fastest_ratio = 0;
  bool over_call_limit = false;
};

// others_cpus at or above this is reported as noise.
constexpr double kBusyOthers = 0.2;
// Whether other processes took CPUs the kernels' threads needed while they were timed:
// others_cpus >= kBusyOthers + the CPUs the threads leave free (cores - threads). A
// kernel's call waits for its slowest thread, so on a machine with no CPU to spare one
// busy process stalls every call of a multi-threaded kernel by a scheduler slice
// (milliseconds), which no statistic of the session can remove.
bool contended(const BenchReport& report);

struct BenchKernel {
  std::string name;
  std::string source;  // C++ in the kernel ABI
};

// Compiles each kernel (one, or two side by side), times them in one runner session on
// two input sets drawn like the verifier's normal suite (inputs at fixed addresses,
// refilled before every call rotated by a random amount and changed at random positions
// right before the clock starts, so no call sees inputs another call saw; outputs
// poisoned before every call), and compares the outputs of a random sample of each
// kernel's timed calls with the reference for the exact inputs they saw. A kernel that
// is wrong on any of them is refused (BenchStatus::Wrong, the call and element named).
// Never throws for what a kernel does.
BenchReport bench(const ir::Graph& graph, const std::vector<BenchKernel>& kernels,
                  const BenchOptions& options);

}  // namespace ollie::measure
