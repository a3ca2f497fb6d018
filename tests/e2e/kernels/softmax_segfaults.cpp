// A kernel in the ollie ABI that crashes (writes through a null pointer): `ollie
// run-kernel` must report the crash and keep running itself.
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out, const int64_t* dims) {
  volatile float* nowhere = nullptr;
  *nowhere = x[0] + static_cast<float>(dims[0]);
  out[0] = 0.0f;
}
