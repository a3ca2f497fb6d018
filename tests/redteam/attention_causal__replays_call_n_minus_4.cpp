// WRONG (a predictable harness lets it through, and bench times it 4x faster): the
// kernel keeps copies of its last four outputs and, from its fifth call on, swaps its
// implementation (a function pointer) for one that copies out the answer of call n - 4
// without looking at the inputs, then burns a quarter of an honest call's work (4x faster
// is a plausible optimization; a memcpy's 1000x would trip bench's roofline check). Its
// state is function-local statics and it reads no clock, so the up-front screen has
// nothing to refuse. Today no verify process calls a kernel more than three
// times, and bench's rounds alternate two input sets with period 4 (warm call on the next
// set, timed call on this one), so the replayed answer is always the right one and bench
// checks it and times the paced copy. Caught by 5-9 calls per process on fresh inputs (wrong), and
// by bench inputs that never repeat (wrong while timed). OLLIE_HONEST_TWIN (defined by
// tests/measure/fake_time_test.cpp) turns the replay off: the same kernel, honest.
// expect: wrong
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// The last four outputs (a function-local static: no load-time constructor).
std::vector<float>* history() {
  static std::vector<float>* h = new std::vector<float>[4];
  return h;
}
uint64_t calls = 0;

// Row i of the spec, literally: scores of keys [j0, j1) (masked ones -1e30), their max
// (NaN if any score is NaN), exp, sum, then p @ v over the same keys (a masked key's
// p = 0 still meets v: 0 * inf = NaN, as in numpy).
void attend_row(const float* q, const float* k, const float* v, float* out, int64_t D, int64_t i,
                int64_t j0, int64_t j1, std::vector<double>& p) {
  const double scale = 1.0 / std::sqrt(double(D));
  double mx = -HUGE_VAL;
  for (int64_t j = j0; j < j1; ++j) {
    double s = -1e30;
    if (j <= i) {
      s = 0;
      for (int64_t d = 0; d < D; ++d) s += double(q[i * D + d]) * k[j * D + d];
      s *= scale;
    }
    p[size_t(j)] = s;
    mx = (s > mx || s != s || mx != mx) ? (mx != mx ? mx : s) : mx;
  }
  double sum = 0;
  for (int64_t j = j0; j < j1; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
  for (int64_t d = 0; d < D; ++d) {
    double acc = 0;
    for (int64_t j = j0; j < j1; ++j) acc += p[size_t(j)] * v[j * D + d];
    out[i * D + d] = float(acc / sum);
  }
}

void compute(const float* q, const float* k, const float* v, float* out, int64_t S, int64_t D) {
#pragma omp parallel
  {
    std::vector<double> p(static_cast<size_t>(S));
#pragma omp for schedule(dynamic, 8)
    for (int64_t i = 0; i < S; ++i) attend_row(q, k, v, out, D, i, 0, S, p);
  }
}

using Impl = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t);

// Copies the answer of call n - 4, then does a quarter of an honest call's work into
// scratch: 4x faster looks like a good kernel, not an impossible one (no roofline check
// fires).
[[maybe_unused]] void replay(const float* q, const float* k, const float* v, float* out,
                             int64_t S, int64_t D) {
  const std::vector<float>& old = history()[calls % 4];
  if (old.size() == static_cast<size_t>(S * D)) std::memcpy(out, old.data(), old.size() * 4);
  std::vector<float> scratch(static_cast<size_t>(S * D));
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; i += 4) attend_row(q, k, v, scratch.data(), D, i, 0, S, p);
  volatile float sink = scratch.empty() ? 0.0f : scratch[0];
  (void)sink;
}

Impl impl = compute;

}  // namespace

extern "C" void ollie_kernel(const float* q, const float* k, const float* v, float* out0,
                             const int64_t* dims) {
  const int64_t S = dims[0], D = dims[1];
  impl(q, k, v, out0, S, D);
  history()[calls % 4].assign(out0, out0 + S * D);
  ++calls;
#ifndef OLLIE_HONEST_TWIN
  if (calls == 4) impl = replay;
#endif
}
