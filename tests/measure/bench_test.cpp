// Tests of the timing summary and of measure::bench end to end: kernels compiled by the
// build driver, timed in the runner, and their timed outputs checked; every kernel timed
// in the same environment (a warm call before each timed one, a fixed OpenMP wait policy).
#include <gtest/gtest.h>

#include <cstdlib>

#include <string>
#include <thread>

#include "measure/measure.h"
#include "spec/spec.h"

namespace {

using ollie::measure::BenchKernel;
using ollie::measure::BenchOptions;
using ollie::measure::BenchStatus;

TEST(Summary, MedianMinMadAndOutliers) {
  const auto s = ollie::measure::summarize({3, 1, 100, 2, 4});
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.mad, 1);       // |x - 3| = 0, 1, 1, 2, 97
  EXPECT_EQ(s.outliers, 1);  // 100 > 3 + 5 * 1.4826 * 1
  EXPECT_NEAR(s.spread(), 1.0 / 3, 1e-12);
  const auto even = ollie::measure::summarize({4, 1, 3, 2});
  EXPECT_EQ(even.median, 2.5);
  EXPECT_EQ(even.outliers, 0);
  EXPECT_EQ(ollie::measure::summarize({}).n, 0);
}

ollie::ir::Graph spec() {
  return ollie::spec::compile_spec("scale.py",
                                   "import numpy as np\nDIMS = dict(N=300)\ndef f(x: \"f32[N]\") "
                                   "-> \"f32[N]\":\n    return x * 2.0\n",
                                   {});
}

std::string sleeping_kernel(int microseconds) {
  return "#include <cstdint>\n#include <ctime>\nextern \"C\" void ollie_kernel(const float* x, "
         "float* out0, "
         "const int64_t* dims) {\n  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = 2 * x[i];\n  "
         "timespec t{0, " +
         std::to_string(microseconds * 1000) + "};\n  while (nanosleep(&t, &t) != 0) {}\n}\n";
}

BenchOptions quick() {
  BenchOptions o;
  o.runner_path = OLLIE_RUNNER;
  o.min_rounds = 12;
  o.budget_seconds = 0;
  o.threads = 1;
  o.screen =
      false;  // the instruments below sleep and read the environment: the screen refuses both
  return o;
}

TEST(Bench, SideBySideRatioOfAKernelTwiceAsSlow) {
  const auto report = ollie::measure::bench(
      spec(), {{"slow", sleeping_kernel(4000)}, {"fast", sleeping_kernel(2000)}}, quick());
  ASSERT_EQ(report.status, BenchStatus::Ok) << report.message;
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_TRUE(report.kernels[0].outputs_agree);
  EXPECT_TRUE(report.kernels[1].outputs_agree);
  EXPECT_EQ(report.rounds, 12);
  EXPECT_GT(report.kernels[0].stats.median, 0.004);
  EXPECT_GT(report.kernels[1].stats.median, 0.002);
  ASSERT_TRUE(report.ratio.has_value());
  EXPECT_EQ(report.ratio->n, 12);
  EXPECT_NEAR(report.ratio->median, 2.0, 0.1);
  EXPECT_NE(report.seed, 0u);        // fresh, and recorded
  EXPECT_GE(report.others_cpus, 0);  // measured (Linux has /proc/stat)
}

// Right outputs; sleeps `slow_us` on its odd-numbered calls and 2 ms on the others, or
// `slow_us` on every call unless libgomp runs with OMP_WAIT_POLICY=active (as
// omp_display_env prints it: the runner empties the kernel's own environment).
std::string picky_kernel(int slow_us, bool on_odd_calls) {
  return std::string(R"(#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <omp.h>
#include <unistd.h>
static bool active_policy() {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const int saved = dup(2);
  std::fflush(stderr);
  dup2(fds[1], 2);
  omp_display_env(0);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fds[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof chunk)) > 0;) text.append(chunk, n);
  close(fds[0]);
  return text.find("OMP_WAIT_POLICY = 'ACTIVE'") != std::string::npos;
}
static int calls = 0;
static bool active = false;  // read once, at the first (untimed) call
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = 2 * x[i];
  if (++calls == 1) active = active_policy();
  const bool slow = )") +
         (on_odd_calls ? "calls % 2 == 1" : "!active") + ";\n  timespec t{0, slow ? " +
         std::to_string(slow_us * 1000) +
         "L : 2000000L};\n"
         "  while (nanosleep(&t, &t) != 0) {}\n}\n";
}

TEST(Bench, ContendedWhenOtherProcessesTakeCpusTheThreadsNeed) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ollie::measure::BenchReport r;
  r.threads = cores;  // no CPU to spare: a fifth of one busy is contention
  r.others_cpus = 0.1;
  EXPECT_FALSE(ollie::measure::contended(r));
  r.others_cpus = 0.3;
  EXPECT_TRUE(ollie::measure::contended(r));
  r.others_cpus = -1;  // unknown
  EXPECT_FALSE(ollie::measure::contended(r));
  r.threads = 1;  // the other cores are spare
  r.others_cpus = cores - 1 + 0.1;
  EXPECT_FALSE(ollie::measure::contended(r));
  r.others_cpus = cores - 1 + 0.3;
  EXPECT_TRUE(ollie::measure::contended(r));
}

TEST(Bench, EveryTimedCallFollowsAWarmCallInTheSteadyOpenMpEnvironment) {
  // Two warm-up rounds (calls 1 and 2), then each timed call is an even-numbered one
  // (after its warm call): 2 ms, never the 8 ms of the odd calls.
  const auto alternating = ollie::measure::bench(
      spec(), {{"odd-slow", picky_kernel(8000, true)}, {"fast", sleeping_kernel(2000)}}, quick());
  ASSERT_EQ(alternating.status, BenchStatus::Ok) << alternating.message;
  EXPECT_LT(alternating.kernels[0].stats.max, 0.006);
  EXPECT_NEAR(alternating.ratio->median, 1.0, 0.2);
  // The user's OMP_WAIT_POLICY does not reach the timed kernels.
  setenv("OMP_WAIT_POLICY", "passive", 1);
  const auto policy = ollie::measure::bench(
      spec(), {{"policy", picky_kernel(8000, false)}, {"fast", sleeping_kernel(2000)}}, quick());
  unsetenv("OMP_WAIT_POLICY");
  ASSERT_EQ(policy.status, BenchStatus::Ok) << policy.message;
  EXPECT_NEAR(policy.ratio->median, 1.0, 0.2);
}

TEST(Bench, AKernelReplayingItsResultForTheSameBuffersIsWrongWhileTimed) {
  const std::string replaying = R"(#include <cstdint>
#include <cstring>
#include <vector>
static const float* seen = nullptr;
static std::vector<float> cache;
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  if (x == seen) { std::memcpy(out0, cache.data(), cache.size() * sizeof(float)); return; }
  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = 2 * x[i];
  seen = x;
  cache.assign(out0, out0 + dims[0]);
}
)";
  const auto report = ollie::measure::bench(spec(), {{"replaying", replaying}}, quick());
  EXPECT_EQ(report.status, BenchStatus::Wrong);
  EXPECT_FALSE(report.kernels[0].outputs_agree);
  EXPECT_NE(report.message.find("wrong outputs while being timed"), std::string::npos)
      << report.message;
  // Inputs are fresh on every call, so its replay is wrong on every checked call.
  EXPECT_NE(report.kernels[0].output_problem.find("timed call"), std::string::npos)
      << report.kernels[0].output_problem;
}

// Without the tests' exemption a kernel that sleeps is refused before anything is timed.
TEST(Bench, ARefusedKernelIsNeverTimed) {
  BenchOptions screened = quick();
  screened.screen = true;
  const auto report = ollie::measure::bench(spec(), {{"sleepy", sleeping_kernel(100)}}, screened);
  EXPECT_EQ(report.status, BenchStatus::Refused);
  EXPECT_STREQ(ollie::measure::bench_status_name(report.status), "refused");
  EXPECT_NE(report.message.find("imports `nanosleep`"), std::string::npos) << report.message;
  EXPECT_EQ(report.rounds, 0);
}

TEST(Bench, CompileErrorsAndCrashesAreReportedNotThrown) {
  const auto broken = ollie::measure::bench(spec(), {{"broken", "this is not C++"}}, quick());
  EXPECT_EQ(broken.status, BenchStatus::CompileError);
  EXPECT_NE(broken.message.find("broken does not compile"), std::string::npos);
  const auto crashing =
      ollie::measure::bench(spec(),
                            {{"ok", sleeping_kernel(10)},
                             {"crash",
                              "#include <cstdint>\nextern \"C\" void ollie_kernel(const float*, "
                              "float* o, const int64_t*) "
                              "{ *(volatile int*)nullptr = 1; o[0] = 0; }\n"}},
                            quick());
  EXPECT_EQ(crashing.status, BenchStatus::RunFailed);
  EXPECT_NE(crashing.message.find("crash"), std::string::npos) << crashing.message;
}

TEST(Bench, ColdCachesFlushBetweenCalls) {
  BenchOptions cold = quick();
  cold.cold = true;
  cold.flush_bytes = 8 << 20;
  const auto report = ollie::measure::bench(spec(), {{"k", sleeping_kernel(100)}}, cold);
  ASSERT_EQ(report.status, BenchStatus::Ok) << report.message;
  EXPECT_TRUE(report.cold);
  EXPECT_EQ(report.flush_bytes, uint64_t{8} << 20);
  EXPECT_TRUE(report.kernels[0].outputs_agree);
}

}  // namespace

namespace {

TEST(Roofline, TimesBelowTheRoofAreRefusedAsImpossible) {
  ollie::measure::ThreadPeaks peaks{2, 100e9, 20e9};  // 100 GFLOP/s, 20 GB/s
  // 1 GFLOP over 1 MB: the compute roof is 10 ms, the memory roof 0.05 ms.
  const auto roof = ollie::measure::roofline(1e9, 1e6, peaks);
  EXPECT_FALSE(roof.memory_bound);
  EXPECT_EQ(ollie::measure::below_roofline(roof, 0.011, false), "");
  EXPECT_NE(ollie::measure::below_roofline(roof, 0.005, false).find("faster than the compute roof"),
            std::string::npos);
  // 1 MFLOP over 100 MB: memory roof 5 ms; hot caches may beat it, cold ones may not.
  const auto streaming = ollie::measure::roofline(1e6, 100e6, peaks);
  EXPECT_TRUE(streaming.memory_bound);
  EXPECT_EQ(ollie::measure::below_roofline(streaming, 0.001, false), "");
  EXPECT_NE(ollie::measure::below_roofline(streaming, 0.001, true).find("cold caches"),
            std::string::npos);
  EXPECT_EQ(ollie::measure::below_roofline(streaming, 0.004, true),
            "");  // within the triad's slack
}

}  // namespace
