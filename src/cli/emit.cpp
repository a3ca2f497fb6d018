// `ollie emit`: the baseline kernel of a spec (lowered to loop nests, emitted as C++ in the
// ABI) and its header `<entry>.ollie.h`, written to a directory.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/cli.h"
#include "emit/emit.h"
#include "loops/loops.h"

namespace ollie::cli {

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw UserError(fmt::format("-o: cannot write '{}': {}", path.string(), std::strerror(errno)));
}

}  // namespace

int run_emit(const SpecFlags& flags, const std::string& out_dir) {
  ir::Graph graph = load(flags);
  loops::Kernel kernel = loops::lower(graph, {});
  const std::string source = emit::emit_kernel(kernel, graph);
  const std::string header = emit::emit_header(graph);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw UserError(fmt::format("-o {}: cannot create the directory: {}", out_dir, ec.message()));
  const auto cpp_path = std::filesystem::path(out_dir) / (graph.entry + ".cpp");
  const auto h_path = std::filesystem::path(out_dir) / (graph.entry + ".ollie.h");
  write_text(cpp_path, source);
  write_text(h_path, header);
  std::cout << fmt::format("wrote {} (the kernel) and {} (its ABI: declaration, dims order, bound sizes)\n",
                           cpp_path.string(), h_path.string());
  return 0;
}

}  // namespace ollie::cli
