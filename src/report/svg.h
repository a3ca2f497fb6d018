// Inline SVG charts for the report (internal to src/report/): a plot area with linear or
// logarithmic axes, ticks and grid, polylines (plain or as steps), horizontal reference
// lines, and marked points with a tooltip. Every text given is escaped here.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ollie::report {

struct Axis {
  std::string label;
  double lo = 0, hi = 1;
  bool log = false;
  std::function<std::string(double)> format;  // a tick's text; empty: "%g"
};

enum class Marker { Circle, Cross, Square, Triangle, Diamond };

class Chart {
 public:
  Chart(Axis x, Axis y, int width = 860, int height = 340);
  // A line through `points` (x, y); `steps`: held flat until the next point's x, then to
  // `x_end` after the last.
  void line(const std::vector<std::pair<double, double>>& points, const std::string& color,
            const std::string& title, bool steps = false, double x_end = 0);
  // A horizontal line across the plot at y, labelled at its right end.
  void hline(double y, const std::string& color, const std::string& label, bool dashed = true);
  // A straight segment from (x0, y0) to (x1, y1), clipped to the plot.
  void segment(double x0, double y0, double x1, double y1, const std::string& color,
               const std::string& title, bool dashed = false);
  void point(double x, double y, const std::string& color, Marker marker, const std::string& title,
             double size = 4);
  // A point in the band above the plot (for candidates without a time).
  void top_point(double x, const std::string& color, Marker marker, const std::string& title);
  // Text at a data position: above and right of it, or below and right.
  void label(double x, double y, const std::string& text, const std::string& color,
             bool below = false);
  std::string svg(const std::string& aria_label) const;

 private:
  double px(double x) const;
  double py(double y) const;
  std::string ticks() const;
  Axis x_, y_;
  int width_, height_;
  std::string body_;
  bool band_ = false;  // a top_point was drawn: label its band
};

std::string marker_svg(Marker m, double cx, double cy, double r, const std::string& color);

// A padded range holding every value of `values` (> 0 for a log axis); [1, 10] or [0, 1]
// when there is none.
std::pair<double, double> range_of(const std::vector<double>& values, bool log);

}  // namespace ollie::report
