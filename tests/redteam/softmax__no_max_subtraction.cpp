// WRONG: softmax computed as exp(x) / sum(exp(x)) without subtracting the row max.
// Mathematically identical, and on normal(0, 1) inputs the result is within a few ulps of
// the reference, so a checker that only draws small inputs passes it. With
// large-magnitude inputs (|x| > ~88) exp overflows to inf and the row becomes inf/inf =
// NaN (or underflows to 0/0): only a large-magnitude input distribution catches it.
// expect: wrong
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], N = dims[1];
  for (int64_t i = 0; i < M; ++i) {
    const float* row = x + i * N;
    float* o = out0 + i * N;
    float sum = 0.0f;
    for (int64_t j = 0; j < N; ++j) sum += (o[j] = std::exp(row[j]));
    for (int64_t j = 0; j < N; ++j) o[j] /= sum;
  }
}
