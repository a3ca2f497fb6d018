// Register tiles in the vector form (src/emit/vector_tile.h): emitted for 32- and 64-byte
// vectors, the plain array otherwise; and the kernels of both forms agree bit for bit on
// full and cut tiles (row tiles, one-row tiles, column tiles whose vector axis is not
// innermost in memory, cache-blocked tiles, the examples' default schedules).
#include <gtest/gtest.h>

#include <cstring>

#include "kernel_check.h"
#include "spec/spec.h"

namespace {

using namespace ollie_test;
namespace loops = ollie::loops;
using ollie::ir::Graph;

const char* kMatmul = R"(import numpy as np
DIMS = dict(M=13, K=37, N=40)
def mm(a: "f32[M, K]", b: "f32[K, N]") -> "f32[M, N]":
    return a @ b
)";
// q @ k.T: the output's columns walk k's rows, so a tile along the rows (s) has its vector
// axis strided in the output and in q.
const char* kScores = R"(import numpy as np
DIMS = dict(S=37, T=21, D=19)
def scores(q: "f32[S, D]", k: "f32[T, D]") -> "f32[S, T]":
    return q @ k.T
)";
const char* kMatmul64 = R"(import numpy as np
DIMS = dict(M=7, K=9, N=20)
def mm(a: "f64[M, K]", b: "f64[K, N]") -> "f64[M, N]":
    return a @ b
)";

// 16-bit operands widened to float: b loads along the tile's vectors (ollie_half's
// converting ollie_vload), a broadcasts.
const char* kMatmulBf16 = R"(import numpy as np
import ml_dtypes
DIMS = dict(M=13, K=37, N=40)
def mm(a: "bf16[M, K]", b: "bf16[K, N]") -> "f32[M, N]":
    return a.astype(np.float32) @ b.astype(np.float32)
)";
const char* kMatmulF16 = R"(import numpy as np
DIMS = dict(M=13, K=37, N=40)
def mm(a: "f16[M, K]", b: "f16[K, N]") -> "f32[M, N]":
    return a.astype(np.float32) @ b.astype(np.float32)
)";

const char* kRowTile = R"(split out0 m 6
split out0 n 32
reorder out0 m_o n_o k m_i n_i
accumulate out0 n_o
vectorize out0 n_i
unroll out0 m_i
)";
const char* kOneRow = R"(split out0 n 16
reorder out0 m n_o k n_i
accumulate out0 n_o
vectorize out0 n_i
)";
const char* kBlocked = R"(split out0 k 8
split out0 m 6
split out0 n 32
reorder out0 k_o n_o m_o k_i m_i n_i
pack out0 b n_o
accumulate out0 m_o
vectorize out0 n_i
unroll out0 m_i
)";
const char* kColumn = R"(split out0 s 16
split out0 t 4
reorder out0 t_o s_o d t_i s_i
accumulate out0 s_o
vectorize out0 s_i
unroll out0 t_i
)";
const char* kColumnPacked = R"(pack out0 q root transposed
split out0 s 16
split out0 t 3
reorder out0 t_o s_o d t_i s_i
accumulate out0 s_o
vectorize out0 s_i
unroll out0 t_i
)";

Graph compile(const char* spec) { return ollie::spec::compile_spec("tile.py", spec, {}); }

Graph example(const std::string& name, const ollie::ir::DimBindings& dims) {
  ollie::spec::SpecOptions options;
  options.dim_overrides = dims;
  return ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + name + ".py",
                                options);
}

std::string emit(const Graph& g, const loops::Schedule& schedule, int vector_bytes) {
  ollie::emit::EmitOptions options;
  options.vector_bytes = vector_bytes;
  return ollie::emit::emit_kernel(loops::lower(g, schedule), g, options);
}

// `plain_isa`: built for a plain x86-64 (no F16C, AVX or AVX512_BF16: the conversions'
// integer forms) rather than -march=native.
std::string build(const Graph& g, const std::string& source, bool plain_isa = false) {
  ollie::build::Request request;
  if (plain_isa)
    for (auto& flag : request.toolchain.flags)
      if (flag == "-march=native") flag = "-march=x86-64";
  request.units = {{g.entry + ".ollie.h", ollie::emit::emit_header(g)},
                   {"kernel.cpp", "#include \"" + g.entry + ".ollie.h\"\n" + source},
                   {"ollie_adapter.cpp", ollie::build::adapter_source(g)}};
  const ollie::build::Result built = driver().compile(request);
  EXPECT_TRUE(built.ok) << built.log << "\n" << source;
  return built.ok ? built.so_path : std::string();
}

std::vector<Tensor> run(const std::string& so, const Graph& g, const std::vector<Tensor>& in) {
  ollie::runner::Options options;
  options.runner_path = OLLIE_RUNNER;
  options.timeout_seconds = 60;
  options.threads = 2;
  const ollie::runner::Outcome out = ollie::runner::run(so, g, in, options);
  EXPECT_EQ(out.status, ollie::runner::Status::Ok) << out.message;
  return out.outputs;
}

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The vector form (64-byte and 32-byte vectors) against the plain form: the same bits in
// every output element, and within the reference's bound.
void check_forms(const Graph& g, const loops::Schedule& schedule, const std::string& must_see,
                 const std::vector<int>& widths = {64, 32}) {
  const std::string plain = emit(g, schedule, 16);
  ASSERT_EQ(plain.find("_acc_v0"), std::string::npos) << plain;
  const std::string plain_so = build(g, plain);
  ASSERT_FALSE(plain_so.empty());
  for (const int bytes : widths) {
    SCOPED_TRACE(std::to_string(bytes) + "-byte vectors");
    const std::string source = emit(g, schedule, bytes);
    ASSERT_NE(source.find(must_see), std::string::npos) << source;
    ASSERT_NE(source.find("_acc_v0"), std::string::npos) << "no vector tile\n" << source;
    const std::string so = build(g, source);
    ASSERT_FALSE(so.empty());
    for (const unsigned seed : {3u, 4u}) {
      const std::vector<Tensor> inputs = random_inputs(g, seed);
      const auto got = run(so, g, inputs), want = run(plain_so, g, inputs);
      const ollie::interp::Result ref = ollie::interp::evaluate(g, inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o)
        for (size_t e = 0; e < got[o].data.size(); ++e) {
          ASSERT_TRUE(same_bits(got[o].data[e], want[o].data[e]))
              << "out" << o << "[" << e << "]: " << got[o].data[e] << " vector, " << want[o].data[e]
              << " plain\n"
              << source;
          ASSERT_LE(std::abs(got[o].data[e] - ref.values[o].data[e]), ref.bounds[o].data[e]);
        }
    }
  }
}

TEST(VectorTile, FormFollowsTheTarget) {
  const Graph g = compile(kMatmul);
  const loops::Schedule s = loops::parse_schedule(kRowTile);
  const std::string avx512 = emit(g, s, 64), avx2 = emit(g, s, 32), sse = emit(g, s, 16);
  EXPECT_NE(avx512.find("ollie_f32x16 out0_acc_v11 = {};"), std::string::npos) << avx512;
  EXPECT_EQ(avx512.find("out0_acc_v12 "), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("ollie_vload<ollie_f32x16>(&b["), std::string::npos) << avx512;
  // The cut tile keeps the plain array.
  EXPECT_NE(avx512.find("float out0_acc[192]"), std::string::npos) << avx512;
  // 24 vectors of 8 floats: more than AVX2's 16 registers hold.
  EXPECT_EQ(avx2.find("out0_acc_v0"), std::string::npos) << avx2;
  const std::string avx2_row = emit(g, loops::parse_schedule(kOneRow), 32);
  EXPECT_NE(avx2_row.find("ollie_f32x8 out0_acc_v1 = {};"), std::string::npos) << avx2_row;
  EXPECT_EQ(sse.find("out0_acc_v0"), std::string::npos) << sse;
  EXPECT_NE(sse.find("float out0_acc[192]"), std::string::npos) << sse;
}

TEST(VectorTile, TooManyVectorsStayPlain) {
  const Graph g = compile(kMatmul);
  // 12 rows x 3 vectors = 36 accumulators: more than the 32 registers.
  const std::string s = emit(g, loops::parse_schedule(R"(split out0 m 12
split out0 n 48
reorder out0 m_o n_o k m_i n_i
accumulate out0 n_o
vectorize out0 n_i
unroll out0 m_i
)"),
                             64);
  EXPECT_EQ(s.find("out0_acc_v0"), std::string::npos) << s;
}

TEST(VectorTile, RowTileAgreesBitForBit) {
  check_forms(compile(kMatmul), loops::parse_schedule(kRowTile), "out0_acc_v11", {64});
}
TEST(VectorTile, OneRowTileAgreesBitForBit) {
  check_forms(compile(kMatmul), loops::parse_schedule(kOneRow), "k_u3_");
}
TEST(VectorTile, CacheBlockedTileAgreesBitForBit) {
  // The tile starts from the partial sums of the previous block (vector loads of out0).
  check_forms(compile(kMatmul), loops::parse_schedule(kBlocked), "ollie_vload<ollie_f32x", {64});
}
TEST(VectorTile, ColumnTileAgreesBitForBit) {
  // q gathered along its rows, the output stored lane by lane.
  check_forms(compile(kScores), loops::parse_schedule(kColumn), "_acc_v3[7]");
}
TEST(VectorTile, PackedColumnTileAgreesBitForBit) {
  check_forms(compile(kScores), loops::parse_schedule(kColumnPacked), "ollie_vload");
}
TEST(VectorTile, DoubleTileAgreesBitForBit) {
  check_forms(compile(kMatmul64), loops::parse_schedule(kOneRow), "ollie_f64x");
}
TEST(VectorTile, SixteenBitOperandsConvertAsTheyLoad) {
  for (const char* spec : {kMatmulBf16, kMatmulF16}) {
    const Graph g = compile(spec);
    SCOPED_TRACE(ollie::ir::dtype_name(g.params[0].dtype));
    check_forms(g, loops::parse_schedule(kRowTile), "ollie_vload<ollie_f32x16>(&b[", {64});
    if (::testing::Test::HasFatalFailure()) return;
    if (g.params[0].dtype == ollie::ir::DType::BF16) {  // (8 lanes: bfloat16 only, to save builds)
      check_forms(g, loops::parse_schedule(kOneRow), "ollie_vload<ollie_f32x8>(&b[", {32});
      if (::testing::Test::HasFatalFailure()) return;
    }
    // The same vector form built without the machine's conversion instructions.
    const std::string source = emit(g, loops::parse_schedule(kRowTile), 64);
    const std::string native = build(g, source), plain = build(g, source, true);
    ASSERT_FALSE(native.empty() || plain.empty());
    const std::vector<Tensor> inputs = random_inputs(g, 5);
    const auto got = run(plain, g, inputs), want = run(native, g, inputs);
    for (size_t e = 0; e < want[0].data.size(); ++e)
      ASSERT_TRUE(same_bits(got[0].data[e], want[0].data[e])) << "out0[" << e << "]";
  }
}

TEST(VectorTile, ExampleDefaultsAgreeBitForBit) {
  const loops::Target avx512{64, 2};
  for (const auto& [name, dims] : std::vector<std::pair<std::string, ollie::ir::DimBindings>>{
           {"matmul", {{"M", 64}, {"K", 64}, {"N", 80}}},
           {"attention_causal", {{"S", 37}, {"D", 32}}},
           {"mla_decode",
            // (split-K, its partial sums register-tiled, from S = 1024 on)
            {{"B", 1}, {"H", 16}, {"S", 1100}, {"L", 64}, {"DR", 16}, {"DN", 16}, {"DV", 16}}}}) {
    SCOPED_TRACE(name);
    const Graph g = example(name, dims);
    check_forms(g, loops::default_schedule(g, avx512), "_acc_v0", {64});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
