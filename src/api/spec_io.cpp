// The spec and file part of the api (api.h): loading a spec, rewrites, reading and
// writing files, and the check that the reference fits in this machine's memory.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/api.h"
#include "rewrite/rewrite.h"
#include "spec/spec.h"
#include "support/error.h"

namespace ollie::api {

ir::Graph load(const SpecRef& flags) {
  spec::SpecOptions options;
  options.entry = flags.entry;
  if (!flags.dims.empty()) options.dim_overrides = spec::parse_dims_flag(flags.dims);
  return spec::load_spec(flags.spec_path, options);
}

ir::Graph with_rewrites(const ir::Graph& graph, const std::string& path) {
  if (path.empty()) return graph;
  try {
    return rewrite::replay(graph, read_text(path, "rewrites"));
  } catch (const UserError& e) {
    throw UserError(fmt::format("--rewrites {}: {}", path, e.what()));
  }
}

std::string read_text(const std::string& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(fmt::format(
        "'{}' is a directory, not a {} file; name the file itself (ollie emit -o DIR writes "
        "DIR/<entry>.cpp)",
        path, what));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    throw UserError(fmt::format("-o: cannot write '{}': {}", path.string(), std::strerror(errno)));
}

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// The reference holds values and bounds in double, and a contraction packs copies of
// its operands: refuse dims whose estimate exceeds this machine's memory up front, with
// a clear message, rather than be killed by the kernel halfway.
void check_reference_fits(const ir::Graph& graph) {
  double inputs = 0, largest = 0;
  ir::ValueId largest_id = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& n = graph.nodes[i];
    double count = 1;
    for (int64_t d : ir::evaluate_shape(n.shape, graph.bound_dims)) count *= static_cast<double>(d);
    if (n.kind == ir::OpKind::Input) inputs += count;
    if (count > largest) {
      largest = count;
      largest_id = static_cast<ir::ValueId>(i);
    }
  }
  const double bytes_per_element = 16;  // value and bound, both double
  const double estimate = (inputs + 6 * largest) * bytes_per_element;
  const double memory =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (estimate > 0.8 * memory) {
    const ir::Node& n = graph.node(largest_id);
    throw UserError(
        fmt::format("at these dims the reference needs about {:.1f} GiB but this machine has "
                    "{:.1f} GiB (largest value: %{} {}{} "
                    "= {:.3g} elements); choose smaller sizes with --dims",
                    estimate / (1 << 30), memory / (1 << 30), largest_id, ir::dtype_name(n.dtype),
                    ir::shape_str(n.shape), largest));
  }
}

verify::GraphAt graph_at(const SpecRef& spec) {
  return [spec](const ir::DimBindings& dims) {
    spec::SpecOptions o;
    o.entry = spec.entry;
    o.dim_overrides = dims;
    return spec::load_spec(spec.spec_path, o);
  };
}

}  // namespace ollie::api
