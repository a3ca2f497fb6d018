// Tests of what the search writes to and reads from the run database's rows: verdicts as
// their names (and back), and which candidates count as free-form source.
#include <gtest/gtest.h>

#include "search/rows.h"
#include "support/error.h"

namespace {

using namespace ollie;

TEST(Rows, VerdictsAreStoredAsTheirNamesAndReadBack) {
  search::Evaluation e;
  e.verdict = verify::Verdict::CompileError;
  const store::Evaluation row = search::to_row(7, e, 0);
  EXPECT_EQ(row.verdict, "compile-error");
  EXPECT_EQ(search::evaluation_from_row(row).verdict, verify::Verdict::CompileError);
  store::Evaluation unknown = row;
  unknown.verdict = "compile_error";
  EXPECT_THROW(search::evaluation_from_row(unknown), UserError);
}

TEST(Rows, FreeFormIsSourceWithoutAScheduleUnlessItIsTheBaseline) {
  search::Candidate c;
  c.proposer = "llm";
  EXPECT_TRUE(search::is_free_form(c));
  c.proposer = "baseline";
  EXPECT_FALSE(search::is_free_form(c));  // its default schedule may print as no text
  c.proposer = "mutate";
  c.schedule = "tile i 8\n";
  EXPECT_FALSE(search::is_free_form(c));
}

}  // namespace
