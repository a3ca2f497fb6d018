// Tests of the runner's buffer placement (guard pages at either end, writes next to an
// output) and of its timed mode: known sleeps measured, two copies side by side near
// 1x, a kernel twice as slow by construction near 2x, and the outputs of timed calls
// coming back so that a kernel replaying an earlier result for the same buffers shows;
// the untimed call before each timed one and the fixed OpenMP environment of timing; the
// pace limits (a far slower first kernel abandoned, a call over the limit stopped, the cap).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

using ollie::interp::Tensor;
using ollie::ir::DType;
using ollie::runner::Kernel;
using ollie::runner::Options;
using ollie::runner::Placement;
using ollie::runner::Status;
using ollie::runner::TimingOptions;

const std::string& scratch() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ollie-timing-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    return std::string(d);
  }();
  return dir;
}

// Compiles `body` (defining ollie_entry) into <name>.so, once per name.
std::string build_so(const std::string& name, const std::string& body,
                     const std::string& flags = "-O2") {
  static std::map<std::string, std::string> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  const std::string src = scratch() + "/" + name + ".cpp";
  const std::string so = scratch() + "/" + name + ".so";
  std::ofstream(src)
      << "#include <cstdint>\n#include <cstring>\n#include <ctime>\n#include <vector>\n"
      << body;
  const std::string cmd =
      "g++ -std=c++20 " + flags + " -shared -fPIC -o '" + so + "' '" + src + "'";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("test kernel failed to compile: " + name);
  built[name] = so;
  return so;
}

Options options() {
  Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 30;
  o.placement = Placement::Start;  // these tests put guard pages where they expect
  return o;
}

ollie::ir::Graph vector_spec(int n) {
  return ollie::spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(N=" + std::to_string(n) +
          ")\ndef f(x: \"f32[N]\") -> \"f32[N]\":\n    return x * 2.0\n",
      {});
}

Tensor filled(int n, double start) {
  Tensor t;
  t.dtype = DType::F32;
  t.shape = {n};
  for (int i = 0; i < n; ++i) t.data.push_back(start + i);
  return t;
}

// Two one-input sets of n values.
std::vector<std::vector<Tensor>> two_sets(int n) { return {{filled(n, 0)}, {filled(n, 7)}}; }

// out = 2x, reading x[n] too when `over` (the value unused unless it is NaN-poison-free).
const char* kOverRead = R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  volatile float sink = x[dims[0]];  // one element past the end
  (void)sink;
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 2 * x[i];
}
)";

TEST(Placement, EndPlacementPutsTheGuardPageRightAfterTheLastElement) {
  const std::string so = build_so("over_read", kOverRead);
  Options start = options(), end = options();
  end.placement = Placement::End;
  // 1024 floats fill one page: either way x[1024] is on the guard page.
  const auto page = vector_spec(1024);
  EXPECT_EQ(ollie::runner::run(so, page, {filled(1024, 0)}, start).status, Status::Crash);
  EXPECT_EQ(ollie::runner::run(so, page, {filled(1024, 0)}, end).status, Status::Crash);
  // 1008 floats (a multiple of 64 bytes, not of the page): at the start of its page the
  // over-read lands in poisoned slack; at the end of its page it meets the guard page.
  const auto odd = vector_spec(1008);
  const auto at_start = ollie::runner::run(so, odd, {filled(1008, 0)}, start);
  EXPECT_EQ(at_start.status, Status::Ok) << at_start.message;
  const auto crashed = ollie::runner::run(so, odd, {filled(1008, 0)}, end);
  EXPECT_EQ(crashed.status, Status::Crash) << crashed.message;
  EXPECT_NE(crashed.message.find("SIGSEGV"), std::string::npos) << crashed.message;
}

TEST(Placement, EndPlacedBuffersAreAlignedAndComeBackIntact) {
  const auto graph = vector_spec(37);
  const std::string so = build_so("aligned_twice", R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 64 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0;
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = aligned ? 2 * x[i] : -1.0f;
}
)");
  Options end = options();
  end.placement = Placement::End;
  const auto out = ollie::runner::run(so, graph, {filled(37, 1)}, end);
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  ASSERT_EQ(out.outputs[0].data.size(), 37u);
  for (int i = 0; i < 37; ++i)
    EXPECT_EQ(out.outputs[0].data[static_cast<size_t>(i)], 2.0 * (1 + i));
}

TEST(Placement, AWriteNextToAnOutputWithinItsPagesIsACrash) {
  const auto graph = vector_spec(100);
  const std::string so = build_so("write_past_end", R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i <= dims[0]; ++i) out[i] = 2 * x[i < dims[0] ? i : 0];  // writes out[N]
}
)");
  const auto out = ollie::runner::run(so, graph, {filled(100, 0)}, options());
  EXPECT_EQ(out.status, Status::Crash);
  EXPECT_NE(out.message.find("wrote past the end of the output"), std::string::npos) << out.message;
  const std::string before_so = build_so("write_before_start", R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = -1; i < dims[0]; ++i) out[i] = 2 * x[i < 0 ? 0 : i];  // writes out[-1]
}
)");
  Options end = options();
  end.placement = Placement::End;  // out[-1] is in the slack before the output, not on a guard page
  const auto before = ollie::runner::run(before_so, graph, {filled(100, 0)}, end);
  EXPECT_EQ(before.status, Status::Crash);
  EXPECT_NE(before.message.find("wrote before the start of the output"), std::string::npos)
      << before.message;
}

// Sleeps `dims[0]` microseconds (the output is right too).
const char* kSleeper = R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 2 * x[i];
  timespec t{0, static_cast<long>(SLEEP_US) * 1000};
  while (nanosleep(&t, &t) != 0) {}
}
)";

std::string sleeper(int microseconds) {
  std::string body = kSleeper;
  body.replace(body.find("SLEEP_US"), 8, std::to_string(microseconds));
  return build_so("sleep_" + std::to_string(microseconds), body);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(Timing, AKernelThatSleepsAKnownTimeIsMeasuredWithinAFewPercent) {
  const auto graph = vector_spec(64);
  TimingOptions timing;
  timing.min_rounds = 20;
  timing.budget_seconds = 0;
  const auto timed =
      ollie::runner::time_kernels({{sleeper(4000)}}, graph, two_sets(64), options(), timing);
  ASSERT_EQ(timed.status, Status::Ok) << timed.message;
  ASSERT_EQ(timed.rep_seconds.size(), 1u);
  ASSERT_EQ(timed.rep_seconds[0].size(), 20u);
  const double m = median(timed.rep_seconds[0]);
  EXPECT_GT(m, 0.004);         // never less than the sleep
  EXPECT_LT(m, 0.004 * 1.05);  // and within a few percent of it (timer slack is ~50 us)
}

TEST(Timing, TwoCopiesSideBySideGiveARatioNearOneAndASlowerCopyNearTwo) {
  const auto graph = vector_spec(64);
  TimingOptions timing;
  timing.min_rounds = 15;
  timing.budget_seconds = 0;
  const auto same = ollie::runner::time_kernels({{sleeper(3000)}, {sleeper(3000)}}, graph,
                                                two_sets(64), options(), timing);
  ASSERT_EQ(same.status, Status::Ok) << same.message;
  ASSERT_EQ(same.rep_seconds.size(), 2u);
  const double ratio_same = median(same.rep_seconds[0]) / median(same.rep_seconds[1]);
  EXPECT_NEAR(ratio_same, 1.0, 0.05);
  const auto twice = ollie::runner::time_kernels({{sleeper(6000)}, {sleeper(3000)}}, graph,
                                                 two_sets(64), options(), timing);
  ASSERT_EQ(twice.status, Status::Ok) << twice.message;
  EXPECT_NEAR(median(twice.rep_seconds[0]) / median(twice.rep_seconds[1]), 2.0, 0.1);
}

TEST(Timing, EachKernelsLastOutputsOnEverySetComeBack) {
  const auto graph = vector_spec(50);
  const std::string honest = build_so("honest", R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 2 * x[i];
}
)");
  // Replays its first result whenever it sees the same output pointer again.
  const std::string replaying = build_so("replaying", R"(
static const void* seen = nullptr;
static std::vector<float> cache;
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  if (seen == b[1]) { std::memcpy(out, cache.data(), cache.size() * sizeof(float)); return; }
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 2 * x[i];
  seen = b[1];
  cache.assign(out, out + dims[0]);
}
)");
  TimingOptions timing;
  timing.min_rounds = 4;
  timing.budget_seconds = 0;
  for (bool cold : {false, true}) {
    timing.cold = cold;
    timing.flush_bytes = cold ? 1 << 20 : 0;
    const std::vector<Tensor> a = {filled(50, 0)}, b = {filled(50, 100)};
    const auto timed =
        ollie::runner::time_kernels({{honest}, {replaying}}, graph, {a, b}, options(), timing);
    ASSERT_EQ(timed.status, Status::Ok) << timed.message;
    ASSERT_EQ(timed.set_outputs.size(), 2u);
    for (int s = 0; s < 2; ++s) {
      const double base = s == 0 ? 0 : 100;
      EXPECT_EQ(timed.set_outputs[0][static_cast<size_t>(s)][0].data[3], 2 * (base + 3))
          << "honest, set " << s;
    }
    // The replaying kernel is right on the set it saw first and wrong on the other.
    EXPECT_EQ(timed.set_outputs[1][0][0].data[3], 2 * 3.0);
    EXPECT_EQ(timed.set_outputs[1][1][0].data[3], 2 * 3.0) << "set 1 got set 0's answer back";
  }
}

TEST(Timing, ACrashWhileTimedIsReportedAndBadOptionsAreRefused) {
  const auto graph = vector_spec(1008);
  Options end = options();
  end.placement = Placement::End;
  const auto timed = ollie::runner::time_kernels({{build_so("over_read", kOverRead)}}, graph,
                                                 {{filled(1008, 0)}}, end, TimingOptions{});
  EXPECT_EQ(timed.status, Status::Crash) << timed.message;
  TimingOptions bad;
  bad.min_rounds = 0;
  EXPECT_ANY_THROW(ollie::runner::time_kernels({{build_so("over_read", kOverRead)}}, graph,
                                               {{filled(1008, 0)}}, options(), bad));
  EXPECT_ANY_THROW(
      ollie::runner::time_kernels({}, graph, {{filled(1008, 0)}}, options(), TimingOptions{}));
}

// Counts its calls: out[0] = the number of calls so far in this process, out[1] = x[0]
// of its previous call (-1 for none).
const char* kCounter = R"(
static int calls = 0;
static float previous = -1;
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 0;
  out[0] = static_cast<float>(++calls);
  out[1] = previous;
  previous = x[0];
}
)";

TEST(Timing, AWarmCallPrecedesEachTimedCallAndItsOutputsAreNotTheTimedOnes) {
  const auto graph = vector_spec(16);
  TimingOptions timing;
  timing.warmup_rounds = 1;
  timing.min_rounds = timing.max_rounds = 3;
  timing.budget_seconds = 0;
  const std::vector<std::vector<Tensor>> one_set = {{filled(16, 0)}};
  const auto plain = ollie::runner::time_kernels({{build_so("counter", kCounter)}}, graph, one_set,
                                                 options(), timing);
  ASSERT_EQ(plain.status, Status::Ok) << plain.message;
  EXPECT_EQ(plain.set_outputs[0][0][0].data[0], 4.0);  // 1 warm-up round + 3 timed calls
  timing.warm_call = true;
  const auto warm = ollie::runner::time_kernels({{build_so("counter", kCounter)}}, graph, one_set,
                                                options(), timing);
  ASSERT_EQ(warm.status, Status::Ok) << warm.message;
  EXPECT_EQ(warm.set_outputs[0][0][0].data[0],
            7.0);  // 1 + 3 x (untimed, timed): the last one is timed
  EXPECT_EQ(warm.rep_seconds[0].size(), 3u);
  // With two sets the warm call is on the other one: a kernel's call never follows a
  // call of its own on the same inputs. Rounds: warm-up (set 0), then timed on sets 1, 0,
  // 1, each after a warm call on the other set.
  const auto two = ollie::runner::time_kernels({{build_so("counter2", kCounter)}}, graph,
                                               two_sets(16), options(), timing);
  ASSERT_EQ(two.status, Status::Ok) << two.message;
  EXPECT_EQ(two.set_outputs[0][1][0].data[1],
            0.0);  // set 1's timed call followed a call on set 0 (x[0] = 0)
  EXPECT_EQ(two.set_outputs[0][0][0].data[1], 7.0);  // set 0's after one on set 1 (x[0] = 7)
}

// out[0..2]: whether libgomp in the child runs with OMP_WAIT_POLICY=active,
// GOMP_SPINCOUNT=1, OMP_PROC_BIND=true (as omp_display_env prints them: the kernel's own
// environment is empty, libgomp read it at load).
const char* kOmpEnv = R"(
#include <omp.h>
#include <unistd.h>
#include <cstdio>
#include <string>
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 0;
  int fds[2];
  if (pipe(fds) != 0) return;
  const int saved = dup(2);
  std::fflush(stderr);
  dup2(fds[1], 2);
  omp_display_env(1);
  std::fflush(stderr);
  dup2(saved, 2);
  close(fds[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof chunk)) > 0;) text.append(chunk, n);
  out[0] = text.find("OMP_WAIT_POLICY = 'ACTIVE'") != std::string::npos;
  out[1] = text.find("GOMP_SPINCOUNT = '1'") != std::string::npos;
  out[2] = text.find("OMP_PROC_BIND = 'TRUE'") != std::string::npos;
}
)";

// The child's environment is fixed in every mode (runner.cpp, child_environment): with or
// without steady_openmp, none of the parent's OpenMP variables reach it.
TEST(Timing, TheOpenMpWaitPolicyIsFixedWhateverTheParentsEnvironment) {
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv("GOMP_SPINCOUNT", "1", 1);
  setenv("OMP_PROC_BIND", "true", 1);
  const auto graph = vector_spec(16);
  TimingOptions timing;
  timing.min_rounds = 1;
  timing.budget_seconds = 0;
  const std::vector<std::vector<Tensor>> one_set = {{filled(16, 0)}};
  const auto inherited = ollie::runner::time_kernels(
      {{build_so("omp_env", kOmpEnv, "-O2 -fopenmp")}}, graph, one_set, options(), timing);
  timing.steady_openmp = true;
  const auto steady = ollie::runner::time_kernels({{build_so("omp_env", kOmpEnv, "-O2 -fopenmp")}},
                                                  graph, one_set, options(), timing);
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");
  unsetenv("OMP_PROC_BIND");
  ASSERT_EQ(inherited.status, Status::Ok) << inherited.message;
  ASSERT_EQ(steady.status, Status::Ok) << steady.message;
  const auto& in = inherited.set_outputs[0][0][0].data;
  EXPECT_EQ(in[0], 1.0);
  EXPECT_EQ(in[1], 0.0);
  EXPECT_EQ(in[2], 0.0);
  const auto& st = steady.set_outputs[0][0][0].data;
  EXPECT_EQ(st[0], 1.0);
  EXPECT_EQ(st[1], 0.0);
  EXPECT_EQ(st[2], 0.0);
}

// Pace (TimingOptions::abandon_ratio, call_limit_seconds, cap_seconds): the search's way
// of giving up on hopeless candidates early.
TEST(Timing, AFirstKernelFarSlowerThanTheSecondIsAbandonedAfterTwoCallsEach) {
  const auto graph = vector_spec(64);
  TimingOptions timing;
  timing.min_rounds = 20;
  timing.budget_seconds = 0;
  timing.abandon_ratio = 3;
  const auto slow = ollie::runner::time_kernels({{sleeper(20000)}, {sleeper(1000)}}, graph,
                                                two_sets(64), options(), timing);
  ASSERT_EQ(slow.status, Status::Ok) << slow.message;
  EXPECT_TRUE(slow.abandoned);
  EXPECT_EQ(slow.rep_seconds[0].size(), 0u) << "abandoned in the warm-up rounds (A B, B A)";
  ASSERT_EQ(slow.fastest_seconds.size(), 2u);
  EXPECT_GE(slow.fastest_seconds[0], 0.02);
  EXPECT_GT(slow.fastest_seconds[0], 3 * slow.fastest_seconds[1]);
  // Within the ratio: timed as always.
  timing.min_rounds = 3;
  const auto fair = ollie::runner::time_kernels({{sleeper(2000)}, {sleeper(1000)}}, graph,
                                                two_sets(64), options(), timing);
  ASSERT_EQ(fair.status, Status::Ok) << fair.message;
  EXPECT_FALSE(fair.abandoned);
  EXPECT_EQ(fair.rep_seconds[0].size(), 3u);
}

// Sleeps a minute per call (no CPU burnt).
const char* kSleepsAMinute = R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  timespec t{60, 0};
  while (nanosleep(&t, &t) != 0) {}
}
)";

TEST(Timing, ACallOverTheCallLimitIsStoppedAtOnce) {
  const auto graph = vector_spec(16);
  TimingOptions timing;
  timing.call_limit_seconds = 0.05;
  const std::vector<Kernel> kernels = {{build_so("sleeps_a_minute", kSleepsAMinute)},
                                       {sleeper(100)}};  // compiled before the clock starts
  const auto start = std::chrono::steady_clock::now();
  const auto timed = ollie::runner::time_kernels(kernels, graph, two_sets(16), options(), timing);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(timed.status, Status::Timeout) << timed.message;
  EXPECT_TRUE(timed.over_call_limit);
  EXPECT_NE(timed.message.find("ran longer than its limit of 0.05 s"), std::string::npos)
      << timed.message;
  EXPECT_LT(wall, 10) << "stopped, not waited for (the run's timeout is 30 s)";
}

TEST(Timing, TheCapEndsASlowKernelsTimedRoundsAfterTwo) {
  const auto graph = vector_spec(16);
  TimingOptions timing;
  timing.warmup_rounds = 0;
  timing.min_rounds = 10;
  timing.budget_seconds = 0;
  timing.cap_seconds = 0.03;
  const auto timed =
      ollie::runner::time_kernels({{sleeper(20000)}}, graph, two_sets(16), options(), timing);
  ASSERT_EQ(timed.status, Status::Ok) << timed.message;
  EXPECT_EQ(timed.rep_seconds[0].size(), 2u) << "two rounds, then over the cap";
}

}  // namespace
