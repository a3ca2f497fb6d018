// Shared pieces of the `ollie` verbs (src/cli/): spec flags, inputs from files or seeds,
// array conversions, and the verbs themselves, one file each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "api/api.h"
#include "interp/interp.h"
#include "ir/ir.h"
#include "npy/npy.h"

namespace CLI {
class App;  // CLI11's; only main.cpp and report.cpp, which define flags, include CLI11
}

namespace ollie::cli {

using SpecFlags = api::SpecRef;
using api::check_reference_fits;
using api::grouped;
using api::load;
using api::parse_duration;
using api::read_text;
using api::with_rewrites;
using api::write_text;

// The shape at the bound dims, "[256, 512]".
std::string bound_shape_str(const ir::Shape& shape, const ir::DimBindings& dims);

npy::ElementType element_type(ir::DType t);
const char* element_type_name(npy::ElementType t);
bool has_suffix(const std::string& s, const std::string& suffix);
// "out.npy" -> "out<suffix>.npy"
std::string npy_sibling(const std::string& path, const std::string& suffix);
npy::Array to_array(const interp::Tensor& t);                      // as float64
npy::Array to_array_as(const interp::Tensor& t, ir::DType dtype);  // in a dtype
// Seeded random inputs: normal(0, 1) for floats, small integers for ints, coin flips for bools.
std::vector<interp::Tensor> random_inputs(const ir::Graph& graph, uint64_t seed);
// One array per parameter from an .npz (or an .npy for a one-parameter entry).
std::vector<interp::Tensor> file_inputs(const ir::Graph& graph, const std::string& path);
// Inputs from --inputs, else random with --seed (or a fresh seed); says which on stdout.
std::vector<interp::Tensor> obtain_inputs(const ir::Graph& graph, const std::string& inputs_path,
                                          int64_t seed);
// Writes arrays to an .npz, or to an .npy when there is exactly one (`what` names the flag).
void write_arrays(const std::string& path, const npy::ArrayList& arrays, const std::string& what);
// The verbs.
// json: the entry, dims, param/result shapes, FLOPs and compulsory bytes as JSON, no IR text.
int run_check(const SpecFlags& flags, bool json = false, const std::string& rewrites = "");
struct EvalFlags {
  std::string inputs;
  std::string out;
  std::string save_inputs;
  int64_t seed = -1;
  bool derived_only = false;  // the derived bound alone, without the honest ensemble
};
int run_eval(const SpecFlags& flags, const EvalFlags& eval);
// Writes <entry>.cpp and <entry>.ollie.h into out_dir.
struct EmitFlags {
  std::string out_dir = ".";
  std::string schedule;  // a file or the text; empty: the default schedule
  std::string rewrites;  // a file of rewrite lines (src/rewrite/); empty: none
  bool show_stages = false;
  bool show_loops = false;  // print the loop nest at each step on stdout (docs/schedules.md)
  std::string symbol = "ollie_kernel";  // --symbol: the kernel's exported name
};
int run_emit(const SpecFlags& flags, const EmitFlags& emit_flags);
struct RunKernelFlags {
  std::string kernel_path;
  std::string inputs;
  std::string out;
  std::string compiler;  // empty: the build driver's default (g++)
  int64_t seed = -1;
  double timeout_seconds = 60;
  int threads = 0;
  std::string symbol = "ollie_kernel";  // --symbol: the name the kernel exports
};
// Exit code 0 when the kernel ran and agrees with the reference within the bound, 4 when
// it ran but differs, 1 when it does not compile or fails.
int run_kernel(const SpecFlags& flags, const RunKernelFlags& run);

struct VerifyFlags {
  std::string kernel_path;
  std::string level = "quick";  // quick | full
  std::string cert_path;
  bool json = false;
  uint64_t seed = 0;  // 0: fresh
  double timeout_seconds = 60;
  int threads = 0;
  std::string compiler;
  bool accept_weak = false;  // a weak pass (docs/verifier.md) counts as pass
  std::string inputs;        // --inputs: realistic inputs (.npz / .npy) for one more suite
  std::string symbol = "ollie_kernel";  // --symbol: the name the kernel exports
};
// Exit code 0 only when the verdict is pass; 4 for any other verdict.
int run_verify(const SpecFlags& flags, const VerifyFlags& v);
struct BenchFlags {
  std::string kernel_path;
  std::string vs_path;  // a second kernel, timed side by side
  int threads = 0;      // 0: every core
  bool cold = false;
  bool json = false;
  double seconds = 1.0;  // timing budget
  uint64_t seed = 0;     // 0: fresh
  double timeout_seconds = 300;
  std::string compiler;
  std::string symbol = "ollie_kernel";  // --symbol: the name the kernels export
};
// Exit code 0 when every kernel ran and its timed outputs agree with the reference; 4
// otherwise (compile error, crash, wrong outputs while timed, a time below the roofline).
int run_bench(const SpecFlags& flags, const BenchFlags& b);
// `ollie optimize`'s flags: the api's options, and how often to log progress.
struct OptimizeFlags : api::OptimizeOptions {
  int log_every = 10;  // seconds between progress lines when not on a terminal
  bool serve = false;  // --serve: the live page while the search runs
  std::string bind = "127.0.0.1";
  int port = 8765;
  std::string storage_timeout_text, claim_lease_text;  // parsed into the options' seconds
};
// Exit 0 when a best kernel was written, 4 when none passed the full verification.
int run_optimize(const OptimizeFlags& f);

// `ollie report` and `ollie serve` (report.cpp): their flags, and which one was given.
struct ReportVerbs {
  CLI::App* report = nullptr;
  CLI::App* serve = nullptr;
  std::string db;
  std::string storage, run_name;  // report: a run in a PostgreSQL database instead of db
  std::string out = "report.html";
  std::string bind = "127.0.0.1";
  int port = 8765;
  bool given() const;
  int run() const;
};
std::unique_ptr<ReportVerbs> add_report_verbs(CLI::App& app);
// `ollie export` and `ollie import` (export.cpp): a run between a file and a shared database.
struct MoveVerbs {
  CLI::App* exp = nullptr;
  CLI::App* imp = nullptr;
  std::string run, storage, file;
  bool given() const;
  int run_verb() const;
};
std::unique_ptr<MoveVerbs> add_move_verbs(CLI::App& app);
// optimize's --serve, --bind and --port.
void add_serve_flags(CLI::App* optimize, OptimizeFlags& f);

// Secrets on the command line (secrets.cpp). Overwrites the value of every `flag VALUE` and
// `flag=VALUE` in argv's own memory, which /proc/PID/cmdline shows to every process of the
// user; true when there was one. Call after parsing (the parser keeps copies).
bool scrub_flag_values(int argc, char** argv, const std::string& flag);
// The API key in the file `path`: its text without surrounding whitespace. UserError naming
// the file (never the key) when it cannot be read or is empty.
std::string read_key_file(const std::string& path);

struct CalibrateFlags {
  bool recalibrate = false;
  bool json = false;
  int threads = 0;            // 0: all cores
  std::string cache_dir;      // empty: measure::default_cache_dir()
  int64_t max_array_mib = 0;  // 0: the default cap (1024 MiB per triad array)
};
int run_calibrate(const CalibrateFlags& flags);

}  // namespace ollie::cli
