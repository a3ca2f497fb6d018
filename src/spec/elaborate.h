// Elaboration: gives a parsed Module numpy meaning and builds the tensor IR of its entry.
// Module constants and DIMS are evaluated, helpers are inlined at each call, numpy
// broadcasting and dtype promotion (NEP 50: Python scalars are weak) are applied and
// every shape is inferred over symbolic dims.
#pragma once

#include "ir/ir.h"
#include "spec/ast.h"
#include "spec/spec.h"

namespace ollie::spec {

ir::Graph elaborate(const Module& module, const SpecOptions& options);

}  // namespace ollie::spec
