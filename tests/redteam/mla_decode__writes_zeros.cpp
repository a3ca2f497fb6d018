// WRONG: writes zeros. mla_decode's outputs are sums of hundreds of products, so with
// raw normal(0, 1) inputs (unscaled weights, scores in the hundreds) the derived error
// bound of most elements is LARGER than the output itself: zero "agrees" on ~97% of the
// elements and is caught only by the few largest outputs. A checker must make sure its
// tests can tell an answer from zero: a relative floor on the bound (never wider than a
// fraction of |expected|) and input scales like the spec's own (w / sqrt(L)) that keep
// the bound meaningful.
// expect: wrong
#include <cstdint>
#include <cstring>

extern "C" void ollie_kernel(const float* q_nope, const float* q_pe, const float* c_kv, const float* k_pe,
                             const float* w_uk, const float* w_uv, float* out0, const int64_t* dims) {
  (void)q_nope, (void)q_pe, (void)c_kv, (void)k_pe, (void)w_uk, (void)w_uv;
  std::memset(out0, 0, static_cast<size_t>(dims[0] * dims[1] * dims[6]) * sizeof(float));
}
