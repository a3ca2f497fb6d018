// The `ollie` command: ties the pipeline stages together behind verbs.
// Exit codes: 0 success, 1 bad input or a kernel that fails (message on stderr), 2 bad
// command line, 3 internal error (a bug in ollie), 4 a kernel whose outputs differ from
// the reference beyond the bound.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <iostream>

#include "cli/cli.h"

using namespace ollie;
using namespace ollie::cli;

namespace {
const char* const kSymbolHelp =
    "the name the kernel exports and its header declares (a C identifier; default "
    "ollie_kernel): kernels emitted under different names link into one program";
const char* const kExportedSymbolHelp =
    "the name the kernel exports (its --symbol when emitted; default ollie_kernel)";

// The flags every verb that reads a spec takes. Only this file and report.cpp include
// CLI11: its header-only build costs seconds of compile time in each file that includes it.
void add_spec_flags(CLI::App* cmd, SpecFlags& flags) {
  cmd->add_option("spec", flags.spec_path, "the numpy spec file (.py)")->required();
  cmd->add_option(
      "--entry", flags.entry,
      "the entry function, or a method as Class.method (default: the only annotated one)");
  cmd->add_option("--dims", flags.dims, "override dim sizes, e.g. --dims M=256,N=128");
}
}  // namespace

int main(int argc, char** argv) {
  // The reference interpreter and the verifier allocate and free tensors of megabytes per
  // suite. By default glibc maps big blocks fresh (and unmaps them when freed) and trims
  // the heap's free top, so every tensor is page-faulted in again: a fifth of a quick
  // verification's CPU time. Keep freed memory in the heap for reuse instead (blocks up to
  // 32 MiB, glibc's largest mmap threshold; the process's peak memory is unchanged).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{"ollie: a superoptimizing compiler for tensor kernels written as numpy"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ollie 0.1.0");

  SpecFlags check_flags;
  CLI::App* check =
      app.add_subcommand("check", "parse a spec; print its IR, bound shapes, FLOPs and bytes");
  add_spec_flags(check, check_flags);
  bool check_json = false;
  std::string check_rewrites;
  check->add_option(
      "--rewrites", check_rewrites,
      "a file of tensor-IR rewrites (one per line, docs/rewrites.md): show the rewritten graph");
  check->add_flag(
      "--json", check_json,
      "print the entry, bound dims, shapes, FLOPs and compulsory bytes as JSON instead");

  SpecFlags eval_flags;
  EvalFlags eval;
  CLI::App* eval_cmd =
      app.add_subcommand("eval", "run the reference interpreter; write values and error bounds");
  add_spec_flags(eval_cmd, eval_flags);
  eval_cmd->add_option(
      "--inputs", eval.inputs,
      "inputs: an .npz with one array per parameter name (or an .npy for one parameter)");
  eval_cmd->add_option("--out", eval.out,
                       "write out<i> and out<i>_bound (float64) to this .npz (or X.npy and "
                       "X_bound.npy for one result)");
  eval_cmd
      ->add_option("--seed", eval.seed, "seed for random inputs (default: a fresh one, printed)")
      ->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--save-inputs", eval.save_inputs,
                       "write the inputs used to this .npz (or .npy for one parameter)");
  eval_cmd->add_flag("--derived-only", eval.derived_only,
                     "write the derived error bound alone (default: the verifier's tolerance, "
                     "the smaller of it and the honest ensemble's)");

  SpecFlags emit_flags;
  EmitFlags emit_opts;
  CLI::App* emit_cmd = app.add_subcommand(
      "emit", "write the kernel (C++ in the ABI) under a schedule, its header and the schedule");
  add_spec_flags(emit_cmd, emit_flags);
  emit_cmd->add_option(
      "-o,--out-dir", emit_opts.out_dir,
      "directory for <entry>.cpp, <entry>.ollie.h and <entry>.schedule (default: .)");
  emit_cmd->add_option(
      "--schedule", emit_opts.schedule,
      "a schedule file, or its directives separated by ';' (default: the default schedule)");
  emit_cmd->add_option("--rewrites", emit_opts.rewrites,
                       "a file of tensor-IR rewrites to apply first, one per line (an optimize "
                       "run's <entry>.rewrites; "
                       "docs/rewrites.md)");
  CLI::Option* show_stages = emit_cmd->add_flag(
      "--show-stages", emit_opts.show_stages,
      "print the stages and loops a schedule can name, the default schedule, and the rewrite "
      "sites");
  emit_cmd
      ->add_flag("--show-loops", emit_opts.show_loops,
                 "also print the loop nest on stdout after the rewrites, after each directive and "
                 "before emission, each under a '== ...' line (the files are written as usual)")
      ->excludes(show_stages);
  emit_cmd->add_option("--symbol", emit_opts.symbol, kSymbolHelp);

  SpecFlags run_flags;
  RunKernelFlags run;
  CLI::App* run_cmd = app.add_subcommand(
      "run-kernel", "compile a kernel, run it in the runner, compare with the reference");
  add_spec_flags(run_cmd, run_flags);
  run_cmd->add_option("kernel", run.kernel_path, "the kernel source (.cpp) in the ollie ABI")
      ->required();
  run_cmd->add_option(
      "--inputs", run.inputs,
      "inputs: an .npz with one array per parameter name (or an .npy for one parameter)");
  run_cmd->add_option(
      "--out", run.out,
      "write the kernel's outputs (out<i>, in their dtypes) to this .npz (or .npy)");
  run_cmd->add_option("--seed", run.seed, "seed for random inputs (default: a fresh one, printed)")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--timeout", run.timeout_seconds, "seconds the kernel may run")
      ->check(CLI::PositiveNumber);
  run_cmd
      ->add_option("--threads", run.threads,
                   "OMP_NUM_THREADS for the kernel (default: as the environment says)")
      ->check(CLI::NonNegativeNumber);
  run_cmd->add_option("--compiler", run.compiler, "the C++ compiler (default g++)");
  run_cmd->add_option("--symbol", run.symbol, kExportedSymbolHelp);

  SpecFlags verify_flags;
  VerifyFlags ver;
  CLI::App* verify_cmd = app.add_subcommand(
      "verify",
      "check a kernel against the spec on fresh random suites in the sandbox; write a certificate");
  add_spec_flags(verify_cmd, verify_flags);
  verify_cmd->add_option("kernel", ver.kernel_path, "the kernel source (.cpp) in the ollie ABI")
      ->required();
  verify_cmd
      ->add_option("--level", ver.level,
                   "quick (every search candidate) or full (final answers: more trials, and an "
                   "ASan+UBSan build)")
      ->check(CLI::IsMember({"quick", "full"}));
  verify_cmd->add_option("--cert", ver.cert_path, "write the certificate (JSON) to this file");
  verify_cmd->add_flag("--json", ver.json, "print the certificate instead of the summary");
  verify_cmd->add_option("--seed", ver.seed,
                         "base seed of the suites (default: a fresh one, recorded)");
  verify_cmd->add_option("--timeout", ver.timeout_seconds, "seconds one run may take")
      ->check(CLI::PositiveNumber);
  verify_cmd->add_option("--threads", ver.threads, "OMP_NUM_THREADS for the kernel")
      ->check(CLI::NonNegativeNumber);
  verify_cmd->add_option("--compiler", ver.compiler, "the C++ compiler (default g++)");
  verify_cmd->add_option("--symbol", ver.symbol, kExportedSymbolHelp);
  verify_cmd->add_option("--inputs", ver.inputs,
                         "realistic inputs (an .npz with one array per parameter name, or an "
                         "ordinary .npy for one parameter) at the bound dims: one more suite "
                         "calls the kernel on exactly these (as `eval --inputs` evaluates them)");
  verify_cmd->add_flag("--accept-weak", ver.accept_weak,
                       "count a weak pass (most elements of an output bounded only by the 1% "
                       "relative floor) as a pass; the certificate still says weak");

  SpecFlags bench_flags;
  BenchFlags bench;
  CLI::App* bench_cmd = app.add_subcommand(
      "bench",
      "time a kernel (or two side by side) in the runner; check the outputs of the timed calls");
  add_spec_flags(bench_cmd, bench_flags);
  bench_cmd->add_option("kernel", bench.kernel_path, "the kernel source (.cpp) in the ollie ABI")
      ->required();
  bench_cmd->add_option("--vs", bench.vs_path,
                        "another kernel, timed interleaved with the first (A B B A ...)");
  bench_cmd
      ->add_option("--threads", bench.threads,
                   "OpenMP threads for the kernels (default: every core)")
      ->check(CLI::NonNegativeNumber);
  bench_cmd->add_flag("--cold", bench.cold,
                      "flush the caches before every call (default: hot caches)");
  bench_cmd->add_flag("--json", bench.json, "print the results as JSON");
  bench_cmd->add_option("--seconds", bench.seconds, "time budget of the timed rounds")
      ->check(CLI::NonNegativeNumber);
  bench_cmd->add_option("--seed", bench.seed,
                        "seed of the inputs (default: a fresh one, recorded)");
  bench_cmd->add_option("--timeout", bench.timeout_seconds, "seconds the whole timed run may take")
      ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--compiler", bench.compiler, "the C++ compiler (default g++)");
  bench_cmd->add_option("--symbol", bench.symbol,
                        "the name the kernels export (their --symbol when emitted; default "
                        "ollie_kernel)");

  OptimizeFlags opt;
  CLI::App* opt_cmd = app.add_subcommand("optimize",
                                         "search for the fastest kernel that passes the verifier "
                                         "(resumable; Ctrl-C stops and keeps the best)");
  opt_cmd->add_option("spec", opt.spec.spec_path, "the numpy spec file (.py); omit with --resume");
  opt_cmd->add_option(
      "--entry", opt.spec.entry,
      "the entry function, or a method as Class.method (default: the only annotated one)");
  opt_cmd->add_option("--dims", opt.spec.dims, "override dim sizes, e.g. --dims M=256,N=128");
  opt_cmd->add_option("-o,--out", opt.out_dir,
                      "the run directory: run.db and the results (default ollie-<entry>)");
  opt_cmd->add_option("--symbol", opt.symbol,
                      std::string(kSymbolHelp) +
                          "; kept by a resumed run (the search itself always uses ollie_kernel)");
  opt_cmd->add_option("--resume", opt.resume, "continue the run in this run database (DIR/run.db)");
  opt_cmd->add_option("--time", opt.time, "wall-time budget of this session: 90s, 10m, 2h, 1d");
  opt_cmd->add_option("--evals", opt.evals, "evaluation budget of the whole run")
      ->check(CLI::PositiveNumber);
  opt_cmd
      ->add_option("--session-evals", opt.session_evals,
                   "evaluation budget of this session (of this worker, in a shared run)")
      ->check(CLI::PositiveNumber);
  opt_cmd->add_option("--run-time", opt.run_time,
                      "wall-time budget of the whole run, since it was created: every worker "
                      "stops when the run is this old (90s, 10m, 2h, 1d)");
  opt_cmd->add_option("--seed", opt.seed, "seed of the proposals (default 1)");
  opt_cmd->add_option("--chains", opt.chains, "Markov chains (default 2)")
      ->check(CLI::Range(1, 64));
  opt_cmd->add_option("--proposers", opt.proposers,
                      "proposers with weights: mutate (schedule moves), rewrite (tensor-IR "
                      "rewrites, docs/rewrites.md), "
                      "llm (a language model or --proposer-cmd answering a kernel or a schedule, "
                      "docs/llm.md), e.g. "
                      "mutate:3,rewrite:1,llm:1 (default "
                      "mutate:3,rewrite:1)");
  opt_cmd
      ->add_option("--threads", opt.threads, "OpenMP threads of the kernels (default: every core)")
      ->check(CLI::NonNegativeNumber);
  opt_cmd
      ->add_option("--bench-seconds", opt.bench_seconds,
                   "side-by-side timing budget per candidate (default 0.3)")
      ->check(CLI::PositiveNumber);
  opt_cmd
      ->add_option("--give-up", opt.give_up,
                   "give up on a proposal whose first timed calls are this many times slower "
                   "than its chain's current kernel (or than the chain could accept at its "
                   "temperature) before verifying or fully timing it: verdict too-slow, never "
                   "accepted (default 2; 0: never; a resumed run keeps its setting; "
                   "docs/search.md)")
      ->check(CLI::NonNegativeNumber);
  opt_cmd
      ->add_option("--cost-model", opt.cost_model,
                   "on: a model learned during the run from its own evaluations ranks 8 "
                   "proposals per step and only the most promising is evaluated; off: every "
                   "proposal is evaluated, as the same seed did before (default off until its "
                   "rankings are shown to help; a resumed run keeps its setting; "
                   "docs/search.md)")
      ->check(CLI::IsMember({"on", "off"}));
  CLI::Option* opt_cold = opt_cmd->add_flag(
      "--cold", opt.cold,
      "time every candidate with cold caches (flushed before every timed call), as a kernel "
      "whose data comes from DRAM runs in a model (default: chosen from the working set, "
      "docs/measurement.md; a resumed run keeps its regime)");
  opt_cmd
      ->add_flag("--hot", opt.hot,
                 "time every candidate with hot caches (its data left in cache by the previous "
                 "call)")
      ->excludes(opt_cold);
  opt_cmd->add_flag("--accept-weak", opt.accept_weak,
                    "let a weak pass (most elements of an output bounded only by the 1% relative "
                    "floor) count as a pass, in the search and for the final answer");
  opt_cmd->add_option("--warm-start", opt.warm_start,
                      "start from the best kernels of earlier runs (RUN.db ...) of this spec or of "
                      "one with the same graph at other dims, measured on this kind of machine; "
                      "each is re-verified and re-timed, a failing one refused");
  opt_cmd->add_option("--tuning-db", opt.tuning_db,
                      "the per-user tuning database a new run starts from and every run adds its "
                      "best to (default: tuning.db in ollie's cache directory, "
                      "$XDG_CACHE_HOME/ollie or ~/.cache/ollie)");
  opt_cmd->add_flag("--no-tuning-db", opt.no_tuning_db,
                    "neither read nor write the tuning database");
  opt_cmd->add_flag("--no-recipe-starts", opt.no_recipe_starts,
                    "start the chains from the baseline and any warm starts only, not from the "
                    "known-good rewrite recipes (flash attention) that apply to the spec");
  opt_cmd
      ->add_option("--log-every", opt.log_every,
                   "seconds between progress lines when not on a terminal")
      ->check(CLI::PositiveNumber);
  // Shared storage and workers (docs/distributed.md).
  opt_cmd
      ->add_option("--storage", opt.storage,
                   "where the run is kept: sqlite:PATH (a run database file) or "
                   "postgresql://USER@HOST/DB (a PostgreSQL database shared by workers on many "
                   "machines; the password from PGPASSWORD or ~/.pgpass; env OLLIE_STORAGE). "
                   "Default: DIR/run.db of -o")
      ->envname("OLLIE_STORAGE")
      ->group("Shared runs");
  opt_cmd
      ->add_option("--run", opt.run_name,
                   "the run's name in a PostgreSQL --storage (env OLLIE_RUN): every `ollie "
                   "optimize SPEC` given the same spec, options and --run is a worker of that "
                   "run; the first creates it, one whose spec, dims, options or machine differ "
                   "is refused")
      ->envname("OLLIE_RUN")
      ->group("Shared runs");
  opt_cmd
      ->add_option("--storage-timeout", opt.storage_timeout_text,
                   "how long a worker retries a lost connection to the database (with backoff, "
                   "a line per retry) before it stops cleanly: 90s, 5m (default 5m)")
      ->group("Shared runs");
  opt_cmd
      ->add_option("--claim-lease", opt.claim_lease_text,
                   "a worker whose heartbeat has been silent this long (killed, or cut off) "
                   "loses its claims on the candidates it was evaluating (default 60s)")
      ->group("Shared runs");
  opt_cmd
      ->add_flag("--allow-mixed-machines", opt.allow_mixed_machines,
                 "let a worker on another kind of machine join the run (each times candidates "
                 "on its own machine)")
      ->group("Shared runs");
  opt_cmd
      ->add_flag("--finalize", opt.finalize_only,
                 "no search: fully verify the best candidates of the --storage/--run run and "
                 "write the fastest that passes into -o DIR (the last worker to stop does this "
                 "itself)")
      ->group("Shared runs");
  // The llm proposer (docs/llm.md). Each falls back to its environment variable.
  opt_cmd
      ->add_option("--llm-protocol", opt.llm_protocol,
                   "openai or anthropic (env OLLIE_LLM_PROTOCOL; default: inferred)")
      ->group("Language model");
  opt_cmd
      ->add_option(
          "--llm-base-url", opt.llm_base_url,
          "the model server, e.g. http://localhost:8000/v1 (env OLLIE_LLM_BASE_URL; default: the "
          "protocol's public endpoint)")
      ->group("Language model");
  opt_cmd->add_option("--llm-model", opt.llm_model, "the model's name (env OLLIE_LLM_MODEL)")
      ->group("Language model");
  CLI::Option* llm_key =
      opt_cmd
          ->add_option("--llm-key", opt.llm_key,
                       "the API key (discouraged: until ollie erases it, other processes can read "
                       "it in the process list; set OPENAI_API_KEY or ANTHROPIC_API_KEY, or use "
                       "--llm-key-file). Never stored")
          ->group("Language model");
  opt_cmd
      ->add_option("--llm-key-file", opt.llm_key_file,
                   "a file holding the API key, alone (instead of --llm-key). Never stored")
      ->excludes(llm_key)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-max-tokens", opt.llm_max_tokens,
                   "the answer's length limit in tokens (default 8192)")
      ->check(CLI::PositiveNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-temperature", opt.llm_temperature,
                   "sampling temperature (default: the server's)")
      ->check(CLI::NonNegativeNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-price-in", opt.llm_price_in,
                   "price per million prompt tokens, e.g. 3 (USD); for the cost")
      ->check(CLI::NonNegativeNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-price-out", opt.llm_price_out,
                   "price per million answer tokens, e.g. 15 (USD)")
      ->check(CLI::NonNegativeNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-token-budget", opt.llm_token_budget,
                   "tokens (in + out) the run may spend; then the llm proposer stops, the run goes "
                   "on (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-cost-budget", opt.llm_cost_budget,
                   "cost (at --llm-price-in/out) the run may spend; then the llm proposer stops "
                   "(0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-prompt", opt.llm_prompt,
                   "the prompt template file (default: the built-in prompts/kernel.md)")
      ->group("Language model");
  opt_cmd
      ->add_option("--llm-timeout", opt.llm_timeout, "seconds one request may take (default 600)")
      ->check(CLI::PositiveNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--proposer-cmd", opt.proposer_cmd,
                   "an external proposer instead of a model: run by /bin/sh, it reads the prompt "
                   "on stdin and "
                   "prints a kernel (or a ```schedule block); implies llm in --proposers")
      ->group("Language model");
  opt_cmd
      ->add_option("--proposer-timeout", opt.proposer_timeout,
                   "seconds --proposer-cmd may run (default 600)")
      ->check(CLI::PositiveNumber)
      ->group("Language model");
  opt_cmd
      ->add_option("--replay", opt.replay,
                   "re-run the recorded run RUN.db into -o DIR, the model's answers read from "
                   "RUN.db (no model, no "
                   "cost), with its options; its evaluations are reused for identical kernels")
      ->group("Language model");
  opt_cmd
      ->add_flag("--replay-evaluate", opt.replay_evaluate,
                 "with --replay: evaluate every candidate again instead of reusing the recorded "
                 "evaluations")
      ->group("Language model");

  add_serve_flags(opt_cmd, opt);
  const std::unique_ptr<ReportVerbs> report_verbs = add_report_verbs(app);  // report, serve
  const std::unique_ptr<MoveVerbs> move_verbs = add_move_verbs(app);        // export, import

  CalibrateFlags cal;
  CLI::App* calibrate_cmd = app.add_subcommand("calibrate",
                                               "measure this machine's peak float32 (and bf16, "
                                               "f16) FLOP/s and memory bandwidth once; print the "
                                               "cached figures");
  calibrate_cmd->add_flag("--recalibrate", cal.recalibrate,
                          "measure again even if cached figures match this machine");
  calibrate_cmd->add_flag("--json", cal.json, "print the figures as JSON");
  calibrate_cmd
      ->add_option("--threads", cal.threads,
                   "also show the roofline peaks at this many threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  calibrate_cmd->add_option("--cache-dir", cal.cache_dir,
                            "where machine.json is kept (default: $OLLIE_CACHE_DIR, else "
                            "$XDG_CACHE_HOME/ollie, else ~/.cache/ollie)");
  calibrate_cmd
      ->add_option("--max-array-mib", cal.max_array_mib,
                   "when measuring: cap on each triad array, MiB (default 1024; arrays are 4 x the "
                   "last-level cache up to it)")
      ->check(CLI::PositiveNumber);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    scrub_flag_values(argc, argv, "--llm-key");
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // The parser has its copy: the key leaves /proc/PID/cmdline (where every process of the
  // user could read it until now).
  if (scrub_flag_values(argc, argv, "--llm-key"))
    std::cerr << "warning: --llm-key shows the key to every process of this user until ollie "
                 "starts; set OPENAI_API_KEY or ANTHROPIC_API_KEY, or use --llm-key-file FILE\n";

  try {
    if (*check) return run_check(check_flags, check_json, check_rewrites);
    if (*eval_cmd) return run_eval(eval_flags, eval);
    if (*run_cmd) return run_kernel(run_flags, run);
    if (*verify_cmd) return run_verify(verify_flags, ver);
    if (*emit_cmd) return run_emit(emit_flags, emit_opts);
    if (*bench_cmd) return run_bench(bench_flags, bench);
    if (*opt_cmd) {
      if (!opt.llm_key_file.empty()) opt.llm_key = read_key_file(opt.llm_key_file);
      if (!opt.storage_timeout_text.empty())
        opt.storage_timeout = api::parse_duration(opt.storage_timeout_text, "--storage-timeout");
      if (!opt.claim_lease_text.empty())
        opt.claim_lease = api::parse_duration(opt.claim_lease_text, "--claim-lease");
      return run_optimize(opt);
    }
    if (*calibrate_cmd) return run_calibrate(cal);
    if (report_verbs->given()) return report_verbs->run();
    if (move_verbs->given()) return move_verbs->run_verb();
  } catch (const UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n";
    return 3;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory (try smaller --dims)\n";
    return 1;
  }
  return 0;
}
