// `ollie bench SPEC KERNEL.cpp [--vs OTHER.cpp]`: times a kernel (or two, interleaved in
// one runner session) at the spec's dims, with a robust summary, the per-round ratio,
// warnings when the machine was noisy, and the outputs of the timed calls checked
// against the reference. Exit 0 only when every kernel ran and agreed.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "emit/emit.h"
#include "measure/measure.h"

namespace ollie::cli {
namespace {

std::string milliseconds(double seconds) { return fmt::format("{:.4g} ms", seconds * 1e3); }

nlohmann::json stats_json(const measure::Stats& s) {
  return {{"n", s.n},
          {"median_seconds", s.median},
          {"min_seconds", s.min},
          {"max_seconds", s.max},
          {"mad_seconds", s.mad},
          {"outliers", s.outliers}};
}

std::string dims_text(const ir::Graph& graph) {
  std::string text;
  for (const auto& name : graph.dims)
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(graph.bound_dims.at(name));
  return text;
}

}  // namespace

int run_bench(const SpecFlags& flags, const BenchFlags& b) {
  const ir::Graph graph = load(flags);
  check_reference_fits(graph);
  std::vector<measure::BenchKernel> kernels = {{b.kernel_path, read_text(b.kernel_path, "kernel")}};
  if (!b.vs_path.empty()) kernels.push_back({b.vs_path, read_text(b.vs_path, "--vs kernel")});
  measure::BenchOptions options;
  options.threads = b.threads;
  options.cold = b.cold;
  options.budget_seconds = b.seconds;
  options.seed = b.seed;
  options.timeout_seconds = b.timeout_seconds;
  options.compiler = b.compiler;
  emit::check_symbol(b.symbol);
  options.kernel_symbol = b.symbol;
  measure::BenchReport report = measure::bench(graph, kernels, options);

  // The roofline at this thread count, from the machine's calibration (measured once and
  // cached; the first bench on a machine pays for it).
  measure::CalibrateOptions calibrate;
  calibrate.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << "\n"; };
  const measure::CachedPeaks peaks =
      measure::machine_peaks(measure::default_cache_dir(), false, calibrate);
  const measure::Roofline roof = measure::roofline(graph, peaks.peaks, report.threads, report.cold);
  std::vector<std::string> impossible;
  for (auto& k : report.kernels)
    if (k.stats.n > 0)
      if (std::string why = measure::below_roofline(roof, k.stats.median, report.cold);
          !why.empty())
        impossible.push_back(k.name + ": " + why);
  if (!impossible.empty() && report.status == measure::BenchStatus::Ok) {
    report.status = measure::BenchStatus::Wrong;
    report.message = impossible.front();
  }

  if (b.json) {
    nlohmann::json j;
    j["schema"] = "ollie-bench/1";
    j["entry"] = graph.entry;
    for (const auto& name : graph.dims) j["dims"][name] = graph.bound_dims.at(name);
    j["status"] = measure::bench_status_name(report.status);
    j["message"] = report.message;
    j["threads"] = report.threads;
    j["cold"] = report.cold;
    j["flush_bytes"] = report.flush_bytes;
    j["seed"] = report.seed;
    j["rounds"] = report.rounds;
    j["warmup_seconds"] = report.warmup_seconds;
    j["load_average"] = report.load_average;
    j["others_cpus"] = report.others_cpus;
    j["noise"] = report.noise;
    j["roofline"] = {{"flops", roof.flops},
                     {"bytes", roof.bytes},
                     {"intensity", roof.intensity},
                     {"peak_flops_per_s", roof.peak_flops},
                     {"bandwidth_bytes_per_s", roof.bandwidth},
                     {"bound_seconds", roof.bound_seconds},
                     {"memory_bound", roof.memory_bound},
                     {"memory_ceiling", roof.ceiling},
                     {"peaks_file", peaks.path}};
    for (const auto& k : report.kernels) {
      nlohmann::json kj = stats_json(k.stats);
      kj["name"] = k.name;
      const measure::Throughput t = measure::throughput(roof, k.stats.median);
      kj["gflops_per_s"] = t.gflops_per_s;
      kj["gbytes_per_s"] = t.gbytes_per_s;
      kj["roofline_fraction"] = t.roofline_fraction;
      kj["outputs_agree"] = k.outputs_agree;
      if (!k.output_problem.empty()) kj["output_problem"] = k.output_problem;
      j["kernels"].push_back(kj);
    }
    if (report.ratio) {
      j["ratio"] = {{"median", report.ratio->median},
                    {"mad", report.ratio->mad},
                    {"min", report.ratio->min},
                    {"max", report.ratio->max},
                    {"n", report.ratio->n}};
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{} at {}: {} threads, {} caches, {} rounds (seed {})\n", graph.entry,
                             dims_text(graph), report.threads, report.cold ? "cold" : "hot",
                             report.rounds, report.seed);
    for (const auto& k : report.kernels) {
      if (k.stats.n == 0) continue;
      const measure::Throughput t = measure::throughput(roof, k.stats.median);
      std::cout << fmt::format(
          "  {:<32} median {:>11}  min {:>11}  MAD {:>10} ({:.1f}%)  outliers {}\n", k.name,
          milliseconds(k.stats.median), milliseconds(k.stats.min), milliseconds(k.stats.mad),
          k.stats.spread() * 100, k.stats.outliers);
      std::cout << fmt::format("  {:<32} {:.3g} GFLOP/s, {:.3g} GB/s, {:.1f}% of the roofline\n",
                               "", t.gflops_per_s, t.gbytes_per_s, t.roofline_fraction * 100);
    }
    std::cout << fmt::format(
        "  roofline at {} threads: {:.4g} MFLOP, {:.4g} MB compulsory, {:.3g} FLOP/byte; peaks "
        "{:.4g} GFLOP/s, "
        "{:.4g} GB/s of {}: {}-bound, no kernel faster than {}\n",
        roof.threads, roof.flops / 1e6, roof.bytes / 1e6, roof.intensity, roof.peak_flops / 1e9,
        roof.bandwidth / 1e9, roof.ceiling, roof.memory_bound ? "memory" : "compute",
        milliseconds(roof.bound_seconds));
    if (report.ratio)
      std::cout << fmt::format(
          "  ratio {} / {}: {:.3f} (median of {} per-round ratios, MAD {:.3f}, range "
          "{:.3f}..{:.3f})\n",
          report.kernels[0].name, report.kernels[1].name, report.ratio->median, report.ratio->n,
          report.ratio->mad, report.ratio->min, report.ratio->max);
    if (report.status == measure::BenchStatus::Ok)
      std::cout
          << "  outputs of the timed calls: checked on 2 input sets, agree with the reference\n";
    for (const auto& n : report.noise) std::cout << "  warning: " << n << "\n";
    if (report.status != measure::BenchStatus::Ok)
      std::cout << "  " << measure::bench_status_name(report.status) << ": " << report.message
                << "\n";
  }
  return report.status == measure::BenchStatus::Ok ? 0 : 4;
}

}  // namespace ollie::cli
