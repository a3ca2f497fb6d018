// The object screen's allow-list of imports. Measured on every example's emitted kernels
// (default and under examples/schedules) and the blue-team kernels: memset, memcpy,
// GOMP_parallel and other GOMP_*/omp_*, expf, sqrtf, sqrt, fmaxf, tanhf, expm1f, pow,
// sincos, operator new/delete, std::__throw_length_error, __cxa_throw_bad_array_new_length,
// __gxx_personality_v0, _Unwind_Resume and the toolchain's weak __gmon_start__, _ITM_* and
// __cxa_finalize. Widened on purpose to whole families a kernel may plausibly use (libm and
// libmvec, the C++ runtime and libstdc++, threads and their locks, string and memory
// functions), since a false refusal costs more than a miss: the sandbox is the backstop.
#include "build/screen_imports.h"

#include <unordered_map>
#include <unordered_set>

namespace ollie::build {
namespace {

const char* const kSys = "a raw system call or process control; a kernel only computes";
const char* const kEnv = "reads the environment; a kernel's result depends only on its arguments";
const char* const kFile = "opens, reads or writes files; a kernel's only data are its buffers";
const char* const kPrint = "prints; a kernel's only output is its output buffers";
const char* const kMem =
    "maps or protects memory; the inputs are read-only, and scratch memory comes from "
    "new/malloc";
const char* const kLoad = "loads code at run time; a kernel never needs it";
const char* const kSignal = "handles or sends signals; a kernel never needs it";
const char* const kProc =
    "starts, waits for or ends processes; a kernel may use threads (OpenMP, std::thread), "
    "never processes, and returns instead of exiting";
const char* const kNet = "uses the network; a kernel never needs it";
const char* const kTime =
    "reads a clock or sleeps; a kernel's result and speed must not depend on time";
const char* const kWho =
    "asks about the process or the machine; use omp_get_max_threads() for a thread count";
const char* const kRand = "draws entropy; a kernel's result must not depend on it";
const char* const kFp =
    "changes the floating-point environment; the caller's environment must stay as it is";

const std::unordered_map<std::string_view, const char*>& denied() {
  static const std::unordered_map<std::string_view, const char*> names = [] {
    std::unordered_map<std::string_view, const char*> m;
    auto add = [&](const char* why, std::initializer_list<std::string_view> list) {
      for (auto n : list) m.emplace(n, why);
    };
    m.emplace("syscall",
              "a raw system call; a kernel only computes (libstdc++ 12 also compiles "
              "std::atomic::wait, std::barrier, std::latch and std::counting_semaphore to it: "
              "use OpenMP's barriers or std::mutex and std::condition_variable)");
    add(kSys, {"prctl", "ptrace", "ioctl", "fcntl", "fcntl64", "seccomp"});
    add(kEnv, {"getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv", "environ",
               "__environ", "_environ", "getauxval"});
    add(kFile,
        {"open",       "open64",    "openat",    "openat64", "creat",    "creat64",      "fopen",
         "fopen64",    "freopen",   "fdopen",    "close",    "fclose",   "read",         "write",
         "pread",      "pread64",   "pwrite",    "pwrite64", "readv",    "writev",       "fread",
         "fwrite",     "fgets",     "fgetc",     "getc",     "fputs",    "fputc",        "putc",
         "fflush",     "fseek",     "ftell",     "lseek",    "lseek64",  "stat",         "stat64",
         "fstat",      "fstat64",   "lstat",     "__xstat",  "__fxstat", "__lxstat",     "statx",
         "access",     "faccessat", "readlink",  "opendir",  "readdir",  "readdir64",    "closedir",
         "unlink",     "unlinkat",  "remove",    "rename",   "mkdir",    "rmdir",        "chdir",
         "getcwd",     "dup",       "dup2",      "dup3",     "pipe",     "pipe2",        "mkstemp",
         "tmpfile",    "truncate",  "ftruncate", "sendfile", "splice",   "memfd_create", "sem_open",
         "sem_unlink", "shm_open",  "shm_unlink"});
    add(kPrint,
        {"printf",         "fprintf",       "vprintf",       "vfprintf",     "dprintf",
         "puts",           "putchar",       "perror",        "__printf_chk", "__fprintf_chk",
         "__vfprintf_chk", "__vprintf_chk", "__dprintf_chk", "stdout",       "stderr",
         "stdin",          "_ZSt4cout",     "_ZSt4cerr",     "_ZSt4clog",    "_ZSt3cin",
         "_ZSt5wcout",     "_ZSt5wcerr"});
    add(kMem, {"mmap", "mmap64", "munmap", "mprotect", "pkey_mprotect", "mremap", "madvise",
               "posix_madvise", "mlock", "munlock", "mlockall", "msync"});
    add(kLoad, {"dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dlinfo", "dlclose", "dlerror",
                "dl_iterate_phdr"});
    add(kSignal,
        {"signal", "sigaction", "sigprocmask", "pthread_sigmask", "raise", "kill", "tgkill",
         "alarm", "setitimer", "sigaltstack", "pthread_kill", "pthread_sigqueue"});
    add(kProc, {"fork",    "vfork",         "clone",         "clone3", "_Fork",  "execve",
                "execv",   "execvp",        "execvpe",       "execl",  "execlp", "execle",
                "fexecve", "posix_spawn",   "posix_spawnp",  "system", "popen",  "pclose",
                "wait",    "waitpid",       "wait3",         "wait4",  "waitid", "setsid",
                "daemon",  "setpgid",       "exit",          "_exit",  "_Exit",  "quick_exit",
                "atexit",  "at_quick_exit", "pthread_atfork"});
    add(kNet, {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "send",
               "sendto", "sendmsg", "recv", "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname",
               "inet_pton", "inet_addr"});
    add(kTime, {"clock_gettime", "gettimeofday", "time", "clock", "times", "getrusage", "nanosleep",
                "usleep", "sleep", "clock_nanosleep", "omp_get_wtime", "omp_get_wtick",
                "timespec_get", "ftime"});
    add(kWho, {"getpid",
               "getppid",
               "gettid",
               "getuid",
               "geteuid",
               "getgid",
               "getegid",
               "sched_getcpu",
               "getcpu",
               "uname",
               "gethostname",
               "sysconf",
               "get_nprocs",
               "get_nprocs_conf",
               "getrlimit",
               "setrlimit",
               "prlimit",
               "prlimit64",
               "sched_getaffinity",
               "sched_setaffinity",
               "sched_setscheduler",
               "sched_getscheduler",
               "sched_setparam",
               "getpriority",
               "setpriority"});
    add(kRand, {"getrandom", "getentropy", "arc4random", "arc4random_buf"});
    add(kFp, {"fesetround", "fesetenv", "feupdateenv", "feholdexcept", "feenableexcept",
              "fedisableexcept", "fesetexceptflag"});
    return m;
  }();
  return names;
}

// Parts of mangled libstdc++ names that are refused although std:: is allowed.
const char* denied_std_part(std::string_view name) {
  static const std::pair<std::string_view, const char*> parts[] = {
      {"random_device", kRand},  {"6chrono", kTime},        {"__sleep_for", kTime},
      {"basic_ifstream", kFile}, {"basic_ofstream", kFile}, {"basic_fstream", kFile},
      {"basic_filebuf", kFile},  {"10filesystem", kFile},
  };
  for (const auto& [part, why] : parts)
    if (name.find(part) != std::string_view::npos) return why;
  return nullptr;
}

// libm's functions (each also with the suffixes f and l, and as glibc's __<name>_finite).
bool libm_function(std::string_view name) {
  static const std::unordered_set<std::string_view> names = {
      "acos",          "asin",         "atan",
      "atan2",         "cos",          "sin",
      "tan",           "acosh",        "asinh",
      "atanh",         "cosh",         "sinh",
      "tanh",          "exp",          "exp2",
      "exp10",         "expm1",        "log",
      "log2",          "log10",        "log1p",
      "logb",          "ilogb",        "pow",
      "pow10",         "sqrt",         "cbrt",
      "hypot",         "erf",          "erfc",
      "lgamma",        "lgamma_r",     "tgamma",
      "gamma",         "ceil",         "floor",
      "trunc",         "round",        "roundeven",
      "nearbyint",     "rint",         "lrint",
      "llrint",        "lround",       "llround",
      "fmod",          "remainder",    "remquo",
      "fma",           "fmin",         "fmax",
      "fdim",          "fabs",         "copysign",
      "nextafter",     "nexttoward",   "nan",
      "frexp",         "ldexp",        "modf",
      "scalbn",        "scalbln",      "sincos",
      "significand",   "isinf",        "isnan",
      "finite",        "__isinf",      "__isnan",
      "__finite",      "__fpclassify", "__signbit",
      "__issignaling", "fegetround",   "fetestexcept",
      "feclearexcept", "fegetenv",     "fegetexceptflag",
      "feraiseexcept"};
  if (names.count(name)) return true;
  if (name.starts_with("__") && name.ends_with("_finite"))
    return libm_function(name.substr(2, name.size() - 2 - 7));
  if (name.ends_with("f") || name.ends_with("l"))
    return names.count(name.substr(0, name.size() - 1));
  return false;
}

// libmvec's vector variants: _ZGV<isa><mask><lanes><parameters>_<libm function>.
bool libmvec_function(std::string_view name) {
  if (!name.starts_with("_ZGV")) return false;
  const size_t underscore = name.find('_', 4);
  return underscore != std::string_view::npos && libm_function(name.substr(underscore + 1));
}

bool allowed(std::string_view name, bool sanitized) {
  static const std::unordered_set<std::string_view> exact = {
      // memory and strings
      "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "bzero", "strlen", "strnlen",
      "strcmp", "strncmp", "strchr", "strrchr", "strstr", "strcpy", "strncpy", "strcat", "strncat",
      "__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk", "__strncpy_chk",
      "__strcat_chk", "snprintf", "vsnprintf", "sprintf", "vsprintf", "__snprintf_chk",
      "__vsnprintf_chk", "__sprintf_chk", "__vsprintf_chk", "strtof", "strtod", "strtol", "strtoul",
      "strtoll", "strtoull", "atof", "atoi", "atol",
      // allocation
      "malloc", "free", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign",
      "malloc_usable_size",
      // the C and C++ runtimes, the toolchain's weak references
      "__stack_chk_fail", "__assert_fail", "abort", "__tls_get_addr", "__errno_location", "qsort",
      "bsearch", "abs", "labs", "llabs", "div", "ldiv", "__gmon_start__",
      "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable", "__gxx_personality_v0",
      "__gcc_personality_v0", "__libc_single_threaded", "__pthread_key_create", "sched_yield",
      "__cpu_model", "__cpu_indicator_init", "__cpu_features2"};
  if (exact.count(name) || libm_function(name) || libmvec_function(name)) return true;
  static const std::string_view prefixes[] = {
      // the C++ ABI and unwinder; operator new/delete; libstdc++ (std::), type info, vtables
      "__cxa_", "_Unwind_", "_Znw", "_Zna", "_Zdl", "_Zda", "_ZSt", "_ZNSt", "_ZNKSt", "_ZNSo",
      "_ZNKSo", "_ZTI", "_ZTV", "_ZTS", "_ZN9__gnu_cxx", "_ZN10__cxxabiv1", "_ZGTt",
      // OpenMP (libgomp) and threads with their locks
      "GOMP_", "omp_", "pthread_", "sem_",
      // libgcc's arithmetic helpers
      "__mul", "__div", "__pow", "__popcount", "__clz", "__ctz", "__ffs", "__parity", "__bswap",
      "__float", "__fix", "__trunc", "__extend", "__udiv", "__umod", "__mod", "__neg", "__cmp",
      "__ucmp", "__ashl", "__ashr", "__lshr"};
  for (std::string_view p : prefixes)
    if (name.starts_with(p)) return true;
  if (sanitized)
    for (std::string_view p : {"__asan_", "__ubsan_", "__sanitizer_", "__lsan_"})
      if (name.starts_with(p)) return true;
  return false;
}

}  // namespace

std::string import_refusal(std::string_view name, bool sanitized) {
  if (auto it = denied().find(name); it != denied().end()) return it->second;
  if (name.starts_with("_Z"))
    if (const char* why = denied_std_part(name)) return why;
  if (allowed(name, sanitized)) return "";
  return "not on the list of what kernels use (math and libmvec, memory and strings, "
         "allocation, the C++ runtime and library, OpenMP, threads and locks)";
}

bool allowed_library(std::string_view soname, bool sanitized) {
  for (std::string_view lib : {"libc.so", "libm.so", "libmvec.so", "libstdc++.so", "libgcc_s.so",
                               "libgomp.so", "libpthread.so", "ld-linux"})
    if (soname.starts_with(lib)) return true;
  if (sanitized)
    for (std::string_view lib : {"libasan.so", "libubsan.so"})
      if (soname.starts_with(lib)) return true;
  return false;
}

}  // namespace ollie::build
