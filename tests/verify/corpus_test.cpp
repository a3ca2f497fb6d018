// The red-team and blue-team corpora (tests/redteam, tests/blueteam) through the
// verifier: every wrong kernel is rejected with a verdict its `// expect:` line allows,
// every correct one passes. Kernels with a `// level: full` line are verified at the
// full level (the sanitizer build), the rest at quick; a wrong one marked so must pass
// quick (only the full level catches it). A red-team kernel that needs a check the verifier
// does not make yet would be listed in kNotYet and skipped with the reason (none is).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "spec/spec.h"
#include "verify/verify.h"

namespace {

namespace fs = std::filesystem;
namespace v = ollie::verify;

std::vector<std::string> corpus() {
  std::vector<std::string> files;
  for (const char* dir : {"tests/redteam", "tests/blueteam"})
    for (const auto& e : fs::directory_iterator(fs::path(OLLIE_SOURCE_DIR) / dir))
      if (e.path().extension() == ".cpp")
        files.push_back(std::string(dir) + "/" + e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

// What the verifier cannot catch yet, and which check would (empty: it catches them all).
const std::map<std::string, std::string> kNotYet = {};

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, VerdictIsTheExpectedOne) {
  const fs::path file = fs::path(OLLIE_SOURCE_DIR) / GetParam();
  const std::string stem = file.stem().string();
  if (auto it = kNotYet.find(stem); it != kNotYet.end()) GTEST_SKIP() << it->second;
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  // The value of a `// name: value` line, or "" when there is none.
  auto header_line = [&](const std::string& name) {
    const std::string key = "// " + name + ":";
    const auto at = source.find(key);
    if (at == std::string::npos) return std::string();
    std::string value = source.substr(at + key.size(), source.find('\n', at) - at - key.size());
    value.erase(0, value.find_first_not_of(' '));
    return value;
  };
  const std::string expect = header_line("expect");
  ASSERT_FALSE(expect.empty()) << file << " has no // expect: line";
  const std::string level = header_line("level");
  ASSERT_TRUE(level.empty() || level == "full" || level == "quick") << file << ": level " << level;
  const std::string example = stem.substr(0, stem.find("__"));
  const std::string spec = std::string(OLLIE_SOURCE_DIR) + "/examples/" + example + ".py";
  const v::GraphAt graph_at = [&](const ollie::ir::DimBindings& dims) {
    ollie::spec::SpecOptions o;
    o.dim_overrides = dims;
    return ollie::spec::load_spec(spec, o);
  };
  v::Options options;
  options.runner_path = OLLIE_RUNNER;
  options.timeout_seconds = 10;
  options.cache_dir = ::testing::TempDir() + "ollie-corpus-test-cache";
  const ollie::ir::Graph graph = ollie::spec::load_spec(spec, {});
  // A wrong kernel marked full is one that only the full level catches: quick passes it
  // (or refuses it up front, when its expected verdicts include refused), unless its
  // expectation allows `wrong`: undefined behaviour that only some dims show.
  if (level == "full" && expect != "pass" && expect.find("wrong") == std::string::npos) {
    const v::Report quick = v::verify(graph, source, graph_at, options);
    const bool refused_up_front =
        quick.verdict == v::Verdict::Refused &&
        ("-or-" + expect + "-or-").find("-or-refused-or-") != std::string::npos;
    if (refused_up_front) return;
    EXPECT_EQ(quick.verdict, v::Verdict::Pass)
        << GetParam() << " is caught at quick already: " << quick.message;
  }
  if (level == "full") options.level = v::Level::Full;
  const v::Report r = v::verify(graph, source, graph_at, options);
  const std::string got = v::verdict_name(r.verdict);
  // A data race shows only when the threads interleave badly; on a loaded machine it may
  // not in any suite (a ThreadSanitizer build would make it certain).
  if (stem == "softmax__racy_parallel_sum" && r.verdict == v::Verdict::Pass)
    GTEST_SKIP() << "the race did not show in this run";
  // "wrong-or-crash": any of the alternatives.
  bool allowed = false;
  for (size_t pos = 0; pos <= expect.size();) {
    size_t next = expect.find("-or-", pos);
    if (next == std::string::npos) next = expect.size();
    allowed = allowed || expect.substr(pos, next - pos) == got;
    pos = next + 4;
  }
  EXPECT_TRUE(allowed) << GetParam() << ": expected " << expect << ", got " << got << ": "
                       << r.message;
}

INSTANTIATE_TEST_SUITE_P(Kernels, Corpus, ::testing::ValuesIn(corpus()), [](const auto& p) {
  std::string name =
      fs::path(p.param).parent_path().filename().string() + "_" + fs::path(p.param).stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

}  // namespace
