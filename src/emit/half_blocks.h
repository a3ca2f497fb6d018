// Blocks of 16-bit float loads and stores in plain vectorized loops: an ABI buffer of
// float16 or bfloat16 walked with unit stride by the loop is converted 16 lanes at a time
// by ollie_half's vector conversions (F16C's vcvtph2ps / vcvtps2ph and AVX512_BF16's
// vcvtneps2bf16 where the machine has them, bit-exact with the scalar ones) rather than
// lane by lane through the integer formulas, which GCC cannot turn into those instructions.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "emit/vector_tile.h"
#include "loops/loops.h"

namespace ollie::emit {

// The lanes of a block: one 64-byte vector of float (two of 8 where the machine has no
// AVX-512), as many as a vectorized sum's chunk (emit.cpp's kSumLanes).
inline constexpr int kHalfBlockLanes = 16;

// One block: the elements buffer[index] of kHalfBlockLanes consecutive values of the loop
// variable, held in the vector local `name`.
struct HalfBlock {
  std::string buffer;
  loops::Expr index;  // in terms of the loop variable (coefficient 1)
  bool store = false;
  std::string name;
};

// The blocks of loop variable `var` in `stores` (statements of the loop body, each a Store)
// and `values` (the expressions the body computes): each load of an ABI buffer in
// `half_buffers` whose index has coefficient 1 in `var`, and each store to one, unless the
// body both loads and stores that buffer or stores it twice (a block would reorder those
// accesses). Loads of one buffer at one index share a block. Names start with `prefix`.
std::vector<HalfBlock> half_blocks(const std::vector<loops::Stmt>& stores,
                                   const std::vector<loops::Expr>& values, const std::string& var,
                                   const std::map<std::string, ir::DType>& half_buffers,
                                   const PlainPrinter& plain, const std::string& prefix);

// What a load or store of a block's element reads as in the text of the loop body: its
// buffer and index text ("x[(t * D) + d]") -> the block's lane ("x_h0[d_lane]").
std::map<std::string, std::string> half_block_lanes(const std::vector<HalfBlock>& blocks,
                                                    const std::string& lane,
                                                    const PlainPrinter& plain);

// Written before the lanes' loop: a load block converted from the buffer at the chunk's
// first element (the loop variable at `chunk`), a store block declared.
void write_half_block_heads(const std::vector<HalfBlock>& blocks, const std::string& var,
                            const std::string& chunk, const std::string& pad,
                            const PlainPrinter& plain, std::ostringstream& out);
// Written after it: each store block converted into its buffer.
void write_half_block_tails(const std::vector<HalfBlock>& blocks, const std::string& var,
                            const std::string& chunk, const std::string& pad,
                            const PlainPrinter& plain, std::ostringstream& out);

}  // namespace ollie::emit
