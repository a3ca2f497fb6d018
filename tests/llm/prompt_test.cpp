// Prompt templates: parsing (system/user markers, unknown placeholders named with file and
// line), rendering from PromptInputs, the built-in prompts/kernel.md, and the failure log
// (compile errors trimmed to the first few, the last few failures kept).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "llm/llm.h"
#include "support/error.h"

namespace ollie::llm {
namespace {

std::string error_of(const std::string& text, const std::string& name) {
  try {
    parse_prompt_template(text, name);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Prompt, RendersEveryPlaceholder) {
  PromptTemplate t = parse_prompt_template(
      "spec={{spec}}\nheader={{ header }}\nhw={{hardware}}\nbest={{best_kernel}}\n"
      "time={{best_time}} roof={{roofline_fraction}}\n{{failures}}\n",
      "t.md");
  PromptInputs in;
  in.spec = "def f(x): return x";
  in.header = "extern \"C\" void ollie_kernel(const float*, float*, const int64_t*);";
  in.hardware = "avx2, 8 cores";
  in.best_kernel = "void k() {}";
  in.best_seconds = 0.0125;
  in.roofline_fraction = 0.4;
  in.failures = {{"wrong", "normal suite (seed 7, M=5): out0[3] = 1 expected 2"}};
  ModelRequest r = render_prompt(t, in);
  EXPECT_EQ(r.system, "");
  EXPECT_NE(r.user.find("spec=def f(x): return x\n"), std::string::npos) << r.user;
  EXPECT_NE(r.user.find("header=extern \"C\" void ollie_kernel"), std::string::npos);
  EXPECT_NE(r.user.find("hw=avx2, 8 cores"), std::string::npos);
  EXPECT_NE(r.user.find("best=void k() {}"), std::string::npos);
  EXPECT_NE(r.user.find("time=12.500 ms roof=40.0%"), std::string::npos) << r.user;
  EXPECT_NE(r.user.find("wrong"), std::string::npos);
  EXPECT_NE(r.user.find("out0[3] = 1 expected 2"), std::string::npos);
  EXPECT_EQ(r.user.find("{{"), std::string::npos);
}

TEST(Prompt, EmptyInputsRenderAsNoneYet) {
  PromptTemplate t = parse_prompt_template(
      "{{best_kernel}} {{best_time}} {{roofline_fraction}} {{failures}}", "t.md");
  ModelRequest r = render_prompt(t, {});
  EXPECT_EQ(r.user, "(none yet) (not timed yet) (unknown) (none yet)\n");
}

TEST(Prompt, ValuesAreNotExpandedAgain) {
  PromptTemplate t = parse_prompt_template("{{spec}}", "t.md");
  PromptInputs in;
  in.spec = "# a spec that mentions {{failures}}";
  EXPECT_EQ(render_prompt(t, in).user, "# a spec that mentions {{failures}}\n");
}

TEST(Prompt, MarkersSplitSystemAndUserAndTextBeforeThemIsNotSent) {
  PromptTemplate t = parse_prompt_template(
      "# notes for the reader\n<!-- system -->\nYou are fast.\n<!-- user -->\nMake {{spec}} "
      "faster.\n",
      "t.md");
  EXPECT_EQ(t.system, "You are fast.\n");
  EXPECT_EQ(t.user, "Make {{spec}} faster.\n");
  PromptInputs in;
  in.spec = "f";
  ModelRequest r = render_prompt(t, in);
  EXPECT_EQ(r.system, "You are fast.\n");
  EXPECT_EQ(r.user, "Make f faster.\n");
}

TEST(Prompt, UnknownPlaceholderNamesFileAndLine) {
  std::string e =
      error_of("line one\nline two {{spec}}\nline three {{best_kernal}}\n", "my/prompt.md");
  EXPECT_NE(e.find("my/prompt.md:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("{{best_kernal}}"), std::string::npos) << e;
  EXPECT_NE(e.find("{{best_kernel}}"), std::string::npos) << e;  // the known ones are listed
}

TEST(Prompt, BracesThatAreNotPlaceholdersAreText) {
  PromptTemplate t = parse_prompt_template("float a[2][2] = {{1, 2}, {3, 4}};", "t.md");
  EXPECT_EQ(render_prompt(t, {}).user, "float a[2][2] = {{1, 2}, {3, 4}};\n");
}

TEST(Prompt, TemplateWithoutUserMessageIsAnError) {
  std::string e = error_of("<!-- system -->\nonly a system prompt\n", "s.md");
  EXPECT_NE(e.find("s.md"), std::string::npos) << e;
  EXPECT_NE(e.find("no user message"), std::string::npos) << e;
}

TEST(Prompt, LoadsFromAFileAndNamesAMissingOne) {
  auto path = std::filesystem::temp_directory_path() /
              ("ollie_prompt_test_" + std::to_string(::getpid()) + ".md");
  {
    std::ofstream out(path);
    out << "ok {{spec}}\n{{nope}}\n";
  }
  try {
    load_prompt_template(path.string());
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ":2:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(load_prompt_template(path.string()), UserError);
}

TEST(Prompt, TheBuiltInTemplateIsTheFileAndUsesEveryPlaceholder) {
  PromptTemplate built_in = default_prompt_template();
  PromptTemplate file = load_prompt_template(std::string(OLLIE_SOURCE_DIR) + "/prompts/kernel.md");
  EXPECT_EQ(built_in.system, file.system);
  EXPECT_EQ(built_in.user, file.user);
  EXPECT_FALSE(built_in.system.empty());
  for (const std::string& name : placeholder_names())
    EXPECT_NE(built_in.user.find("{{" + name + "}}"), std::string::npos) << name;
  PromptInputs in;
  in.spec = "SPEC-TEXT";
  ModelRequest r = render_prompt(built_in, in);
  EXPECT_NE(r.user.find("SPEC-TEXT"), std::string::npos);
  EXPECT_EQ(r.user.find("{{"), std::string::npos);
}

TEST(Failures, CompileErrorsAreTrimmedToTheFirstFew) {
  std::string log;
  for (int i = 1; i <= 6; ++i)
    log += "k.cpp:" + std::to_string(i) + ":5: error: problem " + std::to_string(i) +
           "\n    code line\n      ^\n";
  std::string trimmed = trim_compile_errors(log, 3);
  EXPECT_NE(trimmed.find("problem 3"), std::string::npos);
  EXPECT_EQ(trimmed.find("problem 4"), std::string::npos);
  EXPECT_NE(trimmed.find("code line"), std::string::npos);  // the context of a kept error
  EXPECT_NE(trimmed.find("3 more errors"), std::string::npos) << trimmed;
}

TEST(Failures, TheLogKeepsTheLastFewTrimmed) {
  FailureLog log(/*keep=*/2, /*max_compile_errors=*/1, /*max_lines=*/2);
  log.add("wrong", "normal suite (seed 1, M=5): out0[0] = 3 expected 4\nsecond line\nthird line\n");
  log.add("compile-error", "a.cpp:1:1: error: first\na.cpp:2:1: error: second\n");
  log.add("crash", "signal 11");
  ASSERT_EQ(log.recent().size(), 2u);
  EXPECT_EQ(log.recent()[0].verdict, "compile-error");
  EXPECT_NE(log.recent()[0].diagnostic.find("first"), std::string::npos);
  EXPECT_EQ(log.recent()[0].diagnostic.find("error: second"), std::string::npos);
  EXPECT_EQ(log.recent()[1].verdict, "crash");

  FailureLog lines(3, 3, 2);
  lines.add("wrong",
            "normal suite (seed 1, M=5): out0[0] = 3 expected 4\nsecond line\nthird line\n");
  EXPECT_NE(lines.recent()[0].diagnostic.find("out0[0] = 3 expected 4"), std::string::npos);
  EXPECT_EQ(lines.recent()[0].diagnostic.find("third line"), std::string::npos);

  FailureLog chars(3, 3, 100, /*max_chars=*/50);
  chars.add("wrong", std::string(500, 'x'));
  EXPECT_LT(chars.recent()[0].diagnostic.size(), 80u);
}

// A refusal keeps every reason (the model must fix them all), where another verdict's
// diagnostic is cut to its first lines.
TEST(Failures, ARefusalKeepsEveryReason) {
  FailureLog log(3, 3, /*max_lines=*/2);
  const std::string refusal =
      "refused: the kernel asks for what a kernel never needs:\n"
      "kernel.cpp:3:5: `getenv` reads or changes the environment\n"
      "kernel.cpp:9:1: inline assembly\n"
      "kernel.cpp:12:17: names /proc\n";
  log.add("refused", refusal);
  EXPECT_EQ(log.recent()[0].diagnostic, refusal);
  log.add("crash", refusal);
  EXPECT_EQ(log.recent()[1].diagnostic.find("names /proc"), std::string::npos);
}

TEST(Failures, RenderedFailuresReachThePrompt) {
  FailureLog log;
  log.add("compile-error", "k.cpp:3:1: error: 'foo' was not declared in this scope\n");
  PromptInputs in;
  in.failures.assign(log.recent().begin(), log.recent().end());
  ModelRequest r = render_prompt(parse_prompt_template("{{failures}}", "t.md"), in);
  EXPECT_NE(r.user.find("compile-error"), std::string::npos);
  EXPECT_NE(r.user.find("'foo' was not declared"), std::string::npos);
}

}  // namespace
}  // namespace ollie::llm
