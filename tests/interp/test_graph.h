// Test helpers for interp/: build small graphs with ir::Builder (params, outputs,
// constant shapes) and make input tensors, without the spec front end.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "ir/ir.h"

namespace ollie::interp::testing {

inline ir::Shape S(std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::DimExpr::constant(d));
  return s;
}

inline Tensor T(ir::DType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = std::move(data);
  return t;
}

// A graph under construction: add params with in(), mark results with out().
struct TestGraph {
  ir::Graph g;
  ir::Builder b{g};

  ir::ValueId in(const std::string& name, ir::DType dtype, const ir::Shape& shape) {
    g.params.push_back({name, dtype, shape});
    ir::ValueId v = b.input(static_cast<int>(g.params.size()) - 1, name, dtype, shape);
    g.inputs.push_back(v);
    for (const auto& d : shape)
      for (const auto& s : d.symbols())
        if (std::find(g.dims.begin(), g.dims.end(), s) == g.dims.end()) g.dims.push_back(s);
    return v;
  }
  void out(ir::ValueId v) {
    const ir::Node& n = g.node(v);
    g.results.push_back({"out" + std::to_string(g.results.size()), n.dtype, n.shape});
    g.outputs.push_back(v);
  }
  ir::ValueId c(double value, ir::DType dtype, const ir::Shape& shape) {
    ir::ValueId s = b.constant(value, dtype);
    if (shape.empty()) return s;
    ir::Shape ones(shape.size(), ir::DimExpr::constant(1));
    return b.broadcast(b.reshape(s, ones), shape);
  }
  Result run(const std::vector<Tensor>& inputs) { return evaluate(g, inputs); }
};

}  // namespace ollie::interp::testing
