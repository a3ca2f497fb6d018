// WRONG: indexes wte with the id as it is, as C does, with no wrap: a negative id reads
// -id rows BEFORE the table, out of bounds (numpy would read row id + V). Right for every
// id >= 0. The read lands in the guard pages around the buffer (a crash), or in other
// memory (wrong values), or the sanitizer build flags it.
// expect: wrong-or-crash-or-sanitizer
#include <cmath>
#include <cstdint>

extern "C" void ollie_kernel(const int64_t* ids, const float* wte, const float* wpe,
                             const float* gamma, const float* beta, float* out0,
                             const int64_t* dims) {
  const int64_t T = dims[0], D = dims[2];
  for (int64_t t = 0; t < T; ++t) {
    const float* row = wte + ids[t] * D;  // BUG: no wrap of negative ids
    float mean = 0.0f;
    for (int64_t d = 0; d < D; ++d) mean += row[d] + wpe[t * D + d];
    mean /= static_cast<float>(D);
    float var = 0.0f;
    for (int64_t d = 0; d < D; ++d) {
      const float c = row[d] + wpe[t * D + d] - mean;
      var += c * c;
    }
    const float inv = 1.0f / std::sqrt(var / static_cast<float>(D) + 1e-5f);
    for (int64_t d = 0; d < D; ++d)
      out0[t * D + d] = (row[d] + wpe[t * D + d] - mean) * inv * gamma[d] + beta[d];
  }
}
