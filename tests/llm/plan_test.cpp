// Answers in ollie's own terms: extract_plan finds the ```schedule and ```rewrites blocks
// (the last of each, a cut fence said), the prompt's directive and rewrite-rule references
// are the docs' tables (a few rows pinned), and the new placeholders render.
#include <gtest/gtest.h>

#include "llm/llm.h"

namespace ollie::llm {
namespace {

TEST(Plan, AScheduleBlockIsAPlanWhateverCppTheAnswerShows) {
  const ExtractedPlan p = extract_plan(
      "The rows are independent, so:\n\n```cpp\nextern \"C\" void ollie_kernel() {}\n```\n\n"
      "```schedule\nsplit out0 n 16\nvectorize out0 n_i\n```\n");
  EXPECT_TRUE(p.found);
  EXPECT_TRUE(p.has_schedule);
  EXPECT_EQ(p.schedule, "split out0 n 16\nvectorize out0 n_i\n");
  EXPECT_FALSE(p.rewrites.has_value());
  EXPECT_EQ(p.how, "```schedule block 2 of 2");
  EXPECT_TRUE(p.problem.empty());
}

TEST(Plan, TheLastBlockOfEachLanguageCountsAndRewritesMayComeAlone) {
  const ExtractedPlan p = extract_plan(
      "A draft:\n```Schedule\nparallel t1 m\n```\nBetter:\n```schedule\nparallel out0 m\n```\n"
      "~~~rewrites\nreciprocal %7\n~~~\n");
  EXPECT_EQ(p.schedule, "parallel out0 m\n");
  ASSERT_TRUE(p.rewrites.has_value());
  EXPECT_EQ(*p.rewrites, "reciprocal %7\n");
  EXPECT_EQ(p.how, "```schedule block 2 of 3, ```rewrites block 3 of 3");

  const ExtractedPlan alone = extract_plan("```rewrites\n```\n");  // empty: no rewrites
  EXPECT_TRUE(alone.found);
  EXPECT_FALSE(alone.has_schedule);
  ASSERT_TRUE(alone.rewrites.has_value());
  EXPECT_EQ(*alone.rewrites, "");
}

TEST(Plan, AnswersWithoutPlanBlocksAreNotPlansAndACutFenceIsAProblem) {
  EXPECT_FALSE(extract_plan("```cpp\nint x;\n```\nno schedule here").found);
  EXPECT_FALSE(extract_plan("Use `schedule` blocks, they said.").found);
  const ExtractedPlan cut = extract_plan("```schedule\nsplit out0 n 16\nvector");
  EXPECT_TRUE(cut.found);
  EXPECT_NE(cut.problem.find("not closed"), std::string::npos) << cut.problem;
  // A schedule block is not C++: extract_code does not take it for the kernel.
  EXPECT_FALSE(extract_code("```schedule\nsplit out0 n 16\n```\n").found);
}

TEST(Plan, TheReferencesAreTheDocsTables) {
  const std::string& d = directive_reference();
  // One item a directive, its text from docs/schedules.md's table.
  EXPECT_NE(d.find("- `split S L F`: `L` becomes `L_o` (outer"), std::string::npos) << d;
  EXPECT_NE(d.find("- `parallel S L`: `#pragma omp parallel for`. Refused when: `L` carries a "
                   "reduction."),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("- `accumulate S L`:"), std::string::npos);
  EXPECT_NE(d.find("- `compute_at S H L`:"), std::string::npos);
  EXPECT_EQ(d.find("| "), std::string::npos);  // no table syntax left
  // compute_at's "see below" is there: the dependence rules.
  EXPECT_NE(d.find("Dependences (docs/schedules.md): Legality is checked over *canonical loops*"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("3. no common loop is one of W's reduction loops"), std::string::npos);
  const std::string& r = rewrite_rule_reference();
  EXPECT_NE(r.find("- `reciprocal`: `a / broadcast(b) = a * broadcast(1 / b)`\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("- `associate`:"), std::string::npos);
  EXPECT_NE(r.find("(forms: `right`: Z joins the inner Y"), std::string::npos);
}

TEST(Plan, TheNewPlaceholdersRender) {
  const PromptTemplate t = parse_prompt_template(
      "{{graph}}|{{stages}}|{{rewrites}}|{{schedule}}|{{rewrite_sites}}\n{{directives}}\n"
      "{{rewrite_rules}}",
      "t.md");
  PromptInputs in;
  in.graph = "%0 = param x";
  in.stages = "out0: for m in [0, M)";
  in.schedule = "parallel out0 m";
  const std::string empty = render_prompt(t, {}).user;
  EXPECT_NE(empty.find("(unknown)|(unknown)|(none)|(none)|(none: no rule applies"),
            std::string::npos)
      << empty;
  const std::string full = render_prompt(t, in).user;
  EXPECT_NE(full.find("%0 = param x|out0: for m in [0, M)|(none)|parallel out0 m|"),
            std::string::npos)
      << full;
  EXPECT_NE(full.find(directive_reference()), std::string::npos);
  EXPECT_NE(full.find(rewrite_rule_reference()), std::string::npos);
}

}  // namespace
}  // namespace ollie::llm
