// Tests of the integer-exact suite: its preconditions (verify/polynomial.h: which specs
// are polynomial and why not, the integer range that keeps every value exact, the integer
// inputs drawn with it), its bit-for-bit comparison and what the certificate records.
#include "verify/polynomial.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "spec/spec.h"
#include "verify/verify.h"

namespace {

namespace v = ollie::verify;

ollie::ir::Graph example(const std::string& name, const ollie::ir::DimBindings& dims = {}) {
  ollie::spec::SpecOptions o;
  o.dim_overrides = dims;
  return ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + name + ".py", o);
}

// A spec with the numpy import and DIMS on lines 1-2, the function from line 3.
ollie::ir::Graph spec(const std::string& body) {
  return ollie::spec::compile_spec("t.py", "import numpy as np\nDIMS = dict(M=4, N=8)\n" + body,
                                   {});
}

TEST(Polynomial, Examples) {
  // "" for polynomial; otherwise the start of the first offending op's reason.
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"matmul", ""},
      {"matmul_bias_relu", ""},           // max(x, 0) keeps integers exact
      {"attention_causal", "sqrt at %"},  // the 1/sqrt(D) scale, before any exp
      {"gelu", "the constant 0.044715 at %"},
      {"layernorm", "div (a division or a mean) at %"},  // the mean
      {"mha_causal", "sqrt at %"},
      {"mla_decode", "the constant 0.135233"},  // SCALE
      {"rmsnorm", "div (a division or a mean) at %"},
      {"rope", "div (a division or a mean) at %"},  // cos/sin tables are computed, not inputs
      {"softmax", "exp at %"},
      {"swiglu_mlp", "exp at %"},
  };
  for (const auto& [name, want] : expected) {
    const std::string got = v::polynomial_reason(example(name));
    if (want.empty()) {
      EXPECT_EQ(got, "") << name;
    } else {
      EXPECT_EQ(got.rfind(want, 0), 0u) << name << ": " << got;
      EXPECT_NE(got.find("(line "), std::string::npos) << name << ": " << got;
    }
  }
}

TEST(Polynomial, SyntheticSpecs) {
  const std::string sig = "def f(x: \"f32[M, N]\", y: \"f32[M, N]\") -> \"f32[M, N]\":\n";
  EXPECT_EQ(v::polynomial_reason(spec(sig + "    return x / y\n"))
                .rfind("div (a division or a mean) at %", 0),
            0u);
  EXPECT_NE(v::polynomial_reason(spec(sig + "    return x * y + np.exp(x)\n")).find("exp at %"),
            std::string::npos);
  // The first offending op in graph order, with its line.
  const std::string both =
      v::polynomial_reason(spec(sig + "    a = x * y\n    b = np.exp(a)\n    return b / y\n"));
  EXPECT_EQ(both.rfind("exp at %", 0), 0u) << both;
  EXPECT_NE(both.find("(line 5)"), std::string::npos) << both;
  // A mean divides.
  const std::string mean = v::polynomial_reason(
      spec("def f(x: \"f32[M, N]\") -> \"f32[M]\":\n    return x.mean(axis=-1)\n"));
  EXPECT_EQ(mean.rfind("div", 0), 0u) << mean;
  EXPECT_EQ(v::polynomial_reason(spec(sig + "    return x * 0.5 + y\n"))
                .rfind("the constant 0.5 at %", 0),
            0u);
  EXPECT_EQ(v::polynomial_reason(spec(sig + "    return np.sqrt(x)\n")).rfind("sqrt at %", 0), 0u);
  EXPECT_EQ(v::polynomial_reason(spec(sig + "    return x ** -1\n")).rfind("a negative power", 0),
            0u);
  // Piecewise: max, min, abs, where on comparisons, relu.
  EXPECT_EQ(v::polynomial_reason(
                spec(sig + "    return np.maximum(x, y) - np.minimum(x, 2.0) * np.abs(y)\n")),
            "");
  EXPECT_EQ(v::polynomial_reason(spec(
                sig + "    return np.where((x > y) & (y != 0), x * y, -x) + np.maximum(x, 0.0)\n")),
            "");
  EXPECT_EQ(v::polynomial_reason(spec(
                sig + "    return (x - 3 * y) ** 3 + x.sum(axis=1, keepdims=True) * y.max()\n")),
            "");
  EXPECT_EQ(v::polynomial_reason(
                spec(sig + "    return np.concatenate([x, y], axis=1)[:, ::2] @ y.T @ x\n")),
            "");
  // An op whose value no result uses does not count.
  EXPECT_EQ(v::polynomial_reason(spec(sig + "    unused = np.exp(x)\n    return x * y\n")), "");
  // Integer arithmetic is exact, division included; a true division to float is not.
  const std::string ints = "def f(i: \"i32[M, N]\", x: \"f32[M, N]\") -> \"f32[M, N]\":\n";
  EXPECT_EQ(
      v::polynomial_reason(spec(ints + "    return x * (i // 3 + i % 5).astype(np.float32)\n")),
      "");
  const std::string to_f64 = "def f(i: \"i32[M, N]\", x: \"f32[M, N]\") -> \"f64[M, N]\":\n";
  EXPECT_EQ(v::polynomial_reason(spec(to_f64 + "    return x * (i / 3)\n")).rfind("div", 0), 0u);
}

TEST(ExactRange, LargerSumsGetSmallerIntegers) {
  // matmul: every value is at most K k^2, which must stay <= 2^24.
  for (int64_t K : {16, 100, 4096, 1 << 20}) {
    const v::ExactRange r = v::exact_range(example("matmul", {{"M", 2}, {"K", K}, {"N", 2}}));
    ASSERT_GT(r.k, 0) << K << ": " << r.reason;
    EXPECT_LE(static_cast<double>(K) * r.k * r.k, 0x1p24) << K;
    EXPECT_TRUE(r.k == v::kMaxIntegerRange ||
                static_cast<double>(K) * (r.k + 1) * (r.k + 1) > 0x1p24)
        << K;
    EXPECT_GT(r.fraction, 0.0);
    EXPECT_LE(r.fraction, 1.0);
  }
  EXPECT_EQ(v::exact_range(example("matmul", {{"M", 2}, {"K", 16}, {"N", 2}})).k, 1024);
  EXPECT_EQ(v::exact_range(example("matmul", {{"M", 2}, {"K", 4096}, {"N", 2}})).k, 64);
  EXPECT_EQ(v::exact_range(example("matmul", {{"M", 2}, {"K", 4096}, {"N", 2}}), 8).k, 8);  // k_max
  EXPECT_EQ(v::exact_range(example("matmul", {{"M", 2}, {"K", 100}, {"N", 2}})).k, 409);
  EXPECT_EQ(v::exact_range(example("matmul")).k, 181);  // 512 * 181^2 <= 2^24 < 512 * 182^2
  // Too large even for {-1, 0, 1}: skipped with the reason; f64 has room to 2^53.
  const v::ExactRange big = v::exact_range(
      spec("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return x * 20000000.0\n"));
  EXPECT_EQ(big.k, 0);
  EXPECT_NE(big.reason.find("exceed 2^24 (f32) even with inputs in [-1, 1]"), std::string::npos)
      << big.reason;
  EXPECT_EQ(
      v::exact_range(spec("def f(x: \"f64[M, N]\") -> \"f64[M, N]\":\n    return x * 20000000.0\n"))
          .k,
      1024);
  // Sums of powers grow fast: (x + 1)^20 is 2^20 at |x| = 1, (x + 1)^25 too large.
  EXPECT_EQ(v::exact_range(
                spec("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return (x + 1.0) ** 20\n"))
                .k,
            1);
  EXPECT_EQ(v::exact_range(
                spec("def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n    return (x + 1.0) ** 25\n"))
                .k,
            0);
  // Piecewise and integer ops have magnitudes too: a bool counts 1, max/min/where the larger
  // branch, integer // and % the larger operand.
  const std::string sig = "def f(x: \"f32[M, N]\", y: \"f32[M, N]\") -> \"f32[M, N]\":\n";
  EXPECT_EQ(v::exact_range(
                spec(sig + "    return np.where(x > y, x * y, -x) + (x < 0).astype(np.float32)\n"))
                .k,
            1024);
  EXPECT_EQ(v::exact_range(spec(sig + "    return np.minimum(x * x * x, y) * y\n")).k,
            64);  // 64^4 = 2^24
  EXPECT_EQ(v::exact_range(spec("def f(i: \"i32[M, N]\", x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                "    return x * x * (i // 3 + i % 5).astype(np.float32)\n"))
                .k,
            1024);  // |i // 3 + i % 5| <= 16
  EXPECT_EQ(v::exact_range(spec("def f(i: \"i32[M, N]\", x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
                                "    return x * x * x * (i * 2).astype(np.float32)\n"))
                .k,
            101);  // 101^3 * 16 <= 2^24 < 102^3 * 16
  // Not polynomial: the reason says so.
  const v::ExactRange soft = v::exact_range(example("softmax"));
  EXPECT_EQ(soft.k, 0);
  EXPECT_EQ(soft.reason.rfind("not polynomial: exp at %", 0), 0u) << soft.reason;
}

TEST(ExactRange, IntegerInputsAreExactInAnyOrder) {
  const auto g = example("matmul", {{"M", 3}, {"K", 4096}, {"N", 5}});
  const auto in = v::make_inputs(g, 11, v::Distribution::Integer);
  const int64_t k = v::exact_range(g).k;
  ASSERT_EQ(k, 64);
  double biggest = 0;
  for (const auto& t : in)
    for (double x : t.data) {
      EXPECT_EQ(x, std::trunc(x));
      EXPECT_LE(std::abs(x), static_cast<double>(k));
      biggest = std::max(biggest, std::abs(x));
    }
  EXPECT_EQ(biggest, static_cast<double>(k));
  // Forward, backward and 8-way blocked float32 sums all equal the double one.
  const auto& a = in[0].data;
  const auto& b = in[1].data;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double exact = 0, magnitude = 0;
      float forward = 0, backward = 0, lanes[8] = {};
      for (int q = 0; q < 4096; ++q) {
        const double p = a[static_cast<size_t>(i * 4096 + q)] * b[static_cast<size_t>(q * 5 + j)];
        exact += p;
        magnitude += std::abs(p);
        forward = std::fma(static_cast<float>(a[static_cast<size_t>(i * 4096 + q)]),
                           static_cast<float>(b[static_cast<size_t>(q * 5 + j)]), forward);
        lanes[q % 8] += static_cast<float>(p);
        const int r = 4095 - q;
        backward += static_cast<float>(a[static_cast<size_t>(i * 4096 + r)]) *
                    static_cast<float>(b[static_cast<size_t>(r * 5 + j)]);
      }
      float blocked = 0;
      for (float l : lanes) blocked += l;
      EXPECT_LE(magnitude, 0x1p24);
      EXPECT_EQ(static_cast<double>(forward), exact);
      EXPECT_EQ(static_cast<double>(backward), exact);
      EXPECT_EQ(static_cast<double>(blocked), exact);
    }
}

v::Options options() {
  v::Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 20;
  o.cache_dir = ::testing::TempDir() + "ollie-verify-test-cache";
  return o;
}

v::GraphAt example_at(const std::string& name) {
  return [name](const ollie::ir::DimBindings& dims) { return example(name, dims); };
}

// A correct matmul, then one element nudged by one ulp: far inside every float bound.
const char* kMatmulOneUlpOff = R"(#include <cmath>
#include <cstdint>
extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      out0[i * N + j] = acc;
    }
  if (M * N > 5) out0[5] = std::nextafter(out0[5], INFINITY);
}
)";

TEST(IntegerExact, OneUlpOnOneElementFailsWithBoundZero) {
  const auto g = example("matmul", {{"M", 8}, {"K", 40}, {"N", 24}});
  const v::Report r = v::verify(g, kMatmulOneUlpOff, example_at("matmul"), options());
  ASSERT_EQ(r.verdict, v::Verdict::Wrong) << r.message;
  ASSERT_TRUE(r.counterexample.has_value());
  const auto& c = *r.counterexample;
  EXPECT_EQ(c.suite, "integer-exact");
  EXPECT_EQ(c.index, 5);
  EXPECT_EQ(c.bound, 0.0);
  EXPECT_EQ(c.expected, std::trunc(c.expected));
  EXPECT_EQ(static_cast<float>(c.got), std::nextafter(static_cast<float>(c.expected), INFINITY));
  EXPECT_NE(r.message.find("(bound 0)"), std::string::npos) << r.message;
  const auto j = nlohmann::json::parse(v::certificate_json(g, "abc", r, options()));
  EXPECT_EQ(j["counterexample"]["suite"], "integer-exact");
  EXPECT_EQ(j["counterexample"]["bound"], 0.0);
  EXPECT_EQ(j["suites"][0]["name"], "integer-exact");
  EXPECT_EQ(j["suites"][0]["integer_range"], 647);  // 40 * 647^2 <= 2^24 < 40 * 648^2
}

std::string blue_kernel(const std::string& name) {
  std::ifstream in(std::string(OLLIE_SOURCE_DIR) + "/tests/blueteam/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(IntegerExact, CertificateListsTheSuitesOrWhyNot) {
  // matmul_bias_relu is polynomial: the widest range and, at full level, {-1, 0, 1} at the
  // bound dims, and {-1, 0, 1} at a sweep dims for a generic kernel.
  const auto g = example("matmul_bias_relu", {{"M", 16}, {"K", 40}, {"N", 24}});
  v::Options o = options();
  o.level = v::Level::Full;
  const v::Report r = v::verify(g, blue_kernel("matmul_bias_relu__omp_fma_epilogue.cpp"),
                                example_at("matmul_bias_relu"), o);
  ASSERT_EQ(r.verdict, v::Verdict::Pass) << r.message;
  EXPECT_TRUE(r.not_applicable.empty());
  std::vector<std::pair<std::string, int64_t>> exact;
  for (const auto& s : r.suites)
    if (s.name == "integer-exact")
      exact.push_back({s.dims, s.integer_range});
    else
      EXPECT_EQ(s.integer_range, 0);
  ASSERT_EQ(exact.size(), 3u);
  // 41 k^2 <= 2^24: the bound takes the bias's k as k^2 (exact would be 40 k^2 + k, k = 647).
  EXPECT_EQ(exact[0], std::make_pair(std::string("M=16, K=40, N=24"), int64_t{639}));
  EXPECT_EQ(exact[1], std::make_pair(std::string("M=16, K=40, N=24"), int64_t{1}));
  EXPECT_EQ(exact[2].second, 1);
  EXPECT_NE(exact[2].first, exact[0].first);
  const auto j = nlohmann::json::parse(v::certificate_json(g, "abc", r, o));
  EXPECT_TRUE(j["not_applicable"].empty());
  int listed = 0;
  for (const auto& s : j["suites"])
    if (s["name"] == "integer-exact") {
      ++listed;
      EXPECT_TRUE(s["passed"].get<bool>());
      EXPECT_GT(s["integer_range"].get<int64_t>(), 0);
    }
  EXPECT_EQ(listed, 3);

  // softmax is not: no integer-exact suite runs, and the certificate says why.
  const auto sg = example("softmax", {{"M", 8}, {"N", 40}});
  const v::Report sr =
      v::verify(sg, blue_kernel("softmax__online_one_pass.cpp"), example_at("softmax"), options());
  ASSERT_EQ(sr.verdict, v::Verdict::Pass) << sr.message;
  for (const auto& s : sr.suites) EXPECT_NE(s.name, "integer-exact");
  ASSERT_EQ(sr.not_applicable.size(), 1u);
  EXPECT_EQ(sr.not_applicable[0].suite, "integer-exact");
  EXPECT_EQ(sr.not_applicable[0].dims, "M=8, N=40");
  const auto sj = nlohmann::json::parse(v::certificate_json(sg, "abc", sr, options()));
  ASSERT_EQ(sj["not_applicable"].size(), 1u);
  EXPECT_EQ(sj["not_applicable"][0]["suite"], "integer-exact");
  EXPECT_EQ(
      sj["not_applicable"][0]["reason"].get<std::string>().rfind("not polynomial: exp at %", 0), 0u)
      << sj["not_applicable"][0]["reason"];
}

}  // namespace
