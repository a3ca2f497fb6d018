// The extension module ollie._ollie: the public C++ API (api/api.h) for the Python package
// (python/ollie/). check, eval, emit and verify here; optimize and the in-process kernel in
// their own files. Results are JSON text or numpy arrays; python/ollie/ makes them Python
// objects. Long calls release the GIL.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "bindings.h"

namespace ollie::python {
namespace {

// `ollie check --json`'s facts, the axes of every shape as text, and the IR.
std::string check(const std::string& spec, const std::string& entry, const std::string& dims,
                  const std::string& rewrites) {
  return api::check_facts_json(api::with_rewrites(api::load(spec_ref(spec, entry, dims)), rewrites),
                               -1, true);
}

nlohmann::json criteria_json(const interp::Criteria& c) {
  return {{"exact", c.exact},
          {"derived", c.derived},
          {"ensemble", c.ensemble},
          {"unbounded", c.unbounded}};
}

// `ollie eval`: values, bounds and criteria per output; the inputs used (drawn as verify's
// normal suite from `seed` when none are given), in float64.
nb::dict eval(const std::string& spec, const std::string& entry, const std::string& dims,
              std::optional<std::vector<F64Array>> inputs, int64_t seed, bool derived_only) {
  const ir::Graph graph = api::load(spec_ref(spec, entry, dims));
  api::check_reference_fits(graph);
  std::vector<interp::Tensor> tensors;
  if (inputs)
    tensors = to_tensors(*inputs, graph);
  else
    tensors = verify::make_inputs(graph, static_cast<uint64_t>(seed), verify::Distribution::Normal);
  interp::Result result;
  {
    nb::gil_scoped_release unlocked;
    result = api::eval(graph, tensors, derived_only, seed);
  }
  nb::list values, bounds, criteria, used;
  for (size_t i = 0; i < result.values.size(); ++i) {
    values.append(to_numpy(std::move(result.values[i].data), result.values[i].shape));
    bounds.append(to_numpy(std::move(result.bounds[i].data), result.bounds[i].shape));
    criteria.append(criteria_json(result.criteria.at(i)).dump());
  }
  for (interp::Tensor& t : tensors) used.append(to_numpy(std::move(t.data), t.shape));
  nb::dict out;
  out["values"] = values;
  out["bounds"] = bounds;
  out["criteria"] = criteria;
  out["inputs"] = used;
  return out;
}

nb::dict emit(const std::string& spec, const std::string& entry, const std::string& dims,
              const std::string& schedule, const std::string& rewrites, const std::string& symbol) {
  const ir::Graph graph = api::with_rewrites(api::load(spec_ref(spec, entry, dims)), rewrites);
  const api::EmittedKernel k = api::emit(graph, {.schedule = schedule, .symbol = symbol});
  nb::dict out;
  out["source"] = k.source;
  out["header"] = k.header;
  out["schedule"] = k.schedule;
  out["entry"] = graph.entry;
  return out;
}

struct VerifyArgs {
  std::string level = "quick";
  uint64_t seed = 0;
  double timeout = 60;
  int threads = 0;
  std::string compiler;
  bool accept_weak = false;
  std::string symbol = "ollie_kernel";
};

// `ollie verify`: the certificate as JSON text (spec_sha256: the spec file's hash).
std::string verify_kernel(const std::string& spec, const std::string& entry,
                          const std::string& dims, const std::string& kernel_source,
                          const std::string& spec_sha256, const VerifyArgs& a,
                          std::optional<std::vector<F64Array>> inputs) {
  const api::SpecRef ref = spec_ref(spec, entry, dims);
  const ir::Graph graph = api::load(ref);
  api::check_reference_fits(graph);
  verify::Options options;
  if (a.level == "full")
    options.level = verify::Level::Full;
  else if (a.level != "quick")
    throw UserError("level='" + a.level + "': write 'quick' or 'full'");
  options.seed = a.seed;
  options.timeout_seconds = a.timeout;
  options.threads = a.threads;
  options.compiler = a.compiler;
  options.accept_weak = a.accept_weak;
  options.kernel_symbol = a.symbol;
  if (inputs) options.user_inputs = to_tensors(*inputs, graph);
  nb::gil_scoped_release unlocked;
  const verify::Report report = api::verify(graph, kernel_source, api::graph_at(ref), options);
  return verify::certificate_json(graph, spec_sha256, report, options);
}

}  // namespace
}  // namespace ollie::python

NB_MODULE(_ollie, m) {
  namespace nb = nanobind;
  using namespace ollie::python;
  m.doc() = "The ollie C++ API (src/api/api.h); use the ollie package, not this module.";
  nb::exception<ollie::UserError>(m, "OllieError", PyExc_ValueError);
  m.def("check", &check, nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("rewrites"));
  m.def("eval", &eval, nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("inputs").none(),
        nb::arg("seed"), nb::arg("derived_only"));
  m.def("emit", &emit, nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("schedule"),
        nb::arg("rewrites"), nb::arg("symbol"));
  m.def(
      "verify",
      [](const std::string& spec, const std::string& entry, const std::string& dims,
         const std::string& kernel_source, const std::string& spec_sha256, const std::string& level,
         uint64_t seed, double timeout, int threads, const std::string& compiler, bool accept_weak,
         const std::string& symbol, std::optional<std::vector<F64Array>> inputs) {
        const VerifyArgs a{level, seed, timeout, threads, compiler, accept_weak, symbol};
        return verify_kernel(spec, entry, dims, kernel_source, spec_sha256, a, std::move(inputs));
      },
      nb::arg("spec"), nb::arg("entry"), nb::arg("dims"), nb::arg("kernel_source"),
      nb::arg("spec_sha256"), nb::arg("level"), nb::arg("seed"), nb::arg("timeout"),
      nb::arg("threads"), nb::arg("compiler"), nb::arg("accept_weak"), nb::arg("symbol"),
      nb::arg("inputs").none());
  bind_optimize(m);
  bind_kernel(m);
}
