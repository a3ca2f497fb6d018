// The report's charts (see charts.h).
#include "report/charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "report/html.h"

namespace ollie::report {

namespace {

constexpr const char* kRoofColor = "#d62728";
constexpr const char* kBaselineColor = "#555555";
const char* const kChainColors[] = {"#d4a000", "#c2185b", "#00897b", "#5e35b1", "#6d4c41"};

std::string chain_color(int chain) { return kChainColors[chain % 5]; }

std::string point_title(const Point& p) {
  return fmt::format("candidate {} ({}{}): {}{}, evaluation {} at {}", p.candidate, p.proposer,
                     p.chain >= 0 ? fmt::format(", chain {}", p.chain) : "", p.verdict,
                     p.seconds > 0 ? ", " + time_text(p.seconds) : "", p.ordinal,
                     clock_text(p.wall_seconds));
}

// The axes of a progress chart: x from 0 to the last candidate (its wall-clock time or its
// count), y (log) over every time drawn.
std::pair<Axis, Axis> progress_axes(const RunData& d, bool wall) {
  std::vector<double> xs{0}, ys;
  for (const Point& p : d.points) {
    xs.push_back(wall ? p.wall_seconds : static_cast<double>(p.ordinal));
    if (p.seconds > 0) ys.push_back(p.seconds);
  }
  if (d.baseline_seconds > 0) ys.push_back(d.baseline_seconds);
  if (d.roof.known) ys.push_back(d.roof.bound_seconds);
  Axis x;
  x.label = wall ? "wall-clock time since the run started (m:ss)" : "candidates evaluated";
  std::tie(x.lo, x.hi) = range_of(xs, false);
  x.lo = 0;
  if (wall) x.format = [](double v) { return clock_text(v); };
  Axis y;
  y.label = "kernel time (log scale)";
  y.log = true;
  y.format = [](double v) { return time_text(v); };
  std::tie(y.lo, y.hi) = range_of(ys, true);
  return {x, y};
}

// One progress chart: x is the wall-clock time or the evaluation count.
std::string progress_chart(const RunData& d, bool wall) {
  const auto [x, y] = progress_axes(d, wall);
  Chart chart(x, y);
  if (d.roof.known)
    chart.hline(d.roof.bound_seconds, kRoofColor, "roofline " + time_text(d.roof.bound_seconds));
  if (d.baseline_seconds > 0)
    chart.hline(d.baseline_seconds, kBaselineColor, "baseline " + time_text(d.baseline_seconds));
  // The lines first: the points stay on top, where hovering finds them.
  for (const ChainBest& c : d.chains) {
    std::vector<std::pair<double, double>> line;
    for (const BestStep& s : c.steps)
      line.emplace_back(wall ? s.wall_seconds : static_cast<double>(s.ordinal), s.seconds);
    chart.line(line, chain_color(c.chain), fmt::format("chain {}: best so far", c.chain), true,
               x.hi);
  }
  for (const Point& p : d.points) {
    const double px = wall ? p.wall_seconds : static_cast<double>(p.ordinal);
    if (p.seconds > 0)
      chart.point(px, p.seconds, proposer_color(p.proposer), verdict_marker(p.verdict),
                  point_title(p));
    else
      chart.top_point(px, proposer_color(p.proposer), verdict_marker(p.verdict), point_title(p));
  }
  return chart.svg(wall ? "best time over wall-clock time" : "best time over evaluations");
}

std::string swatch(const std::string& color, Marker m) {
  return "<svg class=\"sw\" viewBox=\"0 0 12 12\">" + marker_svg(m, 6, 6, 4, color) + "</svg>";
}

std::string legend(const RunData& d) {
  std::set<std::string> proposers, verdicts;
  for (const Point& p : d.points) proposers.insert(p.proposer), verdicts.insert(p.verdict);
  std::string s = "<p class=\"legend\">proposers: ";
  for (const auto& p : proposers)
    s += "<span>" + swatch(proposer_color(p), Marker::Circle) + escape(p) + "</span>";
  s += "<br>verdicts: ";
  for (const auto& v : verdicts)
    s += "<span>" + swatch("#333", verdict_marker(v)) + escape(v) + "</span>";
  s += "<br>lines: ";
  for (const ChainBest& c : d.chains)
    s += fmt::format("<span class=\"ln\" style=\"border-color:{}\"></span>chain {} best so far ",
                     chain_color(c.chain), c.chain);
  s += fmt::format(
      "<span class=\"ln dash\" style=\"border-color:{}\"></span>baseline "
      "<span class=\"ln dash\" style=\"border-color:{}\"></span>roofline (no kernel is faster)</p>",
      kBaselineColor, kRoofColor);
  return s;
}

}  // namespace

Marker verdict_marker(const std::string& v) {
  if (v == "pass") return Marker::Circle;
  if (v == "wrong" || v == "weak") return Marker::Cross;
  if (v == "compile-error" || v == "load-error") return Marker::Square;
  if (v == "crash" || v == "timeout" || v == "out-of-memory" || v == "sanitizer")
    return Marker::Triangle;
  return Marker::Diamond;
}

std::string progress_charts(const RunData& d) {
  std::string s = "<section id=\"progress\"><h2>Best time over the run</h2>\n";
  s += fmt::format(
      "<p>Each chain's best time so far (a step line per chain), every evaluated candidate as "
      "a point (<span id=\"candidate-count\">{}</span> candidates; hover for details), the "
      "baseline and the roofline. Times are on the search's clock: the ratio to the baseline "
      "measured side by side, times the baseline's median.</p>\n",
      d.points.size());
  if (!d.roof.known)
    s += "<p class=\"note\">This run database records no roofline (runs made before ollie "
         "recorded it in a <code>roofline</code> event), so no roofline line is drawn.</p>\n";
  s += "<p class=\"note\">This run database records no peers' times (<code>bench/peers.py</code> "
       "measures numpy and jax outside the run), so no peer lines are drawn.</p>\n";
  s += "<h3>Over wall-clock time</h3>\n" + progress_chart(d, true);
  s += "<h3>Over evaluations</h3>\n" + progress_chart(d, false);
  return s + legend(d) + "</section>\n";
}

std::string roofline_chart(const RunData& d) {
  std::string s = "<section id=\"roofline\"><h2>Roofline</h2>\n";
  const Roof& r = d.roof;
  if (!r.known || r.intensity <= 0 || r.peak_flops <= 0 || r.bandwidth <= 0)
    return s +
           "<p class=\"note\">This run database records no roofline, so there is no "
           "chart.</p></section>\n";
  const double ridge = r.peak_flops / r.bandwidth;
  const double best_flops = d.best_seconds > 0 ? r.flops / d.best_seconds : 0;
  const double base_flops = d.baseline_seconds > 0 ? r.flops / d.baseline_seconds : 0;
  std::vector<double> xs{r.intensity, ridge},
      ys{r.peak_flops / 1e9, r.intensity * r.bandwidth / 1e9};
  if (best_flops > 0) ys.push_back(best_flops / 1e9);
  if (base_flops > 0) ys.push_back(base_flops / 1e9);
  Axis x{"operational intensity (FLOP per compulsory byte, log scale)", 1, 10, true, {}};
  std::tie(x.lo, x.hi) = range_of(xs, true);
  x.lo /= 4, x.hi *= 4;
  Axis y{"GFLOP/s (log scale)", 1, 10, true, {}};
  std::tie(y.lo, y.hi) = range_of(ys, true);
  y.lo /= 4;
  Chart chart(x, y);
  chart.segment(x.lo, x.lo * r.bandwidth / 1e9, ridge, r.peak_flops / 1e9, kRoofColor,
                fmt::format("memory roof: {} ({})", rate_text(r.bandwidth, "B"), r.ceiling));
  chart.segment(ridge, r.peak_flops / 1e9, x.hi, r.peak_flops / 1e9, kRoofColor,
                "compute roof: " + rate_text(r.peak_flops, "FLOP"));
  chart.label(ridge, r.peak_flops / 1e9, "compute roof " + rate_text(r.peak_flops, "FLOP"),
              kRoofColor);
  chart.label(x.lo * 1.2, x.lo * 1.2 * r.bandwidth / 1e9 * 2.5,  // above the roof
              "memory roof " + rate_text(r.bandwidth, "B") + " (" +
                  r.ceiling.substr(0, r.ceiling.find(" (")) + ")",
              kRoofColor);
  chart.segment(r.intensity, y.lo, r.intensity, y.hi, "#999999",
                fmt::format("this kernel's intensity: {:.3g} FLOP/byte", r.intensity), true);
  if (base_flops > 0) {
    chart.point(r.intensity, base_flops / 1e9, proposer_color("baseline"), Marker::Square,
                "baseline: " + rate_text(base_flops, "FLOP"), 6);
    chart.label(r.intensity, base_flops / 1e9, "baseline", proposer_color("baseline"), true);
  }
  if (best_flops > 0 && !(d.best && d.baseline && d.best->id == d.baseline->id)) {
    chart.point(r.intensity, best_flops / 1e9, kRoofColor, Marker::Circle,
                "best: " + rate_text(best_flops, "FLOP"), 6);
    chart.label(r.intensity, best_flops / 1e9, "best", kRoofColor);
  }
  s += fmt::format(
      "<p>At {} thread{}: compute roof {}, memory roof {} ({}); the kernel does {:.4g} GFLOP "
      "over {:.4g} MB of compulsory traffic ({:.3g} FLOP/byte), so it is {}-bound and no kernel "
      "is faster than {}. Baseline {}, best {}.</p>\n",
      r.threads, r.threads == 1 ? "" : "s", rate_text(r.peak_flops, "FLOP"),
      rate_text(r.bandwidth, "B"), escape(r.ceiling), r.flops / 1e9, r.bytes / 1e6, r.intensity,
      r.memory_bound ? "memory" : "compute", time_text(r.bound_seconds),
      rate_text(base_flops, "FLOP"), rate_text(best_flops, "FLOP"));
  return s + chart.svg("roofline") + "</section>\n";
}

}  // namespace ollie::report
