// WRONG: writes zeros and returns (the fastest "kernel" there is). A checker whose
// tolerance is absolute and loose, or whose test data makes the reference output tiny
// compared with its bound, accepts it. With both a per-element bound and a relative
// floor, and outputs of size ~1, it fails immediately on any random input.
// expect: wrong
#include <cstdint>
#include <cstring>

extern "C" void ollie_kernel(const float* x, const float* weight, float* out0, const int64_t* dims) {
  (void)x;
  (void)weight;
  std::memset(out0, 0, static_cast<size_t>(dims[0] * dims[1]) * sizeof(float));
}
