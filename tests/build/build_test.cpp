// Tests of the build driver: compiling candidates to shared objects, the content-addressed
// cache, compile errors, parallel batches, and the adapter entry point run through dlsym
// (also renamed, several candidates in one library).
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "build/build.h"
#include "emit/emit.h"
#include "spec/spec.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::build;

namespace {

using EntryFn = void (*)(void* const*, const int64_t*);

// Cheap flags for tests that are about the cache, not the code.
Toolchain quick() {
  Toolchain t;
  t.flags = {"-std=c++20", "-O0", "-shared", "-fPIC"};
  return t;
}

const char* kAddOneKernel = R"(#include <cstdint>
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = x[i] + 1.0f;
}
)";

// A dlopen handle for the duration of a test. RTLD_NODELETE: an OpenMP kernel pulls in
// libgomp, whose idle pool threads crash if dlclose unmaps it under them.
struct Library {
  void* handle = nullptr;
  explicit Library(const std::string& path)
      : handle(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {}
  ~Library() {
    if (handle) dlclose(handle);
  }
  void* sym(const char* name) const { return handle ? dlsym(handle, name) : nullptr; }
};

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-build-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ir::Graph add_one_graph() {
    return spec::compile_spec("add_one.py",
                              "import numpy as np\n"
                              "DIMS = dict(N=8)\n"
                              "def add_one(x: \"f32[N]\") -> \"f32[N]\":\n"
                              "    return x + 1.0\n",
                              {});
  }
  Request add_one_request(Toolchain toolchain = quick()) {
    return Request{
        {{"kernel.cpp", kAddOneKernel}, {"adapter.cpp", adapter_source(add_one_graph())}},
        toolchain};
  }
  std::string cache() const { return (dir_ / "cache").string(); }

  fs::path dir_;
};

TEST_F(BuildTest, TrivialKernelCompilesAndExportsBothSymbols) {
  Driver driver(cache());
  Result r = driver.compile(add_one_request());
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_GT(r.seconds, 0);
  EXPECT_EQ(r.key.size(), 64u);
  EXPECT_EQ(r.key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_TRUE(fs::exists(r.so_path));
  EXPECT_EQ(fs::path(r.so_path).parent_path(), fs::path(cache()) / r.key);
  EXPECT_TRUE(fs::exists(fs::path(cache()) / r.key / "meta.txt"));
  EXPECT_TRUE(fs::exists(fs::path(cache()) / r.key / "log.txt"));
  EXPECT_EQ(r.compiler_version, compiler_version("g++"));
  EXPECT_NE(r.compiler_version.find("g++"), std::string::npos);
  ASSERT_GE(r.command.size(), 4u);
  EXPECT_EQ(r.command.front(), "g++");
  EXPECT_EQ(r.command.back(), "adapter.cpp");
  EXPECT_EQ(driver.compiler_runs(), 1);
  // Nothing is left in the temp area after a successful build.
  EXPECT_TRUE(fs::is_empty(fs::path(cache()) / "tmp"));

  Library lib(r.so_path);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  EXPECT_NE(lib.sym("ollie_kernel"), nullptr);
  auto entry = reinterpret_cast<EntryFn>(lib.sym("ollie_entry"));
  ASSERT_NE(entry, nullptr);
  auto signature = static_cast<const char*>(lib.sym("ollie_signature"));
  ASSERT_NE(signature, nullptr);
  EXPECT_STREQ(signature, "add_one(f32[N]) -> (f32[N]); dims [N]");

  float x[3] = {1.5f, -2.0f, 10.0f}, out[3] = {0, 0, 0};
  void* buffers[2] = {x, out};
  int64_t dims[1] = {3};
  entry(buffers, dims);
  EXPECT_EQ(out[0], 2.5f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[2], 11.0f);
}

TEST_F(BuildTest, SecondCompileIsACacheHitWithoutRunningTheCompiler) {
  Result first;
  {
    Driver driver(cache());
    first = driver.compile(add_one_request());
    ASSERT_TRUE(first.ok) << first.log;
    Result again = driver.compile(add_one_request());
    EXPECT_TRUE(again.cache_hit);
    EXPECT_EQ(driver.compiler_runs(), 1);
  }
  // A new driver (as in another process) finds the entry on disk.
  Driver driver(cache());
  Result hit = driver.compile(add_one_request());
  EXPECT_TRUE(hit.ok);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.seconds, 0);
  EXPECT_EQ(hit.key, first.key);
  EXPECT_EQ(hit.so_path, first.so_path);
  EXPECT_EQ(hit.command, first.command);
  EXPECT_EQ(hit.compiler_version, first.compiler_version);
  EXPECT_EQ(hit.log, first.log);
  EXPECT_EQ(driver.compiler_runs(), 0);
}

TEST_F(BuildTest, KeyChangesWithOneFlagOneSourceByteOrAUnitName) {
  Driver driver(cache());
  Request base = add_one_request();
  std::string key = driver.compile(base).key;

  Request flag = base;
  flag.toolchain.flags[1] = "-O1";
  Request byte = base;
  byte.units[0].source.back() = ' ';  // last newline -> space: same program, other bytes
  Request name = base;
  name.units[1].name = "adapter2.cpp";

  std::vector<Result> r = driver.compile_all({flag, byte, name}, 2);
  for (const auto& x : r) EXPECT_TRUE(x.ok) << x.log;
  EXPECT_NE(r[0].key, key);
  EXPECT_NE(r[1].key, key);
  EXPECT_NE(r[2].key, key);
  EXPECT_NE(r[0].key, r[1].key);
  EXPECT_NE(r[1].key, r[2].key);
  EXPECT_EQ(driver.compiler_runs(), 4);
  // And the unchanged request still maps to the original key.
  EXPECT_EQ(driver.compile(base).key, key);
}

TEST_F(BuildTest, SanitizerBuildIsCachedApartFromTheRegularOne) {
  const Toolchain sanitized = sanitizer_toolchain();
  const auto has = [&](const char* flag) {
    return std::find(sanitized.flags.begin(), sanitized.flags.end(), flag) != sanitized.flags.end();
  };
  EXPECT_TRUE(has("-fsanitize=address,undefined"));
  EXPECT_TRUE(has("-fno-sanitize-recover=all"));
  EXPECT_TRUE(has("-O1"));
  EXPECT_FALSE(has("-O3"));
  EXPECT_TRUE(has("-march=native") && has("-fopenmp") && has("-shared") && has("-fPIC"));

  Driver driver(cache());
  const Result regular = driver.compile(add_one_request());
  const Result asan = driver.compile(add_one_request(sanitizer_toolchain(quick())));
  ASSERT_TRUE(asan.ok) << asan.log;
  EXPECT_NE(asan.key, regular.key);
  EXPECT_NE(asan.so_path, regular.so_path);
  EXPECT_TRUE(driver.compile(add_one_request(sanitizer_toolchain(quick()))).cache_hit);

  const std::string runtime = sanitizer_runtime("g++");
  EXPECT_TRUE(fs::is_regular_file(runtime)) << runtime;
  EXPECT_NE(fs::path(runtime).filename().string().find("libasan"), std::string::npos) << runtime;
  EXPECT_THROW(sanitizer_runtime("no-such-compiler-xyz"), UserError);
}

TEST_F(BuildTest, SyntaxErrorGivesTheFullLogAndIsCachedToo) {
  Driver driver(cache());
  Request bad{
      {{"broken_kernel.cpp", "extern \"C\" void ollie_kernel(const float* x) {\n  int y = ;\n}\n"}},
      quick()};
  Result r = driver.compile(bad);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.so_path.empty());
  EXPECT_NE(r.log.find("broken_kernel.cpp:2:"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("exited with status"), std::string::npos) << r.log;

  Result again = driver.compile(bad);
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.log, r.log);
  EXPECT_EQ(again.key, r.key);
  EXPECT_EQ(driver.compiler_runs(), 1);
}

TEST_F(BuildTest, CompileAllKeepsOrderAndSharesDuplicates) {
  auto kernel = [](int value) {
    return Request{{{"kernel.cpp", "extern \"C\" int ollie_kernel() { return " +
                                       std::to_string(value) + "; }\n"}},
                   quick()};
  };
  Driver driver(cache());
  std::vector<Result> r = driver.compile_all({kernel(10), kernel(20), kernel(10), kernel(30)}, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(driver.compiler_runs(), 3);
  EXPECT_EQ(r[0].key, r[2].key);
  EXPECT_EQ(r[0].so_path, r[2].so_path);
  EXPECT_NE(r[0].key, r[1].key);
  EXPECT_NE(r[1].key, r[3].key);
  const int expected[] = {10, 20, 10, 30};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(r[i].ok) << r[i].log;
    Library lib(r[i].so_path);
    ASSERT_NE(lib.handle, nullptr) << dlerror();
    auto fn = reinterpret_cast<int (*)()>(lib.sym("ollie_kernel"));
    ASSERT_NE(fn, nullptr);
    EXPECT_EQ(fn(), expected[i]) << "result " << i;
  }
}

TEST_F(BuildTest, AdapterRunsAHandWrittenMatmulWithTheDefaultToolchain) {
  ir::Graph g =
      spec::compile_spec("matmul.py",
                         "import numpy as np\n"
                         "DIMS = dict(M=3, K=4, N=5)\n"
                         "def matmul(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
                         "    return a @ b\n",
                         {});
  const std::string decl =
      "extern \"C\" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* "
      "dims);";
  EXPECT_EQ(emit::kernel_declaration(g), decl);
  std::string adapter = adapter_source(g);
  EXPECT_NE(adapter.find(decl), std::string::npos) << adapter;
  EXPECT_NE(
      adapter.find("extern \"C\" void ollie_entry(void* const* buffers, const int64_t* dims)"),
      std::string::npos);

  // The kernel includes the declaration so a signature mismatch would not compile.
  const std::string kernel =
      "#include \"matmul.ollie.h\"\n"
      "extern \"C\" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* "
      "dims) {\n"
      "  const int64_t M = dims[0], K = dims[1], N = dims[2];\n"
      "  #pragma omp parallel for\n"
      "  for (int64_t i = 0; i < M; ++i)\n"
      "    for (int64_t j = 0; j < N; ++j) {\n"
      "      float s = 0;\n"
      "      for (int64_t k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];\n"
      "      out0[i * N + j] = s;\n"
      "    }\n"
      "}\n";
  Driver driver(cache());
  Result r = driver.compile(
      Request{{{"matmul.ollie.h", "#pragma once\n#include <cstdint>\n" + decl + "\n"},
               {"kernel.cpp", kernel},
               {"adapter.cpp", adapter}},
              Toolchain{}});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(std::find(r.command.begin(), r.command.end(), "matmul.ollie.h"), r.command.end());
  EXPECT_NE(std::find(r.command.begin(), r.command.end(), "-fopenmp"), r.command.end());

  Library lib(r.so_path);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  auto entry = reinterpret_cast<EntryFn>(lib.sym("ollie_entry"));
  ASSERT_NE(entry, nullptr);
  const int64_t M = 7, K = 13, N = 5;  // not the bound dims: the kernel is generic
  std::vector<float> a(M * K), b(K * N), out(M * N, -999.0f);
  for (int64_t i = 0; i < M * K; ++i) a[i] = static_cast<float>((i * 7) % 11 - 5);
  for (int64_t i = 0; i < K * N; ++i) b[i] = static_cast<float>((i * 5) % 9 - 4);
  void* buffers[3] = {a.data(), b.data(), out.data()};
  int64_t dims[3] = {M, K, N};
  entry(buffers, dims);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double expect = 0;
      for (int64_t k = 0; k < K; ++k) expect += double(a[i * K + k]) * double(b[k * N + j]);
      EXPECT_EQ(out[i * N + j], static_cast<float>(expect)) << i << "," << j;  // small ints: exact
    }
}

TEST(Adapter, MapsEveryDtypeAndRenamesClashingParameters) {
  ir::Graph g;
  g.entry = "mixed";
  ir::Builder b(g);
  const ir::Shape n = {ir::DimExpr::symbol("N")};
  auto add_input = [&](const std::string& name, ir::DType t) {
    g.params.push_back({name, t, n});
    g.inputs.push_back(b.input(static_cast<int>(g.params.size()) - 1, name, t, n));
  };
  add_input("new", ir::DType::F64);
  add_input("dims", ir::DType::I32);
  add_input("out1", ir::DType::I64);
  add_input("mask", ir::DType::Bool);
  g.dims = {"N"};
  g.bound_dims = {{"N", 4}};
  g.results.push_back({"out0", ir::DType::Bool, n});
  g.outputs.push_back(g.inputs[3]);
  g.results.push_back({"out1", ir::DType::F64, n});
  g.outputs.push_back(g.inputs[0]);
  EXPECT_EQ(emit::kernel_declaration(g),
            "extern \"C\" void ollie_kernel(const double* new_, const int32_t* dims_, const "
            "int64_t* out1_, "
            "const bool* mask, bool* out0, double* out1, const int64_t* dims);");
  std::string adapter = adapter_source(g);
  EXPECT_NE(adapter.find("static_cast<const bool*>(buffers[3])"), std::string::npos) << adapter;
  EXPECT_NE(adapter.find("static_cast<double*>(buffers[5])"), std::string::npos) << adapter;
  EXPECT_EQ(adapter.find("buffers[6]"), std::string::npos) << adapter;
}

TEST_F(BuildTest, RenamedAdaptersPutTwoCandidatesInOneLibrary) {
  const ir::Graph g = add_one_graph();
  // The default names give today's text exactly (the cache keys on it).
  const std::string fallback = adapter_source(g);
  EXPECT_EQ(adapter_source(g, AdapterNames{}), fallback);
  EXPECT_EQ(fallback.find("cand"), std::string::npos);

  AdapterNames a{"cand0_kernel", "cand0_entry", "cand0_signature"};
  AdapterNames b{"cand1_kernel", "cand1_entry", "cand1_signature"};
  const std::string adapter_a = adapter_source(g, a);
  EXPECT_NE(
      adapter_a.find(
          "extern \"C\" void cand0_kernel(const float* x, float* out0, const int64_t* dims);"),
      std::string::npos)
      << adapter_a;
  EXPECT_NE(adapter_a.find("extern \"C\" const char cand0_signature[]"), std::string::npos)
      << adapter_a;
  EXPECT_NE(
      adapter_a.find("extern \"C\" void cand0_entry(void* const* buffers, const int64_t* dims)"),
      std::string::npos)
      << adapter_a;
  EXPECT_NE(adapter_a.find("  cand0_kernel("), std::string::npos) << adapter_a;
  EXPECT_EQ(adapter_a.find("ollie_"), std::string::npos) << adapter_a;

  auto kernel = [](const std::string& name, const std::string& op) {
    return "#include <cstdint>\nextern \"C\" void " + name +
           "(const float* x, float* out0, const int64_t* dims) {\n"
           "  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = x[i] " +
           op + ";\n}\n";
  };
  Driver driver(cache());
  Result r = driver.compile(Request{{{"kernel0.cpp", kernel("cand0_kernel", "+ 1.0f")},
                                     {"adapter0.cpp", adapter_a},
                                     {"kernel1.cpp", kernel("cand1_kernel", "* 2.0f")},
                                     {"adapter1.cpp", adapter_source(g, b)}},
                                    quick()});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(driver.compiler_runs(), 1);
  Library lib(r.so_path);
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  EXPECT_EQ(lib.sym("ollie_entry"), nullptr);
  ASSERT_NE(lib.sym("cand1_signature"), nullptr);
  EXPECT_STREQ(static_cast<const char*>(lib.sym("cand1_signature")),
               "add_one(f32[N]) -> (f32[N]); dims [N]");
  auto entry0 = reinterpret_cast<EntryFn>(lib.sym("cand0_entry"));
  auto entry1 = reinterpret_cast<EntryFn>(lib.sym("cand1_entry"));
  ASSERT_NE(entry0, nullptr);
  ASSERT_NE(entry1, nullptr);
  float x[2] = {1.5f, -3.0f}, out0[2] = {0, 0}, out1[2] = {0, 0};
  int64_t dims[1] = {2};
  void* buffers0[2] = {x, out0};
  void* buffers1[2] = {x, out1};
  entry0(buffers0, dims);
  entry1(buffers1, dims);
  EXPECT_EQ(out0[0], 2.5f);
  EXPECT_EQ(out0[1], -2.0f);
  EXPECT_EQ(out1[0], 3.0f);
  EXPECT_EQ(out1[1], -6.0f);
}

TEST(Adapter, NamesMustBeCIdentifiers) {
  ir::Graph g = spec::compile_spec("f.py",
                                   "import numpy as np\nDIMS = dict(N=2)\n"
                                   "def f(x: \"f32[N]\") -> \"f32[N]\":\n    return x\n",
                                   {});
  EXPECT_THROW(adapter_source(g, AdapterNames{"", "e", "s"}), InternalError);
  EXPECT_THROW(adapter_source(g, AdapterNames{"k", "2e", "s"}), InternalError);
  EXPECT_THROW(adapter_source(g, AdapterNames{"k", "e", "s[]; int x"}), InternalError);
  EXPECT_NO_THROW(adapter_source(g, AdapterNames{"_k9", "E_0", "s"}));
}

TEST_F(BuildTest, MissingCompilerIsAUserErrorNamingIt) {
  Driver driver(cache());
  Request r = add_one_request();
  r.toolchain.compiler = "no-such-compiler-xyz";
  try {
    driver.compile(r);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-compiler-xyz"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compiler_version("no-such-compiler-xyz"), UserError);
  EXPECT_THROW(driver.compile_all({add_one_request(), r}, 2), UserError);
}

TEST_F(BuildTest, BadUnitNamesAreRejected) {
  Driver driver(cache());
  EXPECT_THROW(driver.compile(Request{{{"../evil.cpp", "int x;"}}, quick()}), UserError);
  EXPECT_THROW(driver.compile(Request{{{"a.cpp", ""}, {"a.cpp", ""}}, quick()}), UserError);
  EXPECT_THROW(driver.compile(Request{{{"only.h", ""}}, quick()}), UserError);
  EXPECT_THROW(driver.compile(Request{{}, quick()}), UserError);
  EXPECT_EQ(driver.compiler_runs(), 0);
}

TEST_F(BuildTest, HungCompilerIsKilledAtTheTimeLimitAndNotCached) {
  fs::path fake = dir_ / "slow-cc";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\n"
           "if [ \"$1\" = --version ]; then echo 'slow-cc 1.0'; exit 0; fi\n"
           "echo compiling\n"
           "sleep 30\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  Driver driver(cache());
  driver.set_time_limit(1);
  Request r = add_one_request();
  r.toolchain.compiler = fake.string();
  auto start = std::chrono::steady_clock::now();
  Result res = driver.compile(r);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(res.ok);
  EXPECT_LT(took, 10);
  EXPECT_NE(res.log.find("compiling"), std::string::npos) << res.log;
  EXPECT_NE(res.log.find("time limit of 1 s"), std::string::npos) << res.log;
  EXPECT_FALSE(fs::exists(fs::path(cache()) / res.key));
  EXPECT_TRUE(fs::is_empty(fs::path(cache()) / "tmp"));
  driver.compile(r);
  EXPECT_EQ(driver.compiler_runs(), 2);  // retried, not served from the cache
}

TEST_F(BuildTest, TwoDriversRacingOnOneKeyBothSucceed) {
  // Two drivers stand for two processes sharing the cache: both compile, one rename wins.
  Result r1, r2;
  std::thread t([&] { r1 = Driver(cache()).compile(add_one_request()); });
  r2 = Driver(cache()).compile(add_one_request());
  t.join();
  ASSERT_TRUE(r1.ok) << r1.log;
  ASSERT_TRUE(r2.ok) << r2.log;
  EXPECT_EQ(r1.so_path, r2.so_path);
  EXPECT_TRUE(fs::exists(r1.so_path));
  EXPECT_TRUE(fs::is_empty(fs::path(cache()) / "tmp"));
}

TEST_F(BuildTest, StaleTempDirsOfKilledCompilesAreSweptFreshOnesKept) {
  fs::create_directories(fs::path(cache()) / "tmp" / "old.abc");
  fs::create_directories(fs::path(cache()) / "tmp" / "new.abc");
  fs::last_write_time(fs::path(cache()) / "tmp" / "old.abc",
                      fs::file_time_type::clock::now() - std::chrono::hours(48));
  Driver driver(cache());
  EXPECT_FALSE(fs::exists(fs::path(cache()) / "tmp" / "old.abc"));
  EXPECT_TRUE(fs::exists(fs::path(cache()) / "tmp" / "new.abc"));
}

TEST(BuildCacheDir, FollowsTheEnvironment) {
  const char* saved = getenv("OLLIE_CACHE_DIR");
  std::string keep = saved ? saved : "";
  setenv("OLLIE_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(default_cache_dir(), "/some/where");
  unsetenv("OLLIE_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(default_cache_dir(), "/xdg/ollie/build");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_NE(default_cache_dir().find(".cache/ollie/build"), std::string::npos);
  if (saved) setenv("OLLIE_CACHE_DIR", keep.c_str(), 1);
}

}  // namespace
