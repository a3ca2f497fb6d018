// `ollie calibrate`: this machine's peak float32 (bf16, f16) FLOP/s and triad bandwidth (DRAM and
// the last-level cache), measured once and cached (measure/measure.h), and the roofline peaks at a
// thread count.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "measure/measure.h"

namespace ollie::cli {

int run_calibrate(const CalibrateFlags& flags) {
  measure::CalibrateOptions options;
  if (flags.max_array_mib > 0) options.max_array_bytes = flags.max_array_mib << 20;
  options.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << "\n"; };
  std::string dir = flags.cache_dir.empty() ? measure::default_cache_dir() : flags.cache_dir;
  measure::CachedPeaks cached = measure::machine_peaks(dir, flags.recalibrate, options);
  const measure::MachinePeaks& p = cached.peaks;
  measure::ThreadPeaks at = measure::peaks_at(p, flags.threads);

  if (flags.json) {
    nlohmann::json j = p;
    j["cache"] = {
        {"path", cached.path}, {"measured_now", cached.measured_now}, {"why", cached.why}};
    j["at_threads"] = {{"threads", at.threads},
                       {"flops_per_s", at.flops_per_s},
                       {"bytes_per_s", at.bytes_per_s},
                       {"llc_bytes_per_s", at.llc_bytes_per_s},
                       {"bf16_dot_flops_per_s", at.bf16_dot_flops_per_s}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  const int lanes = p.vector_bits / 32;
  std::cout << fmt::format("machine       {}: {} cores, {} thread{} per core\n", p.cpu_model,
                           p.cores, p.threads_per_core, p.threads_per_core == 1 ? "" : "s");
  std::cout << fmt::format("isa           {}\n", p.isa);
  std::cout << fmt::format(
      "measured      {} in {:.1f} s; load average {:.2f} at the start (other work on the "
      "machine lowers these figures)\n",
      p.date, p.seconds, p.load_average);
  std::cout << fmt::format("kernels       {}\n", p.compiler);
  if (p.clock_hz > 0)
    std::cout << fmt::format(
        "clock         ~{:.2f} GHz (a chain of dependent integer adds, 1 core)\n",
        p.clock_hz / 1e9);
  std::string per_cycle = p.clock_hz > 0
                              ? fmt::format("{:.1f} flop/cycle, ", p.fma_flops_1core / p.clock_hz)
                              : std::string();
  std::cout << fmt::format(
      "FMA float32   1 core: {:.1f} GFLOP/s ({}{}-bit vectors = {} lanes, {} FMA chains)\n",
      p.fma_flops_1core / 1e9, per_cycle, p.vector_bits, lanes, p.fma_chains);
  std::cout << fmt::format("              all {} cores: {:.1f} GFLOP/s ({:.2f} x 1 core)\n",
                           p.cores, p.fma_flops_all / 1e9, p.fma_flops_all / p.fma_flops_1core);
  auto low = [&](const char* label, double one, double all, const char* what) {
    if (one > 0)
      std::cout << fmt::format(
          "{}1 core: {:.1f} GFLOP/s ({:.2f} x float32 FMA; {}); all {} "
          "cores: {:.1f} GFLOP/s\n",
          label, one / 1e9, one / p.fma_flops_1core, what, p.cores, all / 1e9);
    else
      std::cout << fmt::format(
          "{}none: the calibration build has no such instruction (the "
          "float32 FMA peak applies)\n",
          label);
  };
  low("bf16 dot      ", p.bf16_dot_flops_1core, p.bf16_dot_flops_all,
      "AVX512_BF16 vdpbf16ps, 4 FLOPs per float32 lane");
  low("f16 FMA       ", p.f16_fma_flops_1core, p.f16_fma_flops_all, "AVX512_FP16, 32 lanes");
  std::cout << fmt::format(
      "triad         1 core: {:.1f} GB/s; all {} cores: {:.1f} GB/s (1 GB = 1e9 bytes)\n",
      p.triad_bytes_per_s_1core / 1e9, p.cores, p.triad_bytes_per_s_all / 1e9);
  std::cout << fmt::format("              counted as {}\n", p.triad_convention);
  std::cout << fmt::format("triad arrays  {} MiB each: {}\n", p.triad_array_bytes >> 20,
                           p.triad_sizing);
  if (p.llc_bytes_per_s_all > 0)
    std::cout << fmt::format(
        "LLC triad     1 core: {:.1f} GB/s; all {} cores: {:.1f} GB/s (3 arrays of {} KiB in the "
        "{} MiB last-level cache: the hot-cache ceiling)\n",
        p.llc_bytes_per_s_1core / 1e9, p.cores, p.llc_bytes_per_s_all / 1e9,
        p.llc_triad_array_bytes >> 10, p.llc_bytes >> 20);
  else
    std::cout << "LLC triad     missing: these figures were cached before ollie measured the "
                 "last-level cache's bandwidth (hot rooflines use DRAM's); `ollie calibrate "
                 "--recalibrate` measures it\n";
  std::cout << fmt::format(
      "at {} thread{}  peak {:.1f} GFLOP/s, bandwidth {:.1f} GB/s, ridge point {:.1f} flop/byte "
      "(kernels below it are memory-bound){}\n",
      at.threads, at.threads == 1 ? " " : "s", at.flops_per_s / 1e9, at.bytes_per_s / 1e9,
      at.flops_per_s / at.bytes_per_s,
      at.llc_bytes_per_s > 0
          ? fmt::format("; hot, in the last-level cache: {:.1f} GB/s, ridge point {:.1f}",
                        at.llc_bytes_per_s / 1e9, at.flops_per_s / at.llc_bytes_per_s)
          : std::string());
  if (p.load_average >= 0.5)
    std::cout << fmt::format(
        "note          the machine was busy when measured (load average {:.2f} on {} cores): the "
        "figures, the all-core ones most, are likely low; `ollie calibrate --recalibrate` when "
        "it is quiet measures again\n",
        p.load_average, p.cores);
  std::cout << fmt::format("cache         {} ({})\n", cached.path,
                           cached.measured_now
                               ? "measured now: " + cached.why
                               : std::string("cached; --recalibrate measures again"));
  return 0;
}

}  // namespace ollie::cli
