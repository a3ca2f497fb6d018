// Tests of schedules: the directive text form (round trip, located parse errors), the
// effect of each directive on the realized loop nests of small specs, the legality checks
// (a rejected directive names the loop or stage and the dependence), and a few scheduled
// kernels compiled and run against the reference interpreter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "build/build.h"
#include "emit/emit.h"
#include "interp/interp.h"
#include "loops/loops.h"
#include "runner/runner.h"
#include "spec/spec.h"

namespace {

using namespace ollie::loops;

ollie::ir::Graph spec(const std::string& source) {
  return ollie::spec::compile_spec("test.py", "import numpy as np\n" + source, {});
}

const ollie::ir::Graph& scores();  // q[h, l] . c[s, l], defined with the tests that run it

// Stages t1 (row max), t5 (exp), t6 (row sum), out0 (divide).
const ollie::ir::Graph& softmax() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=3, N=5)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n");
  return g;
}

// Softmax over rows of a constant width 8 (loop i): a split by 4 leaves no tail.
const ollie::ir::Graph& softmax8() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=3)\n"
      "def f(x: \"f32[M, 8]\") -> \"f32[M, 8]\":\n"
      "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
      "    return e / e.sum(axis=-1, keepdims=True)\n");
  return g;
}

// One stage out0: for m, for n, for k reduce.
const ollie::ir::Graph& matmul() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=3, K=4, N=5)\n"
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
      "    return a @ b\n");
  return g;
}

// t1 = exp(x) is read twice by out0, so it keeps a stage of its own.
const ollie::ir::Graph& square() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=3, N=5)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x)\n"
      "    return e * e\n");
  return g;
}

// EXPECT_TRUE(contains(text, part)): the text is printed when the part is missing.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "missing:\n" << part << "\nin:\n" << text;
}

std::string lowered(const ollie::ir::Graph& g, const std::string& schedule) {
  return to_text(lower(g, parse_schedule(schedule)));
}

// The error lower() rejects `schedule` with (a test failure when it is accepted).
ScheduleError rejection(const ollie::ir::Graph& g, const std::string& schedule) {
  try {
    lower(g, parse_schedule(schedule));
  } catch (const ScheduleError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << schedule;
  return ScheduleError(Directive{}, "", "");
}

std::string reason(const ollie::ir::Graph& g, const std::string& schedule) {
  return rejection(g, schedule).reason();
}

// ---- Text form ----

TEST(ScheduleText, RoundTripsEveryDirective) {
  const Schedule s{{
      {DirectiveKind::Split, "t1", {"n"}, 16, 0},
      {DirectiveKind::Reorder, "out0", {"n_i", "m", "n_o"}, 0, 0},
      {DirectiveKind::Parallel, "out0", {"m"}, 0, 0},
      {DirectiveKind::Vectorize, "t1_rf", {"n_i"}, 0, 0},
      {DirectiveKind::Unroll, "t6", {"n"}, 0, 0},
      {DirectiveKind::ComputeAt, "t6", {"out0", "m"}, 0, 0},
      {DirectiveKind::Inline, "t5", {}, 0, 0},
      {DirectiveKind::Pack, "out0", {"b", "m"}, 0, 0},
      {DirectiveKind::Rfactor, "t4.0", {"n_i"}, 0, 0},
      {DirectiveKind::Accumulate, "out0", {"n_o"}, 0, 0},
  }};
  const std::string text = to_text(s);
  EXPECT_EQ(
      text,
      "split t1 n 16\nreorder out0 n_i m n_o\nparallel out0 m\nvectorize t1_rf n_i\nunroll t6 n\n"
      "compute_at t6 out0 m\ninline t5\npack out0 b m\nrfactor t4.0 n_i\naccumulate out0 n_o\n");
  const Schedule back = parse_schedule(text);
  ASSERT_EQ(back.directives.size(), s.directives.size());
  for (size_t i = 0; i < s.directives.size(); ++i) {
    const Directive& a = s.directives[i];
    const Directive& b = back.directives[i];
    EXPECT_EQ(b.kind, a.kind) << i;
    EXPECT_EQ(b.stage, a.stage) << i;
    EXPECT_EQ(b.args, a.args) << i;
    EXPECT_EQ(b.factor, a.factor) << i;
    EXPECT_EQ(b.line, static_cast<int>(i) + 1);
    EXPECT_EQ(directive_name(b.kind), to_text(b).substr(0, to_text(b).find(' ')));
  }
  EXPECT_EQ(to_text(back), text);
}

TEST(ScheduleText, CommentsSemicolonsAndBlankLines) {
  const Schedule s = parse_schedule(
      "# a schedule\n"
      "split out0 n 8   # the vector loop\n"
      "\n"
      "\treorder out0 n_i m;vectorize out0 n_i ;; parallel out0 m;\n"
      "# split out0 m 2\n");
  EXPECT_EQ(to_text(s),
            "split out0 n 8\nreorder out0 n_i m\nvectorize out0 n_i\nparallel out0 m\n");
  ASSERT_EQ(s.directives.size(), 4u);
  EXPECT_EQ(s.directives[0].line, 2);
  EXPECT_EQ(s.directives[1].line, 4);
  EXPECT_EQ(s.directives[3].line, 4);
  EXPECT_TRUE(parse_schedule("").directives.empty());
  EXPECT_TRUE(parse_schedule(" ; # nothing\n;;").directives.empty());
}

ollie::SpecError parse_error(const std::string& text) {
  try {
    parse_schedule(text, "tiles.schedule");
  } catch (const ollie::SpecError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed: " << text;
  return ollie::SpecError("", "", {}, "");
}

void expect_parse_error(const std::string& text, int line, int col, const std::string& message,
                        const std::string& hint) {
  SCOPED_TRACE(text);
  const ollie::SpecError e = parse_error(text);
  EXPECT_EQ(e.loc().line, line);
  EXPECT_EQ(e.loc().col, col);
  EXPECT_EQ(e.message(), message);
  const std::string what = e.what();
  EXPECT_TRUE(contains(
      what, "tiles.schedule:" + std::to_string(line) + ":" + std::to_string(col) + ": error: "));
  EXPECT_TRUE(contains(what, "hint: " + hint));
}

TEST(ScheduleText, ErrorsAreLocatedWithAHint) {
  expect_parse_error("split out0 n 8\n  frob out0 n", 2, 3, "unknown schedule directive 'frob'",
                     "directives are: split, reorder, parallel, vectorize, unroll, compute_at, "
                     "inline, pack, rfactor, "
                     "accumulate");
  // Too few arguments point just past the directive, too many at the first extra one.
  expect_parse_error("split out0 n", 1, 13, "wrong number of arguments to split",
                     "write: split STAGE LOOP FACTOR");
  expect_parse_error("split out0 n 8 9", 1, 16, "wrong number of arguments to split",
                     "write: split STAGE LOOP FACTOR");
  expect_parse_error("vectorize out0 n; compute_at t1 out0", 1, 37,
                     "wrong number of arguments to compute_at",
                     "write: compute_at STAGE HOST LOOP");
  expect_parse_error("reorder out0 n", 1, 15, "wrong number of arguments to reorder",
                     "write: reorder STAGE LOOP LOOP...");
  expect_parse_error("inline", 1, 7, "wrong number of arguments to inline", "write: inline STAGE");
  expect_parse_error("inline t1 t2", 1, 11, "wrong number of arguments to inline",
                     "write: inline STAGE");
  for (const std::string f : {"0", "1", "x", "-3", "2.5", "99999999999"})
    expect_parse_error("# tile\nsplit out0 n " + f, 2, 14,
                       "split factor must be an integer >= 2, got '" + f + "'",
                       "e.g. split t3 n 16");
  expect_parse_error("split out0 n 2\nvectorize out0 3n", 2, 16,
                     "'3n' is not a stage, loop or buffer name",
                     "names are letters, digits, '_' and '.', starting with a letter or '_'");
  expect_parse_error("accumulate out0", 1, 16, "wrong number of arguments to accumulate",
                     "write: accumulate STAGE LOOP");
  expect_parse_error("accumulate out0 n 6", 1, 19, "wrong number of arguments to accumulate",
                     "write: accumulate STAGE LOOP");
  expect_parse_error("pack out0 a-b m", 1, 11, "'a-b' is not a stage, loop or buffer name",
                     "names are letters, digits, '_' and '.', starting with a letter or '_'");
}

// ---- What each directive does ----

TEST(ScheduleDirectives, DescribeStagesListsWhatAScheduleNames) {
  EXPECT_EQ(describe_stages(softmax()),
            "t1: for m in [0, M), for n in [0, N) reduce  (Reduce max)\n"
            "t5: for m in [0, M), for n in [0, N)  (exp)\n"
            "t6: for m in [0, M), for n in [0, N) reduce  (Reduce sum)\n"
            "out0: for m in [0, M), for n in [0, N)  (div)\n");
}

TEST(ScheduleDirectives, SplitGuardsTheTailOnlyWhenTheFactorMayNotDivide) {
  EXPECT_EQ(lowered(square(), "split t1 n 2"),
            R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  allocate t1: f32[M*N]
  for m in [0, M):
    for n_o in [0, ((N + 1)//2)):
      for n_i in [0, min(2, (N - (n_o * 2)))):
        t1[((m * N) + ((n_o * 2) + n_i))] = exp(x[((m * N) + ((n_o * 2) + n_i))])
  for m in [0, M):
    for n in [0, N):
      out0[((m * N) + n)] = (t1[((m * N) + n)] * t1[((m * N) + n)])
)");
  // A split reduction loop stays a reduction on both halves.
  EXPECT_TRUE(contains(lowered(softmax(), "split t1 n 2"),
                       "    for n_o in [0, ((N + 1)//2)) reduce:\n"
                       "      for n_i in [0, min(2, (N - (n_o * 2)))) reduce:\n"
                       "        t1[m] = max(t1[m], x[((m * N) + ((n_o * 2) + n_i))])\n"));
  const auto fixed = spec(
      "DIMS = dict(M=3)\n"
      "def f(x: \"f32[M, 4]\") -> \"f32[M, 4]\":\n"
      "    return x * 2.0\n");
  EXPECT_TRUE(contains(lowered(fixed, "split out0 i 2"),
                       "    for i_o in [0, 2):\n      for i_i in [0, 2):\n"));
  EXPECT_TRUE(contains(lowered(fixed, "split out0 i 3"),
                       "    for i_o in [0, 2):\n      for i_i in [0, min(3, (4 - (i_o * 3)))):\n"));
  // A factor beyond the extent: one outer iteration.
  EXPECT_TRUE(contains(lowered(fixed, "split out0 i 8"),
                       "    for i_o in [0, 1):\n      for i_i in [0, min(8, (4 - (i_o * 8)))):\n"));
  // Splitting a tail splits its guarded extent again. The tail's extent is at least 1, so
  // truncating division ('/') rounds it down like floor division would.
  EXPECT_TRUE(
      contains(lowered(square(), "split out0 n 4; split out0 n_i 2"),
               "    for n_o in [0, ((N + 3)//4)):\n"
               "      for n_i_o in [0, ((min(4, (N - (n_o * 4))) + 1) / 2)):\n"
               "        for n_i_i in [0, min(2, (min(4, (N - (n_o * 4))) - (n_i_o * 2)))):\n"
               "          out0[((m * N) + ((n_o * 4) + ((n_i_o * 2) + n_i_i)))] = "));
}

TEST(ScheduleDirectives, ReorderPermutesTheNamedLoops) {
  EXPECT_TRUE(contains(lowered(square(), "reorder out0 n m"),
                       "  for n in [0, N):\n    for m in [0, M):\n      out0[((m * N) + n)] = "));
  // The named loops take the positions they occupy; the others stay put.
  EXPECT_TRUE(
      contains(lowered(matmul(), "reorder out0 k m"),
               "  for k in [0, K) reduce:\n    for n in [0, N):\n      for m in [0, M):\n"));
}

TEST(ScheduleDirectives, LoopKindsAppearInTheText) {
  EXPECT_TRUE(contains(lowered(square(), "parallel out0 n; unroll out0 m"),
                       "  unrolled for m in [0, M):\n    parallel for n in [0, N):\n      out0["));
  // Matmul with the output's row innermost: the initialisation becomes a loop of its own
  // in front of the reduction loop.
  EXPECT_EQ(lowered(matmul(), "reorder out0 k n; vectorize out0 n; parallel out0 m; unroll out0 k"),
            R"(kernel f(in a: f32[M, K], in b: f32[K, N], out out0: f32[M, N]) dims [M, K, N]
  parallel for m in [0, M):
    vectorized for n in [0, N):
      out0[((m * N) + n)] = f32(0)
    unrolled for k in [0, K) reduce:
      vectorized for n in [0, N):
        out0[((m * N) + n)] = (out0[((m * N) + n)] + (a[((m * K) + k)] * b[((k * N) + n)]))
)");
  // An unroll hint is fine on a reduction loop.
  EXPECT_TRUE(
      contains(lowered(softmax(), "unroll t1 n"), "    unrolled for n in [0, N) reduce:\n"));
}

// Every intermediate is written and read inside one row iteration, so each is folded to
// that row's slice and allocated inside the (parallel) row loop: one private copy per row.
TEST(ScheduleDirectives, ComputeAtFusesSoftmaxIntoOneRowLoop) {
  EXPECT_EQ(
      lowered(softmax(),
              "compute_at t6 out0 m; compute_at t5 out0 m; compute_at t1 out0 m; parallel out0 m"),
      R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  parallel for m in [0, M):
    allocate t6: f32[1]
    allocate t5: f32[N]
    allocate t1: f32[1]
    t1[0] = f32(-inf)
    for n in [0, N) reduce:
      t1[0] = max(t1[0], x[((m * N) + n)])
    for n in [0, N):
      t5[n] = exp((x[((m * N) + n)] - t1[0]))
    t6[0] = f32(0)
    for n in [0, N) reduce:
      t6[0] = (t6[0] + t5[n])
    for n in [0, N):
      out0[((m * N) + n)] = (t5[n] / t6[0])
)");
}

TEST(ScheduleDirectives, ComputeAtSharesEveryLoopDownToTheNamedOne) {
  // Sharing every loop of the reader, the producer's buffer folds to one element.
  EXPECT_TRUE(contains(lowered(square(), "compute_at t1 out0 n"),
                       "  for m in [0, M):\n    for n in [0, N):\n"
                       "      allocate t1: f32[1]\n"
                       "      t1[0] = exp(x[((m * N) + n)])\n"
                       "      out0[((m * N) + n)] = (t1[0] * t1[0])\n"));
  // Split alike, the producer can share the tail loop too.
  EXPECT_TRUE(contains(lowered(square(), "split out0 n 2; split t1 n 2; compute_at t1 out0 n_i"),
                       "      for n_i in [0, min(2, (N - (n_o * 2)))):\n"
                       "        allocate t1: f32[1]\n"
                       "        t1[0] = exp(x[((m * N) + ((n_o * 2) + n_i))])\n"
                       "        out0[((m * N) + ((n_o * 2) + n_i))] = (t1[0] * t1[0])\n"));
  // Inside a host's reduction loop: exp computed element by element as the sum reads it,
  // and that sum in turn inside out0's rows (nested hosts are built inside out). t6 folds
  // to the row's element; t5 does not fold, as out0 reads it outside t6's loop n.
  const std::string nested = lowered(softmax(), "compute_at t5 t6 n; compute_at t6 out0 m");
  EXPECT_TRUE(
      contains(nested, "  allocate t5: f32[M*N]\n  for m in [0, M):\n    t1[m] = f32(-inf)\n"));
  EXPECT_TRUE(contains(nested,
                       "  for m in [0, M):\n"
                       "    allocate t6: f32[1]\n"
                       "    t6[0] = f32(0)\n"
                       "    for n in [0, N) reduce:\n"
                       "      t5[((m * N) + n)] = exp((x[((m * N) + n)] - t1[m]))\n"
                       "      t6[0] = (t6[0] + t5[((m * N) + n)])\n"
                       "    for n in [0, N):\n"
                       "      out0[((m * N) + n)] = (t5[((m * N) + n)] / t6[0])\n"));
}

// A local buffer written inside a host's loops and read only inside them is allocated in
// the innermost shared loop with the dims those loops do not index: when that slice is a
// constant of at most 64 KiB, or wherever it is in the outermost loop of a root nest.
TEST(ScheduleDirectives, ComputeAtFoldsABufferToTheSliceOfTheSharedLoops) {
  EXPECT_EQ(lowered(square(), "compute_at t1 out0 m"),
            R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  for m in [0, M):
    allocate t1: f32[N]
    for n in [0, N):
      t1[n] = exp(x[((m * N) + n)])
    for n in [0, N):
      out0[((m * N) + n)] = (t1[n] * t1[n])
)");
  const auto rows = [](int width) {
    const std::string w = std::to_string(width);
    return spec(
        "DIMS = dict(M=3)\n"
        "def f(x: \"f32[M, " +
        w + "]\") -> \"f32[M, " + w +
        "]\":\n"
        "    e = np.exp(x)\n"
        "    return e * e\n");
  };
  const std::string inner = "split t1 m 2; split out0 m 2; compute_at t1 out0 m_i";
  // Inside an inner loop: a constant row of 4 floats folds.
  EXPECT_EQ(lowered(rows(4), inner), R"(kernel f(in x: f32[M, 4], out out0: f32[M, 4]) dims [M]
  for m_o in [0, ((M + 1)//2)):
    for m_i in [0, min(2, (M - (m_o * 2)))):
      allocate t1: f32[4]
      for i in [0, 4):
        t1[i] = exp(x[((((m_o * 2) + m_i) * 4) + i)])
      for i in [0, 4):
        out0[((((m_o * 2) + m_i) * 4) + i)] = (t1[i] * t1[i])
)");
  // A row of N floats (not a constant) or of 20000 (80000 bytes) folds too, on the heap
  // (one allocation per row beats the whole buffer paged in by every call).
  EXPECT_TRUE(contains(lowered(square(), inner),
                       "    for m_i in [0, min(2, (M - (m_o * 2)))):\n"
                       "      allocate t1: f32[N]\n"
                       "      for n in [0, N):\n"
                       "        t1[n] = exp("));
  EXPECT_TRUE(contains(lowered(rows(20000), inner),
                       "    for m_i in [0, min(2, (M - (m_o * 2)))):\n"
                       "      allocate t1: f32[20000]\n"));
  // In the outermost loop of a root nest the large row folds all the same.
  EXPECT_TRUE(contains(lowered(rows(20000), "compute_at t1 out0 m"),
                       "  for m in [0, M):\n"
                       "    allocate t1: f32[20000]\n"
                       "    for i in [0, 20000):\n"
                       "      t1[i] = exp(x[((m * 20000) + i)])\n"
                       "    for i in [0, 20000):\n"
                       "      out0[((m * 20000) + i)] = (t1[i] * t1[i])\n"));
}

// t5 computed at t6's rows is read there, but also by out0, a later root nest: it keeps
// its full size at the top, indexed by the row.
TEST(ScheduleDirectives, ComputeAtKeepsTheWholeBufferWhenAReaderRunsOutsideTheSharedLoops) {
  EXPECT_EQ(lowered(softmax(), "compute_at t5 t6 m"),
            R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  allocate t1: f32[M]
  allocate t5: f32[M*N]
  allocate t6: f32[M]
  for m in [0, M):
    t1[m] = f32(-inf)
    for n in [0, N) reduce:
      t1[m] = max(t1[m], x[((m * N) + n)])
  for m in [0, M):
    for n in [0, N):
      t5[((m * N) + n)] = exp((x[((m * N) + n)] - t1[m]))
    t6[m] = f32(0)
    for n in [0, N) reduce:
      t6[m] = (t6[m] + t5[((m * N) + n)])
  for m in [0, M):
    for n in [0, N):
      out0[((m * N) + n)] = (t5[((m * N) + n)] / t6[m])
)");
}

// A host that is itself computed at another stage can host in turn, inside a loop of its
// own; both orders of the two directives give the same kernel. t5 is read by out0 outside
// t6's loop n, so it keeps its full size.
TEST(ScheduleDirectives, ComputeAtInsideAHostThatIsComputedAtAnotherStage) {
  const std::string fused = lowered(
      softmax(), "compute_at t6 out0 m; compute_at t5 t6 n; compute_at t1 out0 m; parallel out0 m");
  EXPECT_EQ(fused, R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  allocate t5: f32[M*N]
  parallel for m in [0, M):
    allocate t6: f32[1]
    allocate t1: f32[1]
    t1[0] = f32(-inf)
    for n in [0, N) reduce:
      t1[0] = max(t1[0], x[((m * N) + n)])
    t6[0] = f32(0)
    for n in [0, N) reduce:
      t5[((m * N) + n)] = exp((x[((m * N) + n)] - t1[0]))
      t6[0] = (t6[0] + t5[((m * N) + n)])
    for n in [0, N):
      out0[((m * N) + n)] = (t5[((m * N) + n)] / t6[0])
)");
  EXPECT_EQ(
      lowered(softmax(),
              "compute_at t5 t6 n; compute_at t6 out0 m; compute_at t1 out0 m; parallel out0 m"),
      fused);
  // The partial sums of a factored row sum, each computed inside the reduction loop over
  // them that the sum (itself computed at out0's rows) runs: one partial sum at a time.
  EXPECT_EQ(lowered(softmax8(),
                    "split t6 i 4; rfactor t6 i_i; reorder t6_rf i_i i_o; compute_at t6 out0 m; "
                    "compute_at t6_rf t6 i_i"),
            R"(kernel f(in x: f32[M, 8], out out0: f32[M, 8]) dims [M]
  allocate t1: f32[M]
  allocate t5: f32[8*M]
  for m in [0, M):
    t1[m] = f32(-inf)
    for i in [0, 8) reduce:
      t1[m] = max(t1[m], x[((m * 8) + i)])
  for m in [0, M):
    for i in [0, 8):
      t5[((m * 8) + i)] = exp((x[((m * 8) + i)] - t1[m]))
  for m in [0, M):
    allocate t6: f32[1]
    t6[0] = f32(0)
    for i_i in [0, 4) reduce:
      allocate t6_rf: f32[1]
      t6_rf[0] = f32(0)
      for i_o in [0, 2) reduce:
        t6_rf[0] = (t6_rf[0] + t5[((m * 8) + ((i_o * 4) + i_i))])
      t6[0] = (t6[0] + t6_rf[0])
    for i in [0, 8):
      out0[((m * 8) + i)] = (t5[((m * 8) + i)] / t6[0])
)");
}

TEST(ScheduleDirectives, RfactorMakesAStageOfPartialResultsOverAPureLoop) {
  const std::string text = lowered(softmax(), "split t1 n 2; rfactor t1 n_i; vectorize t1_rf n_i");
  EXPECT_TRUE(contains(text, "  allocate t1_rf: f32[2*M]\n"));
  // All partial results are initialised (the tail may not reach them), then accumulated
  // over n_o with n_i a pure, vectorized loop, then reduced into t1.
  EXPECT_TRUE(contains(text,
                       "  for m in [0, M):\n"
                       "    vectorized for n_i in [0, 2):\n"
                       "      t1_rf[((m * 2) + n_i)] = f32(-inf)\n"
                       "    for n_o in [0, ((N + 1)//2)) reduce:\n"
                       "      vectorized for n_i in [0, min(2, (N - (n_o * 2)))):\n"
                       "        t1_rf[((m * 2) + n_i)] = max(t1_rf[((m * 2) + n_i)], x[((m * N) + "
                       "((n_o * 2) + n_i))])\n"
                       "  for m in [0, M):\n"
                       "    t1[m] = f32(-inf)\n"
                       "    for n_i in [0, 2) reduce:\n"
                       "      t1[m] = max(t1[m], t1_rf[((m * 2) + n_i)])\n"));
  // The new stage is scheduled like any other: computed at the consumer's rows, where its
  // partial results fold to one row's [K, N] (allocated in the outermost loop of a root
  // nest, so the size need not be a constant). k is not the innermost loop, so the partial
  // results are the buffer's first dim: the n loop inside walks them contiguously.
  EXPECT_TRUE(
      contains(lowered(matmul(), "reorder out0 k n; rfactor out0 k; compute_at out0_rf out0 m"),
               "  for m in [0, M):\n"
               "    allocate out0_rf: f32[K*N]\n"
               "    for k in [0, K):\n"
               "      for n in [0, N):\n"
               "        out0_rf[((k * N) + n)] = f32(0)\n"
               "        out0_rf[((k * N) + n)] = (out0_rf[((k * N) + n)] + "
               "(a[((m * K) + k)] * b[((k * N) + n)]))\n"
               "    for n in [0, N):\n"
               "      out0[((m * N) + n)] = f32(0)\n"
               "      for k in [0, K) reduce:\n"
               "        out0[((m * N) + n)] = (out0[((m * N) + n)] + out0_rf[((k * N) + n)])\n"));
}

TEST(ScheduleDirectives, PackCopiesTheTileIntoALocalBuffer) {
  EXPECT_EQ(lowered(matmul(), "split out0 n 2; reorder out0 n_o m; pack out0 b m"),
            R"(kernel f(in a: f32[M, K], in b: f32[K, N], out out0: f32[M, N]) dims [M, K, N]
  for n_o in [0, ((N + 1)//2)):
    for m in [0, M):
      allocate b_out0_pack: f32[2*K]
      for p0 in [0, K):
        vectorized for p1 in [0, 2):
          b_out0_pack[((p0 * 2) + p1)] = select(((p0 < K) && (((n_o * 2) + p1) < N)), b[((p0 * N) + ((n_o * 2) + p1))], f32(0))
      for n_i in [0, min(2, (N - (n_o * 2)))):
        out0[((m * N) + ((n_o * 2) + n_i))] = f32(0)
        for k in [0, K) reduce:
          out0[((m * N) + ((n_o * 2) + n_i))] = (out0[((m * N) + ((n_o * 2) + n_i))] + (a[((m * K) + k)] * b_out0_pack[((k * 2) + (((n_o * 2) + n_i) - (n_o * 2)))]))
)");
}

// `pack S B root`: all of B copied once before the nest (its outer copy loop parallel),
// `transposed`: the copy's last two dims swapped, so the reader walks it along n. The
// copy gathers 16 source rows at a time, the source's columns inside the block loop, so
// each row's cache lines are read once.
TEST(ScheduleDirectives, PackRootTransposedCopiesTheWholeBufferOnceBeforeTheNest) {
  const std::string text = lowered(scores(), "pack out0 c root transposed; reorder out0 h l s");
  EXPECT_TRUE(contains(text,
                       "  allocate c_out0_pack: f32[L*S]\n"
                       "  parallel for p0_o in [0, ((S + 15) / 16)):\n"
                       "    for p1 in [0, L):\n"
                       "      vectorized for p0 in [0, min(16, (S - (p0_o * 16)))):\n"
                       "        c_out0_pack[((p1 * S) + ((p0_o * 16) + p0))] = "
                       "c[((((p0_o * 16) + p0) * L) + p1)]\n"
                       "  for h in [0, H):\n"))
      << text;
  EXPECT_TRUE(contains(text, "(q[((h * L) + l)] * c_out0_pack[((l * S) + s)])")) << text;
  EXPECT_EQ(to_text(parse_schedule("pack out0 c root transposed")),
            "pack out0 c root transposed\n");
  // A tile at a loop can be transposed too: rows of b read along n.
  EXPECT_TRUE(
      contains(lowered(matmul(), "split out0 n 2; reorder out0 n_o m; pack out0 b m transposed"),
               "b_out0_pack[((p1 * K) + ((p0_o * 16) + p0))] = select("));
}

TEST(ScheduleDirectives, InlineRecomputesAValueReadTwice) {
  EXPECT_EQ(lowered(square(), "inline t1"),
            R"(kernel f(in x: f32[M, N], out out0: f32[M, N]) dims [M, N]
  for m in [0, M):
    for n in [0, N):
      out0[((m * N) + n)] = (exp(x[((m * N) + n)]) * exp(x[((m * N) + n)]))
)");
  // Directives before the inline are replayed without the stage.
  const std::string text =
      lowered(softmax(), "compute_at t6 out0 m; inline t5; compute_at t1 out0 m");
  EXPECT_EQ(text.find("t5"), std::string::npos) << text;
  EXPECT_TRUE(contains(text,
                       "      t6[0] = (t6[0] + exp((x[((m * N) + n)] - t1[0])))\n"
                       "    for n in [0, N):\n"
                       "      out0[((m * N) + n)] = (exp((x[((m * N) + n)] - t1[0])) / t6[0])\n"));
}

// ---- Rejections ----

TEST(ScheduleRejects, ParallelOrVectorizedReductionLoops) {
  const ScheduleError e = rejection(softmax(), "vectorize t1 n");
  EXPECT_EQ(e.reason(), "loop n carries the reduction into t1[m]");
  EXPECT_TRUE(contains(e.detail(), "rfactor t1 n first"));
  EXPECT_EQ(e.directive().kind, DirectiveKind::Vectorize);
  EXPECT_EQ(e.directive().line, 1);
  EXPECT_TRUE(contains(std::string(e.what()),
                       "schedule line 1: cannot vectorize t1 n: loop n carries the reduction"));
  EXPECT_EQ(reason(softmax(), "parallel t6 n"), "loop n carries the reduction into t6[m]");
  EXPECT_EQ(reason(matmul(), "reorder out0 k n; parallel out0 k"),
            "loop k carries the reduction into out0[m, n]");
  // A max along its innermost loop needs rfactor; a sum vectorizes as a scalar reduction,
  // but only along its innermost loop.
  EXPECT_EQ(reason(softmax(), "split t1 n 2; vectorize t1 n_i"),
            "loop n_i carries the reduction into t1[m]");
  EXPECT_TRUE(contains(lowered(matmul(), "split out0 k 2; vectorize out0 k_i"),
                       "vectorized for k_i in [0, min(2, (K - (k_o * 2)))) reduce:"));
  EXPECT_EQ(reason(matmul(), "split out0 k 2; reorder out0 k_i k_o; vectorize out0 k_i"),
            "the extent of loop k_i depends on loop k_o");
  EXPECT_EQ(reason(matmul(), "split out0 k 4; vectorize out0 k_o"),
            "loop k_o carries the reduction into out0[m, n]");
}

TEST(ScheduleRejects, VectorizeOnlyTheInnermostLoop) {
  EXPECT_EQ(reason(square(), "vectorize out0 m"), "loop m is not innermost (n is inside it)");
  EXPECT_EQ(reason(square(), "vectorize out0 n; reorder out0 n m"),
            "loop n is vectorized and must stay innermost");
  EXPECT_EQ(reason(square(), "vectorize out0 n; compute_at t1 out0 n"),
            "loop n of out0 is vectorized; nothing can be computed inside it");
}

TEST(ScheduleRejects, ASplitTailStaysInsideItsOuterLoop) {
  const ScheduleError e = rejection(square(), "split out0 n 2; reorder out0 n_i n_o");
  EXPECT_EQ(e.reason(), "the extent of loop n_i depends on loop n_o");
  EXPECT_EQ(e.detail(), "n_i is the guarded tail of a split of n_o; it must stay inside it");
  EXPECT_EQ(reason(square(), "split out0 m 2; reorder out0 n m_o"),
            "the extent of loop m_i depends on loop m_o");
  EXPECT_EQ(reason(square(), "reorder out0 n n"), "loop n is named twice");
}

TEST(ScheduleRejects, ComputeAtWhereTheHostReadsOtherIterations) {
  // Through a transpose: out0[n, n1] reads e[n1, n], written at another row.
  const auto transposed = spec(
      "DIMS = dict(N=3)\n"
      "def f(x: \"f32[N, N]\") -> \"f32[N, N]\":\n"
      "    e = np.exp(x)\n"
      "    return e.T + e\n");
  for (const char* loop : {"n", "n1"}) {
    const ScheduleError e = rejection(transposed, std::string("compute_at t1 out0 ") + loop);
    EXPECT_EQ(e.reason(), "out0 reads elements of t1 that t1 writes at other iterations of out0.n");
    EXPECT_TRUE(contains(e.detail(), "only read the slice written at that iteration"));
  }
  // A column sum reduces over the rows the shared loop would hand out one at a time.
  const auto columns = spec(
      "DIMS = dict(N=3)\n"
      "def f(x: \"f32[N, N]\") -> \"f32[N]\":\n"
      "    y = np.exp(x)\n"
      "    return y.sum(axis=0) + y.max(axis=0)\n");
  EXPECT_EQ(reason(columns, "compute_at t1 t2 n"),
            "t2 reads elements of t1 that t1 writes at other iterations of t2.n");
  // Another reader still runs before the moved producer.
  const ScheduleError early = rejection(softmax(), "compute_at t1 out0 m");
  EXPECT_EQ(early.reason(), "t5 reads t1 before t1 writes it");
  EXPECT_EQ(early.detail(), "the reader's nest runs first");
  EXPECT_EQ(reason(softmax(), "compute_at t5 out0 n"), "t6 reads t5 before t5 writes it");
}

TEST(ScheduleRejects, ComputeAtNeedsMatchingPureLoops) {
  const auto columns = spec(
      "DIMS = dict(M=3, N=5)\n"
      "def f(x: \"f32[M, N]\") -> \"f32[N]\":\n"
      "    y = np.exp(x)\n"
      "    return y.sum(axis=0) + y.max(axis=0)\n");
  const ScheduleError e = rejection(columns, "compute_at t1 t2 n");
  EXPECT_EQ(e.reason(), "loop m of t1 walks [0, M) but loop n of t2 walks [0, N)");
  EXPECT_TRUE(contains(e.detail(), "split both stages alike first"));
  EXPECT_EQ(reason(square(), "split out0 n 2; split t1 n 3; compute_at t1 out0 n_o"),
            "loop n_o of t1 walks [0, ((N + 2)//3)) but loop n_o of out0 walks [0, ((N + 1)//2))");
  EXPECT_EQ(reason(square(), "split out0 n 2; compute_at t1 out0 n_o"),
            "loop n of t1 walks [0, N) but loop n_o of out0 walks [0, ((N + 1)//2))");
  EXPECT_EQ(reason(softmax(), "compute_at t6 out0 n"),
            "loop n of t6 is a reduction loop; only pure loops can be shared");
  EXPECT_EQ(reason(softmax(), "compute_at out0 t1 m"), "t1 runs before out0");
  EXPECT_EQ(reason(softmax(), "compute_at t1 t1 m"), "t1 cannot be computed inside itself");
  EXPECT_EQ(reason(softmax(), "compute_at t6 out0 m; compute_at t6 out0 m"),
            "t6 is already computed at out0");
  // The parts of a concatenation write one buffer together.
  const auto concat = spec(
      "DIMS = dict(M=3, N=5)\n"
      "def f(x: \"f32[M, N]\", y: \"f32[M, N]\") -> \"f32[M, N]\":\n"
      "    e = np.exp(x)\n"
      "    return np.concatenate([e, y], axis=1).sum(axis=1, keepdims=True) * e\n");
  EXPECT_EQ(reason(concat, "compute_at t3.0 t4 m"), "t3.0 writes t3 together with t3.1");
}

TEST(ScheduleRejects, LoopsSharedWithAHostBelongToTheHost) {
  const std::string fused = "compute_at t6 out0 m; ";
  for (const char* d : {"split out0 m 2", "reorder out0 n m"})
    EXPECT_EQ(reason(softmax(), fused + d), "t6 is computed inside loop m of out0") << d;
  for (const char* d : {"split t6 m 2", "reorder t6 n m", "parallel t6 m", "vectorize t6 m"})
    EXPECT_EQ(reason(softmax(), fused + d), "loop m of t6 is shared with its host out0") << d;
  // Loops inside the shared ones are still the stage's own.
  EXPECT_TRUE(contains(lowered(softmax(), fused + "split t6 n 2; split out0 n 2"),
                       "    for n_o in [0, ((N + 1)//2)) reduce:\n"));
}

TEST(ScheduleRejects, ComputeAtANestedHostOnlyInsideItsOwnLoops) {
  // t6 shares out0's m; computing t5 at t6's m would share no loop of t6's own.
  const ScheduleError e = rejection(softmax(), "compute_at t6 out0 m; compute_at t5 t6 m");
  EXPECT_EQ(e.reason(), "loop m of t6 is shared with its host out0");
  EXPECT_EQ(e.detail(), "compute t5 at out0 instead");
  // The same for the partial results of a factored reduction and their reducer.
  const ScheduleError rf = rejection(
      softmax(), "split t6 n 4; rfactor t6 n_i; compute_at t6 out0 m; compute_at t6_rf t6 m");
  EXPECT_EQ(rf.reason(), "loop m of t6 is shared with its host out0");
  EXPECT_EQ(rf.detail(), "compute t6_rf at out0 instead");
  // Two levels down: t5's loop n is t6's.
  const std::string nested = "compute_at t6 out0 m; compute_at t5 t6 n; ";
  EXPECT_EQ(reason(softmax(), nested + "compute_at t1 t5 n"),
            "loop n of t5 is shared with its host t6");
  // The loops of a nested host are fixed once a stage is computed inside them.
  EXPECT_EQ(reason(softmax(), nested + "split t6 n 2"), "t5 is computed inside loop n of t6");
  EXPECT_EQ(reason(softmax(), nested + "split t5 n 2"), "loop n of t5 is shared with its host t6");
}

TEST(ScheduleRejects, RfactorNeedsAReductionLoop) {
  EXPECT_EQ(reason(softmax(), "rfactor t1 m"), "loop m of t1 is not a reduction loop");
  EXPECT_EQ(reason(softmax(), "rfactor out0 n"), "loop n of out0 is not a reduction loop");
  EXPECT_EQ(reason(softmax(), "split t1 n 2; rfactor t1 n_i; rfactor t1 n_i"),
            "t1 is already factored (t1_rf exists)");
  EXPECT_EQ(reason(softmax(), "compute_at t6 out0 m; rfactor t6 n"), "t6 is computed at a host");
  // Factoring the outer part of a split whose inner part stayed pure (its tail guard
  // depends on the outer part, which would move inside it); legal when the split divides.
  EXPECT_EQ(reason(matmul(), "split out0 k 3; rfactor out0 k_i; rfactor out0_rf k_o"),
            "the extent of loop k_i of out0_rf depends on the reduction loop k_o");
  EXPECT_NO_THROW(
      lower(softmax8(), parse_schedule("split t6 i 4; rfactor t6 i_i; rfactor t6_rf i_o")));
}

TEST(ScheduleRejects, UnknownNamesListTheValidOnes) {
  const ScheduleError stage = rejection(softmax(), "split t9 n 2");
  EXPECT_EQ(stage.reason(), "there is no stage t9");
  EXPECT_TRUE(contains(stage.detail(), "the stages are: t1, t5, t6, out0"));
  const ScheduleError loop = rejection(softmax(), "split t1 n 2; vectorize t1 n");
  EXPECT_EQ(loop.reason(), "t1 has no loop n");
  EXPECT_EQ(loop.detail(), "its loops are: m, n_o, n_i");
  EXPECT_EQ(reason(softmax(), "compute_at t5 out0 q"), "out0 has no loop q");
  EXPECT_EQ(reason(softmax(), "compute_at t5 t7 m"), "there is no stage t7");
  EXPECT_EQ(reason(matmul(), "pack out0 c m"), "there is no buffer c");
}

TEST(ScheduleRejects, InlineOnlyIntermediateElementwiseStages) {
  EXPECT_EQ(reason(softmax(), "inline t1"), "t1 is a Reduce max, not an elementwise value");
  EXPECT_EQ(reason(softmax(), "inline out0"), "out0 is a result of the kernel; it must be stored");
  EXPECT_EQ(reason(softmax(), "inline t5; inline t5"), "there is no stage t5");
  const ScheduleError replay = rejection(softmax(), "vectorize t5 n; inline t5");
  EXPECT_EQ(replay.reason(), "an earlier directive (vectorize t5 n) no longer applies");
  EXPECT_EQ(replay.detail(), "there is no stage t5");
  EXPECT_EQ(replay.directive().kind, DirectiveKind::Inline);
}

TEST(ScheduleRejects, PackOnlyTilesOfBuffersTheStageReads) {
  EXPECT_EQ(reason(matmul(), "pack out0 b k"),
            "loop k is innermost: the tile would be one element");
  EXPECT_EQ(reason(matmul(), "pack out0 out0 m"),
            "out0 writes out0; only buffers it reads can be packed");
  EXPECT_EQ(reason(softmax(), "pack out0 x m"), "out0 does not read x");
  EXPECT_EQ(reason(matmul(), "pack out0 b m; pack out0 b m"), "b is already packed in out0");
  EXPECT_EQ(reason(matmul(), "pack out0 b n; split out0 m 2"),
            "a tile of b is packed inside loop m");
  // A buffer written one slice at a time inside the reader's loop is not complete there.
  for (const char* s :
       {"compute_at t1 out0 m; pack out0 t1 m", "pack out0 t1 m; compute_at t1 out0 m"})
    EXPECT_EQ(reason(square(), s),
              "out0 packs a tile of t1, which t1 writes one slice at a time inside out0.m")
        << s;
}

TEST(ScheduleRejects, PackRootOnlyOfCompleteBuffersAndKnownLayouts) {
  EXPECT_EQ(reason(matmul(), "pack out0 b m sideways"), "unknown pack layout 'sideways'");
  // A buffer the nest writes is not complete before it.
  for (const char* s :
       {"compute_at t1 out0 m; pack out0 t1 root", "pack out0 t1 root; compute_at t1 out0 m"})
    EXPECT_EQ(reason(square(), s),
              "out0 packs a tile of t1, which t1 writes one slice at a time inside out0.m")
        << s;
  const ScheduleError shared = rejection(square(), "compute_at t1 out0 n; pack t1 x m");
  EXPECT_TRUE(contains(shared.detail(), "pack t1 x root")) << shared.detail();
}

// Random schedules keep only legal directives; each rejected one, replayed after its
// prefix through lower(), is rejected with the same reason.
TEST(ScheduleRejects, AccumulateOnlyWhereTheTileIsConstantAndHoldsTheReduction) {
  // Not a reduction; a reduction loop; no reduction loop inside the tile (one outside it
  // is cache blocking, below).
  EXPECT_EQ(reason(square(), "accumulate out0 m"), "out0 is not a reduction");
  EXPECT_EQ(reason(matmul(), "accumulate out0 k"), "loop k of out0 is a reduction loop");
  EXPECT_EQ(reason(matmul(), "reorder out0 k n; accumulate out0 n"),
            "no reduction loop of out0 runs inside loop n");
  // The pure loops inside the tile need constant extents, and fit in 4 KiB.
  EXPECT_EQ(reason(matmul(), "accumulate out0 m"), "loop n inside m walks [0, N), not a constant");
  EXPECT_EQ(reason(matmul(), "split out0 n 2048; reorder out0 n_o k n_i; accumulate out0 n_o"),
            "the tile inside loop n_o is 8192 bytes of accumulators");
  EXPECT_EQ(reason(matmul(), "rfactor out0 k; accumulate out0_rf k"),
            "no reduction loop of out0_rf runs inside loop k");
  // Once: and the loops are fixed after it.
  const std::string tile = "split out0 n 16; reorder out0 n_o k n_i; accumulate out0 n_o; ";
  EXPECT_EQ(reason(matmul(), tile + "accumulate out0 m"), "out0 already accumulates in registers");
  EXPECT_EQ(reason(matmul(), tile + "split out0 m 2"),
            "out0 accumulates in registers inside loop n_o");
  EXPECT_EQ(reason(matmul(), tile + "reorder out0 k n_i"),
            "out0 accumulates in registers inside loop n_o");
  EXPECT_EQ(reason(matmul(), tile + "rfactor out0 k"), "out0 accumulates in registers");
  EXPECT_EQ(reason(matmul(), "reorder out0 k n; vectorize out0 n; accumulate out0 n"),
            "loop n is vectorized");
  // Inside the loops shared with a host.
  EXPECT_EQ(
      reason(softmax(), "inline t5; compute_at t6 out0 m; compute_at t1 out0 m; accumulate t1 m"),
      "loop m is shared with the host; accumulate inside the stage's own loops");
  // Legal after all of that: the vectorized columns inside, the rows unrolled.
  EXPECT_NO_THROW(
      lower(matmul(), parse_schedule(tile + "vectorize out0 n_i; unroll out0 m; parallel out0 m")));
}

TEST(ScheduleRejects, RandomScheduleRejectionsReplayThroughLower) {
  size_t rejections = 0;
  for (const ollie::ir::Graph* g : {&softmax(), &matmul(), &square()}) {
    for (uint64_t seed = 0; seed < 12; ++seed) {
      std::vector<RejectedDirective> rejected;
      const Schedule s = random_schedule(*g, seed, 10, &rejected);
      EXPECT_EQ(to_text(random_schedule(*g, seed, 10)), to_text(s)) << "seed " << seed;
      EXPECT_NO_THROW(lower(*g, s)) << to_text(s);
      const std::string text = to_text(s);
      for (const auto& r : rejected) {
        ++rejections;
        EXPECT_FALSE(r.reason.empty()) << to_text(r.directive);
        EXPECT_EQ(text.rfind(to_text(r.prefix), 0), 0u) << "prefix of\n" << text;
        Schedule tried = r.prefix;
        tried.directives.push_back(r.directive);
        try {
          lower(*g, tried);
          ADD_FAILURE() << "accepted after its prefix: " << to_text(r.directive) << "\n"
                        << to_text(r.prefix);
        } catch (const ScheduleError& e) {
          EXPECT_EQ(e.reason(), r.reason) << to_text(tried);
          EXPECT_EQ(to_text(e.directive()), to_text(r.directive));
        }
      }
    }
  }
  EXPECT_GT(rejections, 10u);
}

// ---- Scheduled kernels agree with the reference ----

struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ollie-schedule-test-" + std::to_string(getpid()));
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

// Compiles `g` under `schedule`, runs it on random inputs at its bound dims and compares
// every element with the reference interpreter's bound.
void expect_agrees(const ollie::ir::Graph& g, const std::string& schedule) {
  SCOPED_TRACE(schedule);
  static const ScratchDir dir;
  static ollie::build::Driver driver(dir.path.string());
  const std::string source = ollie::emit::emit_kernel(lower(g, parse_schedule(schedule)), g);
  ollie::build::Request request;
  request.units = {{g.entry + ".ollie.h", ollie::emit::emit_header(g)},
                   {"kernel.cpp", "#include \"" + g.entry + ".ollie.h\"\n" + source},
                   {"ollie_adapter.cpp", ollie::build::adapter_source(g)}};
  const ollie::build::Result built = driver.compile(request);
  ASSERT_TRUE(built.ok) << built.log << "\n" << source;

  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<ollie::interp::Tensor> inputs;
  for (const auto& p : g.params) {
    ollie::interp::Tensor t;
    t.dtype = p.dtype;
    t.shape = ollie::ir::evaluate_shape(p.shape, g.bound_dims);
    t.data.resize(static_cast<size_t>(ollie::ir::element_count(t.shape)));
    for (auto& x : t.data) x = static_cast<float>(normal(rng));
    inputs.push_back(std::move(t));
  }
  ollie::runner::Options options;
  options.runner_path = OLLIE_RUNNER;
  options.timeout_seconds = 30;
  options.threads = 2;
  const ollie::runner::Outcome got = ollie::runner::run(built.so_path, g, inputs, options);
  ASSERT_EQ(got.status, ollie::runner::Status::Ok) << got.message << "\n" << source;
  const ollie::interp::Result want = ollie::interp::evaluate(g, inputs);
  ASSERT_EQ(got.outputs.size(), want.values.size());
  for (size_t i = 0; i < want.values.size(); ++i) {
    ASSERT_EQ(got.outputs[i].data.size(), want.values[i].data.size());
    for (size_t e = 0; e < want.values[i].data.size(); ++e)
      ASSERT_LE(std::abs(got.outputs[i].data[e] - want.values[i].data[e]), want.bounds[i].data[e])
          << "out" << i << "[" << e << "]\n"
          << source;
  }
}

TEST(ScheduleRuns, FusedSoftmaxWithFactoredRowReductions) {
  expect_agrees(
      softmax(),
      "split t1 n 2; rfactor t1 n_i; vectorize t1_rf n_i; split t6 n 4; rfactor t6 n_i\n"
      "compute_at t6 out0 m; compute_at t6_rf out0 m; compute_at t5 out0 m; compute_at t1 out0 m\n"
      "compute_at t1_rf out0 m; parallel out0 m");
}

TEST(ScheduleRuns, SoftmaxExpComputedInsideTheSum) {
  expect_agrees(softmax(),
                "inline t5; compute_at t6 out0 m; compute_at t1 out0 m; vectorize out0 n");
  expect_agrees(softmax(), "compute_at t5 t6 n; compute_at t6 out0 m; compute_at t1 out0 m");
  // The same, directives outside in, rows in parallel (t6 and t1 folded per row).
  expect_agrees(softmax(),
                "compute_at t6 out0 m; compute_at t5 t6 n; compute_at t1 out0 m; parallel out0 m");
}

TEST(ScheduleRuns, NestedHostsAndFoldedBuffers) {
  expect_agrees(softmax8(),
                "split t6 i 4; rfactor t6 i_i; reorder t6_rf i_i i_o; compute_at t6 out0 m; "
                "compute_at t6_rf t6 i_i; "
                "compute_at t5 out0 m; compute_at t1 out0 m; parallel out0 m");
  expect_agrees(square(), "split t1 n 2; split out0 n 2; compute_at t1 out0 n_i");
}

// A matmul whose sizes leave tails in every register tile below.
const ollie::ir::Graph& matmul_with_tails() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(M=13, K=9, N=37)\n"
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
      "    return a @ b\n");
  return g;
}

TEST(ScheduleRuns, RegisterTilesAgreeOnFullAndCutTiles) {
  // The GEMM micro-kernel: 6 x 32 accumulators (13 = 6 + 6 + 1 rows, 37 = 32 + 5 columns).
  const std::string gemm =
      "split out0 m 6; split out0 n 32; reorder out0 m_o n_o k m_i n_i; accumulate out0 n_o; "
      "vectorize out0 n_i; unroll out0 m_i; parallel out0 m_o";
  expect_agrees(matmul_with_tails(), gemm);
  // Sizes that the tile divides exactly (no tail copy) and that it exceeds (no full tile).
  expect_agrees(
      matmul(),
      "split out0 m 3; split out0 n 5; reorder out0 m_o n_o k m_i n_i; accumulate out0 n_o");
  expect_agrees(matmul(), gemm);
  // The reduction split around the tile, with B packed per k block; one accumulator.
  expect_agrees(
      matmul_with_tails(),
      "split out0 k 4; split out0 n 16; reorder out0 m n_o k_o k_i n_i; accumulate out0 n_o; "
      "pack out0 b k_o; vectorize out0 n_i");
  expect_agrees(matmul_with_tails(), "accumulate out0 n");
  // A tile loop whose tail guard depends on another tile loop (no constant copy).
  expect_agrees(
      matmul_with_tails(),
      "split out0 n 16; split out0 n_i 4; reorder out0 n_o k n_i_o n_i_i; accumulate out0 n_o");
  // A row max and a row sum (non-additive identity; a vectorized sum inside the tile).
  expect_agrees(softmax(),
                "split t1 m 2; reorder t1 m_o n m_i; accumulate t1 m_o; split t6 m 2; "
                "accumulate t6 m_i; vectorize t6 n");
}

TEST(ScheduleRuns, RegisterTileEmitsConstantLoopsOverALocalArray) {
  // The plain form (16-byte vectors; wider ones write full tiles as vector values,
  // tests/emit/vector_tile_test.cpp).
  ollie::emit::EmitOptions plain;
  plain.vector_bytes = 16;
  const std::string source = ollie::emit::emit_kernel(
      lower(matmul_with_tails(),
            parse_schedule("split out0 m 6; split out0 n 32; reorder out0 m_o n_o k m_i n_i; "
                           "accumulate out0 n_o; "
                           "vectorize out0 n_i; unroll out0 m_i; parallel out0 m_o")),
      matmul_with_tails(), plain);
  // The accumulators live on the stack of the tile; the full-tile copy has constant trip
  // counts (the rows unrolled fully), the general one the guarded tails.
  EXPECT_TRUE(contains(source, "alignas(64) float out0_acc[192];"));
  EXPECT_TRUE(contains(source, "#pragma GCC unroll 6\n"));
  EXPECT_TRUE(contains(source, "for (int64_t m_i = 0; m_i < 6; ++m_i) {"));
  EXPECT_TRUE(contains(source, "for (int64_t n_i = 0; n_i < 32; ++n_i) {"));
  EXPECT_TRUE(contains(source, "out0_acc[((m_i * 32) + n_i)] = (out0_acc[((m_i * 32) + n_i)] + "));
  EXPECT_TRUE(contains(source, "} else {"));
  EXPECT_TRUE(contains(source, "for (int64_t m_i = 0; m_i < ollie_min<int64_t>(6, "));
  // out0 itself is only written by the two store-backs (full tile, cut tile), never
  // read: the reduction runs in the accumulators.
  size_t writes = 0;
  for (size_t at = source.find("out0["); at != std::string::npos; at = source.find("out0[", at + 1))
    ++writes;
  EXPECT_EQ(writes, 2u) << source;
  EXPECT_TRUE(contains(
      source,
      "out0[((((m_o * 6) + m_i) * N) + ((n_o * 32) + n_i))] = out0_acc[((m_i * 32) + n_i)];"));
}

// Scores against a key matrix, both contiguous only along the reduction (q[h, l] . c[s, l]):
// sizes that leave a cut dot-product tile (H = 7 = 4 + 3) and a vector tail (L = 37).
const ollie::ir::Graph& scores() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(H=7, S=5, L=37)\n"
      "def f(q: \"f32[H, L]\", c: \"f32[S, L]\") -> \"f32[H, S]\":\n"
      "    return np.einsum('hl,sl->hs', q, c)\n");
  return g;
}

// The transposed copy of the keys makes the scores an outer product along s (with tails).
TEST(ScheduleRuns, ScoresAgainstATransposedCopyOfTheKeys) {
  expect_agrees(scores(), "pack out0 c root transposed; reorder out0 h l s; vectorize out0 s");
  expect_agrees(scores(),
                "pack out0 c root transposed; split out0 s 2; reorder out0 h s_o l s_i; "
                "accumulate out0 s_o; vectorize out0 s_i; parallel out0 h");
  expect_agrees(matmul_with_tails(),
                "split out0 n 4; reorder out0 n_o m k n_i; "
                "pack out0 b m transposed; pack out0 a root transposed");
}

// One head's scores from one qkv buffer (picoGPT's heads): the stage reads q and k as two
// slices of qkv, so `pack ... root` copies each slice it reads (T*D elements), not all of
// qkv; each load reads its own copy, and a split with a tail still agrees.
const ollie::ir::Graph& head_scores() {
  static const ollie::ir::Graph g = spec(
      "DIMS = dict(T=5, D=7)\n"
      "def f(qkv: \"f32[T, 3*D]\") -> \"f32[T, T]\":\n"
      "    q, k, v = np.split(qkv, 3, axis=-1)\n"
      "    return k @ v.T\n");
  return g;
}

TEST(ScheduleRuns, RootPackOfTwoSlicesCopiesEachSliceItReads) {
  const std::string text = lowered(head_scores(), "pack out0 qkv root transposed");
  size_t copies = 0;
  for (size_t at = text.find("allocate qkv_"); at != std::string::npos;
       at = text.find("allocate qkv_", at + 1)) {
    ++copies;
    EXPECT_EQ(text.compare(text.find(':', at), 10, ": f32[D*T]"), 0) << text;
  }
  EXPECT_EQ(copies, 2u) << text;
  EXPECT_FALSE(contains(text, "* qkv[")) << text;  // every product reads the copies
  expect_agrees(head_scores(),
                "pack out0 qkv root transposed; split out0 t6 2; reorder out0 t t6_o d t6_i; "
                "vectorize out0 t6_i");
}

TEST(ScheduleRuns, DotProductTilesInsideAVectorizedSum) {
  // 4 heads per key row, each its own accumulator: 7 = 4 + 3, so both the whole-tile copy
  // and the general one run.
  const std::string tile =
      "reorder out0 s h l; split out0 h 4; reorder out0 s h_o l h_i; unroll out0 h_i; "
      "vectorize out0 l";
  expect_agrees(scores(), tile);
  expect_agrees(scores(), tile + "; parallel out0 s");
  // Two tile loops (2 x 2 accumulators), and a tile that the size divides (no general copy).
  expect_agrees(scores(),
                "split out0 h 2; split out0 s 2; reorder out0 h_o s_o l h_i s_i; vectorize out0 l");
  expect_agrees(matmul(),
                "reorder out0 n m k; split out0 m 3; reorder out0 n m_o k m_i; vectorize out0 k");
  const std::string source =
      ollie::emit::emit_kernel(lower(scores(), parse_schedule(tile)), scores());
  // Whole chunks of 16 into lanes per accumulator (37 = 2 x 16 + a tail of 5), folded.
  EXPECT_TRUE(contains(source,
                       "out0_acc3_lanes[l_lane] = out0_acc3_lanes[l_lane] + "
                       "(q[((((h_o * 4) + 3) * L) + l)] * c[((s * L) + l)]);"));
  EXPECT_TRUE(contains(source, "out0_acc2_lanes[l_lane] += out0_acc2_lanes[l_lane + 8];"));
  EXPECT_TRUE(contains(
      source, "out0_acc3 = out0_acc3 + (q[((((h_o * 4) + 3) * L) + l)] * c[((s * L) + l)]);"));
  EXPECT_TRUE(contains(source, "if ((ollie_min<int64_t>(4, (H - (h_o * 4))) == 4)) {"));
  EXPECT_TRUE(contains(source, "alignas(64) float out0_acc_lanes[16] = {};\n"));  // the cut tile
}

TEST(ScheduleRejects, WhatMayRunInsideAVectorizedSum) {
  // Loops of a size the dims decide, or too many accumulators, inside the sum; a reorder
  // that would put more than 16 inside it; a parallel loop inside it.
  EXPECT_EQ(reason(scores(), "reorder out0 s l h; vectorize out0 l"),
            "loop l carries the reduction into out0[h, s]");
  EXPECT_EQ(reason(scores(), "split out0 h 32; reorder out0 h_o s l h_i; vectorize out0 l"),
            "loop l carries the reduction into out0[h, s]");
  const std::string tile = "split out0 h 4; reorder out0 s h_o l h_i; vectorize out0 l; ";
  EXPECT_NO_THROW(
      lower(scores(), parse_schedule(tile + "split out0 s 4; reorder out0 s_o h_o l s_i h_i")));
  EXPECT_EQ(reason(scores(), tile + "split out0 s 8; reorder out0 s_o h_o l s_i h_i"),
            "loop l is vectorized and must stay innermost");
  EXPECT_EQ(reason(scores(),
                   "split out0 h 4; reorder out0 s h_o l h_i; vectorize out0 l; parallel out0 h_i"),
            "loop h_i is inside the vectorized loop l");
  // A max cannot be vectorized along its reduction at all.
  EXPECT_EQ(reason(softmax(), "split t1 m 2; reorder t1 m_o n m_i; vectorize t1 n"),
            "loop n carries the reduction into t1[m]");
}

// Cache blocking: the k blocks outside the register tiles, each tile continuing from the
// partial sums of the previous block (tails in m, n and k), with a packed panel of b.
TEST(ScheduleRuns, RegisterTilesInsideReductionBlocks) {
  const std::string tile =
      "split out0 k 4; split out0 m 6; split out0 n 16; reorder out0 k_o m_o n_o k_i m_i n_i; "
      "accumulate out0 n_o; vectorize out0 n_i; unroll out0 m_i";
  expect_agrees(matmul_with_tails(), tile);
  expect_agrees(matmul_with_tails(), tile + "; pack out0 b m_o; parallel out0 m_o");
  const std::string text = lowered(matmul_with_tails(), tile);
  EXPECT_TRUE(contains(text, "out0_acc[((m_i * 16) + n_i)] = out0[")) << text;
}

TEST(ScheduleRuns, MatmulTilesWithPackedPanelsAndTails) {
  expect_agrees(
      matmul(),
      "split out0 m 2; parallel out0 m_o; split out0 k 3; reorder out0 k_o n; pack out0 a n; "
      "pack out0 b m_i");
  expect_agrees(matmul(), "split out0 n 2; reorder out0 n_o k; pack out0 b m; unroll out0 k");
  expect_agrees(matmul(),
                "split out0 k 3; reorder out0 k_o n; rfactor out0 k_i; vectorize out0_rf k_i");
}

}  // namespace

namespace {

// ---- Mutation (the search's mutate proposer) ----

TEST(ScheduleMutation, EveryStepIsLegalDifferentAndReproducible) {
  std::map<std::string, int> kinds;
  for (const auto* g : {&softmax(), &matmul(), &square()}) {
    Schedule current = default_schedule(*g);
    for (uint64_t step = 0; step < 40; ++step) {
      const auto m = mutate_schedule(*g, current, 1000 + step);
      ASSERT_TRUE(m.has_value()) << "no mutation of:\n" << to_text(current);
      EXPECT_NE(to_text(m->schedule), to_text(current)) << m->move;
      EXPECT_NO_THROW(lower(*g, m->schedule)) << m->move << "\n" << to_text(m->schedule);
      // The same seed gives the same step.
      const auto again = mutate_schedule(*g, current, 1000 + step);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(to_text(again->schedule), to_text(m->schedule));
      EXPECT_EQ(again->move, m->move);
      kinds[m->move.substr(0, m->move.find(' '))]++;
      current = m->schedule;
    }
  }
  // All four kinds of move occur over 120 steps.
  for (const char* kind : {"add", "drop", "split", "move"}) EXPECT_GT(kinds[kind], 0) << kind;
}

TEST(ScheduleMutation, RecipesAreReachableInOneStep) {
  // From the default schedule, single mutation steps apply whole recipes to a stage in
  // place of the directives that shaped it, and they lower; so do random schedules.
  std::map<std::string, int> recipes;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const auto m =
        mutate_schedule(matmul_with_tails(), default_schedule(matmul_with_tails()), seed);
    ASSERT_TRUE(m.has_value());
    if (m->move.rfind("recipe ", 0) != 0) continue;
    recipes[m->move.substr(0, m->move.find(" for "))]++;
    EXPECT_TRUE(contains(m->move, "accumulate out0 ")) << m->move;
    EXPECT_TRUE(
        contains(to_text(lower(matmul_with_tails(), m->schedule)), "allocate out0_acc: f32["))
        << m->move;
  }
  EXPECT_GT(recipes["recipe register tile"], 0);
  EXPECT_GT(recipes["recipe row tile"], 0);
  // A reduction longer than a block: the cache-blocked tile, with its packed panel.
  const auto big = spec(
      "DIMS = dict(M=13, K=600, N=37)\n"
      "def f(a: \"f32[M, K]\", b: \"f32[K, N]\") -> \"f32[M, N]\":\n"
      "    return a @ b\n");
  int blocked = 0;
  for (uint64_t seed = 0; seed < 400 && !blocked; ++seed) {
    const auto m = mutate_schedule(big, default_schedule(big), seed);
    ASSERT_TRUE(m.has_value());
    if (m->move.rfind("recipe cache-blocked tile", 0) != 0) continue;
    ++blocked;
    EXPECT_TRUE(contains(m->move, "split out0 k ")) << m->move;
    EXPECT_TRUE(contains(m->move, "pack out0 b n_o")) << m->move;
    EXPECT_NO_THROW(lower(big, m->schedule)) << m->move;
  }
  EXPECT_GT(blocked, 0);
  int random_tiles = 0;
  for (uint64_t seed = 0; seed < 100; ++seed)
    random_tiles += to_text(random_schedule(matmul_with_tails(), seed, 8)).find("accumulate") !=
                    std::string::npos;
  EXPECT_GT(random_tiles, 0);
}

TEST(ScheduleMutation, AnEmptyScheduleCanOnlyGrow) {
  const auto m = mutate_schedule(matmul(), Schedule{}, 7);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->move.rfind("add ", 0), 0u) << m->move;
  EXPECT_EQ(m->schedule.directives.size(), 1u);
}

}  // namespace
