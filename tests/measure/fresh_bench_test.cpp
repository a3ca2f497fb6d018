// Tests of measure::bench against kernels that predict the harness (issue 16): one that
// replays the answer of its call n-4 (or n-2) from its fifth call on, and one that keys
// stored answers by a hash of 64 sampled input elements, are refused as wrong in 10 of
// 10 runs; their honest twins pass every run.
#include <gtest/gtest.h>

#include <string>

#include "measure/measure.h"
#include "spec/spec.h"

namespace {

using ollie::measure::BenchOptions;
using ollie::measure::BenchStatus;

// out = x * sum(w): the small input w is what a cheap sample hash reads in full.
ollie::ir::Graph spec() {
  return ollie::spec::compile_spec("scale.py",
                                   "import numpy as np\nDIMS = dict(N=512, K=4)\n"
                                   "def f(x: \"f32[N]\", w: \"f32[K]\") -> \"f32[N]\":\n"
                                   "    return x * w.sum()\n",
                                   {});
}

BenchOptions quick() {
  BenchOptions o;
  o.runner_path = OLLIE_RUNNER;
  o.min_rounds = o.max_rounds = 12;
  o.budget_seconds = 0;
  o.threads = 1;
  return o;
}

const char* kHead = R"(#include <cstdint>
#include <cstring>
#include <map>
#include <vector>
static void honest(const float* x, const float* w, float* out, const int64_t* dims) {
  float s = 0;
  for (int64_t k = 0; k < dims[1]; ++k) s += w[k];
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = x[i] * s;
}
)";

// From its fifth call on, returns the answer it computed `lag` calls earlier.
std::string lagging(int lag) {
  return std::string(kHead) +
         "extern \"C\" void ollie_kernel(const float* x, const float* w, float* out0, "
         "const int64_t* dims) {\n"
         "  static auto& past = *new std::vector<std::vector<float>>;\n"  // no load-time code
         "  const size_t n = static_cast<size_t>(dims[0]);\n"
         "  if (past.size() >= 4) {\n"
         "    std::memcpy(out0, past[past.size() - " +
         std::to_string(lag) +
         "].data(), n * sizeof(float));\n"
         "  } else {\n"
         "    honest(x, w, out0, dims);\n"
         "  }\n"
         "  past.emplace_back(out0, out0 + n);\n"
         "}\n";
}

// Keys its answers by a hash of 64 sampled elements: `sample` says which ("w": the
// small input, sampled 64 times over; "x": 64 elements spread over x).
std::string hashing(const std::string& sample) {
  const std::string element = sample == "w" ? "w[j % dims[1]]" : "x[j * dims[0] / 64]";
  return std::string(kHead) +
         "extern \"C\" void ollie_kernel(const float* x, const float* w, float* out0, "
         "const int64_t* dims) {\n"
         "  static auto& answers = *new std::map<uint64_t, std::vector<float>>;\n"
         "  uint64_t h = 1469598103934665603ull;\n"
         "  for (int j = 0; j < 64; ++j) {\n"
         "    uint32_t bits;\n"
         "    std::memcpy(&bits, &" +
         element +
         ", 4);\n"
         "    h = (h ^ bits) * 1099511628211ull;\n"
         "  }\n"
         "  const size_t n = static_cast<size_t>(dims[0]);\n"
         "  if (auto it = answers.find(h); it != answers.end()) {\n"
         "    std::memcpy(out0, it->second.data(), n * sizeof(float));\n"
         "    return;\n"
         "  }\n"
         "  honest(x, w, out0, dims);\n"
         "  answers[h].assign(out0, out0 + n);\n"
         "}\n";
}

std::string plain() {
  return std::string(kHead) +
         "extern \"C\" void ollie_kernel(const float* x, const float* w, float* out0, "
         "const int64_t* dims) { honest(x, w, out0, dims); }\n";
}

void expect_refused_every_time(const std::string& name, const std::string& source) {
  for (int run = 0; run < 10; ++run) {
    const auto report = ollie::measure::bench(spec(), {{name, source}}, quick());
    ASSERT_EQ(report.status, BenchStatus::Wrong)
        << name << " escaped in run " << run + 1 << ": " << report.message;
    EXPECT_NE(report.message.find("computed wrong outputs while being timed: timed call"),
              std::string::npos)
        << report.message;
    EXPECT_FALSE(report.kernels[0].outputs_agree);
  }
}

TEST(FreshBench, AKernelReplayingTheAnswerOfCallNMinus4IsRefusedEveryTime) {
  expect_refused_every_time("lag4", lagging(4));
}

TEST(FreshBench, AKernelReplayingTheAnswerOfCallNMinus2IsRefusedEveryTime) {
  expect_refused_every_time("lag2", lagging(2));
}

TEST(FreshBench, AKernelKeyedByAHashOfItsSmallInputIsRefusedEveryTime) {
  expect_refused_every_time("hash-w", hashing("w"));
}

TEST(FreshBench, AKernelKeyedByASampleOfItsLargeInputGainsNothingOrIsRefused) {
  // Every element of x moves on every call and 64 random ones change, so its key
  // repeats only when two calls drew the same rotation and missed every sampled element
  // (rare; the runner's tests count its hits directly, tests/runner/fresh_rounds_test.cpp).
  // It computes (nearly) every answer: no faster than its honest twin, or, when a replay
  // landed on a checked call, refused.
  for (int run = 0; run < 3; ++run) {
    const auto report =
        ollie::measure::bench(spec(), {{"hash-x", hashing("x")}, {"honest", plain()}}, quick());
    if (report.status == BenchStatus::Wrong) {
      EXPECT_EQ(report.message.rfind("hash-x computed wrong outputs", 0), 0u) << report.message;
      continue;
    }
    ASSERT_EQ(report.status, BenchStatus::Ok) << report.message;
    ASSERT_TRUE(report.ratio.has_value());
    EXPECT_GT(report.ratio->median, 0.5) << "the hash-keyed kernel was timed as much faster";
  }
}

TEST(FreshBench, HonestKernelsPassEveryRunAndEightCallsEachAreChecked) {
  for (int run = 0; run < 10; ++run) {
    const auto report = ollie::measure::bench(spec(), {{"a", plain()}, {"b", plain()}}, quick());
    ASSERT_EQ(report.status, BenchStatus::Ok) << "run " << run + 1 << ": " << report.message;
    EXPECT_EQ(report.kernels[0].checked_calls, 8);
    EXPECT_EQ(report.kernels[1].checked_calls, 8);
  }
}

}  // namespace
