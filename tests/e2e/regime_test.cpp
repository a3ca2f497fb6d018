// End-to-end tests of `ollie optimize`'s timing regime: --cold is recorded in the run's
// options and reported (the first lines, the summary), a resumed run keeps it and refuses
// a conflicting --hot, and without a flag the regime is chosen from the working set.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "measure/measure.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;
using Result = ollie_e2e::CommandResult;

Result ollie(const std::string& env, const std::string& args) {
  const std::string cmd = env + " " + OLLIE_BINARY + " " + args + " 2>&1";
  return shell(cmd);
}

nlohmann::json timing_of(const fs::path& db_path) {
  const auto db = ollie::store::Store::open(db_path.string());
  return nlohmann::json::parse(db.run().options_json).value("timing", nlohmann::json());
}

// A machine cache with made-up figures for this CPU, so the runs skip the calibration.
void write_machine_cache(const fs::path& dir) {
  const ollie::measure::MachineIdentity id = ollie::measure::host_identity();
  ollie::measure::MachinePeaks p;
  p.cpu_model = id.cpu_model;
  p.isa = id.isa;
  p.cores = id.cores;
  p.fma_flops_1core = 50e9;
  p.fma_flops_all = 50e9 * id.cores;
  p.triad_bytes_per_s_1core = 10e9;
  p.triad_bytes_per_s_all = 15e9;
  p.llc_bytes = ollie::measure::llc_bytes();
  p.llc_bytes_per_s_1core = 40e9;
  p.llc_bytes_per_s_all = 40e9 * id.cores;
  fs::create_directories(dir);
  for (const std::string& name :
       {std::string("machine.json"), "machine-" + std::to_string(id.cores) + "cpus.json"})
    std::ofstream(dir / name) << ollie::measure::to_json_text(p);
}

TEST(OptimizeRegime, ColdIsRecordedReportedAndKeptOnResume) {
  const fs::path dir = fs::temp_directory_path() / ("ollie_e2e_regime_" + std::to_string(getpid()));
  fs::remove_all(dir);
  write_machine_cache(dir / "cache");
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  const std::string spec = std::string(OLLIE_SOURCE_DIR) + "/examples/softmax.py";
  const std::string small = " --dims M=16,N=64 --bench-seconds 0.05";

  const Result cold =
      ollie(env, "optimize " + spec + small + " --evals 2 --cold -o " + (dir / "a").string());
  ASSERT_EQ(cold.exit_code, 0) << cold.out;
  EXPECT_NE(cold.out.find("timing: cold caches (flushed before every timed call): --cold was "
                          "given"),
            std::string::npos)
      << cold.out;
  const std::string summary = read_file(dir / "a" / "summary.md");
  EXPECT_NE(summary.find("- timing: cold caches"), std::string::npos) << summary;
  EXPECT_NE(summary.find("memory ceiling DRAM (cold caches)"), std::string::npos) << summary;
  EXPECT_EQ(timing_of(dir / "a" / "run.db").value("regime", ""), "cold");

  // A conflicting flag on resume is refused, naming the flag and the run's regime.
  const std::string resume = "optimize --resume " + (dir / "a" / "run.db").string();
  const Result hot = ollie(env, resume + " --evals 3 --hot");
  EXPECT_EQ(hot.exit_code, 1) << hot.out;
  EXPECT_NE(hot.out.find("--hot: this run is timed with cold caches"), std::string::npos)
      << hot.out;
  // Without a flag (or with the same one) it keeps the regime.
  const Result resumed = ollie(env, resume + " --evals 3 --cold --bench-seconds 0.05");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("timing: cold caches"), std::string::npos) << resumed.out;
  EXPECT_EQ(timing_of(dir / "a" / "run.db").value("regime", ""), "cold");

  // No flag: an 8 KiB working set stays in cache, so the run is hot, and says why.
  const Result chosen =
      ollie(env, "optimize " + spec + small + " --evals 1 -o " + (dir / "b").string());
  ASSERT_EQ(chosen.exit_code, 0) << chosen.out;
  const nlohmann::json timing = timing_of(dir / "b" / "run.db");
  EXPECT_EQ(timing.value("regime", ""), "hot");
  EXPECT_NE(timing.value("why", "").find("the working set (0.00781 MiB) fits"), std::string::npos)
      << timing;
  EXPECT_NE(read_file(dir / "b" / "summary.md").find("- timing: hot caches: the working set"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
