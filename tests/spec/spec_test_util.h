// Helpers shared by the spec front end's tests: a spec text compiled (as "t.py"), the
// located error it raises, an output's type, op counts, and EXPECT_HAS.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/spec.h"
#include "support/error.h"

namespace ollie::spec::spec_tests {

inline ir::Graph compile(const std::string& src, const SpecOptions& opt = {}) {
  return compile_spec("t.py", src, opt);
}

inline std::string type_of(const ir::Graph& g, ir::ValueId id) {
  return std::string(ir::dtype_name(g.node(id).dtype)) + ir::shape_str(g.node(id).shape);
}
inline std::string out_type(const ir::Graph& g, size_t i = 0) {
  return type_of(g, g.outputs.at(i));
}

inline int count(const ir::Graph& g, ir::OpKind k) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.kind == k;
  return n;
}

// The located error compiling `src` raises: its position, message, hint and whole text.
struct Err {
  int line = 0, col = 0;
  std::string message, hint, what;
};

inline Err error_of(const std::string& src, const SpecOptions& opt = {}) {
  try {
    compile(src, opt);
  } catch (const SpecError& e) {
    const std::string what = e.what();
    const auto h = what.find("hint: ");
    return {e.loc().line, e.loc().col, e.message(),
            h == std::string::npos ? "" : what.substr(h + 6), what};
  }
  ADD_FAILURE() << "no SpecError for:\n" << src;
  return {};
}

}  // namespace ollie::spec::spec_tests

#define EXPECT_HAS(text, part)                               \
  EXPECT_NE(std::string(text).find(part), std::string::npos) \
      << "'" << (text) << "' lacks '" << (part) << "'"
