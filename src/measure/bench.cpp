// Timing kernels in the runner: compile, draw inputs, run the timed rounds, summarize,
// and check the timed calls' outputs against the reference (see measure.h).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include "build/build.h"
#include "build/screen.h"
#include "interp/interp.h"
#include "measure/measure.h"
#include "runner/runner.h"
#include "verify/verify.h"

namespace ollie::measure {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

// Busy and total CPU time of the whole machine so far (/proc/stat's first line), in seconds.
struct MachineCpu {
  double busy = 0, total = 0;
  bool ok = false;
};
MachineCpu machine_cpu() {
  MachineCpu m;
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  if (cpu != "cpu") return m;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  double v[8] = {};
  for (double& x : v) in >> x;
  if (!in) return m;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (double x : v) m.total += x / hz;
  m.busy = m.total - (v[3] + v[4]) / hz;
  m.ok = true;
  return m;
}

// CPU seconds used by this process and by its waited-for children (the runner child).
double own_cpu() {
  auto seconds = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self) + seconds(children);
}

// Each checked call's outputs against the reference for exactly the inputs it saw (the
// references computed in parallel); per kernel the first problem ("" when none), and
// report.checked_calls counted.
std::vector<std::string> check_calls(const ir::Graph& graph, const runner::TimedOutcome& timed,
                                     BenchReport& report) {
  const size_t n = timed.checked.size();
  std::vector<interp::Result> references(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;)
      references[i] = interp::evaluate(graph, timed.checked[i].inputs);
  };
  const size_t helpers =
      std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency())) - (n > 0 ? 1 : 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();

  std::vector<std::string> problems(report.kernels.size());
  for (size_t i = 0; i < n; ++i) {
    const runner::CheckedCall& call = timed.checked[i];
    const auto k = static_cast<size_t>(call.kernel);
    ++report.kernels[k].checked_calls;
    if (!problems[k].empty()) continue;
    const verify::Comparison c = verify::compare_outputs(call.outputs, references[i]);
    if (c.agrees) continue;
    size_t points = 0;
    for (const auto& p : call.points) points = std::max(points, p.size());
    problems[k] = "timed call " + std::to_string(call.round + 1) + " of " +
                  std::to_string(timed.rep_seconds[k].size()) + " (input set " +
                  std::to_string(call.set + 1) + " of 2, seed " +
                  std::to_string(report.seed + static_cast<uint64_t>(call.set)) + ", rotated and " +
                  std::to_string(points) +
                  " elements per input changed at random right before the call): " + c.text;
  }
  return problems;
}

// A run the runner stopped for pace (BenchOptions::abandon_ratio, call_limit_seconds):
// how much slower the first kernel was.
BenchReport& abandoned(BenchReport& report, const std::vector<BenchKernel>& kernels,
                       const runner::TimedOutcome& timed) {
  report.status = BenchStatus::Abandoned;
  report.fastest = timed.fastest_seconds;
  report.over_call_limit = timed.over_call_limit;
  char text[256];
  if (timed.over_call_limit) {
    report.message = timed.message;
    return report;
  }
  const double a = report.fastest.size() > 0 ? report.fastest[0] : 0;
  const double b = report.fastest.size() > 1 ? report.fastest[1] : 0;
  report.fastest_ratio = b > 0 ? a / b : 0;
  std::snprintf(text, sizeof text, "%s's fastest call took %.4g ms, x%.3g of %s's %.4g ms",
                kernels[0].name.c_str(), a * 1e3, report.fastest_ratio,
                kernels.size() > 1 ? kernels[1].name.c_str() : "?", b * 1e3);
  report.message = text;
  return report;
}

}  // namespace

Stats summarize(std::vector<double> samples) {
  Stats s;
  s.n = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  s.median = median_of(samples);
  std::vector<double> deviations;
  for (double x : samples) deviations.push_back(std::fabs(x - s.median));
  s.mad = median_of(deviations);
  const double limit = s.median + 5 * 1.4826 * s.mad;
  for (double x : samples) s.outliers += x > limit && x > s.median * 1.01 ? 1 : 0;
  return s;
}

const char* bench_status_name(BenchStatus s) {
  switch (s) {
    case BenchStatus::Ok: return "ok";
    case BenchStatus::CompileError: return "compile-error";
    case BenchStatus::RunFailed: return "run-failed";
    case BenchStatus::Wrong: return "wrong";
    case BenchStatus::Refused: return "refused";
    case BenchStatus::Abandoned: return "abandoned";
  }
  return "unknown";
}

bool contended(const BenchReport& report) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return report.others_cpus >= kBusyOthers + std::max(0, cores - std::max(1, report.threads));
}

BenchReport bench(const ir::Graph& graph, const std::vector<BenchKernel>& kernels,
                  const BenchOptions& options) {
  BenchReport report;
  report.load_average = load_average();
  report.threads = options.threads > 0
                       ? options.threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  report.cold = options.cold;
  report.seed = options.seed ? options.seed
                             : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();

  // Compile every kernel first: nothing is timed unless all of them build.
  build::Driver driver =
      options.cache_dir.empty() ? build::Driver() : build::Driver(options.cache_dir);
  std::vector<runner::Kernel> built;
  for (const BenchKernel& k : kernels) {
    build::Request request;
    request.units = {
        {"kernel.cpp", k.source},
        {"ollie_adapter.cpp", build::adapter_source(graph, {.kernel = options.kernel_symbol})}};
    if (!options.compiler.empty()) request.toolchain.compiler = options.compiler;
    build::ScreenedResult screened;
    if (options.screen)
      screened = build::compile_screened(driver, request);
    else
      screened.built = driver.compile(request);
    const build::Result& result = screened.built;
    KernelTiming timing;
    timing.name = k.name;
    timing.compile_seconds = result.seconds;
    report.kernels.push_back(timing);
    if (screened.refused()) {
      report.status = BenchStatus::Refused;
      report.message = k.name + ": " + screened.message();
      return report;
    }
    if (!result.ok) {
      report.status = BenchStatus::CompileError;
      report.message = k.name + " does not compile:\n" + result.log.substr(0, 4000);
      return report;
    }
    built.push_back({result.so_path, "ollie_entry"});
  }

  // Two input sets (the pointer-keyed replay of one set's answer on the other shows).
  const std::vector<std::vector<interp::Tensor>> sets = {
      verify::make_inputs(graph, report.seed, verify::Distribution::Normal),
      verify::make_inputs(graph, report.seed + 1, verify::Distribution::Normal)};

  runner::Options run_options;
  run_options.threads = report.threads;
  run_options.runner_path = options.runner_path;
  run_options.timeout_seconds = options.timeout_seconds;
  runner::TimingOptions timing;
  timing.warmup_rounds = options.warmup_rounds;
  timing.min_rounds = options.min_rounds;
  timing.max_rounds = options.max_rounds;
  timing.budget_seconds = options.budget_seconds;
  timing.cold = options.cold;
  if (options.cold)
    timing.flush_bytes =
        options.flush_bytes
            ? options.flush_bytes
            : std::max<uint64_t>(uint64_t{64} << 20,
                                 2 * static_cast<uint64_t>(std::max<int64_t>(0, llc_bytes())));
  report.flush_bytes = timing.flush_bytes;

  // The same timing environment for every kernel (docs/measurement.md, "Rounds"): each
  // timed call right after an untimed one, and libgomp's threads spinning between calls.
  timing.warm_call = true;
  timing.steady_openmp = true;
  // Inputs no call saw before, changed last thing before the clock starts, and a random
  // sample of the timed calls checked (docs/measurement.md, "Fresh inputs").
  timing.fresh_inputs = true;
  timing.check_calls = options.check_calls;
  timing.fresh_points = options.fresh_points;
  timing.call_limit_seconds = options.call_limit_seconds;
  timing.abandon_ratio = options.abandon_ratio;
  timing.cap_seconds = options.cap_seconds;

  const MachineCpu cpu_before = machine_cpu();
  const double own_before = own_cpu();
  const auto wall_before = std::chrono::steady_clock::now();
  const runner::TimedOutcome timed = runner::time_kernels(built, graph, sets, run_options, timing);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  const MachineCpu cpu_after = machine_cpu();
  // The runner child is not ours to reap (bwrap): its CPU time comes from its report, at
  // most every core for the whole run.
  const double child_cpu =
      std::clamp(timed.cpu_seconds, 0.0, wall * std::max(1u, std::thread::hardware_concurrency()));
  if (cpu_before.ok && cpu_after.ok && wall > 0)
    report.others_cpus = std::max(
        0.0, (cpu_after.busy - cpu_before.busy - (own_cpu() - own_before) - child_cpu) / wall);
  if (timed.over_call_limit) return abandoned(report, kernels, timed);
  if (timed.status != runner::Status::Ok) {
    report.status = BenchStatus::RunFailed;
    report.message = std::string(runner::status_name(timed.status)) + ": " + timed.message;
    return report;
  }
  report.rounds = timed.rep_seconds.empty() ? 0 : static_cast<int>(timed.rep_seconds[0].size());
  report.warmup_seconds = timed.warmup_seconds;
  if (timed.abandoned) return abandoned(report, kernels, timed);
  report.fastest = timed.fastest_seconds;

  const std::vector<std::string> problems = options.check_outputs
                                                ? check_calls(graph, timed, report)
                                                : std::vector<std::string>(report.kernels.size());
  for (size_t k = 0; k < report.kernels.size(); ++k) {
    KernelTiming& kt = report.kernels[k];
    kt.stats = summarize(timed.rep_seconds[k]);
    kt.outputs_agree = problems[k].empty();
    kt.output_problem = problems[k];
    if (!kt.outputs_agree && report.status == BenchStatus::Ok) {
      report.status = BenchStatus::Wrong;
      report.message = kt.name + " computed wrong outputs while being timed: " + kt.output_problem;
    }
    if (kt.stats.spread() > 0.05)
      report.noise.push_back(kt.name + ": the times vary by " +
                             std::to_string(static_cast<int>(kt.stats.spread() * 100)) +
                             "% (MAD / median)");
    if (kt.stats.outliers > std::max(1, kt.stats.n / 20))
      report.noise.push_back(kt.name + ": " + std::to_string(kt.stats.outliers) + " of " +
                             std::to_string(kt.stats.n) +
                             " times are outliers (far above the median)");
  }
  if (report.kernels.size() == 2) {
    std::vector<double> ratios;
    for (size_t r = 0; r < timed.rep_seconds[0].size(); ++r)
      if (timed.rep_seconds[1][r] > 0)
        ratios.push_back(timed.rep_seconds[0][r] / timed.rep_seconds[1][r]);
    report.ratio = summarize(ratios);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (report.others_cpus >= kBusyOthers)
    report.noise.push_back("other processes kept " +
                           std::to_string(report.others_cpus).substr(0, 4) + " of " +
                           std::to_string(cores) +
                           " CPUs busy while the kernels were timed (a kernel's thread that "
                           "has to wait for a CPU stalls the whole call)");
  if (report.load_average > 0.5 * cores)
    report.noise.push_back("the machine was busy: load average " +
                           std::to_string(report.load_average).substr(0, 4) + " on " +
                           std::to_string(cores) + " cores");
  if (report.status == BenchStatus::Ok) report.message = "ok";
  return report;
}

}  // namespace ollie::measure
