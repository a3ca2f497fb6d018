// Tests of the timed mode's fresh inputs (runner::TimingOptions::fresh_inputs): no call
// (warm-up, warm or timed) sees inputs an earlier call saw, so a kernel keyed by a hash
// of a sample of its inputs never finds a hit (it does without fresh inputs); the log
// rebuilds exactly what each checked call saw; the changed positions differ from call to
// call and really change the values; the checked calls are a random sample.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

using ollie::interp::Tensor;
using ollie::runner::Options;
using ollie::runner::Status;
using ollie::runner::TimingOptions;

std::string build_so(const std::string& name, const std::string& body) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ollie-fresh-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    return std::string(d);
  }();
  static std::map<std::string, std::string> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  const std::string src = dir + "/" + name + ".cpp", so = dir + "/" + name + ".so";
  std::ofstream(src)
      << "#include <cstdint>\n#include <cstring>\n#include <set>\n#include <vector>\n"
      << body;
  const std::string cmd = "g++ -std=c++20 -O2 -shared -fPIC -o '" + so + "' '" + src + "'";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("test kernel failed to compile");
  return built[name] = so;
}

Options options() {
  Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 30;
  return o;
}

constexpr int kN = 256;

ollie::ir::Graph doubling() {
  return ollie::spec::compile_spec(
      "test.py",
      "import numpy as np\nDIMS = dict(N=" + std::to_string(kN) +
          ")\ndef f(x: \"f32[N]\") -> \"f32[N]\":\n    return x * 2.0\n",
      {});
}

std::vector<std::vector<Tensor>> two_sets() {
  std::vector<std::vector<Tensor>> sets(2);
  for (int s = 0; s < 2; ++s) {
    Tensor t;
    t.dtype = ollie::ir::DType::F32;
    t.shape = {kN};
    for (int i = 0; i < kN; ++i) t.data.push_back(s * 1000 + i + 0.5);  // all distinct
    sets[static_cast<size_t>(s)].push_back(t);
  }
  return sets;
}

// out = 2x, except out[0] = calls so far whose input equals an earlier call's, and
// out[1] = calls so far whose hash of 64 sampled elements was seen before (the replay
// attack's key); every call of the process (warm-up, warm and timed) counts.
const char* kWatcher = R"(
static std::vector<std::vector<float>> seen;
static std::set<uint64_t> keys;
static float repeats = 0, hits = 0;
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  const int64_t n = dims[0];
  std::vector<float> now(x, x + n);
  for (const auto& s : seen) repeats += s == now ? 1 : 0;
  seen.push_back(now);
  uint64_t h = 1469598103934665603ull;
  for (int j = 0; j < 64; ++j) {
    uint32_t bits;
    std::memcpy(&bits, x + j * n / 64, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  hits += keys.insert(h).second ? 0 : 1;
  for (int64_t i = 0; i < n; ++i) out[i] = 2 * x[i];
  out[0] = repeats;
  out[1] = hits;
}
)";

TimingOptions all_checked(int rounds) {
  TimingOptions t;
  t.warmup_rounds = 2;
  t.min_rounds = t.max_rounds = rounds;
  t.budget_seconds = 0;
  t.warm_call = true;
  t.fresh_inputs = true;
  t.check_calls = rounds;
  return t;
}

TEST(FreshInputs, NoCallSeesAnEarlierCallsInputsSoASampleHashNeverHits) {
  const auto graph = doubling();
  const std::string so = build_so("watcher", kWatcher);
  // Without fresh inputs the sampled key repeats (two sets, period 2 per kernel).
  TimingOptions plain = all_checked(12);
  plain.fresh_inputs = false;
  const auto old = ollie::runner::time_kernels({{so}}, graph, two_sets(), options(), plain);
  ASSERT_EQ(old.status, Status::Ok) << old.message;
  EXPECT_GT(old.set_outputs[0][0][0].data[1], 10);
  // With them, no repeat and no hit in any call: the last checked call counts them all.
  const auto fresh =
      ollie::runner::time_kernels({{so}}, graph, two_sets(), options(), all_checked(12));
  ASSERT_EQ(fresh.status, Status::Ok) << fresh.message;
  ASSERT_EQ(fresh.checked.size(), 12u);
  EXPECT_TRUE(fresh.set_outputs.empty());
  const auto& last = fresh.checked.back();
  EXPECT_EQ(last.round, 11);
  EXPECT_EQ(last.outputs[0].data[0], 0) << "a call saw an earlier call's inputs";
  EXPECT_EQ(last.outputs[0].data[1], 0) << "a 64-element sample hash repeated";
}

const char* kDoubler = R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* out = static_cast<float*>(b[1]);
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = 2 * x[i];
}
)";

TEST(FreshInputs, TheLogRebuildsEachCallsInputsAndThePointsChangeFromCallToCall) {
  const auto graph = doubling();
  const auto sets = two_sets();
  const auto timed = ollie::runner::time_kernels({{build_so("doubler", kDoubler)}}, graph, sets,
                                                 options(), all_checked(20));
  ASSERT_EQ(timed.status, Status::Ok) << timed.message;
  ASSERT_EQ(timed.checked.size(), 20u);
  std::set<std::vector<double>> distinct;
  for (size_t c = 0; c < timed.checked.size(); ++c) {
    const auto& call = timed.checked[c];
    EXPECT_EQ(call.round, static_cast<int>(c));
    EXPECT_EQ(call.set, static_cast<int>(c % 2));
    const auto& x = call.inputs[0].data;
    // Exactly what the kernel saw: its outputs are twice the rebuilt inputs.
    for (int i = 0; i < kN; ++i) ASSERT_EQ(call.outputs[0].data[i], 2 * x[i]) << "element " << i;
    // Rotated by 1..N-1, and every point really changed (it holds the other set's value).
    ASSERT_GE(call.rotation[0], 1u);
    ASSERT_LT(call.rotation[0], static_cast<uint64_t>(kN));
    ASSERT_EQ(call.points[0].size(), 64u);
    const auto& other = sets[static_cast<size_t>(1 - call.set)][0].data;
    for (uint64_t p : call.points[0]) {
      EXPECT_EQ(x[p], other[p]);
      const double base = sets[static_cast<size_t>(call.set)][0].data[(p + call.rotation[0]) % kN];
      EXPECT_NE(x[p], base) << "point " << p << " did not change";
    }
    distinct.insert(x);
    if (c > 0) {
      const auto& prev = timed.checked[c - 1].points[0];
      EXPECT_NE(std::set<uint64_t>(prev.begin(), prev.end()),
                std::set<uint64_t>(call.points[0].begin(), call.points[0].end()))
          << "calls " << c << " and " << c + 1 << " changed the same positions";
    }
  }
  EXPECT_EQ(distinct.size(), 20u) << "two timed calls saw the same inputs";
}

TEST(FreshInputs, TheCheckedCallsAreARandomSampleChosenAfterTheCalls) {
  const auto graph = doubling();
  TimingOptions t = all_checked(30);
  t.check_calls = 3;
  std::set<int> chosen;
  for (int run = 0; run < 4; ++run) {
    const auto timed = ollie::runner::time_kernels({{build_so("doubler", kDoubler)}}, graph,
                                                   two_sets(), options(), t);
    ASSERT_EQ(timed.status, Status::Ok) << timed.message;
    ASSERT_EQ(timed.checked.size(), 3u);
    for (const auto& call : timed.checked) chosen.insert(call.round);
  }
  // Four runs of 3 from 30: the same 3 rounds (or always the last ones) every time would
  // mean the choice is predictable. P(<= 4 distinct rounds) is far below 1e-6.
  EXPECT_GT(chosen.size(), 4u);
  EXPECT_LT(*chosen.begin(), 27);
}

TEST(FreshInputs, RejectsAnEmptySample) {
  TimingOptions t = all_checked(3);
  t.check_calls = 0;
  EXPECT_ANY_THROW(ollie::runner::time_kernels({{build_so("doubler", kDoubler)}}, doubling(),
                                               two_sets(), options(), t));
}

}  // namespace
