// Timed runs of the runner (runner::time_kernels): one child times one or two kernels
// side by side on fresh inputs, and the calls it kept for checking come back with the
// inputs each one saw.
#include "runner/runner.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <thread>
#include <tuple>

#include "runner/buffers.h"
#include "runner/child/protocol.h"
#include "support/error.h"
#include "support/process.h"
#include "support/random.h"
#include "support/sandbox.h"
#include "support/strings.h"

#include "runner/launch.h"

namespace ollie::runner {

namespace {

namespace proto = protocol;
using namespace detail;
using process::Fd;

// Fresh mode's region after the times: per input its element bytes, then the log.
uint64_t fresh_region_bytes(const proto::RequestHeader& h) {
  return proto::fresh_log_offset(h) - h.fresh_offset +
         uint64_t{h.n_kernels} * h.check_calls * proto::fresh_entry_bytes(h);
}

// The inputs a fresh call saw: set `set` rotated, then the points from the next set.
std::vector<interp::Tensor> fresh_inputs(const std::vector<std::vector<interp::Tensor>>& staged,
                                         const CheckedCall& call) {
  std::vector<interp::Tensor> inputs = staged[static_cast<size_t>(call.set)];
  const auto& next = staged[(static_cast<size_t>(call.set) + 1) % staged.size()];
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto& data = inputs[i].data;
    std::rotate(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(call.rotation[i]),
                data.end());
    for (uint64_t p : call.points[i]) data[p] = next[i].data[p];
  }
  return inputs;
}

// Fresh mode's checked calls from the child's log and check slots (`staged`: the input
// sets as the child copied them), by kernel and round; an error message for a log the
// child cannot have written.
std::string read_checked(const char* base, const Layout& layout, const proto::RequestHeader& h,
                         const std::vector<std::vector<interp::Tensor>>& staged, uint32_t rounds,
                         std::vector<CheckedCall>& checked) {
  const size_t n_in = h.n_inputs, n_out = h.n_outputs, m = h.fresh_points;
  const size_t check0 = n_in + n_out + size_t{h.n_sets} * n_in;
  for (size_t slot = 0; slot < size_t{h.n_kernels} * h.check_calls; ++slot) {
    const char* entry = base + proto::fresh_log_offset(h) + slot * proto::fresh_entry_bytes(h);
    proto::FreshEntry head{};
    std::memcpy(&head, entry, sizeof head);
    if (!head.used) continue;
    if (head.kernel != slot / h.check_calls || head.set >= h.n_sets || head.round >= rounds)
      return "the runner's log of checked calls is corrupt (slot " + std::to_string(slot) + ")";
    CheckedCall call;
    call.kernel = static_cast<int>(head.kernel);
    call.round = static_cast<int>(head.round);
    call.set = static_cast<int>(head.set);
    call.rotation.resize(n_in);
    std::memcpy(call.rotation.data(), entry + sizeof head, n_in * sizeof(uint64_t));
    const char* points = entry + sizeof head + n_in * sizeof(uint64_t);
    for (size_t i = 0; i < n_in; ++i) {
      call.points.emplace_back(m);
      std::memcpy(call.points[i].data(), points + i * m * sizeof(uint64_t), m * sizeof(uint64_t));
      const uint64_t n = staged[0][i].data.size();
      if (n == 0) call.points[i].clear();  // nothing was changed
      bool ok = call.rotation[i] < std::max<uint64_t>(n, 1);
      for (uint64_t p : call.points[i]) ok = ok && p < n;
      if (!ok) return "the runner's log of checked calls names elements out of range";
    }
    call.inputs = fresh_inputs(staged, call);
    for (size_t r = 0; r < n_out; ++r)
      call.outputs.push_back(read_tensor(base, layout, check0 + slot * n_out + r));
    checked.push_back(std::move(call));
  }
  std::sort(checked.begin(), checked.end(), [](const CheckedCall& a, const CheckedCall& b) {
    return std::tie(a.kernel, a.round) < std::tie(b.kernel, b.round);
  });
  return "";
}

}  // namespace

TimedOutcome time_kernels(const std::vector<Kernel>& kernels, const ir::Graph& graph,
                          const std::vector<std::vector<interp::Tensor>>& input_sets,
                          const Options& options, const TimingOptions& timing) {
  const std::string runner = find_runner(options);
  if (kernels.empty() || kernels.size() > 2)
    throw UserError("runner: time one kernel, or two side by side (" +
                    std::to_string(kernels.size()) + " given)");
  if (input_sets.empty()) throw UserError("runner: timing needs at least one set of inputs");
  if (timing.max_rounds < 1 || timing.min_rounds < 1 || timing.min_rounds > timing.max_rounds ||
      timing.warmup_rounds < 0)
    throw UserError("runner: timing needs 1 <= min rounds <= max rounds and warm-up rounds >= 0");
  if (!(timing.call_limit_seconds >= 0) || !(timing.abandon_ratio >= 0) ||
      !(timing.cap_seconds >= 0))
    throw UserError("runner: the call limit, the abandon ratio and the cap must be >= 0");
  if (timing.fresh_inputs && (timing.check_calls < 1 || timing.check_calls > 1000 ||
                              timing.fresh_points < 0 || timing.fresh_points > 100000))
    throw UserError(
        "runner: fresh inputs need 1 to 1000 checked calls and 0 to 100000 points per input");
  std::vector<Named> named;
  uint64_t header_bytes = sizeof(proto::RequestHeader);
  for (const Kernel& k : kernels) {
    check_entry_symbol(k.entry_symbol);
    named.push_back({so_path_in_jail(named.size()), k.entry_symbol});
    header_bytes += named.back().so_path.size() + k.entry_symbol.size();
  }
  for (const auto& inputs : input_sets) check_inputs(graph, inputs);
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), n_sets = input_sets.size();
  std::vector<Slot> slots = input_slots(graph, Role::Input);
  for (Slot& s : output_slots(graph, Role::Output)) slots.push_back(std::move(s));
  for (size_t s = 0; s < n_sets; ++s)
    for (Slot& slot : input_slots(graph, Role::Staged)) slots.push_back(std::move(slot));
  proto::RequestHeader header{};
  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_kernels = static_cast<uint32_t>(kernels.size());
  header.fresh = timing.fresh_inputs ? 1 : 0;
  header.check_calls = timing.fresh_inputs ? static_cast<uint32_t>(timing.check_calls) : 0;
  header.fresh_points = timing.fresh_inputs ? static_cast<uint32_t>(timing.fresh_points) : 0;
  const size_t groups = timing.fresh_inputs ? header.check_calls : n_sets;
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t s = 0; s < groups; ++s)
      for (Slot& slot : output_slots(graph, Role::Check)) slots.push_back(std::move(slot));
  const uint64_t times_bytes =
      sizeof(proto::TimedResults) +
      kernels.size() * static_cast<uint64_t>(timing.max_rounds) * sizeof(double);
  const uint64_t results_bytes =
      times_bytes + (timing.fresh_inputs ? fresh_region_bytes(header) : 0);
  const Layout layout =
      plan(graph, std::move(slots), header_bytes, results_bytes, options.placement);
  if (timing.fresh_inputs) header.fresh_offset = layout.results_offset + times_bytes;

  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_outputs = static_cast<uint32_t>(n_out);
  header.n_calls = 0;
  header.n_sets = static_cast<uint32_t>(n_sets);
  header.warmup = static_cast<uint32_t>(timing.warmup_rounds);
  header.min_rounds = static_cast<uint32_t>(timing.min_rounds);
  header.max_rounds = static_cast<uint32_t>(timing.max_rounds);
  header.budget_seconds = timing.budget_seconds;
  header.flush_bytes = timing.cold ? timing.flush_bytes : 0;
  header.warm_call = timing.warm_call ? 1 : 0;
  header.call_limit_seconds = timing.call_limit_seconds;
  header.abandon_ratio = kernels.size() == 2 ? timing.abandon_ratio : 0;
  header.cap_seconds = timing.cap_seconds;
  header.nonce = run_nonce();
  Options child = options;
  child.steady_openmp = options.steady_openmp || timing.steady_openmp;
  Fd memfd = make_request(named, layout, header, child, Role::Staged, [&](char* base) {
    for (size_t s = 0; s < n_sets; ++s)
      for (size_t i = 0; i < n_in; ++i) {
        const size_t b = n_in + n_out + s * n_in + i;
        store(base + layout.buffers[b].offset, layout.slots[b].dtype, input_sets[s][i].data);
      }
    for (size_t i = 0; timing.fresh_inputs && i < n_in; ++i) {
      const auto bytes = static_cast<uint32_t>(ir::dtype_bytes(layout.slots[i].dtype));
      std::memcpy(base + header.fresh_offset + i * sizeof bytes, &bytes, sizeof bytes);
    }
  });

  std::string what;
  std::vector<std::string> so_paths;
  for (const Kernel& k : kernels) {
    what += (what.empty() ? "'" : " or '") + k.so_path + "' (" + k.entry_symbol + ")";
    so_paths.push_back(k.so_path);
  }
  TimedOutcome timed;
  static_cast<Outcome&>(timed) = execute(runner, so_paths, memfd.get(), header.nonce, what, child);
  if (timing.call_limit_seconds > 0 && timed.status == Status::Crash && timed.signal == SIGALRM) {
    // The child's alarm around a call of the first kernel (run_timed's call limit).
    timed.status = Status::Timeout;
    timed.over_call_limit = true;
    char limit[64];
    std::snprintf(limit, sizeof limit, "%.3g s", timing.call_limit_seconds);
    timed.message = "a call of '" + kernels[0].so_path + "' ran longer than its limit of " + limit +
                    " and was stopped";
  }
  if (timed.status != Status::Ok) return timed;
  Mapping map(memfd.get(), layout.total_size);
  // The staged sets the child refilled the live inputs from (and compared them with after
  // every call) are intact.
  for (size_t s = 0; s < n_sets; ++s)
    for (size_t i = 0; i < n_in; ++i) {
      const size_t b = n_in + n_out + s * n_in + i;
      if (!holds(map.base() + layout.buffers[b].offset, layout.slots[b].dtype,
                 input_sets[s][i].data)) {
        timed.status = Status::Tampered;
        timed.message = "the staged copy of input '" + graph.params[i].name + "' (set " +
                        std::to_string(s) + ") changed during the timed run";
        return timed;
      }
    }
  if (std::string slack = check_slack(map.base(), layout, graph); !slack.empty()) {
    timed.status = Status::Crash;
    timed.message = slack;
    return timed;
  }
  proto::TimedResults results{};
  std::memcpy(&results, map.base() + layout.results_offset, sizeof results);
  if (results.rounds > static_cast<uint32_t>(timing.max_rounds)) {
    timed.status = Status::ProtocolError;
    timed.message = "the runner reported more rounds than allowed";
    return timed;
  }
  if (results.fresh_errno != 0) {
    timed.status = Status::ProtocolError;
    timed.message = std::string("the runner could not draw fresh inputs (getrandom: ") +
                    std::strerror(static_cast<int>(results.fresh_errno)) + ")";
    return timed;
  }
  timed.warmup_seconds = results.warmup_seconds;
  timed.abandoned = results.abandoned != 0;
  for (size_t k = 0; k < kernels.size(); ++k) timed.fastest_seconds.push_back(results.fastest[k]);
  const char* times = map.base() + layout.results_offset + sizeof results;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<double> seconds(results.rounds);
    std::memcpy(seconds.data(), times + k * static_cast<size_t>(timing.max_rounds) * sizeof(double),
                seconds.size() * sizeof(double));
    timed.rep_seconds.push_back(std::move(seconds));
    if (timing.fresh_inputs) continue;
    std::vector<std::vector<interp::Tensor>> per_set;
    for (size_t s = 0; s < n_sets; ++s) {
      std::vector<interp::Tensor> outputs;
      for (size_t r = 0; r < n_out; ++r)
        outputs.push_back(read_tensor(map.base(), layout,
                                      n_in + n_out + n_sets * n_in + (k * n_sets + s) * n_out + r));
      per_set.push_back(std::move(outputs));
    }
    timed.set_outputs.push_back(std::move(per_set));
  }
  if (timing.fresh_inputs) {
    // The sets as the child copied them (the dtype's rounding of input_sets).
    std::vector<std::vector<interp::Tensor>> staged(n_sets);
    for (size_t s = 0; s < n_sets; ++s)
      for (size_t i = 0; i < n_in; ++i)
        staged[s].push_back(read_tensor(map.base(), layout, n_in + n_out + s * n_in + i));
    header.results_offset = layout.results_offset;
    if (std::string bad =
            read_checked(map.base(), layout, header, staged, results.rounds, timed.checked);
        !bad.empty()) {
      timed.status = Status::ProtocolError;
      timed.message = bad;
      timed.checked.clear();
    }
  }
  return timed;
}

}  // namespace ollie::runner
