// FAKE TIME (rewrites its own recorded times): the runner's shared memory is fd 3 of the
// kernel's process, and in a timed run the child writes each call's seconds into it
// (protocol.h: TimedResults and then double seconds[n_kernels][max_rounds] at
// header.results_offset). The kernel reads the header through the descriptor, maps the
// memfd a second time read-write, finds which of the (one or two) timed kernels it is by
// its own library path (dladdr), and on every call divides the times recorded so far for
// it by 3 (modest enough that no roofline check fires). Its outputs are an exact matmul,
// so verify passes it and bench checks correct outputs; bench reports it 3x faster than
// it is (the last round's time alone is honest).
// Caught by closing every descriptor the kernel does not need and keeping the times where
// it cannot write (then it is timed like its honest twin), a filter that refuses mmap of
// fd 3 (forbidden-syscall), or a screen (refused).
// OLLIE_HONEST_TWIN (defined by tests/measure/fake_time_test.cpp) leaves the times alone.
// bench: refused-or-honest
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace {

// protocol.h, version 6.
struct Header {
  char magic[8];
  uint32_t version, n_inputs, n_outputs, n_dims;
  uint64_t total_size, header_size;
  uint32_t path_len, flags;
  uint64_t parent_pid;
  uint32_t entry_len, n_calls;
  uint64_t memory_bytes, cpu_seconds;
  uint32_t n_sets, n_kernels, path2_len, entry2_len;
  uint32_t warmup, min_rounds, max_rounds, warm_call;
  double budget_seconds;
  uint64_t flush_bytes, results_offset;
};
static_assert(sizeof(Header) == 136);

double* g_times = nullptr;  // my row of the times, or null
uint32_t g_rounds = 0, g_done = 0;

extern "C" void ollie_kernel(const float*, const float*, float*, const int64_t*);

// My library's path, to tell which of two timed kernels I am.
std::string own_path() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&ollie_kernel), &info) && info.dli_fname
             ? info.dli_fname
             : "";
}

void find_times() {
  Header h{};
  if (pread(3, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return;
  if (std::memcmp(h.magic, "OLLIERQ1", 8) != 0 || h.n_sets == 0) return;
  const uint64_t n_buffers = h.n_inputs + h.n_outputs + uint64_t{h.n_sets} * h.n_inputs +
                             uint64_t{h.n_kernels} * h.n_sets * h.n_outputs;
  const off_t paths = static_cast<off_t>(sizeof h + n_buffers * 16 + h.n_dims * 8);
  uint32_t me = 0;
  if (h.n_kernels == 2) {
    std::string second(h.path2_len, '\0');
    if (pread(3, second.data(), second.size(), paths + h.path_len + h.entry_len) ==
            static_cast<ssize_t>(second.size()) &&
        second == own_path())
      me = 1;
  }
  void* map = mmap(nullptr, h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0);
  if (map == MAP_FAILED) return;
  g_times = reinterpret_cast<double*>(static_cast<char*>(map) + h.results_offset + 16) +
            uint64_t{me} * h.max_rounds;
  g_rounds = h.max_rounds;
}

[[maybe_unused]] void rewrite_times() {
  static const bool found = (find_times(), true);
  (void)found;
  if (!g_times) return;
  for (; g_done < g_rounds && g_times[g_done] > 0 && g_times[g_done] < 1e3; ++g_done)
    g_times[g_done] /= 3;
}

}  // namespace

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
#ifndef OLLIE_HONEST_TWIN
  rewrite_times();
#endif
  const int64_t M = dims[0], K = dims[1], N = dims[2];
#pragma omp parallel for
  for (int64_t i = 0; i < M; ++i) {
    float* row = out0 + i * N;
    for (int64_t j = 0; j < N; ++j) {  // a dot product per element: b read down a column
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      row[j] = acc;
    }
  }
}
