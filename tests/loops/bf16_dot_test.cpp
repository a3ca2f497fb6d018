// Tests of the bf16_dot directive (src/loops/bf16_dot.cpp): the call it makes of a
// contraction of two bfloat16 loads (strides, batch loops), the refusals with their
// reasons (a float32 operand, a float32 value rounded to bfloat16, a stage already shaped,
// directives after it), and kernels with it compiled and run against the reference,
// with subnormal, huge and special inputs in some tiles (the range guard's float32 path).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "../emit/kernel_check.h"
#include "loops/loops.h"
#include "spec/spec.h"

namespace {

using namespace ollie::loops;

ollie::ir::Graph spec(const std::string& source) {
  return ollie::spec::compile_spec("test.py", "import ml_dtypes\nimport numpy as np\n" + source,
                                   {});
}

const ollie::ir::Graph& matmul_bf16(int m = 5, int k = 7, int n = 9) {
  static std::map<std::tuple<int, int, int>, ollie::ir::Graph> cache;
  auto it = cache.find({m, k, n});
  if (it != cache.end()) return it->second;
  const std::string dims = "DIMS = dict(M=" + std::to_string(m) + ", K=" + std::to_string(k) +
                           ", N=" + std::to_string(n) + ")\n";
  return cache[{m, k, n}] = spec(dims +
                                 "def f(a: \"bf16[M, K]\", b: \"bf16[K, N]\") -> \"f32[M, N]\":\n"
                                 "    return a.astype(np.float32) @ b.astype(np.float32)\n");
}

std::string reason_of(const ollie::ir::Graph& g, const std::string& schedule) {
  try {
    lower(g, parse_schedule(schedule));
  } catch (const ScheduleError& e) {
    return e.reason();
  }
  return "(accepted)";
}

TEST(Bf16Dot, AContractionOfTwoBf16LoadsBecomesOneCall) {
  const std::string text = to_text(lower(matmul_bf16(), parse_schedule("bf16_dot out0")));
  EXPECT_NE(text.find("call ollie_bf16_dot(&a[0], K, 1, &b[0], N, 1, &out0[0], N, 1, M, N, K)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("for m"), std::string::npos) << text;  // the call is the whole stage
  EXPECT_EQ(to_text(parse_schedule("bf16_dot out0")), "bf16_dot out0\n");
}

TEST(Bf16Dot, ATransposedOperandAndBatchLoopsGiveStridesAndOffsets) {
  // b read transposed (a stride of K along n); the batch loop h runs around the call.
  const auto g = spec(
      "DIMS = dict(H=2, M=3, K=4, N=5)\n"
      "def f(a: \"bf16[H, M, K]\", b: \"bf16[H, N, K]\") -> \"f32[H, M, N]\":\n"
      "    return np.einsum('hmk,hnk->hmn', a.astype(np.float32), b.astype(np.float32))\n");
  const std::string text = to_text(lower(g, parse_schedule("bf16_dot out0")));
  EXPECT_NE(text.find("for h in [0, H):"), std::string::npos) << text;
  EXPECT_NE(text.find("call ollie_bf16_dot(&a[((M * K) * h)], K, 1, &b[((N * K) * h)], 1, K, "
                      "&out0[((M * N) * h)], N, 1, M, N, K)"),
            std::string::npos)
      << text;
}

TEST(Bf16Dot, AFloat32OperandIsRefusedWithItsReason) {
  const auto g = spec(
      "DIMS = dict(M=3, K=4, N=5)\n"
      "def f(a: \"f32[M, K]\", b: \"bf16[K, N]\") -> \"f32[M, N]\":\n"
      "    return a @ b.astype(np.float32)\n");
  EXPECT_EQ(reason_of(g, "bf16_dot out0"),
            "operand 1 of out0's product is a f32 load of a, not a bf16 buffer loaded as such");
}

TEST(Bf16Dot, AFloat32ValueRoundedToBf16IsRefused) {
  const auto g = spec(
      "DIMS = dict(M=3, K=4, N=5)\n"
      "def f(a: \"f32[M, K]\", b: \"bf16[K, N]\") -> \"f32[M, N]\":\n"
      "    return a.astype(ml_dtypes.bfloat16).astype(np.float32) @ b.astype(np.float32)\n");
  const std::string reason = reason_of(g, "bf16_dot out0");
  EXPECT_NE(reason.find("operand 1 of out0's product is a f32 value rounded to bf16"),
            std::string::npos)
      << reason;
}

TEST(Bf16Dot, MlaDecodeScoresOfAFloat32LatentQueryAreRefused) {
  ollie::spec::SpecOptions options;
  options.dim_overrides = {{"B", 1}, {"H", 2}, {"S", 7}, {"L", 5}, {"DR", 4}, {"DN", 3}, {"DV", 5}};
  const auto g = ollie::spec::load_spec(
      std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode_bf16.py", options);
  // q_lat (t9) is float32: its product with c_kv is not a product of two bfloat16 values.
  EXPECT_EQ(reason_of(g, "bf16_dot t10"),
            "operand 1 of t10's product is a f32 load of t9, not a bf16 buffer loaded as such");
  // q_nope @ w_uk and the rope term are bfloat16 x bfloat16.
  EXPECT_EQ(reason_of(g, "bf16_dot t9"), "(accepted)");
  EXPECT_EQ(reason_of(g, "bf16_dot t13"), "(accepted)");
}

TEST(Bf16Dot, OtherStagesAndShapedStagesAreRefused) {
  const auto rowmax = spec(
      "DIMS = dict(M=3, N=5)\n"
      "def f(x: \"bf16[M, N]\") -> \"f32[M]\":\n"
      "    return x.astype(np.float32).max(axis=-1)\n");
  EXPECT_EQ(reason_of(rowmax, "bf16_dot out0"),
            "out0 is a Reduce max, not a contraction (a sum of products)");
  const auto& g = matmul_bf16();
  EXPECT_EQ(reason_of(g, "split out0 m 2; bf16_dot out0"), "the loops of out0 were split");
  EXPECT_EQ(reason_of(g, "parallel out0 m; bf16_dot out0"), "loop m of out0 is parallel");
  EXPECT_EQ(reason_of(g, "bf16_dot out0; parallel out0 m"),
            "out0 is computed by the bf16_dot micro-kernel");
  EXPECT_EQ(reason_of(g, "bf16_dot out0; bf16_dot out0"),
            "out0 is computed by the bf16_dot micro-kernel");
  // A reorder leaves the loops as they were built: the call does not depend on their order.
  EXPECT_EQ(reason_of(g, "reorder out0 n m; bf16_dot out0"), "(accepted)");
}

TEST(Bf16Dot, NothingIsComputedInsideAMicroKernelStage) {
  const auto g = spec(
      "DIMS = dict(M=3, K=4, N=5)\n"
      "def f(a: \"bf16[M, K]\", b: \"bf16[K, N]\", c: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(c)\n"
      "    return e * (a.astype(np.float32) @ b.astype(np.float32)) + e\n");
  EXPECT_EQ(reason_of(g, "bf16_dot t6; compute_at t3 t6 m"),
            "t6 is computed by the bf16_dot micro-kernel; it has no loops to share");
  EXPECT_EQ(reason_of(g, "bf16_dot t6; compute_at t6 out0 m"),
            "t6 is computed by the bf16_dot micro-kernel");
  EXPECT_EQ(reason_of(g, "compute_at t3 t6 m; bf16_dot t6"), "t3 is computed inside t6");
}

TEST(Bf16Dot, TheDefaultScheduleUsesItWhereTheMachineHasAvx512Bf16) {
  const auto& big = matmul_bf16(64, 128, 64);
  Target with{64, 2};
  with.bf16_dot = true;
  const Target without{64, 2};
  EXPECT_EQ(to_text(default_schedule(big, with)), "bf16_dot out0\n");
  EXPECT_EQ(to_text(default_schedule(big, without)).find("bf16_dot"), std::string::npos);
  // Too few rows for one whole tile of the micro-kernel: the register tile stays.
  EXPECT_EQ(to_text(default_schedule(matmul_bf16(4, 128, 64), with)).find("bf16_dot"),
            std::string::npos);
}

TEST(Bf16Dot, TheSearchCanMoveAContractionOntoIt) {
  const auto& g = matmul_bf16(64, 128, 64);
  const Schedule tiled = default_schedule(g, Target{64, 2});
  bool found = false;
  for (uint64_t seed = 1; seed < 200 && !found; ++seed) {
    const auto m = mutate_schedule(g, tiled, seed);
    found = m && m->move == "bf16_dot out0 in place of the directives that shaped it";
    if (found) {
      EXPECT_EQ(to_text(m->schedule), "bf16_dot out0\n");
    }
  }
  EXPECT_TRUE(found);
}

// bfloat16 inputs: normal values (kind 0); scattered subnormals, values out of the guard's
// range, zeros of both signs and an infinity (1); every value scaled by 2^-70, so that every
// product is subnormal in float32, which vdpbf16ps would flush to zero (2).
std::vector<ollie::interp::Tensor> inputs(const ollie::ir::Graph& g, unsigned seed, int kind) {
  auto in = ollie_test::random_inputs(g, seed);
  if (kind == 0) return in;
  if (kind == 2) {
    for (auto& t : in)
      for (auto& x : t.data) x = ollie_half::round_bf16(std::ldexp(x, -70));
    return in;
  }
  std::mt19937_64 rng(seed);
  const double values[] = {1e-39, -3e-40, 0x1p-126, 0x1p-41, 0x1p41, -0.0, 0.0, 1e30};
  for (auto& t : in)
    for (size_t i = 0; i < t.data.size(); i += 1 + rng() % 13)
      t.data[i] = ollie_half::round_bf16(values[rng() % std::size(values)]);
  in[0].data[0] = std::numeric_limits<double>::infinity();
  return in;
}

// a read along its rows (a stride of M along k): the micro-kernel packs its pairs first.
const ollie::ir::Graph& transposed_a() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=19, K=37, N=45)\n"
      "def f(a: \"bf16[K, M]\", b: \"bf16[K, N]\") -> \"f32[M, N]\":\n"
      "    return a.astype(np.float32).T @ b.astype(np.float32)\n");
  return g;
}

TEST(Bf16Dot, KernelsWithTheMicroKernelAgreeWithTheReference) {
  for (const auto& [m, k, n] :
       {std::tuple{5, 7, 9}, {1, 1, 1}, {17, 64, 33}, {40, 131, 70}, {0, 0, 0}}) {
    const auto& g = m ? matmul_bf16(m, k, n) : transposed_a();
    std::string source;
    const std::string so = ollie_test::build_kernel(g, parse_schedule("bf16_dot out0"), &source);
    ASSERT_FALSE(so.empty());
    for (const int special : {0, 1, 2})
      for (unsigned seed : {1u, 2u}) {
        ollie::runner::Options options;
        options.runner_path = OLLIE_RUNNER;
        options.timeout_seconds = 30;
        options.threads = 2;
        const auto in = inputs(g, seed, special);
        const auto out = ollie::runner::run(so, g, in, options);
        ASSERT_EQ(out.status, ollie::runner::Status::Ok) << out.message;
        const auto ref = ollie::interp::evaluate(g, in);
        const auto& got = out.outputs[0].data;
        for (size_t e = 0; e < got.size(); ++e) {
          const double want = ref.values[0].data[e], bound = ref.bounds[0].data[e];
          const bool same_special =
              !std::isfinite(want) && (got[e] == want || (std::isnan(got[e]) && std::isnan(want)));
          ASSERT_TRUE(same_special || std::abs(got[e] - want) <= bound)
              << m << "x" << k << "x" << n << " special " << special << " [" << e << "]: got "
              << got[e] << ", expected " << want << ", bound " << bound;
        }
      }
  }
}

}  // namespace
