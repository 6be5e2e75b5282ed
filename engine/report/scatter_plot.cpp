#include "engine/report/scatter_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace sdc::engine {
namespace {

constexpr double kWidth = 720.0;
constexpr double kHeight = 480.0;
constexpr double kLeft = 80.0;
constexpr double kRight = 190.0;  // room for the legend
constexpr double kTop = 40.0;
constexpr double kBottom = 60.0;

struct Range {
  double low = 0.0;
  double high = 1.0;
};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// A tick step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
double tick_step(double span) {
  const double raw = span / 5.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double scaled = raw / power;
  return (scaled < 1.5 ? 1.0 : scaled < 3.5 ? 2.0 : scaled < 7.5 ? 5.0 : 10.0) * power;
}

Range padded(double low, double high) {
  if (!(low < high)) {
    const double half = low == 0.0 ? 1.0 : std::fabs(low) * 0.1;
    return {low - half, high + half};
  }
  const double margin = (high - low) * 0.05;
  return {low - margin, high + margin};
}

}  // namespace

std::string render_svg(const ScatterPlot& plot) {
  double x_low = std::numeric_limits<double>::infinity();
  double x_high = -x_low;
  double y_low = x_low;
  double y_high = -x_low;
  for (const auto& series : plot.series)
    for (const auto& point : series.points) {
      if (!std::isfinite(point.x) || !std::isfinite(point.y)) continue;
      x_low = std::min(x_low, point.x);
      x_high = std::max(x_high, point.x);
      y_low = std::min(y_low, point.y);
      y_high = std::max(y_high, point.y);
    }
  if (plot.vertical_line && std::isfinite(*plot.vertical_line)) {
    x_low = std::min(x_low, *plot.vertical_line);
    x_high = std::max(x_high, *plot.vertical_line);
  }
  if (!std::isfinite(x_low)) x_low = x_high = y_low = y_high = 0.0;
  const Range x = padded(x_low, x_high);
  const Range y = padded(y_low, y_high);
  const double plot_width = kWidth - kLeft - kRight;
  const double plot_height = kHeight - kTop - kBottom;
  const auto px = [&](double value) { return kLeft + (value - x.low) / (x.high - x.low) * plot_width; };
  const auto py = [&](double value) { return kTop + (y.high - value) / (y.high - y.low) * plot_height; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{3}</text>\n",
      kWidth, kHeight, kLeft + plot_width / 2, escape(plot.title));
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                     kTop, plot_width, plot_height);
  const double x_step = tick_step(x.high - x.low);
  for (double tick = std::ceil(x.low / x_step) * x_step; tick <= x.high; tick += x_step) {
    const double at = px(tick);
    svg += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4:.4g}</text>\n",
        at, kTop, kTop + plot_height, kTop + plot_height + 18, std::fabs(tick) < x_step * 1e-9 ? 0.0 : tick);
  }
  const double y_step = tick_step(y.high - y.low);
  for (double tick = std::ceil(y.low / y_step) * y_step; tick <= y.high; tick += y_step) {
    const double at = py(tick);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.2f}\" x2=\"{2}\" y2=\"{1:.2f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5:.4g}</text>\n",
        kLeft, at, kLeft + plot_width, kLeft - 6, at + 4, std::fabs(tick) < y_step * 1e-9 ? 0.0 : tick);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + plot_width / 2, kHeight - 16,
                     escape(plot.x_label));
  svg += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}</text>\n",
                     kTop + plot_height / 2, escape(plot.y_label));
  if (plot.vertical_line && std::isfinite(*plot.vertical_line)) {
    const double at = px(*plot.vertical_line);
    svg += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n"
        "<text x=\"{3:.2f}\" y=\"{4}\" fill=\"#555\">{5}</text>\n",
        at, kTop, kTop + plot_height, at + 4, kTop + 14, escape(plot.vertical_line_label));
  }
  double legend_y = kTop + 10;
  for (const auto& series : plot.series) {
    std::vector<PlotPoint> finite;
    for (const auto& point : series.points)
      if (std::isfinite(point.x) && std::isfinite(point.y)) finite.push_back(point);
    if (series.connect && finite.size() > 1) {
      std::string path;
      for (const auto& point : finite) path += fmt::format("{:.2f},{:.2f} ", px(point.x), py(point.y));
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n", path,
                         series.colour);
    }
    if (series.radius > 0.0)
      for (const auto& point : finite)
        svg +=
            fmt::format("<circle cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\" {}/>\n", px(point.x), py(point.y), series.radius,
                        series.hollow ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2\"", series.colour)
                                      : fmt::format("fill=\"{}\"", series.colour));
    const double key_x = kLeft + plot_width + 16;
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" {}/>\n<text x=\"{}\" y=\"{}\">{}</text>\n", key_x, legend_y,
                       series.hollow ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2\"", series.colour)
                                     : fmt::format("fill=\"{}\"", series.colour),
                       key_x + 10, legend_y + 4, escape(series.name));
    legend_y += 20;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace sdc::engine
