// A C interface to support/half.h for tests/numpy/test_half.py (loaded with ctypes), so
// the conversions every kernel and the reference use are checked against numpy and
// ml_dtypes themselves: each function converts n values from one buffer into another.
#include <cstddef>
#include <cstdint>

#include "support/half.h"

extern "C" {

void ollie_float_to_f16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::float_to_f16(in[i]);
}
void ollie_double_to_f16(const double* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::double_to_f16(in[i]);
}
void ollie_float_to_bf16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::float_to_bf16(in[i]);
}
void ollie_double_to_bf16(const double* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::double_to_bf16(in[i]);
}
void ollie_f16_to_float(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::f16_to_float(in[i]);
}
void ollie_bf16_to_float(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ollie_half::bf16_to_float(in[i]);
}
}
