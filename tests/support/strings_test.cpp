// Unit tests of support/strings.h (trim, split_lines, the ISO-8601 times) and
// support/sha256.h.
#include <gtest/gtest.h>

#include <regex>

#include "support/sha256.h"
#include "support/strings.h"

namespace {

using namespace ollie;
using Lines = std::vector<std::string>;

TEST(Trim, StripsTheGivenCharactersAtBothEnds) {
  EXPECT_EQ(strings::trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(strings::trim(" \t\r\n"), "");
  EXPECT_EQ(strings::trim(""), "");
  EXPECT_EQ(strings::trim("\nx\n", strings::kLineBlanks), "\nx\n");
  EXPECT_EQ(strings::trim(" x\r ", strings::kLineBlanks), "x");
  EXPECT_EQ(strings::trim("\r x \r", " \t"), "\r x \r");
  EXPECT_EQ(strings::trim(" \tx y\t ", " \t"), "x y");
}

TEST(SplitLines, SplitsAsGetlineDoes) {
  EXPECT_EQ(strings::split_lines(""), Lines{});
  EXPECT_EQ(strings::split_lines("\n"), Lines{""});
  EXPECT_EQ(strings::split_lines("a"), Lines{"a"});
  EXPECT_EQ(strings::split_lines("a\n"), Lines{"a"});
  EXPECT_EQ(strings::split_lines("a\n\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(strings::split_lines("a\n\n"), (Lines{"a", ""}));
  EXPECT_EQ(strings::split_lines("a\r\nb\r"), (Lines{"a\r", "b\r"}));
}

TEST(SplitLines, CrLfDropsTheCarriageReturnEndingALine) {
  EXPECT_EQ(strings::split_lines("a\r\nb\r", strings::LineEnd::CrLf), (Lines{"a", "b"}));
  EXPECT_EQ(strings::split_lines("a\rb\r\r\n", strings::LineEnd::CrLf), (Lines{"a\rb\r"}));
  EXPECT_EQ(strings::split_lines("\r\n\r\n", strings::LineEnd::CrLf), (Lines{"", ""}));
}

TEST(NonemptyLines, DropsEveryEmptyLine) {
  EXPECT_EQ(strings::nonempty_lines(""), Lines{});
  EXPECT_EQ(strings::nonempty_lines("\n\na\n\nb\n"), (Lines{"a", "b"}));
  EXPECT_EQ(strings::nonempty_lines(" \n"), Lines{" "});
}

TEST(Printable, ReplacesWhatIsNotPrintableAscii) {
  EXPECT_EQ(strings::printable(std::string("a\tb\nc\x01\x7f\xc3\xa9\r", 10)), "a\tb\nc?????");
}

TEST(UtcTime, Iso8601WithAndWithoutMilliseconds) {
  EXPECT_TRUE(std::regex_match(strings::utc_now_iso8601(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(std::regex_match(strings::utc_now_iso8601_ms(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string("a\0b", 3)).size(), 64u);
}

}  // namespace
