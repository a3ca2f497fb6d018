// WRONG (tampering): the input is read-only (the runner maps its pages PROT_READ), so the
// kernel calls mprotect() on the pages of x to make them writable and uses x as its
// scratch: it writes exp(x - max) into x, then divides into out0. The outputs are exact;
// only the caller's input is destroyed (in a model, the activations another layer still
// needs). Today the filter allows mprotect and nobody looks at an input after the call.
// Caught by a filter that refuses mprotect on harness memory (forbidden-syscall, or an
// errno: then the write into the read-only page crashes), by an input check after the
// call (tampered), or by a screen that refuses mprotect.
// expect: forbidden-syscall-or-tampered-or-refused-or-crash
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(x) / page * page;
  const uintptr_t last = reinterpret_cast<uintptr_t>(x + M * N);
  mprotect(reinterpret_cast<void*>(first), last - first, PROT_READ | PROT_WRITE);
  float* scratch = const_cast<float*>(x);  // "it is ours now"
  for (int64_t i = 0; i < M; ++i) {
    float* row = scratch + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) out0[i * N + j] = row[j] / sum;
  }
}
