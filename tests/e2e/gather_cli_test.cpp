// End-to-end test of an embedding gather (examples/embedding.py): `ollie optimize` with a
// short budget writes a kernel that passes `ollie verify --level full`, whose certificate
// is full, and whose ids parameter is int64_t in the header, with its domain [-V, V).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e_util.h"

namespace {

namespace fs = std::filesystem;
using ollie_e2e::read_file;
using ollie_e2e::shell;

std::string ollie(const std::string& env, const std::string& args) {
  return env + " " + std::string(OLLIE_BINARY) + " " + args + " 2>&1";
}

TEST(GatherCli, OptimizeAnEmbeddingWritesAFullyVerifiedKernel) {
  const fs::path dir = fs::temp_directory_path() / ("ollie_gather_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string spec = std::string(OLLIE_SOURCE_DIR) + "/examples/embedding.py";
  const std::string env = "OLLIE_CACHE_DIR=" + (dir / "cache").string();
  const std::string dims = " --dims T=8,V=32,D=48,P=16";
  const auto r = shell(ollie(env, "optimize " + spec + dims +
                                      " --evals 2 --bench-seconds 0.05 --no-tuning-db -o " +
                                      (dir / "run").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("stopped: evaluation budget spent"), std::string::npos) << r.out;
  EXPECT_NE(read_file(dir / "run" / "certificate.json").find("\"level\": \"full\""),
            std::string::npos);
  const std::string header = read_file(dir / "run" / "embedding.ollie.h");
  EXPECT_NE(header.find("const int64_t* ids"), std::string::npos) << header;
  // The ids' domain, for whoever writes a kernel against the header.
  EXPECT_NE(header.find("ids: \"i64[T]\"  (input 0), indices into an axis of V in [-V, V)"),
            std::string::npos)
      << header;
  const auto v =
      shell(ollie(env, "verify " + spec + " " + (dir / "run" / "embedding.cpp").string() + dims));
  EXPECT_EQ(v.exit_code, 0) << v.out;
  fs::remove_all(dir);
}

}  // namespace
