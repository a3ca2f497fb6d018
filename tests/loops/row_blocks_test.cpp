// Tests of row blocks (src/loops/row_blocks.cpp): a producer split like its host is
// computed at the host's outer loop, folded to its block of rows (a tail included), and a
// producer split otherwise is refused.
#include <gtest/gtest.h>

#include "loops/loops.h"
#include "spec/spec.h"

namespace {

using namespace ollie::loops;

ollie::ir::Graph exp_matmul() {
  ollie::spec::SpecOptions dims;
  dims.dim_overrides = {{"N", 10}, {"M", 8}, {"K", 16}};
  return ollie::spec::compile_spec("test.py",
                                   "import numpy as np\n"
                                   "def f(x: \"f32[N, M]\", w: \"f32[M, K]\") -> \"f32[N, K]\":\n"
                                   "    return np.exp(x) @ w\n",
                                   dims);
}

TEST(RowBlocks, AProducerSplitLikeItsHostIsComputedAtTheOuterLoopAndFoldsToItsRows) {
  const auto g = exp_matmul();
  const std::string text =
      to_text(lower(g, parse_schedule("split t2 n 4; split out0 n 4; reorder out0 n_o n_i k m; "
                                      "compute_at t2 out0 n_o")));
  EXPECT_NE(text.find("allocate t2: f32[4*M]"), std::string::npos) << text;
  EXPECT_NE(text.find("t2[((n_i * M) + m)] = exp(x[((((n_o * 4) + n_i) * M) + m)])"),
            std::string::npos)
      << text;
}

TEST(RowBlocks, AProducerSplitOtherwiseIsRefused) {
  const auto g = exp_matmul();
  for (const char* schedule :
       {"split t2 n 2; split out0 n 4; reorder out0 n_o n_i k m; compute_at t2 out0 n_o",
        "split out0 n 4; reorder out0 n_o n_i k m; compute_at t2 out0 n_o"}) {
    try {
      lower(g, parse_schedule(schedule));
      ADD_FAILURE() << "accepted: " << schedule;
    } catch (const ScheduleError& e) {
      EXPECT_NE(std::string(e.what()).find("t2"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
