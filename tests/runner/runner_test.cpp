// Tests of the runner: hand-written kernels compiled to .so files here, run through the
// real ollie-runner child, including kernels that crash, hang, or misbehave, and libraries
// holding several entry points picked by name.
#include "runner/runner.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "build/build.h"
#include "interp/interp.h"
#include "spec/spec.h"
#include "support/error.h"

namespace {

using ollie::interp::Tensor;
using ollie::ir::DType;
using ollie::runner::Options;
using ollie::runner::Outcome;
using ollie::runner::Status;

const char* kPrelude = R"(#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <cmath>
)";

// A scratch directory for the whole test binary, removed at exit.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/ollie-runner-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    path = d;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

const std::string& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

// Compiles `body` (C++ defining ollie_entry, or not) into <name>.so, once per name; with
// `flags` instead of -O2 when given.
std::string build_so(const std::string& name, const std::string& body,
                     const std::string& flags = "-O2") {
  static std::map<std::string, std::string> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  const std::string src = scratch() + "/" + name + ".cpp";
  const std::string so = scratch() + "/" + name + ".so";
  std::ofstream(src) << kPrelude << body;
  const std::string cmd =
      "g++ -std=c++20 " + flags + " -shared -fPIC -o '" + so + "' '" + src + "'";
  if (std::system(cmd.c_str()) != 0)
    throw std::runtime_error("test kernel failed to compile: " + name);
  built[name] = so;
  return so;
}

Options options() {
  Options o;
  o.runner_path = OLLIE_RUNNER;
  o.timeout_seconds = 20;
  o.placement = ollie::runner::Placement::Start;  // these tests put guard pages where they expect
  return o;
}

ollie::ir::Graph spec(const std::string& source) {
  return ollie::spec::compile_spec("test.py", "import numpy as np\n" + source, {});
}

Tensor tensor(DType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

// Deterministic, non-trivial values; integers when `integral` (exact in f32 sums).
std::vector<double> values(size_t n, double scale, bool integral) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    double x = std::fmod(static_cast<double>(i * 7 + 3), 11.0) - 5.0;
    v[i] = integral ? x : x * scale + 0.125 * static_cast<double>(i % 3);
  }
  return v;
}

const char* kMatmulF32 = R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const float* a = static_cast<const float*>(buffers[0]);
  const float* b = static_cast<const float*>(buffers[1]);
  float* c = static_cast<float*>(buffers[2]);
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
      c[i * N + j] = s;
    }
}
)";

const char* kMatmulSpecF32 = R"(
DIMS = dict(M=3, K=4, N=5)
def mm(a: "f32[M, K]", b: "f32[K, N]") -> "f32[M, N]":
    return a @ b
)";

TEST(Runner, MatmulF32MatchesReference) {
  auto graph = spec(kMatmulSpecF32);
  ASSERT_EQ(graph.dims, (std::vector<std::string>{"M", "K", "N"}));
  std::vector<Tensor> in = {tensor(DType::F32, {3, 4}, values(12, 1, true)),
                            tensor(DType::F32, {4, 5}, values(20, 1, true))};
  Outcome out = ollie::runner::run(build_so("mm_f32", kMatmulF32), graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  auto ref = ollie::interp::evaluate(graph, in);
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].dtype, DType::F32);
  EXPECT_EQ(out.outputs[0].shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(out.outputs[0].data, ref.values[0].data);  // integer inputs: exact
  EXPECT_GE(out.seconds, 0.0);
  EXPECT_LT(out.seconds, 5.0);
}

TEST(Runner, MatmulF64MatchesReference) {
  auto graph = spec(R"(
DIMS = dict(M=4, K=6, N=3)
def mm(a: "f64[M, K]", b: "f64[K, N]") -> "f64[M, N]":
    return a @ b
)");
  const std::string so = build_so("mm_f64", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const double* a = static_cast<const double*>(buffers[0]);
  const double* b = static_cast<const double*>(buffers[1]);
  double* c = static_cast<double*>(buffers[2]);
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
      c[i * N + j] = s;
    }
}
)");
  std::vector<Tensor> in = {tensor(DType::F64, {4, 6}, values(24, 0.3, false)),
                            tensor(DType::F64, {6, 3}, values(18, 0.7, false))};
  Outcome out = ollie::runner::run(so, graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  auto ref = ollie::interp::evaluate(graph, in);
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].dtype, DType::F64);
  ASSERT_EQ(out.outputs[0].data.size(), 12u);
  bool any_fraction = false;
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_NEAR(out.outputs[0].data[i], ref.values[0].data[i], 1e-12) << "element " << i;
    any_fraction |= out.outputs[0].data[i] != std::floor(out.outputs[0].data[i]);
  }
  EXPECT_TRUE(any_fraction);  // f64 really travelled as f64, not rounded through f32
}

TEST(Runner, TwoOutputsInReturnOrder) {
  auto graph = spec(R"(
DIMS = dict(N=5)
def f(x: "f32[N]", y: "f32[N]") -> ("f32[N]", "f32[N]"):
    return x + y, x * y
)");
  const std::string so = build_so("two_out", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  const float* y = static_cast<const float*>(buffers[1]);
  float* s = static_cast<float*>(buffers[2]);
  float* p = static_cast<float*>(buffers[3]);
  for (int64_t i = 0; i < dims[0]; ++i) { s[i] = x[i] + y[i]; p[i] = x[i] * y[i]; }
}
)");
  std::vector<Tensor> in = {tensor(DType::F32, {5}, {1, 2, 3, 4, 5}),
                            tensor(DType::F32, {5}, {10, 20, 30, 40, 50})};
  Outcome out = ollie::runner::run(so, graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  ASSERT_EQ(out.outputs.size(), 2u);
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{11, 22, 33, 44, 55}));
  EXPECT_EQ(out.outputs[1].data, (std::vector<double>{10, 40, 90, 160, 250}));
}

TEST(Runner, DimsReachTheKernelInGraphOrder) {
  auto graph = spec(R"(
DIMS = dict(C=4, A=7, B=11)
def f(x: "f32[A, B]", y: "f32[C]") -> "f32[C]":
    return y * 2.0
)");
  ASSERT_EQ(graph.dims, (std::vector<std::string>{"A", "B", "C"}));
  const std::string so = build_so("dims", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  float* out = static_cast<float*>(buffers[2]);
  for (int i = 0; i < 3; ++i) out[i] = static_cast<float>(dims[i]);
  out[3] = -1;
}
)");
  std::vector<Tensor> in = {tensor(DType::F32, {7, 11}, values(77, 1, true)),
                            tensor(DType::F32, {4}, {0, 0, 0, 0})};
  Outcome out = ollie::runner::run(so, graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{7, 11, 4, -1}));
}

TEST(Runner, UnwrittenOutputElementIsPoison) {
  auto graph = spec(kMatmulSpecF32);
  const std::string so = build_so("skip_last", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  float* c = static_cast<float*>(buffers[2]);
  const int64_t n = dims[0] * dims[2];
  for (int64_t i = 0; i + 1 < n; ++i) c[i] = 1.0f;
}
)");
  std::vector<Tensor> in = {tensor(DType::F32, {3, 4}, values(12, 1, true)),
                            tensor(DType::F32, {4, 5}, values(20, 1, true))};
  Outcome out = ollie::runner::run(so, graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  const auto& data = out.outputs[0].data;
  ASSERT_EQ(data.size(), 15u);
  for (size_t i = 0; i + 1 < data.size(); ++i) EXPECT_EQ(data[i], 1.0);
  EXPECT_TRUE(std::isnan(data.back()));
}

TEST(Runner, UnwrittenBoolIsNaNAndWrittenBoolsRoundTrip) {
  auto graph = spec(R"(
DIMS = dict(N=3)
def f(x: "f32[N]", y: "f32[N]") -> "bool[N]":
    return x > y
)");
  ASSERT_EQ(graph.results.at(0).dtype, DType::Bool);
  const std::string so = build_so("bool_partial", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  bool* out = static_cast<bool*>(buffers[2]);
  out[0] = true; out[1] = false;
}
)");
  std::vector<Tensor> in = {tensor(DType::F32, {3}, {1, 2, 3}), tensor(DType::F32, {3}, {0, 5, 0})};
  Outcome out = ollie::runner::run(so, graph, in, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  const auto& data = out.outputs[0].data;
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(data[0], 1.0);
  EXPECT_EQ(data[1], 0.0);
  EXPECT_TRUE(std::isnan(data[2]));
}

// A graph with one f32[N] input and output, for kernels whose values do not matter.
ollie::ir::Graph vector_graph() {
  return spec(R"(
DIMS = dict(N=4)
def f(x: "f32[N]") -> "f32[N]":
    return x + 1.0
)");
}

std::vector<Tensor> vector_inputs() { return {tensor(DType::F32, {4}, {1, 2, 3, 4})}; }

const char* kPlusOne = R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
}
)";

TEST(Runner, SegfaultIsCrashWithSigsegv) {
  const std::string so = build_so("segv", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) {
  volatile int* p = nullptr;
  *p = 42;
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Crash) << out.message;
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_NE(out.message.find("SIGSEGV"), std::string::npos) << out.message;
  EXPECT_TRUE(out.outputs.empty());
  // The parent is alive and the next run works.
  Outcome again = ollie::runner::run(build_so("plus_one", kPlusOne), vector_graph(),
                                     vector_inputs(), options());
  ASSERT_EQ(again.status, Status::Ok) << again.message;
  EXPECT_EQ(again.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Runner, AbortIsCrashWithSigabrt) {
  const std::string so = build_so("abort", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) { std::abort(); }
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Crash) << out.message;
  EXPECT_EQ(out.signal, SIGABRT);
  EXPECT_NE(out.message.find("SIGABRT"), std::string::npos) << out.message;
}

TEST(Runner, WriteToInputIsCaught) {
  const std::string so = build_so("write_input", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  static_cast<float*>(buffers[0])[0] = 0.0f;
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Crash) << out.message;
  EXPECT_EQ(out.signal, SIGSEGV);
}

TEST(Runner, WritePastTheOutputPageIsCaught) {
  const std::string so = build_so("overrun", R"(
#include <unistd.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  char* y = static_cast<char*>(buffers[1]);
  y[sysconf(_SC_PAGESIZE)] = 1;   // the guard page after the (one-page) output
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Crash) << out.message;
  EXPECT_EQ(out.signal, SIGSEGV);
}

// The child reports its own CPU time: the parent cannot reap it under bwrap, and bench
// would otherwise count a busy kernel's time as other processes' (every 2-thread
// confirmation then looked contended).
TEST(Runner, TheChildReportsItsOwnCpuTime) {
  const std::string so = build_so("spin", R"(
#include <ctime>
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 50000000L);
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_GE(out.cpu_seconds, 0.045);  // the 50 ms of thread CPU time it spun
  EXPECT_LT(out.cpu_seconds, 5.0);
}

TEST(Runner, InfiniteLoopTimesOut) {
  const std::string so = build_so("hang", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) {
  volatile unsigned long n = 0;
  for (;;) n = n + 1;
}
)");
  Options o = options();
  o.timeout_seconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out.status, Status::Timeout) << out.message;
  EXPECT_GE(elapsed, 0.9);
  EXPECT_LT(elapsed, 2.0);
  EXPECT_NE(out.message.find("1 s"), std::string::npos) << out.message;
}

TEST(Runner, MissingEntryIsLoadError) {
  const std::string so = build_so("no_entry", R"(
extern "C" void ollie_kernel(const float*, float*, const int64_t*) {}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::LoadError) << out.message;
  EXPECT_NE(out.message.find("ollie_entry"), std::string::npos) << out.message;
}

// Two candidates in one library, as a batch compile makes them: each is run by its name.
const char* kTwoEntries = R"(
extern "C" void plus_one_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
}
extern "C" void times_ten_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] * 10.0f;
}
)";

TEST(Runner, EntrySymbolPicksTheKernelInASharedLibrary) {
  const std::string so = build_so("two_entries", kTwoEntries);
  Options o = options();
  o.entry_symbol = "times_ten_entry";
  Outcome ten = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  ASSERT_EQ(ten.status, Status::Ok) << ten.message;
  EXPECT_EQ(ten.outputs[0].data, (std::vector<double>{10, 20, 30, 40}));
  o.entry_symbol = "plus_one_entry";
  Outcome one = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  ASSERT_EQ(one.status, Status::Ok) << one.message;
  EXPECT_EQ(one.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Runner, MissingEntrySymbolIsLoadErrorNamingIt) {
  const std::string so = build_so("two_entries", kTwoEntries);
  Options o = options();
  o.entry_symbol = "candidate_17_entry";
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  EXPECT_EQ(out.status, Status::LoadError) << out.message;
  EXPECT_NE(out.message.find("defines no candidate_17_entry symbol"), std::string::npos)
      << out.message;
  // And the default asks for ollie_entry, which this library lacks.
  out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::LoadError) << out.message;
  EXPECT_NE(out.message.find("defines no ollie_entry symbol"), std::string::npos) << out.message;
}

TEST(Runner, EntrySymbolMustBeACIdentifier) {
  const std::string so = build_so("two_entries", kTwoEntries);
  for (const std::string bad : {"", "9lives", "plus_one_entry ", "a-b", "x@@VERS_1"}) {
    Options o = options();
    o.entry_symbol = bad;
    try {
      ollie::runner::run(so, vector_graph(), vector_inputs(), o);
      FAIL() << "expected a UserError for '" << bad << "'";
    } catch (const ollie::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("not a C identifier"), std::string::npos) << e.what();
    }
  }
}

// The intended use: build::adapter_source with its own names for every candidate, all
// compiled into one library, each run by its entry.
TEST(Runner, RenamedAdaptersShareOneLibrary) {
  const auto graph = vector_graph();
  std::string body;
  for (int c = 0; c < 3; ++c) {
    const std::string id = "cand" + std::to_string(c);
    body += "extern \"C\" void " + id +
            "_kernel(const float* x, float* out0, const int64_t* dims) {\n"
            "  for (int64_t i = 0; i < dims[0]; ++i) out0[i] = x[i] + " +
            std::to_string(c) + ".0f;\n}\n";
    body += ollie::build::adapter_source(graph, {id + "_kernel", id + "_entry", id + "_signature"});
  }
  const std::string so = build_so("three_adapters", body);
  for (int c = 0; c < 3; ++c) {
    Options o = options();
    o.entry_symbol = "cand" + std::to_string(c) + "_entry";
    Outcome out = ollie::runner::run(so, graph, vector_inputs(), o);
    ASSERT_EQ(out.status, Status::Ok) << o.entry_symbol << ": " << out.message;
    EXPECT_EQ(out.outputs[0].data, (std::vector<double>{1.0 + c, 2.0 + c, 3.0 + c, 4.0 + c}))
        << o.entry_symbol;
  }
}

TEST(Runner, MissingLibraryIsLoadError) {
  const std::string path = scratch() + "/does_not_exist.so";
  Outcome out = ollie::runner::run(path, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::LoadError) << out.message;
  EXPECT_NE(out.message.find("does_not_exist.so"), std::string::npos) << out.message;
  EXPECT_STREQ(ollie::runner::status_name(out.status), "load-error");
}

TEST(Runner, KernelWritingToStdoutDoesNotBreakTheProtocol) {
  const std::string so = build_so("chatty", R"(
#include <iostream>
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  for (int i = 0; i < 2000; ++i) std::printf("kernel says hello %d\n", i);
  std::cout << "OLR1 fake report" << std::endl;
  std::fprintf(stderr, "kernel on stderr\n");
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] * 3.0f;
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{3, 6, 9, 12}));
}

TEST(Runner, ExitWithoutReportIsNotOk) {
  const std::string fail = build_so("exit3", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) { std::exit(3); }
)");
  Outcome out = ollie::runner::run(fail, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Crash) << out.message;
  EXPECT_NE(out.message.find("status 3"), std::string::npos) << out.message;
  const std::string quiet = build_so("exit0", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) { std::exit(0); }
)");
  out = ollie::runner::run(quiet, vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::ProtocolError) << out.message;
}

TEST(Runner, ThreadsOptionSetsOmpNumThreads) {
  // The kernel's environment is empty (the seal); libgomp read OMP_NUM_THREADS at load.
  const std::string so = build_so("omp_env", R"(
#include <omp.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  static_cast<float*>(buffers[1])[0] = static_cast<float>(omp_get_max_threads());
}
)",
                                  "-O2 -fopenmp");
  Options o = options();
  o.threads = 3;
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data[0], 3.0);
}

TEST(Runner, StdinIsNotInherited) {
  const std::string so = build_so("stdin", R"(
#include <unistd.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  char c;
  // /dev/null: read returns 0 at once instead of waiting on the parent's terminal.
  static_cast<float*>(buffers[1])[0] = static_cast<float>(read(0, &c, 1));
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data[0], 0.0);
}

TEST(Runner, OnlyTheProtocolFdsAreOpenInTheChild) {
  const std::string so = build_so("count_fds", R"(
#include <dirent.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) if (e->d_name[0] != '.') ++n;
  closedir(d);
  static_cast<float*>(buffers[1])[0] = static_cast<float>(n - 1);  // minus the DIR's own fd
}
)");
  // Without the sandbox (which would stop opendir): the descriptors themselves.
  Options o = options();
  o.sandbox = false;
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  // stdin, stdout, stderr, the report pipe and /proc/self/stat (the thread check's source;
  // the memfd is closed once mapped)
  EXPECT_EQ(out.outputs[0].data[0], 5.0);
}

TEST(Runner, ForkedHelperDoesNotHoldTheRunHostage) {
  const std::string so = build_so("forker", R"(
#include <unistd.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  if (fork() == 0) { for (;;) pause(); }
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
}
)");
  // Without the sandbox (which kills fork): the process group is cleaned up.
  Options o = options();
  o.sandbox = false;
  const auto t0 = std::chrono::steady_clock::now();
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
  EXPECT_LT(elapsed, 5.0);
}

TEST(Runner, RunCallsMakesEveryCallInOneProcessOnItsOwnBuffers) {
  // y = x + (how many calls came before): state kept between calls shows in the outputs.
  const std::string so = build_so("counter", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  static int calls = 0;
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + static_cast<float>(calls);
  ++calls;
}
)");
  auto a = vector_inputs();
  auto b = vector_inputs();
  for (double& x : b[0].data) x *= 10;
  Outcome out = ollie::runner::run_calls(so, vector_graph(), {a, b, a}, options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  ASSERT_EQ(out.call_outputs.size(), 3u);
  EXPECT_EQ(out.call_outputs[0][0].data, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(out.call_outputs[1][0].data, (std::vector<double>{11, 21, 31, 41}));
  EXPECT_EQ(out.call_outputs[2][0].data, (std::vector<double>{3, 4, 5, 6}));
}

TEST(Runner, PlausibleOutputsAreFiniteInsteadOfPoison) {
  const std::string so = build_so("writes_nothing", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) {}
)");
  Options o = options();
  o.plausible_outputs = true;
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  for (double x : out.outputs[0].data) EXPECT_TRUE(std::isfinite(x)) << x;
}

// ---- The sandbox ----

// A kernel that does something outside its computation is killed, and says which.
void expect_forbidden(const std::string& name, const std::string& body) {
  Outcome out =
      ollie::runner::run(build_so(name, body), vector_graph(), vector_inputs(), options());
  EXPECT_EQ(out.status, Status::Forbidden)
      << name << ": " << status_name(out.status) << ": " << out.message;
  EXPECT_NE(out.message.find("forbidden system call"), std::string::npos) << out.message;
  EXPECT_TRUE(out.outputs.empty());
}

TEST(Sandbox, OpeningAFileIsForbidden) {
  expect_forbidden("open_file", R"(
#include <fcntl.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  int fd = open("/etc/hostname", O_RDONLY);
  static_cast<float*>(buffers[1])[0] = static_cast<float>(fd);
}
)");
  expect_forbidden("write_file", R"(
#include <cstdio>
extern "C" void ollie_entry(void* const*, const int64_t*) {
  if (std::FILE* f = std::fopen("/tmp/ollie-sandbox-escape", "w")) std::fclose(f);
}
)");
}

TEST(Sandbox, SocketsAreForbidden) {
  expect_forbidden("socket", R"(
#include <sys/socket.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  static_cast<float*>(buffers[1])[0] = static_cast<float>(socket(AF_INET, SOCK_STREAM, 0));
}
)");
}

TEST(Sandbox, NewProcessesAndExecAreForbidden) {
  expect_forbidden("fork", R"(
#include <unistd.h>
extern "C" void ollie_entry(void* const*, const int64_t*) { if (fork() == 0) _exit(0); }
)");
  expect_forbidden("system", R"(
#include <cstdlib>
extern "C" void ollie_entry(void* const*, const int64_t*) { (void)std::system("true"); }
)");
  expect_forbidden("execve", R"(
#include <unistd.h>
extern "C" void ollie_entry(void* const*, const int64_t*) {
  char* argv[] = {nullptr};
  execve("/bin/true", argv, argv);
}
)");
}

// arch_prctl: the AMX tile-data permission request passes the filter (where the CPU or the
// kernel has no AMX it fails with EOPNOTSUPP or EINVAL, and out0[0] holds that errno; 0
// where it is granted); any other request kills.
TEST(Sandbox, ArchPrctlAllowsOnlyTheAmxPermissionRequest) {
  const std::string so = build_so("amx_permission", R"(
#include <cerrno>
#include <sys/syscall.h>
#include <unistd.h>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  const long r = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */);
  static_cast<float*>(buffers[1])[0] = static_cast<float>(r == 0 ? 0 : errno);
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  const double err = out.outputs[0].data[0];
  EXPECT_TRUE(err == 0 || err == EOPNOTSUPP || err == EINVAL) << err;
  expect_forbidden("other_feature", R"(
#include <sys/syscall.h>
#include <unistd.h>
extern "C" void ollie_entry(void* const*, const int64_t*) { syscall(SYS_arch_prctl, 0x1023, 17); }
)");
  expect_forbidden("get_fs", R"(
#include <sys/syscall.h>
#include <unistd.h>
extern "C" void ollie_entry(void* const*, const int64_t*) {
  unsigned long fs = 0;
  syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs);
}
)");
}

TEST(Sandbox, ThreadsStillWork) {
  // std::thread (clone with CLONE_THREAD) is allowed: OpenMP kernels need it.
  const std::string so = build_so("threads", R"(
#include <thread>
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  std::thread t([&] { for (int64_t i = 0; i < dims[0]; i += 2) y[i] = x[i] + 1.0f; });
  for (int64_t i = 1; i < dims[0]; i += 2) y[i] = x[i] + 1.0f;
  t.join();
}
)");
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), options());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Sandbox, HugeAllocationIsOutOfMemory) {
  const std::string so = build_so("huge_new", R"(
#include <vector>
extern "C" void ollie_entry(void* const* buffers, const int64_t*) {
  std::vector<char> big(size_t{1} << 40);  // 1 TiB
  static_cast<float*>(buffers[1])[0] = big[12345];
}
)");
  Options o = options();
  o.memory_bytes = uint64_t{1} << 30;
  Outcome out = ollie::runner::run(so, vector_graph(), vector_inputs(), o);
  EXPECT_EQ(out.status, Status::OutOfMemory) << status_name(out.status) << ": " << out.message;
  EXPECT_NE(out.message.find("out of memory"), std::string::npos) << out.message;
  EXPECT_STREQ(status_name(Status::OutOfMemory), "out-of-memory");
  EXPECT_STREQ(status_name(Status::Forbidden), "forbidden-syscall");
}

// ---- The sanitizer run ----

// One library built with the sanitizer flags (one slow compile), an entry per case; each
// reads x (f32[N]) and writes y = x + 1 when it gets that far.
const char* kSanitized = R"(
#include <fcntl.h>
#include <sys/socket.h>
#include <vector>
extern "C" void clean(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  std::vector<float> scratch(x, x + dims[0]);
#pragma omp parallel for
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = scratch[i] + 1.0f;
}
// Reads one element past a scratch copy; the value is used only for the last element,
// where it is multiplied by zero, so the outputs are right.
extern "C" void heap_overflow(void* const* buffers, const int64_t* dims) {
  std::fputs("kernel noise before the report: \xff\xfe\n   \n", stderr);
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  float* scratch = new float[dims[0]];
  for (int64_t i = 0; i < dims[0]; ++i) scratch[i] = x[i];
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = scratch[i] + 1.0f + 0.0f * (i + 1 == dims[0] ? scratch[i + 1] : 0.0f);
  delete[] scratch;
}
// Reads one element past the input buffer (inside its page: no guard page there).
extern "C" void input_overread(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  volatile float past = x[dims[0]];
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f + 0.0f * past;
}
// An int32 multiply that overflows (undefined); the wrapped result never matters.
extern "C" void signed_overflow(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  volatile int32_t big = 2000000000;
  const int32_t times_n = big * static_cast<int32_t>(dims[0]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
  if (times_n == 7) y[0] = 0.0f;
}
// The sandbox stays on: an open fails (instead of killing), a socket still kills.
extern "C" void opens_a_file(void* const* buffers, const int64_t* dims) {
  float* y = static_cast<float*>(buffers[1]);
  const int fd = open("/etc/hostname", O_RDONLY);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = static_cast<float>(fd);
}
extern "C" void opens_a_socket(void* const* buffers, const int64_t*) {
  static_cast<float*>(buffers[1])[0] = static_cast<float>(socket(AF_INET, SOCK_STREAM, 0));
}
)";

Outcome run_sanitized(const std::string& entry) {
  const std::string so =
      build_so("sanitized", kSanitized,
               "-O1 -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=all");
  Options o = options();
  o.entry_symbol = entry;
  o.sanitize = true;
  o.sanitizer_runtime = ollie::build::sanitizer_runtime("g++");
  return ollie::runner::run(so, vector_graph(), vector_inputs(), o);
}

TEST(Sanitizer, CleanKernelIsOk) {
  Outcome out = run_sanitized("clean");
  ASSERT_EQ(out.status, Status::Ok) << status_name(out.status) << ": " << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Sanitizer, HeapOverflowIsReportedWithTheFirstLinesOfTheReport) {
  Outcome out = run_sanitized("heap_overflow");
  ASSERT_EQ(out.status, Status::Sanitizer) << status_name(out.status) << ": " << out.message;
  EXPECT_EQ(out.message.rfind("ERROR: AddressSanitizer: heap-buffer-overflow", 0), 0u)
      << out.message;
  EXPECT_NE(out.message.find("READ of size 4"), std::string::npos) << out.message;
  EXPECT_EQ(out.message.find("Shadow bytes"), std::string::npos) << out.message;
  for (char c : out.message) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << int(c);
  EXPECT_STREQ(status_name(Status::Sanitizer), "sanitizer");
}

TEST(Sanitizer, ReadPastAnInputBufferIsReported) {
  // The same read without the sanitizer lands in the slack of the input's last page.
  Outcome plain = ollie::runner::run(build_so("input_overread", std::string(kSanitized) + R"(
extern "C" void ollie_entry(void* const* b, const int64_t* d) { input_overread(b, d); }
)"),
                                     vector_graph(), vector_inputs(), options());
  ASSERT_EQ(plain.status, Status::Ok) << plain.message;
  Outcome out = run_sanitized("input_overread");
  ASSERT_EQ(out.status, Status::Sanitizer) << status_name(out.status) << ": " << out.message;
  EXPECT_NE(out.message.find("use-after-poison"), std::string::npos) << out.message;
}

TEST(Sanitizer, SignedOverflowIsReported) {
  Outcome out = run_sanitized("signed_overflow");
  ASSERT_EQ(out.status, Status::Sanitizer) << status_name(out.status) << ": " << out.message;
  EXPECT_NE(out.message.find("runtime error: signed integer overflow"), std::string::npos)
      << out.message;
  EXPECT_NE(out.message.find("#0 "), std::string::npos)
      << "UBSAN_OPTIONS reached the runtime: " << out.message;
}

TEST(Sanitizer, SandboxStaysOnButOpeningAFileOnlyFails) {
  Outcome open_file = run_sanitized("opens_a_file");
  ASSERT_EQ(open_file.status, Status::Ok)
      << status_name(open_file.status) << ": " << open_file.message;
  EXPECT_EQ(open_file.outputs[0].data, (std::vector<double>{-1, -1, -1, -1}));
  Outcome socket = run_sanitized("opens_a_socket");
  EXPECT_EQ(socket.status, Status::Forbidden)
      << status_name(socket.status) << ": " << socket.message;
}

TEST(Sanitizer, NeedsTheRuntimeToPreload) {
  Options o = options();
  o.sanitize = true;
  o.sanitizer_runtime = scratch() + "/no-libasan.so";
  EXPECT_THROW(
      ollie::runner::run(build_so("plus_one", kPlusOne), vector_graph(), vector_inputs(), o),
      ollie::UserError);
}

int count_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

TEST(Runner, BackToBackRunsLeakNoFds) {
  const std::string ok = build_so("plus_one", kPlusOne);
  const std::string segv = build_so("segv", R"(
extern "C" void ollie_entry(void* const*, const int64_t*) {
  volatile int* p = nullptr;
  *p = 42;
}
)");
  auto graph = vector_graph();
  auto in = vector_inputs();
  // One run first, so lazily opened fds (none expected) do not count as leaks.
  ASSERT_EQ(ollie::runner::run(ok, graph, in, options()).status, Status::Ok);
  const int before = count_fds();
  for (int i = 0; i < 20; ++i) {
    Outcome out = ollie::runner::run(i % 5 == 4 ? segv : ok, graph, in, options());
    ASSERT_EQ(out.status, i % 5 == 4 ? Status::Crash : Status::Ok)
        << "run " << i << ": " << out.message;
  }
  ASSERT_EQ(ollie::runner::run(scratch() + "/nope.so", graph, in, options()).status,
            Status::LoadError);
  EXPECT_EQ(count_fds(), before);
}

TEST(Runner, ConcurrentRunsFromSeveralThreads) {
  const std::string ok = build_so("plus_one", kPlusOne);
  auto graph = vector_graph();
  std::vector<Outcome> outs(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<Tensor> in = {tensor(DType::F32, {4}, {double(t), 1, 2, 3})};
      outs[static_cast<size_t>(t)] = ollie::runner::run(ok, graph, in, options());
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    const auto& out = outs[static_cast<size_t>(t)];
    ASSERT_EQ(out.status, Status::Ok) << out.message;
    EXPECT_EQ(out.outputs[0].data, (std::vector<double>{t + 1.0, 2, 3, 4}));
  }
}

TEST(Runner, DefaultRunnerPathIsNextToTheExecutable) {
  // test_runner is built in the same folder as ollie-runner, as ollie is.
  ASSERT_EQ(std::filesystem::path(OLLIE_RUNNER).parent_path(),
            std::filesystem::read_symlink("/proc/self/exe").parent_path());
  Outcome out = ollie::runner::run(build_so("plus_one", kPlusOne), vector_graph(), vector_inputs());
  ASSERT_EQ(out.status, Status::Ok) << out.message;
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Runner, WrongInputsAreUserErrors) {
  auto graph = vector_graph();
  const std::string so = build_so("plus_one", kPlusOne);
  EXPECT_THROW(ollie::runner::run(so, graph, {}, options()), ollie::UserError);
  EXPECT_THROW(ollie::runner::run(so, graph, {tensor(DType::F32, {5}, {1, 2, 3, 4, 5})}, options()),
               ollie::UserError);
  Options bad = options();
  bad.runner_path = scratch() + "/no-such-runner";
  try {
    ollie::runner::run(so, graph, vector_inputs(), bad);
    FAIL() << "expected a UserError";
  } catch (const ollie::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-runner"), std::string::npos) << e.what();
  }
}

TEST(Runner, StatusNames) {
  EXPECT_STREQ(ollie::runner::status_name(Status::Ok), "ok");
  EXPECT_STREQ(ollie::runner::status_name(Status::Crash), "crash");
  EXPECT_STREQ(ollie::runner::status_name(Status::Timeout), "timeout");
  EXPECT_STREQ(ollie::runner::status_name(Status::ProtocolError), "protocol-error");
}

// ---- Calls at their own dims (the verifier's batched shape sweep) ----

ollie::ir::Graph vector_graph_of(int n) {
  return spec("DIMS = dict(N=" + std::to_string(n) +
              ")\ndef f(x: \"f32[N]\") -> \"f32[N]\":\n    return x + 1.0\n");
}

TEST(Runner, EachCallRunsAtItsOwnDimsInOneProcess) {
  // y = x + N: the output shows which dims each call was given.
  const std::string so = build_so("plus_n", R"(
extern "C" void ollie_entry(void* const* buffers, const int64_t* dims) {
  const float* x = static_cast<const float*>(buffers[0]);
  float* y = static_cast<float*>(buffers[1]);
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + float(dims[0]);
}
)");
  const std::vector<int> sizes = {4, 9, 1000, 1};
  std::vector<ollie::ir::Graph> graphs;
  std::vector<std::vector<Tensor>> inputs;
  for (int n : sizes) {
    graphs.push_back(vector_graph_of(n));
    std::vector<double> x(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = i;
    inputs.push_back({tensor(DType::F32, {n}, x)});
  }
  std::vector<const ollie::ir::Graph*> graph_of_call;
  std::vector<const std::vector<Tensor>*> calls;
  for (size_t c = 0; c < sizes.size(); ++c) {
    graph_of_call.push_back(&graphs[c]);
    calls.push_back(&inputs[c]);
  }
  for (auto placement : {ollie::runner::Placement::Start, ollie::runner::Placement::Random}) {
    Options o = options();
    o.placement = placement;
    const Outcome out = ollie::runner::run_calls(so, graph_of_call, calls, o);
    ASSERT_EQ(out.status, Status::Ok) << out.message;
    ASSERT_EQ(out.call_outputs.size(), sizes.size());
    for (size_t c = 0; c < sizes.size(); ++c) {
      const auto& y = out.call_outputs[c][0];
      ASSERT_EQ(y.shape, std::vector<int64_t>{sizes[c]});
      for (int i = 0; i < sizes[c]; ++i)
        ASSERT_EQ(y.data[static_cast<size_t>(i)], i + sizes[c]) << "call " << c << " element " << i;
    }
  }
  // One graph per call, and one spec.
  EXPECT_THROW(ollie::runner::run_calls(so, {graph_of_call[0]}, calls, options()),
               ollie::UserError);
  const ollie::ir::Graph other = spec(
      "DIMS = dict(N=4)\ndef f(x: \"f32[N]\", z: \"f32[N]\") -> \"f32[N]\":\n"
      "    return x + z\n");
  EXPECT_THROW(
      ollie::runner::run_calls(so, {&other, graph_of_call[1]}, {calls[0], calls[1]}, options()),
      ollie::UserError);
}

}  // namespace
