// The up-front screen of candidate kernels (issue 16): a source screen before compiling
// (inline assembly, load-time constructors, include paths, sanitizer detection, ...) and an
// object screen after it (the shared object's imports, load-time code and libraries), so a
// candidate that asks for what a kernel never needs gets the verdict `refused` with the
// reason, before any of its code runs. The sandbox (runner's seccomp filter) is the
// backstop; the screen names the problem where the filter only kills.
#pragma once

#include <string>
#include <vector>

#include "build/build.h"

namespace ollie::build {

// One reason to refuse: where ("kernel.cpp:12:5", or the shared object's file name) and why.
struct Refusal {
  std::string where;
  std::string reason;
  std::string text() const { return where + ": " + reason; }
};

// The candidate's own text `source`, named `name` in the reasons: inline assembly
// (asm, __asm__), attributes that run or place code at load time or hide it from the
// sanitizers (constructor, destructor, init_priority, section, ifunc, alias, weak,
// visibility, no_sanitize, ...), #include of anything but <system headers> and plain
// "file.h" names next to the kernel, computed includes, __has_include of a path, sanitizer
// detection (__SANITIZE_ADDRESS__, __has_feature, _GLIBCXX_SANITIZE_*), sanitizer runtime
// names (__asan_*, __ubsan_*, ...), _GLOBAL__*, the environment (environ, getenv, ...),
// system-call and process names (syscall, prctl, fork, dlopen, ...), the caller's frame
// (__builtin_frame_address/__builtin_return_address), the time-stamp counter, MXCSR
// writes, and string literals naming /proc, /dev/ or /sys/. Comments never count; string
// literals count only for those paths. Every finding, in source order (empty: passes).
std::vector<Refusal> screen_source(const std::string& name, const std::string& source);

// The object screen of the shared object at `so_path` (ELF64, read with <elf.h>): every
// undefined dynamic symbol must be on the allow-list of what kernels use (math and
// libmvec, memory and allocation, operator new/delete, the C++ runtime and libstdc++
// pieces, OpenMP, threads); load-time code beyond the toolchain's own (init/fini array
// entries other than frame_dummy/__do_global_dtors_aux, .ctors/.dtors, .preinit_array,
// ifunc resolvers) and libraries beyond libc/libm/libmvec/libstdc++/libgcc_s/libgomp are
// refused. `sanitized`: the ASan/UBSan build, whose runtime imports and libraries are
// allowed. An unreadable or malformed file is one refusal saying so.
std::vector<Refusal> screen_object(const std::string& so_path, bool sanitized = false);

// The undefined dynamic symbols of `so_path` (for tests and measurement); throws
// UserError when the file is not a readable ELF64 shared object.
std::vector<std::string> imported_symbols(const std::string& so_path);

// A build behind both screens: the source screen on every unit (a refused source is never
// compiled), then driver.compile, then the object screen on a successful build.
struct ScreenedResult {
  Result built;                   // the build (default, not ok, when refused before compiling)
  std::vector<Refusal> refusals;  // empty: passed both screens
  double screen_seconds = 0;      // time spent in the two screens
  bool refused() const { return !refusals.empty(); }
  // "refused: the kernel asks for what a kernel never needs:\n<where>: <why>\n..." (at most
  // eight reasons, then how many more).
  std::string message() const;
};
ScreenedResult compile_screened(Driver& driver, const Request& request, bool sanitized = false);

}  // namespace ollie::build
