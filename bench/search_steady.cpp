// Does a long search stay small and keep its pace? Runs the real chains, proposers and run
// database of `ollie optimize` for many evaluations with a stand-in evaluator (a time
// derived from a hash of the source, no compiling or running), so hours of a real run's
// bookkeeping happen in a minute or two, and prints the process's resident memory and the
// steps per second every --every evaluations. A run that holds per-step state in memory
// shows as RSS growing with the evaluations; one whose lookups scan what it has done shows
// as falling steps per second. (Issue 6, item 8: under 2 GiB whatever the run's length.)
//
// usage: build/bench_search_steady [SPEC] [--evals N] [--every K] [--proposers mutate,rewrite]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "search/search.h"
#include "spec/spec.h"
#include "store/store.h"

namespace {

using namespace ollie;
namespace fs = std::filesystem;

// Resident set size of this process in bytes (/proc/self/statm, pages).
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Passes everything, at 1..2 ms by a hash of the source: the chains accept and reject as
// they would on a real machine, and the archive fills.
class HashTimeEvaluator : public search::Evaluator {
 public:
  search::Evaluation evaluate(const search::Candidate& c) override {
    const uint64_t h = std::hash<std::string>{}(c.source);
    search::Evaluation e;
    e.verdict = verify::Verdict::Pass;
    e.penalty = 0;
    e.median_seconds =
        c.proposer == "baseline" ? 2e-3 : 1e-3 + static_cast<double>(h % 1000) * 1e-6;
    e.min_seconds = e.median_seconds;
    e.ratio_vs_baseline = e.median_seconds / 2e-3;
    e.rounds = 5;
    e.certificate_json = "{}";
    return e;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string spec_path = std::string(OLLIE_SOURCE_DIR) + "/examples/mla_decode.py";
  int64_t evals = 20000, every = 2000;
  std::string proposer_list = "mutate";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--evals")
      evals = std::stoll(next());
    else if (a == "--every")
      every = std::stoll(next());
    else if (a == "--proposers")
      proposer_list = next();
    else if (!a.empty() && a[0] != '-')
      spec_path = a;
    else {
      std::fprintf(stderr,
                   "usage: %s [SPEC] [--evals N] [--every K] [--proposers mutate,rewrite]\n",
                   argv[0]);
      return 2;
    }
  }
  const ir::Graph graph = spec::load_spec(spec_path, {});
  const fs::path dir =
      fs::temp_directory_path() / ("ollie-search-steady-" + std::to_string(getpid()));
  fs::create_directories(dir);
  store::RunInfo info;
  info.spec_path = spec_path;
  info.entry = graph.entry;
  info.dims_json = info.machine_json = info.options_json = "{}";
  info.seed = 1;
  info.created = "bench";
  store::Store db = store::Store::create((dir / "run.db").string(), info);

  search::SearchOptions options;
  options.max_evals = evals;
  options.proposer_weights.clear();
  std::vector<std::unique_ptr<search::Proposer>> proposers;
  for (size_t start = 0; start <= proposer_list.size();) {
    size_t end = proposer_list.find(',', start);
    if (end == std::string::npos) end = proposer_list.size();
    const std::string name = proposer_list.substr(start, end - start);
    if (name == "mutate")
      proposers.push_back(search::make_mutate_proposer(graph));
    else {
      std::fprintf(stderr, "unknown proposer '%s'\n", name.c_str());
      return 2;
    }
    options.proposer_weights.push_back({name, 1.0});
    start = end + 1;
  }

  HashTimeEvaluator evaluator;
  std::printf("%s, %lld evaluations, proposers %s; run database %s\n", spec_path.c_str(),
              static_cast<long long>(evals), proposer_list.c_str(), (dir / "run.db").c_str());
  std::printf("%12s %12s %14s %12s\n", "evaluations", "RSS MiB", "steps/s", "db MiB");
  using clock = std::chrono::steady_clock;
  auto last_time = clock::now();
  int64_t last_steps = 0, steps = 0, next_report = every;
  const search::StopReason why = search::run_chains(
      graph, db, evaluator, proposers, options, [] { return false; },
      [&](const search::Progress& p) {
        ++steps;
        if (p.run_evaluations < next_report) return;
        next_report += every;
        const auto now = clock::now();
        const double seconds = std::chrono::duration<double>(now - last_time).count();
        std::error_code ec;
        const double db_bytes = static_cast<double>(fs::file_size(dir / "run.db", ec)) +
                                static_cast<double>(fs::file_size(dir / "run.db-wal", ec));
        std::printf("%12lld %12.1f %14.1f %12.1f\n", static_cast<long long>(p.run_evaluations),
                    resident_bytes() / (1 << 20), static_cast<double>(steps - last_steps) / seconds,
                    db_bytes / (1 << 20));
        std::fflush(stdout);
        last_time = now;
        last_steps = steps;
      });
  std::printf("stopped: %s\n", search::stop_reason_name(why));
  fs::remove_all(dir);
  return 0;
}
