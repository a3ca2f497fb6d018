// `optimize` on shared storage (--storage, --run; docs/distributed.md), internal to the api
// stage: creating or joining a run, refusing a worker whose spec, dims, options or machine
// differ from the run's, registering the worker (its chains, seed and temperatures), its
// heartbeat, and which worker writes the answer at the end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "api/api.h"
#include "search/search.h"
#include "store/store.h"

namespace ollie::api {

// Beats a worker's heart from a thread of its own, so that an evaluation longer than the
// claim lease does not free the worker's claims. Stops when destroyed.
class Heartbeat {
 public:
  Heartbeat(store::Store& store, double every_seconds);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// What differs between a run and the run this worker would start ("the spec differs (sha256
// ab12... here, cd34... in the run); dims: N 256 here, 512 in the run"); "" when nothing.
// The machine counts only without `allow_mixed_machines`.
std::string run_differences(const store::RunInfo& run, const store::RunInfo& mine,
                            bool allow_mixed_machines);

// The Location of --storage/--run with the session's timeout and progress lines.
store::Location storage_location(const OptimizeOptions& f, OptimizeObserver& observer);

// Creates the run at `where`, or joins it (PostgreSQL): UserError naming the differences
// when they make this worker's run another run.
store::Store create_or_join(const store::Location& where, const store::RunInfo& info,
                            const OptimizeOptions& f, OptimizeObserver& observer, bool& created);

// UserError for --storage, --run, --finalize and the worker flags given with what they do
// not go with (--resume, --replay) or without what they need.
void check_storage_flags(const OptimizeOptions& f);

// Registers this process as a worker of the shared run in s.db: its chains, seed and
// temperatures (s.so), and its heartbeat (s.heartbeat).
void start_worker(OptimizeRun::State& s);

// --run-time: the session's time budget is at most what is left of the run's wall time
// (its age from run.created, on this machine's clock); a run already that old stops at
// once.
void apply_run_time(search::SearchOptions& so, const store::RunInfo& run, const OptimizeOptions& f,
                    OptimizeObserver& observer);

// In a run timed on several machine kinds (--allow-mixed-machines), the kind whose best a
// `--finalize` writes: this machine's when the run has evaluations timed on it, else the
// run's own (the first worker's); set on `db`, with a note. A run of one kind: unchanged.
void choose_machine_kind(store::Store& db, OptimizeObserver& observer);

// The summary's line on the run's other machine kinds and their bests ("" for a run of
// one kind).
std::string other_machine_kinds_line(const store::Store& db);

// report.html of a shared run into out_dir: the run copied from the database into a
// temporary run database file there (as `ollie export`), the report written from it, the
// copy removed. A report that cannot be written costs a note, not the answer.
void write_shared_report(const OptimizeOptions& f, const std::filesystem::path& out_dir,
                         FinishedEvent& done, OptimizeObserver& observer);

// Whether this worker, having stopped, writes the run's answer: the last live worker does,
// once per run (a `finalize` event marks it).
bool claim_finalize(store::Store& db, double lease_seconds);

}  // namespace ollie::api
