#include "engine/report/scatter_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/report/svg_frame.h"
#include "io/markup.h"

namespace sdc::engine {

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
  const svg::Frame frame;
  const svg::Range x = svg::padded(x_low, x_high);
  const svg::Range y = svg::padded(y_low, y_high);
  const auto px = [&](double value) { return frame.px(x, value); };
  const auto py = [&](double value) { return frame.py(y, value); };

  std::string svg = svg::open_svg(frame, plot.id, plot.title);
  svg += svg::x_axis(frame, x, plot.x_label);
  svg += svg::y_axis(frame, y, plot.y_label);
  if (plot.vertical_line && std::isfinite(*plot.vertical_line)) {
    const double at = px(*plot.vertical_line);
    svg += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n"
        "<text x=\"{3:.2f}\" y=\"{4}\" fill=\"#555\">{5}</text>\n",
        at, frame.top, frame.top + frame.plot_height(), at + 4, frame.top + 14,
        io::escape_markup(plot.vertical_line_label));
  }
  int legend_index = 0;
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
        svg += fmt::format("<circle class=\"mark\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"{}\" {}/>\n", px(point.x),
                           py(point.y), series.radius,
                           series.hollow ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2\"", series.colour)
                                         : fmt::format("fill=\"{}\"", series.colour));
    svg += svg::legend_entry(frame, legend_index++, series.colour, series.name, series.hollow);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace sdc::engine
