// The spec front end, stage 1 of the pipeline: a numpy file in, a tensor IR Graph out.
// Owns parsing (parser.h), elaboration with numpy semantics (broadcasting, dtype
// promotion, shape inference over symbolic dims, inlining of helpers) and the
// binding of dims from DIMS and --dims.
#pragma once

#include <string>

#include "ir/ir.h"

namespace ollie::spec {

struct SpecOptions {
  std::string entry;              // empty: the only annotated function
  ir::DimBindings dim_overrides;  // from --dims; override DIMS
};

// Reads and compiles a spec file. Throws UserError (SpecError when located in the file).
ir::Graph load_spec(const std::string& path, const SpecOptions& options);

// Compiles spec source text; `file` is used in messages only.
ir::Graph compile_spec(const std::string& file, const std::string& source,
                       const SpecOptions& options);

// Parses the value of --dims, "M=256,N=128" (spaces allowed). Throws UserError naming
// the flag and the bad part.
ir::DimBindings parse_dims_flag(const std::string& text);

}  // namespace ollie::spec
