// Inline SVG charts (see svg.h).
#include "report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html.h"

namespace ollie::report {

namespace {

// The plot area inside the SVG: room for the y ticks on the left, the x ticks and label
// below, and the failure band and line labels above and right.
constexpr double kLeft = 72, kRight = 130, kTop = 30, kBottom = 44;

double to_axis(const Axis& a, double v) { return a.log ? std::log10(std::max(v, 1e-300)) : v; }

std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string default_format(double v) { return fmt::format("{:g}", v); }

// Tick values: 1, 2, 5 times powers of ten inside [lo, hi] (only the powers when a log
// axis spans many decades).
std::vector<double> tick_values(const Axis& a) {
  std::vector<double> out;
  if (a.log) {
    const int d0 = static_cast<int>(std::floor(std::log10(a.lo)));
    const int d1 = static_cast<int>(std::ceil(std::log10(a.hi)));
    const bool fine = d1 - d0 <= 3;
    for (int d = d0; d <= d1; ++d)
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double v = m * std::pow(10.0, d);
        if (v >= a.lo * 0.999 && v <= a.hi * 1.001) out.push_back(v);
      }
    return out;
  }
  const double span = a.hi - a.lo;
  if (span <= 0) return {a.lo};
  const double raw = span / 6;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

}  // namespace

std::pair<double, double> range_of(const std::vector<double>& values, bool log) {
  double lo = 0, hi = 0;
  bool any = false;
  for (double v : values) {
    if (!std::isfinite(v) || (log && v <= 0)) continue;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
  if (!any) return log ? std::pair{1.0, 10.0} : std::pair{0.0, 1.0};
  if (log) {
    if (hi <= lo * 1.01) lo /= 1.5, hi *= 1.5;
    return {lo / 1.25, hi * 1.25};
  }
  if (hi <= lo) return {lo - 1, hi + 1};
  const double pad = (hi - lo) * 0.04;
  return {lo >= 0 && lo - pad < 0 ? 0 : lo - pad, hi + pad};
}

Chart::Chart(Axis x, Axis y, int width, int height)
    : x_(std::move(x)), y_(std::move(y)), width_(width), height_(height) {}

double Chart::px(double x) const {
  const double a = to_axis(x_, x_.lo), b = to_axis(x_, x_.hi);
  const double f = b > a ? (to_axis(x_, x) - a) / (b - a) : 0.5;
  return kLeft + std::clamp(f, -0.02, 1.02) * (width_ - kLeft - kRight);
}

double Chart::py(double y) const {
  const double a = to_axis(y_, y_.lo), b = to_axis(y_, y_.hi);
  const double f = b > a ? (to_axis(y_, y) - a) / (b - a) : 0.5;
  return height_ - kBottom - std::clamp(f, -0.02, 1.02) * (height_ - kTop - kBottom);
}

void Chart::line(const std::vector<std::pair<double, double>>& points, const std::string& color,
                 const std::string& title, bool steps, double x_end) {
  if (points.empty()) return;
  std::string d;
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [x, y] = points[i];
    if (steps && i > 0) d += fmt::format(" L{},{}", num(px(x)), num(py(points[i - 1].second)));
    d += fmt::format("{}{},{}", i == 0 ? "M" : " L", num(px(x)), num(py(y)));
  }
  if (steps && x_end > points.back().first)
    d += fmt::format(" L{},{}", num(px(x_end)), num(py(points.back().second)));
  body_ += fmt::format(
      "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>{}</title></path>\n", d,
      escape(color), escape(title));
}

void Chart::hline(double y, const std::string& color, const std::string& label, bool dashed) {
  const double yy = py(y);
  body_ += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1.5\"{}>"
      "<title>{}</title></line>\n<text x=\"{}\" y=\"{}\" class=\"lbl\" fill=\"{}\">{}</text>\n",
      kLeft, num(yy), width_ - kRight, num(yy), escape(color),
      dashed ? " stroke-dasharray=\"6 4\"" : "", escape(label), width_ - kRight + 4, num(yy + 4),
      escape(color), escape(label));
}

void Chart::segment(double x0, double y0, double x1, double y1, const std::string& color,
                    const std::string& title, bool dashed) {
  body_ += fmt::format(
      "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}>"
      "<title>{}</title></line>\n",
      num(px(x0)), num(py(y0)), num(px(x1)), num(py(y1)), escape(color),
      dashed ? " stroke-dasharray=\"6 4\"" : "", escape(title));
}

std::string marker_svg(Marker m, double cx, double cy, double r, const std::string& color) {
  const std::string c = escape(color);
  switch (m) {
    case Marker::Circle:
      return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.75\"/>",
                         num(cx), num(cy), num(r), c);
    case Marker::Cross:
      return fmt::format(
          "<path d=\"M{},{} L{},{} M{},{} L{},{}\" stroke=\"{}\" stroke-width=\"2\"/>", num(cx - r),
          num(cy - r), num(cx + r), num(cy + r), num(cx - r), num(cy + r), num(cx + r), num(cy - r),
          c);
    case Marker::Square:
      return fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"1.5\"/>",
          num(cx - r), num(cy - r), num(2 * r), num(2 * r), c);
    case Marker::Triangle:
      return fmt::format(
          "<path d=\"M{},{} L{},{} L{},{} Z\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
          num(cx), num(cy - r), num(cx + r), num(cy + r), num(cx - r), num(cy + r), c);
    case Marker::Diamond:
      return fmt::format(
          "<path d=\"M{},{} L{},{} L{},{} L{},{} Z\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"1.5\"/>",
          num(cx), num(cy - r), num(cx + r), num(cy), num(cx), num(cy + r), num(cx - r), num(cy),
          c);
  }
  return "";
}

void Chart::point(double x, double y, const std::string& color, Marker marker,
                  const std::string& title, double size) {
  body_ += "<g class=\"pt\">" + marker_svg(marker, px(x), py(y), size, color) + "<title>" +
           escape(title) + "</title></g>\n";
}

void Chart::top_point(double x, const std::string& color, Marker marker, const std::string& title) {
  band_ = true;
  body_ += "<g class=\"pt fail\">" + marker_svg(marker, px(x), kTop - 14, 4, color) + "<title>" +
           escape(title) + "</title></g>\n";
}

void Chart::label(double x, double y, const std::string& text, const std::string& color,
                  bool below) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" class=\"lbl\" fill=\"{}\">{}</text>\n",
                       num(px(x) + 6), num(py(y) + (below ? 16 : -6)), escape(color), escape(text));
}

std::string Chart::ticks() const {
  std::string s;
  const auto& fx = x_.format ? x_.format : default_format;
  const auto& fy = y_.format ? y_.format : default_format;
  for (double v : tick_values(x_))
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" class=\"grid\"/>"
        "<text x=\"{0}\" y=\"{3}\" class=\"tick\" text-anchor=\"middle\">{4}</text>\n",
        num(px(v)), kTop, num(height_ - kBottom), num(height_ - kBottom + 16), escape(fx(v)));
  for (double v : tick_values(y_))
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"grid\"/>"
        "<text x=\"{3}\" y=\"{4}\" class=\"tick\" text-anchor=\"end\">{5}</text>\n",
        kLeft, num(py(v)), width_ - kRight, kLeft - 6, num(py(v) + 4), escape(fy(v)));
  return s;
}

std::string Chart::svg(const std::string& aria_label) const {
  return fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\">\n"
      "<rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\" class=\"plot\"/>\n"
      "{7}{8}{9}"
      "<text x=\"{10}\" y=\"{11}\" class=\"axis\" text-anchor=\"middle\">{12}</text>\n"
      "<text x=\"14\" y=\"{13}\" class=\"axis\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {13})\">{14}</text>\n</svg>\n",
      width_, height_, escape(aria_label), kLeft, kTop, width_ - kLeft - kRight,
      height_ - kTop - kBottom,
      band_ ? fmt::format("<text x=\"{}\" y=\"{}\" class=\"band\">no time (did not pass)</text>\n",
                          kLeft, kTop - 22)
            : std::string(),
      ticks(), body_, (kLeft + width_ - kRight) / 2, height_ - 6, escape(x_.label),
      (kTop + height_ - kBottom) / 2, escape(y_.label));
}

}  // namespace ollie::report
