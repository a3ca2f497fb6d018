// End-to-end tests of lowering + emission: every example (at small dims) and every spec
// of the numpy corpus is lowered, emitted, compiled, run in the runner on random inputs
// and compared per element with the reference interpreter's derived bound.
#include "emit/emit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <random>

#include "build/build.h"
#include "interp/interp.h"
#include "loops/loops.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

namespace fs = std::filesystem;
using ollie::interp::Tensor;
using ollie::ir::DType;

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/ollie-emit-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    path = d;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

ollie::build::Driver& driver() {
  static const ScratchDir dir;
  static ollie::build::Driver d(dir.path);
  return d;
}

std::vector<Tensor> random_inputs(const ollie::ir::Graph& g, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> small(-5, 5);
  std::vector<Tensor> inputs;
  for (const auto& p : g.params) {
    Tensor t;
    t.dtype = p.dtype;
    t.shape = ollie::ir::evaluate_shape(p.shape, g.bound_dims);
    t.data.resize(static_cast<size_t>(ollie::ir::element_count(t.shape)));
    for (auto& x : t.data) {
      switch (p.dtype) {
        case DType::F32: x = static_cast<float>(normal(rng)); break;
        case DType::F64: x = normal(rng); break;
        case DType::I32: case DType::I64: x = small(rng); break;
        case DType::Bool: x = small(rng) > 0 ? 1 : 0; break;
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Lowers, emits and builds `g`; returns the shared object (fails the test if it does not compile).
std::string build_kernel(const ollie::ir::Graph& g, std::string* source_out = nullptr) {
  const ollie::loops::Kernel k = ollie::loops::lower(g);
  const std::string source = ollie::emit::emit_kernel(k, g);
  if (source_out) *source_out = ollie::loops::to_text(k) + source;
  ollie::build::Request request;
  request.units = {{g.entry + ".ollie.h", ollie::emit::emit_header(g)},
                   {"kernel.cpp", "#include \"" + g.entry + ".ollie.h\"\n" + source},
                   {"ollie_adapter.cpp", ollie::build::adapter_source(g)}};
  const ollie::build::Result built = driver().compile(request);
  EXPECT_TRUE(built.ok) << built.log << "\n" << source;
  return built.ok ? built.so_path : std::string();
}

// Runs `so_path` on two random input sets at g's bound dims; every output element must be
// within the reference's bound (or the same NaN/Inf).
void run_and_compare(const std::string& so_path, const ollie::ir::Graph& g, const std::string& source) {
  for (unsigned seed : {1u, 2u}) {
    const std::vector<Tensor> inputs = random_inputs(g, seed);
    ollie::runner::Options options;
    options.runner_path = OLLIE_RUNNER;
    options.timeout_seconds = 30;
    options.threads = 2;
    const ollie::runner::Outcome outcome = ollie::runner::run(so_path, g, inputs, options);
    ASSERT_EQ(outcome.status, ollie::runner::Status::Ok) << outcome.message << "\n" << source;
    const ollie::interp::Result ref = ollie::interp::evaluate(g, inputs);
    ASSERT_EQ(outcome.outputs.size(), ref.values.size());
    for (size_t i = 0; i < ref.values.size(); ++i) {
      const auto& got = outcome.outputs[i].data;
      const auto& want = ref.values[i].data;
      const auto& bound = ref.bounds[i].data;
      ASSERT_EQ(got.size(), want.size());
      for (size_t e = 0; e < got.size(); ++e) {
        const bool same_special = !std::isfinite(want[e]) &&
                                  (got[e] == want[e] || (std::isnan(got[e]) && std::isnan(want[e])));
        ASSERT_TRUE(same_special || std::abs(got[e] - want[e]) <= bound[e])
            << g.entry << " out" << i << "[" << e << "] seed " << seed << ": got " << got[e] << ", expected "
            << want[e] << ", bound " << bound[e] << "\n" << source;
      }
    }
  }
}

void check_agrees(const ollie::ir::Graph& g) {
  std::string source;
  const std::string so = build_kernel(g, &source);
  if (!so.empty()) run_and_compare(so, g, source);
}

struct Example {
  const char* name;
  ollie::ir::DimBindings dims;
};

void PrintTo(const Example& e, std::ostream* os) { *os << e.name; }

// The SMALL_DIMS of tests/numpy/cases.py.
const std::vector<Example>& examples() {
  static const std::vector<Example> list = {
      {"matmul", {{"M", 8}, {"K", 16}, {"N", 8}}},
      {"matmul_bias_relu", {{"M", 8}, {"K", 16}, {"N", 8}}},
      {"softmax", {{"M", 4}, {"N", 16}}},
      {"layernorm", {{"T", 4}, {"D", 16}}},
      {"rmsnorm", {{"T", 4}, {"D", 16}}},
      {"gelu", {{"M", 4}, {"N", 16}}},
      {"swiglu_mlp", {{"T", 4}, {"D", 16}, {"F", 32}}},
      {"attention_causal", {{"S", 16}, {"D", 8}}},
      {"mha_causal", {{"S", 8}, {"DM", 16}, {"H", 2}, {"HD", 4}}},
      {"rope", {{"S", 8}, {"H", 2}, {"HD", 8}}},
      {"mla_decode", {{"B", 1}, {"H", 2}, {"S", 16}, {"L", 8}, {"DR", 4}, {"DN", 8}, {"DV", 8}}},
  };
  return list;
}

ollie::ir::Graph load_example(const Example& ex) {
  ollie::spec::SpecOptions options;
  options.dim_overrides = ex.dims;
  return ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + ex.name + ".py", options);
}

class ExampleTest : public ::testing::TestWithParam<Example> {};

TEST_P(ExampleTest, KernelAgreesWithReference) { check_agrees(load_example(GetParam())); }

TEST_P(ExampleTest, DeclarationMatchesBuildDriver) {
  const ollie::ir::Graph g = load_example(GetParam());
  EXPECT_NE(ollie::emit::emit_header(g).find(ollie::emit::kernel_declaration(g)), std::string::npos);
}

// Emitted kernels are generic: one build, run at other (odd, prime) sizes, still agrees.
TEST_P(ExampleTest, GenericAcrossDims) {
  const Example& ex = GetParam();
  const std::string name = ex.name;
  const ollie::ir::Graph built_for = load_example(ex);
  const std::string so = build_kernel(built_for);
  ASSERT_FALSE(so.empty());
  Example other = ex;
  const int64_t primes[] = {3, 5, 7, 11, 13, 1, 2};
  size_t i = 0;
  for (auto& [dim, value] : other.dims) value = name == "mla_decode" && dim == "B" ? 2 : primes[i++ % 7];
  // Their dims are tied: HD even, DM = H*HD.
  if (name == "rope") other.dims = {{"S", 5}, {"H", 3}, {"HD", 6}};
  if (name == "mha_causal") other.dims = {{"S", 5}, {"DM", 6}, {"H", 3}, {"HD", 2}};
  run_and_compare(so, load_example(other), "(built for the small dims)");
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTest, ::testing::ValuesIn(examples()),
                         [](const auto& p) { return std::string(p.param.name); });

std::vector<std::string> corpus_specs() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(std::string(OLLIE_SOURCE_DIR) + "/tests/numpy/specs"))
    if (e.path().extension() == ".py") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class CorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, KernelAgreesWithReference) {
  const ollie::ir::Graph g =
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/tests/numpy/specs/" + GetParam() + ".py", {});
  check_agrees(g);
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusTest, ::testing::ValuesIn(corpus_specs()),
                         [](const auto& p) { return p.param; });

TEST(EmitHeader, MatmulGolden) {
  ollie::spec::SpecOptions options;
  const ollie::ir::Graph g = ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/matmul.py", options);
  EXPECT_EQ(ollie::emit::emit_header(g),
            R"(// Generated by ollie: the kernel ABI of the spec entry `matmul`.
// Tensors are dense, row-major and must not alias; sizes come from `dims`.
#pragma once

#include <cstdint>

// Parameters, in order:
//   a: "f32[M, K]"  (input 0)
//   b: "f32[K, N]"  (input 1)
//   out0: "f32[M, N]"  (result 0)
//   dims: the sizes, in the order below.
extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims);

// dims[i] order and the sizes bound for this run.
namespace ollie_dims {
constexpr int64_t count = 3;
constexpr int64_t M = 256;  // dims[0]
constexpr int64_t K = 512;  // dims[1]
constexpr int64_t N = 256;  // dims[2]
}  // namespace ollie_dims
)");
}

TEST(EmitKernel, ReadableAndParallel) {
  const ollie::ir::Graph g = load_example(examples()[2]);  // softmax
  const std::string src = ollie::emit::emit_kernel(ollie::loops::lower(g), g);
  EXPECT_NE(src.find("`softmax`"), std::string::npos);
  EXPECT_NE(src.find("#pragma omp parallel for\n  for (int64_t m = 0; m < M; ++m) {"), std::string::npos) << src;
  EXPECT_NE(src.find("#pragma omp simd"), std::string::npos) << src;
  EXPECT_NE(src.find("const int64_t M = dims[0];"), std::string::npos) << src;
}

// A keyword parameter name is renamed the way the ABI does, in both kernel and header.
TEST(EmitKernel, KeywordParameterRenamed) {
  const ollie::ir::Graph g = ollie::spec::compile_spec(
      "t.py", "import numpy as np\nDIMS = dict(N=5)\ndef f(new: \"f32[N]\") -> \"f32[N]\":\n    return new * 2.0\n", {});
  check_agrees(g);
}

}  // namespace
