// The runner stage's calls mode: runner::run and runner::run_calls write the inputs into a
// request, run ollie-runner on it (launch.h) and read the outputs back, checking the
// inputs and the bytes around the outputs out of the kernel's reach.
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
using namespace detail;  // buffers.h, launch.h
using process::Fd;

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::LoadError: return "load-error";
    case Status::Crash: return "crash";
    case Status::Timeout: return "timeout";
    case Status::ProtocolError: return "protocol-error";
    case Status::Forbidden: return "forbidden-syscall";
    case Status::OutOfMemory: return "out-of-memory";
    case Status::Sanitizer: return "sanitizer";
    case Status::Tampered: return "tampered";
  }
  return "unknown";
}

Outcome run(const std::string& so_path, const ir::Graph& graph,
            const std::vector<interp::Tensor>& inputs, const Options& options) {
  Outcome outcome =
      run_calls(so_path, graph, std::vector<const std::vector<interp::Tensor>*>{&inputs}, options);
  if (outcome.status == Status::Ok) outcome.outputs = std::move(outcome.call_outputs[0]);
  outcome.call_outputs.clear();
  return outcome;
}

Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<std::vector<interp::Tensor>>& calls, const Options& options) {
  std::vector<const std::vector<interp::Tensor>*> sets;
  for (const auto& inputs : calls) sets.push_back(&inputs);
  return run_calls(so_path, graph, sets, options);
}

Outcome run_calls(const std::string& so_path, const ir::Graph& graph,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options) {
  return run_calls(so_path, std::vector<const ir::Graph*>(calls.size(), &graph), calls, options);
}

Outcome run_calls(const std::string& so_path, const std::vector<const ir::Graph*>& graphs,
                  const std::vector<const std::vector<interp::Tensor>*>& calls,
                  const Options& options) {
  const std::string runner = find_runner(options);
  check_entry_symbol(options.entry_symbol);
  if (calls.empty()) throw UserError("runner: no calls to make");
  if (graphs.size() != calls.size())
    throw UserError("runner: one graph per call (" + std::to_string(graphs.size()) + " for " +
                    std::to_string(calls.size()) + " calls)");
  const ir::Graph& graph = *graphs[0];
  const size_t n_in = graph.params.size(), n_out = graph.results.size(), per_call = n_in + n_out;
  std::vector<Slot> slots;
  std::vector<int64_t> dims;
  bool same_dims = true;
  for (size_t c = 0; c < calls.size(); ++c) {
    const ir::Graph& g = *graphs[c];
    if (g.params.size() != n_in || g.results.size() != n_out || g.dims != graph.dims)
      throw UserError("runner: the calls' graphs must be one spec at other dims");
    check_inputs(g, *calls[c]);
    for (Slot& s : input_slots(g, Role::Input)) slots.push_back(std::move(s));
    for (Slot& s : output_slots(g, Role::Output)) slots.push_back(std::move(s));
    const std::vector<int64_t> d = bound_dims(g);
    same_dims = same_dims && (c == 0 || std::equal(d.begin(), d.end(), dims.begin()));
    dims.insert(dims.end(), d.begin(), d.end());
  }
  if (same_dims) dims.resize(dims.size() / calls.size());
  const size_t groups = same_dims ? 1 : calls.size();
  std::vector<Named> kernels;
  kernels.push_back({so_path_in_jail(0), options.entry_symbol});
  const Layout layout =
      plan(std::move(dims), groups, std::move(slots),
           sizeof(proto::RequestHeader) + kernels[0].so_path.size() + options.entry_symbol.size(),
           0, options.placement);
  proto::RequestHeader header{};
  header.n_inputs = static_cast<uint32_t>(n_in);
  header.n_outputs = static_cast<uint32_t>(n_out);
  header.n_calls = static_cast<uint32_t>(calls.size());
  header.nonce = run_nonce();
  Fd memfd = make_request(kernels, layout, header, options, Role::Input, [&](char* base) {
    for (size_t c = 0; c < calls.size(); ++c)
      for (size_t i = 0; i < n_in; ++i)
        store(base + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype,
              (*calls[c])[i].data);
    if (options.plausible_outputs) {
      // Finite, ordinary-looking values instead of the poison: a kernel that skips work
      // when its outputs already look written returns these, and fails.
      random::Xoshiro256 rng(0x5eed);
      for (size_t c = 0; c < calls.size(); ++c)
        for (size_t i = n_in; i < per_call; ++i) {
          const Slot& slot = layout.slots[c * per_call + i];
          std::vector<double> values(static_cast<size_t>(ir::element_count(slot.shape)));
          for (double& x : values)
            x = slot.dtype == ir::DType::Bool ? 1.0 : std::round(random::normal(rng) * 4) / 4;
          store(base + layout.buffers[c * per_call + i].offset, slot.dtype, values);
        }
    }
  });

  Outcome outcome =
      execute(runner, {so_path}, memfd.get(), header.nonce, "'" + so_path + "'", options);
  if (outcome.status != Status::Ok) return outcome;
  Mapping map(memfd.get(), layout.total_size);
  // The inputs are read-only to the kernel; that they still hold what was written here is
  // checked here, out of its reach.
  for (size_t c = 0; c < calls.size(); ++c)
    for (size_t i = 0; i < n_in; ++i)
      if (!holds(map.base() + layout.buffers[c * per_call + i].offset, layout.slots[i].dtype,
                 (*calls[c])[i].data)) {
        outcome.status = Status::Tampered;
        outcome.message = "the kernel changed its read-only input '" + graph.params[i].name +
                          "' (call " + std::to_string(c + 1) + ")";
        return outcome;
      }
  if (std::string slack = check_slack(map.base(), layout, graph); !slack.empty()) {
    outcome.status = Status::Crash;
    outcome.message = slack;
    return outcome;
  }
  for (size_t c = 0; c < calls.size(); ++c) {
    std::vector<interp::Tensor> outputs;
    for (size_t r = 0; r < n_out; ++r)
      outputs.push_back(read_tensor(map.base(), layout, c * per_call + n_in + r));
    outcome.call_outputs.push_back(std::move(outputs));
  }
  return outcome;
}

}  // namespace ollie::runner
