// libFuzzer target for the spec front end: any input must either compile or fail with a
// UserError. A crash, a sanitizer report, or any other exception escaping is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/spec.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  try {
    ollie::spec::compile_spec("fuzz.py", source, {});
  } catch (const ollie::UserError&) {
    // Bad input, reported as such: the expected outcome for most inputs.
  }
  return 0;
}
