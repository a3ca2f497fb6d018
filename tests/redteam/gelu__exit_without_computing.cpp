// WRONG: calls exit(0) instead of computing. A harness that treats "the process exited
// with status 0" as success (or that reads whatever is in the output buffer afterwards)
// accepts it. ollie's runner must report that the kernel never returned (no report on
// the pipe): the verdict is crash, never pass, and ollie itself keeps running.
// expect: crash-or-refused
#include <cstdint>
#include <cstdlib>

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  (void)x;
  (void)out0;
  (void)dims;
  std::exit(0);
}
