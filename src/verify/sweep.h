// The shape sweep's dims: per run, stratified draws that give every dim of a generic
// kernel every remainder mod 16 (so mod 4 and 8), a multiple of 256 (so of 64 and 16), a
// size over twice its bound, and the sizes 1, 2 and 3; one dim at a time grows, the others
// shrink until each draw's cost stays within a share of the bound dims' cost.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "verify/verify.h"

namespace ollie::verify {

// Draws per run: one per remainder mod 16.
constexpr int kSweepDraws = 16;
// Each draw's cost (sweep_cost) at most this share of the
// bound dims' cost, as far as shrinking the dims not pinned by the stratification allows.
constexpr double kSweepDrawShare = 0.05;
// A draw with a large size costs at most this share of the bound dims' cost, as far as
// bringing that size down toward twice its bound allows.
constexpr double kSweepLargeShare = 0.3;
// A draw with a large size keeps at least this many result elements (or the bound dims'
// count, when smaller) while its other sizes shrink toward the cost share.
constexpr double kSweepLargeElements = 16;

// The sweep's dims for the base seed `seed`, before the spec is asked whether it accepts
// them: `draws` bindings of every dim of `g` (at least kSweepDraws for the guarantees).
// For each dim, draw j has remainder perm(j) mod 16 for a random permutation perm; the
// draw with remainder 0 is a multiple of 256, those with remainders 1, 2, 3 are 1, 2, 3;
// one draw per dim (a different one for each dim while there are enough) is in
// [2 * bound + 1, 4 * bound] (the smallest such size with its remainder); the others
// are mixed sizes, half of them next to a multiple of 64. Then each draw is shrunk
// (remainders kept) toward kSweepDrawShare of the bound cost, and a large size toward
// 2 * bound + 1 while its draw costs more than kSweepLargeShare of it. Deterministic in
// `seed`.
std::vector<ir::DimBindings> sweep_dims(const ir::Graph& g, uint64_t seed, int draws = kSweepDraws);

// The cost sweep_dims bounds, a proxy for the reference interpreter's work: ir::cost's
// FLOPs plus 4 per element of every value of `g` at `dims` (0 when the graph's shapes
// cannot be evaluated there).
double sweep_cost(const ir::Graph& g, const ir::DimBindings& dims);

// The elements of the results of `g` at `dims` (0 when the shapes cannot be evaluated).
double sweep_result_elements(const ir::Graph& g, const ir::DimBindings& dims);

// The sweep's graphs: each of sweep_dims through `graph_at`. A draw the spec rejects
// (graph_at throws UserError) is tried with one dim one larger (a spec that needs an even
// size), else keeps as many of its drawn sizes as the spec accepts, one dim at a time
// over the bound dims (tied dims), dropped when that costs more than 4 * kSweepDrawShare
// of the bound dims and twice the draw; draws equal to the bound dims are dropped.
std::vector<ir::Graph> sweep_graphs(const ir::Graph& g, const GraphAt& graph_at, uint64_t seed,
                                    int draws = kSweepDraws);

}  // namespace ollie::verify
