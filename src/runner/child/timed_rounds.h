// ollie-runner's timed mode (see protocol.h, RequestHeader): rounds of calls on one set
// of live buffers, inputs refilled from staged sets (with `fresh`: rotated and changed at
// random positions right before the clock starts, so no call sees an earlier call's
// inputs, and a random sample of the timed calls kept for checking), outputs poisoned
// before every call, caches optionally flushed, only the calls timed. Part of the child;
// no dependencies beyond the protocol.
#pragma once

#include <cstdint>
#include <vector>

#include "runner/child/protocol.h"

namespace ollie::runner::child {

using EntryFn = void (*)(void* const*, const int64_t*);

struct TimedRequest {
  const protocol::RequestHeader* header = nullptr;
  const protocol::Buffer* buffers = nullptr;  // the whole table (protocol.h)
  char* view = nullptr;                       // the runner's own read-write mapping of the memfd
  void* const* live = nullptr;  // the live buffers as the kernels see them (inputs, then outputs)
  std::vector<EntryFn> entries;
  const int64_t* dims = nullptr;
  char* flush = nullptr;  // header->flush_bytes of memory, or null
  // n_kernels x max_rounds times, in a private mapping (not the memfd): copied to the
  // results only after the last call.
  double* times = nullptr;
};

// Runs the warm-up and timed rounds, checking after every call (seal.h:
// check_after_call, and in fresh mode the inputs as written) that the kernel left the FP
// environment and the live inputs alone, and writes TimedResults, the times and (fresh)
// the log of the checked calls at header->results_offset of the view.
void run_timed(const TimedRequest& request);

}  // namespace ollie::runner::child
