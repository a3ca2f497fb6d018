// The runner stage: runs a compiled candidate kernel (a .so exporting ollie_entry, or
// another entry symbol when one .so holds several candidates) once, in a fresh
// `ollie-runner` child process, so that untrusted code never runs inside `ollie`. Owns
// the parent side of the protocol (shared-memory buffers, spawning, the timeout, mapping
// a child's death to a Status) and reading outputs back as Tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::runner {

// Where a buffer sits within its own pages. Every buffer starts on a 64-byte boundary
// (the kernel ABI's promise) and has a guard page before and after its pages. Start: at
// the start of its first page, so reading before element 0 crashes at once. End: as near
// the end of its last page as the alignment allows, so reading past the last element
// crashes (up to 63 bytes of slack remain). Random (the default): at a random multiple of
// 64 bytes into its first page, drawn per buffer per run, so a kernel cannot recognise the
// harness by buffers that start at page starts or end at page ends. Unused bytes of a
// buffer's pages hold 0xFF, and a write into them next to an output is reported as a crash.
enum class Placement { Start, End, Random };

struct Options {
  double timeout_seconds = 60;  // wall-clock limit of one run; the child is killed after it
  std::string runner_path;      // default: $OLLIE_RUNNER, else "ollie-runner" next to the running
                                // executable (/proc/self/exe)
  int threads = 0;  // OMP_NUM_THREADS for the child; 0 = ours if a plain count, else unset
  std::string entry_symbol =
      "ollie_entry";  // the adapter entry to call (build::AdapterNames::entry)
  // The sandbox: seccomp filters installed before the kernel is loaded (no sockets,
  // processes, exec, write-opens, prctl, or remapping the runner's memory, from its static
  // constructors on) and after (no opens at all; threads allowed), an address-space limit
  // of `memory_bytes` beyond the buffers, and a CPU-time limit of the timeout times the
  // threads. Off only for tests of the layers beneath it.
  bool sandbox = true;
  uint64_t memory_bytes = uint64_t{8} << 30;
  // Outputs start as plausible finite values instead of the NaN poison (the verifier's
  // check that a kernel does not skip work when its outputs look written already).
  bool plausible_outputs = false;
  Placement placement = Placement::Random;
  // The sanitizer run (the verifier's full level): the .so was built with
  // -fsanitize=address,undefined (build::sanitizer_toolchain) and `sanitizer_runtime` is the
  // ASan runtime to preload (build::sanitizer_runtime, e.g. `g++ -print-file-name=libasan.so`);
  // required when `sanitize` is set. Only this child gets LD_PRELOAD, ASAN_OPTIONS and
  // UBSAN_OPTIONS (replacing any inherited ones: no leak check, no symbolizer, exit code
  // protocol::kSanitizerExitCode, UBSan halts at its first error with a stack trace), and
  // its stderr goes to a pipe read here (the first 64 KiB kept), so a report becomes
  // Status::Sanitizer with the report's first lines as the message. Inside the child the
  // memory around every buffer is poisoned in ASan's shadow. The sandbox stays on, with two
  // differences: opening a file fails with EACCES instead of killing (the runtime reads
  // /proc/self/maps while it reports), and the address-space limit counts ASan's reserved
  // shadow as already mapped, so it no longer bounds the kernel's heap (ASan carves it out
  // of space reserved at start).
  bool sanitize = false;
  std::string sanitizer_runtime;
  // Kept for the callers; every child now gets the fixed OpenMP environment, timed or not
  // (the child inherits no environment, docs/design.md section 7): OMP_WAIT_POLICY=active,
  // and none of GOMP_SPINCOUNT, OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY or
  // OMP_DYNAMIC, so a kernel's threads spin between calls instead of sleeping (a sleeping
  // pool is woken by futex, which costs more than a small kernel).
  bool steady_openmp = false;
};

enum class Status {
  Ok,
  LoadError,
  Crash,
  Timeout,
  ProtocolError,
  Forbidden,
  OutOfMemory,
  Sanitizer,
  Tampered
};
// "ok", "load-error", "crash", "timeout", "protocol-error", "forbidden-syscall", "out-of-memory",
// "sanitizer", "tampered" (the kernel changed its read-only inputs, the floating-point
// environment or the harness's memory)
const char* status_name(Status s);

struct Outcome {
  Status status = Status::ProtocolError;
  std::string message;  // what happened, for a person (signal name, dlerror text, the
                        // first lines of a sanitizer report, ...)
  int signal = 0;       // for Crash
  std::vector<interp::Tensor> outputs;  // for Ok: one per graph result, values widened to double
  std::vector<std::vector<interp::Tensor>> call_outputs;  // run_calls: the outputs of each call
  double seconds = 0;      // wall time of the kernel call itself, measured in the child
  double cpu_seconds = 0;  // the child's CPU time, all threads, as it reported (0: none)
};

// Calls options.entry_symbol of `so_path` once per element of `calls`, in order, in ONE
// child process, each call on its own freshly placed buffers (inputs at new addresses):
// a kernel that keeps state between calls (caches, pointer-keyed results) shows.
// `seconds` is the sum of the calls; call_outputs holds each call's outputs.
Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<std::vector<interp::Tensor>>& calls, const Options& options);
// The same, on input sets held elsewhere (one may be named twice; nothing is copied).
Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options);
// The same with each call at its own dims: call c runs on graphs[c], one spec at other
// dims (the same params, results and dim names; the verifier's shape sweep in one process
// instead of one per draw).
Outcome run_calls(const std::string& so_path, const std::vector<const ir::Graph*>& graphs,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options);

// Runs options.entry_symbol of `so_path` once on `inputs` (one per graph param, shapes at
// graph.bound_dims) in a fresh child process; never throws for anything the kernel does.
// Outputs start as 0xFF bytes: an unwritten float element reads back as NaN, an
// unwritten bool as NaN, an unwritten integer as -1. Inputs are mapped read-only in the
// child and every buffer has guard pages around it (see Placement), so a write to an
// input or out of a buffer's pages is a Crash (SIGSEGV), and so is a write next to an
// output within its pages (found afterwards).
// A .so that cannot be loaded or lacks the entry symbol is a LoadError naming it.
// Throws UserError for the caller's mistakes: wrong number or shapes of inputs, an
// unbound dim, an entry symbol that is not a C identifier, or no runner executable at
// the runner path.
Outcome run(const std::string& so_path, const ir::Graph& graph,
            const std::vector<interp::Tensor>& inputs, const Options& options = {});

// One kernel of a timed run: a .so and the adapter entry to call.
struct Kernel {
  std::string so_path;
  std::string entry_symbol = "ollie_entry";
};

// How a timed run repeats (see protocol.h for the exact order of events).
struct TimingOptions {
  int warmup_rounds = 2;  // untimed rounds first
  int min_rounds = 5;     // timed rounds at least...
  int max_rounds = 2000;  // ...and at most
  double budget_seconds =
      1.0;            // keep timing rounds until this much time has passed (after min_rounds)
  bool cold = false;  // write flush_bytes of memory before each call: caches hold none of its data
  uint64_t flush_bytes =
      0;  // with cold: the flush buffer's size (the caller sizes it from the last-level cache)
  // An untimed call of the same kernel right before each timed call, on the next input
  // set (so consecutive calls of a kernel still see different inputs whenever there are
  // two sets; outputs poisoned again before the timed one), so the timed call never pays
  // for waking its threads.
  bool warm_call = false;
  // The child runs with Options::steady_openmp (the fixed OpenMP environment above).
  bool steady_openmp = false;
  // Fresh inputs (issue 16): no call sees inputs an earlier call saw, and which calls are
  // checked is decided after them. Before every call (warm-up, warm and timed) the live
  // inputs get the call's set rotated by a random 1..N-1 elements per input; the last
  // thing before the clock starts (after any flush) overwrites `fresh_points` random
  // elements of each input with the next set's values at the same positions. All of it
  // from getrandom in the child at that moment. After each timed call the child decides
  // by reservoir sampling whether it joins a uniform sample of `check_calls` timed calls
  // per kernel; their outputs and exactly what inputs they saw come back as
  // TimedOutcome::checked (set_outputs stays empty).
  bool fresh_inputs = false;
  int check_calls = 8;
  int fresh_points = 64;
  // Pace (the search's giving up on hopeless candidates; protocol.h, RequestHeader). 0: off.
  // A call of the first kernel that runs longer than call_limit_seconds ends the run at
  // once (TimedOutcome::over_call_limit, status Timeout).
  double call_limit_seconds = 0;
  // Two kernels: the rounds stop (TimedOutcome::abandoned) after any round, warm-up ones
  // included, in which each kernel has made two clocked calls (the first ten, unless its
  // calls took 10 ms together) and the first one's fastest is more than abandon_ratio
  // times the second one's.
  double abandon_ratio = 0;
  // The timed rounds stop once cap_seconds have passed and at least min(min_rounds, 2)
  // were made, even before min_rounds (bounds a slow kernel's rounds by time).
  double cap_seconds = 0;
};

// A timed call of fresh mode kept for checking: the inputs it saw (rebuilt from the
// staged set and the child's log) and the outputs it wrote.
struct CheckedCall {
  int kernel = 0;
  int round = 0;                              // the timed round
  int set = 0;                                // the input set it was drawn from
  std::vector<uint64_t> rotation;             // per input: element p held set[(p + r) % N]
  std::vector<std::vector<uint64_t>> points;  // per input: the elements then taken from the
                                              // next set, in order
  std::vector<interp::Tensor> inputs;
  std::vector<interp::Tensor> outputs;
};

struct TimedOutcome : Outcome {
  std::vector<std::vector<double>>
      rep_seconds;  // [kernel][round]: the wall time of each timed call
  // Not fresh: [kernel][set][result]: each kernel's outputs from its last call on each
  // input set
  std::vector<std::vector<std::vector<interp::Tensor>>> set_outputs;
  // Fresh: the checked calls of every kernel (min(check_calls, rounds) each), by round.
  std::vector<CheckedCall> checked;
  double warmup_seconds = 0;
  // Pace (TimingOptions): the run stopped because the first kernel was too slow, by the
  // ratio of the fastest calls, or by a call over the limit (the child was then killed).
  bool abandoned = false;
  bool over_call_limit = false;
  std::vector<double> fastest_seconds;  // per kernel: its fastest clocked call (0: none)
};

// Times `kernels` (one, or two side by side) in ONE child process, on ONE set of buffers
// at fixed addresses (allocated once, outside the timed region). Round r refills those
// inputs with input_sets[r % n] and calls each kernel once, in turn (A B, then B A on the
// next round, so neither always runs first), poisoning the outputs before every call and,
// when cold, flushing the caches. Only the kernel call is timed (CLOCK_MONOTONIC). The
// outputs of each kernel's last call on each set come back for checking (with
// fresh_inputs: a random sample of its timed calls, each on inputs no other call saw): a
// kernel that replays an earlier result for the same buffers, or skips work, is caught
// here even when it is right on fresh buffers. options.entry_symbol is not used. The same
// errors and statuses as run(); the timeout covers the whole timed run.
TimedOutcome time_kernels(const std::vector<Kernel>& kernels, const ir::Graph& graph,
                          const std::vector<std::vector<interp::Tensor>>& input_sets,
                          const Options& options, const TimingOptions& timing);

}  // namespace ollie::runner
