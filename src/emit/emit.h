// The C++ emitter (stage 3b): writes a lowered loop-nest Kernel as C++ source in the
// kernel ABI of docs/design.md section 3, and the `<entry>.ollie.h` header that documents it.
#pragma once

#include <string>

#include "ir/ir.h"
#include "loops/loops.h"

namespace ollie::emit {

// The name every kernel exports unless told otherwise (docs/design.md section 3).
inline constexpr const char* kDefaultSymbol = "ollie_kernel";

struct EmitOptions {
  std::string symbol = kDefaultSymbol;  // the function's name (tests put many kernels in one TU)
  bool prelude = true;                  // the comment header, includes and helpers
  std::string schedule_text;            // recorded in the comment header when not empty
  // The SIMD width the register tiles are written for (vector_tile.h): 64 (AVX-512) or
  // 32 (AVX2) gives the vector form, less the plain one; 0: the host's, or the
  // environment's OLLIE_VECTOR_BYTES (16, 32 or 64) when set.
  int vector_bytes = 0;
};

// The kernel translation unit: a comment header naming the spec entry, its dims and the
// schedule, the includes and small helpers it needs (kernel_prelude), and the definition
// of ollie_kernel.
std::string emit_kernel(const loops::Kernel& kernel, const ir::Graph& graph,
                        const EmitOptions& options = {});
// The includes and helpers every kernel needs, once per translation unit; with `half`,
// also the float16/bfloat16 conversions and storage types (support/half.h) a kernel
// with a 16-bit float value needs, and the bf16 dot-product micro-kernel a bf16_dot stage
// calls (support/bf16_dot.h).
std::string kernel_prelude(bool half = false);

// The C++ type of a dtype in the ABI: float, double, int32_t, int64_t, bool, and uint16_t
// (the bit pattern) for f16 and bf16. A kernel computes f16 and bf16 values in float.
const char* c_type(ir::DType t);

// `extern "C" void ollie_kernel(...)` exactly as the ABI (docs/design.md section 3)
// spells it, ending in ';'; `symbol` names the function instead of ollie_kernel.
std::string kernel_declaration(const ir::Graph& graph, const std::string& symbol = kDefaultSymbol);

// `<entry>.ollie.h`: the declaration (of `symbol`), each parameter's annotation, the dims
// order and the sizes bound for this run as constexpr values (in namespace ollie_dims, or
// <symbol>_dims for another symbol).
std::string emit_header(const ir::Graph& graph, const std::string& symbol = kDefaultSymbol);

// The kernel's exported name (`--symbol`, src/emit/symbol.cpp). UserError naming --symbol
// unless `symbol` is a C identifier that is no C/C++ keyword and not one of the adapter's
// own names (ollie_entry, ollie_signature).
void check_symbol(const std::string& symbol);
// Letters, digits and '_', not starting with a digit.
bool is_c_identifier(const std::string& s);
// `source` with every whole-word ollie_kernel renamed to `symbol` (itself for the default):
// how a stored candidate (always ollie_kernel) is written out under another name.
std::string with_symbol(const std::string& source, const std::string& symbol);

}  // namespace ollie::emit
