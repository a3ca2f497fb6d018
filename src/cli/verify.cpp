// `ollie verify SPEC KERNEL.cpp`: the contract check of a candidate kernel: suites of
// fresh random inputs in the sandboxed runner against the reference and its bound, a
// one-screen summary (or --json), and the certificate (--cert). Exit 0 only on pass.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "build/build.h"
#include "cli/cli.h"
#include "emit/emit.h"
#include "spec/spec.h"
#include "support/sha256.h"
#include "verify/verify.h"

namespace ollie::cli {

int run_verify(const SpecFlags& flags, const VerifyFlags& v) {
  const ir::Graph graph = load(flags);
  check_reference_fits(graph);
  const std::string source = read_text(v.kernel_path, "kernel");
  verify::Options options;
  if (v.level == "full")
    options.level = verify::Level::Full;
  else if (v.level != "quick")
    throw UserError(fmt::format("--level {}: write quick or full", v.level));
  options.seed = v.seed;
  options.timeout_seconds = v.timeout_seconds;
  options.threads = v.threads;
  options.compiler = v.compiler;
  options.accept_weak = v.accept_weak;
  emit::check_symbol(v.symbol);
  options.kernel_symbol = v.symbol;
  if (!v.inputs.empty()) {
    try {
      options.user_inputs = file_inputs(graph, v.inputs);
    } catch (const UserError& e) {
      throw UserError(fmt::format("--inputs {}: {}", v.inputs, e.what()));
    }
  }
  const verify::GraphAt graph_at = [&](const ir::DimBindings& dims) {
    spec::SpecOptions so;
    so.entry = flags.entry;
    so.dim_overrides = dims;
    return spec::load_spec(flags.spec_path, so);
  };
  const verify::Report report = verify::verify(graph, source, graph_at, options);
  const std::string cert = verify::certificate_json(
      graph, sha256_hex(read_text(flags.spec_path, "spec")), report, options);
  if (!v.cert_path.empty()) {
    std::ofstream out(v.cert_path, std::ios::binary);
    out << cert;
    out.close();
    if (!out)
      throw UserError(
          fmt::format("--cert: cannot write '{}': {}", v.cert_path, std::strerror(errno)));
  }
  if (v.json) {
    std::cout << cert;
  } else {
    std::cout << fmt::format("{}: {} ({:.1f} s, {} level, kernel {})\n", v.kernel_path,
                             verify::verdict_name(report.verdict), report.seconds, v.level,
                             report.generic ? "generic" : "specialized");
    for (const auto& s : report.suites) {
      const std::string outcome =
          !s.passed ? std::string("FAILED")
          : s.integer_range > 0
              ? fmt::format("ok, bit for bit, inputs in [-{0}, {0}]", s.integer_range)
              : fmt::format("ok, worst {:.3g} of bound{}", s.worst,
                            s.tight_calls > 0 ? ", ensemble" : "");
      std::cout << fmt::format("  {:<15} seed {:<20} {:<40} {:>9} elements  {}\n", s.name, s.seed,
                               s.dims, s.elements, outcome);
    }
    for (const auto& s : report.not_applicable)
      std::cout << fmt::format("  {:<15} not applicable ({}): {}\n", s.suite, s.dims, s.reason);
    for (const auto& s : report.not_run)
      std::cout << fmt::format("  {:<15} NOT RUN in this environment ({}): {}\n", s.suite, s.dims,
                               s.reason);
    for (size_t o = 0; o < report.criteria.size(); ++o) {
      const interp::Criteria& c = report.criteria[o];
      std::cout << fmt::format(
          "  out{} elements bounded by (over the calls the ensemble tightened): honest ensemble "
          "{}, derived bound {}, exact {}, nothing {}\n",
          o, c.ensemble, c.derived, c.exact, c.unbounded);
    }
    std::cout << "  " << report.message << "\n";
    if (!v.cert_path.empty()) std::cout << "  certificate: " << v.cert_path << "\n";
  }
  return report.verdict == verify::Verdict::Pass ? 0 : 4;
}

}  // namespace ollie::cli
