// Tolerances tight enough to mean something (issues 16 and 17): for every example, the
// default kernel passes quick verification with every output element bounded (none left
// to the relative floor alone, so the verdict is not weak), and the same kernel with its
// outputs scaled by 1 + 1e-4 (a formula that differs from the spec's by that much) is
// rejected as wrong.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "emit/emit.h"
#include "loops/loops.h"
#include "spec/spec.h"
#include "verify/verify.h"

namespace {

namespace v = ollie::verify;
using ollie::ir::DimBindings;
using ollie::ir::Graph;

v::Options options() {
  v::Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 30;
  o.cache_dir = ::testing::TempDir() + "ollie-verify-test-cache";
  return o;
}

v::GraphAt graph_at(const std::string& path) {
  return [path](const DimBindings& dims) {
    ollie::spec::SpecOptions o;
    o.dim_overrides = dims;
    return ollie::spec::load_spec(path, o);
  };
}

// `kernel` with every output element multiplied by 1 + `scale` after it returns;
// specialized (the sizes are the bound dims'), so no shape sweep runs.
std::string scaled(const std::string& kernel, const Graph& g, double scale) {
  const std::regex signature(R"(extern "C" void ollie_kernel\(([^)]*)\))");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(kernel, m, signature));
  const std::string params = m[1];
  std::vector<std::string> names;
  const std::regex name(R"((\w+)\s*(,|$))");
  for (auto it = std::sregex_iterator(params.begin(), params.end(), name);
       it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  std::string call, body;
  for (const auto& n : names) call += (call.empty() ? "" : ", ") + n;
  for (size_t r = 0; r < g.results.size(); ++r) {
    int64_t count = 1;
    for (const auto& d : g.results[r].shape) count *= d.evaluate(g.bound_dims);
    body += "  for (long i = 0; i < " + std::to_string(count) + "; ++i) " +
            names[g.params.size() + r] + "[i] *= 1.0 + " + std::to_string(scale) + ";\n";
  }
  return "// ollie: specialized\n" +
         std::regex_replace(kernel, std::regex(R"(\bollie_kernel\b)"), "ollie_kernel_unscaled") +
         "\nextern \"C\" void ollie_kernel(" + params + ") {\n  ollie_kernel_unscaled(" + call +
         ");\n" + body + "}\n";
}

class Tolerance : public ::testing::TestWithParam<const char*> {};

TEST_P(Tolerance, DefaultKernelPassesFullyBoundedAndAScaleOf1e4IsWrong) {
  const std::string path = std::string(OLLIE_SOURCE_DIR) + "/examples/" + GetParam() + ".py";
  const v::GraphAt at = graph_at(path);
  const Graph g = at({});
  const std::string kernel =
      ollie::emit::emit_kernel(ollie::loops::lower(g, ollie::loops::default_schedule(g)), g);

  const v::Report honest = v::verify(g, kernel, at, options());
  EXPECT_EQ(honest.verdict, v::Verdict::Pass) << honest.message;
  EXPECT_FALSE(honest.weak);
  ASSERT_EQ(honest.criteria.size(), g.results.size());
  for (const auto& c : honest.criteria) {
    EXPECT_EQ(c.unbounded, 0) << "an element bounded by the relative floor alone";
    EXPECT_GT(c.derived + c.ensemble, 0);
  }

  const v::Report wrong = v::verify(g, scaled(kernel, g, 1e-4), at, options());
  EXPECT_EQ(wrong.verdict, v::Verdict::Wrong) << wrong.message;
}

// At default dims. Left out for the suite's time: gemm (matmul's spec at 1024^3) and
// mla_decode_naive (mla_decode's math, 17 GFLOP per reference call unabsorbed).
INSTANTIATE_TEST_SUITE_P(Examples, Tolerance,
                         ::testing::Values("gelu", "softmax", "rmsnorm", "layernorm", "rope",
                                           "matmul", "matmul_bias_relu", "swiglu_mlp",
                                           "attention_causal", "mha_causal", "mla_decode",
                                           "gpt2_block", "llama_block", "llama_decode",
                                           "attention_prefill", "gqa_decode"));

}  // namespace
