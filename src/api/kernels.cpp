// The one-kernel part of the api (api.h): the reference's outputs, emitting a kernel
// under a schedule and a name, verifying and benching one.
#include "api/api.h"
#include "emit/emit.h"
#include "loops/loops.h"

namespace ollie::api {

interp::Result eval(const ir::Graph& graph, const std::vector<interp::Tensor>& inputs,
                    bool derived_only, int64_t seed) {
  interp::Result result = interp::evaluate(graph, inputs);
  interp::EnsembleOptions ensemble;
  ensemble.seed = seed >= 0 ? static_cast<uint64_t>(seed) : 0;
  if (derived_only) ensemble.members = 0;
  interp::tighten(result,
                  interp::evaluate_members(graph, inputs, 0, ensemble.members, ensemble.seed),
                  ensemble);
  return result;
}

EmittedKernel emit(const ir::Graph& graph, const EmitOptions& options) {
  emit::check_symbol(options.symbol);
  const loops::Schedule schedule = options.schedule.empty()
                                       ? loops::default_schedule(graph)
                                       : loops::parse_schedule(options.schedule, "--schedule");
  EmittedKernel out;
  out.schedule = loops::to_text(schedule);
  out.source = emit::emit_kernel(loops::lower(graph, schedule), graph,
                                 {.symbol = options.symbol, .schedule_text = out.schedule});
  out.header = emit::emit_header(graph, options.symbol);
  return out;
}

verify::Report verify(const ir::Graph& graph, const std::string& kernel_source,
                      const verify::GraphAt& at, const verify::Options& options) {
  emit::check_symbol(options.kernel_symbol);
  return verify::verify(graph, kernel_source, at, options);
}

measure::BenchReport bench(const ir::Graph& graph, const std::vector<measure::BenchKernel>& kernels,
                           const measure::BenchOptions& options) {
  emit::check_symbol(options.kernel_symbol);
  return measure::bench(graph, kernels, options);
}

}  // namespace ollie::api
