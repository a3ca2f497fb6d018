// The verifier's suites in the runner: each suite's inputs drawn, the kernel called in a
// runner child (the shape sweep's draws several to a process) while a thread computes the
// reference, and every call's outputs checked against it (see verification.h).
#include "verify/verification.h"

namespace ollie::verify::detail {

// Shape-sweep draws run this many to a runner process (each call at its own dims), so a
// sweep of 16 draws costs 3 process starts, not 16.
constexpr size_t kSweepBatch = 6;

// Whether suite `s` can share a runner process with its neighbours: one call, no reused
// buffers, no plausible outputs, not bit-exact.
bool batchable(const Suite& s) {
  return s.name == "shape-sweep" && s.calls == 1 && !s.reused_buffers && !s.plausible_outputs &&
         s.distribution != Distribution::Integer;
}

// The end of the batch that starts at `begin` (begin + 1 when list[begin] runs alone).
size_t batch_end(const std::vector<Suite>& list, size_t begin) {
  size_t end = begin;
  while (end < list.size() && end - begin < kSweepBatch && batchable(list[end])) ++end;
  return std::max(end, begin + 1);
}

// Runs `list` in order (the i-th is suite first + i); false at the first that fails.
// Consecutive shape-sweep draws run in batches (run_batch), the rest one process each.
bool Verification::run_suites(const std::vector<Suite>& list, size_t first,
                              const std::string& so_path, const runner::Options& base) {
  for (size_t i = 0; i < list.size();) {
    size_t end = batch_end(list, i);
    if (end > i + 1) {
      if (!run_batch(list, first, i, end, so_path, base)) return false;
    } else {
      while (end < list.size() && batch_end(list, end) == end + 1) ++end;
      if (!run_sequence(list, first, i, end, so_path, base)) return false;
    }
    i = end;
  }
  return true;
}

// Runs list[begin, end) one process each. The first suite's inputs are drawn by two
// threads; each later suite's while the previous one runs (run_suite).
bool Verification::run_sequence(const std::vector<Suite>& list, size_t first, size_t begin,
                                size_t end, const std::string& so_path,
                                const runner::Options& base) {
  if (begin >= end) return true;
  std::unique_ptr<InputDraw> draw = start_draw(list[begin], first + begin);
  {
    auto helper = std::async(std::launch::async, [&] { draw->help(); });
    draw->help();
    helper.get();
  }
  Calls calls = draw->take();
  for (size_t i = begin; i < end; ++i) {
    std::unique_ptr<InputDraw> next =
        i + 1 < end ? start_draw(list[i + 1], first + i + 1) : nullptr;
    if (!run_suite(list[i], first + i, calls, so_path, base, next.get())) return false;
    if (next) calls = next->take();
  }
  return true;
}

// Runs the one-call suites list[begin, end) (shape-sweep draws, each at its own dims) as
// the calls of ONE runner process while a thread computes their references. When that
// process fails, the draws run again one process each, so the verdict names the draw
// (and when each passes alone, the batch's failure stands: state kept between calls).
bool Verification::run_batch(const std::vector<Suite>& list, size_t first, size_t begin, size_t end,
                             const std::string& so_path, const runner::Options& base) {
  std::vector<Calls> inputs;
  for (size_t i = begin; i < end; ++i) {
    std::unique_ptr<InputDraw> draw = start_draw(list[i], first + i);
    auto helper = std::async(std::launch::async, [&] { draw->help(); });
    draw->help();
    helper.get();
    inputs.push_back(draw->take());
  }
  std::atomic<bool> cancel{false};
  auto reference = std::async(std::launch::async, [&] {
    std::vector<std::vector<interp::Result>> refs;
    for (size_t i = begin; i < end && !cancel; ++i)
      refs.push_back({reference_of(list[i], 0, inputs[i - begin][0], seed_ + first + i, &cancel)});
    return refs;
  });
  std::vector<const ir::Graph*> graphs;
  std::vector<const std::vector<interp::Tensor>*> calls;
  for (size_t i = begin; i < end; ++i) {
    graphs.push_back(&list[i].graph);
    calls.push_back(&inputs[i - begin][0]);
  }
  runner::Options run = base;
  run.timeout_seconds = base.timeout_seconds * static_cast<double>((end - begin + 2) / 3);
  run.placement = placement_of(first + begin);
  runner::Outcome outcome = runner::run_calls(so_path, graphs, calls, run);
  if (outcome.status != runner::Status::Ok) {
    cancel = true;
    reference.wait();
    const size_t recorded = report_.suites.size();
    if (!run_sequence(list, first, begin, end, so_path, base)) return false;
    report_.suites.resize(recorded);
    SuiteResult result = suite_result(
        "shape-sweep", seed_ + first + begin,
        "draws " + std::to_string(begin) + "-" + std::to_string(end - 1) + " in one process");
    return !run_failed(outcome, "shape-sweep (its draws in one process)", result);
  }
  const std::vector<std::vector<interp::Result>> refs = reference.get();
  for (size_t i = begin; i < end; ++i) {
    SuiteResult result = suite_result(list[i].name, seed_ + first + i, dims_text(list[i].graph));
    if (!check_calls(list[i], false, result, {outcome.call_outputs[i - begin]}, refs[i - begin]))
      return false;
  }
  return true;
}

// The `index`th suite's inputs (its seed is seed_ + index; call c's is that plus
// c * 1000003), allocated, not drawn yet.
std::unique_ptr<InputDraw> Verification::start_draw(const Suite& suite, size_t index) const {
  if (!suite.given.empty())
    return std::make_unique<InputDraw>(std::vector<std::vector<interp::Tensor>>{suite.given});
  const uint64_t s = seed_ + index;
  std::vector<uint64_t> seeds;
  for (int c = 0; c < suite.calls; ++c) seeds.push_back(s + kCallSeedStep * c);
  return std::make_unique<InputDraw>(suite.graph, seeds, call_distributions(suite),
                                     suite.integer_range);
}

// Runs one suite (the `index`th: its seed is seed_ + index) of `so_path` on `calls`;
// false (and the verdict set) when it fails. The kernel runs in the runner's child
// process while a thread of this one computes the reference; both threads then draw
// `next` (the next suite's inputs, or null) as each becomes free. A run that fails
// stops the reference and the drawing unfinished.
bool Verification::run_suite(const Suite& suite, size_t index, const Calls& calls,
                             const std::string& so_path, const runner::Options& base,
                             InputDraw* next) {
  SuiteResult result = suite_result(suite.name, seed_ + index, dims_text(suite.graph));
  result.integer_range = suite.integer_range;
  const std::string what =
      suite.replays.empty() ? suite.name : suite.name + " (" + suite.replays + ")";
  runner::Options run = base;
  run.plausible_outputs = suite.plausible_outputs;
  // The timeout is for up to three calls (the old A, B, A); more calls get more time.
  run.timeout_seconds = base.timeout_seconds * std::max(1, (suite.calls + 2) / 3);
  // Buffers cycle between the start and the end of their pages, so a read before the
  // first element or past the last one meets a guard page in one suite or another, and a
  // random place in the page (the runner's default), so a kernel cannot tell the harness
  // by buffers at page edges.
  run.placement = placement_of(index);

  std::atomic<bool> cancel{false};
  std::future<std::vector<interp::Result>> reference = std::async(std::launch::async, [&] {
    std::vector<interp::Result> refs;
    for (size_t c = 0; c < calls.size(); ++c)
      refs.push_back(reference_of(suite, c, calls[c], seed_ + index + kCallSeedStep * c, &cancel));
    if (next) next->help(&cancel);
    return refs;
  });
  // On every way out before the reference is taken (a failed run, an exception), stop
  // it and wait: it reads `calls` and `suite`.
  struct Join {
    std::atomic<bool>& cancel;
    std::future<std::vector<interp::Result>>& future;
    ~Join() {
      if (!future.valid()) return;
      cancel = true;
      future.wait();
    }
  } join{cancel, reference};

  Calls outputs, reused_outputs;
  if (run_failed(call_kernel(false, suite, calls, so_path, run, outputs), what, result))
    return false;
  // reused_buffers: the same inputs again, as rounds on one set of buffers, in a process
  // of its own while the reference is still computed (recorded as the reused-buffers
  // suite, with the seed its inputs were drawn from; checked after this suite's calls).
  SuiteResult reused = suite_result("reused-buffers", result.seed, result.dims);
  runner::Outcome reused_outcome;
  if (suite.reused_buffers) {
    run.placement = placement_of(index + 1);
    reused_outcome = call_kernel(true, suite, calls, so_path, run, reused_outputs);
  }
  if (next) next->help();
  const std::vector<interp::Result> refs = reference.get();
  if (!check_calls(suite, false, result, outputs, refs)) return false;
  if (!suite.reused_buffers) return true;
  if (run_failed(reused_outcome, reused.name, reused)) return false;
  return check_calls(suite, true, reused, reused_outputs, refs);
}

// False, with the verdict set and `result` recorded, when the run did not end Ok.
bool Verification::run_failed(const runner::Outcome& outcome, const std::string& what,
                              SuiteResult& result) {
  if (outcome.status == runner::Status::Ok) return false;
  report_.verdict = from_status(outcome.status);
  report_.penalty = 1;
  report_.message = suite_context(what, result) + outcome.message;
  report_.suites.push_back(result);
  return true;
}

// Every call's outputs against its reference; records `result` (passed or not) and
// returns whether all agree.
bool Verification::check_calls(const Suite& suite, bool reused, SuiteResult& result,
                               const Calls& outputs, const std::vector<interp::Result>& refs) {
  const std::vector<Distribution> ds = call_distributions(suite);
  const std::string n = std::to_string(outputs.size());
  for (size_t c = 0; c < outputs.size() && c < refs.size(); ++c) {
    const std::string call = std::to_string(c + 1);
    const std::string inputs = std::string(distribution_name(ds[c])) + " inputs";
    std::string label =
        suite.replays.empty() ? suite.name : suite.name + " (" + suite.replays + ")";
    if (reused)
      label =
          "reused-buffers (round " + call + " of " + n + " on one set of buffers, " + inputs + ")";
    else if (suite.mixed)
      label += " (call " + call + " of " + n + " in one process, " + inputs + ")";
    else if (outputs.size() > 1)
      label += " (call " + call + " of " + n + " in one process)";
    // The report counts each call's elements once (not again as a reused-buffers round).
    if (!reused && refs[c].tightened) add_criteria(report_.criteria, refs[c].criteria);
    if (!agrees(label, result.seed + kCallSeedStep * c, result, outputs[c], refs[c])) {
      report_.suites.push_back(result);
      return false;
    }
  }
  result.passed = true;
  report_.worst = std::max(report_.worst, result.worst);
  report_.suites.push_back(result);
  return true;
}

// The suite's calls in the runner, each on fresh inputs: in one process on new buffers,
// or (reused) as the timed rounds on one set of buffers; `outputs` gets each call's
// outputs when the run is Ok.
runner::Outcome Verification::call_kernel(bool reused, const Suite& suite, const Calls& calls,
                                          const std::string& so_path, const runner::Options& run,
                                          Calls& outputs) const {
  if (reused) {
    runner::TimingOptions order;
    order.warmup_rounds = 0;
    order.min_rounds = order.max_rounds = static_cast<int>(calls.size());
    order.budget_seconds = 0;
    runner::TimedOutcome timed =
        runner::time_kernels({{so_path, "ollie_entry"}}, suite.graph, calls, run, order);
    if (timed.status == runner::Status::Ok) outputs = std::move(timed.set_outputs[0]);
    return timed;  // its Outcome part, moved
  }
  runner::Outcome outcome = runner::run_calls(so_path, suite.graph, calls, run);
  outputs = std::move(outcome.call_outputs);
  return outcome;
}

// Every output element of one call against the reference; false (and the verdict set)
// at the first element outside its bound.
bool Verification::agrees(const std::string& label, uint64_t call_seed, SuiteResult& result,
                          const std::vector<interp::Tensor>& outputs,
                          const interp::Result& reference) {
  const Comparison c = compare_outputs(outputs, reference);
  result.elements += c.elements;
  add_criteria(result.criteria, reference.criteria);
  if (reference.tightened) ++result.tight_calls;
  result.worst = std::max(result.worst, c.worst);
  if (c.agrees) return true;
  report_.verdict = Verdict::Wrong;
  report_.penalty = c.penalty();
  if (c.index >= 0)
    report_.counterexample = Counterexample{label,   call_seed,  result.dims, c.output,
                                            c.index, c.expected, c.got,       c.bound};
  report_.message = suite_context(label, result) + c.text;
  return false;
}

}  // namespace ollie::verify::detail
