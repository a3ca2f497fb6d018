// The timed rounds of ollie-runner (see timed_rounds.h).
#include "runner/child/timed_rounds.h"

#include <time.h>

#include <cstring>
#include <vector>

#include "runner/child/seal.h"

namespace ollie::runner::child {

namespace {

namespace proto = protocol;

double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Writes every cache line of the flush buffer (and reads one value back, so the
// compiler cannot drop the stores).
void flush_caches(char* flush, uint64_t bytes) {
  volatile char sink = 0;
  for (uint64_t i = 0; i < bytes; i += 64) flush[i] = static_cast<char>(flush[i] + 1);
  sink = flush[bytes / 2];
  (void)sink;
}

}  // namespace

void run_timed(const TimedRequest& request) {
  const proto::RequestHeader& h = *request.header;
  const size_t n_in = h.n_inputs, n_out = h.n_outputs, n_sets = h.n_sets,
               n_kernels = request.entries.size();
  const proto::Buffer* live = request.buffers;
  const proto::Buffer* staged = live + n_in + n_out;
  const proto::Buffer* check = staged + n_sets * n_in;
  char* view = request.view;
  double* times = request.times;
  // What the live inputs must still hold after a call on set s (seal.h).
  std::vector<InputCopy> copies(n_sets * n_in);
  for (size_t s = 0; s < n_sets; ++s)
    for (size_t i = 0; i < n_in; ++i)
      copies[s * n_in + i] = {view + live[i].offset, view + staged[s * n_in + i].offset,
                              live[i].bytes};
  uint64_t calls = 0;

  size_t loaded_set = n_sets;  // none yet
  auto load = [&](size_t set) {
    if (set == loaded_set) return;
    for (size_t i = 0; i < n_in; ++i)
      std::memcpy(view + live[i].offset, view + staged[set * n_in + i].offset, live[i].bytes);
    loaded_set = set;
  };
  auto poison = [&] {
    for (size_t o = 0; o < n_out; ++o)
      std::memset(view + live[n_in + o].offset, 0xFF, live[n_in + o].bytes);
  };
  auto round = [&](uint64_t r, bool timed) {
    const size_t set = r % n_sets;
    load(set);
    for (size_t turn = 0; turn < n_kernels; ++turn) {
      const size_t k = r % 2 == 0 ? turn : n_kernels - 1 - turn;
      poison();
      if (timed && h.warm_call) {
        // Wakes the kernel's thread pool (and whatever else it keeps warm) right before
        // the timed call. On the next input set, so that a kernel's consecutive calls
        // still never see the same inputs (a kernel that remembers its last answer gains
        // nothing); the timed call's outputs are its own (poisoned again).
        load((set + 1) % n_sets);
        request.entries[k](request.live, request.dims);
        check_after_call(&copies[loaded_set * n_in], n_in, ++calls);
        load(set);
        poison();
      }
      if (request.flush) flush_caches(request.flush, h.flush_bytes);
      const double t0 = now();
      request.entries[k](request.live, request.dims);
      const double t1 = now();
      check_after_call(&copies[set * n_in], n_in, ++calls);
      if (timed) times[k * h.max_rounds + r] = t1 - t0;
      for (size_t o = 0; o < n_out; ++o)
        std::memcpy(view + check[(k * n_sets + set) * n_out + o].offset,
                    view + live[n_in + o].offset, live[n_in + o].bytes);
    }
  };

  const double warm_start = now();
  for (uint32_t r = 0; r < h.warmup; ++r) round(r, false);
  const double start = now();
  uint32_t rounds = 0;
  while (rounds < h.max_rounds && (rounds < h.min_rounds || now() - start < h.budget_seconds)) {
    round(rounds, true);
    ++rounds;
  }
  proto::TimedResults results{};
  results.rounds = rounds;
  results.warmup_seconds = start - warm_start;
  std::memcpy(view + h.results_offset, &results, sizeof results);
  std::memcpy(view + h.results_offset + sizeof results, times,
              n_kernels * h.max_rounds * sizeof(double));
}

}  // namespace ollie::runner::child
