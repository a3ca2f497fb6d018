// Lexer and parser for the Python subset of spec files (docs/spec-language.md).
// Syntax outside the subset (loops, classes, lambdas, ...) is a SpecError with
// file:line:col, a caret and what to write instead. Never crashes or hangs on any input.
#pragma once

#include <string>

#include "spec/ast.h"

namespace ollie::spec {

// Parses `source` (the contents of `file`). Throws SpecError on bad input.
Module parse_module(const std::string& file, const std::string& source);

}  // namespace ollie::spec
