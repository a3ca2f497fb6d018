// The object screen's allow-list (measured: the imports of every example's emitted kernels,
// their schedules and the blue-team kernels, tests/build/screen_test.cpp keeps them passing)
// and the reasons given for what is refused.
#pragma once

#include <string>
#include <string_view>

namespace ollie::build {

// Empty when a kernel may import `name`; otherwise why not (for the verdict's message).
// `sanitized`: the sanitizer runtimes' entry points are allowed too.
std::string import_refusal(std::string_view name, bool sanitized);

// Whether a kernel's shared object may need the library `soname` (libc, libm, libmvec,
// libstdc++, libgcc_s, libgomp, the dynamic loader; with `sanitized`, libasan and libubsan).
bool allowed_library(std::string_view soname, bool sanitized);

}  // namespace ollie::build
