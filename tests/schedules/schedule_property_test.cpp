// Property test of schedules: for every example, many random legal schedules (seeded)
// lower, emit, compile and agree with the reference; every random directive that was
// rejected is rejected again, with the same reason, by lower(). The kernels of one
// example go into a few shared objects (one compile per 40 kernels), each run in the
// runner by its own entry symbol; schedules whose kernels have the same source share one
// compiled kernel (each still runs on its own inputs). OLLIE_SCHEDULES (default 128) and
// OLLIE_SCHEDULE_SEED (default 1) set the count and the seed; a failure prints both and
// the schedule text. Flash- and online-rewritten softmax, attention and MLA graphs too,
// with a quarter of the count (their kernels are several times larger); mla_decode and
// rope, the slowest to compile, and embedding (a gather before a layernorm), with half.
// matmul_bf16 and mla_decode_bf16 (half the count) draw the bf16_dot directive too.
// Compiled at -O2 (property_toolchain).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "../emit/kernel_check.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"

namespace {

using namespace ollie_test;
namespace loops = ollie::loops;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

struct Case {
  const char* name;
  ollie::ir::DimBindings dims;
  const char* rewrites = "";    // a rewrite chain (docs/rewrites.md) applied first
  const char* label = nullptr;  // the test's name when not the example's
  int share = 1;                // runs OLLIE_SCHEDULES / share schedules
};

void PrintTo(const Case& c, std::ostream* os) { *os << (c.label ? c.label : c.name); }

// Small dims, odd where the spec allows, so that split factors leave tails.
const std::vector<Case>& cases() {
  static const std::vector<Case> list = {
      {"matmul", {{"M", 5}, {"K", 7}, {"N", 9}}},
      {"matmul_bias_relu", {{"M", 5}, {"K", 7}, {"N", 9}}},
      // bfloat16 operands: a quarter of the schedules start with the bf16_dot micro-kernel.
      {"matmul_bf16", {{"M", 5}, {"K", 7}, {"N", 9}}},
      {"mla_decode_bf16",
       {{"B", 2}, {"H", 3}, {"S", 7}, {"L", 5}, {"DR", 4}, {"DN", 3}, {"DV", 5}},
       "",
       nullptr,
       2},
      {"softmax", {{"M", 3}, {"N", 19}}},
      {"layernorm", {{"T", 3}, {"D", 19}}},
      {"rmsnorm", {{"T", 3}, {"D", 19}}},
      {"gelu", {{"M", 3}, {"N", 17}}},
      {"swiglu_mlp", {{"T", 3}, {"D", 7}, {"F", 11}}},
      {"attention_causal", {{"S", 9}, {"D", 5}}},
      {"mha_causal", {{"S", 5}, {"DM", 6}, {"H", 3}, {"HD", 2}}},
      {"rope", {{"S", 5}, {"H", 3}, {"HD", 6}}, "", nullptr, 2},
      // A gather fused into a layernorm: ids drawn in [-5, 5] reach V - 1 and wrap.
      {"embedding", {{"T", 5}, {"V", 6}, {"D", 19}, {"P", 7}}, "", nullptr, 2},
      {"mla_decode",
       {{"B", 2}, {"H", 3}, {"S", 7}, {"L", 5}, {"DR", 4}, {"DN", 3}, {"DV", 5}},
       "",
       nullptr,
       2},
      // Flash-rewritten graphs (examples/schedules/NAME.flash.rewrites): block loops, empty
      // or short tails, statistics combined over blocks.
      {"softmax", {{"M", 3}, {"N", 150}}, "flash %9 64\n", "softmax_flash", 4},
      {"attention_causal",
       {{"S", 150}, {"D", 5}},
       "normalize-late %36 lhs\nflash %38 64\n",
       "attention_causal_flash",
       4},
      {"mla_decode",
       {{"B", 2}, {"H", 3}, {"S", 530}, {"L", 5}, {"DR", 4}, {"DN", 3}, {"DV", 5}},
       "exp2 %18\nnormalize-late %23 lhs\nflash %25 256\n",
       "mla_decode_flash",
       4},
      // Online-rewritten attention (examples/schedules/NAME.online.rewrites): exp-weighted
      // sums with a running max, per element or with the step's weights hoisted.
      {"attention_causal",
       {{"S", 40}, {"D", 5}},
       "normalize-late %36 lhs\nonline %38\n",
       "attention_causal_online",
       4},
      {"mla_decode",
       {{"B", 2}, {"H", 3}, {"S", 37}, {"L", 5}, {"DR", 4}, {"DN", 3}, {"DV", 5}},
       "exp2 %18\nnormalize-late %23 lhs\nonline %25\n",
       "mla_decode_online",
       4},
  };
  return list;
}

// The search's flags at -O2 instead of -O3: a third less compile time (these compiles are
// most of the test suite's time), and what this test checks (what a schedule computes)
// does not depend on it: `omp simd` loops are still vectorized, with their reductions
// reassociated as at -O3, and the register tiles are explicit vector code at any level.
ollie::build::Toolchain property_toolchain() {
  ollie::build::Toolchain t;
  std::replace(t.flags.begin(), t.flags.end(), std::string("-O3"), std::string("-O2"));
  return t;
}

class SchedulePropertyTest : public ::testing::TestWithParam<Case> {};

TEST_P(SchedulePropertyTest, RandomLegalSchedulesAgreeAndIllegalOnesAreRejected) {
  const Case& c = GetParam();
  ollie::spec::SpecOptions options;
  options.dim_overrides = c.dims;
  const ollie::ir::Graph g = ollie::rewrite::replay(
      ollie::spec::load_spec(std::string(OLLIE_SOURCE_DIR) + "/examples/" + c.name + ".py",
                             options),
      c.rewrites);
  const int count = std::max(1, env_int("OLLIE_SCHEDULES", 128) / c.share);
  const uint64_t seed = static_cast<uint64_t>(env_int("OLLIE_SCHEDULE_SEED", 1));
  const loops::Target target{64, 2};
  // A graph with 16-bit floats needs their conversions (and the bf16_dot micro-kernel).
  const bool half = std::any_of(g.nodes.begin(), g.nodes.end(), [](const auto& n) {
    return n.dtype == ollie::ir::DType::BF16 || n.dtype == ollie::ir::DType::F16;
  });

  std::vector<loops::Schedule> schedules;
  std::vector<loops::RejectedDirective> rejected;
  std::set<std::string> distinct;
  // Kernels go into chunks of kChunk per shared object: one compile each, short enough
  // for the build driver's per-compile time limit even on a loaded machine.
  constexpr int kChunk = 40;
  std::vector<std::string> kernels, adapters;
  // Schedules whose kernels come out as the same source (the same schedule drawn twice,
  // or directives without effect on the loops) share one compiled kernel: the compiler is
  // deterministic, so compiling the text again would check nothing more. Every schedule
  // still runs, on its own inputs.
  std::map<std::string, int> kernel_of_source;
  std::vector<int> kernel_of;
  for (int i = 0; i < count; ++i) {
    const uint64_t s = seed * 1000003 + static_cast<uint64_t>(i);
    const loops::Schedule sched = loops::random_schedule(g, s, 8, &rejected, target);
    schedules.push_back(sched);
    distinct.insert(loops::to_text(sched));
    loops::Kernel k;
    try {
      k = loops::lower(g, sched);
    } catch (const std::exception& e) {
      FAIL() << c.name << " seed " << s
             << ": a schedule random_schedule accepted does not lower: " << e.what() << "\n"
             << loops::to_text(sched);
    }
    const auto [known, fresh] = kernel_of_source.emplace(
        ollie::emit::emit_kernel(k, g,
                                 {.symbol = "ollie_kernel", .prelude = false, .schedule_text = {}}),
        static_cast<int>(kernel_of_source.size()));
    kernel_of.push_back(known->second);
    if (!fresh) continue;
    const int id_number = known->second;
    if (id_number % kChunk == 0) {
      kernels.push_back(ollie::emit::kernel_prelude(half));
      adapters.emplace_back();
    }
    const std::string id = std::to_string(id_number);
    kernels.back() +=
        "// schedule " + std::to_string(i) + " (seed " + std::to_string(s) + ")\n" +
        ollie::emit::emit_kernel(
            k, g, {.symbol = "ollie_kernel_" + id, .prelude = false, .schedule_text = {}}) +
        "\n";
    adapters.back() += ollie::build::adapter_source(g, {.kernel = "ollie_kernel_" + id,
                                                        .entry = "ollie_entry_" + id,
                                                        .signature = "ollie_signature_" + id});
  }
  // The random moves must explore: many different schedules, and some rejections.
  EXPECT_GT(distinct.size(), static_cast<size_t>(count) / 2) << c.name;
  EXPECT_FALSE(rejected.empty()) << c.name;
  if (std::string(c.name) == "matmul_bf16") {  // its contraction takes bf16_dot sometimes
    EXPECT_TRUE(std::any_of(distinct.begin(), distinct.end(), [](const std::string& t) {
      return t.find("bf16_dot out0") != std::string::npos;
    }));
  }

  std::vector<std::string> so_paths;
  for (size_t chunk = 0; chunk < kernels.size(); ++chunk) {
    ollie::build::Request request;
    request.units = {{"kernels.cpp", kernels[chunk]}, {"adapters.cpp", adapters[chunk]}};
    request.toolchain = property_toolchain();
    const ollie::build::Result built = driver().compile(request);
    if (!built.ok) {
      std::string culprits;
      for (int i = 0; i < count; ++i)
        if (built.log.find("ollie_kernel_" + std::to_string(kernel_of[static_cast<size_t>(i)]) +
                           "(") != std::string::npos)
          culprits += "schedule " + std::to_string(i) + " (seed " +
                      std::to_string(seed * 1000003 + static_cast<uint64_t>(i)) + "):\n" +
                      loops::to_text(schedules[static_cast<size_t>(i)]);
      FAIL() << c.name << ": the kernels do not compile\n" << culprits << built.log.substr(0, 3000);
    }
    so_paths.push_back(built.so_path);
  }
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE(std::string(c.name) + " seed " +
                 std::to_string(seed * 1000003 + static_cast<uint64_t>(i)) + ", schedule:\n" +
                 loops::to_text(schedules[static_cast<size_t>(i)]));
    const int kernel = kernel_of[static_cast<size_t>(i)];
    run_and_compare(so_paths[static_cast<size_t>(kernel / kChunk)], g, "",
                    "ollie_entry_" + std::to_string(kernel), {static_cast<unsigned>(i) + 1});
    if (::testing::Test::HasFatalFailure()) return;
  }

  // Every rejected move is rejected by lower() too, with the same reason, which names
  // the stage or a loop.
  for (const auto& r : rejected) {
    loops::Schedule s = r.prefix;
    s.directives.push_back(r.directive);
    const std::string text = loops::to_text(s);
    EXPECT_FALSE(r.reason.empty()) << text;
    try {
      loops::lower(g, s);
      ADD_FAILURE() << c.name << ": a rejected directive was accepted by lower():\n" << text;
    } catch (const loops::ScheduleError& e) {
      EXPECT_EQ(e.reason(), r.reason) << text;
      bool names_something = e.reason().find(r.directive.stage) != std::string::npos;
      for (const auto& a : r.directive.args)
        names_something = names_something || e.reason().find(a) != std::string::npos;
      EXPECT_TRUE(names_something) << e.reason() << "\n" << text;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, SchedulePropertyTest, ::testing::ValuesIn(cases()),
                         [](const auto& p) {
                           return std::string(p.param.label ? p.param.label : p.param.name);
                         });

}  // namespace
