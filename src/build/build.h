// The build driver: turns candidate kernel source (docs/design.md section 3 ABI) into a shared
// object. Owns the toolchain description, the content-addressed on-disk build cache,
// running the compiler as a child process (no shell, time limit, captured output),
// parallel batches, and the adapter TU that gives every kernel one uniform entry point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::build {

// The compiler and flags of a build. Defaults as docs/design.md section 3 says: g++ -std=c++20 -O3
// -march=native -fopenmp -shared -fPIC.
struct Toolchain {
  std::string compiler = "g++";
  std::vector<std::string> flags = {"-std=c++20", "-O3",     "-march=native",
                                    "-fopenmp",   "-shared", "-fPIC"};
};

// "g++ (Debian 12.2.0-14) 12.2.0": the first line of `compiler --version`, cached per
// compiler; throws UserError if the compiler cannot be run.
std::string compiler_version(const std::string& compiler);

// The sanitizer build of the verifier's full level: `base` at -O1 (ASan's advice for exact
// reports; also the quickest instrumented compile) with -fsanitize=address,undefined
// -fno-sanitize-recover=all -fno-omit-frame-pointer -D_GLIBCXX_SANITIZE_VECTOR (std::vector
// reads past size() but within capacity are reported too). Other flags stay, so the cache
// keeps it apart from the regular build (the flags are part of the key).
Toolchain sanitizer_toolchain(const Toolchain& base = {});

// The AddressSanitizer runtime that a process must preload to run code that `compiler`
// built with -fsanitize=address into a shared object (the executable is not instrumented):
// `compiler -print-file-name=libasan.so`, resolved to the real file; cached per compiler.
// Throws UserError when the compiler has no such runtime.
std::string sanitizer_runtime(const std::string& compiler);

// One source file of a build. `name` is a plain file name ("kernel.cpp", "matmul.ollie.h");
// every unit is written next to the others, and those ending in .cpp/.cc/.cxx/.c are
// compiled, so a kernel may #include "<entry>.ollie.h" given as another unit.
struct Unit {
  std::string name;
  std::string source;
};

struct Request {
  std::vector<Unit> units;
  Toolchain toolchain;
};

struct Result {
  bool ok = false;
  // Hex SHA-256 of (units' names and sources, compiler, compiler version, flags, and, when
  // a flag says "native", the host CPU's identity, since -march=native code is per CPU).
  std::string key;
  std::string so_path;               // the shared object in the cache (valid when ok)
  std::string log;                   // the compiler's full stdout+stderr (kept for feedback)
  std::vector<std::string> command;  // argv used (run in a directory holding the units)
  std::string compiler_version;
  double seconds = 0;  // wall time of the compile (0 for a cache hit)
  bool cache_hit = false;
};

// $OLLIE_CACHE_DIR, else $XDG_CACHE_HOME/ollie/build, else ~/.cache/ollie/build.
std::string default_cache_dir();

// Compiles requests into the cache at `cache_dir`: one directory per key holding the
// shared object, the log and meta.txt (ok, command, compiler version). Entries appear
// atomically (built in cache_dir/tmp, then renamed), so several processes may share one
// cache. Compile errors are cached too; a compile killed by the time limit or a signal
// is not (it may succeed on a less loaded machine).
class Driver {
 public:
  explicit Driver(std::string cache_dir = default_cache_dir());

  // Cached: the same key is never compiled twice (also not by two threads at once).
  // Throws UserError for a missing compiler, bad unit names or an unwritable cache.
  Result compile(const Request& request);
  // Up to `jobs` compiles at once; results in request order; identical keys within the
  // batch share one compile (and one Result).
  std::vector<Result> compile_all(const std::vector<Request>& requests, int jobs);

  // Wall-clock limit of one compiler run, default 120 s; the compiler's whole process
  // group is killed on expiry and the log says so.
  void set_time_limit(double seconds);
  // How many times this driver has run the compiler (not counting --version probes).
  int64_t compiler_runs() const;
  const std::string& cache_dir() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// The symbol names of one adapter. The defaults are the ones every candidate uses; other
// names let one shared object hold several candidates (one kernel/adapter pair each),
// which the runner then calls by entry name (runner::Options::entry_symbol).
struct AdapterNames {
  std::string kernel = "ollie_kernel";
  std::string entry = "ollie_entry";
  std::string signature = "ollie_signature";
};

// The adapter translation unit compiled into every candidate: it declares ollie_kernel with
// the exact ABI of `graph` (const T* inputs in signature order, U* outputs in return order,
// const int64_t* dims; f32 = float, f64 = double, i32 = int32_t, i64 = int64_t, bool = bool)
// and defines
//   extern "C" void ollie_entry(void* const* buffers, const int64_t* dims);
// which casts buffers[0..n_in+n_out) to those types and calls ollie_kernel. The runner
// calls only ollie_entry, so it never needs to know the signature. It also defines
//   extern "C" const char ollie_signature[];  // e.g. "matmul(f32[M, K], f32[K, N]) -> (f32[M, N]);
//   dims [M, K, N]"
// so a runner can check that a shared object was built for the graph it was handed.
// `names` renames the three symbols (the default output is unchanged byte for byte);
// throws InternalError when a name is not a C identifier.
std::string adapter_source(const ir::Graph& graph, const AdapterNames& names = {});
// ollie_signature's text for `graph`.
std::string signature_text(const ir::Graph& graph);

}  // namespace ollie::build
