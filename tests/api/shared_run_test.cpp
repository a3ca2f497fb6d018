// Joining a shared run (src/api/optimize_shared.h, docs/distributed.md): the differences
// that refuse a worker are each named, with this worker's value and the run's, and a
// worker on another machine kind is refused unless --allow-mixed-machines; --run-time
// leaves a worker what is left of the run's wall time.
#include <gtest/gtest.h>

#include <ctime>

#include "api/optimize_shared.h"
#include "support/error.h"

using namespace ollie;

namespace {

store::RunInfo run_info() {
  store::RunInfo r;
  r.spec_sha256 = "aaaaaaaaaaaaaaaaaaaa";
  r.entry = "softmax";
  r.dims_json = R"({"M": 16, "N": 64})";
  r.options_json = R"({"chains": 2, "seed": 1, "proposers": "mutate"})";
  r.machine_json = R"({"cores": 2, "fingerprint": "Xeon avx2 2"})";
  return r;
}

TEST(SharedRun, TheSameRunHasNoDifferences) {
  EXPECT_EQ(api::run_differences(run_info(), run_info(), false), "");
}

TEST(SharedRun, EachDifferenceIsNamedWithBothValues) {
  store::RunInfo mine = run_info();
  mine.spec_sha256 = "bbbbbbbbbbbbbbbbbbbb";
  mine.dims_json = R"({"M": 16, "N": 32})";
  mine.options_json = R"({"chains": 3, "seed": 1, "proposers": "mutate", "give_up": 2})";
  const std::string d = api::run_differences(run_info(), mine, false);
  EXPECT_NE(d.find("the spec differs (sha256 bbbbbbbbbbbb... here, aaaaaaaaaaaa... in the run)"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("dim N: 32 here, 64 in the run"), std::string::npos) << d;
  EXPECT_NE(d.find("option chains: 3 here, 2 in the run"), std::string::npos) << d;
  EXPECT_NE(d.find("option give_up: 2 here, (none) in the run"), std::string::npos) << d;
  EXPECT_EQ(d.find("dim M"), std::string::npos) << d;
}

TEST(SharedRun, AnotherMachineKindIsRefusedUnlessMixedMachinesAreAllowed) {
  store::RunInfo mine = run_info();
  mine.machine_json = R"({"cores": 64, "fingerprint": "EPYC avx512 64"})";
  const std::string d = api::run_differences(run_info(), mine, false);
  EXPECT_NE(d.find("the machine differs (EPYC avx512 64 here, Xeon avx2 2 in the run"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("--allow-mixed-machines"), std::string::npos) << d;
  EXPECT_EQ(api::run_differences(run_info(), mine, true), "");
  // The cores alone are not the machine kind.
  mine = run_info();
  mine.machine_json = R"({"cores": 8, "fingerprint": "Xeon avx2 2"})";
  EXPECT_EQ(api::run_differences(run_info(), mine, false), "");
}

TEST(SharedRun, FlagsThatDoNotGoTogetherAreRefused) {
  api::OptimizeOptions f;
  f.run_name = "r1";
  EXPECT_THROW(api::check_storage_flags(f), UserError);
  f = {};
  f.finalize_only = true;
  EXPECT_THROW(api::check_storage_flags(f), UserError);
  f = {};
  f.storage = "postgresql://h/db";
  f.resume = "run.db";
  EXPECT_THROW(api::check_storage_flags(f), UserError);
  f = {};
  f.storage = "postgresql://h/db";
  f.claim_lease = 0;
  EXPECT_THROW(api::check_storage_flags(f), UserError);
  f.claim_lease = 60;
  EXPECT_NO_THROW(api::check_storage_flags(f));
}

struct Notes : api::OptimizeObserver {
  void note(const std::string& line) override { lines += line + "\n"; }
  std::string lines;
};

// A run created `age` seconds ago.
store::RunInfo created_ago(double age) {
  store::RunInfo r = run_info();
  const std::time_t t = std::time(nullptr) - static_cast<std::time_t>(age);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  r.created = text;
  return r;
}

TEST(SharedRun, RunTimeLeavesAWorkerWhatIsLeftOfTheRunsWallTime) {
  api::OptimizeOptions f;
  f.run_time = "2h";
  Notes notes;
  search::SearchOptions so;
  api::apply_run_time(so, created_ago(3600), f, notes);
  EXPECT_NEAR(so.time_budget_seconds, 3600, 5);
  EXPECT_NE(notes.lines.find("--run-time 2h: the run is 1:00:0"), std::string::npos) << notes.lines;
  // --time of the worker, when shorter, stays.
  so.time_budget_seconds = 600;
  api::apply_run_time(so, created_ago(3600), f, notes);
  EXPECT_EQ(so.time_budget_seconds, 600);
  // A run past its time: the worker stops at once (0 would mean no limit).
  so = {};
  api::apply_run_time(so, created_ago(3 * 3600), f, notes);
  EXPECT_GT(so.time_budget_seconds, 0);
  EXPECT_LT(so.time_budget_seconds, 1e-6);
  EXPECT_NE(notes.lines.find("its time is spent"), std::string::npos) << notes.lines;
  f.run_time = "soon";
  EXPECT_THROW(api::apply_run_time(so, created_ago(0), f, notes), UserError);
}

}  // namespace
