// The ollie library's one public header (stage "api"): the whole pipeline for other
// programs — check a spec, evaluate the reference, emit, verify and bench a kernel, and
// run, resume, replay and finalize an `optimize` search, with progress reported to an
// observer instead of printed. The `ollie` command (src/cli/) is flag parsing and printing
// over this header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"
#include "measure/measure.h"
#include "search/search.h"
#include "verify/verify.h"

namespace ollie::api {

// ---------------------------------------------------------------- specs and files

// A spec: its file, the entry (empty: the only annotated one) and dims overrides as the
// --dims flag writes them ("M=256,N=128"; empty: the spec's own).
struct SpecRef {
  std::string spec_path;
  std::string entry;
  std::string dims;
};

// `ollie check`: parses and elaborates the spec (UserError on bad input).
ir::Graph load(const SpecRef& spec);
// `graph` after the rewrite chain in the file `path` (src/rewrite/); `graph` itself when
// `path` is empty. UserError naming the file and the line that does not apply.
ir::Graph with_rewrites(const ir::Graph& graph, const std::string& path);
// The whole file; UserError naming `what` ("kernel", "spec") and the path when unreadable.
std::string read_text(const std::string& path, const char* what);
// Writes `text` to `path` (an -o output); UserError naming the file when it cannot.
void write_text(const std::filesystem::path& path, const std::string& text);
// "1,234,567"
std::string grouped(int64_t n);
// `ollie check --json`: entry, dims, the params' and results' shapes ("shape" as text,
// "axes" one text per axis, "bound_shape"), dtypes, FLOPs, compulsory bytes and intensity,
// and with `with_ir` the IR text; JSON indented by `indent` (-1: one line).
std::string check_facts_json(const ir::Graph& graph, int indent = -1, bool with_ir = false);
// Refuses dims whose reference evaluation would not fit in this machine's memory.
void check_reference_fits(const ir::Graph& graph);
// The graph of the spec `spec` names at other dims (the verifier's shape sweep).
verify::GraphAt graph_at(const SpecRef& spec);

// ---------------------------------------------------------------- one kernel

// `ollie eval`: the reference's outputs for `inputs`, with the verifier's tolerance (the
// derived bound tightened by the honest ensemble; `derived_only`: the derived bound alone).
// `seed` draws the ensemble (< 0: its default).
interp::Result eval(const ir::Graph& graph, const std::vector<interp::Tensor>& inputs,
                    bool derived_only = false, int64_t seed = -1);

struct EmitOptions {
  std::string schedule;                 // a schedule's text; empty: the default schedule
  std::string symbol = "ollie_kernel";  // the exported name (emit::check_symbol)
};
struct EmittedKernel {
  std::string source;    // <entry>.cpp
  std::string header;    // <entry>.ollie.h
  std::string schedule;  // the schedule used, as text
};
// `ollie emit`: the kernel of `graph` under a schedule, its header and the schedule.
EmittedKernel emit(const ir::Graph& graph, const EmitOptions& options = {});

// `ollie verify`: the verifier's report on `kernel_source` (options.kernel_symbol names
// its function); `at` gives the spec at other dims (graph_at).
verify::Report verify(const ir::Graph& graph, const std::string& kernel_source,
                      const verify::GraphAt& at, const verify::Options& options);

// `ollie bench`: times the kernels side by side (measure::bench).
measure::BenchReport bench(const ir::Graph& graph, const std::vector<measure::BenchKernel>& kernels,
                           const measure::BenchOptions& options);

// A verified kernel compiled (with its adapter, by the build driver, in its sandbox and
// cache: the verifier's own build) for a caller that loads it into its own process, as the
// Python package's ollie.load does. Only for a kernel whose certificate the caller checked
// against the spec; search candidates never come here. UserError when it does not compile.
struct CallableKernel {
  std::string so_path;           // the shared object, in the build cache
  std::string entry_symbol;      // extern "C" void entry(void* const* buffers, const int64_t* dims)
  std::string signature_symbol;  // extern "C" const char[]: the graph it was built for
  std::string signature;         // what that text must say for `graph`
};
CallableKernel build_callable(const ir::Graph& graph, const std::string& kernel_source,
                              const std::string& symbol = "ollie_kernel",
                              const std::string& compiler = "");

// ---------------------------------------------------------------- optimize

// What `ollie optimize` takes: a new run (spec), a resumed one (resume) or a replay.
struct OptimizeOptions {
  SpecRef spec;               // spec_path empty with --resume
  std::string out_dir;        // -o; default ollie-<entry>
  std::string resume;         // a run database to continue
  std::string time;           // --time 10m
  int64_t evals = 0;          // --evals N (the whole run)
  int64_t session_evals = 0;  // --session-evals N (this session: this worker of a shared run)
  std::string run_time;       // --run-time 2h: the whole run's wall time, since it was created
  uint64_t seed = 1;
  int chains = 2;
  // Schedule moves 3 to 1 over rewrites: a rewrite restarts from the new graph's default
  // schedule, so each rewritten graph needs several schedule moves to be judged fairly.
  std::string proposers = "mutate:3,rewrite:1";
  int threads = 0;
  double bench_seconds = 0.3;
  // A proposal whose first timed calls are this many times slower than its chain's
  // current state (or than the chain's acceptance could take) is given up as too slow
  // (search::SearchOptions::give_up); 0: never. A resumed run keeps its setting.
  double give_up = 2.0;
  // The llm proposer's model (docs/llm.md). Unset values (empty, negative, 0 where noted)
  // fall back to the run's stored options or the defaults. The key is never stored.
  std::string llm_protocol, llm_base_url, llm_model, llm_key;
  std::string llm_key_file;       // --llm-key-file: read into llm_key by the CLI
  int llm_max_tokens = 0;         // 0: unset
  double llm_temperature = -1;    // < 0: unset
  double llm_price_in = -1;       // per million prompt tokens; < 0: unset
  double llm_price_out = -1;      // per million answer tokens
  int64_t llm_token_budget = -1;  // < 0: unset; 0: no limit
  double llm_cost_budget = -1;
  std::string llm_prompt;       // a template file (prompts/kernel.md's format)
  double llm_timeout = 0;       // seconds per HTTP attempt; 0: unset
  std::string proposer_cmd;     // an external proposer: the prompt on stdin, a kernel on stdout
  double proposer_timeout = 0;  // its time limit, seconds; 0: unset (600)
  std::string replay;           // a recorded run database to replay
  bool replay_evaluate =
      false;  // evaluate every candidate again instead of reusing the recorded evaluations
  bool accept_weak = false;  // a weak pass (docs/verifier.md) may be the search's answer
  // Warm starts (docs/search.md): earlier run databases to start from, and the per-user
  // tuning database (default <cache dir>/tuning.db; read by a new run, written at the end).
  std::vector<std::string> warm_start;
  std::string tuning_db;
  bool no_tuning_db = false;
  // A new run also starts from the known-good rewrite recipes that apply to the spec
  // (search::recipe_starts) unless this is set; a resumed run keeps its run's setting.
  bool no_recipe_starts = false;
  std::string cost_model;  // --cost-model on|off; empty: off for a new run, the run's own on resume
  // The timing regime (docs/measurement.md); neither: chosen from the working set.
  bool cold = false;  // --cold: flush the caches before every timed call
  bool hot = false;   // --hot: time with warm caches
  // --symbol: the name the written kernel exports; empty: the run's own (ollie_kernel).
  std::string symbol;
  // Shared storage (docs/distributed.md): --storage sqlite:PATH | postgresql://... and
  // --run NAME. With PostgreSQL, every process given the same SPEC, options and --run is a
  // worker of one run (the first creates it).
  std::string storage, run_name;
  double storage_timeout = 300;       // --storage-timeout: seconds a lost connection is retried
  double claim_lease = 60;            // --claim-lease: a silent worker's claims are free after this
  bool allow_mixed_machines = false;  // --allow-mixed-machines
  bool finalize_only = false;         // --finalize: verify and write the run's best, no search
};

// "90s", "10m", "2h", "1d" (a bare number is seconds); UserError naming `flag` otherwise.
double parse_duration(const std::string& text, const std::string& flag);

// The events of a run, with the numbers the CLI prints.
struct StartedEvent {
  std::string entry, spec_path;
  std::string db_path;
  bool resumed = false;
  std::string regime_text, regime_why;  // "hot caches", and why
};
struct ProgressEvent {  // after every step of the search
  search::Progress progress;
  double roofline_fraction = 0;  // of the best time
  bool cold = false;             // the timing regime
  bool cost_model_on = false;
  std::string llm_usage;  // "3 model calls, ..." with the llm proposer, else empty
};
struct NewBestEvent {  // a step that made a faster best
  double best_seconds = 0, baseline_seconds = 0;
  int64_t evaluations = 0;  // this session, when it happened
};
struct VerifiedEvent {  // one of the best candidates after its full verification
  int64_t candidate = 0;
  verify::Verdict verdict = verify::Verdict::Pass;
  std::string message;
};
struct FinishedEvent {
  search::StopReason reason = search::StopReason::EvalBudget;
  bool written = false;  // false: no candidate passed the full verification
  // A worker of a shared run that stopped while others search: the last one writes.
  bool left_to_another_worker = false;
  std::filesystem::path out_dir;
  std::string db_path;
  std::vector<std::string> files;  // written into out_dir, in order
  std::string summary;             // summary.md's text
  int64_t best_candidate = 0;
  double best_seconds = 0, baseline_seconds = 0;
  std::string tuning_note;  // what became of the tuning database (empty: none used)
};

// Progress of a run reaches its caller here (never stdout). Every method has an empty
// default; they are called on the caller's thread.
class OptimizeObserver {
 public:
  virtual ~OptimizeObserver() = default;
  // A line for a person: calibration, the model used, warm starts, the tuning database.
  virtual void note(const std::string& line) {}
  virtual void started(const StartedEvent& e) {}
  virtual void evaluated(const ProgressEvent& e) {}
  virtual void new_best(const NewBestEvent& e) {}
  virtual void stopped(search::StopReason reason) {}
  virtual void verifying(int64_t candidate) {}
  virtual void verified(const VerifiedEvent& e) {}
  virtual void finished(const FinishedEvent& e) {}
};

// One run: opened (created, resumed or replayed), searched, finalized. Holds the run
// database and its lock (no second process runs chains on it) until destroyed.
class OptimizeRun {
 public:
  // A new run from options.spec, the run in options.resume, or a replay of options.replay
  // (which one: the options say; UserError for options that do not go together).
  static OptimizeRun open(const OptimizeOptions& options, OptimizeObserver& observer);
  OptimizeRun(OptimizeRun&&) noexcept;
  OptimizeRun& operator=(OptimizeRun&&) noexcept;
  ~OptimizeRun();

  // Runs the chains until a budget is spent or `stop()` turns true (checked between
  // evaluations; may be empty).
  search::StopReason search(const std::function<bool()>& stop);
  // Verifies the best candidates at the full level, fastest first, and writes the first
  // that passes (kernel, header, schedule, rewrites, certificate, summary) into the run's
  // directory, adding it to the tuning database; then the run's report.html (src/report/),
  // whatever the outcome.
  FinishedEvent finalize(search::StopReason reason);

  struct State;

 private:
  explicit OptimizeRun(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// open, search and finalize in one call.
FinishedEvent optimize(const OptimizeOptions& options, OptimizeObserver& observer,
                       const std::function<bool()>& stop = {});

}  // namespace ollie::api
