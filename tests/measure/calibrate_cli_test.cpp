// The command line of the measure stage: `ollie calibrate` with cached figures (text and
// JSON, peaks at a thread count) and `ollie check --json`, run as the real binary.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "measure/measure.h"

namespace fs = std::filesystem;
using namespace ollie::measure;

namespace {

struct CommandResult {
  int exit_code;
  std::string out;  // stdout only
};

CommandResult ollie(const std::string& args) {
  std::string cmd = std::string(OLLIE_BINARY) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A cache directory holding figures for this machine: 1 core 100 GFLOP/s and 10 GB/s, all
// cores 300 GFLOP/s and 30 GB/s, on 3 cores (whatever the host has).
class CachedMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-calibrate-cli.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    MachineIdentity id = host_identity();
    MachinePeaks p;
    p.cpu_model = id.cpu_model;
    p.isa = id.isa;
    p.cores = id.cores;
    p.vector_bits = 512;
    p.fma_chains = 16;
    p.fma_flops_1core = 100e9;
    p.fma_flops_all = 100e9 + (id.cores - 1) * 100e9;
    p.triad_bytes_per_s_1core = 10e9;
    p.triad_bytes_per_s_all = 10e9 + (id.cores - 1) * 10e9;
    p.triad_array_bytes = int64_t{1} << 30;
    p.triad_sizing = "sized for the test";
    p.triad_convention = "STREAM";
    p.load_average = 0.1;
    p.date = "2025-01-01T00:00:00Z";
    std::ofstream(dir_ / "machine.json") << to_json_text(p);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CachedMachine, CalibrateJsonReturnsTheCachedFiguresAndThePeaksAtThreads) {
  CommandResult r = ollie("calibrate --json --threads 1 --cache-dir " + dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fma_flops_1core"], 100e9);
  EXPECT_EQ(j["cache"]["measured_now"], false);
  EXPECT_EQ(j["cache"]["path"], (dir_ / "machine.json").string());
  EXPECT_EQ(j["at_threads"]["threads"], 1);
  EXPECT_EQ(j["at_threads"]["flops_per_s"], 100e9);
  EXPECT_EQ(j["at_threads"]["bytes_per_s"], 10e9);
  EXPECT_EQ(j.get<MachinePeaks>().triad_sizing, "sized for the test");
}

TEST_F(CachedMachine, CalibrateTextSaysPeaksSizingAndWhereCached) {
  CommandResult r = ollie("calibrate --cache-dir " + dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 core: 100.0 GFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 core: 10.0 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1024 MiB each: sized for the test"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find((dir_ / "machine.json").string() + " (cached;"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("busy"), std::string::npos) << r.out;  // load 0.1: no warning
  // Written without the last-level-cache triad (as caches from before it were): said, not
  // measured behind the user's back.
  EXPECT_NE(r.out.find("LLC triad     missing"), std::string::npos) << r.out;
}

TEST_F(CachedMachine, CalibrateTextShowsTheLastLevelCacheTriadWhenCached) {
  MachinePeaks p = nlohmann::json::parse(std::ifstream(dir_ / "machine.json")).get<MachinePeaks>();
  p.llc_bytes = int64_t{32} << 20;
  p.llc_triad_array_bytes = int64_t{4} << 20;
  p.llc_bytes_per_s_1core = 40e9;
  p.llc_bytes_per_s_all = 40e9 * p.cores;
  p.bf16_dot_flops_1core = 300e9;
  p.bf16_dot_flops_all = 300e9 * p.cores;
  std::ofstream(dir_ / "machine.json") << to_json_text(p);
  CommandResult r = ollie("calibrate --threads 1 --cache-dir " + dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("LLC triad     1 core: 40.0 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 arrays of 4096 KiB in the 32 MiB last-level cache"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("hot, in the last-level cache: 40.0 GB/s"), std::string::npos) << r.out;
  nlohmann::json j =
      nlohmann::json::parse(ollie("calibrate --json --threads 1 --cache-dir " + dir_.string()).out);
  EXPECT_EQ(j["at_threads"]["llc_bytes_per_s"], 40e9);
  EXPECT_EQ(j["at_threads"]["bf16_dot_flops_per_s"], 300e9);
}

TEST(CheckJson, MatmulCostAndDims) {
  CommandResult r = ollie("check " + std::string(OLLIE_SOURCE_DIR) +
                          "/examples/matmul.py --dims M=4,K=8,N=2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["entry"], "matmul");
  EXPECT_EQ(j["dims_order"], nlohmann::json({"M", "K", "N"}));
  EXPECT_EQ(j["dims"]["K"], 8);
  EXPECT_EQ(j["flops"], 128);
  EXPECT_EQ(j["compulsory_bytes"], 224);  // (4*8 + 8*2 + 4*2) floats of 4 bytes
  EXPECT_EQ(j["params"][0]["bound_shape"], nlohmann::json({4, 8}));
  EXPECT_EQ(j["results"][0]["dtype"], "f32");
  EXPECT_EQ(j["bf16_product_flops"], 0);
}

// A bf16 x bf16 contraction's products are counted apart: the roofline gives them the bf16
// dot-product peak (bench/peers.py reads this).
TEST(CheckJson, Bf16ProductsAreCountedApart) {
  CommandResult r = ollie("check " + std::string(OLLIE_SOURCE_DIR) +
                          "/examples/matmul_bf16.py --dims M=4,K=8,N=2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["flops"], 128);
  EXPECT_EQ(j["bf16_product_flops"], 128);
}

}  // namespace
