// The rewrite engine behind rewrite.h: the one table of rules (defined in algebraic.cpp
// and softmax.cpp, see rules.h), the site text form, finding sites, applying one (copying
// the graph with the site's value rebuilt, then removing dead values) and replaying a
// chain.
#include "rewrite/rewrite.h"

#include <algorithm>
#include <sstream>

#include "rewrite/rules.h"
#include "support/error.h"
#include "support/strings.h"

namespace ollie::rewrite {

namespace {

// Uses of each value, a result counting as one.
std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.nodes.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId o : n.operands) ++uses[static_cast<size_t>(o)];
  for (ValueId o : g.outputs) ++uses[static_cast<size_t>(o)];
  return uses;
}

// A rule as the engine knows it: its name, its forms' names (the variants) and its Match.
struct Rule {
  std::string name;
  std::vector<std::string> variants;  // one empty name for a rule with one form
  Match match;
};

// The one table of rules, in the order find_sites reports them at each value.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"reciprocal", {""}, reciprocal},
      {"normalize-late", {"lhs", "rhs"}, normalize_late},
      {"fold-scale", {"lhs", "rhs"}, fold_scale},
      {"distribute", {""}, distribute},
      {"associate", {"right", "left", "rhs-right", "rhs-left"}, associate},
      {"exp2", {""}, exp_to_exp2},
      {"split-reduce", {"nested", "halves"}, split_reduce},
      {"flash", {"64", "256", "1024"}, flash},
      {"online", {""}, online},
  };
  return table;
}

const Rule& rule_named(const std::string& name) {
  for (const Rule& r : rules())
    if (r.name == name) return r;
  std::string known;
  for (const Rule& r : rules()) known += (known.empty() ? "" : ", ") + r.name;
  throw UserError("unknown rewrite rule '" + name + "'; the rules are: " + known);
}

// Drops values nothing reads (the params' inputs always stay) and renumbers.
Graph without_dead_values(const Graph& g) {
  std::vector<bool> live(g.nodes.size(), false);
  for (ValueId o : g.outputs) live[static_cast<size_t>(o)] = true;
  for (ValueId i : g.inputs) live[static_cast<size_t>(i)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (live[i])
      for (ValueId o : g.nodes[i].operands) live[static_cast<size_t>(o)] = true;
  Graph out = g;
  out.nodes.clear();
  std::vector<ValueId> renumbered(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    Node n = g.nodes[i];
    for (ValueId& o : n.operands) o = renumbered[static_cast<size_t>(o)];
    renumbered[i] = static_cast<ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (ValueId& i : out.inputs) i = renumbered[static_cast<size_t>(i)];
  for (ValueId& o : out.outputs) o = renumbered[static_cast<size_t>(o)];
  return out;
}

}  // namespace

std::string to_text(const Site& site) {
  const Rule& r = rule_named(site.rule);
  std::string text = site.rule + " %" + std::to_string(site.node);
  if (site.variant >= 0 && static_cast<size_t>(site.variant) < r.variants.size() &&
      !r.variants[site.variant].empty())
    text += " " + r.variants[static_cast<size_t>(site.variant)];
  return text;
}

Site parse_site(const std::string& line) {
  std::istringstream in(strings::trim(line, strings::kLineBlanks));
  std::string name, node, variant, extra;
  in >> name >> node >> variant >> extra;
  const std::string expected =
      "write RULE %NODE [FORM], e.g. 'reciprocal %12' or 'associate %20 right'";
  if (name.empty() || node.size() < 2 || node[0] != '%' || !extra.empty())
    throw UserError("malformed rewrite '" + strings::trim(line, strings::kLineBlanks) +
                    "': " + expected);
  Site site;
  const Rule& r = rule_named(name);
  site.rule = name;
  try {
    size_t used = 0;
    site.node = static_cast<ValueId>(std::stol(node.substr(1), &used));
    if (used + 1 != node.size() || site.node < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UserError("malformed rewrite '" + strings::trim(line, strings::kLineBlanks) + "': '" +
                    node + "' is not a value number; " + expected);
  }
  const auto at = std::find(r.variants.begin(), r.variants.end(), variant);
  if (at == r.variants.end()) {
    std::string forms;
    for (const auto& v : r.variants)
      forms += (forms.empty() ? "" : ", ") + (v.empty() ? "(none)" : v);
    throw UserError("malformed rewrite '" + strings::trim(line, strings::kLineBlanks) +
                    "': " + name + " has the forms " + forms);
  }
  site.variant = static_cast<int>(at - r.variants.begin());
  return site;
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Rule& r : rules()) out.push_back(r.name);
    return out;
  }();
  return names;
}

std::vector<Site> find_sites(const Graph& graph) {
  const std::vector<int> uses = use_counts(graph);
  std::vector<Site> sites;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const Rule& r : rules())
      for (size_t v = 0; v < r.variants.size(); ++v)
        if (r.match(graph, uses, static_cast<ValueId>(i), static_cast<int>(v)))
          sites.push_back({r.name, static_cast<ValueId>(i), static_cast<int>(v)});
  return sites;
}

Graph apply(const Graph& graph, const Site& site) {
  const Rule& r = rule_named(site.rule);
  if (site.node < 0 || static_cast<size_t>(site.node) >= graph.nodes.size())
    throw UserError("rewrite '" + to_text(site) + "': the graph has no value %" +
                    std::to_string(site.node) + " (it has %0 to %" +
                    std::to_string(graph.nodes.size() - 1) + ")");
  if (site.variant < 0 || static_cast<size_t>(site.variant) >= r.variants.size())
    throw UserError("rewrite " + site.rule + ": no form number " + std::to_string(site.variant));
  const std::optional<Build> build = r.match(graph, use_counts(graph), site.node, site.variant);
  if (!build)
    throw UserError("rewrite '" + to_text(site) + "' does not apply: %" +
                    std::to_string(site.node) + " is not a " + site.rule +
                    " site (see docs/rewrites.md; `ollie check` prints the graph)");
  Graph out = graph;
  out.nodes.clear();
  Builder b(out);
  std::vector<ValueId> mapped(graph.nodes.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (static_cast<ValueId>(i) == site.node) {
      Context context{b, mapped, graph.nodes[i].loc};
      mapped[i] = (*build)(context);
      continue;
    }
    Node n = graph.nodes[i];
    for (ValueId& o : n.operands) o = mapped[static_cast<size_t>(o)];
    mapped[i] = static_cast<ValueId>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (ValueId& i : out.inputs) i = mapped[static_cast<size_t>(i)];
  for (ValueId& o : out.outputs) o = mapped[static_cast<size_t>(o)];
  Graph result = without_dead_values(out);
  ir::verify(result);
  return result;
}

Graph replay(const Graph& graph, const std::string& chain) {
  Graph g = graph;
  std::istringstream in(chain);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (strings::trim(line, strings::kLineBlanks).empty() ||
        strings::trim(line, strings::kLineBlanks)[0] == '#')
      continue;
    try {
      g = apply(g, parse_site(line));
    } catch (const UserError& e) {
      throw UserError("rewrite chain line " + std::to_string(number) + " ('" +
                      strings::trim(line, strings::kLineBlanks) + "'): " + e.what());
    }
  }
  return g;
}

}  // namespace ollie::rewrite
