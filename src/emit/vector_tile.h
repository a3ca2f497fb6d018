// Register micro-kernels: a full `accumulate` tile emitted as named vector values (GCC/Clang
// vector extensions) rather than a C array the compiler may leave in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "loops/loops.h"

namespace ollie::emit {

// What the vector form borrows from the plain printer: the text of a scalar expression and
// a whole statement in the plain form.
struct PlainPrinter {
  std::function<std::string(const loops::Expr&)> expr;
  std::function<void(const loops::Stmt&, int depth, std::ostringstream&)> stmt;
};

// The reduction steps a vector tile's innermost reduction loop runs per trip (the loads of
// the next step written before the updates of the current one).
constexpr int kTileUnroll = 4;

// Writes the accumulator tile `alloc` (an Allocate marked register_tile) in the vector form
// for vectors of `vector_bytes` bytes: each vector of the tile's innermost (vectorized) loop
// one named local, the other tile loops written out, the reduction loop around the tile
// unrolled by kTileUnroll. Only the full tile takes this form; a tile cut by a split tail
// keeps the plain one. Each element adds its terms in the same order as the plain form
// (lanes are distinct elements). Returns false, writing nothing, where the form does not
// apply: vectors under 32 bytes, an element type other than float or double, a tile of
// more vectors than the registers hold, an update other than the arithmetic of loads.
bool emit_vector_tile(const loops::Stmt& alloc, int vector_bytes, int depth,
                      const PlainPrinter& plain, std::ostringstream& out);

// The coefficient of `var` in the index `e` when `e` is affine in it with a constant
// coefficient (0 when `e` does not mention it); nullopt otherwise.
std::optional<int64_t> stride_of(const loops::Expr& e, const std::string& var);

// The vector types and helpers the vector form uses, once per translation unit.
extern const char* kVectorHelpers;

}  // namespace ollie::emit
