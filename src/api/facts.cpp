// The facts of a spec as JSON (api.h check_facts_json): entry, dims, the params' and
// results' shapes (as text, per axis and bound) and dtypes, FLOPs, compulsory bytes and
// intensity; what `ollie check --json` prints and the Python package's check returns.
#include <nlohmann/json.hpp>

#include "api/api.h"

namespace ollie::api {

namespace {

nlohmann::json tensors_json(const std::vector<ir::Param>& params, const ir::Graph& graph) {
  nlohmann::json list = nlohmann::json::array();
  for (const ir::Param& p : params) {
    nlohmann::json axes = nlohmann::json::array();
    for (const ir::DimExpr& d : p.shape) {
      const std::string text = ir::shape_str({d});
      axes.push_back(text.substr(1, text.size() - 2));  // "[M]" -> "M"
    }
    list.push_back({{"name", p.name},
                    {"dtype", ir::dtype_name(p.dtype)},
                    {"shape", ir::shape_str(p.shape)},
                    {"axes", axes},
                    {"bound_shape", ir::evaluate_shape(p.shape, graph.bound_dims)}});
  }
  return list;
}

}  // namespace

std::string check_facts_json(const ir::Graph& graph, int indent, bool with_ir) {
  nlohmann::json j;
  j["entry"] = graph.entry;
  j["dims_order"] = graph.dims;
  nlohmann::json bound = nlohmann::json::object();
  for (const auto& [name, value] : graph.bound_dims) bound[name] = value;
  j["dims"] = bound;
  j["params"] = tensors_json(graph.params, graph);
  j["results"] = tensors_json(graph.results, graph);
  const ir::Cost c = ir::cost(graph);
  j["flops"] = c.flops;
  j["compulsory_bytes"] = c.compulsory_bytes;
  j["bf16_product_flops"] = c.bf16_product_flops;  // at the bf16 peak in the roofline
  j["intensity"] = c.compulsory_bytes > 0
                       ? static_cast<double>(c.flops) / static_cast<double>(c.compulsory_bytes)
                       : 0.0;
  if (with_ir) j["ir"] = ir::to_text(graph);
  return j.dump(indent);
}

}  // namespace ollie::api
