// Test support shared by the emit tests: a scratch build cache, random inputs, and the
// check that a compiled kernel, run in the runner, agrees with the reference interpreter
// within its derived bound on every output element.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "build/build.h"
#include "emit/emit.h"
#include "interp/interp.h"
#include "loops/loops.h"
#include "runner/runner.h"
#include "support/half.h"

namespace ollie_test {

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

inline ollie::build::Driver& driver() {
  static const ScratchDir dir;
  static ollie::build::Driver d(dir.path);
  return d;
}

inline std::vector<Tensor> random_inputs(const ollie::ir::Graph& g, unsigned seed) {
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
        case DType::F16: x = ollie_half::round_f16(normal(rng)); break;
        case DType::BF16: x = ollie_half::round_bf16(normal(rng)); break;
        case DType::I32:
        case DType::I64: x = small(rng); break;
        case DType::Bool: x = small(rng) > 0 ? 1 : 0; break;
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Lowers, emits and builds `g`; returns the shared object (fails the test if it does not compile).
inline std::string build_kernel(const ollie::ir::Graph& g, const ollie::loops::Schedule& schedule,
                                std::string* source_out = nullptr) {
  const ollie::loops::Kernel k = ollie::loops::lower(g, schedule);
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

// Emits every kernel (of its own graph) into ONE shared object, built in one compile:
// kernel i is called through the entry "ollie_entry_<i>". Returns the shared object (fails
// the test if it does not compile).
inline std::string build_kernels(
    const std::vector<std::pair<const ollie::ir::Graph*, ollie::loops::Kernel>>& kernels) {
  std::string sources = ollie::emit::kernel_prelude(), adapters;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::string id = std::to_string(i);
    const auto& [g, k] = kernels[i];
    sources += ollie::emit::emit_kernel(
                   k, *g, {.symbol = "ollie_kernel_" + id, .prelude = false, .schedule_text = {}}) +
               "\n";
    adapters += ollie::build::adapter_source(*g, {.kernel = "ollie_kernel_" + id,
                                                  .entry = "ollie_entry_" + id,
                                                  .signature = "ollie_signature_" + id});
  }
  ollie::build::Request request;
  request.units = {{"kernels.cpp", sources}, {"adapters.cpp", adapters}};
  const ollie::build::Result built = driver().compile(request);
  EXPECT_TRUE(built.ok) << built.log.substr(0, 3000);
  return built.ok ? built.so_path : std::string();
}

// Runs `so_path` on two random input sets at g's bound dims; every output element must be
// within the reference's bound (or the same NaN/Inf).
inline void run_and_compare(const std::string& so_path, const ollie::ir::Graph& g,
                            const std::string& source,
                            const std::string& entry_symbol = "ollie_entry",
                            std::vector<unsigned> seeds = {1u, 2u}) {
  for (unsigned seed : seeds) {
    const std::vector<Tensor> inputs = random_inputs(g, seed);
    ollie::runner::Options options;
    options.runner_path = OLLIE_RUNNER;
    options.timeout_seconds = 30;
    options.threads = 2;
    options.entry_symbol = entry_symbol;
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
        const bool same_special =
            !std::isfinite(want[e]) &&
            (got[e] == want[e] || (std::isnan(got[e]) && std::isnan(want[e])));
        ASSERT_TRUE(same_special || std::abs(got[e] - want[e]) <= bound[e])
            << g.entry << " out" << i << "[" << e << "] seed " << seed << ": got " << got[e]
            << ", expected " << want[e] << ", bound " << bound[e] << "\n"
            << source;
      }
    }
  }
}

}  // namespace ollie_test
