// Joining a shared run (src/api/optimize_shared.h, docs/distributed.md): the differences
// that refuse a worker are each named, with this worker's value and the run's, and a
// worker on another machine kind is refused unless --allow-mixed-machines.
#include <gtest/gtest.h>

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

}  // namespace
