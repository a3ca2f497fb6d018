// Warm starts: reading earlier runs' best kernels and emitting them for this run's graph
// (see warm_start.h).
#include "search/warm_start.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "loops/loops.h"
#include "measure/measure.h"
#include "rewrite/rewrite.h"
#include "search/rewritten.h"
#include "store/store.h"
#include "store/tuning_db.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/strings.h"

namespace ollie::search {

namespace {

// "M=16, N=64" from {"M": 16, "N": 64}.
std::string dims_text(const std::string& json) {
  std::vector<std::string> parts;
  try {
    const nlohmann::json dims = nlohmann::json::parse(json);
    for (const auto& [name, value] : dims.items()) parts.push_back(name + "=" + value.dump());
  } catch (const nlohmann::json::exception&) {
    return json;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The machine a run database's run was measured on ("" when it records none: runs made
// before warm starts existed).
std::string fingerprint_of_run(const std::string& machine_json) {
  try {
    return nlohmann::json::parse(machine_json).value("fingerprint", std::string());
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

// What this run shares with a stored kernel's: "same spec", "same spec at dims ...", "same
// graph at dims ...", or nullopt when the graphs differ.
std::optional<std::string> relation(const store::StoredKernel& k, const std::string& signature,
                                    const std::string& here_signature, const std::string& here_spec,
                                    const std::string& here_entry, const std::string& here_dims) {
  const bool same_spec = k.spec_sha256 == here_spec && k.entry == here_entry;
  if (same_spec && k.dims_json == here_dims) return "same spec";
  if (same_spec) return "same spec at dims " + dims_text(k.dims_json);
  if (signature == here_signature) return "same graph at dims " + dims_text(k.dims_json);
  return std::nullopt;
}

// The kernel emitted for `graph`: again from its schedule and rewrite chain, or its
// free-form source as it is. nullopt (with `why`) when its texts do not replay here.
std::optional<Candidate> re_emitted(const ir::Graph& graph, const store::StoredKernel& k,
                                    const std::string& move, std::string& why) {
  if (k.schedule.empty() && k.proposer != "baseline") {
    Candidate c;
    c.source = k.source;
    c.proposer = "warm-start";
    c.move = move;  // free-form: the source as stored
    return c;
  }
  try {
    const ir::Graph rewritten = k.rewrites.empty() ? graph : rewrite::replay(graph, k.rewrites);
    const loops::Schedule schedule = k.proposer == "baseline" && k.schedule.empty()
                                         ? loops::default_schedule(rewritten)
                                         : loops::parse_schedule(k.schedule, k.origin);
    return emitted_candidate(rewritten, schedule, k.rewrites, "warm-start", move);
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
}

struct Gatherer {
  const ir::Graph& graph;
  std::string spec_sha256, signature, dims, machine;
  std::string baseline_hash;
  GatheredWarmStarts out;
  std::set<std::string> seen;  // source hashes taken
  std::function<ir::Graph(const store::RunInfo&)> graph_of_run;

  void skip(const std::string& what, const std::string& why) {
    out.notes.push_back("warm start: " + what + " skipped: " + why);
  }

  void take(const store::StoredKernel& k, const std::string& kernel_signature) {
    const auto rel = relation(k, kernel_signature, signature, spec_sha256, graph.entry, dims);
    if (!rel)
      return skip(k.origin, "a different graph (entry " + k.entry +
                                "; its tensor IR differs from this spec's beyond dim sizes)");
    std::string why;
    const auto c = re_emitted(graph, k, "from " + k.origin + " (" + *rel + ")", why);
    if (!c) return skip(k.origin, "its schedule or rewrites do not apply here: " + why);
    const std::string hash = sha256_hex(c->source);
    if (hash == baseline_hash) return skip(k.origin, "the same kernel as this run's baseline");
    if (!seen.insert(hash).second)
      return skip(k.origin, "the same kernel as an earlier warm start");
    out.starts.push_back({*c, k.origin});
  }

  void read_run(const std::string& path, int limit) {
    const store::RunKernels run = store::read_run_kernels(path, limit);
    const std::string fp = fingerprint_of_run(run.run.machine_json);
    if (fp.empty())
      return skip(path,
                  "it records no machine fingerprint (an older ollie wrote it), so its "
                  "times say nothing about this machine");
    if (fp != machine) return skip(path, "measured on another machine (" + fp + ")");
    std::string kernel_signature;
    if (run.run.spec_sha256 != spec_sha256 || run.run.entry != graph.entry) {
      if (!graph_of_run) throw InternalError("gather_warm_starts: no graph_of_run");
      try {
        kernel_signature = graph_signature(graph_of_run(run.run));
      } catch (const std::exception& e) {
        return skip(path, std::string("its spec does not compile here: ") + e.what());
      }
      if (kernel_signature != signature)
        return skip(path, "a different graph (" + run.run.spec_path + ", entry " + run.run.entry +
                              ": its tensor IR differs from this spec's beyond dim sizes)");
    }
    if (run.best.empty()) return skip(path, "it has no passing candidate besides its baseline");
    for (store::StoredKernel k : run.best) {
      k.machine = fp;
      take(k, kernel_signature);
    }
  }
};

}  // namespace

std::string machine_fingerprint() {
  const measure::MachineIdentity id = measure::host_identity();
  std::string fingerprint = fmt::format("{} | {} | {} cpus", id.cpu_model, id.isa, id.cores);
  // For tests only: this machine pretends to be another machine kind, and says so in the
  // fingerprint (docs/distributed.md, "Testing").
  if (const char* kind = std::getenv("OLLIE_TEST_MACHINE_KIND"); kind && *kind)
    fingerprint += fmt::format(" | test kind {}", kind);
  return fingerprint;
}

std::string graph_signature(const ir::Graph& graph) {
  ir::Graph unbound = graph;
  unbound.bound_dims.clear();
  return sha256_hex(ir::to_text(unbound));
}

std::string dims_json(const ir::Graph& graph) {
  nlohmann::json dims = nlohmann::json::object();
  for (const auto& d : graph.dims) dims[d] = graph.bound_dims.at(d);
  return dims.dump();
}

GatheredWarmStarts gather_warm_starts(const ir::Graph& graph, const std::string& spec_sha256,
                                      const std::string& baseline_source,
                                      const WarmStartSources& sources) {
  Gatherer g{graph,
             spec_sha256,
             graph_signature(graph),
             dims_json(graph),
             machine_fingerprint(),
             sha256_hex(baseline_source),
             {},
             {},
             sources.graph_of_run};
  for (const std::string& path : sources.run_paths) g.read_run(path, sources.per_source);
  if (sources.tuning) {
    const auto kernels =
        sources.tuning->matching(spec_sha256, g.signature, g.dims, g.machine, sources.per_source);
    for (const store::StoredKernel& k : kernels) g.take(k, k.graph_signature);
  }
  return g.out;
}

std::string warm_start_line(const WarmStart& start, int64_t candidate, const Evaluation& e) {
  const bool recipe = start.candidate.proposer == "recipe";
  const char* kind = recipe ? "recipe start" : "warm start";
  if (e.verdict != verify::Verdict::Pass) {
    const std::string message = e.message.substr(0, e.message.find('\n'));
    return fmt::format("{}: {} refused: {} (candidate {}{}{})", kind, start.origin,
                       verify::verdict_name(e.verdict), candidate, message.empty() ? "" : ": ",
                       message.substr(0, 300));
  }
  std::string move = start.candidate.move;
  for (const char* prefix : {"from ", "recipe: "})
    if (move.rfind(prefix, 0) == 0) move = move.substr(std::string(prefix).size());
  return fmt::format(
      "{}: {} -> candidate {}: {} (quick), x{:.3f} of this run's baseline side by side", kind, move,
      candidate, recipe ? "verified" : "re-verified", e.ratio_vs_baseline);
}

std::string origin_of(const store::Candidate& best, const std::vector<std::string>& warm_events) {
  if (best.proposer == "baseline") return "the baseline (the default schedule)";
  if (best.proposer == "recipe") {
    std::string lines;
    for (const std::string& line : strings::split_lines(best.rewrites))
      if (!line.empty()) lines += (lines.empty() ? "" : "; ") + line;
    return "a recipe start (the rewrites " + lines +
           " with their default schedule), timed side by side with this run's baseline";
  }
  if (best.proposer != "warm-start")
    return "found by this run's search (proposer " + best.proposer + ")";
  const std::string marker = " -> candidate " + std::to_string(best.id) + ":";
  for (const std::string& text : warm_events)
    if (const size_t at = text.find(marker);
        at != std::string::npos && text.rfind("warm start: ", 0) == 0)
      return "a warm start from " + text.substr(12, at - 12) +
             ", re-verified and re-timed side by side with this run's baseline";
  return "a warm start (its origin is in the run database's warm-start events)";
}

}  // namespace ollie::search
