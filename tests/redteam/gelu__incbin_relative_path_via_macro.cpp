// WRONG (escape at compile time), a second form: the `.incbin` is assembled from macros
// (#x stringizing, string-literal concatenation) inside a basic `__asm__` in a function,
// and the path is relative: enough "../" to climb from whatever directory the compiler
// runs in to the root, then etc/hostname. No absolute path and no ".incbin" token appear
// literally in the source ("inc" "bin" are two literals). The kernel is an exact tanh
// GELU. Caught only by a compiler jail (the file is not there: compile-error) or by a
// screen that looks at preprocessed text or refuses asm altogether.
// expect: refused-or-compile-error
#include <cmath>
#include <cstdint>

#define STR2(x) #x
#define STR(x) STR2(x)
#define UP ../../../../../../../../../../../../../..
#define DIRECTIVE "." "inc" "bin"

extern "C" const char host_name_blob[];

extern "C" void ollie_kernel(const float* x, float* out0, const int64_t* dims) {
  __asm__(".pushsection .rodata\n"
          ".global host_name_blob\n"
          "host_name_blob:\n" DIRECTIVE " \"" STR(UP/etc/hostname) "\"\n"
          ".byte 0\n"
          ".popsection\n");
  const int64_t n = dims[0] * dims[1];
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    out0[i] = float(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
  }
  if (host_name_blob[0] == '\1') out0[0] += 0.0f;
}
