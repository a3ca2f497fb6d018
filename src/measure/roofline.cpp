// The roofline of a graph against the machine's peaks (DRAM's or the last-level cache's
// bandwidth, by timing regime), and measured times as rates and as a fraction of it.
#include <algorithm>
#include <cstdio>
#include <string>

#include "measure/measure.h"

namespace ollie::measure {

ThreadPeaks peaks_at(const MachinePeaks& peaks, int threads) {
  const int cores = std::max(peaks.cores, 1);
  ThreadPeaks t;
  t.threads = threads <= 0 ? cores : std::clamp(threads, 1, cores);
  // Linear from the 1-core figure at t = 1 to the all-core figure at t = cores.
  const double w =
      cores > 1 ? static_cast<double>(t.threads - 1) / static_cast<double>(cores - 1) : 1.0;
  t.flops_per_s = peaks.fma_flops_1core + w * (peaks.fma_flops_all - peaks.fma_flops_1core);
  if (peaks.bf16_dot_flops_1core > 0 && peaks.bf16_dot_flops_all > 0)
    t.bf16_dot_flops_per_s =
        peaks.bf16_dot_flops_1core + w * (peaks.bf16_dot_flops_all - peaks.bf16_dot_flops_1core);
  t.bytes_per_s = peaks.triad_bytes_per_s_1core +
                  w * (peaks.triad_bytes_per_s_all - peaks.triad_bytes_per_s_1core);
  if (peaks.llc_bytes_per_s_1core > 0 && peaks.llc_bytes_per_s_all > 0)
    t.llc_bytes_per_s =
        peaks.llc_bytes_per_s_1core + w * (peaks.llc_bytes_per_s_all - peaks.llc_bytes_per_s_1core);
  return t;
}

double Roofline::attainable_flops() const {
  return bytes > 0 ? std::min(peak_flops, intensity * bandwidth) : peak_flops;
}

Roofline roofline(double flops, double bytes, const ThreadPeaks& peaks, double bf16_product_flops) {
  Roofline r;
  r.flops = flops;
  r.bytes = bytes;
  r.intensity = bytes > 0 ? flops / bytes : 0;
  r.peak_flops = peaks.flops_per_s;
  // bf16 products at their own peak: the time of both parts, as one effective FLOP rate.
  const double fast = peaks.bf16_dot_flops_per_s;
  if (fast > peaks.flops_per_s && bf16_product_flops > 0 && flops > 0 && peaks.flops_per_s > 0)
    r.peak_flops =
        flops / ((flops - bf16_product_flops) / peaks.flops_per_s + bf16_product_flops / fast);
  r.bandwidth = peaks.bytes_per_s;
  r.threads = peaks.threads;
  const double compute_s = r.peak_flops > 0 ? flops / r.peak_flops : 0;
  const double memory_s = r.bandwidth > 0 ? bytes / r.bandwidth : 0;
  r.bound_seconds = std::max(compute_s, memory_s);
  r.memory_bound = memory_s > compute_s;
  return r;
}

Roofline roofline(const ir::Graph& graph, const MachinePeaks& peaks, int threads) {
  ir::Cost c = ir::cost(graph);
  return roofline(static_cast<double>(c.flops), static_cast<double>(c.compulsory_bytes),
                  peaks_at(peaks, threads), static_cast<double>(c.bf16_product_flops));
}

Roofline roofline(double flops, double bytes, const MachinePeaks& peaks, int threads, bool cold,
                  double bf16_product_flops) {
  ThreadPeaks at = peaks_at(peaks, threads);
  char text[200];
  const double mb = bytes / 1e6;
  const long long llc_mib = static_cast<long long>(peaks.llc_bytes >> 20);
  std::string ceiling = "DRAM (cold caches)";
  if (!cold && peaks.llc_bytes > 0 && bytes > static_cast<double>(peaks.llc_bytes)) {
    std::snprintf(text, sizeof text,
                  "DRAM (hot caches, but %.3g MB does not fit the %lld MiB last-level cache)", mb,
                  llc_mib);
    ceiling = text;
  } else if (!cold && at.llc_bytes_per_s <= 0) {
    ceiling =
        "DRAM (hot caches, but the machine cache has no last-level-cache bandwidth: `ollie "
        "calibrate --recalibrate` measures it)";
  } else if (!cold) {
    at.bytes_per_s = at.llc_bytes_per_s;
    std::snprintf(text, sizeof text,
                  "last-level cache (hot caches: %.3g MB fits the %lld MiB cache)", mb, llc_mib);
    ceiling = text;
  }
  Roofline r = roofline(flops, bytes, at, bf16_product_flops);
  r.ceiling = ceiling;
  return r;
}

Roofline roofline(const ir::Graph& graph, const MachinePeaks& peaks, int threads, bool cold) {
  ir::Cost c = ir::cost(graph);
  return roofline(static_cast<double>(c.flops), static_cast<double>(c.compulsory_bytes), peaks,
                  threads, cold, static_cast<double>(c.bf16_product_flops));
}

Throughput throughput(const Roofline& roof, double seconds) {
  Throughput t;
  t.seconds = seconds;
  if (seconds > 0) {
    t.gflops_per_s = roof.flops / seconds / 1e9;
    t.gbytes_per_s = roof.bytes / seconds / 1e9;
    t.roofline_fraction = roof.bound_seconds / seconds;
  }
  return t;
}

std::string below_roofline(const Roofline& roof, double seconds, bool cold) {
  if (seconds <= 0) return "";
  char text[320];
  const double compute_s = roof.peak_flops > 0 ? roof.flops / roof.peak_flops : 0;
  if (seconds < kComputeRoofSlack * compute_s) {
    std::snprintf(text, sizeof text,
                  "%.4g ms is faster than the compute roof allows (%.4g GFLOP at most %.4g GFLOP/s "
                  "= %.4g ms): "
                  "a measurement error or a kernel that skips work",
                  seconds * 1e3, roof.flops / 1e9, roof.peak_flops / 1e9, compute_s * 1e3);
    return text;
  }
  const double memory_s = roof.bandwidth > 0 ? roof.bytes / roof.bandwidth : 0;
  if (cold && seconds < kMemoryRoofSlack * memory_s) {
    std::snprintf(
        text, sizeof text,
        "%.4g ms with cold caches is faster than memory allows (%.4g MB at %.4g GB/s = %.4g ms): "
        "a measurement error or a kernel that skips work",
        seconds * 1e3, roof.bytes / 1e6, roof.bandwidth / 1e9, memory_s * 1e3);
    return text;
  }
  return "";
}

}  // namespace ollie::measure
