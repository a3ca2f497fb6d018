// End-to-end test of `--symbol`: two kernels emitted under two names link into ONE program
// (a small main.cpp compiled with g++ next to both), which calls both and checks their
// outputs; a bad name is refused naming the flag; verify finds a renamed kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e_util.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::read_file;
using ollie_e2e::shell;

std::string ollie(const std::string& args) { return std::string(OLLIE_BINARY) + " " + args; }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ollie_symbol_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Calls softmax_k and gelu_k on the same 4x8 input; prints "ok" when both agree with a
// plain computation, else what differs.
const char* kMain = R"(#include <cmath>
#include <cstdio>
#include <vector>
#include "softmax.ollie.h"
#include "gelu.ollie.h"

int main() {
  const int64_t M = 4, N = 8;
  const int64_t dims[] = {M, N};
  static_assert(softmax_k_dims::count == 2 && gelu_k_dims::count == 2);
  std::vector<float> x(M * N), s(M * N), g(M * N);
  for (int64_t i = 0; i < M * N; ++i) x[i] = 0.25f * float(i % 11) - 1.0f;
  softmax_k(x.data(), s.data(), dims);
  gelu_k(x.data(), g.data(), dims);
  for (int64_t i = 0; i < M; ++i) {
    double mx = -1e30, sum = 0;
    for (int64_t j = 0; j < N; ++j) mx = std::fmax(mx, x[i * N + j]);
    for (int64_t j = 0; j < N; ++j) sum += std::exp(x[i * N + j] - mx);
    for (int64_t j = 0; j < N; ++j) {
      const double v = x[i * N + j];
      const double want_s = std::exp(v - mx) / sum;
      const double want_g = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      if (std::fabs(s[i * N + j] - want_s) > 1e-5 || std::fabs(g[i * N + j] - want_g) > 1e-5) {
        std::printf("differs at %ld,%ld: softmax %g vs %g, gelu %g vs %g\n", long(i), long(j),
                    s[i * N + j], want_s, g[i * N + j], want_g);
        return 1;
      }
    }
  }
  std::printf("ok\n");
  return 0;
}
)";

TEST(Symbol, TwoKernelsUnderTwoNamesLinkIntoOneProgram) {
  const fs::path dir = fresh_dir("link");
  const std::string examples = std::string(OLLIE_SOURCE_DIR) + "/examples/";
  for (const auto& [spec, symbol] :
       {std::pair<std::string, std::string>{"softmax", "softmax_k"}, {"gelu", "gelu_k"}}) {
    const auto r = shell(ollie("emit " + examples + spec + ".py --dims M=4,N=8 --symbol " + symbol +
                               " -o " + dir.string() + " 2>&1"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::string header = read_file(dir / (spec + ".ollie.h"));
    EXPECT_NE(header.find("extern \"C\" void " + symbol + "("), std::string::npos) << header;
    EXPECT_EQ(read_file(dir / (spec + ".cpp")).find("ollie_kernel("), std::string::npos);
  }
  std::ofstream(dir / "main.cpp") << kMain;
  const std::string d = dir.string();
  const auto built = shell("g++ -std=c++20 -O1 -I" + d + " " + d + "/main.cpp " + d +
                           "/softmax.cpp " + d + "/gelu.cpp -o " + d + "/both 2>&1");
  ASSERT_EQ(built.exit_code, 0) << built.out;
  const auto ran = shell(d + "/both 2>&1");
  EXPECT_EQ(ran.exit_code, 0) << ran.out;
  EXPECT_EQ(ran.out, "ok\n");

  // The verifier (and bench, run-kernel) call a renamed kernel by its --symbol.
  const auto verified = shell(ollie("verify " + examples + "gelu.py --dims M=4,N=8 " + d +
                                    "/gelu.cpp --symbol gelu_k 2>&1"));
  EXPECT_EQ(verified.exit_code, 0) << verified.out;
  const auto unnamed =
      shell(ollie("verify " + examples + "gelu.py --dims M=4,N=8 " + d + "/gelu.cpp 2>&1"));
  EXPECT_NE(unnamed.exit_code, 0) << unnamed.out;
  fs::remove_all(dir);
}

TEST(Symbol, TheDefaultIsOllieKernelAndABadNameIsRefusedNamingTheFlag) {
  const fs::path dir = fresh_dir("bad");
  const std::string spec = std::string(OLLIE_SOURCE_DIR) + "/examples/gelu.py --dims M=4,N=8";
  const auto plain = shell(ollie("emit " + spec + " -o " + dir.string() + " 2>&1"));
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  const std::string header = read_file(dir / "gelu.ollie.h");
  EXPECT_NE(header.find("extern \"C\" void ollie_kernel("), std::string::npos);
  EXPECT_NE(header.find("namespace ollie_dims {"), std::string::npos);
  for (const std::string bad : {"2fast", "my-kernel", "int", "ollie_entry"}) {
    const auto r =
        shell(ollie("emit " + spec + " --symbol " + bad + " -o " + dir.string() + "/x 2>&1"));
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--symbol '" + bad + "'"), std::string::npos) << r.out;
  }
  const auto opt = shell(
      ollie("optimize " + spec + " --symbol 'a b' --evals 1 -o " + dir.string() + "/run 2>&1"));
  EXPECT_EQ(opt.exit_code, 1) << opt.out;
  EXPECT_NE(opt.out.find("--symbol 'a b'"), std::string::npos) << opt.out;
  EXPECT_FALSE(fs::exists(dir / "run" / "run.db"));
  fs::remove_all(dir);
}

}  // namespace
