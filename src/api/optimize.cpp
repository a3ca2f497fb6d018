// `optimize` behind api::OptimizeRun: opening a run (a new one from a spec into its
// directory, a resumed one, or a replay of a recorded run), with the session's search
// options, evaluator, roofline and proposers. Searching and finalizing:
// optimize_finalize.cpp.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "api/api.h"
#include "api/optimize_llm.h"
#include "api/optimize_shared.h"
#include "api/optimize_state.h"
#include "api/optimize_timing.h"
#include "api/optimize_warm.h"
#include "emit/emit.h"
#include "measure/measure.h"
#include "search/cost_model.h"
#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::api {

namespace fs = std::filesystem;

std::string clock_text(double seconds) {
  const int s = static_cast<int>(seconds);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

std::string ms(double seconds) { return fmt::format("{:.4g} ms", seconds * 1e3); }

// The spec's graph at the run's dims, from the run database (not the spec file, which
// may have changed since).
ir::Graph graph_of_run(const store::RunInfo& info) {
  spec::SpecOptions so;
  so.entry = info.entry;
  const nlohmann::json dims = nlohmann::json::parse(info.dims_json);
  for (const auto& [name, value] : dims.items()) so.dim_overrides[name] = value.get<int64_t>();
  return spec::compile_spec(info.spec_path, info.spec_source, so);
}

// "12 calls, 3.4k tokens, 0.0123 (cost)" for the progress line and the summary.
std::string usage_text(const search::LlmUsage& u) {
  std::string text =
      fmt::format("{} model call{}, {} tokens in, {} out", u.calls, u.calls == 1 ? "" : "s",
                  grouped(u.tokens_in), grouped(u.tokens_out));
  if (u.cost > 0) text += fmt::format(", cost {:.4g}", u.cost);
  return text;
}

double parse_duration(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double scale = unit == "" || unit == "s" ? 1
                       : unit == "m"             ? 60
                       : unit == "h"             ? 3600
                       : unit == "d"             ? 86400
                                                 : -1;
  if (used == 0 || scale < 0 || !(value > 0))
    throw UserError(flag + " " + text + ": write a positive duration such as 90s, 10m, 2h or 1d");
  return value * scale;
}

RunLock::RunLock(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw UserError(fmt::format("cannot create the run lock '{}': {}", path, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    throw UserError(fmt::format(
        "the run database '{}' is in use by another ollie optimize; wait for it to stop "
        "(or stop it with Ctrl-C), then resume",
        db_path));
  }
}
RunLock::~RunLock() { ::close(fd_); }

OptimizeRun::OptimizeRun(std::unique_ptr<State> state) : state_(std::move(state)) {}
OptimizeRun::OptimizeRun(OptimizeRun&&) noexcept = default;
OptimizeRun& OptimizeRun::operator=(OptimizeRun&&) noexcept = default;
OptimizeRun::~OptimizeRun() = default;

OptimizeRun OptimizeRun::open(const OptimizeOptions& options, OptimizeObserver& observer) {
  auto state = std::make_unique<State>();
  State& s = *state;
  s.f = options;
  s.observer = &observer;
  const OptimizeOptions& f = s.f;
  // The run: a new one from SPEC into DIR, the one in --resume, or a new one replaying
  // the recorded run in --replay.
  const bool resuming = s.resuming = !f.resume.empty();
  const bool replaying = s.replaying = !f.replay.empty();
  if (resuming && !f.spec.spec_path.empty())
    throw UserError("give either SPEC (a new run) or --resume RUN.db (continue one), not both");
  if (replaying && (resuming || !f.spec.spec_path.empty()))
    throw UserError(
        "--replay RUN.db starts a new run from the recorded one (its spec and options); give "
        "neither SPEC "
        "nor --resume with it");
  if (replaying && (!f.proposer_cmd.empty() || !f.llm_model.empty() || !f.llm_base_url.empty() ||
                    !f.llm_key.empty() || !f.llm_protocol.empty() || !f.llm_prompt.empty()))
    throw UserError(
        "--replay answers the model's calls from the recorded run with its settings; leave out "
        "--proposer-cmd and the --llm-* flags");
  if (!f.symbol.empty()) emit::check_symbol(f.symbol);
  if (f.replay_evaluate && !replaying)
    throw UserError("--replay-evaluate goes with --replay RUN.db");
  if (!f.warm_start.empty() && (resuming || replaying))
    throw UserError(
        "--warm-start starts a new run from earlier ones (give it with SPEC); a resumed run "
        "keeps the warm starts it began with, and a replay repeats its recorded run");
  // The tuning database: read by a new run, added to at the end (not by a replay, which
  // repeats its recorded run).
  s.tuning_path = replaying ? std::string() : tuning_db_path(f);
  const std::string& tuning_path = s.tuning_path;
  search::GatheredWarmStarts& warm = s.warm;
  check_storage_flags(f);
  if (!resuming && !replaying && !f.finalize_only && f.spec.spec_path.empty())
    throw UserError(
        "no spec: ollie optimize SPEC -o DIR starts a run; ollie optimize --resume DIR/run.db "
        "continues one");
  std::optional<store::Store>& db = s.db;
  std::optional<store::Store>& recorded = s.recorded;
  ir::Graph& graph = s.graph;
  fs::path& out_dir = s.out_dir;
  nlohmann::json& options_json = s.options_json;
  std::optional<RunLock>& lock = s.lock;
  if (f.finalize_only) {
    const store::Location where = storage_location(f, *s.observer);
    db.emplace(store::Store::open(where));
    choose_machine_kind(*db, *s.observer);
    s.db_path = where.postgres() ? where.describe() : where.path;
    const store::RunInfo info = db->run();
    graph = graph_of_run(info);
    out_dir = f.out_dir.empty() ? fs::path("ollie-" + graph.entry) : fs::path(f.out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw UserError(
          fmt::format("-o {}: cannot create the directory: {}", out_dir.string(), ec.message()));
    options_json = nlohmann::json::parse(info.options_json);
  } else if (resuming) {
    s.db_path = f.resume;
    lock.emplace(f.resume);
    db.emplace(store::Store::open(f.resume));
    const store::RunInfo info = db->run();
    graph = graph_of_run(info);
    out_dir = fs::path(f.resume).parent_path();
    options_json = nlohmann::json::parse(info.options_json);
  } else if (replaying) {
    recorded.emplace(store::Store::open(f.replay));
    store::RunInfo info = recorded->run();
    graph = graph_of_run(info);
    out_dir =
        f.out_dir.empty() ? fs::path("ollie-" + graph.entry + "-replay") : fs::path(f.out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw UserError(
          fmt::format("-o {}: cannot create the directory: {}", out_dir.string(), ec.message()));
    if (fs::exists(out_dir / "run.db") && fs::equivalent(out_dir / "run.db", f.replay))
      throw UserError("--replay " + f.replay +
                      ": the replay needs a directory of its own; give another -o DIR");
    // The recorded run's spec, dims and options (seed, chains, proposers, threads, the
    // model's settings), and where the answers come from.
    options_json = nlohmann::json::parse(info.options_json);
    options_json["replay"] = {{"of", fs::absolute(f.replay).string()},
                              {"evaluate", f.replay_evaluate}};
    info.options_json = options_json.dump();
    info.machine_json = run_machine_json();
    info.created = strings::utc_now_iso8601();
    lock.emplace((out_dir / "run.db").string());
    db.emplace(store::Store::create((out_dir / "run.db").string(), info));
  } else {
    graph = load(f.spec);
    out_dir = f.out_dir.empty() ? fs::path("ollie-" + graph.entry) : fs::path(f.out_dir);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw UserError(
          fmt::format("-o {}: cannot create the directory: {}", out_dir.string(), ec.message()));
    store::RunInfo info;
    info.spec_path = f.spec.spec_path;
    info.spec_source = read_text(f.spec.spec_path, "spec");
    info.spec_sha256 = sha256_hex(info.spec_source);
    info.entry = graph.entry;
    nlohmann::json dims = nlohmann::json::object();
    for (const auto& d : graph.dims) dims[d] = graph.bound_dims.at(d);
    info.dims_json = dims.dump();
    info.machine_json = run_machine_json();
    if (f.give_up > 0 && f.give_up < 1)
      throw UserError(fmt::format(
          "--give-up {}: a factor below 1 would give up on candidates faster than the chain's "
          "own kernel; give 0 (never give up) or a factor of at least 1 (default 2)",
          f.give_up));
    std::string proposers = f.proposers;
    const nlohmann::json llm_options = llm_options_for_new_run(f, proposers);  // never the key
    options_json = {{"seed", f.seed},
                    {"chains", f.chains},
                    {"proposers", proposers},
                    {"threads", f.threads},
                    {"bench_seconds", f.bench_seconds},
                    {"give_up", f.give_up},
                    {"accept_weak", f.accept_weak}};
    if (!llm_options.is_null()) options_json["llm"] = llm_options;
    options_json["cost_model"] = f.cost_model.empty() ? "off" : f.cost_model;
    options_json["recipe_starts"] = !f.no_recipe_starts;
    if (!f.symbol.empty() && f.symbol != emit::kDefaultSymbol) options_json["symbol"] = f.symbol;
    options_json["timing"] = regime_json(regime_for_new_run(f, graph, f.threads));
    info.options_json = options_json.dump();
    info.seed = f.seed;
    info.created = strings::utc_now_iso8601();
    // Before the run database exists: a file that cannot be read stops here.
    warm = gather_for_new_run(f, tuning_path, graph, info.spec_sha256, graph_of_run);
    if (!f.storage.empty()) {
      const store::Location where = storage_location(f, *s.observer);
      if (!where.postgres()) lock.emplace(where.path);
      bool created = false;
      db.emplace(create_or_join(where, info, f, *s.observer, created));
      s.db_path = where.postgres() ? where.describe() : where.path;
      s.resuming = !created;
    } else {
      lock.emplace((out_dir / "run.db").string());
      db.emplace(store::Store::create((out_dir / "run.db").string(), info));
    }
  }
  if (s.db_path.empty()) s.db_path = (out_dir / "run.db").string();
  check_reference_fits(graph);
  s.regime = regime_of_run(options_json, f);
  const measure::Regime& regime = s.regime;

  // What this session runs with: the run's own options (a resumed run keeps its seed,
  // chains and proposers), and this session's budgets.
  search::SearchOptions& so = s.so;
  so.seed = options_json.value("seed", uint64_t{1});
  so.chains = options_json.value("chains", 2);
  so.proposer_weights = parse_proposers(
      options_json.value("proposers", std::string("mutate")));  // runs made before rewrite existed
  // The cost model as the run was started (runs made before it existed had none).
  const std::string cost_model = options_json.value("cost_model", std::string("off"));
  if (!f.cost_model.empty() && f.cost_model != cost_model)
    throw UserError(fmt::format(
        "--cost-model {}: this run was made with the cost model {}, and keeps it so that its "
        "steps stay comparable; leave out --cost-model, or start a new run",
        f.cost_model, cost_model));
  so.cost_model.on = cost_model == "on";
  // Giving up on slow candidates as the run was started (runs made before it: never).
  so.give_up = options_json.value("give_up", 0.0);
  so.time_budget_seconds = f.time.empty() ? 0 : parse_duration(f.time, "--time");
  so.max_evals = f.evals;
  so.max_session_evals = f.session_evals;
  if (!f.run_time.empty() && !f.finalize_only) apply_run_time(so, db->run(), f, *s.observer);
  // The written kernel's name: this session's --symbol, else the run's (the search's
  // candidates always export ollie_kernel; only the answer is renamed).
  s.symbol = !f.symbol.empty() ? f.symbol
                               : options_json.value("symbol", std::string(emit::kDefaultSymbol));
  // A resumed replay reopens the run it replays.
  const nlohmann::json replay_of = options_json.value("replay", nlohmann::json());
  if (resuming && replay_of.is_object())
    recorded.emplace(store::Store::open(replay_of.value("of", std::string())));
  // A replay stops where the recorded run stopped, unless told otherwise (the budget
  // counts candidates: a confirmed new best has two evaluation rows).
  if (replaying && so.max_evals == 0) so.max_evals = recorded->counts().candidates;
  if (so.time_budget_seconds == 0 && so.max_evals == 0 && so.max_session_evals == 0 &&
      !f.finalize_only)
    throw UserError(
        "no budget: give --time (e.g. --time 10m) or --evals N, or both (a worker of a "
        "shared run also --session-evals N or --run-time 2h)");
  if (db->shared() && !f.finalize_only) start_worker(s);

  const std::string spec_path = db->run().spec_path;
  const std::string entry = graph.entry;
  const ir::DimBindings bound = graph.bound_dims;
  const std::string spec_source = db->run().spec_source;
  s.graph_at = [spec_path, entry, spec_source](const ir::DimBindings& dims) {
    spec::SpecOptions o;
    o.entry = entry;
    o.dim_overrides = dims;
    return spec::compile_spec(spec_path, spec_source, o);
  };
  search::EvaluatorOptions& eo = s.eo;
  eo.threads = options_json.value("threads", 0);
  eo.bench_seconds = options_json.value("bench_seconds", 0.3);
  eo.verify.accept_weak = options_json.value("accept_weak", false);
  eo.cold = regime.cold;
  s.baseline = search::baseline_candidate(graph);
  s.local_evaluator = search::make_local_evaluator(graph, s.graph_at, s.baseline.source, eo);
  // A replay reuses the recorded run's evaluations of identical kernels (unless
  // --replay-evaluate), so the same seed takes the same steps.
  if (recorded && !replay_of.value("evaluate", false))
    s.replay_evaluator.emplace(*recorded, *s.local_evaluator);

  // The roofline at the kernels' thread count (the machine is calibrated once, cached).
  measure::CalibrateOptions calibrate;
  calibrate.progress = [&s](const std::string& line) { s.observer->note("calibrate: " + line); };
  const measure::CachedPeaks peaks =
      measure::machine_peaks(measure::default_cache_dir(), false, calibrate);
  const int threads = s.threads =
      eo.threads > 0 ? eo.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.roof = measure::roofline(graph, peaks.peaks, threads, regime.cold);
  const measure::Roofline& roof = s.roof;
  db->add_event("roofline", roofline_event_json(roof));  // the report's roofs; a session starts

  std::optional<SessionModel>& model = s.model;
  search::LlmProposer*& llm_proposer = s.llm_proposer;
  std::vector<std::unique_ptr<search::Proposer>>& proposers = s.proposers;
  for (const auto& [name, weight] : so.proposer_weights) {
    if (name == "mutate")
      proposers.push_back(search::make_mutate_proposer(graph));
    else if (name == "rewrite")
      proposers.push_back(search::make_rewrite_proposer(graph));
    else if (name == "llm" && !model) {
      const nlohmann::json stored = options_json.value("llm", nlohmann::json());
      model.emplace(recorded ? make_replay_model(stored, recorded->path(), *recorded, *db)
                             : make_session_model(stored, f, *db));
      search::LlmProposerOptions lo;
      lo.spec_source = db->run().spec_source;
      lo.header = emit::emit_header(graph);
      lo.hardware = search::describe_hardware(peaks.peaks, threads);
      lo.roofline_seconds = roof.bound_seconds;
      lo.prompt = model->prompt;
      lo.stopped = model->stopped;
      lo.graph = &graph;  // answers may be schedules (docs/llm.md)
      auto p = std::make_unique<search::LlmProposer>(*model->model, *db, std::move(lo));
      llm_proposer = p.get();
      proposers.push_back(std::move(p));
      s.observer->note("llm proposer: " + model->describe);
    }
  }
  if (recorded)
    db->add_event(
        "replay",
        fmt::format("replaying {}: {}", recorded->path(),
                    s.replay_evaluator ? "evaluations of identical kernels reused from it"
                                       : "every candidate evaluated again (--replay-evaluate)"));

  for (const std::string& note : warm.notes) {
    s.observer->note(note);
    db->add_event("warm-start", note);
  }
  so.warm_starts = warm.starts;
  // Recipe starts, for a new run or a replay of one that had them (a resumed run's chains
  // go on from where they stopped).
  if (!s.resuming && !f.finalize_only && options_json.value("recipe_starts", false))
    for (search::WarmStart& r : search::recipe_starts(graph))
      so.warm_starts.push_back(std::move(r));
  so.on_warm_start = [&s](const std::string& line) { s.observer->note(line); };

  return OptimizeRun(std::move(state));
}

}  // namespace ollie::api
