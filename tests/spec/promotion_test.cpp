// A float64 result where the annotation says float32 names where the float64 entered
// (issue 17): picoGPT's GELU constant np.sqrt(2 / np.pi) is a NumPy float64 scalar, which
// numpy 2 does not treat as weak.
#include <gtest/gtest.h>

#include <string>

#include "spec/spec.h"

namespace {

std::string hint_of(const std::string& src) {
  try {
    ollie::spec::compile_spec("pico.py", src, {});
  } catch (const ollie::SpecError& e) {
    const std::string what = e.what();
    const auto h = what.find("hint: ");
    return h == std::string::npos ? "" : what.substr(h + 6);
  }
  ADD_FAILURE() << "no SpecError";
  return "";
}

const char* const kGelu = R"(import math
import numpy as np

DIMS = dict(T=8, D=16)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(SQRT * (x + 0.044715 * x**3)))


def block(x: "f32[T, D]") -> "f32[T, D]":
    return x + gelu(x)
)";

std::string with(const std::string& sqrt) {
  std::string s = kGelu;
  s.replace(s.find("SQRT"), 4, sqrt);
  return s;
}

TEST(Promotion, AFloat64ScalarThatPromotesIsNamedWithItsLine) {
  const std::string hint = hint_of(with("np.sqrt(2 / np.pi)"));
  EXPECT_NE(hint.find("float64 enters at the float64 constant 0.63661977"), std::string::npos)
      << hint;
  EXPECT_NE(hint.find("line 8:35"), std::string::npos) << hint;
  EXPECT_NE(hint.find("math.sqrt(2 / math.pi)"), std::string::npos) << hint;
}

TEST(Promotion, APythonFloatStaysWeakAndCompiles) {
  EXPECT_NO_THROW(ollie::spec::compile_spec("pico.py", with("math.sqrt(2 / math.pi)"), {}));
}

}  // namespace
