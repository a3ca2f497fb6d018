// Internal to the rewrite stage (rewrite.h is its one public header): what a rule is made
// of. A rule looks at one value of a graph and, when it applies there, returns a Build:
// a closure that makes the replacement in the new graph. find_sites only asks whether a
// rule returned one; apply runs it while copying the graph.
//
// The rules are in algebraic.cpp and softmax.cpp; the one table that lists every rule (in
// the order find_sites reports them) and the engine (site text, apply, replay, dead-value
// removal) are in rewrite.cpp.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace ollie::rewrite {

using ir::Builder;
using ir::DimExpr;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::ValueId;

// What a replacement is built with: the new graph's builder, the old-to-new value map
// (every value before the site is already copied), and the site's source location.
struct Context {
  Builder& b;
  const std::vector<ValueId>& mapped;
  SourceLoc loc;
  ValueId m(ValueId old) const { return mapped.at(static_cast<size_t>(old)); }
};

using Build = std::function<ValueId(Context&)>;

// A rule's matcher: the Build when the rule applies at value `id` of `g` in its form
// `variant`, nullopt when it does not; `uses` counts the reads of each value (a result
// counting as one).
using Match = std::optional<Build> (*)(const Graph& g, const std::vector<int>& uses, ValueId id,
                                       int variant);

// ---------------------------------------------------------------------------------------
// Helpers the rules of both files build with.

// `x` (of `shape`) sliced to [start, stop) along axis `a`, every other axis whole.
inline ValueId slice_along(Context& c, ValueId x, const Shape& shape, size_t a,
                           const DimExpr& start, const DimExpr& stop) {
  std::vector<ir::SliceAxis> axes;
  for (const DimExpr& d : shape) axes.push_back({DimExpr::constant(0), d, 1});
  axes[a].start = start;
  axes[a].stop = stop;
  return c.b.slice(x, axes, c.loc);
}

// `scalar` (rank 0, in the new graph) spread over `shape`.
inline ValueId splat(Context& c, ValueId scalar, const Shape& shape) {
  const ValueId ones = c.b.reshape(scalar, Shape(shape.size(), DimExpr::constant(1)), c.loc);
  return c.b.broadcast(ones, shape, c.loc);
}

inline bool float_value(const Graph& g, ValueId id) { return ir::is_float(g.node(id).dtype); }

inline bool distinct(const std::vector<int>& labels) {
  return std::set<int>(labels.begin(), labels.end()).size() == labels.size();
}

// ---------------------------------------------------------------------------------------
// The rules, each a Match (docs/rewrites.md says what each rewrites).

// algebraic.cpp
std::optional<Build> reciprocal(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> normalize_late(const Graph&, const std::vector<int>& uses, ValueId,
                                    int variant);
std::optional<Build> fold_scale(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> distribute(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> associate(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> exp_to_exp2(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> split_reduce(const Graph&, const std::vector<int>& uses, ValueId, int variant);

// softmax.cpp: a softmax computed in blocks along its axis (flash) or in one pass (online).
std::optional<Build> flash(const Graph&, const std::vector<int>& uses, ValueId, int variant);
std::optional<Build> online(const Graph&, const std::vector<int>& uses, ValueId, int variant);

}  // namespace ollie::rewrite
