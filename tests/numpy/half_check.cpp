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

// The vector forms (ollie_vload / ollie_vstore, 16 lanes, then the tail by the scalar
// ones), as a kernel's vector form uses them: in a library built with -march=native they
// take the machine's instructions (F16C, AVX512_BF16), in the plain one the integer forms.
// (Inlined: GCC's note on the ABI of a vector value without AVX does not apply.)
#pragma GCC diagnostic ignored "-Wpsabi"
namespace {
template <class T>
void vector_to_float(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const ollie_half::f32x16 v =
        ollie_half::ollie_vload<ollie_half::f32x16>(reinterpret_cast<const T*>(in + i));
    __builtin_memcpy(out + i, &v, sizeof v);
  }
  for (; i < n; ++i) out[i] = reinterpret_cast<const T*>(in)[i];
}
template <class T>
void vector_from_float(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    ollie_half::f32x16 v;
    __builtin_memcpy(&v, in + i, sizeof v);
    ollie_half::ollie_vstore(reinterpret_cast<T*>(out + i), v);
  }
  for (; i < n; ++i) reinterpret_cast<T*>(out)[i] = in[i];
}
}  // namespace

extern "C" {
void ollie_vec_f16_to_float(const uint16_t* in, float* out, size_t n) {
  vector_to_float<ollie_half::f16>(in, out, n);
}
void ollie_vec_bf16_to_float(const uint16_t* in, float* out, size_t n) {
  vector_to_float<ollie_half::bf16>(in, out, n);
}
void ollie_vec_float_to_f16(const float* in, uint16_t* out, size_t n) {
  vector_from_float<ollie_half::f16>(in, out, n);
}
void ollie_vec_float_to_bf16(const float* in, uint16_t* out, size_t n) {
  vector_from_float<ollie_half::bf16>(in, out, n);
}
// Which instructions the vector forms of this build use.
const char* ollie_vec_isa() {
  return
#if defined(__AVX512BF16__)
      "avx512bf16 "
#endif
#if defined(__F16C__)
      "f16c "
#endif
      "integer";
}
}
