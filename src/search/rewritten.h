// The graph a candidate's schedule refers to: the spec's graph after the candidate's
// rewrite chain (src/rewrite/), replayed on demand and kept in a small cache per proposer;
// and the emitting both proposers share.
#pragma once

#include <list>
#include <string>
#include <utility>

#include "ir/ir.h"
#include "loops/loops.h"
#include "search/search.h"

namespace ollie::search {

class RewrittenGraphs {
 public:
  explicit RewrittenGraphs(const ir::Graph& spec, size_t capacity = 8)
      : spec_(spec), capacity_(capacity) {}
  // The spec's graph after `chain` (the spec's own graph for an empty chain). Throws
  // UserError when the chain does not replay.
  const ir::Graph& at(const std::string& chain);

 private:
  const ir::Graph& spec_;
  size_t capacity_;
  std::list<std::pair<std::string, ir::Graph>> recent_;  // most recently used first
};

// `graph` (the spec's graph after the chain `rewrites`) lowered with `schedule` and
// emitted, as a candidate carrying both.
Candidate emitted_candidate(const ir::Graph& graph, const loops::Schedule& schedule,
                            const std::string& rewrites, const std::string& proposer,
                            const std::string& move);

}  // namespace ollie::search
