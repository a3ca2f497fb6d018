// `ollie eval`: the reference values and per-element error bounds of a spec on inputs
// (the verifier's tolerance: the derived bound tightened by the honest ensemble).
#include <fmt/format.h>

#include <cmath>
#include <iostream>

#include "cli/cli.h"

namespace ollie::cli {

int run_eval(const SpecFlags& flags, const EvalFlags& eval) {
  ir::Graph graph = load(flags);
  check_reference_fits(graph);
  std::vector<interp::Tensor> inputs = obtain_inputs(graph, eval.inputs, eval.seed);
  interp::Result result = interp::evaluate(graph, inputs);
  interp::EnsembleOptions ensemble;
  ensemble.seed = eval.seed >= 0 ? static_cast<uint64_t>(eval.seed) : 0;
  if (eval.derived_only) ensemble.members = 0;
  interp::tighten(result,
                  interp::evaluate_members(graph, inputs, 0, ensemble.members, ensemble.seed),
                  ensemble);

  for (size_t i = 0; i < result.values.size(); ++i) {
    const auto& v = result.values[i];
    const auto& b = result.bounds[i];
    double max_abs = 0, max_bound = 0, max_rel = 0;
    size_t unbounded = 0;
    for (size_t k = 0; k < v.data.size(); ++k) {
      max_abs = std::max(max_abs, std::fabs(v.data[k]));
      if (std::isinf(b.data[k])) {
        ++unbounded;
        continue;
      }
      max_bound = std::max(max_bound, b.data[k]);
      if (v.data[k] != 0 && std::isfinite(v.data[k]))
        max_rel = std::max(max_rel, b.data[k] / std::fabs(v.data[k]));
    }
    const ir::Param& r = graph.results[i];
    std::cout << fmt::format(
        "out{}: {}{} = {}  max|value| {:.6g}  max bound {:.3g}  max bound/|value| {:.3g}\n", i,
        ir::dtype_name(r.dtype), ir::shape_str(r.shape), bound_shape_str(r.shape, graph.bound_dims),
        max_abs, max_bound, max_rel);
    const interp::Criteria& c = result.criteria[i];
    std::cout << fmt::format(
        "  bounded by: honest ensemble {}, derived bound {}, exact {}, nothing {}{}\n", c.ensemble,
        c.derived, c.exact, c.unbounded, eval.derived_only ? " (--derived-only: no ensemble)" : "");
    if (unbounded)
      std::cout << fmt::format(
          "  warning: {} of {} elements have no finite bound (an intermediate overflows "
          "the dtype{}); only the verifier's 1% relative floor checks them{}\n",
          unbounded, v.data.size(),
          eval.derived_only ? " or divides by a value that may be zero"
                            : " even in honest float arithmetic",
          2 * c.unbounded > c.finite() ? ", so a pass there would be weak" : "");
  }
  if (!eval.out.empty() && has_suffix(eval.out, ".npy")) {
    if (result.values.size() != 1)
      throw UserError(
          fmt::format("--out {}: {} has {} results; an .npy file holds one array: use an .npz",
                      eval.out, graph.entry, result.values.size()));
    std::string bound_path = npy_sibling(eval.out, "_bound");
    npy::write_npy(eval.out, to_array(result.values[0]));
    npy::write_npy(bound_path, to_array(result.bounds[0]));
    std::cout << "wrote " << eval.out << " (reference values) and " << bound_path
              << " (error bounds), float64\n";
  } else if (!eval.out.empty()) {
    npy::ArrayList arrays;
    for (size_t i = 0; i < result.values.size(); ++i) {
      arrays.emplace_back("out" + std::to_string(i), to_array(result.values[i]));
      arrays.emplace_back("out" + std::to_string(i) + "_bound", to_array(result.bounds[i]));
    }
    npy::write_npz(eval.out, arrays);
    std::cout << "wrote " << eval.out
              << " (out<i>: reference values, out<i>_bound: error bounds, float64)\n";
  }
  if (!eval.save_inputs.empty()) {
    npy::ArrayList arrays;
    for (size_t i = 0; i < inputs.size(); ++i)
      arrays.emplace_back(graph.params[i].name, to_array_as(inputs[i], graph.params[i].dtype));
    write_arrays(eval.save_inputs, arrays, "--save-inputs");
    std::cout << "wrote " << eval.save_inputs << " (the inputs)\n";
  }
  return 0;
}

}  // namespace ollie::cli
