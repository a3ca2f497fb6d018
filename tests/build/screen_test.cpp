// Tests of the up-front screen (build/screen.h): every refused construct with its reason
// and location, comments and strings, the macro tricks only the object screen sees, the
// import allow-list, and the guard against false refusals: every example's emitted kernel
// (default schedule and examples/schedules) and every blue-team kernel pass both screens.
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "build/build.h"
#include "build/screen.h"
#include "build/screen_imports.h"
#include "emit/emit.h"
#include "loops/loops.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"

namespace fs = std::filesystem;
using namespace ollie;
using namespace ollie::build;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string joined(const std::vector<Refusal>& found) {
  std::string out;
  for (const auto& r : found) out += r.text() + "\n";
  return out;
}

struct Case {
  const char* what;
  const char* source;
  const char* where;   // "k.cpp:LINE:COL" of the first finding
  const char* reason;  // a part of its reason
};

// Each construct on its own; the first finding's place and reason.
const Case kRefused[] = {
    {"asm statement", "void f() {\n  asm(\"nop\");\n}\n", "k.cpp:2:3", "inline assembly"},
    {"__asm__ volatile", "void f() { __asm__ volatile(\"syscall\"); }", "k.cpp:1:12",
     "inline assembly"},
    {"__asm label", "int x __asm(\"y\");", "k.cpp:1:7", "inline assembly"},
    {"asm split by a line splice", "void f() { as\\\nm(\"nop\"); }", "k.cpp:1:12",
     "inline assembly"},
    {"constructor attribute", "__attribute__((constructor)) static void f() {}", "k.cpp:1:16",
     "runs code when the kernel is loaded"},
    {"__destructor__ among others", "__attribute__((used, __destructor__(101))) void f() {}",
     "k.cpp:1:22", "loaded or unloaded"},
    {"gnu::constructor", "[[gnu::constructor]] void f() {}", "k.cpp:1:8", "loaded"},
    {"init_priority", "struct S { S(); };\nS s __attribute__((init_priority(200)));", "k.cpp:2:20",
     "loaded"},
    {"section", "__attribute__((section(\".init_array\"))) void (*p)() = 0;", "k.cpp:1:16",
     "places or renames"},
    {"weak", "extern \"C\" int prctl2() __attribute__((weak));", "k.cpp:1:40", "places or renames"},
    {"alias", "void g() {}\nvoid f() __attribute__((alias(\"g\")));", "k.cpp:2:25",
     "places or renames"},
    {"visibility", "__attribute__((visibility(\"default\"))) void f() {}", "k.cpp:1:16",
     "places or renames"},
    {"ifunc", "void f() __attribute__((ifunc(\"r\")));", "k.cpp:1:25", "loaded"},
    {"no_sanitize", "[[gnu::no_sanitize(\"address\")]] void f() {}", "k.cpp:1:8",
     "hides code from the sanitizers"},
    {"no_sanitize_address anywhere", "#define NS no_sanitize_address\n", "k.cpp:1:12",
     "hides code from the sanitizers"},
    {"include of an absolute path", "#include \"/etc/passwd\"\n", "k.cpp:1:2", "never a path"},
    {"include up the tree",
     "#include \"."
     "./secret.h\"\n",
     "k.cpp:1:2", "never a path"},
    {"include of a quoted subdirectory", "#include \"sub/dir.h\"\n", "k.cpp:1:2", "never a path"},
    {"angle include of an absolute path", "  #  include </etc/hostname>\n", "k.cpp:1:6",
     "never a path"},
    {"angle include up the tree",
     "#include <."
     "./../../../etc/passwd>\n",
     "k.cpp:1:2", "never a path"},
    {"computed include", "#define F \"/etc/passwd\"\n#include F\n", "k.cpp:2:2",
     "computed #include"},
    {"digraph include", "%:include \"/etc/passwd\"\n", "k.cpp:1:3", "never a path"},
    {"include_next", "#include_next <cmath>\n", "k.cpp:1:2", "#include_next"},
    {"__has_include of a path",
     "#if __has_include(\"/ho"
     "me/u/.ssh/id_rsa\")\n#endif\n",
     "k.cpp:1:5", "never a path"},
    {"sanitizer detection macro", "#ifdef __SANITIZE_ADDRESS__\n#endif\n", "k.cpp:1:8",
     "detects the sanitizer build"},
    {"__has_feature", "#if __has_feature(address_sanitizer)\n#endif\n", "k.cpp:1:5",
     "detects the sanitizer build"},
    {"_GLIBCXX_SANITIZE_VECTOR", "#ifdef _GLIBCXX_SANITIZE_VECTOR\n#endif\n", "k.cpp:1:8",
     "detects the sanitizer build"},
    {"asan interface", "extern \"C\" void __asan_poison_memory_region(void*, long);", "k.cpp:1:17",
     "sanitizer runtime"},
    {"ubsan interface", "void f() { __ubsan_handle_builtin_unreachable(0); }", "k.cpp:1:12",
     "sanitizer runtime"},
    {"_GLOBAL__ function", "extern \"C\" void _GLOBAL__sub_I_k();", "k.cpp:1:17",
     "static-initialization"},
    {"environ", "extern char** environ;", "k.cpp:1:15", "environment"},
    {"getenv", "#include <cstdlib>\nbool f() { return std::getenv(\"OMP_WAIT_POLICY\"); }",
     "k.cpp:2:24", "environment"},
    {"prctl", "#include <sys/prctl.h>\nint f() { return prctl(21, 0, 0, 0, 0); }", "k.cpp:2:18",
     "system call"},
    {"syscall", "long f() { return syscall(39); }", "k.cpp:1:19", "system call"},
    {"fork", "int f() { return fork(); }", "k.cpp:1:18", "processes"},
    {"dlsym", "void* f() { return dlsym(0, \"x\"); }", "k.cpp:1:20", "loads code"},
    {"mprotect", "int f(void* p) { return mprotect(p, 4096, 3); }", "k.cpp:1:25",
     "memory protection"},
    {"frame address", "void* f() { return __builtin_frame_address(1); }", "k.cpp:1:20",
     "stack frame"},
    {"return address", "void* f() { return __builtin_return_address(0); }", "k.cpp:1:20",
     "stack frame"},
    {"rdtsc", "unsigned long long f() { return __rdtsc(); }", "k.cpp:1:33", "time-stamp"},
    {"MXCSR write", "void f() { _mm_setcsr(0x9fc0); }", "k.cpp:1:12", "floating-point"},
    {"flush-to-zero macro", "void f() { _MM_SET_FLUSH_ZERO_MODE(0x8000); }", "k.cpp:1:12",
     "floating-point"},
    {"/proc in a string", "const char* p = \"/proc/self/maps\";", "k.cpp:1:17", "/proc"},
    {"/proc alone", "const char* p = \"/proc\";", "k.cpp:1:17", "/proc"},
    {"/proc split over adjacent literals", "const char* p = \"/pr\" \"oc/self/cmdline\";",
     "k.cpp:1:17", "/proc"},
    {"/proc in a raw string", "const char* p = R\"x(/proc/1/environ)x\";", "k.cpp:1:17", "/proc"},
    {"/dev/ in a wide string", "const wchar_t* p = L\"/dev/urandom\";", "k.cpp:1:20", "/dev/"},
    {".incbin in a string", "const char* s = \".incbin \\\"/etc/passwd\\\"\";", "k.cpp:1:17",
     ".incbin"},
    {"#pragma weak", "#pragma weak prctl\n", "k.cpp:1:2", "#pragma weak"},
    {"_Pragma weak", "_Pragma(\"weak prctl\")\n", "k.cpp:1:9", "#pragma weak"},
};

class Refused : public ::testing::TestWithParam<Case> {};

TEST_P(Refused, WithItsReasonAndPlace) {
  const Case& c = GetParam();
  const std::vector<Refusal> found = screen_source("k.cpp", c.source);
  ASSERT_FALSE(found.empty()) << c.what << ": not refused:\n" << c.source;
  EXPECT_EQ(found[0].where, c.where) << joined(found);
  EXPECT_NE(found[0].reason.find(c.reason), std::string::npos) << joined(found);
}

INSTANTIATE_TEST_SUITE_P(Constructs, Refused, ::testing::ValuesIn(kRefused),
                         [](const auto& p) { return "case" + std::to_string(p.index); });

TEST(SourceScreen, CommentsWordsAndOrdinaryCodePass) {
  const char* source = R"(// asm("nop") in a comment; also /proc/self/maps and __SANITIZE_ADDRESS__
/* __attribute__((constructor)) and getenv("X") in a block
   comment over lines: syscall, fork, #include "/etc/passwd" */
#include <immintrin.h>
#include <sys/types.h>
#include "softmax.ollie.h"
#include <cmath>
#include <cstdint>
#include <vector>
#define PASTE(a, b) a##b
static const char* kNote = "uses asm-free code; see /processed and procfs";
const char* plasma = "asm";  // identifiers that contain asm are other identifiers
struct alignas(64) Tile { float v[16]; };
__attribute__((aligned(64))) static float scratch[16];
__attribute__((target("avx512f"), always_inline)) inline float first(const float* x) { return x[0]; }
[[nodiscard]] [[gnu::always_inline]] inline int section(int weak) { return weak + 1; }
int constructor_count = 0;  // a variable named like an attribute, outside any attribute
extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  int a[4] = {1, 2, 3, 4};
  out0[0] = first(x) + a[a[0]] + 0x1.8p+3 + 1'000 + 'x' + section(0);
#pragma omp parallel for simd
  for (int64_t i = 1; i < dims[0]; ++i) [[likely]] out0[i] = x[i];
  (void)kNote, (void)plasma, (void)scratch;
}
)";
  const std::vector<Refusal> found = screen_source("k.cpp", source);
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(SourceScreen, EveryFindingIsReportedInSourceOrder) {
  const std::vector<Refusal> found =
      screen_source("k.cpp", "asm(\"x\");\nconst char* p = \"/proc\";\nint y = getenv(0);\n");
  ASSERT_EQ(found.size(), 3u) << joined(found);
  EXPECT_EQ(found[0].where, "k.cpp:1:1");
  EXPECT_EQ(found[1].where, "k.cpp:2:17");
  EXPECT_EQ(found[2].where, "k.cpp:3:9");
}

TEST(ScreenedResult, MessageShowsEightReasonsThenHowManyMore) {
  ScreenedResult r;
  for (int i = 0; i < 10; ++i) r.refusals.push_back({"k.cpp:" + std::to_string(i + 1) + ":1", "x"});
  const std::string m = r.message();
  EXPECT_EQ(m.rfind("refused: ", 0), 0u) << m;
  EXPECT_NE(m.find("k.cpp:8:1: x\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("k.cpp:9:1"), std::string::npos) << m;
  EXPECT_NE(m.find("(2 more)"), std::string::npos) << m;
}

TEST(ImportAllowList, KernelFamiliesPassAndSystemAccessIsRefused) {
  for (const char* ok :
       {"expf",
        "sqrtf",
        "sincos",
        "tanhf",
        "expm1f",
        "pow",
        "fmaxf",
        "__expf_finite",
        "_ZGVeN16v_expf",
        "_ZGVdN8vv_powf",
        "memcpy",
        "memset",
        "malloc",
        "posix_memalign",
        "_Znwm",
        "_ZdlPvm",
        "_ZnwmSt11align_val_t",
        "__cxa_guard_acquire",
        "__stack_chk_fail",
        "_ZSt20__throw_length_errorPKc",
        "GOMP_parallel",
        "omp_get_thread_num",
        "pthread_create",
        "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
        "__gmon_start__",
        "_ITM_registerTMCloneTable",
        "__cxa_finalize",
        "_Unwind_Resume",
        "__gxx_personality_v0",
        "sched_yield",
        "__mulsc3"})
    EXPECT_EQ(import_refusal(ok, false), "") << ok;
  for (const char* bad : {"syscall",
                          "prctl",
                          "getenv",
                          "secure_getenv",
                          "open",
                          "fopen",
                          "read",
                          "mmap",
                          "mprotect",
                          "dlopen",
                          "dlsym",
                          "sigaction",
                          "fork",
                          "clone",
                          "execve",
                          "socket",
                          "getpid",
                          "clock_gettime",
                          "time",
                          "gettimeofday",
                          "nanosleep",
                          "sysconf",
                          "getrandom",
                          "omp_get_wtime",
                          "printf",
                          "_ZSt4cout",
                          "_ZNSt13random_device9_M_getvalEv",
                          "_ZNSt6chrono3_V212steady_clock3nowEv",
                          "exit",
                          "fesetround",
                          "__asan_report_load4",
                          "some_unknown_function",
                          "_ZNSt10filesystem6removeERKNS_7__cxx114pathE"})
    EXPECT_NE(import_refusal(bad, false), "") << bad;
  EXPECT_EQ(import_refusal("__asan_report_load4", true), "");
  EXPECT_NE(import_refusal("prctl", true), "");
  EXPECT_TRUE(allowed_library("libgomp.so.1", false));
  EXPECT_TRUE(allowed_library("libmvec.so.1", false));
  EXPECT_FALSE(allowed_library("libasan.so.8", false));
  EXPECT_TRUE(allowed_library("libasan.so.8", true));
  EXPECT_FALSE(allowed_library("libcurl.so.4", false));
}

// Builds in a private cache (the tricks below) or the shared one (the honest kernels).
class ObjectScreen : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ollie-screen-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ScreenedResult build(const std::string& source) {
    Driver driver((dir_ / "cache").string());
    Request request;
    request.units = {{"kernel.cpp", source}};
    request.toolchain.flags = {"-std=c++20", "-O1", "-shared", "-fPIC"};
    return compile_screened(driver, request);
  }

  fs::path dir_;
};

std::string texts(const ScreenedResult& r) { return r.message() + r.built.log; }

TEST_F(ObjectScreen, TokenPastedSyscallPassesTheSourceScreenButNotTheObjectScreen) {
  const std::string source =
      "#include <unistd.h>\n#include <sys/syscall.h>\n#define S(a, b) a##b\n"
      "extern \"C\" long ollie_kernel() { return S(sys, call)(S(SYS_, getpid)); }\n";
  EXPECT_TRUE(screen_source("kernel.cpp", source).empty());
  const ScreenedResult r = build(source);
  ASSERT_TRUE(r.built.ok) << r.built.log;
  ASSERT_TRUE(r.refused());
  EXPECT_NE(r.message().find("imports `syscall`"), std::string::npos) << texts(r);
}

TEST_F(ObjectScreen, PastedConstructorAttributeAndDynamicInitializersAreLoadTimeCode) {
  const ScreenedResult pasted = build(
      "#define CT(a, b) __attribute__((a##b))\nstatic volatile int seen;\n"
      "CT(constr, uctor) static void hello() { seen = 1; }\n"
      "extern \"C\" int ollie_kernel() { return seen; }\n");
  ASSERT_TRUE(pasted.built.ok) << pasted.built.log;
  EXPECT_NE(pasted.message().find(".init_array runs `_ZL5hellov`"), std::string::npos)
      << texts(pasted);
  const ScreenedResult global = build(
      "#include <vector>\nstd::vector<float> table(100, 1.0f);\n"
      "extern \"C\" float ollie_kernel() { return table[0]; }\n");
  ASSERT_TRUE(global.built.ok) << global.built.log;
  EXPECT_NE(global.message().find("function-local statics"), std::string::npos) << texts(global);
  // The same table as a function-local static is fine.
  const ScreenedResult local = build(
      "#include <vector>\nextern \"C\" float ollie_kernel() {\n"
      "  static const std::vector<float> table(100, 1.0f);\n  return table[0];\n}\n");
  EXPECT_TRUE(local.built.ok && !local.refused()) << texts(local);
}

TEST_F(ObjectScreen, ARefusedSourceIsNeverCompiled) {
  Driver driver((dir_ / "cache").string());
  Request request;
  request.units = {{"kernel.cpp", "#include \"/etc/passwd\"\n"}};
  const ScreenedResult r = compile_screened(driver, request);
  EXPECT_TRUE(r.refused());
  EXPECT_EQ(driver.compiler_runs(), 0);
  EXPECT_NE(r.message().find("kernel.cpp:1:2: #include \"/etc/passwd\""), std::string::npos)
      << r.message();
}

TEST_F(ObjectScreen, AFileThatIsNoSharedObjectIsRefusedSayingSo) {
  const fs::path bogus = dir_ / "bogus.so";
  std::ofstream(bogus) << "not an ELF file";
  const std::vector<Refusal> found = screen_object(bogus.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].reason.find("cannot be screened"), std::string::npos) << found[0].text();
  EXPECT_FALSE(screen_object((dir_ / "missing.so").string()).empty());
}

// --- the guard against false refusals ------------------------------------------------

struct Honest {
  std::string name;
  std::vector<Unit> units;
};

ir::Graph example_graph(const std::string& example) {
  const fs::path spec = fs::path(OLLIE_SOURCE_DIR) / "examples" / (example + ".py");
  return spec::compile_spec(spec.string(), read(spec), {});
}

// An example's kernel under `schedule` (empty: the default one) after `rewrites`.
Honest emitted(const std::string& example, const std::string& variant, const fs::path& schedule,
               const fs::path& rewrites) {
  ir::Graph graph = example_graph(example);
  if (!rewrites.empty()) graph = rewrite::replay(graph, read(rewrites));
  const loops::Schedule s = schedule.empty()
                                ? loops::default_schedule(graph)
                                : loops::parse_schedule(read(schedule), schedule.string());
  const std::string source = emit::emit_kernel(loops::lower(graph, s), graph, {});
  return {example + "_" + variant,
          {{graph.entry + ".cpp", source},
           {graph.entry + ".ollie.h", emit::emit_header(graph)},
           {"ollie_adapter.cpp", adapter_source(graph)}}};
}

std::vector<Honest> honest_kernels() {
  std::vector<Honest> out;
  const fs::path root(OLLIE_SOURCE_DIR);
  for (const auto& e : fs::directory_iterator(root / "examples"))
    if (e.path().extension() == ".py") out.push_back({e.path().stem().string() + "_default", {}});
  const fs::path schedules = root / "examples" / "schedules";
  for (const auto& e : fs::directory_iterator(schedules)) {
    const std::string file = e.path().filename().string();
    const std::string stem = e.path().stem().string();  // "softmax.flash"
    const bool schedule = e.path().extension() == ".schedule";
    if (!schedule && e.path().extension() != ".rewrites") continue;
    // A .rewrites file with its .schedule is one kernel (listed with the schedule).
    if (!schedule && fs::exists(schedules / (stem + ".schedule"))) continue;
    out.push_back({file, {}});
  }
  for (const auto& e : fs::directory_iterator(root / "tests" / "blueteam"))
    if (e.path().extension() == ".cpp") out.push_back({"blueteam_" + e.path().stem().string(), {}});
  return out;
}

// The units of an honest kernel (emitted here, at test time, not at listing time).
Honest units_of(const std::string& name) {
  const fs::path root(OLLIE_SOURCE_DIR);
  if (name.starts_with("blueteam_")) {
    const std::string stem = name.substr(9);
    const std::string example = stem.substr(0, stem.find("__"));
    return {name,
            {{"kernel.cpp", read(root / "tests" / "blueteam" / (stem + ".cpp"))},
             {"ollie_adapter.cpp", adapter_source(example_graph(example))}}};
  }
  if (name.ends_with("_default"))
    return emitted(name.substr(0, name.size() - 8), "default", {}, {});
  const fs::path dir = root / "examples" / "schedules";
  const std::string stem = name.substr(0, name.rfind('.'));  // "softmax.flash"
  const std::string example = stem.substr(0, stem.find('.'));
  const fs::path schedule = dir / (stem + ".schedule"), rewrites = dir / (stem + ".rewrites");
  return emitted(example, stem, fs::exists(schedule) ? schedule : fs::path(),
                 fs::exists(rewrites) ? rewrites : fs::path());
}

class HonestKernel : public ::testing::TestWithParam<std::string> {};

// Built with the project's real toolchain into the shared build cache (so reruns are
// quick); the screens' own cost is printed and must stay small next to a compile.
TEST_P(HonestKernel, PassesBothScreens) {
  const Honest kernel = units_of(GetParam());
  Driver driver;
  Request request;
  request.units = kernel.units;
  const ScreenedResult r = compile_screened(driver, request);
  ASSERT_TRUE(r.built.ok) << r.built.log;
  EXPECT_FALSE(r.refused()) << r.message();
  std::printf("[ screen ] %s: %.3f ms in the screens\n", GetParam().c_str(),
              r.screen_seconds * 1e3);
  EXPECT_LT(r.screen_seconds, 0.1);
}

INSTANTIATE_TEST_SUITE_P(EmittedAndBlueTeam, HonestKernel, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const Honest& h : honest_kernels()) names.push_back(h.name);
                           return names;
                         }()),
                         [](const auto& p) {
                           std::string n = p.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The sanitizer build of an OpenMP blue-team kernel: its runtime's imports, libraries and
// module constructors are the toolchain's, not the kernel's.
TEST(SanitizedBuild, OfABlueTeamKernelPassesTheObjectScreen) {
  const Honest kernel = units_of("blueteam_rmsnorm__omp_parallel_simd");
  Driver driver;
  Request request;
  request.units = kernel.units;
  request.toolchain = sanitizer_toolchain();
  const ScreenedResult r = compile_screened(driver, request, true);
  ASSERT_TRUE(r.built.ok) << r.built.log;
  EXPECT_FALSE(r.refused()) << r.message();
  EXPECT_FALSE(screen_object(r.built.so_path, false).empty()) << "the runtime's imports";
}

}  // namespace
