// End-to-end tests of the bf16_dot directive through the `ollie` binary: a kernel emitted
// with it passes `ollie verify --level full` (its subnormal suites included), and a
// contraction with a float32 operand is refused with the reason, writing nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e_util.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::CommandResult;
using ollie_e2e::read_file;
using ollie_e2e::shell;

CommandResult ollie(const std::string& args) {
  return shell(std::string(OLLIE_BINARY) + " " + args + " 2>&1");
}

fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("ollie_bf16_dot_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const std::string kExamples = std::string(OLLIE_SOURCE_DIR) + "/examples/";

TEST(Bf16DotCli, AnEmittedKernelPassesFullVerification) {
  const fs::path dir = scratch("full");
  const std::string spec = kExamples + "matmul_bf16.py", dims = " --dims M=70,K=45,N=67";
  const CommandResult emitted =
      ollie("emit " + spec + dims + " --schedule 'bf16_dot out0' -o " + dir.string());
  ASSERT_EQ(emitted.exit_code, 0) << emitted.out;
  const std::string source = read_file(dir / "matmul_bf16.cpp");
  EXPECT_NE(source.find("ollie_bf16_dot(&a[0], K, 1, &b[0], N, 1, &out0[0], N, 1, M, N, K);"),
            std::string::npos);
  // The vdpbf16ps form is in the text, compiled where the machine has AVX512_BF16.
  EXPECT_NE(source.find("_mm512_dpbf16_ps"), std::string::npos);
  const CommandResult verified =
      ollie("verify " + spec + " " + (dir / "matmul_bf16.cpp").string() + dims + " --level full");
  EXPECT_EQ(verified.exit_code, 0) << verified.out;
  EXPECT_NE(verified.out.find("subnormal"), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("suites agree with the reference"), std::string::npos)
      << verified.out;
  fs::remove_all(dir);
}

TEST(Bf16DotCli, AFloat32OperandIsRefusedAndNothingIsWritten) {
  const fs::path dir = scratch("refused");
  const CommandResult r = ollie("emit " + kExamples +
                                "mla_decode_bf16.py --schedule 'bf16_dot t10' -o " + dir.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot bf16_dot t10: operand 1 of t10's product is a f32 load of t9, not "
                       "a bf16 buffer loaded as such"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "mla_decode_bf16.cpp"));
  fs::remove_all(dir);
}

}  // namespace
