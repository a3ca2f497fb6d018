// The rewrite stage (between ir and loops): algebraic rewrites of the tensor IR that
// change the algorithm, each sound by construction (the rewritten graph equals the
// original in exact real arithmetic; the verifier still checks every kernel in float).
// It owns the rules (docs/rewrites.md), the Site that names one application of a rule,
// its one-line text form, and replaying a chain of such lines on a spec's graph.
//
// Every rule replaces one value (the site's node) by a small new subgraph built from
// values that already precede it; dead values are then removed and the graph renumbered.
// Params, results, dims and bound_dims never change, so the kernel ABI stays the same.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ollie::rewrite {

// One place where one rule applies: the rule's name, the value it rewrites, and which of
// the rule's forms (e.g. associate's "right" or "left"; 0 for rules with one form).
struct Site {
  std::string rule;
  ir::ValueId node = -1;
  int variant = 0;
  bool operator==(const Site&) const = default;
};

// The one-line text form, e.g. "reciprocal %22", "associate %24 right".
std::string to_text(const Site& site);
// Parses one line of that form; a malformed line is a UserError saying what is expected.
Site parse_site(const std::string& line);

// The rules' names, in the order find_sites reports them.
const std::vector<std::string>& rule_names();

// Every place a rule applies in `graph`, in node order.
std::vector<Site> find_sites(const ir::Graph& graph);

// The rewritten graph (dead values removed, renumbered, ir::verify passes). Throws
// UserError when the site does not apply to `graph`.
ir::Graph apply(const ir::Graph& graph, const Site& site);

// Applies a chain of sites, one per line as written by to_text (node numbers refer to
// the graph after the previous lines; blank lines and # comments are skipped). A line that is
// malformed or does not apply is a UserError naming the line.
ir::Graph replay(const ir::Graph& graph, const std::string& chain);

}  // namespace ollie::rewrite
