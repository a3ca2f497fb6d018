// A kernel that does not compile: `ollie run-kernel` must show the compiler's error.
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out, const int64_t* dims) {
  out[0] = x[0] + undeclared_variable;
}
