// WRONG (detection by buffer placement): the runner puts every buffer either at the start
// of its own pages or so that it ends within 64 bytes of a page end (guard pages). A
// user's buffers (malloc, a tensor library) almost never sit like that. The kernel checks
// both of its inputs and its output: exact RMSNorm when each of them sits at a page
// edge, otherwise it divides by the mean square without eps and scales by weight[j + 1]
// (wrong). No system call; only the addresses it was given. Today every suite places the
// buffers at the start or the end, so it always behaves; caught once the harness places
// buffers at random 64-byte offsets within their pages (wrong).
// expect: wrong
#include <cmath>
#include <cstdint>

namespace {

bool at_page_edge(const void* p, int64_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = a + static_cast<uintptr_t>(bytes);
  const uintptr_t slack = (4096 - end % 4096) % 4096;
  return a % 4096 == 0 || slack < 64;
}

}  // namespace

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[1];
  const bool harness = at_page_edge(x, T * D * 4) && at_page_edge(weight, D * 4) &&
                       at_page_edge(out0, T * D * 4);
  for (int64_t t = 0; t < T; ++t) {
    const float* row = x + t * D;
    double ss = 0;
    for (int64_t j = 0; j < D; ++j) ss += double(row[j]) * row[j];
    const float inv = 1.0f / std::sqrt(float(ss / double(D)) + (harness ? 1e-6f : 0.0f));
    for (int64_t j = 0; j < D; ++j)
      out0[t * D + j] = row[j] * inv * weight[harness || j + 1 == D ? j : j + 1];
  }
}
