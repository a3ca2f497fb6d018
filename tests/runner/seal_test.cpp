// Tests of the runner's seal (issue 16): kernels that tamper with their inputs, the memfd,
// the report pipe or the floating-point environment, constructors that reach out before
// the kernel is called, and kernels that look for the harness (prctl, getenv, descriptors,
// buffer placement). Each gets its expected Status, through the real ollie-runner child.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "build/build.h"
#include "interp/interp.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

using ollie::interp::Tensor;
using ollie::ir::DType;
using ollie::runner::Options;
using ollie::runner::Outcome;
using ollie::runner::Status;
using ollie::runner::TimingOptions;

const std::string& scratch() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/ollie-seal-test-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    return std::string(d);
  }();
  return dir;
}

// Compiles `body` into <name>.so once per name (`flags` after the defaults).
std::string build_so(const std::string& name, const std::string& body,
                     const std::string& flags = "-O2") {
  static std::map<std::string, std::string> built;
  if (auto it = built.find(name); it != built.end()) return it->second;
  const std::string src = scratch() + "/" + name + ".cpp";
  const std::string so = scratch() + "/" + name + ".so";
  std::ofstream(src) << "#include <cstdint>\n#include <cstring>\n#include <cstdlib>\n"
                     << "#include <unistd.h>\n#include <sys/mman.h>\n#include <fcntl.h>\n"
                     << body;
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
  return o;
}

ollie::ir::Graph vector_graph(int n = 4) {
  return ollie::spec::compile_spec("test.py",
                                   "import numpy as np\nDIMS = dict(N=" + std::to_string(n) +
                                       ")\ndef f(x: \"f32[N]\") -> \"f32[N]\":\n"
                                       "    return x + 1.0\n",
                                   {});
}

Tensor filled(int n, double start) {
  Tensor t;
  t.dtype = DType::F32;
  t.shape = {n};
  for (int i = 0; i < n; ++i) t.data.push_back(start + i);
  return t;
}

Outcome run(const std::string& name, const std::string& body, Options o = options()) {
  return ollie::runner::run(build_so(name, body), vector_graph(), {filled(4, 1)}, o);
}

// One kernel timed on two input sets, two rounds.
Outcome timed(const std::string& name, const std::string& body, Options o = options()) {
  TimingOptions timing;
  timing.warmup_rounds = 1;
  timing.min_rounds = 2;
  timing.max_rounds = 2;
  timing.budget_seconds = 0;
  return ollie::runner::time_kernels({{build_so(name, body), o.entry_symbol}}, vector_graph(),
                                     {{filled(4, 1)}, {filled(4, 9)}}, o, timing);
}

std::string describe(const Outcome& out) {
  return std::string(status_name(out.status)) + ": " + out.message;
}

// y = x + 1, after `prologue`.
std::string plus_one(const std::string& prologue, const std::string& before = "") {
  return before + R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
)" + prologue +
         R"(
  for (int64_t i = 0; i < dims[0]; ++i) y[i] = x[i] + 1.0f;
}
)";
}

// ---- Inputs and the runner's memory ----

const char* kMprotectInput = R"(
  char* page = (char*)((uintptr_t)x & ~(uintptr_t)4095);
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
  ((float*)x)[0] = 100.0f;
)";

TEST(Seal, MakingAnInputWritableIsForbidden) {
  const Outcome out = run("mprotect_input", plus_one(kMprotectInput));
  EXPECT_EQ(out.status, Status::Forbidden) << describe(out);
  const Outcome t = timed("mprotect_input", plus_one(kMprotectInput));
  EXPECT_EQ(t.status, Status::Forbidden) << describe(t);
}

TEST(Seal, AnInputChangedInPlaceIsTampered) {
  // Without the filter (which kills the mprotect) the change itself is caught: by the
  // parent in calls mode, by the child after the call in timed mode.
  Options o = options();
  o.sandbox = false;
  const Outcome out = run("mprotect_input", plus_one(kMprotectInput), o);
  EXPECT_EQ(out.status, Status::Tampered) << describe(out);
  EXPECT_NE(out.message.find("read-only input 'x'"), std::string::npos) << out.message;
  const Outcome t = timed("mprotect_input", plus_one(kMprotectInput), o);
  EXPECT_EQ(t.status, Status::Tampered) << describe(t);
  EXPECT_NE(t.message.find("read-only input 0"), std::string::npos) << t.message;
}

TEST(Seal, UnmappingOrRemappingTheBuffersIsForbidden) {
  EXPECT_EQ(run("munmap_output", plus_one(R"(
  munmap((void*)((uintptr_t)y & ~(uintptr_t)4095), 4096);
)"))
                .status,
            Status::Forbidden);
  EXPECT_EQ(run("madvise_input", plus_one(R"(
  madvise((void*)((uintptr_t)x & ~(uintptr_t)4095), 4096, MADV_DONTNEED);
)"))
                .status,
            Status::Forbidden);
  // A range that starts far below and reaches the buffers.
  EXPECT_EQ(run("mprotect_from_below", plus_one(R"(
  uintptr_t page = (uintptr_t)x & ~(uintptr_t)4095;
  uintptr_t below = page - ((uintptr_t)1 << 44);
  mprotect((void*)below, page + 4096 - below, PROT_READ | PROT_WRITE);
)"))
                .status,
            Status::Forbidden);
  EXPECT_EQ(run("mmap_fixed_over_input", plus_one(R"(
  void* page = (void*)((uintptr_t)x & ~(uintptr_t)4095);
  mmap(page, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
)"))
                .status,
            Status::Forbidden);
}

TEST(Seal, TheMemfdIsClosedBeforeTheKernelRuns) {
  // pwrite and mmap of fd 3 fail; y[0] says whether either worked.
  const Outcome out = run("fd3", plus_one("", R"(
static float reached_memfd() {
  char byte = 1;
  bool wrote = pwrite(3, &byte, 1, 0) == 1;
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
  return wrote || p != MAP_FAILED ? 100.0f : 0.0f;
}
)") + R"(
extern "C" void probe(void* const* b, const int64_t* dims) {
  ollie_entry(b, dims);
  static_cast<float*>(b[1])[0] += reached_memfd();
}
)");
  ASSERT_EQ(out.status, Status::Ok) << describe(out);
  Options o = options();
  o.entry_symbol = "probe";
  const Outcome probed = run("fd3", "", o);
  ASSERT_EQ(probed.status, Status::Ok) << describe(probed);
  EXPECT_EQ(probed.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
}

TEST(Seal, OnlyStdioTheThreadCountAndTheReportPipeAtARandomDescriptorAreOpen) {
  // y[0] = open descriptors (stdio, /proc/self/stat for the thread check, the report pipe), y[1] =
  // whether 3 or 4 is one of them, y[2] = the highest.
  const std::string body = R"(
extern "C" void ollie_entry(void* const* b, const int64_t*) {
  float* y = static_cast<float*>(b[1]);
  int n = 0, high = 0;
  for (int fd = 0; fd < 65536; ++fd)
    if (fcntl(fd, F_GETFD) >= 0) { ++n; high = fd; }
  y[0] = n; y[1] = fcntl(3, F_GETFD) >= 0 || fcntl(4, F_GETFD) >= 0; y[2] = high; y[3] = 0;
}
)";
  std::set<double> highs;
  for (int i = 0; i < 4; ++i) {
    const Outcome out = run("count_fds_sealed", body);
    ASSERT_EQ(out.status, Status::Ok) << describe(out);
    EXPECT_EQ(out.outputs[0].data[0], 5.0);
    EXPECT_EQ(out.outputs[0].data[1], 0.0);
    EXPECT_GE(out.outputs[0].data[2], 64.0);
    highs.insert(out.outputs[0].data[2]);
  }
  EXPECT_GT(highs.size(), 1u) << "the report pipe's descriptor is not random";
}

// ---- The report pipe ----

// Finds the report pipe (the one FIFO above stderr) and writes a report claiming 1 ns
// to it: `then` follows (return normally, or exit as if the runner were done).
std::string fake_report(const std::string& then) {
  return plus_one("", R"(
#include <sys/stat.h>
struct FakeReport { uint32_t magic, status; double seconds; uint32_t len, reserved; uint64_t nonce; double cpu; };
static void forge() {
  for (int fd = 3; fd < 65536; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
    FakeReport r{0x4f4c5231, 0, 1e-9, 0, 0, 0, 0};
    (void)!write(fd, &r, sizeof r);
  }
}
)") + R"(
extern "C" void forger(void* const* b, const int64_t* dims) {
  ollie_entry(b, dims);
  forge();
  )" + then +
         R"(
}
)";
}

TEST(Seal, AForgedReportIsNotBelieved) {
  for (const char* then : {"", "_exit(0);"}) {
    Options o = options();
    o.entry_symbol = "forger";
    const std::string name = std::string("forger") + (then[0] ? "_exit" : "");
    const Outcome out = run(name, fake_report(then), o);
    EXPECT_EQ(out.status, Status::Tampered) << then << ": " << describe(out);
    EXPECT_NE(out.message.find("report"), std::string::npos) << out.message;
    const Outcome t = timed(name, fake_report(then), o);
    EXPECT_EQ(t.status, Status::Tampered) << then << ": " << describe(t);
  }
}

// ---- The floating-point environment ----

TEST(Seal, FlushToZeroLeftSetIsTampered) {
  const std::string body = plus_one(R"(
  _mm_setcsr(_mm_getcsr() | 0x8000);
)",
                                    "#include <xmmintrin.h>\n");
  const Outcome out = run("ftz", body);
  EXPECT_EQ(out.status, Status::Tampered) << describe(out);
  EXPECT_NE(out.message.find("flush-to-zero set in MXCSR"), std::string::npos) << out.message;
  const Outcome t = timed("ftz", body);
  EXPECT_EQ(t.status, Status::Tampered) << describe(t);
  EXPECT_STREQ(status_name(Status::Tampered), "tampered");
}

TEST(Seal, FlushToZeroRestoredBeforeReturningIsFine) {
  const Outcome out = run("ftz_restored", plus_one(R"(
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040);
  volatile float tiny = 1e-39f;
  tiny = tiny * 0.5f;
  _mm_setcsr(saved);
)",
                                                   "#include <xmmintrin.h>\n"));
  EXPECT_EQ(out.status, Status::Ok) << describe(out);
}

TEST(Seal, RoundingModeLeftChangedIsTampered) {
  const Outcome out = run("rounding", plus_one("  fesetround(FE_UPWARD);\n", "#include <cfenv>\n"));
  EXPECT_EQ(out.status, Status::Tampered) << describe(out);
  EXPECT_NE(out.message.find("rounding mode"), std::string::npos) << out.message;
}

TEST(Seal, X87ControlWordLeftChangedIsTampered) {
  const Outcome out = run("x87", plus_one(R"(
  unsigned short cw;
  asm volatile("fnstcw %0" : "=m"(cw));
  cw = (unsigned short)((cw & ~0x300) | 0x000);  // single precision
  asm volatile("fldcw %0" : : "m"(cw));
)"));
  EXPECT_EQ(out.status, Status::Tampered) << describe(out);
  EXPECT_NE(out.message.find("x87"), std::string::npos) << out.message;
}

TEST(Seal, AConstructorLeavingFlushToZeroIsTampered) {
  const Outcome out = run("ctor_ftz", plus_one("", R"(
#include <xmmintrin.h>
__attribute__((constructor)) static void fast() { _mm_setcsr(_mm_getcsr() | 0x8040); }
)"));
  EXPECT_EQ(out.status, Status::Tampered) << describe(out);
  EXPECT_NE(out.message.find("static constructor"), std::string::npos) << out.message;
}

// ---- Constructors run filtered ----

TEST(Seal, AConstructorWritingAFileOrOpeningASocketIsForbidden) {
  const std::string marker = scratch() + "/ctor-wrote-this";
  const Outcome file = run("ctor_file", plus_one("", R"(
__attribute__((constructor)) static void escape() {
  int fd = open(")" + marker + R"(", O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) close(fd);
}
)"));
  EXPECT_EQ(file.status, Status::Forbidden) << describe(file);
  EXPECT_FALSE(std::filesystem::exists(marker));
  const Outcome socket = run("ctor_socket", plus_one("", R"(
#include <sys/socket.h>
__attribute__((constructor)) static void escape() { (void)socket(AF_INET, SOCK_DGRAM, 0); }
)"));
  EXPECT_EQ(socket.status, Status::Forbidden) << describe(socket);
  const Outcome fork_ = run("ctor_fork", plus_one("", R"(
__attribute__((constructor)) static void escape() { if (fork() == 0) _exit(0); }
)"));
  EXPECT_EQ(fork_.status, Status::Forbidden) << describe(fork_);
}

// ---- Looking for the harness ----

TEST(Seal, AskingForTheSeccompModeIsForbidden) {
  const Outcome out = run("prctl", plus_one(R"(
  if (prctl(PR_GET_SECCOMP) == 2) y[0] = 100.0f;
)",
                                            "#include <sys/prctl.h>\n"));
  EXPECT_EQ(out.status, Status::Forbidden) << describe(out);
}

const char* kGetenv = R"(
extern char** environ;
extern "C" void ollie_entry(void* const* b, const int64_t*) {
  float* y = static_cast<float*>(b[1]);
  y[0] = std::getenv("OMP_WAIT_POLICY") != nullptr;
  y[1] = std::getenv("LD_PRELOAD") != nullptr;
  y[2] = environ != nullptr && environ[0] != nullptr;
  y[3] = std::getenv("PATH") != nullptr;
}
)";

TEST(Seal, TheKernelSeesAnEmptyEnvironmentInEveryMode) {
  const std::vector<double> none = {0, 0, 0, 0};
  const Outcome plain = run("getenv", kGetenv);
  ASSERT_EQ(plain.status, Status::Ok) << describe(plain);
  EXPECT_EQ(plain.outputs[0].data, none);
  Options steady = options();
  steady.steady_openmp = true;  // OMP_WAIT_POLICY=active in the child's environment
  const Outcome openmp = run("getenv", kGetenv, steady);
  ASSERT_EQ(openmp.status, Status::Ok) << describe(openmp);
  EXPECT_EQ(openmp.outputs[0].data, none);
  TimingOptions timing;
  timing.min_rounds = 1;
  timing.budget_seconds = 0;
  timing.steady_openmp = true;
  const auto timed_run = ollie::runner::time_kernels(
      {{build_so("getenv", kGetenv)}}, vector_graph(), {{filled(4, 1)}}, options(), timing);
  ASSERT_EQ(timed_run.status, Status::Ok) << describe(timed_run);
  EXPECT_EQ(timed_run.set_outputs[0][0][0].data, none);
  Options sanitized = options();
  sanitized.sanitize = true;  // LD_PRELOAD and ASAN_OPTIONS in the child's environment
  sanitized.sanitizer_runtime = ollie::build::sanitizer_runtime("g++");
  const Outcome asan =
      ollie::runner::run(build_so("getenv_asan", kGetenv, "-O1 -fsanitize=address,undefined"),
                         vector_graph(), {filled(4, 1)}, sanitized);
  ASSERT_EQ(asan.status, Status::Ok) << describe(asan);
  EXPECT_EQ(asan.outputs[0].data, none);
}

TEST(Seal, OpenMpKernelsRunUnderBothFilters) {
  // libgomp starts its threads (clone with CLONE_THREAD) and neither it nor glibc calls
  // prctl, opens a file or remaps memory while the kernel runs.
  const std::string body = R"(
#include <omp.h>
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
  std::vector<float> scratch(static_cast<size_t>(dims[0]) * 100000);
#pragma omp parallel for
  for (int64_t i = 0; i < dims[0]; ++i) {
    scratch[i * 100000] = x[i];
    y[i] = scratch[i * 100000] + 1.0f;
  }
}
)";
  Options o = options();
  o.threads = 4;
  const std::string so = build_so("openmp", "#include <vector>\n" + body, "-O2 -fopenmp");
  const Outcome out = ollie::runner::run(so, vector_graph(), {filled(4, 1)}, o);
  ASSERT_EQ(out.status, Status::Ok) << describe(out);
  EXPECT_EQ(out.outputs[0].data, (std::vector<double>{2, 3, 4, 5}));
  TimingOptions timing;
  timing.min_rounds = 3;
  timing.max_rounds = 3;
  timing.budget_seconds = 0;
  timing.warm_call = true;
  timing.steady_openmp = true;
  const auto t = ollie::runner::time_kernels({{so}}, vector_graph(),
                                             {{filled(4, 1)}, {filled(4, 9)}}, o, timing);
  EXPECT_EQ(t.status, Status::Ok) << describe(t);
}

TEST(Seal, BuffersStartAtRandomMultiplesOf64) {
  // y[0] = where x starts within its page, y[1] = where y ends within its page.
  const std::string body = R"(
extern "C" void ollie_entry(void* const* b, const int64_t* dims) {
  float* y = static_cast<float*>(b[1]);
  y[0] = (float)((uintptr_t)b[0] % 4096);
  y[1] = (float)((uintptr_t)(y + dims[0]) % 4096);
  y[2] = y[3] = 0;
}
)";
  std::set<double> starts, ends;
  for (int i = 0; i < 8; ++i) {
    const Outcome out = run("where", body);
    ASSERT_EQ(out.status, Status::Ok) << describe(out);
    EXPECT_EQ(static_cast<int>(out.outputs[0].data[0]) % 64, 0);
    starts.insert(out.outputs[0].data[0]);
    ends.insert(out.outputs[0].data[1]);
  }
  EXPECT_GT(starts.size(), 2u);
  EXPECT_GT(ends.size(), 2u);
}

// ---- Threads left running ----

// A helper thread that outlives the call (it could compute off the clock, or slow the
// other kernel of a side-by-side timing) is tampering; threads joined before returning
// are fine.
const char* kThreadsBefore = R"(
#include <atomic>
#include <thread>
static std::atomic<int> spin{0};
)";

TEST(Seal, AThreadLeftRunningAfterTheCallIsTampered) {
  const std::string left = plus_one(R"(
  static bool started = false;
  if (!started) { started = true; std::thread([] { for (;;) spin.fetch_add(1); }).detach(); }
)",
                                    kThreadsBefore);
  for (const Outcome& out : {run("thread_left", left), timed("thread_left", left)}) {
    EXPECT_EQ(out.status, Status::Tampered) << describe(out);
    EXPECT_NE(out.message.find("left threads running"), std::string::npos) << out.message;
  }
}

TEST(Seal, ThreadsJoinedBeforeReturningAreFine) {
  const std::string joined = plus_one(R"(
  std::thread t([] { spin.fetch_add(1); });
  t.join();
)",
                                      kThreadsBefore);
  for (const Outcome& out : {run("thread_joined", joined), timed("thread_joined", joined)})
    EXPECT_EQ(out.status, Status::Ok) << describe(out);
}

TEST(Seal, AnOpenMpTeamLargerThanTheDefaultIsNotALeftThread) {
  // libgomp keeps the team's threads between calls: more than the default team, all its own.
  const std::string wide = plus_one(R"(
  float sink[8] = {};
#pragma omp parallel num_threads(6)
  sink[omp_get_thread_num()] = 1.0f;
  (void)sink;
)",
                                    "#include <omp.h>\n");
  const std::string so = build_so("omp_wide", wide, "-O2 -fopenmp");
  const Outcome called = ollie::runner::run(so, vector_graph(), {filled(4, 1)}, options());
  EXPECT_EQ(called.status, Status::Ok) << describe(called);
  TimingOptions timing;
  timing.min_rounds = timing.max_rounds = 3;
  timing.budget_seconds = 0;
  const Outcome timed_out = ollie::runner::time_kernels(
      {{so}}, vector_graph(), {{filled(4, 1)}, {filled(4, 9)}}, options(), timing);
  EXPECT_EQ(timed_out.status, Status::Ok) << describe(timed_out);
}

}  // namespace
