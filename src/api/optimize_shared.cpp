// `optimize` on shared storage (optimize_shared.h): joining a run, the differences that
// refuse a worker, the heartbeat, and the one worker that writes the answer.
#include "api/optimize_shared.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "api/optimize_state.h"
#include "api/optimize_warm.h"
#include "report/report.h"
#include "search/warm_start.h"
#include "support/error.h"

namespace ollie::api {

Heartbeat::Heartbeat(store::Store& store, double every_seconds) {
  thread_ = std::thread([this, &store, every_seconds] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::duration<double>(every_seconds),
                         [this] { return stop_; })) {
      lock.unlock();
      try {
        store.heartbeat();
      } catch (const std::exception&) {
        // The database is unreachable: the search's own next write retries and reports it.
      }
      lock.lock();
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

namespace {

// "key value here, other in the run" for each key of two JSON objects that differ.
std::vector<std::string> json_differences(const std::string& run_text, const std::string& mine_text,
                                          const std::string& what) {
  std::vector<std::string> out;
  const nlohmann::json run = nlohmann::json::parse(run_text, nullptr, false);
  const nlohmann::json mine = nlohmann::json::parse(mine_text, nullptr, false);
  if (!run.is_object() || !mine.is_object()) {
    if (run_text != mine_text) out.push_back(what + " differ");
    return out;
  }
  auto shown = [](const nlohmann::json& j, const std::string& key) {
    if (!j.contains(key)) return std::string("(none)");
    std::string text = j.at(key).dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  };
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [k, v] : run.items()) keys[k] = true;
  for (const auto& [k, v] : mine.items()) keys[k] = true;
  for (const auto& [k, v] : keys.items())
    if (!run.contains(k) || !mine.contains(k) || run.at(k) != mine.at(k))
      out.push_back(
          fmt::format("{} {}: {} here, {} in the run", what, k, shown(mine, k), shown(run, k)));
  return out;
}

std::string fingerprint_of(const std::string& machine_json) {
  const nlohmann::json j = nlohmann::json::parse(machine_json, nullptr, false);
  return j.is_object() ? j.value("fingerprint", std::string()) : std::string();
}

}  // namespace

std::string run_differences(const store::RunInfo& run, const store::RunInfo& mine,
                            bool allow_mixed_machines) {
  std::vector<std::string> diffs;
  if (run.spec_sha256 != mine.spec_sha256)
    diffs.push_back(fmt::format("the spec differs (sha256 {}... here, {}... in the run)",
                                mine.spec_sha256.substr(0, 12), run.spec_sha256.substr(0, 12)));
  if (run.entry != mine.entry)
    diffs.push_back(fmt::format("entry {} here, {} in the run", mine.entry, run.entry));
  for (auto& d : json_differences(run.dims_json, mine.dims_json, "dim")) diffs.push_back(d);
  for (auto& d : json_differences(run.options_json, mine.options_json, "option"))
    diffs.push_back(d);
  const std::string theirs = fingerprint_of(run.machine_json);
  const std::string ours = fingerprint_of(mine.machine_json);
  if (!allow_mixed_machines && theirs != ours)
    diffs.push_back(
        fmt::format("the machine differs ({} here, {} in the run; candidates are timed against the "
                    "baseline on each worker's own machine, so a run keeps one machine kind unless "
                    "--allow-mixed-machines)",
                    ours, theirs));
  std::string text;
  for (const auto& d : diffs) text += (text.empty() ? "" : "; ") + d;
  return text;
}

store::Location storage_location(const OptimizeOptions& f, OptimizeObserver& observer) {
  store::Location where = store::Location::parse(f.storage, f.run_name);
  if (!(f.storage_timeout > 0))
    throw UserError("--storage-timeout: give a positive duration such as 90s or 5m");
  where.timeout_seconds = f.storage_timeout;
  where.progress = [&observer](const std::string& line) { observer.note(line); };
  return where;
}

store::Store create_or_join(const store::Location& where, const store::RunInfo& info,
                            const OptimizeOptions& f, OptimizeObserver& observer, bool& created) {
  if (!where.postgres()) {
    created = true;
    return store::Store::create(where, info);
  }
  store::Store db = store::Store::create_or_open(where, info, created);
  if (created) return db;
  const std::string diffs = run_differences(db.run(), info, f.allow_mixed_machines);
  if (!diffs.empty())
    throw UserError(fmt::format(
        "--run {}: this worker would not search the same run: {}. Give the run's spec and "
        "options, or another --run",
        where.run, diffs));
  observer.note(fmt::format("joined run {} in {}", where.run, where.describe()));
  return db;
}

void check_storage_flags(const OptimizeOptions& f) {
  if (f.storage.empty()) {
    if (!f.run_name.empty())
      throw UserError("--run " + f.run_name +
                      " names a run in shared storage: give --storage postgresql://... with it");
    if (f.finalize_only)
      throw UserError(
          "--finalize writes the answer of a run in shared storage: give --storage "
          "URL --run NAME with it");
    return;
  }
  if (!f.resume.empty() || !f.replay.empty())
    throw UserError(
        "--storage starts or joins a run from SPEC; --resume and --replay take a run database "
        "file (ollie export copies a shared run into one)");
  if (f.finalize_only && !f.spec.spec_path.empty())
    throw UserError(
        "--finalize writes the answer of the run named by --storage and --run; "
        "leave out SPEC");
  if (!(f.claim_lease > 0)) throw UserError("--claim-lease: give a positive duration such as 60s");
}

namespace {

// The van der Corput sequence: 0, 1/2, 1/4, 3/4, 1/8, ... spreads the workers' chain
// temperatures between the powers of two that one worker's chains run at.
double spread(uint64_t i) {
  double out = 0, scale = 0.5;
  for (; i > 0; i >>= 1, scale /= 2)
    if (i & 1) out += scale;
  return out;
}

uint64_t mix_seed(uint64_t seed, uint64_t worker) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (worker + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void start_worker(OptimizeRun::State& s) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  store::Worker w;
  w.name = fmt::format("{}:{}", host, ::getpid());
  w.fingerprint = search::machine_fingerprint();
  w.machine_json = run_machine_json();
  w.seed = s.so.seed;
  w.chains = s.so.chains;
  w = s.db->add_worker(w);
  s.so.seed = mix_seed(s.so.seed, static_cast<uint64_t>(w.id));
  s.so.worker.on = true;
  s.so.worker.first_chain = w.first_chain;
  s.so.worker.temperature_offset = spread(static_cast<uint64_t>(w.id - 1));
  s.so.worker.lease_seconds = s.f.claim_lease;
  s.heartbeat = std::make_unique<Heartbeat>(*s.db, std::max(0.2, s.f.claim_lease / 6));
  s.db->add_event("worker", fmt::format("worker {} ({}) joined: chains {} to {}", w.id, w.name,
                                        w.first_chain, w.first_chain + w.chains - 1));
  s.observer->note(fmt::format("worker {} ({}): chains {} to {}, temperatures x2^{:.3g}", w.id,
                               w.name, w.first_chain, w.first_chain + w.chains - 1,
                               s.so.worker.temperature_offset));
}

namespace {

// Seconds since 1970 of an ISO 8601 UTC time ("2026-12-02T13:18:47Z", milliseconds or
// not); nullopt when it is not one.
std::optional<double> seconds_since_epoch(const std::string& iso) {
  std::tm tm = {};
  if (!strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

}  // namespace

void apply_run_time(search::SearchOptions& so, const store::RunInfo& run, const OptimizeOptions& f,
                    OptimizeObserver& observer) {
  const double budget = parse_duration(f.run_time, "--run-time");
  const std::optional<double> created = seconds_since_epoch(run.created);
  if (!created)
    throw UserError(
        fmt::format("--run-time: the run has no creation time to count from ({})", run.created));
  const double age = static_cast<double>(std::time(nullptr)) - *created;
  // 0 means no limit: a run already past its time gets the least there is.
  const double left = std::max(budget - age, 1e-9);
  if (so.time_budget_seconds == 0 || left < so.time_budget_seconds) so.time_budget_seconds = left;
  observer.note(budget - age > 0
                    ? fmt::format("--run-time {}: the run is {} old, {} left", f.run_time,
                                  clock_text(age), clock_text(budget - age))
                    : fmt::format("--run-time {}: the run is {} old, its time is spent", f.run_time,
                                  clock_text(age)));
}

void choose_machine_kind(store::Store& db, OptimizeObserver& observer) {
  const auto kinds = db.machine_kinds();
  if (kinds.size() < 2) return;
  const std::string mine = search::machine_fingerprint();
  const std::string runs = fingerprint_of(db.run().machine_json);
  auto has = [&](const std::string& kind) {
    return std::any_of(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
  };
  const std::string chosen = has(mine) ? mine : has(runs) ? runs : kinds.front().first;
  db.set_machine_kind(chosen);
  observer.note(fmt::format(
      "the run was timed on {} machine kinds: writing the best timed on {} ({}); the others "
      "are listed in summary.md",
      kinds.size(),
      chosen == mine   ? "this machine's kind"
      : chosen == runs ? "the run's first machine kind"
                       : "the kind with the most evaluations",
      chosen));
}

std::string other_machine_kinds_line(const store::Store& db) {
  const auto kinds = db.machine_kinds();
  if (kinds.size() < 2) return "";
  std::string text;
  for (const auto& [kind, evaluations] : kinds) {
    if (kind == db.machine_kind()) continue;
    const auto best = db.best_on(kind, 1);
    std::string what = "no passing candidate";
    if (!best.empty() && best[0].first.proposer == "baseline")
      what = "the best is the baseline itself";
    else if (!best.empty() && best[0].second.ratio_vs_baseline > 0)
      what = fmt::format("the best is candidate {} ({:.2f}x faster than the baseline there)",
                         best[0].first.id, 1 / best[0].second.ratio_vs_baseline);
    text += fmt::format("{}{} ({} evaluation{}): {}", text.empty() ? "" : "; ", kind, evaluations,
                        evaluations == 1 ? "" : "s", what);
  }
  return fmt::format(
      "- machine kinds: this answer was timed on {}; the run's other kinds, each with its own "
      "best (`ollie optimize --finalize` on such a machine writes its best): {}; report.html "
      "draws every kind's evaluations together\n",
      db.machine_kind(), text);
}

void write_shared_report(const OptimizeOptions& f, const std::filesystem::path& out_dir,
                         FinishedEvent& done, OptimizeObserver& observer) {
  namespace fs = std::filesystem;
  const fs::path copy = out_dir / fmt::format(".report-{}.db", ::getpid());
  auto remove_copy = [&copy] {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      fs::remove(copy.string() + suffix, ignored);
  };
  remove_copy();
  try {
    store::Location where = store::Location::parse(f.storage, f.run_name);
    where.timeout_seconds = f.storage_timeout;
    store::Store::copy(where, store::Location::parse("sqlite:" + copy.string(), ""));
    report::write_report(copy.string(), (out_dir / "report.html").string());
    done.files.push_back("report.html");
  } catch (const UserError& e) {
    observer.note(std::string("report.html not written: ") + e.what());
  }
  remove_copy();
}

bool claim_finalize(store::Store& db, double lease_seconds) {
  for (const store::Worker& w : db.workers())
    if (w.id != db.worker_id() && !w.stopped && w.heartbeat_age < lease_seconds) return false;
  return db.set_once("finalized_by", std::to_string(db.worker_id()));
}

}  // namespace ollie::api
