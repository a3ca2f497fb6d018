// WRONG (escape at compile time): a top-level asm statement with `.incbin "/etc/passwd"`
// makes the assembler copy a file of the machine that compiles the kernel into the
// library's read-only data; the kernel (an exact matmul) could then leak it, one bit
// per call, through timing or a rounding choice. The C++ compiler sees nothing unusual:
// the path is only a string inside an asm statement. Caught only when the compiler runs
// in a jail that sees the source, the system headers and its output directory (the
// assembler then fails: compile-error), or by a screen that refuses top-level asm /
// `.incbin`.
// expect: refused-or-compile-error
#include <cstdint>

asm(".section .rodata\n"
    ".global stolen_passwd\n"
    "stolen_passwd:\n"
    ".incbin \"/etc/passwd\"\n"
    ".byte 0\n"
    ".text\n");
extern "C" const char stolen_passwd[];

extern "C" void ollie_kernel(const float* a, const float* b, float* out0, const int64_t* dims) {
  const int64_t M = dims[0], K = dims[1], N = dims[2];
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
      out0[i * N + j] = acc;
    }
  if (stolen_passwd[0] == '\1') out0[0] += 0.0f;  // "uses" the file: kept by the linker
}
