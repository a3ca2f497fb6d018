// The report's sections other than the charts (see sections.h).
#include "report/sections.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "report/diff.h"
#include "report/html.h"

namespace ollie::report {

namespace {

std::string row(const std::string& name, const std::string& value_html, const char* id = "") {
  return fmt::format("<tr><th>{}</th><td{}>{}</td></tr>\n", name,
                     *id ? fmt::format(" id=\"{}\"", id) : "", value_html);
}

std::string pre_or(const std::string& text, const std::string& none) {
  return text.empty() ? "<p class=\"note\">" + none + "</p>\n"
                      : "<pre>" + escape(text) + "</pre>\n";
}

// A JSON value as a person reads it: a string without its quotes.
std::string text_of(const nlohmann::json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

}  // namespace

std::string summary_section(const RunData& d) {
  std::string s =
      fmt::format("<section id=\"summary\"><h1>ollie optimize: {}</h1>\n<table class=\"kv\">\n",
                  escape(d.run.entry));
  s += row("spec", escape(d.run.spec_path) + " <span class=\"dim\">sha256 " +
                       escape(d.run.spec_sha256.substr(0, 16)) + "</span>");
  s += row("dims", escape(d.run.dims_json));
  s += row("run database", escape(d.db_path) + ", created " + escape(d.run.created));
  s += row("state", escape(d.state), "run-state");
  s += row("baseline (default schedule)", time_text(d.baseline_seconds), "baseline-time");
  std::string best = "-";
  if (d.best)
    best = fmt::format("<span id=\"best-time\">{}</span> ({:.2f}x faster), candidate {} from {}{}",
                       time_text(d.best_seconds),
                       d.best_seconds > 0 ? d.baseline_seconds / d.best_seconds : 0.0, d.best->id,
                       escape(d.best->proposer),
                       d.best_fully_verified ? ", verified at the full level"
                                             : ", not yet verified at the full level");
  s += row("best", best);
  if (d.roof.known && d.best_seconds > 0)
    s += row("roofline", fmt::format("no kernel faster than {}; the best is at {:.0f}% of it",
                                     time_text(d.roof.bound_seconds),
                                     100 * d.roof.bound_seconds / d.best_seconds));
  s += row("candidates", fmt::format("{} evaluated, {} passed", d.points.size(), d.passes),
           "candidates");
  s += row("steps", fmt::format("{} ({} accepted)", d.marks.steps, d.accepted_steps));
  s += row("model calls", std::to_string(d.calls.size()));
  return s + "</table></section>\n";
}

std::string best_kernel_section(const RunData& d) {
  std::string s = "<section id=\"best\"><h2>The best kernel</h2>\n";
  if (!d.best) return s + "<p class=\"note\">No candidate has passed yet.</p></section>\n";
  s += fmt::format("<p>Candidate {} ({}), {}{}.</p>\n", d.best->id, escape(d.best->proposer),
                   time_text(d.best_seconds),
                   d.best_eval && d.best_eval->ratio_vs_baseline > 0
                       ? fmt::format(", {:.3f} of the baseline measured side by side",
                                     d.best_eval->ratio_vs_baseline)
                       : "");
  s += "<h3>Rewrite chain</h3>\n" +
       pre_or(d.best->rewrites, "None: the kernel computes the spec's own graph.");
  s += "<h3>Schedule</h3>\n" +
       pre_or(d.best->schedule, "None: a free-form kernel (written whole, e.g. by a model).");
  s += "<h3>How the search reached it</h3>\n<table class=\"grid\"><tr><th>candidate</th>"
       "<th>proposer</th><th>time</th><th>the step that proposed it</th></tr>\n";
  for (const Ancestor& a : d.lineage)
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td></tr>\n",
                     a.candidate, escape(a.proposer), time_text(a.seconds), escape(a.note));
  return s + "</table></section>\n";
}

std::string diff_section(const RunData& d) {
  std::string s = "<section id=\"diff\"><h2>Baseline and best, side by side</h2>\n";
  if (!d.best || !d.baseline)
    return s + "<p class=\"note\">No best kernel to compare yet.</p></section>\n";
  if (d.best->id == d.baseline->id)
    return s + "<p class=\"note\">The best is the baseline itself.</p></section>\n";
  const Diff diff = diff_lines(d.baseline->source, d.best->source);
  s += fmt::format(
      "<p>Candidate {} (baseline, left) and candidate {} (best, right): lines "
      "removed: {}, added: {}.{}</p>\n",
      d.baseline->id, d.best->id, diff.removed, diff.added,
      diff.coarse ? " (Too long to align line by line: the middle is shown replaced.)" : "");
  s += "<table class=\"diff\">\n";
  static const char* kinds[] = {"same", "chg", "del", "add"};
  for (const DiffRow& r : diff.rows)
    s += fmt::format(
        "<tr class=\"{}\"><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td>"
        "</tr>\n",
        kinds[r.kind], r.left_line ? std::to_string(r.left_line) : "", escape(r.left),
        r.right_line ? std::to_string(r.right_line) : "", escape(r.right));
  return s + "</table></section>\n";
}

std::string certificate_section(const RunData& d) {
  std::string s = "<section id=\"certificate\"><h2>Certificate</h2>\n";
  const nlohmann::json j = nlohmann::json::parse(d.certificate_json, nullptr, false);
  if (!j.is_object()) return s + "<p class=\"note\">No certificate yet.</p></section>\n";
  s += fmt::format("<p>From {}: level {}, verdict {}, worst error {:.3g} of the bound.</p>\n",
                   escape(d.certificate_origin), escape(j.value("level", "?")),
                   escape(j.value("verdict", "?")), j.value("worst_fraction_of_bound", 0.0));
  s += "<table class=\"grid\" id=\"suites\"><tr><th>suite</th><th>dims</th><th>seed</th>"
       "<th>elements</th><th>worst / bound</th><th>passed</th></tr>\n";
  for (const auto& suite : j.value("suites", nlohmann::json::array()))
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3g}</td><td>{}</td></tr>\n",
        escape(suite.value("name", "")), escape(text_of(suite.value("dims", nlohmann::json()))),
        escape(suite.value("seed", nlohmann::json()).dump()), suite.value("elements", int64_t{0}),
        suite.value("worst_fraction_of_bound", 0.0),
        suite.value("passed", false) ? "yes" : "<b>no</b>");
  s += "</table>\n";
  for (const char* key : {"not_applicable", "not_run"})
    for (const auto& n : j.value(key, nlohmann::json::array()))
      s += fmt::format("<p class=\"note\">{}: {} ({})</p>\n",
                       key[4] == 'r' ? "not run" : "not applicable", escape(n.value("suite", "")),
                       escape(n.value("reason", "")));
  return s + "</section>\n";
}

std::string model_calls_section(const RunData& d) {
  std::string s = "<section id=\"model-calls\"><h2>Model calls</h2>\n";
  if (d.calls.empty())
    return s +
           "<p class=\"note\">No language model was used in this run (no model calls "
           "recorded).</p></section>\n";
  int64_t in = 0, out = 0;
  double cost = 0;
  std::map<std::string, int> statuses;
  for (const CallRow& c : d.calls)
    in += c.call.tokens_in, out += c.call.tokens_out, cost += c.call.cost,
        ++statuses[c.call.status];
  std::string by_status;
  for (const auto& [status, n] : statuses)
    by_status += fmt::format("{}{} {}", by_status.empty() ? "" : ", ", n, escape(status));
  s +=
      fmt::format("<p id=\"model-totals\">{} call{} ({}): {} tokens in, {} out, cost {:.4f}.</p>\n",
                  d.calls.size(), d.calls.size() == 1 ? "" : "s", by_status, in, out, cost);
  s += "<table class=\"grid\"><tr><th>call</th><th>proposer</th><th>status</th><th>tokens in</th>"
       "<th>tokens out</th><th>cost</th><th>seconds</th><th>outcome</th></tr>\n";
  for (const CallRow& c : d.calls)
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{:.4f}</td><td>{:.1f}</"
        "td>"
        "<td>{}</td></tr>\n",
        c.call.id, escape(c.call.proposer), escape(c.call.status),
        c.call.http_status ? fmt::format(" (HTTP {})", c.call.http_status) : "", c.call.tokens_in,
        c.call.tokens_out, c.call.cost, c.call.seconds, escape(c.outcome));
  return s + "</table></section>\n";
}

std::string events_section(const RunData& d) {
  std::string s =
      "<section id=\"events\"><h2>Events</h2>\n<table class=\"grid\">"
      "<tr><th>time</th><th>kind</th><th>what</th></tr>\n";
  const size_t first = d.events.size() > 300 ? d.events.size() - 300 : 0;
  if (first > 0) s += fmt::format("<tr><td colspan=\"3\">({} earlier events)</td></tr>\n", first);
  for (size_t i = first; i < d.events.size(); ++i)
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"mono\">{}</td></tr>\n",
                     escape(d.events[i].created), escape(d.events[i].kind),
                     escape(d.events[i].text));
  return s + "</table></section>\n";
}

}  // namespace ollie::report
