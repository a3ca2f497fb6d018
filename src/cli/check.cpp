// `ollie check`: the IR, bound shapes, FLOPs and compulsory bytes of a spec (or, with --json,
// the entry, dims, shapes and cost as JSON), after a rewrite chain with --rewrites.
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"

namespace ollie::cli {

int run_check(const SpecFlags& flags, bool json, const std::string& rewrites) {
  const ir::Graph graph = with_rewrites(load(flags), rewrites);
  if (json) {
    std::cout << api::check_facts_json(graph, 2) << "\n";
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
