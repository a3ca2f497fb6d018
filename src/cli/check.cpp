// `ollie check`: the IR, bound shapes, FLOPs and compulsory bytes of a spec (or, with --json,
// the entry, dims, shapes and cost as JSON), after a rewrite chain with --rewrites.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"

namespace ollie::cli {

namespace {

// The facts a benchmark script needs, without the IR text.
void print_json(const ir::Graph& graph) {
  nlohmann::json j;
  j["entry"] = graph.entry;
  j["dims_order"] = graph.dims;
  nlohmann::json dims = nlohmann::json::object();
  for (const auto& [name, value] : graph.bound_dims) dims[name] = value;
  j["dims"] = dims;
  auto tensors = [&](const std::vector<ir::Param>& ps) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : ps)
      a.push_back({{"name", p.name},
                   {"dtype", ir::dtype_name(p.dtype)},
                   {"shape", ir::shape_str(p.shape)},
                   {"bound_shape", ir::evaluate_shape(p.shape, graph.bound_dims)}});
    return a;
  };
  j["params"] = tensors(graph.params);
  j["results"] = tensors(graph.results);
  ir::Cost c = ir::cost(graph);
  j["flops"] = c.flops;
  j["compulsory_bytes"] = c.compulsory_bytes;
  j["intensity"] = c.compulsory_bytes > 0
                       ? static_cast<double>(c.flops) / static_cast<double>(c.compulsory_bytes)
                       : 0.0;
  std::cout << j.dump(2) << "\n";
}

}  // namespace

int run_check(const SpecFlags& flags, bool json, const std::string& rewrites) {
  const ir::Graph graph = with_rewrites(load(flags), rewrites);
  if (json) {
    print_json(graph);
    return 0;
  }
  std::cout << ir::to_text(graph) << "\n";
  std::cout << "bound shapes:\n";
  auto show = [&](const ir::Param& p) {
    std::cout << fmt::format("  {:<10} {}{} = {}\n", p.name, ir::dtype_name(p.dtype),
                             ir::shape_str(p.shape), bound_shape_str(p.shape, graph.bound_dims));
  };
  for (const auto& p : graph.params) show(p);
  for (const auto& r : graph.results) show(r);
  ir::Cost c = ir::cost(graph);
  std::cout << "cost:\n";
  std::cout << fmt::format("  flops             {}\n", grouped(c.flops));
  std::cout << fmt::format("  compulsory bytes  {}  (inputs read once, outputs written once)\n",
                           grouped(c.compulsory_bytes));
  if (c.compulsory_bytes > 0)
    std::cout << fmt::format(
        "  intensity         {:.3g} flop/byte\n",
        static_cast<double>(c.flops) / static_cast<double>(c.compulsory_bytes));
  return 0;
}

}  // namespace ollie::cli
