// `ollie run-kernel`: compiles any kernel source in the ABI, runs it in the runner child
// process on the spec's inputs, and compares its outputs with the reference and its
// derived bound. (The verifier's `ollie verify` is the full contract check; this is the
// quick "does my kernel run and agree" loop.)
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "build/build.h"
#include "build/screen.h"
#include "cli/cli.h"
#include "emit/emit.h"
#include "runner/runner.h"

namespace ollie::cli {

namespace {

std::string read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read kernel '{}': {}", path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first lines of a compiler log: enough to see the first errors.
std::string head_lines(const std::string& text, int lines) {
  size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos || pos >= text.size()) return text;
  return text.substr(0, pos) + "... (" +
         std::to_string(std::count(text.begin() + static_cast<long>(pos), text.end(), '\n')) +
         " more lines)\n";
}

}  // namespace

int run_kernel(const SpecFlags& flags, const RunKernelFlags& run) {
  emit::check_symbol(run.symbol);
  ir::Graph graph = load(flags);
  check_reference_fits(graph);
  const std::string source = read_source(run.kernel_path);

  build::Request request;
  request.units = {{"kernel.cpp", source},
                   {"ollie_adapter.cpp", build::adapter_source(graph, {.kernel = run.symbol})}};
  if (!run.compiler.empty()) request.toolchain.compiler = run.compiler;
  build::Driver driver;
  const build::ScreenedResult screened = build::compile_screened(driver, request);
  if (screened.refused()) {
    std::cerr << fmt::format("error: {}: {}", run.kernel_path, screened.message());
    return 1;
  }
  const build::Result& built = screened.built;
  if (!built.ok) {
    std::cerr << fmt::format("error: {} does not compile ({}):\n{}", run.kernel_path,
                             built.compiler_version, head_lines(built.log, 30));
    return 1;
  }
  std::cout << fmt::format("built {} ({}{})\n", run.kernel_path,
                           built.cache_hit ? "cached" : fmt::format("{:.2f} s", built.seconds),
                           ", key " + built.key.substr(0, 12));

  std::vector<interp::Tensor> inputs = obtain_inputs(graph, run.inputs, run.seed);
  runner::Options options;
  options.timeout_seconds = run.timeout_seconds;
  options.threads = run.threads;
  runner::Outcome outcome = runner::run(built.so_path, graph, inputs, options);
  if (outcome.status != runner::Status::Ok) {
    std::cerr << fmt::format("error: the kernel failed: {}: {}\n",
                             runner::status_name(outcome.status), outcome.message);
    return 1;
  }
  std::cout << fmt::format("ran in {:.3f} ms\n", outcome.seconds * 1e3);

  // Agreement with the reference, element by element, within the derived bound.
  interp::Result reference = interp::evaluate(graph, inputs);
  bool agrees = true;
  for (size_t i = 0; i < outcome.outputs.size(); ++i) {
    const auto& got = outcome.outputs[i].data;
    const auto& want = reference.values[i].data;
    const auto& bound = reference.bounds[i].data;
    size_t outside = 0, first = 0;
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      const bool same_special = !std::isfinite(want[k]) &&
                                (got[k] == want[k] || (std::isnan(got[k]) && std::isnan(want[k])));
      const double err = same_special ? 0.0 : std::fabs(got[k] - want[k]);
      const bool ok = same_special || err <= bound[k];
      if (!ok && outside++ == 0) first = k;
      if (ok && bound[k] > 0) worst = std::max(worst, err / bound[k]);
    }
    if (outside == 0) {
      std::cout << fmt::format(
          "out{}: agrees with the reference on all {} elements (largest error {:.3g} of its "
          "bound)\n",
          i, got.size(), worst);
    } else {
      agrees = false;
      std::cout << fmt::format(
          "out{}: DIFFERS from the reference on {} of {} elements; first at flat index {}: "
          "got {:.9g}, expected {:.9g}, bound {:.3g}\n",
          i, outside, got.size(), first, got[first], want[first], bound[first]);
    }
  }
  if (!run.out.empty()) {
    npy::ArrayList arrays;
    for (size_t i = 0; i < outcome.outputs.size(); ++i)
      arrays.emplace_back("out" + std::to_string(i),
                          to_array_as(outcome.outputs[i], graph.results[i].dtype));
    write_arrays(run.out, arrays, "--out");
    std::cout << "wrote " << run.out << " (the kernel's outputs)\n";
  }
  return agrees ? 0 : 4;
}

}  // namespace ollie::cli
