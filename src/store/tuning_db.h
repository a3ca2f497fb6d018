// What warm starts read (docs/search.md, "Warm starts"): the best passing kernels of an
// earlier run database, opened read-only, and the per-user tuning database that
// `ollie optimize` reads at its start and adds its best kernel to at its end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace ollie::store {

// A passing kernel stored by an earlier run (a run database's candidate, or a tuning
// database's row), as a warm start reads it.
struct StoredKernel {
  std::string origin;  // "PATH #ID": the file and the candidate's (or row's) id in it
  int64_t id = 0;
  std::string source, schedule, rewrites, proposer;
  std::string spec_sha256, entry, dims_json;
  std::string machine;           // the tuning row's fingerprint; a run database's machine_json
  std::string graph_signature;   // the tuning database's; empty for a run database's kernel
  double seconds = 0;            // its time where it was measured (its own run's clock)
  double ratio_vs_baseline = 0;  // its time over its run's baseline; 0 when unknown
};

// A run database's run record and its best passing candidates other than the baseline
// (latest evaluation "pass" and timed), fastest first by the ratio to their run's
// baseline, at most `limit`. The file is opened read-only (a run may still be writing
// it); UserError naming the file and what to do when it is missing, not an ollie run
// database, damaged, or written by a newer ollie.
struct RunKernels {
  RunInfo run;
  std::vector<StoredKernel> best;
};
RunKernels read_run_kernels(const std::string& path, int limit);

// The texts of a run database's events of `kind`, oldest first (read-only, like
// read_run_kernels).
std::vector<std::string> read_run_events(const std::string& path, const std::string& kind);

// What the tuning database keeps of a run's best kernel.
struct TunedKernel {
  std::string source, schedule, rewrites, proposer;
  std::string spec_sha256, entry, graph_signature, dims_json, machine;
  double seconds = 0, ratio_vs_baseline = 0;
  std::string run_path;   // the run database it came from
  int64_t candidate = 0;  // its id there
};

namespace detail {
class TuningConnection;
}

// The per-user tuning database: one row per kernel, graph signature, dims and machine
// (a kernel added again replaces its row). Every write is one IMMEDIATE transaction and
// every connection waits up to 10 s for another process's, so concurrent runs add their
// kernels without corrupting the file (WAL journal).
class TuningDb {
 public:
  // Opens (creating when `create` and missing) the file. UserError naming the file and
  // what to do (delete it, or --no-tuning-db) when it cannot be opened or is not a tuning
  // database. Without `create`, a missing file is an error too.
  static TuningDb open(const std::string& path, bool create);
  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;
  ~TuningDb();

  // The row's id.
  int64_t add(const TunedKernel& k);
  // The kernels measured on `machine` whose spec hash is `spec_sha256` or whose graph
  // signature is `graph_signature`: those at `dims_json` first, then the fastest by
  // their ratio to their run's baseline; at most `limit`.
  std::vector<StoredKernel> matching(const std::string& spec_sha256,
                                     const std::string& graph_signature,
                                     const std::string& dims_json, const std::string& machine,
                                     int limit) const;
  int64_t count() const;
  const std::string& path() const;

 private:
  explicit TuningDb(std::unique_ptr<detail::TuningConnection> conn);
  std::unique_ptr<detail::TuningConnection> conn_;
};

}  // namespace ollie::store
