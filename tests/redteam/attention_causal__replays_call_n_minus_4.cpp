// WRONG (a predictable harness lets it through, and bench times it as 100x faster):
// the kernel keeps copies of its last four outputs and, from its fifth call on, swaps its
// implementation (a function pointer) for one that copies out the answer of call n - 4
// without looking at the inputs. Today no verify process calls a kernel more than three
// times, and bench's rounds alternate two input sets with period 4 (warm call on the next
// set, timed call on this one), so the replayed answer is always the right one and bench
// checks and times a memcpy. Caught by 5-9 calls per process on fresh inputs (wrong), and
// by bench inputs that never repeat (wrong while timed). OLLIE_HONEST_TWIN (defined by
// tests/measure/fake_time_test.cpp) turns the replay off: the same kernel, honest.
// expect: wrong
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

std::vector<float> history[4];
uint64_t calls = 0;

void compute(const float* q, const float* k, const float* v, float* out, int64_t S, int64_t D) {
  const double scale = 1.0 / std::sqrt(double(D));
#pragma omp parallel
  {
    std::vector<double> p(static_cast<size_t>(S));
#pragma omp for schedule(dynamic, 8)
    for (int64_t i = 0; i < S; ++i) {
      double mx = -1e300;
      for (int64_t j = 0; j <= i; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(q[i * D + d]) * k[j * D + d];
        mx = std::fmax(mx, p[size_t(j)] = s * scale);
      }
      double sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j) acc += p[size_t(j)] * v[j * D + d];
        out[i * D + d] = float(acc / sum);
      }
    }
  }
}

using Impl = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t);

void replay(const float*, const float*, const float*, float* out, int64_t S, int64_t D) {
  const std::vector<float>& old = history[calls % 4];
  if (old.size() == static_cast<size_t>(S * D)) std::memcpy(out, old.data(), old.size() * 4);
}

Impl impl = compute;

}  // namespace

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0,
                             const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  impl(q, k, v, out0, S, D);
  history[calls % 4].assign(out0, out0 + S * D);
  ++calls;
#ifndef OLLIE_HONEST_TWIN
  if (calls == 4) impl = replay;
#endif
}
