// extract_code on every answer shape: fenced with cpp / c++ / no language / tildes,
// several blocks (the one defining ollie_kernel, else the longest C++ one), a fence left
// open by a cut answer, unfenced code with prose around it, and answers without code.
#include <gtest/gtest.h>

#include "llm/llm.h"

namespace ollie::llm {
namespace {

const std::string kKernel =
    "#include <cstdint>\n"
    "extern \"C\" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {\n"
    "  for (int64_t i = 0; i < dims[0]; ++i) { out0[i] = x[i] * 2; }\n"
    "}\n";

TEST(Extract, CppFence) {
  ExtractedCode c = extract_code("Here it is:\n\n```cpp\n" + kKernel + "```\n\nDone.");
  ASSERT_TRUE(c.found) << c.how;
  EXPECT_EQ(c.code, kKernel);
  EXPECT_EQ(c.fenced_blocks, 1);
}

TEST(Extract, CPlusPlusFenceAndNoLanguageFenceAndTildes) {
  for (std::string open : {"```c++", "```", "```C++ title=kernel.cpp", "~~~cpp", "````cpp"}) {
    std::string close = open.substr(0, open.find_first_not_of(open[0]));
    ExtractedCode c = extract_code("Text.\n" + open + "\n" + kKernel + close + "\nMore text.\n");
    ASSERT_TRUE(c.found) << open << ": " << c.how;
    EXPECT_EQ(c.code, kKernel) << open;
  }
}

TEST(Extract, IndentedFence) {
  ExtractedCode c = extract_code("1. The kernel:\n   ```cpp\n" + kKernel + "   ```\n");
  ASSERT_TRUE(c.found) << c.how;
  EXPECT_EQ(c.code, kKernel);
}

TEST(Extract, SeveralBlocksPicksTheOneDefiningTheKernel) {
  std::string helper =
      "static inline float twice(float v) {\n  return v * 2; // a long helper, longer than the "
      "kernel block itself, to be sure length does not decide\n}\n";
  std::string answer =
      "First a helper idea:\n```cpp\n" + helper +
      "```\nThe declaration:\n```cpp\n"
      "extern \"C\" void ollie_kernel(const float* x, float* out0, const int64_t* dims);\n```\n"
      "And the kernel:\n```cpp\n" +
      kKernel + "```\nBuild with:\n```bash\ng++ -O3 k.cpp\n```\n";
  ExtractedCode c = extract_code(answer);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, kKernel);
  EXPECT_EQ(c.fenced_blocks, 4);
  EXPECT_NE(c.how.find("block 3 of 4"), std::string::npos) << c.how;
}

TEST(Extract, TwoDefiningBlocksPicksTheLast) {
  std::string draft =
      "extern \"C\" void ollie_kernel(const float* x, float* out0, const int64_t* dims) { /* draft "
      "*/ }\n";
  ExtractedCode c =
      extract_code("Draft:\n```cpp\n" + draft + "```\nFinal:\n```cpp\n" + kKernel + "```\n");
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, kKernel);
}

TEST(Extract, NoBlockDefinesTheKernelPicksTheLongestCppBlock) {
  std::string small = "int a = 1;\nint f() { return a; }\n";
  std::string large =
      "#include <cmath>\nstatic float g(float v) {\n  return std::sqrt(v) + 1.0f;\n}\n";
  ExtractedCode c = extract_code("```cpp\n" + small +
                                 "```\n```python\nimport numpy as np\nprint(np.ones(3)) # {a;}\n"
                                 "# a long python block that is longer than the rest\n```\n```\n" +
                                 large + "```\n");
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, large);
  EXPECT_NE(c.how.find("longest"), std::string::npos);
}

TEST(Extract, AFenceLeftOpenByACutAnswer) {
  ExtractedCode c = extract_code("Here:\n```cpp\n" + kKernel);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, kKernel);
  EXPECT_NE(c.how.find("not closed"), std::string::npos) << c.how;
}

TEST(Extract, UnfencedCodeWithProseAround) {
  std::string code =
      "#include <cstdint>\n#include <immintrin.h>\n\n"
      "static inline float twice(float v) {\n"
      "  // doubles v\n"
      "  return v * 2;\n"
      "}\n\n"
      "extern \"C\"\n"
      "void ollie_kernel(const float* x,\n"
      "                  float* out0,\n"
      "                  const int64_t* dims) {\n"
      "  const char* note = \"} not a brace\";\n"
      "  (void)note;\n"
      "  for (int64_t i = 0; i < dims[0]; ++i) {\n"
      "    out0[i] = twice(x[i]);\n"
      "  }\n"
      "}\n";
  std::string answer =
      "Sure! Here's the kernel, which uses a helper.\nIt avoids the division:\n\n" + code +
      "\nThis version is faster because it doesn't divide.\nLet me know if you'd like more.\n";
  ExtractedCode c = extract_code(answer);
  ASSERT_TRUE(c.found) << c.how;
  EXPECT_EQ(c.code, code);
  EXPECT_EQ(c.fenced_blocks, 0);
  EXPECT_NE(c.how.find("unfenced"), std::string::npos);
}

TEST(Extract, UnfencedWithOnlyTheKernel) {
  ExtractedCode c = extract_code(kKernel);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, kKernel);
}

TEST(Extract, NoCodeAtAll) {
  ExtractedCode c = extract_code(
      "I am sorry, I cannot improve this kernel further; it already reaches the roofline.");
  EXPECT_FALSE(c.found);
  EXPECT_TRUE(c.code.empty());
  EXPECT_NE(c.how.find("no code"), std::string::npos);
}

TEST(Extract, AMentionOfTheKernelIsNotCode) {
  ExtractedCode c = extract_code(
      "You could change `ollie_kernel(x, out, dims)` to block its loops.\nThat would help.");
  EXPECT_FALSE(c.found) << c.code;
}

TEST(Extract, OnlyNonCppBlocksIsNoCode) {
  ExtractedCode c =
      extract_code("Run this:\n```bash\nmake -j\n```\nand this:\n```text\nresult\n```\n");
  EXPECT_FALSE(c.found) << c.code;
  EXPECT_EQ(c.fenced_blocks, 2);
  EXPECT_NE(c.how.find("none of the 2 fenced blocks"), std::string::npos) << c.how;
}

TEST(Extract, EmptyAnswer) { EXPECT_FALSE(extract_code("").found); }

TEST(Extract, CrlfLineEnds) {
  std::string crlf;
  for (char ch : "```cpp\n" + kKernel + "```\n") {
    if (ch == '\n') crlf += '\r';
    if (ch) crlf += ch;
  }
  ExtractedCode c = extract_code(crlf);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.code, kKernel);
}

}  // namespace
}  // namespace ollie::llm
