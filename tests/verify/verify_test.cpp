// Tests of the verifier: verdicts for kernels right and wrong in different ways, the
// suites it runs (fresh seeds, the shape sweep for generic kernels) and the certificate.
#include "verify/verify.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "emit/emit.h"
#include "loops/loops.h"
#include "spec/spec.h"

namespace {

namespace v = ollie::verify;

ollie::ir::Graph softmax_at(const ollie::ir::DimBindings& dims) {
  ollie::spec::SpecOptions o;
  o.dim_overrides = dims;
  return ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/softmax.py", o);
}

std::string kernel_file(const std::string& name) {
  std::ifstream in(std::string(OLLIE_SOURCE_DIR) + "/tests/e2e/kernels/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

v::Options options() {
  v::Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 20;
  o.seed = 0;  // fresh
  o.cache_dir = ::testing::TempDir() + "ollie-verify-test-cache";
  return o;
}

v::Report check(const std::string& source) {
  const auto g = softmax_at({{"M", 8}, {"N", 40}});
  return v::verify(g, source, softmax_at, options());
}

TEST(Verify, EmittedKernelPassesEverySuite) {
  const auto g = softmax_at({{"M", 8}, {"N", 40}});
  const std::string source =
      ollie::emit::emit_kernel(ollie::loops::lower(g, ollie::loops::default_schedule(g)), g);
  const v::Report r = v::verify(g, source, softmax_at, options());
  EXPECT_EQ(r.verdict, v::Verdict::Pass) << r.message;
  std::set<std::string> names;
  for (const auto& s : r.suites) {
    names.insert(s.name);
    EXPECT_TRUE(s.passed);
    EXPECT_GT(s.elements, 0);
  }
  // Quick: the normal, wide, special-values, offset, exact-constants and subnormal inputs are calls
  // of the call-order suite.
  EXPECT_EQ(names, (std::set<std::string>{"call-order", "reused-buffers", "prefilled-outputs",
                                          "shape-sweep"}));
  EXPECT_TRUE(r.generic);
  EXPECT_GT(r.worst, 0.0);
  EXPECT_LE(r.worst, 1.0);
}

TEST(Verify, FreshSeedsEveryTime) {
  const v::Report a = check(kernel_file("softmax_rows.cpp"));
  const v::Report b = check(kernel_file("softmax_rows.cpp"));
  ASSERT_FALSE(a.suites.empty());
  ASSERT_FALSE(b.suites.empty());
  EXPECT_NE(a.suites[0].seed, b.suites[0].seed);
}

// A recorded seed replays: the same suites on the same inputs (drawn by two threads in
// chunks, in whatever order), and those inputs are make_inputs' for the suite's seed.
TEST(Verify, SameSeedReplaysTheSameInputs) {
  const auto g = softmax_at({{"M", 300}, {"N", 700}});  // several 64Ki-element chunks per input
  v::Options o = options();
  o.seed = 4242;
  const v::Report a = v::verify(g, kernel_file("softmax_rows.cpp"), softmax_at, o);
  const v::Report b = v::verify(g, kernel_file("softmax_rows.cpp"), softmax_at, o);
  ASSERT_EQ(a.verdict, v::Verdict::Pass) << a.message;
  ASSERT_EQ(a.suites.size(), b.suites.size());
  uint64_t next_seed = 4242;
  for (size_t i = 0; i < a.suites.size(); ++i) {
    // reused-buffers replays the call-order suite's inputs: its seed is theirs.
    if (a.suites[i].name == "reused-buffers")
      EXPECT_EQ(a.suites[i].seed, a.suites[i - 1].seed);
    else
      EXPECT_EQ(a.suites[i].seed, next_seed++);
    EXPECT_EQ(a.suites[i].seed, b.suites[i].seed);
    EXPECT_EQ(a.suites[i].elements, b.suites[i].elements);
    EXPECT_EQ(a.suites[i].worst, b.suites[i].worst) << a.suites[i].name;
  }
  const v::Report w = v::verify(g, kernel_file("softmax_drops_last_column.cpp"), softmax_at, o);
  ASSERT_EQ(w.verdict, v::Verdict::Wrong) << w.message;
  ASSERT_TRUE(w.counterexample.has_value());
  const auto& c = *w.counterexample;
  // The first suite at quick: normal inputs on plausible-looking outputs.
  ASSERT_EQ(c.suite, "prefilled-outputs");
  const auto ref = ollie::interp::evaluate(g, v::make_inputs(g, c.seed, v::Distribution::Normal));
  EXPECT_EQ(c.expected,
            ref.values[static_cast<size_t>(c.output)].data[static_cast<size_t>(c.index)]);
}

TEST(Verify, WrongKernelGivesTheFirstCounterexample) {
  const v::Report r = check(kernel_file("softmax_drops_last_column.cpp"));
  ASSERT_EQ(r.verdict, v::Verdict::Wrong) << r.message;
  ASSERT_TRUE(r.counterexample.has_value());
  EXPECT_EQ(r.counterexample->suite, "prefilled-outputs");
  EXPECT_GT(std::abs(r.counterexample->got - r.counterexample->expected), r.counterexample->bound);
  EXPECT_NE(r.message.find("expected"), std::string::npos) << r.message;
}

// A spec that rounds (np.round: half to even) gets inputs on the .5 ties at quick: its
// emitted kernel passes, the same kernel rounding half away from zero (std::round) is
// wrong there, and only there (random floats never land on a tie).
TEST(Verify, RoundingTiesCatchAKernelThatRoundsHalfAwayFromZero) {
  auto fake_quant = [](const ollie::ir::DimBindings& dims) {
    ollie::spec::SpecOptions o;
    o.dim_overrides = dims;
    return ollie::spec::compile_spec("q.py",
                                     "import numpy as np\nDIMS = dict(M=4, N=16)\n"
                                     "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                     "    return np.clip(np.round(x * 4), -127, 127) / 4\n",
                                     o);
  };
  const auto g = fake_quant({});
  const std::string source =
      ollie::emit::emit_kernel(ollie::loops::lower(g, ollie::loops::default_schedule(g)), g);
  ASSERT_NE(source.find("std::rint"), std::string::npos);
  const v::Report good = v::verify(g, source, fake_quant, options());
  EXPECT_EQ(good.verdict, v::Verdict::Pass) << good.message;
  bool ties = false;
  for (const auto& s : good.suites) ties = ties || s.name == "rounding-ties";
  EXPECT_TRUE(ties);
  std::string away = source;
  for (size_t at; (at = away.find("std::rint")) != std::string::npos;)
    away.replace(at, 9, "std::round");
  const v::Report bad = v::verify(g, away, fake_quant, options());
  ASSERT_EQ(bad.verdict, v::Verdict::Wrong) << bad.message;
  EXPECT_NE(bad.message.find("rounding-ties"), std::string::npos) << bad.message;
  for (const auto& s : bad.suites) EXPECT_EQ(s.passed, s.name != "rounding-ties") << s.name;
}

TEST(Verify, CrashesCompileErrorsAndForbiddenCallsHaveTheirVerdicts) {
  EXPECT_EQ(check(kernel_file("softmax_segfaults.cpp")).verdict, v::Verdict::Crash);
  EXPECT_EQ(check(kernel_file("softmax_does_not_compile.cpp")).verdict, v::Verdict::CompileError);
  // Opening a file: refused by the screen (its import of fopen) before the sandbox sees it.
  const v::Report reads = check(kernel_file("softmax_reads_a_file.cpp"));
  EXPECT_EQ(reads.verdict, v::Verdict::Refused) << reads.message;
  EXPECT_NE(reads.message.find("imports `fopen`"), std::string::npos) << reads.message;
  EXPECT_EQ(reads.penalty, 1);
}

// Correct only at the dims it was written for: generic by default, so the shape sweep
// catches it; declared specialized, it passes at those dims.
const char* kOnlyN40 = R"(#include <cmath>
#include <cstdint>
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0];
  for (int64_t m = 0; m < M; ++m) {
    float mx = -INFINITY, s = 0;
    for (int n = 0; n < 40; ++n) mx = std::fmax(mx, x[m * 40 + n]);
    for (int n = 0; n < 40; ++n) s += std::exp(x[m * 40 + n] - mx);
    for (int n = 0; n < 40; ++n) out0[m * 40 + n] = std::exp(x[m * 40 + n] - mx) / s;
  }
}
)";

TEST(Verify, ShapeSweepCatchesAKernelThatOnlyWorksAtTheBoundDims) {
  const v::Report r = check(kOnlyN40);
  EXPECT_NE(r.verdict, v::Verdict::Pass) << r.message;
  EXPECT_NE(r.message.find("shape-sweep"), std::string::npos) << r.message;
  const v::Report declared = check(std::string("// ollie: specialized\n") + kOnlyN40);
  EXPECT_FALSE(declared.generic);
  for (const auto& s : declared.suites) EXPECT_NE(s.name, "shape-sweep");
}

// Computes the first call right, then returns that answer again: only a second call
// with other inputs in the same process shows it.
TEST(Verify, CallOrderCatchesAKernelThatKeepsItsFirstAnswer) {
  const v::Report r = check(std::string("// ollie: specialized\n") + R"(#include <cmath>
#include <cstdint>
#include <vector>
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  static std::vector<float> memo;
  const int64_t M = dims[0], N = dims[1];
  if (memo.empty()) {
    memo.resize(M * N);
    for (int64_t m = 0; m < M; ++m) {
      float mx = -INFINITY, s = 0;
      for (int64_t n = 0; n < N; ++n) mx = std::fmax(mx, x[m * N + n]);
      for (int64_t n = 0; n < N; ++n) s += std::exp(x[m * N + n] - mx);
      for (int64_t n = 0; n < N; ++n) memo[m * N + n] = std::exp(x[m * N + n] - mx) / s;
    }
  }
  for (int64_t i = 0; i < M * N; ++i) out0[i] = memo[i];
}
)");
  ASSERT_EQ(r.verdict, v::Verdict::Wrong) << r.message;
  EXPECT_EQ(r.counterexample->suite.rfind("call-order (call 2 of ", 0), 0u) << r.message;
}

TEST(Verify, WritingZerosNeverPasses) {
  const v::Report r = check(R"(#include <cstdint>
extern "C" void ollie_kernel(const float*, float* out0, const int64_t* dims) {
  for (int64_t i = 0; i < dims[0] * dims[1]; ++i) out0[i] = 0.0f;
}
)");
  EXPECT_EQ(r.verdict, v::Verdict::Wrong) << r.message;
}

TEST(Verify, CertificateRecordsWhatWasChecked) {
  const auto g = softmax_at({{"M", 8}, {"N", 40}});
  const v::Report r = v::verify(g, kernel_file("softmax_rows.cpp"), softmax_at, options());
  const auto j = nlohmann::json::parse(v::certificate_json(g, "abc123", r, options()));
  EXPECT_EQ(j["schema"], "ollie-certificate/1");
  EXPECT_EQ(j["spec"]["entry"], "softmax");
  EXPECT_EQ(j["spec"]["sha256"], "abc123");
  EXPECT_EQ(j["kernel"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["kernel"]["generic"], true);
  EXPECT_EQ(j["dims"]["M"], 8);
  EXPECT_EQ(j["dims"]["N"], 40);
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["build"]["compiler"], "g++");
  EXPECT_FALSE(j["build"]["flags"].empty());
  EXPECT_EQ(j["suites"].size(), r.suites.size());
  EXPECT_TRUE(j["suites"][0].contains("seed"));
  EXPECT_GT(j["duration_seconds"].get<double>(), 0.0);
  EXPECT_FALSE(j.contains("counterexample"));
}

// Right outputs, but the max loop reads one element past its scratch copy of the row
// (the value read is never used for the max): only the sanitizer build sees it.
const char* kReadsPastScratch = R"(#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  float* row = static_cast<float*>(std::malloc(N * sizeof(float)));
  for (int64_t m = 0; m < M; ++m) {
    std::memcpy(row, x + m * N, N * sizeof(float));
    float mx = -INFINITY, cur = row[0];
    for (int64_t n = 0; n < N; ++n) {
      const float next = row[n + 1];
      mx = std::fmax(mx, cur);
      cur = next;
    }
    float s = 0;
    for (int64_t n = 0; n < N; ++n) s += std::exp(row[n] - mx);
    for (int64_t n = 0; n < N; ++n) out0[m * N + n] = std::exp(row[n] - mx) / s;
  }
  std::free(row);
}
)";

TEST(Verify, FullLevelSanitizerBuildCatchesAnOverreadThatQuickPasses) {
  const auto g = softmax_at({{"M", 8}, {"N", 40}});
  const v::Report quick = v::verify(g, kReadsPastScratch, softmax_at, options());
  EXPECT_EQ(quick.verdict, v::Verdict::Pass) << quick.message;
  EXPECT_TRUE(quick.sanitizer_flags.empty());

  v::Options full = options();
  full.level = v::Level::Full;
  const v::Report r = v::verify(g, kReadsPastScratch, softmax_at, full);
  ASSERT_EQ(r.verdict, v::Verdict::Sanitizer) << r.message;
  EXPECT_STREQ(v::verdict_name(r.verdict), "sanitizer");
  EXPECT_EQ(r.message.rfind("sanitizer (normal) suite (seed ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("heap-buffer-overflow"), std::string::npos) << r.message;
  ASSERT_FALSE(r.suites.empty());
  EXPECT_EQ(r.suites.back().name, "sanitizer");
  EXPECT_FALSE(r.suites.back().passed);
  for (size_t i = 0; i + 1 < r.suites.size(); ++i)
    EXPECT_TRUE(r.suites[i].passed) << r.suites[i].name;

  const auto j = nlohmann::json::parse(v::certificate_json(g, "abc123", r, full));
  EXPECT_EQ(j["verdict"], "sanitizer");
  EXPECT_EQ(j["level"], "full");
  EXPECT_EQ(j["suites"].back()["name"], "sanitizer");
  const auto flags = j["sanitizer_build"]["flags"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-fsanitize=address,undefined"), flags.end());
  EXPECT_NE(j["sanitizer_build"]["preload"].get<std::string>().find("libasan"), std::string::npos);
}

TEST(Verify, FullLevelReplaysNormalCallOrderAndOneSweepUnderTheSanitizer) {
  const auto g = softmax_at({{"M", 8}, {"N", 40}});
  v::Options full = options();
  full.level = v::Level::Full;
  const v::Report r = v::verify(g, kernel_file("softmax_rows.cpp"), softmax_at, full);
  ASSERT_EQ(r.verdict, v::Verdict::Pass) << r.message;
  std::vector<std::string> sanitizer_dims;
  for (const auto& s : r.suites)
    if (s.name == "sanitizer") {
      EXPECT_TRUE(s.passed);
      sanitizer_dims.push_back(s.dims);
    }
  ASSERT_EQ(sanitizer_dims.size(), 3u);
  EXPECT_EQ(sanitizer_dims[0], "M=8, N=40");
  EXPECT_EQ(sanitizer_dims[1], "M=8, N=40");
  EXPECT_NE(sanitizer_dims[2], "M=8, N=40");  // the shape sweep's dims of median cost
  const auto j = nlohmann::json::parse(v::certificate_json(g, "abc123", r, full));
  EXPECT_TRUE(j.contains("sanitizer_build"));
  EXPECT_FALSE(
      nlohmann::json::parse(
          v::certificate_json(g, "abc123", check(kernel_file("softmax_rows.cpp")), options()))
          .contains("sanitizer_build"));
}

TEST(Verify, SpecialValueInputsAreDrawn) {
  const auto g = softmax_at({{"M", 16}, {"N", 64}});
  const auto in = v::make_inputs(g, 7, v::Distribution::Special);
  int nan = 0, inf = 0;
  for (double x : in[0].data) {
    nan += std::isnan(x);
    inf += std::isinf(x);
  }
  EXPECT_GT(nan, 0);
  EXPECT_GT(inf, 0);
  const auto wide = v::make_inputs(g, 7, v::Distribution::Wide);
  double biggest = 0;
  for (double x : wide[0].data) biggest = std::max(biggest, std::abs(x));
  EXPECT_GT(biggest, 20.0);
}

}  // namespace

namespace {

ollie::interp::Tensor values(std::vector<double> data) {
  ollie::interp::Tensor t;
  t.dtype = ollie::ir::DType::F32;
  t.shape = {static_cast<int64_t>(data.size())};
  t.data = std::move(data);
  return t;
}

TEST(Compare, CountsEveryElementOutOfBoundAndKeepsTheFirst) {
  ollie::interp::Result ref;
  ref.values = {values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
  ref.bounds = {values(std::vector<double>(10, 0.01))};
  const auto same = v::compare_outputs({values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10.005})}, ref);
  EXPECT_TRUE(same.agrees);
  EXPECT_EQ(same.penalty(), 0);
  EXPECT_NEAR(same.worst, 0.5, 1e-9);
  const auto three = v::compare_outputs({values({1, 2.5, 3, 4, 5.5, 6, 7, 8, 9, 11})}, ref);
  EXPECT_FALSE(three.agrees);
  EXPECT_EQ(three.mismatches, 3);
  EXPECT_EQ(three.index, 1);  // the first one is the counterexample
  EXPECT_EQ(three.got, 2.5);
  EXPECT_NEAR(three.penalty(), 0.3, 1e-12);
  // Within every bound but 2% off overall: the relative floor, penalty 0.5.
  ref.bounds = {values(std::vector<double>(10, 1.0))};
  std::vector<double> scaled;
  for (double x : ref.values[0].data) scaled.push_back(x * 1.02);
  const auto floor = v::compare_outputs({values(scaled)}, ref);
  EXPECT_FALSE(floor.agrees);
  EXPECT_TRUE(floor.floor_failed);
  EXPECT_EQ(floor.mismatches, 0);
  EXPECT_EQ(floor.penalty(), 0.5);
}

// Below float32's normal range the floor does not count: a reference of 1e-76 (a tiny input
// times a tiny weight, exact in the reference) is 0 in any float32 kernel, within its bound.
TEST(Compare, ElementsBelowTheNormalRangeDoNotCountInTheFloor) {
  ollie::interp::Result ref;
  ref.values = {values({1e-76, -3e-77, 2e-76, 1.0})};
  ref.bounds = {values({1e-45, 1e-45, 1e-45, 1e-6})};
  EXPECT_TRUE(v::compare_outputs({values({0, 0, 0, 1.0})}, ref).agrees);
  // The normal element still counts: 2% off fails the floor.
  ref.bounds = {values({1e-45, 1e-45, 1e-45, 1.0})};
  EXPECT_TRUE(v::compare_outputs({values({0, 0, 0, 1.02})}, ref).floor_failed);
}

// The run database stores verdicts as their names and reads them back.
TEST(VerdictName, ParsesBackEveryName) {
  for (int i = 0; i <= static_cast<int>(v::Verdict::Sanitizer); ++i) {
    const auto verdict = static_cast<v::Verdict>(i);
    EXPECT_EQ(v::verdict_from_name(v::verdict_name(verdict)), verdict) << v::verdict_name(verdict);
  }
  EXPECT_EQ(v::verdict_from_name("compile-error"), v::Verdict::CompileError);
  EXPECT_EQ(v::verdict_from_name("compile_error"), std::nullopt);
  EXPECT_EQ(v::verdict_from_name(""), std::nullopt);
}

}  // namespace
