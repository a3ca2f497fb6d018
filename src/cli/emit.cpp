// `ollie emit`: the kernel of a spec under a schedule (the default one unless --schedule
// names a file or gives the text), emitted as C++ in the ABI, with its header
// `<entry>.ollie.h` and the schedule used `<entry>.schedule`, written to a directory;
// with --show-loops, the loop nest at each step on stdout as well.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "emit/emit.h"
#include "loops/loops.h"
#include "rewrite/rewrite.h"

namespace ollie::cli {

namespace {

// The schedule --schedule names: a file, the text itself, or the default one.
loops::Schedule schedule_from_flag(const ir::Graph& graph, const std::string& flag) {
  if (flag.empty()) return loops::default_schedule(graph);
  std::error_code not_a_file;  // a schedule's text may be no valid path at all
  if (std::filesystem::is_regular_file(flag, not_a_file)) {
    std::ifstream in(flag, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in)
      throw UserError(fmt::format("--schedule: cannot read '{}': {}", flag, std::strerror(errno)));
    return loops::parse_schedule(text.str(), flag);
  }
  if (flag.find_first_of(" \t\n;") == std::string::npos)
    throw UserError(fmt::format("--schedule: '{}' is neither a file nor a schedule", flag) +
                    "\n  hint: give a file, or the directives themselves separated by ';', e.g. "
                    "--schedule 'split out0 n 16; vectorize out0 n_i'");
  return loops::parse_schedule(flag, "--schedule");
}

// Lowers `graph` under `schedule`; with `show`, prints the loop nest on stdout at each
// step (after the rewrites, after each directive, and the kernel handed to the emitter),
// each block under a "== ..." header line and followed by a blank line. Steps before an
// illegal directive are printed before its error.
loops::Kernel lower_showing_steps(const ir::Graph& graph, const loops::Schedule& schedule,
                                  const std::string& rewrites, bool show) {
  if (!show) return loops::lower(graph, schedule);
  const size_t count = schedule.directives.size();
  size_t done = 0;
  auto print = [](const std::string& header, const loops::Kernel& kernel) {
    std::cout << "== " << header << "\n" << loops::to_text(kernel) << "\n";
  };
  auto step_header = [&](const loops::Directive* directive) {
    if (!directive) return fmt::format("after rewrites ({})", rewrites.empty() ? "none" : rewrites);
    return fmt::format("after '{}' (directive {} of {})", loops::to_text(*directive), ++done,
                       count);
  };
  auto show_step = [&](const loops::Directive* directive, const loops::Kernel& now) {
    print(step_header(directive), now);
  };
  const loops::Kernel kernel = loops::lower(graph, schedule, show_step);
  print("before emission", kernel);
  return kernel;
}

}  // namespace

int run_emit(const SpecFlags& flags, const EmitFlags& emit_flags) {
  emit::check_symbol(emit_flags.symbol);
  // The schedule of a rewritten kernel names the rewritten graph's stages.
  const ir::Graph graph = with_rewrites(load(flags), emit_flags.rewrites);
  if (emit_flags.show_stages) {
    std::cout << "stages of " << graph.entry << " (what a schedule names):\n"
              << loops::describe_stages(graph) << "\ndefault schedule:\n"
              << loops::to_text(loops::default_schedule(graph))
              << "\nrewrite sites (a line of --rewrites, docs/rewrites.md):\n";
    for (const rewrite::Site& site : rewrite::find_sites(graph))
      std::cout << "  " << rewrite::to_text(site) << "\n";
    return 0;
  }
  const loops::Schedule schedule = schedule_from_flag(graph, emit_flags.schedule);
  const loops::Kernel kernel =
      lower_showing_steps(graph, schedule, emit_flags.rewrites, emit_flags.show_loops);
  const std::string schedule_text = loops::to_text(schedule);
  const std::string source = emit::emit_kernel(
      kernel, graph, {.symbol = emit_flags.symbol, .schedule_text = schedule_text});
  const std::string header = emit::emit_header(graph, emit_flags.symbol);
  const std::string& out_dir = emit_flags.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    throw UserError(fmt::format("-o {}: cannot create the directory: {}", out_dir, ec.message()));
  const auto cpp_path = std::filesystem::path(out_dir) / (graph.entry + ".cpp");
  const auto h_path = std::filesystem::path(out_dir) / (graph.entry + ".ollie.h");
  const auto schedule_path = std::filesystem::path(out_dir) / (graph.entry + ".schedule");
  write_text(cpp_path, source);
  write_text(h_path, header);
  write_text(schedule_path, "# schedule of " + graph.entry +
                                " (ollie emit --schedule reads it back)\n" + schedule_text);
  std::cout << fmt::format(
      "wrote {} (the kernel), {} (its ABI: declaration, dims order, bound sizes) and {} (the "
      "schedule)\n",
      cpp_path.string(), h_path.string(), schedule_path.string());
  return 0;
}

}  // namespace ollie::cli
