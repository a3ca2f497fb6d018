// calibrate(): compiles the trusted calibration kernels (peak_kernels.cc, embedded as text)
// with the build driver, loads them into this process and times them: a clock estimate,
// the FMA loop on one core and on all cores, and the triad on one core and on all cores,
// out of cache (DRAM) and in the last-level cache.
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <cmath>
#include <ctime>
#include <memory>

#include "build/build.h"
#include "measure/measure.h"
#include "support/error.h"
#include "support/strings.h"

namespace ollie::measure {

namespace {

const char* kPeakKernels =
#include "measure/peak_kernels_text.inc"
    ;

using LanesFn = int (*)();
using FmaRunFn = double (*)(int64_t, int);
using ThreadsFn = int (*)(int);
using AddChainFn = int64_t (*)(int64_t);
using TriadInitFn = void (*)(float*, float*, float*, int64_t, int);
using TriadFn = void (*)(float*, const float*, const float*, float, int64_t, int);

struct Kernels {
  LanesFn lanes;
  LanesFn chains;
  FmaRunFn fma_run;
  ThreadsFn threads;
  AddChainFn add_chain;
  TriadInitFn triad_init;
  TriadFn triad;
  LanesFn bf16_dot_flops_per_iter, f16_fma_flops_per_iter;
  FmaRunFn bf16_dot_run, f16_fma_run;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double time_of(F&& f) {
  double t0 = now_seconds();
  f();
  return now_seconds() - t0;
}

// Doubles `iters` (from `start`) until one call of f(iters) takes at least `target` seconds;
// returns that count.
template <class F>
int64_t ramp(int64_t start, double target, F&& f) {
  int64_t iters = std::max<int64_t>(start, 1);
  while (true) {
    double t = time_of([&] { f(iters); });
    if (t >= target || iters > (int64_t{1} << 50)) return iters;
    // Jump most of the way at once when the call was long enough to trust.
    double grow = t > 1e-3 ? std::clamp(target / t * 1.1, 1.1, 64.0) : 2.0;
    iters = static_cast<int64_t>(static_cast<double>(iters) * grow) + 1;
  }
}

// Best (shortest) of `reps` timings of f().
template <class F>
double best_of(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < std::max(reps, 1); ++r) best = std::min(best, time_of(f));
  return best;
}

Kernels load_kernels(const std::string& so_path) {
  // RTLD_NODELETE and never closed: the OpenMP runtime's idle threads live on in libgomp.
  void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) throw UserError(std::string("cannot load the calibration kernels: ") + dlerror());
  auto sym = [&](const char* name) {
    void* p = dlsym(h, name);
    if (!p) throw InternalError(std::string("calibration kernels lack ") + name);
    return p;
  };
  Kernels k;
  k.lanes = reinterpret_cast<LanesFn>(sym("ollie_peak_lanes"));
  k.chains = reinterpret_cast<LanesFn>(sym("ollie_peak_chains"));
  k.fma_run = reinterpret_cast<FmaRunFn>(sym("ollie_fma_run"));
  k.threads = reinterpret_cast<ThreadsFn>(sym("ollie_peak_threads"));
  k.add_chain = reinterpret_cast<AddChainFn>(sym("ollie_add_chain"));
  k.triad_init = reinterpret_cast<TriadInitFn>(sym("ollie_triad_init"));
  k.triad = reinterpret_cast<TriadFn>(sym("ollie_triad"));
  k.bf16_dot_flops_per_iter = reinterpret_cast<LanesFn>(sym("ollie_bf16_dot_flops_per_iter"));
  k.f16_fma_flops_per_iter = reinterpret_cast<LanesFn>(sym("ollie_f16_fma_flops_per_iter"));
  k.bf16_dot_run = reinterpret_cast<FmaRunFn>(sym("ollie_bf16_dot_run"));
  k.f16_fma_run = reinterpret_cast<FmaRunFn>(sym("ollie_f16_fma_run"));
  return k;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// Counted bytes per second of the triad over arrays of n floats (3 x 4 bytes per element
// and pass): one warm-up pass, then the best of `reps` samples of enough passes to last
// `sample` seconds.
double triad_rate(const Kernels& k, float* a, float* b, float* c, int64_t n, int threads,
                  double sample, int reps) {
  k.triad(a, b, c, 3.0f, n, threads);  // warm-up (and page-table walk)
  const double one_pass = time_of([&] { k.triad(a, b, c, 3.0f, n, threads); });
  const int64_t passes =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(sample / std::max(one_pass, 1e-9))));
  const double t = best_of(reps, [&] {
    for (int64_t i = 0; i < passes; ++i) k.triad(a, b, c, 3.0f, n, threads);
  });
  return 12.0 * static_cast<double>(n) * static_cast<double>(passes) / t;
}

}  // namespace

MachinePeaks calibrate(const CalibrateOptions& options) {
  double started = now_seconds();
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  MachineIdentity id = host_identity();
  MachinePeaks p;
  p.cpu_model = id.cpu_model;
  p.isa = id.isa;
  p.cores = id.cores;
  p.threads_per_core = threads_per_core();
  p.date = strings::utc_now_iso8601();
  double load[1] = {-1};
  if (getloadavg(load, 1) == 1) p.load_average = load[0];

  build::Driver driver(options.build_cache_dir.empty() ? build::default_cache_dir()
                                                       : options.build_cache_dir);
  build::Request req;
  req.units = {{"ollie_peak_kernels.cpp", kPeakKernels}};
  say("compiling the calibration kernels");
  build::Result built = driver.compile(req);
  if (!built.ok)
    throw UserError("the calibration kernels do not compile with " + req.toolchain.compiler +
                    ":\n" + built.log);
  p.compiler = built.compiler_version;
  for (const auto& f : req.toolchain.flags) p.compiler += " " + f;
  Kernels k = load_kernels(built.so_path);
  const int lanes = k.lanes();
  p.fma_chains = k.chains();
  p.vector_bits = lanes * 32;
  const int reps = std::max(options.repetitions, 1);
  const double sample = std::max(options.sample_seconds, 1e-4);

  // Clock: 64 dependent one-cycle adds per iteration.
  say("estimating the clock");
  if (k.add_chain(1000) != 0) {
    int64_t iters = ramp(1 << 12, sample / 2, [&](int64_t n) { k.add_chain(n); });
    double t = best_of(reps, [&] { k.add_chain(iters); });
    p.clock_hz = 64.0 * static_cast<double>(iters) / t;
  }

  // FMA loop: single core, then one thread per core.
  auto fma_flops = [&](int threads, int64_t start) {
    int got = k.threads(threads);
    int64_t iters = ramp(start, sample, [&](int64_t n) { k.fma_run(n, threads); });
    double t = best_of(reps, [&] { k.fma_run(iters, threads); });
    double flops = 2.0 * lanes * p.fma_chains * static_cast<double>(iters) * got;
    return std::pair<double, int64_t>{flops / t, iters};
  };
  say("timing the FMA loop on 1 core");
  auto [one, iters1] = fma_flops(1, 1 << 10);
  p.fma_flops_1core = one;
  say("timing the FMA loop on " + std::to_string(p.cores) + " cores");
  p.fma_flops_all = p.cores > 1 ? fma_flops(p.cores, iters1 / 2).first : one;

  // The low-precision chains this build has (bf16 dot products, f16 FMAs), the same way.
  auto low_flops = [&](FmaRunFn run, int per_iter, int threads) {
    int got = k.threads(threads);
    int64_t iters = ramp(1 << 10, sample, [&](int64_t n) { run(n, threads); });
    double t = best_of(reps, [&] { run(iters, threads); });
    return static_cast<double>(per_iter) * static_cast<double>(iters) * got / t;
  };
  for (auto [run, per_iter, one_core, all, what] :
       {std::tuple{k.bf16_dot_run, k.bf16_dot_flops_per_iter(), &p.bf16_dot_flops_1core,
                   &p.bf16_dot_flops_all, "bf16 dot-product (vdpbf16ps)"},
        std::tuple{k.f16_fma_run, k.f16_fma_flops_per_iter(), &p.f16_fma_flops_1core,
                   &p.f16_fma_flops_all, "f16 FMA"}}) {
    if (per_iter <= 0) continue;
    say(std::string("timing the ") + what + " loop on 1 core and on " + std::to_string(p.cores));
    *one_core = low_flops(run, per_iter, 1);
    *all = p.cores > 1 ? low_flops(run, per_iter, p.cores) : *one_core;
  }

  // Triad.
  p.llc_bytes = llc_bytes();
  TriadSize size = triad_array_size(p.llc_bytes, options.max_array_bytes, available_memory_bytes());
  p.triad_array_bytes = size.bytes;
  p.triad_sizing = size.why;
  p.triad_convention =
      "STREAM: 3 x 4 bytes per element and pass (b, c read; a written once); write-allocate reads "
      "of a not "
      "counted (the bus carries 4/3 of this with ordinary stores)";
  const int64_t n = size.bytes / static_cast<int64_t>(sizeof(float));
  auto alloc = [&](int64_t bytes) {
    void* ptr = std::aligned_alloc(4096, static_cast<size_t>(bytes));
    if (!ptr)
      throw UserError("cannot allocate the triad's arrays (" + std::to_string(bytes) +
                      " bytes each)");
    return std::unique_ptr<float, FreeDeleter>(static_cast<float*>(ptr));
  };
  say("allocating the triad's arrays (3 x " + std::to_string(size.bytes >> 20) + " MiB)");
  auto a = alloc(size.bytes), b = alloc(size.bytes), c = alloc(size.bytes);
  k.triad_init(a.get(), b.get(), c.get(), n, p.cores);
  say("timing the triad on 1 core");
  p.triad_bytes_per_s_1core = triad_rate(k, a.get(), b.get(), c.get(), n, 1, sample, reps);
  say("timing the triad on " + std::to_string(p.cores) + " cores");
  p.triad_bytes_per_s_all = p.cores > 1
                                ? triad_rate(k, a.get(), b.get(), c.get(), n, p.cores, sample, reps)
                                : p.triad_bytes_per_s_1core;
  a.reset();
  b.reset();
  c.reset();

  // The same triad on arrays that fit the last-level cache: the hot regime's ceiling.
  const TriadSize in_cache = llc_triad_array_size(p.llc_bytes);
  p.llc_triad_array_bytes = in_cache.bytes;
  const int64_t m = in_cache.bytes / static_cast<int64_t>(sizeof(float));
  auto la = alloc(in_cache.bytes), lb = alloc(in_cache.bytes), lc = alloc(in_cache.bytes);
  k.triad_init(la.get(), lb.get(), lc.get(), m, p.cores);
  say("timing the last-level-cache triad (3 x " + std::to_string(in_cache.bytes >> 10) +
      " KiB) on 1 core");
  p.llc_bytes_per_s_1core = triad_rate(k, la.get(), lb.get(), lc.get(), m, 1, sample, reps);
  say("timing the last-level-cache triad on " + std::to_string(p.cores) + " cores");
  p.llc_bytes_per_s_all =
      p.cores > 1 ? triad_rate(k, la.get(), lb.get(), lc.get(), m, p.cores, sample, reps)
                  : p.llc_bytes_per_s_1core;

  p.seconds = now_seconds() - started;
  return p;
}

}  // namespace ollie::measure
