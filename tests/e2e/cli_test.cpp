// End-to-end tests that drive the `ollie` binary: golden `check` output for every
// example, `eval` files, the command line's errors and exit codes, and `ollie optimize`
// (with the llm proposer against the loopback test server of tests/llm).
// Set OLLIE_UPDATE_GOLDEN=1 to rewrite tests/golden/*.txt from the current output.
#include <gtest/gtest.h>

#include "e2e_util.h"

#include <regex>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "../llm/fake_model_server.h"
#include "npy/npy.h"
#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

CommandResult ollie_with_env(const std::string& env, const std::string& args) {
  return shell(env + (env.empty() ? "" : " ") + std::string(OLLIE_BINARY) + " " + args + " 2>&1");
}

CommandResult ollie(const std::string& args) { return ollie_with_env("", args); }

fs::path source_dir() { return fs::path(OLLIE_SOURCE_DIR); }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("ollie_e2e_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::vector<std::string> example_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(source_dir() / "examples"))
    if (e.path().extension() == ".py") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// `ollie verify`'s pass line: "all N suites agree with the reference", with at least the
// ten suites a generic kernel gets at quick besides its shape-sweep draws.
bool all_suites_agree(const std::string& out) {
  std::smatch m;
  static const std::regex line("all ([0-9]+) suites agree");
  return std::regex_search(out, m, line) && std::stoi(m[1]) >= 10;
}

TEST(Cli, EveryExampleMatchesItsGoldenCheckOutput) {
  auto names = example_names();
  ASSERT_GE(names.size(), 11u);
  bool update = std::getenv("OLLIE_UPDATE_GOLDEN") != nullptr;
  for (const auto& name : names) {
    CommandResult r = ollie("check " + (source_dir() / "examples" / (name + ".py")).string());
    ASSERT_EQ(r.exit_code, 0) << name << ":\n" << r.out;
    // Paths differ between checkouts; the golden text has none.
    fs::path golden = source_dir() / "tests" / "golden" / (name + ".txt");
    if (update) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << r.out;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << "missing " << golden << " (run with OLLIE_UPDATE_GOLDEN=1)";
    EXPECT_EQ(r.out, read_file(golden))
        << "golden mismatch for " << name
        << " (if the change is intended, rerun with OLLIE_UPDATE_GOLDEN=1)";
  }
}

TEST(Cli, CheckReportsCostOfMatmul) {
  CommandResult r =
      ollie("check " + (source_dir() / "examples/matmul.py").string() + " --dims M=4,K=8,N=2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("flops             128\n"), std::string::npos) << r.out;
  // (4*8 + 8*2 + 4*2) floats of 4 bytes.
  EXPECT_NE(r.out.find("compulsory bytes  224 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dims M=4 K=8 N=2"), std::string::npos) << r.out;
}

TEST(Cli, EvalWritesValuesAndBoundsAndSaysTheSeed) {
  fs::path dir = temp_dir();
  std::string spec = (source_dir() / "examples/matmul.py").string();
  fs::path out = dir / "out.npz", in = dir / "in.npz";
  CommandResult r = ollie("eval " + spec + " --dims M=3,K=5,N=2 --seed 42 --out " + out.string() +
                          " --save-inputs " + in.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("seed 42"), std::string::npos) << r.out;
  auto outputs = ollie::npy::read_npz(out.string());
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].first, "out0");
  EXPECT_EQ(outputs[1].first, "out0_bound");
  EXPECT_EQ(outputs[0].second.shape, (std::vector<int64_t>{3, 2}));

  // The saved inputs reproduce the result exactly, and the product is a real matmul.
  auto inputs = ollie::npy::read_npz(in.string());
  ASSERT_EQ(inputs.size(), 2u);
  const auto& a = inputs[0].second.data;
  const auto& b = inputs[1].second.data;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 5; ++k)
        s += a[static_cast<size_t>(i * 5 + k)] * b[static_cast<size_t>(k * 2 + j)];
      EXPECT_NEAR(outputs[0].second.data[static_cast<size_t>(i * 2 + j)], s,
                  1e-12 * (1 + std::abs(s)));
      EXPECT_GT(outputs[1].second.data[static_cast<size_t>(i * 2 + j)], 0.0);
    }
  fs::path out2 = dir / "out2.npz";
  CommandResult again = ollie("eval " + spec + " --dims M=3,K=5,N=2 --inputs " + in.string() +
                              " --out " + out2.string());
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(ollie::npy::read_npz(out2.string())[0].second.data, outputs[0].second.data);

  // Same seed, same inputs; different seed, different inputs.
  fs::path in3 = dir / "in3.npz";
  ASSERT_EQ(ollie("eval " + spec + " --dims M=3,K=5,N=2 --seed 42 --save-inputs " + in3.string())
                .exit_code,
            0);
  EXPECT_EQ(ollie::npy::read_npz(in3.string())[0].second.data, a);
  ASSERT_EQ(ollie("eval " + spec + " --dims M=3,K=5,N=2 --seed 43 --save-inputs " + in3.string())
                .exit_code,
            0);
  EXPECT_NE(ollie::npy::read_npz(in3.string())[0].second.data, a);
  fs::remove_all(dir);
}

TEST(Cli, EvalReadsAndWritesNpyForOneArray) {
  fs::path dir = temp_dir();
  std::string softmax = (source_dir() / "examples/softmax.py").string();
  fs::path in = dir / "x.npy", out = dir / "o.npy", out_npz = dir / "o.npz";
  CommandResult r = ollie("eval " + softmax + " --dims M=3,N=5 --seed 9 --save-inputs " +
                          in.string() + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto values = ollie::npy::read_npy(out.string());
  auto bounds = ollie::npy::read_npy((dir / "o_bound.npy").string());
  EXPECT_EQ(values.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(bounds.shape, values.shape);
  double row = 0;
  for (int j = 0; j < 5; ++j) row += values.data[static_cast<size_t>(j)];
  EXPECT_NEAR(row, 1.0, 1e-12);  // a softmax row sums to one
  CommandResult again = ollie("eval " + softmax + " --dims M=3,N=5 --inputs " + in.string() +
                              " --out " + out_npz.string());
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(ollie::npy::read_npz(out_npz.string())[0].second.data, values.data);

  // An .npy holds one array: a two-parameter entry needs an .npz, and says so.
  std::string matmul = (source_dir() / "examples/matmul.py").string();
  CommandResult two = ollie("eval " + matmul + " --dims M=3,K=5,N=2 --inputs " + in.string());
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.out.find("pass an .npz with one array per parameter name"), std::string::npos)
      << two.out;
  fs::remove_all(dir);
}

// Issue 17: a check that cannot run in the user's environment is the environment's
// failure, not the kernel's. Under `ulimit -v` AddressSanitizer cannot reserve its shadow
// memory: the full level still passes an honest kernel, says the sanitizer suites did not
// run and why, and the certificate lists them under not_run.
TEST(Cli, SanitizerSuitesThatCannotRunUnderUlimitAreListedNotBlamedOnTheKernel) {
  const fs::path dir = temp_dir() / "ulimit";
  fs::create_directories(dir);
  const std::string spec = (source_dir() / "examples/rmsnorm.py").string();
  ASSERT_EQ(ollie("emit " + spec + " --dims T=8,D=64 -o " + dir.string()).exit_code, 0);
  const std::string cert = (dir / "cert.json").string();
  const CommandResult r = shell("ulimit -v 16000000 && " + std::string(OLLIE_BINARY) + " verify " +
                                spec + " " + (dir / "rmsnorm.cpp").string() +
                                " --dims T=8,D=64 --level full --cert " + cert + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("NOT RUN in this environment"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ulimit -v"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file(cert));
  EXPECT_EQ(j["verdict"], "pass");
  ASSERT_EQ(j["not_run"].size(), 1u);
  EXPECT_EQ(j["not_run"][0]["suite"], "sanitizer");
}

// Issue 17: realistic inputs from the user (`verify --inputs`, as `eval --inputs`) are one
// more suite. A kernel wrong only where x[0] is exactly 42 passes on random inputs and is
// wrong on inputs that hold it.
TEST(Cli, VerifyChecksTheUsersOwnInputs) {
  const fs::path dir = temp_dir() / "user_inputs";
  fs::create_directories(dir);
  const std::string spec = (source_dir() / "examples/rmsnorm.py").string();
  const fs::path kernel = dir / "k.cpp";
  std::ofstream(kernel) << R"(// ollie: specialized
#include <cmath>
#include <cstdint>
extern "C" void ollie_kernel(const float* x, const float* w, float* out, const int64_t* dims) {
  const int64_t t = dims[0], d = dims[1];
  for (int64_t i = 0; i < t; ++i) {
    float ss = 0.0f;
    for (int64_t j = 0; j < d; ++j) ss += x[i * d + j] * x[i * d + j];
    const float r = 1.0f / std::sqrt(ss / d + 1e-6f);
    for (int64_t j = 0; j < d; ++j) out[i * d + j] = x[i * d + j] * r * w[j];
  }
  if (x[0] == 42.0f) out[0] = 0.0f;
}
)";
  const std::string dims = " --dims T=4,D=64";
  const fs::path inputs = dir / "in.npz";
  ASSERT_EQ(ollie("eval " + spec + dims + " --seed 1 --save-inputs " + inputs.string()).exit_code,
            0);
  const CommandResult plain = ollie("verify " + spec + " " + kernel.string() + dims);
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  // The same inputs with x[0] = 42 (rewritten with ollie's own .npz reader and writer).
  ollie::npy::ArrayList arrays = ollie::npy::read_npz(inputs.string());
  for (auto& [name, array] : arrays)
    if (name == "x") array.data[0] = 42.0;
  ollie::npy::write_npz(inputs.string(), arrays);
  const CommandResult user =
      ollie("verify " + spec + " " + kernel.string() + dims + " --inputs " + inputs.string());
  EXPECT_EQ(user.exit_code, 4) << user.out;
  EXPECT_NE(user.out.find("user-inputs suite"), std::string::npos) << user.out;
  const CommandResult missing = ollie("verify " + spec + " " + kernel.string() + dims +
                                      " --inputs " + (dir / "no.npz").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("--inputs"), std::string::npos) << missing.out;
}

// Issue 17: a pass resting on the relative floor alone is its own verdict. log(exp(x + 100))
// overflows float32 everywhere (the members of the honest ensemble too), so no element
// has a finite tolerance: verify says weak (exit 4) unless --accept-weak, and a search
// refuses to start on it with what to do, or runs with --accept-weak.
TEST(Cli, WeakVerdictIsNotAPassUnlessAccepted) {
  const fs::path dir = temp_dir() / "weak";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path spec = dir / "logexp.py";
  std::ofstream(spec) << "import numpy as np\n\nDIMS = dict(N=256)\n\n\n"
                         "def logexp(x: \"f32[N]\") -> \"f32[N]\":\n"
                         "    return np.log(np.exp(x + 100.0))\n";
  const fs::path kernel = dir / "k.cpp";
  std::ofstream(kernel) << "#include <cstdint>\n"
                           "extern \"C\" void ollie_kernel(const float* x, float* out, const "
                           "int64_t* dims) {\n"
                           "  for (int64_t i = 0; i < dims[0]; ++i) out[i] = x[i] + 100.0f;\n}\n";
  const std::string verify = "verify " + spec.string() + " " + kernel.string();
  const CommandResult weak = ollie(verify);
  EXPECT_EQ(weak.exit_code, 4) << weak.out;
  EXPECT_NE(weak.out.find(": weak ("), std::string::npos) << weak.out;
  const fs::path cert = dir / "cert.json";
  const CommandResult accepted = ollie(verify + " --accept-weak --cert " + cert.string());
  EXPECT_EQ(accepted.exit_code, 0) << accepted.out;
  const auto j = nlohmann::json::parse(read_file(cert));
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["weak"], true);

  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  const std::string optimize =
      "optimize " + spec.string() + " --evals 2 --bench-seconds 0.05 -o " + (dir / "run").string();
  const CommandResult refused = ollie_with_env(env, optimize);
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("--accept-weak"), std::string::npos) << refused.out;
  fs::remove_all(dir / "run");
  const CommandResult searched = ollie_with_env(env, optimize + " --accept-weak");
  EXPECT_EQ(searched.exit_code, 0) << searched.out;
  EXPECT_TRUE(fs::exists(dir / "run" / "logexp.cpp"));
}

TEST(Cli, BadInputIsAClearErrorWithExitCode1) {
  std::string spec = (source_dir() / "examples/matmul.py").string();
  CommandResult missing = ollie("check /nonexistent/spec.py");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("/nonexistent/spec.py"), std::string::npos) << missing.out;

  CommandResult bad_dims = ollie("check " + spec + " --dims M=abc");
  EXPECT_EQ(bad_dims.exit_code, 1);
  EXPECT_NE(bad_dims.out.find("--dims"), std::string::npos) << bad_dims.out;

  CommandResult unknown_dim = ollie("check " + spec + " --dims Q=3");
  EXPECT_EQ(unknown_dim.exit_code, 1);
  EXPECT_NE(unknown_dim.out.find("Q"), std::string::npos) << unknown_dim.out;

  CommandResult bad_inputs = ollie("eval " + spec + " --inputs /nonexistent/in.npz");
  EXPECT_EQ(bad_inputs.exit_code, 1);
  EXPECT_NE(bad_inputs.out.find("/nonexistent/in.npz"), std::string::npos) << bad_inputs.out;

  CommandResult no_verb = ollie("");
  EXPECT_EQ(no_verb.exit_code, 2);
  CommandResult bad_flag = ollie("check " + spec + " --frobnicate");
  EXPECT_EQ(bad_flag.exit_code, 2);
}

TEST(Cli, EvalRefusesDimsTooLargeForThisMachineUpFront) {
  // 10^7 cached tokens of 512 latents: ~80 GB of doubles before bounds; refused
  // with the estimate, not an out-of-memory kill.
  CommandResult r =
      ollie("eval " + (source_dir() / "examples/mla_decode.py").string() + " --dims S=10000000");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("at these dims the reference needs about"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32[B, S, L]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("choose smaller sizes with --dims"), std::string::npos) << r.out;
}

// `ollie run-kernel` with hand-written kernels (tests/e2e/kernels/), each built into a
// fresh cache so the test never depends on what an earlier run left.
class RunKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir() / "run_kernel";
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  CommandResult run(const std::string& kernel, const std::string& extra = "") {
    return ollie_with_env("OLLIE_CACHE_DIR=" + (dir_ / "cache").string(),
                          "run-kernel " + (source_dir() / "examples/softmax.py").string() + " " +
                              (source_dir() / "tests/e2e/kernels" / kernel).string() +
                              " --dims M=4,N=16 --seed 3 " + extra);
  }
  fs::path dir_;
};

TEST_F(RunKernel, CorrectKernelAgreesWithTheReference) {
  CommandResult r = run("softmax_rows.cpp", "--out " + (dir_ / "o.npz").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("out0: agrees with the reference on all 64 elements"), std::string::npos)
      << r.out;
  auto outputs = ollie::npy::read_npz((dir_ / "o.npz").string());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].second.type, ollie::npy::ElementType::F32);
  double row = 0;
  for (int j = 0; j < 16; ++j) row += outputs[0].second.data[static_cast<size_t>(j)];
  EXPECT_NEAR(row, 1.0, 1e-5);
  // The same source again is not compiled again.
  CommandResult again = run("softmax_rows.cpp");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("(cached"), std::string::npos) << again.out;
}

TEST_F(RunKernel, WrongKernelIsReportedAsDiffering) {
  CommandResult r = run("softmax_drops_last_column.cpp");
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("out0: DIFFERS from the reference on 64 of 64 elements"), std::string::npos)
      << r.out;
}

TEST_F(RunKernel, CrashingKernelIsReportedAndOllieSurvives) {
  CommandResult r = run("softmax_segfaults.cpp");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("SIGSEGV"), std::string::npos) << r.out;
}

TEST_F(RunKernel, KernelOpeningAFileIsRefusedByTheScreen) {
  CommandResult r = run("softmax_reads_a_file.cpp");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("refused"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("imports `fopen`"), std::string::npos) << r.out;
}

TEST_F(RunKernel, VerifyPassesAGoodKernelAndWritesItsCertificate) {
  fs::path dir = temp_dir() / "verify";
  fs::create_directories(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string kernels = (source_dir() / "tests/e2e/kernels").string();
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  CommandResult good = ollie_with_env(env, "verify " + spec + " " + kernels +
                                               "/softmax_rows.cpp --dims M=6,N=50 --cert " +
                                               (dir / "cert.json").string());
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_NE(good.out.find("softmax_rows.cpp: pass"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("shape-sweep"), std::string::npos) << good.out;
  const std::string cert = read_file(dir / "cert.json");
  EXPECT_NE(cert.find("\"verdict\": \"pass\""), std::string::npos) << cert;
  EXPECT_NE(cert.find("\"schema\": \"ollie-certificate/1\""), std::string::npos) << cert;
  CommandResult bad = ollie_with_env(
      env, "verify " + spec + " " + kernels + "/softmax_drops_last_column.cpp --json");
  EXPECT_EQ(bad.exit_code, 4) << bad.out;
  EXPECT_NE(bad.out.find("\"verdict\": \"wrong\""), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("\"counterexample\""), std::string::npos) << bad.out;
  // Right outputs, a heap over-read: quick passes it, full's sanitizer build does not.
  const std::string overread =
      (source_dir() / "tests/redteam/softmax__pipelined_max_reads_past_scratch.cpp").string();
  CommandResult full = ollie_with_env(
      env, "verify " + spec + " " + overread + " --dims M=6,N=50 --level full --json");
  EXPECT_EQ(full.exit_code, 4) << full.out;
  EXPECT_NE(full.out.find("\"verdict\": \"sanitizer\""), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("heap-buffer-overflow"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("\"sanitizer_build\""), std::string::npos) << full.out;
  CommandResult level =
      ollie("verify " + spec + " " + kernels + "/softmax_rows.cpp --level thorough");
  EXPECT_EQ(level.exit_code, 2) << level.out;
  fs::remove_all(dir);
}

TEST_F(RunKernel, CompileErrorShowsTheCompilersMessage) {
  CommandResult r = run("softmax_does_not_compile.cpp");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("does not compile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("undeclared_variable"), std::string::npos) << r.out;
}

TEST_F(RunKernel, BenchTimesSideBySideAndChecksTheTimedOutputs) {
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string kernels = (source_dir() / "tests/e2e/kernels").string();
  const std::string env = "OLLIE_CACHE_DIR=" + (dir_ / "cache").string();
  CommandResult pair =
      ollie_with_env(env, "bench " + spec + " " + kernels + "/softmax_rows.cpp --vs " + kernels +
                              "/softmax_rows.cpp --dims M=8,N=64 --seconds 0.2 --threads 1 --json");
  ASSERT_EQ(pair.exit_code, 0) << pair.out;
  for (const char* field :
       {"\"schema\": \"ollie-bench/1\"", "\"median_seconds\"", "\"mad_seconds\"",
        "\"outputs_agree\": true", "\"ratio\"", "\"rounds\"", "\"seed\""})
    EXPECT_NE(pair.out.find(field), std::string::npos) << field << " in\n" << pair.out;
  CommandResult text = ollie_with_env(
      env, "bench " + spec + " " + kernels + "/softmax_rows.cpp --dims M=8,N=64 --seconds 0.1");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("softmax at M=8, N=64"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("agree with the reference"), std::string::npos) << text.out;
  CommandResult wrong =
      ollie_with_env(env, "bench " + spec + " " + kernels +
                              "/softmax_drops_last_column.cpp --dims M=8,N=64 --seconds 0.1");
  EXPECT_EQ(wrong.exit_code, 4) << wrong.out;
  EXPECT_NE(wrong.out.find("wrong outputs while being timed"), std::string::npos) << wrong.out;
  CommandResult crash = ollie_with_env(
      env, "bench " + spec + " " + kernels + "/softmax_segfaults.cpp --dims M=8,N=64");
  EXPECT_EQ(crash.exit_code, 4) << crash.out;
  EXPECT_NE(crash.out.find("SIGSEGV"), std::string::npos) << crash.out;
  CommandResult directory = ollie("verify " + spec + " " + kernels);
  EXPECT_EQ(directory.exit_code, 1) << directory.out;
  EXPECT_NE(directory.out.find("is a directory, not a kernel file"), std::string::npos)
      << directory.out;
  CommandResult missing = ollie("bench " + spec + " /nonexistent/k.cpp");
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("cannot read kernel '/nonexistent/k.cpp'"), std::string::npos)
      << missing.out;
}

// The main job end to end on a small softmax: a budgeted run writes its database and a
// best kernel that passes `ollie verify --level full`; a run killed with SIGKILL keeps
// every evaluation it finished, and resuming it evaluates nothing twice.
TEST(Cli, OptimizeWritesAVerifiedKernelAndResumesAfterSigkill) {
  const fs::path dir = temp_dir() / "optimize";
  fs::remove_all(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  CommandResult r = ollie_with_env(env, "optimize " + spec +
                                            " --dims M=16,N=64 --evals 5 --bench-seconds 0.05 -o " +
                                            (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("stopped: evaluation budget spent"), std::string::npos) << r.out;
  for (const char* file : {"run.db", "softmax.cpp", "softmax.ollie.h", "softmax.schedule",
                           "certificate.json", "summary.md", "report.html"})
    EXPECT_TRUE(fs::exists(dir / "a" / file)) << file;
  // The report beside them needs no network (src/report/), and shows the full certificate.
  const std::string report = read_file(dir / "a" / "report.html");
  EXPECT_EQ(report.find("http://"), std::string::npos);
  EXPECT_EQ(report.find("https://"), std::string::npos);
  EXPECT_NE(report.find("certificate.json (the final answer&#39;s full verification)"),
            std::string::npos);
  EXPECT_NE(read_file(dir / "a" / "certificate.json").find("\"level\": \"full\""),
            std::string::npos);
  CommandResult v =
      ollie_with_env(env, "verify " + spec + " " + (dir / "a" / "softmax.cpp").string() +
                              " --dims M=16,N=64 --level full");
  EXPECT_EQ(v.exit_code, 0) << v.out;
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
    // --evals counts candidates; a confirmed new best has a second evaluation row.
    EXPECT_EQ(db.counts().candidates, 5);
    EXPECT_GE(db.counts().evaluations, 5);
  }
  // The same directory again without --resume is refused with what to do.
  CommandResult again = ollie_with_env(
      env, "optimize " + spec + " --dims M=16,N=64 --evals 5 -o " + (dir / "a").string());
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("--resume"), std::string::npos) << again.out;

  // Killed mid-run, then resumed.
  const std::string db_path = (dir / "b" / "run.db").string();
  std::system(("cd " + dir.string() + " && " + env + " timeout -s KILL 8 " + OLLIE_BINARY +
               " optimize " + spec +
               " --dims M=16,N=64 --evals 1000 --bench-seconds 0.05 -o b > /dev/null 2>&1")
                  .c_str());
  int64_t before = 0;
  {
    ollie::store::Store db = ollie::store::Store::open(db_path);
    before = db.counts().candidates;
  }
  ASSERT_GE(before, 2) << "the killed run evaluated too little to test resuming";
  // While another process holds the run, a second one is refused.
  CommandResult busy =
      ollie_with_env("flock " + db_path + ".lock env " + env,
                     std::string("optimize --resume ") + db_path + " --evals 1000");
  EXPECT_EQ(busy.exit_code, 1) << busy.out;
  EXPECT_NE(busy.out.find("is in use by another ollie optimize"), std::string::npos) << busy.out;
  CommandResult resumed =
      ollie_with_env(env, "optimize --resume " + db_path + " --evals " +
                              std::to_string(before + 3) + " --bench-seconds 0.05");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("(resumed)"), std::string::npos) << resumed.out;
  ollie::store::Store db = ollie::store::Store::open(db_path);
  EXPECT_EQ(db.counts().candidates, before + 3);
  EXPECT_EQ(db.integrity_check(), "ok");
  std::set<int64_t> evaluated;
  for (int64_t id = 1; id <= db.counts().candidates; ++id) {
    const auto e = db.evaluation_of(id);
    if (e) {
      EXPECT_TRUE(evaluated.insert(e->candidate).second) << "candidate " << id;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(evaluated.size()), before + 3);
  fs::remove_all(dir);
}

// The rewrite proposer end to end: `--proposers rewrite:1` records rewritten candidates
// (their chain and schedule) in the run database, they pass the verifier, and `ollie emit
// --rewrites FILE --schedule FILE` reproduces a recorded kernel from its chain and schedule.
TEST(Cli, OptimizeWithTheRewriteProposerRecordsRewrittenCandidates) {
  const fs::path dir = temp_dir() / "optimize-rewrite";
  fs::remove_all(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  CommandResult r = ollie_with_env(env, "optimize " + spec +
                                            " --dims M=16,N=64 --evals 3 --bench-seconds 0.05 "
                                            "--give-up 0 --proposers rewrite:1 -o " +
                                            (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
  int rewritten = 0;
  for (int64_t id = 1; id <= db.counts().candidates; ++id) {
    const auto c = db.candidate(id);
    if (!c || c->proposer != "rewrite") continue;
    ++rewritten;
    // A rewrite of the baseline or of a rewritten candidate (a chain that drew the same
    // first rewrite twice moves on from it): lines of known rules, each ended by a newline.
    ASSERT_FALSE(c->rewrites.empty());
    ASSERT_EQ(c->rewrites.back(), '\n');
    std::istringstream lines(c->rewrites);
    for (std::string line; std::getline(lines, line);)
      EXPECT_NO_THROW(ollie::rewrite::parse_site(line)) << c->rewrites;
    const auto e = db.evaluation_of(id);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->verdict, "pass") << e->message;
    std::ofstream(dir / "chain.rewrites") << c->rewrites;
    std::ofstream(dir / "kernel.schedule") << c->schedule;
    CommandResult emitted =
        ollie("emit " + spec + " --dims M=16,N=64 --rewrites " + (dir / "chain.rewrites").string() +
              " --schedule " + (dir / "kernel.schedule").string() + " -o " + (dir / "e").string());
    ASSERT_EQ(emitted.exit_code, 0) << emitted.out;
    EXPECT_EQ(read_file(dir / "e" / "softmax.cpp"), c->source);
  }
  EXPECT_EQ(rewritten, 2);  // --evals 3: the baseline and two rewritten candidates
  // `ollie check --rewrites` shows the rewritten graph: softmax's divide is one per row.
  std::ofstream(dir / "reciprocal.rewrites") << "# the row sum's reciprocal\nreciprocal %9\n";
  CommandResult checked =
      ollie("check " + spec + " --rewrites " + (dir / "reciprocal.rewrites").string());
  ASSERT_EQ(checked.exit_code, 0) << checked.out;
  EXPECT_NE(checked.out.find("f32[M, 1] = div"), std::string::npos) << checked.out;
  EXPECT_EQ(checked.out.find("f32[M, N] = div"), std::string::npos) << checked.out;
  // An unknown proposer names the ones there are; a chain that does not apply names its line.
  CommandResult bad = ollie("optimize " + spec + " --evals 1 --proposers rewrite,shuffle -o " +
                            (dir / "b").string());
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("available: mutate, rewrite"), std::string::npos) << bad.out;
  std::ofstream(dir / "bad.rewrites") << "reciprocal %0\n";
  CommandResult bad_chain = ollie("emit " + spec + " --rewrites " +
                                  (dir / "bad.rewrites").string() + " -o " + (dir / "e").string());
  EXPECT_EQ(bad_chain.exit_code, 1) << bad_chain.out;
  EXPECT_NE(bad_chain.out.find("rewrite chain line 1"), std::string::npos) << bad_chain.out;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- the llm proposer

const std::string kTestKey = "sk-e2e-DISTINCTIVE-7f3a9c21b8e4";

std::string kernel_text(const std::string& name) {
  return read_file(source_dir() / "tests/e2e/kernels" / name);
}

std::string fenced_answer(const std::string& code) {
  return "Here is a faster kernel.\n\n```cpp\n" + code + "```\n\nIt keeps each row in cache.\n";
}

// The environment of a run against a model: no variable of the developer's own.
std::string model_env(const fs::path& cache, const std::string& key) {
  return "env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u OLLIE_LLM_MODEL -u OLLIE_LLM_BASE_URL -u "
         "OLLIE_LLM_PROTOCOL "
         "OLLIE_CACHE_DIR=" +
         cache.string() + (key.empty() ? "" : " OPENAI_API_KEY=" + key);
}

// Files under `dir` (recursively) whose bytes contain `needle`.
std::vector<std::string> files_containing(const fs::path& dir, const std::string& needle) {
  std::vector<std::string> hits;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && read_file(e.path()).find(needle) != std::string::npos)
      hits.push_back(e.path().string());
  return hits;
}

std::optional<ollie::store::Candidate> candidate_containing(const ollie::store::Store& db,
                                                            const std::string& needle) {
  for (int64_t id = 1; id <= db.counts().candidates; ++id)
    if (auto c = db.candidate(id); c && c->source.find(needle) != std::string::npos) return c;
  return std::nullopt;
}

// `ollie optimize` with the llm proposer against the test server: the client rides out a
// 429 and a 500, a correct kernel from the model passes and enters the archive, a wrong
// one never does; the API key is in no file of the run directory (database, WAL,
// summary, certificate, kernels) nor in the output; a replay of the run with no server
// and no key reaches the same best kernel; a resume (with the server at a new address)
// asks the model again.
TEST(Cli, OptimizeWithAModelKeepsTheKeyOffTheDiskAndReplaysToTheSameBest) {
  const fs::path dir = temp_dir() / "optimize-llm";
  fs::remove_all(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string marker = "// written by the test model\n";
  const std::string good = marker + kernel_text("softmax_rows.cpp");
  const std::string wrong = kernel_text("softmax_drops_last_column.cpp");
  std::string out;
  {
    using ollie::llm::testing::Scripted;
    ollie::llm::testing::FakeModelServer server(kTestKey);
    server.script(
        {Scripted::http(429, R"({"error": {"message": "slow down"}})", {{"Retry-After", "1"}}),
         Scripted::http(500, R"({"error": {"message": "overloaded"}})"),
         Scripted::answer(fenced_answer(good), 1200, 300), Scripted::answer(fenced_answer(wrong))});
    // Then new kernels every time (a repeated one proposes nothing, and 5 in a row stop
    // the proposer, which would hide the replay running out of answers below).
    for (int i = 0; i < 20; ++i)
      server.script(
          {Scripted::answer(fenced_answer("// variant " + std::to_string(i) + "\n" + good))});
    CommandResult r =
        ollie_with_env(model_env(dir / "cache", kTestKey),
                       "optimize " + spec +
                           " --dims M=16,N=64 --evals 5 --bench-seconds 0.05 --give-up 0 "
                           "--proposers mutate:1,llm:3 --llm-base-url " +
                           server.openai_base() +
                           " --llm-model test-model --llm-price-in 3 --llm-price-out 15 -o " +
                           (dir / "a").string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
    out = r.out;
    EXPECT_NE(r.out.find("llm proposer: openai model test-model at " + server.openai_base()),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("language model (llm proposer"), std::string::npos) << r.out;
    const auto seen = server.requests();
    ASSERT_GE(seen.size(), 4u);             // 429, 500, then the answers
    EXPECT_EQ(seen[0].body, seen[2].body);  // the same request, retried
  }
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
    const auto calls = db.model_calls("llm");
    ASSERT_GE(calls.size(), 2u);
    EXPECT_EQ(calls[0].status, "ok");  // the retries are inside one call
    EXPECT_EQ(calls[0].tokens_in, 1200);
    EXPECT_NEAR(calls[0].cost, 1200 * 3e-6 + 300 * 15e-6, 1e-12);
    const auto g = candidate_containing(db, marker);
    const auto w = candidate_containing(db, "j + 1 < n");
    ASSERT_TRUE(g && w);
    EXPECT_EQ(g->proposer, "llm");
    EXPECT_TRUE(g->schedule.empty());
    EXPECT_EQ(db.evaluation_of(g->id)->verdict, "pass");
    EXPECT_EQ(db.evaluation_of(w->id)->verdict, "wrong");
    bool good_in_archive = false;
    for (const auto& [c, e] : db.best(50)) {
      EXPECT_NE(c.id, w->id);
      good_in_archive = good_in_archive || c.id == g->id;
    }
    EXPECT_TRUE(good_in_archive);
    const auto options = nlohmann::json::parse(db.run().options_json);
    EXPECT_EQ(options["llm"]["model"], "test-model");
    EXPECT_EQ(options["llm"]["price_in_per_mtok"], 3.0);
  }
  const std::string best = read_file(dir / "a" / "softmax.cpp");
  ASSERT_FALSE(best.empty());
  // The key: nowhere on disk, nowhere in the output. (The scan does read the database:
  // it finds the model's name there.)
  EXPECT_FALSE(files_containing(dir / "a", "test-model").empty());
  EXPECT_EQ(files_containing(dir, kTestKey), std::vector<std::string>{});
  EXPECT_EQ(out.find(kTestKey), std::string::npos);
  EXPECT_EQ(out.find("DISTINCTIVE"), std::string::npos);

  // The replay: no server, no key; the same best kernel, from the stored answers.
  CommandResult replay = ollie_with_env(
      model_env(dir / "cache", ""),
      "optimize --replay " + (dir / "a" / "run.db").string() + " -o " + (dir / "r").string());
  ASSERT_EQ(replay.exit_code, 0) << replay.out;
  EXPECT_EQ(read_file(dir / "r" / "softmax.cpp"), best);
  EXPECT_NE(read_file(dir / "r" / "summary.md").find("replay of"), std::string::npos);
  EXPECT_NE(read_file(dir / "r" / "summary.md").find("reused from it for identical kernels"),
            std::string::npos);
  {
    ollie::store::Store a = ollie::store::Store::open((dir / "a" / "run.db").string());
    ollie::store::Store r = ollie::store::Store::open((dir / "r" / "run.db").string());
    // The same candidates (the budget counts candidates; the recorded run's confirmations
    // of new bests are evaluation rows a replay reuses, not repeats).
    EXPECT_EQ(r.counts().candidates, a.counts().candidates);
    const auto ra = a.model_calls("llm"), rr = r.model_calls("llm");
    ASSERT_EQ(rr.size(), ra.size());
    for (size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(rr[i].answer, ra[i].answer);
  }
  CommandResult mixed = ollie_with_env(model_env(dir / "cache", ""),
                                       "optimize --replay " + (dir / "a" / "run.db").string() +
                                           " --llm-model other -o " + (dir / "r3").string());
  EXPECT_EQ(mixed.exit_code, 1) << mixed.out;
  EXPECT_NE(mixed.out.find("leave out --proposer-cmd and the --llm-* flags"), std::string::npos)
      << mixed.out;
  // More evaluations than were recorded: the answers run out, the llm stops, the run goes on.
  CommandResult longer =
      ollie_with_env(model_env(dir / "cache", ""),
                     "optimize --replay " + (dir / "a" / "run.db").string() +
                         " --evals 7 --bench-seconds 0.05 -o " + (dir / "r2").string());
  ASSERT_EQ(longer.exit_code, 0) << longer.out;
  EXPECT_NE(read_file(dir / "r2" / "summary.md").find("has no more model answers"),
            std::string::npos)
      << read_file(dir / "r2" / "summary.md");

  size_t calls_before = 0;
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
    calls_before = db.model_calls("llm").size();
  }
  // Resumed with the key given again (as --llm-key this time), the server at a new address.
  {
    ollie::llm::testing::FakeModelServer server(kTestKey);
    CommandResult resumed = ollie_with_env(
        model_env(dir / "cache", ""), "optimize --resume " + (dir / "a" / "run.db").string() +
                                          " --evals 7 --bench-seconds 0.05 --llm-key " + kTestKey +
                                          " --llm-base-url " + server.openai_base());
    ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
    EXPECT_GE(server.requests().size(), 1u);
    EXPECT_EQ(resumed.out.find(kTestKey), std::string::npos);
    // The resumed session's calls went through with the key (the server checks it).
    ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
    const auto calls = db.model_calls("llm");
    ASSERT_GT(calls.size(), calls_before);
    EXPECT_EQ(calls[calls_before].status, "ok") << calls[calls_before].answer;
  }
  EXPECT_EQ(files_containing(dir, kTestKey), std::vector<std::string>{});
  fs::remove_all(dir);
}

// Without a model, `--proposers ...,llm` is refused before anything runs, naming the
// flags and variables; `--proposer-cmd` runs a command that prints a kernel (and implies
// the llm proposer); a command that overruns --proposer-timeout is stopped, and the run
// goes on.
TEST(Cli, OptimizeWithAProposerCommandAndWithoutAModel) {
  const fs::path dir = temp_dir() / "optimize-cmd";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string env = model_env(dir / "cache", "");
  CommandResult none =
      ollie_with_env(env, "optimize " + spec + " --evals 2 --proposers mutate:1,llm:1 -o " +
                              (dir / "none").string());
  EXPECT_EQ(none.exit_code, 1) << none.out;
  for (const char* what : {"--llm-model", "OLLIE_LLM_MODEL", "--proposer-cmd", "OPENAI_API_KEY"})
    EXPECT_NE(none.out.find(what), std::string::npos) << what << "\n" << none.out;
  EXPECT_FALSE(fs::exists(dir / "none" / "run.db"));

  const std::string marker = "// printed by the test's proposer command\n";
  std::ofstream(dir / "kernel.cpp") << marker << kernel_text("softmax_rows.cpp");
  CommandResult r =
      ollie_with_env(env, "optimize " + spec +
                              " --dims M=16,N=64 --evals 2 --bench-seconds 0.05 --give-up 0 "
                              "--proposers llm:1 --proposer-cmd 'cat " +
                              (dir / "kernel.cpp").string() + "' -o " + (dir / "a").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "a" / "run.db").string());
    const auto calls = db.model_calls("llm");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].status, "ok");
    EXPECT_NE(calls[0].request.find("def softmax"),
              std::string::npos);  // the prompt went to its stdin
    const auto c = candidate_containing(db, marker);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(db.evaluation_of(c->id)->verdict, "pass");
  }
  // --proposer-cmd alone adds llm to the default proposers.
  CommandResult implied =
      ollie_with_env(env, "optimize " + spec + " --dims M=16,N=64 --evals 1 --proposer-cmd 'cat " +
                              (dir / "kernel.cpp").string() + "' -o " + (dir / "b").string());
  ASSERT_EQ(implied.exit_code, 0) << implied.out;
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "b" / "run.db").string());
    EXPECT_EQ(nlohmann::json::parse(db.run().options_json)["proposers"],
              "mutate:3,rewrite:1,llm:1");
  }
  // A command that sleeps past its limit: each call times out; after 5 in a row the llm
  // proposer stops, and with no other proposer the run ends with the baseline.
  CommandResult slow = ollie_with_env(
      env, "optimize " + spec +
               " --dims M=16,N=64 --evals 3 --bench-seconds 0.05 "
               "--proposers llm:1 --proposer-cmd 'sleep 30' --proposer-timeout 0.5 -o " +
               (dir / "c").string());
  ASSERT_EQ(slow.exit_code, 0) << slow.out;
  EXPECT_NE(slow.out.find("no proposer could propose anything"), std::string::npos) << slow.out;
  {
    ollie::store::Store db = ollie::store::Store::open((dir / "c" / "run.db").string());
    const auto calls = db.model_calls("llm");
    ASSERT_EQ(calls.size(), 5u);
    for (const auto& c : calls) {
      EXPECT_EQ(c.status, "timeout");
      EXPECT_LT(c.seconds, 10);
    }
  }
  EXPECT_NE(read_file(dir / "c" / "summary.md").find("5 calls in a row failed"), std::string::npos)
      << read_file(dir / "c" / "summary.md");
  fs::remove_all(dir);
}

// The flash rewrite end to end: the worked chains of examples/schedules (softmax,
// attention_causal after normalize-late, mla_decode after exp2 and normalize-late), emitted
// under their default schedule and under the hand schedule beside them, pass `ollie
// verify` (its shape sweep runs the generic kernels at sizes below, at and between
// blocks). The sites are listed by `emit --show-stages`.
TEST(Cli, FlashRewrittenKernelsPassTheVerifier) {
  const fs::path dir = temp_dir() / "flash";
  fs::remove_all(dir);
  const std::map<std::string, std::string> dims = {
      {"softmax", "M=5,N=300"},
      {"attention_causal", "S=150,D=8"},
      {"mla_decode", "B=1,H=3,S=600,L=16,DR=8,DN=8,DV=8"}};
  for (const auto& [name, sizes] : dims) {
    SCOPED_TRACE(name);
    const std::string spec = (source_dir() / "examples" / (name + ".py")).string();
    const std::string chain =
        (source_dir() / "examples/schedules" / (name + ".flash.rewrites")).string();
    const std::string schedule =
        (source_dir() / "examples/schedules" / (name + ".flash.schedule")).string();
    CommandResult shown =
        ollie("emit " + spec + " --dims " + sizes + " --rewrites " + chain + " --show-stages");
    ASSERT_EQ(shown.exit_code, 0) << shown.out;
    for (const auto& variant : {std::string("default"), std::string("hand")}) {
      const fs::path out = dir / (name + "-" + variant);
      CommandResult emitted = ollie(
          "emit " + spec + " --dims " + sizes + " --rewrites " + chain +
          (variant == "hand" ? " --schedule " + schedule : std::string()) + " -o " + out.string());
      ASSERT_EQ(emitted.exit_code, 0) << emitted.out;
      CommandResult verified =
          ollie("verify " + spec + " " + (out / (name + ".cpp")).string() + " --dims " + sizes);
      EXPECT_EQ(verified.exit_code, 0) << variant << "\n" << verified.out;
      EXPECT_TRUE(all_suites_agree(verified.out)) << verified.out;
    }
  }
  // Without normalize-late, attention's flash site is the probabilities' division.
  CommandResult sites =
      ollie("emit " + (source_dir() / "examples/attention_causal.py").string() + " --show-stages");
  ASSERT_EQ(sites.exit_code, 0) << sites.out;
  EXPECT_NE(sites.out.find("  flash %35 64\n"), std::string::npos) << sites.out;
  EXPECT_NE(sites.out.find("  flash %35 256\n"), std::string::npos) << sites.out;
  EXPECT_EQ(sites.out.find("  flash %35 1024\n"), std::string::npos)
      << sites.out;  // 512 keys: fewer than 2 blocks
  fs::remove_all(dir);
}

// The online rewrite end to end: the worked chains of examples/schedules (attention_causal
// after normalize-late, mla_decode after exp2 and normalize-late), emitted under their
// default schedule and under one that keeps a running max per output element, pass
// `ollie verify`, whose suites include -inf and NaN scores and key counts from 3 up.
TEST(Cli, OnlineRewrittenKernelsPassTheVerifier) {
  const fs::path dir = temp_dir() / "online";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::map<std::string, std::string> dims = {
      {"attention_causal", "S=70,D=8"}, {"mla_decode", "B=2,H=3,S=90,L=16,DR=8,DN=8,DV=8"}};
  // Per element: the value loop outside the keys' loop (the lowering's own order).
  std::ofstream(dir / "per-element.schedule")
      << "# nothing: each output element keeps its own running max\n";
  for (const auto& [name, sizes] : dims) {
    SCOPED_TRACE(name);
    const std::string spec = (source_dir() / "examples" / (name + ".py")).string();
    const std::string chain =
        (source_dir() / "examples/schedules" / (name + ".online.rewrites")).string();
    for (const auto& variant : {std::string("default"), std::string("per-element")}) {
      const fs::path out = dir / (name + "-" + variant);
      CommandResult emitted =
          ollie("emit " + spec + " --dims " + sizes + " --rewrites " + chain +
                (variant == "default" ? std::string()
                                      : " --schedule " + (dir / "per-element.schedule").string()) +
                " -o " + out.string());
      ASSERT_EQ(emitted.exit_code, 0) << emitted.out;
      std::ifstream in(out / (name + ".cpp"));
      const std::string source((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
      // The default hoists each key's weights out of the value loop; per element does not.
      EXPECT_EQ(source.find("_max_w[0] = ") != std::string::npos, variant == "default") << source;
      CommandResult verified =
          ollie("verify " + spec + " " + (out / (name + ".cpp")).string() + " --dims " + sizes);
      EXPECT_EQ(verified.exit_code, 0) << variant << "\n" << verified.out;
      EXPECT_TRUE(all_suites_agree(verified.out)) << verified.out;
    }
  }
  fs::remove_all(dir);
}

// `ollie emit` then `ollie run-kernel` on what it wrote: the baseline kernel of every
// example compiles, runs in the runner and agrees with the reference within its bound.
TEST(Cli, EmittedBaselineOfEveryExampleAgreesWithTheReference) {
  const std::map<std::string, std::string> small_dims = {
      {"matmul", "M=8,K=16,N=8"},
      {"matmul_bias_relu", "M=8,K=16,N=8"},
      {"softmax", "M=4,N=16"},
      {"layernorm", "T=4,D=16"},
      {"layernorm_f16", "T=4,D=16"},
      {"rmsnorm", "T=4,D=16"},
      {"gelu", "M=4,N=16"},
      {"swiglu_mlp", "T=4,D=16,F=32"},
      {"attention_causal", "S=16,D=8"},
      {"mha_causal", "S=8,DM=16,H=2,HD=4"},
      {"rope", "S=8,H=2,HD=8"},
      {"mla_decode", "B=1,H=2,S=16,L=8,DR=4,DN=8,DV=8"},
      {"gpt2_block", "T=8,D=16,F=32"},
      {"llama_block", "B=1,L=8,HD=4,F=24"},
      {"llama_decode", "B=1,P=8,F=24,HD=4"},
      {"gemm", "M=8,K=16,N=8"},
      {"attention_prefill", "H=2,S=16,D=8"},
      {"gqa_decode", "B=1,S=16,KV=2,HD=8"},
      {"mla_decode_naive", "B=1,H=2,S=16,L=8,DR=4,DN=8,DV=8"},
      {"mla_decode_bf16", "B=1,H=2,S=16,L=8,DR=4,DN=8,DV=8"},
      {"matmul_bf16", "M=8,K=16,N=8"},
      {"embedding", "T=4,V=8,D=16,P=6"}};
  fs::path dir = temp_dir() / "emit";
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  for (const auto& name : example_names()) {
    ASSERT_TRUE(small_dims.count(name)) << "no small dims for example " << name;
    const std::string spec = (source_dir() / "examples" / (name + ".py")).string();
    const std::string dims = " --dims " + small_dims.at(name);
    CommandResult emitted = ollie("emit " + spec + dims + " -o " + (dir / name).string());
    ASSERT_EQ(emitted.exit_code, 0) << emitted.out;
    // The file is named after the entry; find it.
    fs::path kernel;
    for (const auto& e : fs::directory_iterator(dir / name))
      if (e.path().extension() == ".cpp") kernel = e.path();
    ASSERT_FALSE(kernel.empty()) << name;
    EXPECT_TRUE(fs::exists(kernel.parent_path() / (kernel.stem().string() + ".ollie.h"))) << name;
    CommandResult ran =
        ollie_with_env(env, "run-kernel " + spec + " " + kernel.string() + dims + " --seed 5");
    EXPECT_EQ(ran.exit_code, 0) << name << ":\n" << ran.out;
    EXPECT_NE(ran.out.find("agrees with the reference"), std::string::npos) << name << ":\n"
                                                                            << ran.out;
  }
  fs::remove_all(dir);
}

// `ollie emit --schedule`: the schedule written beside the kernel reads back and gives
// the same kernel; a schedule given as text applies; the kernel runs and agrees.
TEST(Cli, EmitWritesTheScheduleAndReadsOneBack) {
  fs::path dir = temp_dir() / "schedule";
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  CommandResult first = ollie("emit " + spec + " --dims M=5,N=37 -o " + (dir / "a").string());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string schedule = read_file(dir / "a" / "softmax.schedule");
  EXPECT_NE(schedule.find("compute_at"), std::string::npos) << schedule;
  EXPECT_NE(schedule.find("parallel out0 m"), std::string::npos) << schedule;
  EXPECT_NE(read_file(dir / "a" / "softmax.cpp").find("// Schedule:\n//   "), std::string::npos);
  // Reading the written schedule back reproduces the kernel byte for byte.
  CommandResult again = ollie("emit " + spec + " --dims M=5,N=37 -o " + (dir / "b").string() +
                              " --schedule " + (dir / "a" / "softmax.schedule").string());
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(read_file(dir / "a" / "softmax.cpp"), read_file(dir / "b" / "softmax.cpp"));
  // A schedule as text: split with a tail (37 = 4*8 + 5), then run it.
  CommandResult text = ollie("emit " + spec + " --dims M=5,N=37 -o " + (dir / "c").string() +
                             " --schedule 'split out0 n 8; vectorize out0 n_i; parallel out0 m'");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  const std::string kernel = read_file(dir / "c" / "softmax.cpp");
  EXPECT_NE(
      kernel.find("for (int64_t n_i = 0; n_i < ollie_min<int64_t>(8, (N - (n_o * 8))); ++n_i)"),
      std::string::npos)
      << kernel;
  CommandResult ran =
      ollie_with_env(env, "run-kernel " + spec + " " + (dir / "c" / "softmax.cpp").string() +
                              " --dims M=5,N=37 --seed 3");
  EXPECT_EQ(ran.exit_code, 0) << ran.out;
  // A schedule longer than any file name is still read as a schedule.
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "unroll out0 n; ";
  CommandResult long_one =
      ollie("emit " + spec + " -o " + (dir / "d").string() + " --schedule '" + long_text + "'");
  EXPECT_EQ(long_one.exit_code, 0) << long_one.out;
  // --show-stages lists what a schedule can name.
  CommandResult stages = ollie("emit " + spec + " --show-stages");
  EXPECT_EQ(stages.exit_code, 0);
  EXPECT_NE(stages.out.find("t1: for m in [0, M), for n in [0, N) reduce  (Reduce max)"),
            std::string::npos)
      << stages.out;
  fs::remove_all(dir);
}

TEST(Cli, BadSchedulesAreClearErrors) {
  fs::path dir = temp_dir() / "bad-schedule";
  fs::create_directories(dir);
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  // Illegal: the max over n cannot run in parallel; the reason names the loop.
  CommandResult illegal =
      ollie("emit " + spec + " -o " + dir.string() + " --schedule 'parallel t1 n'");
  EXPECT_EQ(illegal.exit_code, 1) << illegal.out;
  EXPECT_NE(illegal.out.find("cannot parallel t1 n: loop n carries the reduction into t1[m]"),
            std::string::npos)
      << illegal.out;
  // A syntax error in a file: file:line:col and a hint.
  std::ofstream(dir / "s.schedule") << "# tiles\nsplit out0 n 16\nsplat out0 n\n";
  CommandResult syntax = ollie("emit " + spec + " -o " + dir.string() + " --schedule " +
                               (dir / "s.schedule").string());
  EXPECT_EQ(syntax.exit_code, 1) << syntax.out;
  EXPECT_NE(syntax.out.find((dir / "s.schedule").string() +
                            ":3:1: error: unknown schedule directive 'splat'"),
            std::string::npos)
      << syntax.out;
  EXPECT_NE(syntax.out.find("hint: directives are: split, reorder"), std::string::npos)
      << syntax.out;
  // Neither a file nor a schedule.
  CommandResult neither = ollie("emit " + spec + " -o " + dir.string() + " --schedule nosuchfile");
  EXPECT_EQ(neither.exit_code, 1) << neither.out;
  EXPECT_NE(neither.out.find("--schedule: 'nosuchfile' is neither a file nor a schedule"),
            std::string::npos)
      << neither.out;
  // No kernel is written when the schedule is rejected.
  EXPECT_FALSE(fs::exists(dir / "softmax.cpp"));
  fs::remove_all(dir);
}

TEST(Cli, SpecErrorPointsAtTheLine) {
  fs::path dir = temp_dir();
  fs::path spec = dir / "bad.py";
  std::ofstream(spec) << "import numpy as np\n"
                         "DIMS = dict(N=4)\n"
                         "def f(x: \"f32[N]\") -> \"f32[N]\":\n"
                         "    while x.shape[0] > 8:\n"
                         "        x = x + 1\n"
                         "    return x\n";
  CommandResult r = ollie("check " + spec.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(spec.string() + ":4:5: error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    while x.shape[0] > 8:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n      ^"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(Cli, InputOfTheWrongShapeIsRejected) {
  fs::path dir = temp_dir();
  std::string spec = (source_dir() / "examples/matmul.py").string();
  fs::path in = dir / "in.npz";
  ASSERT_EQ(
      ollie("eval " + spec + " --dims M=3,K=5,N=2 --seed 1 --save-inputs " + in.string()).exit_code,
      0);
  CommandResult r = ollie("eval " + spec + " --dims M=3,K=6,N=2 --inputs " + in.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("shape"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// `ollie emit --show-loops`: the loop nest on stdout at each step, each under its "== ..."
// line, in order: after the rewrites, after each directive, before emission; each block is
// the loops' text form (loops::to_text) of the schedule's prefix so far.
struct ShownStep {
  std::string header;
  std::string loops;
};

// The "== ..." blocks of --show-loops output, each without the blank line that ends it;
// the "wrote ..." line after them goes to `wrote` when given.
std::vector<ShownStep> shown_steps(const std::string& out, std::string* wrote = nullptr) {
  std::vector<ShownStep> steps;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("== ", 0) == 0)
      steps.push_back({line.substr(3), ""});
    else if (wrote && line.rfind("wrote ", 0) == 0)
      *wrote = line;
    else if (!steps.empty())
      steps.back().loops += line + "\n";
  }
  for (auto& step : steps)
    if (step.loops.ends_with("\n\n")) step.loops.pop_back();
  return steps;
}

TEST(Cli, ShowLoopsPrintsTheLoopNestAfterEachStepInOrder) {
  fs::path dir = temp_dir();
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  const std::string args =
      "emit " + spec + " --dims M=5,N=37 --schedule 'split out0 n 8; vectorize out0 n_i'";
  // stdout alone (what a pager gets).
  CommandResult shown = shell(std::string(OLLIE_BINARY) + " " + args + " --show-loops -o " +
                              (dir / "shown").string() + " 2>/dev/null");
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  std::string wrote;
  const std::vector<ShownStep> steps = shown_steps(shown.out, &wrote);
  ASSERT_EQ(steps.size(), 4u) << shown.out;
  EXPECT_EQ(steps[0].header, "after rewrites (none)");
  EXPECT_EQ(steps[1].header, "after 'split out0 n 8' (directive 1 of 2)");
  EXPECT_EQ(steps[2].header, "after 'vectorize out0 n_i' (directive 2 of 2)");
  EXPECT_EQ(steps[3].header, "before emission");
  EXPECT_EQ(wrote.rfind("wrote ", 0), 0u) << shown.out;  // last, after the blocks
  EXPECT_TRUE(shown.out.ends_with(wrote + "\n")) << shown.out;
  // The split's loops appear at the split and not before; the vector loop after its directive.
  EXPECT_EQ(steps[0].loops.find("n_i"), std::string::npos) << steps[0].loops;
  EXPECT_NE(steps[1].loops.find("for n_i in"), std::string::npos) << steps[1].loops;
  EXPECT_EQ(steps[1].loops.find("vectorized for n_i"), std::string::npos) << steps[1].loops;
  EXPECT_NE(steps[2].loops.find("vectorized for n_i"), std::string::npos) << steps[2].loops;
  // Each block is the text form of the schedule's prefix; the last, of the whole schedule.
  ollie::spec::SpecOptions options;
  options.dim_overrides = {{"M", 5}, {"N", 37}};
  const ollie::ir::Graph graph = ollie::spec::load_spec(spec, options);
  const auto schedule = ollie::loops::parse_schedule("split out0 n 8\nvectorize out0 n_i\n");
  ollie::loops::Schedule prefix;
  for (size_t i = 0; i <= schedule.directives.size(); ++i) {
    EXPECT_EQ(steps[i].loops, ollie::loops::to_text(ollie::loops::lower(graph, prefix))) << i;
    if (i < schedule.directives.size()) prefix.directives.push_back(schedule.directives[i]);
  }
  EXPECT_EQ(steps[3].loops, ollie::loops::to_text(ollie::loops::lower(graph, schedule)));
  // The files are those emit writes without --show-loops, and nothing went to stderr.
  CommandResult plain = ollie(args + " -o " + (dir / "plain").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  for (const char* file : {"softmax.cpp", "softmax.ollie.h", "softmax.schedule"})
    EXPECT_EQ(read_file(dir / "shown" / file), read_file(dir / "plain" / file)) << file;
  CommandResult again = ollie(args + " --show-loops -o " + (dir / "shown").string());
  EXPECT_EQ(again.out, shown.out);
  fs::remove_all(dir);
}

TEST(Cli, ShowLoopsShowsOneBlockPerDirectiveOfTheDefaultScheduleAndStopsAtAnIllegalOne) {
  fs::path dir = temp_dir();
  const std::string spec = (source_dir() / "examples/softmax.py").string();
  CommandResult shown = ollie("emit " + spec + " --dims M=5,N=37 --show-loops -o " + dir.string());
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  const std::vector<ShownStep> steps = shown_steps(shown.out);
  std::istringstream written(read_file(dir / "softmax.schedule"));
  std::vector<std::string> directives;
  for (std::string line; std::getline(written, line);)
    if (!line.empty() && line[0] != '#') directives.push_back(line);
  ASSERT_FALSE(directives.empty());
  ASSERT_EQ(steps.size(), directives.size() + 2) << shown.out;
  for (size_t i = 0; i < directives.size(); ++i)
    EXPECT_EQ(steps[i + 1].header, "after '" + directives[i] + "' (directive " +
                                       std::to_string(i + 1) + " of " +
                                       std::to_string(directives.size()) + ")");
  // An illegal directive: the steps before it, then its error; nothing emitted.
  CommandResult illegal = ollie("emit " + spec + " --show-loops -o " + (dir / "bad").string() +
                                " --schedule 'split out0 n 8; parallel t1 n'");
  EXPECT_EQ(illegal.exit_code, 1) << illegal.out;
  const std::vector<ShownStep> before = shown_steps(illegal.out);
  ASSERT_EQ(before.size(), 2u) << illegal.out;
  EXPECT_EQ(before[1].header, "after 'split out0 n 8' (directive 1 of 2)");
  EXPECT_NE(illegal.out.find("parallel t1 n"), std::string::npos) << illegal.out;
  EXPECT_FALSE(fs::exists(dir / "bad" / "softmax.cpp"));
  // With --show-stages it is refused (that prints the stages instead of emitting).
  EXPECT_EQ(ollie("emit " + spec + " --show-loops --show-stages").exit_code, 2);
  fs::remove_all(dir);
}

}  // namespace
