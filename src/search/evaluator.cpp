// The local evaluator: the verifier's quick suites, then a side-by-side timing against
// the baseline kernel in one runner session (docs/design.md section 9: an evaluation is a pure
// unit of work; this one runs on this machine).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "measure/measure.h"
#include "search/search.h"

namespace ollie::search {

namespace {

class LocalEvaluator : public Evaluator {
 public:
  LocalEvaluator(const ir::Graph& graph, verify::GraphAt graph_at, std::string baseline,
                 EvaluatorOptions options)
      : graph_(graph),
        graph_at_(std::move(graph_at)),
        baseline_(std::move(baseline)),
        options_(std::move(options)) {}

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
    e.verdict = report.verdict;
    e.message = report.message;
    e.penalty = report.penalty;
    e.certificate_json = verify::certificate_json(graph_, "", report, vo);
    if (report.verdict == verify::Verdict::Pass) {
      const measure::BenchReport bench = side_by_side(
          {"candidate", candidate.source}, {"baseline", baseline_}, options_.bench_seconds, 5);
      if (bench.status != measure::BenchStatus::Ok) {
        // Right when verified, wrong or crashing when timed: as wrong as any.
        e.verdict = verdict_of(bench.status);
        e.message = "while timed: " + bench.message;
        e.penalty = 1;
      } else {
        e.median_seconds = bench.kernels[0].stats.median;
        e.min_seconds = bench.kernels[0].stats.min;
        e.mad_seconds = bench.kernels[0].stats.mad;
        e.ratio_vs_baseline = bench.ratio ? bench.ratio->median : 0;
        e.rounds = bench.rounds;
        e.message += busy_note(bench);
      }
    }
    e.eval_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  }

  std::optional<Comparison> compare(const Candidate& a, const Candidate& b) override {
    const auto start = std::chrono::steady_clock::now();
    Comparison c;
    measure::BenchReport bench;
    for (c.attempts = 1;; ++c.attempts) {
      bench = side_by_side({"candidate", a.source}, {"best", b.source}, options_.confirm_seconds,
                           std::max(5, options_.confirm_min_rounds));
      c.contended = bench.status == measure::BenchStatus::Ok && measure::contended(bench);
      if (!c.contended || c.attempts >= std::max(1, options_.confirm_attempts)) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the other work may be done by then
    }
    if (bench.status != measure::BenchStatus::Ok) {
      c.verdict = verdict_of(bench.status);
      c.message = bench.message;
    } else {
      const measure::Stats& s = bench.kernels[0].stats;
      c.median_seconds = s.median;
      c.min_seconds = s.min;
      c.mad_seconds = s.mad;
      c.ratio = bench.ratio ? bench.ratio->median : 0;
      c.min_ratio = bench.kernels[1].stats.min > 0 ? s.min / bench.kernels[1].stats.min : 0;
      c.rounds = bench.rounds;
      c.message = "ok" + busy_note(bench);
    }
    c.others_cpus = bench.others_cpus;
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return c;
  }

 private:
  // `a` and `b` in one runner session, rounds A B B A.
  measure::BenchReport side_by_side(const measure::BenchKernel& a, const measure::BenchKernel& b,
                                    double seconds, int min_rounds) const {
    measure::BenchOptions bo;
    bo.threads = options_.threads;
    bo.cold = options_.cold;
    bo.budget_seconds = seconds;
    bo.min_rounds = min_rounds;
    bo.runner_path = options_.runner_path;
    bo.cache_dir = options_.cache_dir;
    bo.compiler = options_.verify.compiler;
    return measure::bench(graph_, {a, b}, bo);
  }

  // What a timing that did not run right counts as.
  static verify::Verdict verdict_of(measure::BenchStatus status) {
    if (status == measure::BenchStatus::Refused) return verify::Verdict::Refused;
    return status == measure::BenchStatus::Wrong ? verify::Verdict::Wrong : verify::Verdict::Crash;
  }

  // What the run database's message says about a timing taken on a busy machine.
  static std::string busy_note(const measure::BenchReport& bench) {
    if (bench.others_cpus < measure::kBusyOthers) return "";
    char text[160];
    std::snprintf(text, sizeof text, " (timed while other processes kept %.2f CPUs busy)",
                  bench.others_cpus);
    return text;
  }

  const ir::Graph& graph_;
  verify::GraphAt graph_at_;
  std::string baseline_;
  EvaluatorOptions options_;
};

}  // namespace

std::unique_ptr<Evaluator> make_local_evaluator(const ir::Graph& graph, verify::GraphAt graph_at,
                                                const std::string& baseline_source,
                                                EvaluatorOptions options) {
  return std::make_unique<LocalEvaluator>(graph, std::move(graph_at), baseline_source,
                                          std::move(options));
}

}  // namespace ollie::search
