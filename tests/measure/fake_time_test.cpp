// Kernels that make themselves look faster (issue 16) are refused by bench or timed like
// their honest twins: `ollie bench --json` times each red-team kernel below side by side
// with the same source compiled with OLLIE_HONEST_TWIN defined (the cheat switched off,
// the algorithm unchanged), and either bench rejects the run (wrong outputs while timed,
// faster than the roofline, a failed run) or the median per-round time ratio cheat / twin
// is at least 0.9. Today bench accepts them 1.3x to 4x "faster" (replayed answers paced to
// look plausible, rewritten times, a spinning helper thread that slows the twin); these
// tests fail until bench's inputs never repeat, fd 3 is closed and kernels cannot leave
// threads running between calls. A control checks that an honest kernel against itself
// passes the same criterion on this machine.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a shell command line; returns its exit code and stdout.
std::pair<int, std::string> shell(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

struct FakeTimeCase {
  std::string kernel;  // under tests/redteam: "<example>__<what>.cpp"
  std::string dims;    // --dims for bench (smaller than the defaults: cheaper, same attack)
  // --threads: 1 where the attack does not need threads (steadier times on a loaded
  // machine: no OpenMP barrier waits for a descheduled thread), 0 for every core.
  int threads;
};

void PrintTo(const FakeTimeCase& c, std::ostream* os) { *os << c.kernel; }

// One `ollie bench --json` of the kernel against its twin: refused (the reason), or the
// median per-round time ratio kernel / twin.
struct BenchRun {
  bool refused = false;
  std::string why;
  double ratio = 0, kernel_seconds = 0, twin_seconds = 0;
};

BenchRun bench_against_twin(const FakeTimeCase& c, const fs::path& file, const fs::path& twin) {
  const std::string stem = file.stem().string();
  const std::string example = stem.substr(0, stem.find("__"));
  // One cache for every case (the machine's calibration is measured once).
  const std::string cache = ::testing::TempDir() + "ollie-fake-time-cache";
  const std::string threads = c.threads > 0 ? " --threads " + std::to_string(c.threads) : "";
  const auto [code, out] =
      shell("OLLIE_CACHE_DIR=" + cache + " " + OLLIE_BINARY + " bench " + OLLIE_SOURCE_DIR +
            "/examples/" + example + ".py " + file.string() + " --vs " + twin.string() +
            " --dims " + c.dims + threads + " --seconds 1 --json 2>/dev/null");
  BenchRun run;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "bench printed no JSON (exit " << code << "): " << e.what() << "\n" << out;
    return run;
  }
  const std::string status = j.value("status", "");
  EXPECT_NE(status, "compile-error") << j.value("message", "");
  if (status != "ok") {
    // Refused: wrong outputs while timed, faster than the roofline allows, a failed run.
    EXPECT_EQ(code, 4) << out;
    run.refused = true;
    run.why = status + ": " + j.value("message", "");
    EXPECT_FALSE(j.value("message", "").empty()) << out;
    return run;
  }
  EXPECT_TRUE(j.contains("ratio")) << out;
  if (!j.contains("ratio")) return run;
  run.ratio = j["ratio"]["median"];
  run.kernel_seconds = j["kernels"][0]["median_seconds"];
  run.twin_seconds = j["kernels"][1]["median_seconds"];
  return run;
}

// Timing on a shared machine is noisy (an honest kernel against itself reads 0.8 now and
// then): a run under 0.9 is repeated once, and the better of the two counts.
BenchRun best_of_two(const FakeTimeCase& c, const fs::path& file, const fs::path& twin) {
  BenchRun best;
  for (int attempt = 0; attempt < 2 && !best.refused && best.ratio < 0.9; ++attempt) {
    const BenchRun run = bench_against_twin(c, file, twin);
    if (run.refused || run.ratio > best.ratio) best = run;
  }
  return best;
}

fs::path scratch_dir() {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("ollie-fake-time-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

class FakeTime : public ::testing::TestWithParam<FakeTimeCase> {};

TEST_P(FakeTime, RefusedOrTimedLikeItsHonestTwin) {
  const FakeTimeCase& c = GetParam();
  const fs::path file = fs::path(OLLIE_SOURCE_DIR) / "tests/redteam" / c.kernel;
  const std::string source = read_text(file);
  ASSERT_NE(source.find("OLLIE_HONEST_TWIN"), std::string::npos) << file << " has no twin switch";
  const std::string stem = file.stem().string();
  const fs::path dir = scratch_dir();
  const fs::path twin = dir / (stem + "__honest_twin.cpp");
  std::ofstream(twin) << "#define OLLIE_HONEST_TWIN 1\n" << source;
  const BenchRun best = best_of_two(c, file, twin);
  fs::remove_all(dir);
  if (best.refused) {
    std::cout << stem << ": bench refused it (" << best.why << ")\n";
    return;
  }
  EXPECT_GE(best.ratio, 0.9) << stem << " was timed " << 1 / best.ratio
                             << "x faster than its honest twin (median per-round ratio "
                             << best.ratio << "; medians " << best.kernel_seconds << " s vs "
                             << best.twin_seconds << " s) and bench accepted it";
}

// The criterion is fair: an honest kernel (a twin) against a copy of itself is accepted.
TEST(FakeTimeControl, HonestKernelAgainstItselfIsWithinTenPercent) {
  const FakeTimeCase c{"fake_time/matmul__helper_thread_spins_between_calls.cpp",
                       "M=128,K=256,N=256", 0};
  const std::string source = "#define OLLIE_HONEST_TWIN 1\n" +
                             read_text(fs::path(OLLIE_SOURCE_DIR) / "tests/redteam" / c.kernel);
  const fs::path dir = scratch_dir();
  const fs::path first = dir / "matmul__twin.cpp", second = dir / "matmul__twin_copy.cpp";
  std::ofstream(first) << source;
  std::ofstream(second) << source << "// a copy\n";
  const BenchRun best = best_of_two(c, first, second);
  fs::remove_all(dir);
  EXPECT_FALSE(best.refused) << best.why;
  EXPECT_GE(best.ratio, 0.9) << "honest against itself: median per-round ratio " << best.ratio;
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, FakeTime,
    ::testing::Values(FakeTimeCase{"attention_causal__replays_call_n_minus_4.cpp", "S=256,D=64", 1},
                      FakeTimeCase{"matmul__replays_when_omp_wait_policy_active.cpp",
                                   "M=128,K=256,N=256", 1},
                      FakeTimeCase{"fake_time/matmul_bias_relu__replays_by_sampled_hash.cpp",
                                   "M=128,K=256,N=256", 1},
                      FakeTimeCase{"fake_time/matmul__rewrites_bench_times_via_memfd.cpp",
                                   "M=128,K=256,N=256", 1},
                      // The spinner steals a core from the twin's threads: every core.
                      FakeTimeCase{"fake_time/matmul__helper_thread_spins_between_calls.cpp",
                                   "M=128,K=256,N=256", 0}),
    [](const auto& p) {
      std::string name = fs::path(p.param.kernel).stem().string();
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
