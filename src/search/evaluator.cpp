// The local evaluator: the verifier's quick suites, then a side-by-side timing against
// the baseline kernel in one runner session (DESIGN.md section 9: an evaluation is a pure
// unit of work; this one runs on this machine).
#include <chrono>

#include "measure/measure.h"
#include "search/search.h"

namespace ollie::search {

namespace {

class LocalEvaluator : public Evaluator {
 public:
  LocalEvaluator(const ir::Graph& graph, verify::GraphAt graph_at, std::string baseline, EvaluatorOptions options)
      : graph_(graph), graph_at_(std::move(graph_at)), baseline_(std::move(baseline)), options_(std::move(options)) {}

  Evaluation evaluate(const Candidate& candidate) override {
    const auto start = std::chrono::steady_clock::now();
    Evaluation e;
    verify::Options vo = options_.verify;
    vo.level = verify::Level::Quick;
    vo.seed = 0;  // fresh every time
    vo.threads = options_.threads;
    vo.runner_path = options_.runner_path;
    vo.cache_dir = options_.cache_dir;
    const verify::Report report = verify::verify(graph_, candidate.source, graph_at_, vo);
    e.verdict = verify::verdict_name(report.verdict);
    e.message = report.message;
    e.penalty = report.penalty;
    e.certificate_json = verify::certificate_json(graph_, "", report, vo);
    if (report.verdict == verify::Verdict::Pass) {
      measure::BenchOptions bo;
      bo.threads = options_.threads;
      bo.budget_seconds = options_.bench_seconds;
      bo.min_rounds = 5;
      bo.runner_path = options_.runner_path;
      bo.cache_dir = options_.cache_dir;
      bo.compiler = vo.compiler;
      const measure::BenchReport bench =
          measure::bench(graph_, {{"candidate", candidate.source}, {"baseline", baseline_}}, bo);
      if (bench.status != measure::BenchStatus::Ok) {
        // Right when verified, wrong or crashing when timed: as wrong as any.
        e.verdict = bench.status == measure::BenchStatus::Wrong ? "wrong" : "crash";
        e.message = "while timed: " + bench.message;
        e.penalty = 1;
      } else {
        e.median_seconds = bench.kernels[0].stats.median;
        e.min_seconds = bench.kernels[0].stats.min;
        e.mad_seconds = bench.kernels[0].stats.mad;
        e.ratio_vs_baseline = bench.ratio ? bench.ratio->median : 0;
        e.rounds = bench.rounds;
      }
    }
    e.eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  }

 private:
  const ir::Graph& graph_;
  verify::GraphAt graph_at_;
  std::string baseline_;
  EvaluatorOptions options_;
};

}  // namespace

std::unique_ptr<Evaluator> make_local_evaluator(const ir::Graph& graph, verify::GraphAt graph_at,
                                                const std::string& baseline_source, EvaluatorOptions options) {
  return std::make_unique<LocalEvaluator>(graph, std::move(graph_at), baseline_source, std::move(options));
}

}  // namespace ollie::search
