// Tests of the timing regime's choice (measure::choose_regime), the roofline's memory
// ceiling under each regime, and machine.json caches written before the last-level-cache
// triad existed (read as "not measured", never a crash or a silent re-measurement).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "measure/measure.h"
#include "spec/spec.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::measure;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A large server's caches: a 320 MiB LLC, 1 MiB of L2 per core.
Regime here(int64_t working_set, int threads = 2) {
  return choose_regime(working_set, 320 * kMiB, kMiB, threads);
}

// The development machine's (sysfs): a 32 MiB L3, 1 MiB of L2 per core.
Regime dev(int64_t working_set) { return choose_regime(working_set, 32 * kMiB, kMiB, 2); }

int64_t bytes_of(const std::string& example) {
  const ir::Graph g =
      spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + example + ".py", {});
  return ir::cost(g).compulsory_bytes;
}

TEST(Regime, SmallWorkingSetsAreHotAndLargeOnesCold) {
  const Regime small = here(256 << 10);
  EXPECT_FALSE(small.cold);
  EXPECT_NE(small.why.find("fits the 2 MiB of L2 for 2 threads"), std::string::npos) << small.why;
  // A decode's 32 MiB cache fits the LLC many times over but not the cores' L2: cold.
  const Regime decode = here(32 * kMiB);
  EXPECT_TRUE(decode.cold);
  EXPECT_NE(decode.why.find("exceeds the 2 MiB of L2"), std::string::npos) << decode.why;
  // More than half the LLC: cold whatever the L2.
  const Regime huge = choose_regime(200 * kMiB, 320 * kMiB, 0, 2);
  EXPECT_TRUE(huge.cold);
  EXPECT_NE(huge.why.find("half the 320 MiB LLC"), std::string::npos) << huge.why;
}

TEST(Regime, BoundariesThreadsAndUnknownCaches) {
  EXPECT_FALSE(here(2 * kMiB).cold);  // exactly the L2 of two threads
  EXPECT_TRUE(here(2 * kMiB + 1).cold);
  EXPECT_FALSE(here(2 * kMiB, 4).cold);  // four threads hold twice as much
  EXPECT_TRUE(here(2 * kMiB, 1).cold);
  EXPECT_EQ(here(2 * kMiB, 0).cold, here(2 * kMiB, 1).cold);  // threads < 1 count as 1
  // No L2 known: half the LLC alone decides.
  EXPECT_FALSE(choose_regime(160 * kMiB, 320 * kMiB, 0, 2).cold);
  EXPECT_TRUE(choose_regime(160 * kMiB + 1, 320 * kMiB, 0, 2).cold);
  // No LLC known: 32 MiB assumed, and said.
  const Regime assumed = choose_regime(20 * kMiB, 0, 0, 2);
  EXPECT_TRUE(assumed.cold);
  EXPECT_NE(assumed.why.find("an assumed 32 MiB LLC"), std::string::npos) << assumed.why;
  EXPECT_FALSE(choose_regime(-5, 0, 0, 2).cold);
}

TEST(Regime, ExamplesAtTheirDefaultDimsOnThisKindOfMachine) {
  // The decodes stream their caches (cold); the small row kernel and the single-head
  // attention stay in L2 (hot).
  EXPECT_TRUE(here(bytes_of("mla_decode")).cold);
  EXPECT_TRUE(here(bytes_of("gqa_decode")).cold);
  EXPECT_TRUE(here(bytes_of("gemm")).cold);
  EXPECT_FALSE(here(bytes_of("attention_causal")).cold);
  EXPECT_FALSE(here(bytes_of("rmsnorm")).cold);
  EXPECT_TRUE(dev(bytes_of("gqa_decode")).cold);
  EXPECT_NE(dev(bytes_of("gqa_decode")).why.find("half the 32 MiB LLC"), std::string::npos);
  EXPECT_TRUE(dev(bytes_of("mha_causal")).cold);
  EXPECT_FALSE(dev(bytes_of("softmax")).cold);  // exactly 2 MiB
}

MachinePeaks with_llc_bandwidth() {
  MachinePeaks p;
  p.cores = 2;
  p.fma_flops_1core = 100e9;
  p.fma_flops_all = 200e9;
  p.triad_bytes_per_s_1core = 10e9;
  p.triad_bytes_per_s_all = 16e9;
  p.llc_bytes = 320 * kMiB;
  p.llc_bytes_per_s_1core = 40e9;
  p.llc_bytes_per_s_all = 80e9;
  return p;
}

TEST(RegimeRoofline, TheCeilingFollowsTheRegime) {
  const MachinePeaks p = with_llc_bandwidth();
  const double mb = 32e6;  // memory-bound: 1 MFLOP over 32 MB
  const Roofline cold = roofline(1e6, mb, p, 2, true);
  EXPECT_DOUBLE_EQ(cold.bandwidth, 16e9);
  EXPECT_EQ(cold.ceiling, "DRAM (cold caches)");
  const Roofline hot = roofline(1e6, mb, p, 2, false);
  EXPECT_DOUBLE_EQ(hot.bandwidth, 80e9);
  EXPECT_NE(hot.ceiling.find("last-level cache"), std::string::npos) << hot.ceiling;
  EXPECT_DOUBLE_EQ(hot.bound_seconds, mb / 80e9);
  EXPECT_DOUBLE_EQ(roofline(1e6, mb, p, 1, false).bandwidth, 40e9);  // one thread
  // Hot, but larger than the LLC: DRAM, and why.
  const Roofline spills = roofline(1e6, 400e6, p, 2, false);
  EXPECT_DOUBLE_EQ(spills.bandwidth, 16e9);
  EXPECT_NE(spills.ceiling.find("does not fit"), std::string::npos) << spills.ceiling;
}

TEST(RegimeRoofline, AnOldCacheWithoutTheLlcFigureFallsBackToDramAndSaysSo) {
  MachinePeaks p = with_llc_bandwidth();
  p.llc_bytes_per_s_1core = p.llc_bytes_per_s_all = 0;
  const Roofline hot = roofline(1e6, 32e6, p, 2, false);
  EXPECT_DOUBLE_EQ(hot.bandwidth, 16e9);
  EXPECT_NE(hot.ceiling.find("calibrate --recalibrate"), std::string::npos) << hot.ceiling;
}

TEST(RegimeCache, AMachineJsonWithoutTheLlcTriadIsReadNotRemeasured) {
  const fs::path dir = fs::temp_directory_path() / "ollie-regime-test-cache";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const MachineIdentity id = host_identity();
  MachinePeaks old = with_llc_bandwidth();
  old.cpu_model = id.cpu_model;
  old.isa = id.isa;
  old.cores = id.cores;
  old.fma_flops_1core = 12345;  // no calibration gives this
  nlohmann::json j = old;
  ASSERT_TRUE(j.contains("llc_bytes_per_s_all"));
  for (const char* key : {"llc_bytes_per_s_1core", "llc_bytes_per_s_all", "llc_triad_array_bytes"})
    j.erase(key);
  // Under both names the cache uses (machine.json, machine-<N>cpus.json when confined).
  std::ofstream(dir / "machine.json") << j.dump(2);
  std::ofstream(dir / ("machine-" + std::to_string(id.cores) + "cpus.json")) << j.dump(2);
  const CachedPeaks got = machine_peaks(dir.string(), false, {});
  EXPECT_FALSE(got.measured_now) << got.why;
  EXPECT_EQ(got.peaks.fma_flops_1core, 12345);
  EXPECT_EQ(got.peaks.llc_bytes_per_s_all, 0);
  EXPECT_EQ(got.peaks.llc_triad_array_bytes, 0);
  // A field present with the wrong type is still an error naming it.
  j["llc_bytes_per_s_all"] = "fast";
  try {
    j.get<MachinePeaks>();
    FAIL() << "a mistyped field must throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("llc_bytes_per_s_all"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RegimeCache, LlcTriadArraysFitTheCache) {
  EXPECT_EQ(llc_triad_array_size(320 * kMiB).bytes, 40 * kMiB);
  EXPECT_EQ(llc_triad_array_size(0).bytes, 4 * kMiB);          // 32 MiB assumed
  EXPECT_EQ(llc_triad_array_size(100 << 10).bytes, 64 << 10);  // at least 64 KiB
  EXPECT_NE(llc_triad_array_size(0).why.find("assumed"), std::string::npos);
}

}  // namespace
