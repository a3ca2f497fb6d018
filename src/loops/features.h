// Features of a lowered loop nest for the search's cost model (docs/search.md, "The cost
// model"): per store (one per stage, and per accumulator or pack copy) and summed over the
// kernel, the work and the memory it touches at each level of its nest, estimated from the
// trip counts at the bound dims. Pure functions of a loops::Kernel and the dims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "loops/loops.h"

namespace ollie::loops {

// One level of a store's nest: the loop at that depth with everything inside it, for one
// iteration of the loops outside it. The last level is the store itself (one execution).
struct LevelFeatures {
  std::string loop;  // the loop's variable; "" for the store's own level
  ForKind kind = ForKind::Serial;
  int64_t trip = 1;  // the loop's trip count (1 for the store's own level)
  double flops = 0;  // float operations executed inside
  double bytes = 0;  // distinct bytes touched inside (each access's footprint, summed)
};

struct StoreFeatures {
  std::string buffer;                 // the buffer stored to
  std::vector<LevelFeatures> levels;  // outermost loop first, then the store's own level
  double executions = 0;              // times the store runs per call
  double flops = 0;                   // per call (levels[0].flops)
  double bytes = 0;                   // distinct bytes per call (levels[0].bytes)
  double accessed_bytes = 0;          // every load and the store, every time, per call
  int64_t vector_lanes = 0;           // trip count of the vectorized loop around it; 0: none
  int64_t innermost_trip = 1;         // trip count of the innermost loop around it
  int64_t accumulator_elements = 0;   // elements of the local accumulator array it updates
                                      //   inside a reduction loop; 0: not an accumulator
  // Reuse: for each load, the innermost loop whose variable its index does not mention
  // (every iteration reads the same element again); the distinct bytes the store touches
  // in one iteration of that loop are touched between two uses. The largest over the
  // loads that are reused; 0 when none is.
  double reuse_bytes = 0;
  int64_t parallel_extent = 0;  // iterations of the parallel loops around it; 0: serial
  int unrolled_loops = 0;       // unrolled loops around it...
  int64_t unroll_factor = 1;    // ...and the product of their trip counts
};

struct KernelFeatures {
  std::vector<StoreFeatures> stores;  // in program order
  // Sums over the stores.
  double flops = 0, bytes = 0, accessed_bytes = 0;
  int64_t accumulator_elements = 0;  // elements of the accumulator arrays (registers)
  int64_t local_bytes = 0;           // bytes of every local allocation
  int64_t parallel_regions = 0;      // parallel loops entered per call (outermost ones)
  int vectorized_loops = 0, unrolled_loops = 0, parallel_loops = 0;  // For nodes of each kind
};

// The features of `kernel` with its dims bound to `dims`. Trip counts are evaluated with
// the enclosing loops' variables at their first iteration (so a split's tail guard
// `min(F, N - i*F)` counts F), and of an `if` (loop versioning) only the first branch,
// the fast path with constant trip counts, is counted.
KernelFeatures kernel_features(const Kernel& kernel, const ir::DimBindings& dims);

}  // namespace ollie::loops
