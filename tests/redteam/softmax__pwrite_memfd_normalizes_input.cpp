// WRONG (tampering through the harness's own descriptor): the runner's shared memory is
// fd 3 of the kernel's process. The kernel reads the request header and buffer table
// from it (pread), finds which buffer is its input x (the one whose first bytes in the
// file are x's), and writes exp(x - max) over the input
// THROUGH THE FILE (pwrite): the read-only mapping does not stop a write to the file
// behind it. It then divides the (rewritten) x into out0: exact outputs, a destroyed
// input. Where fd 3 is closed, the pwrite fails, x stays raw and the output is wrong: the
// kernel is rejected either way. Today nothing stops or checks it. Caught by closing
// every descriptor the kernel does not need (wrong), an input check after every call
// (tampered), a filter that refuses pwrite (forbidden-syscall), or a screen (refused).
// expect: refused-or-forbidden-syscall-or-tampered-or-wrong
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// protocol.h's RequestHeader and Buffer, as far as the kernel needs them (version 6).
struct Header {
  char magic[8];
  uint32_t version, n_inputs, n_outputs, n_dims;
  uint64_t total_size, header_size;
};
struct Buffer {
  uint64_t offset, bytes;
};

// The memfd offset of x (-1 when it cannot be found): the buffer whose first bytes in
// the file are x's first bytes (every call's inputs are fresh random numbers).
int64_t offset_of(const float* x, int64_t n) {
  Header h{};
  if (pread(3, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return -1;
  if (std::memcmp(h.magic, "OLLIERQ1", 8) != 0) return -1;
  std::vector<Buffer> b(256);
  // The buffer table follows the header: sizeof(RequestHeader) is 136 in version 6.
  const ssize_t got = pread(3, b.data(), b.size() * sizeof(Buffer), 136);
  const size_t count = got > 0 ? static_cast<size_t>(got) / sizeof(Buffer) : 0;
  const size_t bytes = static_cast<size_t>(std::min<int64_t>(n, 16)) * sizeof(float);
  for (size_t i = 0; i < count; ++i) {
    if (b[i].bytes != static_cast<uint64_t>(n) * sizeof(float) || b[i].offset % 64 != 0) continue;
    float head[16];
    if (pread(3, head, bytes, static_cast<off_t>(b[i].offset)) == static_cast<ssize_t>(bytes) &&
        std::memcmp(head, x, bytes) == 0)
      return static_cast<int64_t>(b[i].offset);
  }
  return -1;
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  const int64_t at = offset_of(x, M * N);
  std::vector<float> e(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (e[size_t(j)] = std::exp(row[j] - mx));
    // Into the input, through the file; then read back through the (read-only) mapping.
    if (at >= 0) (void)pwrite(3, e.data(), size_t(N) * sizeof(float), at + i * N * 4);
    for (int64_t j = 0; j < N; ++j) out0[i * N + j] = row[j] / sum;
  }
}
