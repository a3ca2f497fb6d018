// WRONG: copies the input to the output (gelu(x) ~ x for large positive x, and the shapes
// match). A checker that only looks at shapes, or at the sign pattern of large values,
// passes it; any value check on random inputs rejects it.
// expect: wrong
#include <cstdint>
#include <cstring>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  std::memcpy(out0, x, static_cast<size_t>(dims[0] * dims[1]) * sizeof(float));
}
