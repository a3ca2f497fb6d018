// Tests of the measure stage: roofline arithmetic on real example graphs with synthetic peaks,
// the triad's array sizing, MachinePeaks JSON, the per-machine cache, and a short real
// calibration whose figures must be plausible for this machine's ISA.
#include "measure/measure.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "spec/spec.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::measure;

namespace {

ir::Graph example(const std::string& name) {
  return spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + name + ".py", {});
}

// 4 cores: 100 GFLOP/s and 10 GB/s on one, 400 GFLOP/s and 20 GB/s on all.
MachinePeaks synthetic() {
  MachinePeaks p;
  p.cores = 4;
  p.fma_flops_1core = 100e9;
  p.fma_flops_all = 400e9;
  p.triad_bytes_per_s_1core = 10e9;
  p.triad_bytes_per_s_all = 20e9;
  return p;
}

// Small and quick: for tests that need a calibration but not good figures.
CalibrateOptions quick() {
  CalibrateOptions o;
  o.sample_seconds = 0.05;
  o.repetitions = 3;
  o.max_array_bytes = int64_t{16} << 20;
  o.build_cache_dir = ::testing::TempDir() + "ollie-measure-test-build-cache";
  return o;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ollie-measure-test.XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

TEST(Roofline, MatmulIsComputeBoundAtDefaultDims) {
  ir::Graph g = example("matmul");  // M=256, K=512, N=256
  const double M = 256, K = 512, N = 256;
  Roofline r = roofline(g, synthetic(), 4);
  EXPECT_EQ(r.flops, 2 * M * K * N);
  EXPECT_EQ(r.bytes, 4 * (M * K + K * N + M * N));
  EXPECT_EQ(r.flops, static_cast<double>(ir::cost(g).flops));
  EXPECT_DOUBLE_EQ(r.intensity, 2 * M * K * N / (4 * (M * K + K * N + M * N)));  // 51.2
  EXPECT_EQ(r.threads, 4);
  EXPECT_EQ(r.peak_flops, 400e9);
  EXPECT_EQ(r.bandwidth, 20e9);
  EXPECT_FALSE(r.memory_bound);  // ridge point 20 flop/byte < 51.2
  EXPECT_DOUBLE_EQ(r.bound_seconds, r.flops / 400e9);
  EXPECT_DOUBLE_EQ(r.attainable_flops(), 400e9);

  // The same graph on a machine with a tenth of the bandwidth: ridge 200, memory-bound.
  MachinePeaks slow = synthetic();
  slow.triad_bytes_per_s_all = 2e9;
  Roofline m = roofline(g, slow, 0);
  EXPECT_TRUE(m.memory_bound);
  EXPECT_DOUBLE_EQ(m.bound_seconds, m.bytes / 2e9);
  EXPECT_DOUBLE_EQ(m.attainable_flops(), m.intensity * 2e9);
}

TEST(Roofline, SoftmaxIsMemoryBound) {
  ir::Graph g = example("softmax");  // M=256, N=1024
  const double M = 256, N = 1024;
  // max over rows (N-1 per row), subtract, exp, sum over rows (N-1 per row), divide.
  const double flops = 3 * M * N + 2 * M * (N - 1);
  Roofline r = roofline(g, synthetic(), 1);
  EXPECT_EQ(r.flops, flops);
  EXPECT_EQ(r.bytes, 2 * 4 * M * N);
  EXPECT_EQ(r.peak_flops, 100e9);
  EXPECT_EQ(r.bandwidth, 10e9);
  EXPECT_TRUE(r.memory_bound);
  EXPECT_DOUBLE_EQ(r.bound_seconds, 2 * 4 * M * N / 10e9);

  // Fraction of the roofline: bound / measured.
  Throughput t = throughput(r, 2 * r.bound_seconds);
  EXPECT_DOUBLE_EQ(t.roofline_fraction, 0.5);
  EXPECT_DOUBLE_EQ(t.gflops_per_s, flops / (2 * r.bound_seconds) / 1e9);
  EXPECT_DOUBLE_EQ(t.gbytes_per_s, 5.0);  // half of 10 GB/s
  EXPECT_EQ(throughput(r, 0).roofline_fraction, 0);
}

// Contractions of two bfloat16 values count at the bf16 dot-product peak, the rest at the
// float32 FMA peak; without a bf16 peak (or a slower one) everything at float32's.
TEST(Roofline, Bf16ProductsCountAtTheirOwnPeak) {
  ir::Graph mm = example("matmul_bf16");  // 1024^3, bf16 in, f32 out
  const ir::Cost c = ir::cost(mm);
  EXPECT_EQ(c.bf16_product_flops, c.flops);
  EXPECT_EQ(c.compulsory_bytes, 2 * 2 * 1024 * 1024 + 4 * 1024 * 1024);  // bytes at their width
  MachinePeaks p = synthetic();
  EXPECT_EQ(roofline(mm, p, 4).peak_flops, 400e9);  // no bf16 peak measured
  p.bf16_dot_flops_1core = 200e9;
  p.bf16_dot_flops_all = 800e9;
  EXPECT_EQ(roofline(mm, p, 4).peak_flops, 800e9);
  EXPECT_EQ(roofline(mm, p, 1).peak_flops, 200e9);
  // mla_decode_bf16: only q_nope @ w_uk and q_pe . k_pe multiply two bf16 values (q_lat and
  // p are float32): the effective peak lies between the two.
  ir::Graph mla = example("mla_decode_bf16");
  const ir::Cost m = ir::cost(mla);
  const double B = 1, H = 16, S = 4096, L = 512, DR = 64, DN = 128;
  EXPECT_EQ(m.bf16_product_flops, 2 * B * H * DN * L + 2 * B * H * S * DR);
  const Roofline r = roofline(mla, p, 4);
  const double want =
      m.flops / ((m.flops - m.bf16_product_flops) / 400e9 + m.bf16_product_flops / 800e9);
  EXPECT_DOUBLE_EQ(r.peak_flops, want);
  EXPECT_GT(r.peak_flops, 400e9);
  EXPECT_LT(r.peak_flops, 800e9);
  // The float32 example gets nothing from it.
  EXPECT_EQ(ir::cost(example("matmul")).bf16_product_flops, 0);
  EXPECT_EQ(roofline(example("matmul"), p, 4).peak_flops, 400e9);
}

TEST(Roofline, PeaksScaleLinearlyWithThreadsAndClamp) {
  MachinePeaks p = synthetic();
  ThreadPeaks two = peaks_at(p, 2);
  EXPECT_DOUBLE_EQ(two.flops_per_s, 200e9);            // 100 + 1/3 of 300
  EXPECT_DOUBLE_EQ(two.bytes_per_s, 10e9 + 10e9 / 3);  // 10 + 1/3 of 10
  EXPECT_EQ(peaks_at(p, 0).threads, 4);
  EXPECT_EQ(peaks_at(p, 64).flops_per_s, 400e9);  // oversubscription adds nothing
  EXPECT_EQ(peaks_at(p, 1).bytes_per_s, 10e9);
  p.cores = 1;
  EXPECT_EQ(peaks_at(p, 1).flops_per_s, 400e9);  // one core: the all-core figure
  Roofline zero = roofline(0, 0, peaks_at(p, 1));
  EXPECT_EQ(zero.bound_seconds, 0);
  EXPECT_FALSE(zero.memory_bound);
}

TEST(TriadSize, FourTimesTheCacheCappedAndSaidSo) {
  const int64_t MiB = int64_t{1} << 20;
  TriadSize small = triad_array_size(8 * MiB, 1024 * MiB, 16384 * MiB);
  EXPECT_EQ(small.bytes, 32 * MiB);
  EXPECT_EQ(small.why.find("capped"), std::string::npos) << small.why;

  TriadSize big = triad_array_size(260 * MiB, 1024 * MiB, 21000 * MiB);  // this kind of machine
  EXPECT_EQ(big.bytes, 1024 * MiB);
  EXPECT_NE(big.why.find("capped at 1024 MiB"), std::string::npos) << big.why;
  EXPECT_NE(big.why.find("3.94 x the cache"), std::string::npos) << big.why;

  TriadSize tight = triad_array_size(260 * MiB, 1024 * MiB, 2048 * MiB);
  EXPECT_EQ(tight.bytes, 256 * MiB);
  EXPECT_NE(tight.why.find("available memory"), std::string::npos) << tight.why;
  EXPECT_NE(tight.why.find("NOT out of cache"), std::string::npos) << tight.why;

  TriadSize unknown = triad_array_size(0, 1024 * MiB, 0);
  EXPECT_EQ(unknown.bytes, 128 * MiB);
  EXPECT_NE(unknown.why.find("assumed"), std::string::npos) << unknown.why;
}

TEST(MachinePeaksJson, RoundTripsEveryField) {
  MachinePeaks p;
  p.cpu_model = "Test CPU";
  p.isa = "avx512f fma avx2";
  p.cores = 7;
  p.threads_per_core = 2;
  p.date = "2025-01-02T03:04:05Z";
  p.compiler = "g++ 12 -O3";
  p.vector_bits = 512;
  p.fma_chains = 16;
  p.clock_hz = 3.1e9;
  p.fma_flops_1core = 1.5e11;
  p.fma_flops_all = 9.5e11;
  p.triad_bytes_per_s_1core = 1.25e10;
  p.triad_bytes_per_s_all = 4.5e10;
  p.llc_bytes = 12345678;
  p.triad_array_bytes = 87654321;
  p.triad_sizing = "why";
  p.triad_convention = "how";
  p.load_average = 0.75;
  p.seconds = 9.5;
  MachinePeaks q = nlohmann::json::parse(to_json_text(p)).get<MachinePeaks>();
  EXPECT_EQ(nlohmann::json(q), nlohmann::json(p));
  EXPECT_EQ(q.cpu_model, "Test CPU");
  EXPECT_EQ(q.llc_bytes, 12345678);
  EXPECT_EQ(q.fma_flops_all, 9.5e11);

  nlohmann::json missing = p;
  missing.erase("fma_flops_all");
  try {
    missing.get<MachinePeaks>();
    FAIL() << "a missing field must throw";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("fma_flops_all"), std::string::npos) << e.what();
  }
  nlohmann::json mistyped = p;
  mistyped["cores"] = "seven";
  EXPECT_THROW(mistyped.get<MachinePeaks>(), UserError);
}

TEST(MachineCache, MatchingFileIsReturnedAsIs) {
  TempDir dir;
  MachineIdentity id = host_identity();
  MachinePeaks marker;
  marker.cpu_model = id.cpu_model;
  marker.isa = id.isa;
  marker.cores = id.cores;
  marker.fma_flops_1core = 12345;  // no real calibration gives this
  std::ofstream(dir.path + "/machine.json") << to_json_text(marker);

  CachedPeaks got = machine_peaks(dir.path, false, quick());
  EXPECT_FALSE(got.measured_now);
  EXPECT_EQ(got.peaks.fma_flops_1core, 12345);
  EXPECT_EQ(got.path, dir.path + "/machine.json");
  EXPECT_EQ(slurp(got.path), to_json_text(marker));  // untouched
}

TEST(MachineCache, FileForAnotherCpuOrUnreadableIsReplaced) {
  TempDir dir;
  MachineIdentity id = host_identity();
  MachinePeaks other;
  other.cpu_model = "Imaginary CPU 9000";
  other.isa = id.isa;
  other.cores = id.cores;
  other.fma_flops_1core = 12345;
  std::ofstream(dir.path + "/machine.json") << to_json_text(other);

  CachedPeaks got = machine_peaks(dir.path, false, quick());
  EXPECT_TRUE(got.measured_now);
  EXPECT_NE(got.why.find("Imaginary CPU 9000"), std::string::npos) << got.why;
  EXPECT_EQ(got.peaks.cpu_model, id.cpu_model);
  EXPECT_NE(got.peaks.fma_flops_1core, 12345);
  MachinePeaks written = nlohmann::json::parse(slurp(got.path)).get<MachinePeaks>();
  EXPECT_EQ(written.cpu_model, id.cpu_model);
  EXPECT_EQ(written.fma_flops_1core, got.peaks.fma_flops_1core);

  // Now it matches: the second call reuses it.
  CachedPeaks again = machine_peaks(dir.path, false, quick());
  EXPECT_FALSE(again.measured_now);
  EXPECT_EQ(again.peaks.fma_flops_1core, got.peaks.fma_flops_1core);

  std::ofstream(dir.path + "/machine.json") << "{ not json";
  CachedPeaks broken = machine_peaks(dir.path, false, quick());
  EXPECT_TRUE(broken.measured_now);
  EXPECT_NE(broken.why.find("could not be read"), std::string::npos) << broken.why;
}

TEST(MachineCache, ProcessOnFewerCpusKeepsItsOwnFile) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) < 2) GTEST_SKIP() << "needs two CPUs";
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  TempDir dir;
  MachineIdentity whole = host_identity();
  MachinePeaks machine;
  machine.cpu_model = whole.cpu_model;
  machine.isa = whole.isa;
  machine.cores = whole.cores;
  machine.fma_flops_1core = 111;
  std::ofstream(dir.path + "/machine.json") << to_json_text(machine);
  MachinePeaks one = machine;
  one.cores = 1;
  one.fma_flops_1core = 222;
  std::ofstream(dir.path + "/machine-1cpus.json") << to_json_text(one);

  cpu_set_t just_one;
  CPU_ZERO(&just_one);
  CPU_SET(first, &just_one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(just_one), &just_one), 0);
  CachedPeaks got = machine_peaks(dir.path, false, quick());
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_FALSE(got.measured_now) << got.why;
  EXPECT_EQ(got.path, dir.path + "/machine-1cpus.json");
  EXPECT_EQ(got.peaks.fma_flops_1core, 222);
  EXPECT_EQ(machine_peaks(dir.path, false, quick()).peaks.fma_flops_1core, 111);
}

TEST(Calibrate, FiguresArePlausibleForThisMachine) {
  MachinePeaks p = calibrate(quick());
  MachineIdentity id = host_identity();
  EXPECT_EQ(p.cpu_model, id.cpu_model);
  EXPECT_EQ(p.cores, id.cores);
  EXPECT_FALSE(p.date.empty());
  // -march=native must give the widest vectors the ISA has.
  int want_bits = id.isa.find("avx512f") != std::string::npos ? 512
                  : id.isa.find("avx2") != std::string::npos  ? 256
                                                              : 128;
  EXPECT_EQ(p.vector_bits, want_bits) << p.isa;
  const double gf1 = p.fma_flops_1core / 1e9;
  EXPECT_GT(gf1, 1);
  EXPECT_LT(gf1, 1000);
  EXPECT_GE(p.fma_flops_all, 0.8 * p.fma_flops_1core);
  EXPECT_LE(p.fma_flops_all, 1.3 * p.cores * p.fma_flops_1core);
  if (p.clock_hz > 0) {
    EXPECT_GT(p.clock_hz, 0.3e9);
    EXPECT_LT(p.clock_hz, 8e9);
    // Per cycle: at least half of one FMA unit's 2 * lanes, at most four units' worth.
    const double lanes = p.vector_bits / 32.0, per_cycle = p.fma_flops_1core / p.clock_hz;
    EXPECT_GE(per_cycle, lanes) << "flop/cycle " << per_cycle;
    EXPECT_LE(per_cycle, 2 * lanes * 4 * 1.2) << "flop/cycle " << per_cycle;
  }
  EXPECT_GT(p.triad_bytes_per_s_1core, 0.5e9);
  EXPECT_GT(p.triad_bytes_per_s_all, 0.5e9);
  EXPECT_LE(p.triad_array_bytes, int64_t{16} << 20);
  EXPECT_EQ(p.llc_bytes, llc_bytes());
  EXPECT_NE(p.triad_convention.find("STREAM"), std::string::npos);
  // The last-level-cache triad ran on arrays that fit the cache.
  EXPECT_EQ(p.llc_triad_array_bytes, llc_triad_array_size(p.llc_bytes).bytes);
  EXPECT_GT(p.llc_bytes_per_s_1core, 0.5e9);
  EXPECT_GT(p.llc_bytes_per_s_all, 0.5e9);
  // The bf16 dot-product loop ran where the ISA has AVX512_BF16 (vdpbf16ps does twice a
  // float32 FMA's FLOPs per instruction; at least half the FMA figure on a busy machine).
  if (id.isa.find("avx512_bf16") != std::string::npos) {
    EXPECT_GT(p.bf16_dot_flops_1core, 0.5 * p.fma_flops_1core);
    EXPECT_GT(p.bf16_dot_flops_all, 0);
  } else {
    EXPECT_EQ(p.bf16_dot_flops_1core, 0);
  }
  if (id.isa.find("avx512_fp16") == std::string::npos) {
    EXPECT_EQ(p.f16_fma_flops_1core, 0);
  }
}

}  // namespace
