// WRONG (writes after returning): starts a std::thread that spins some 50 ms (a counted
// loop: sleeping would be refused by the screen, as clocks and sleeps are) and then
// computes and writes the output, detaches it and returns at once, so the measured
// "kernel time" is microseconds. A harness that reads the output only after a sleep, at
// process exit, or after timing many calls may see correct values; a checker that reads
// the outputs as soon as the call returns sees the untouched (poisoned) buffer. The late
// write can also land in a buffer the checker has already reused for another trial.
// expect: wrong-or-tampered
#include <cmath>
#include <cstdint>
#include <thread>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  const int64_t n = dims[0] * dims[1];
  std::thread([x, out0, n] {
    volatile int64_t spin = 0;
    while (spin < 100000000) spin = spin + 1;
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      out0[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    }
  }).detach();
}
