#pragma once
// A scatter plot as a standalone SVG document: the figures steps write beside their reports (the
// Karr–Sanil frontier of `sdc swap frontier`). Written by hand: SVG is text, and a plotting library
// would be a large dependency for points, lines and axes. The frame and axes are svg_frame.h's.

#include <optional>
#include <string>
#include <vector>

namespace sdc::engine {

struct PlotPoint {
  double x = 0.0;
  double y = 0.0;
};

struct PlotSeries {
  std::string name;  ///< the legend's label
  std::vector<PlotPoint> points;
  std::string colour = "#1f77b4";
  double radius = 3.0;   ///< 0: no markers
  bool connect = false;  ///< a line through the points in the order given
  bool hollow = false;   ///< rings instead of discs
};

struct ScatterPlot {
  std::string id;  ///< the svg element's id, for pages holding several; none when empty
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;       ///< drawn in order, later ones on top
  std::optional<double> vertical_line;  ///< a dashed reference line at this x (a bound)
  std::string vertical_line_label;
};

/// The SVG document. Non-finite points are left out; the axes span the finite points (and the
/// vertical line) with a margin, ticks at 1, 2 or 5 times a power of ten. Each point's marker has
/// the class "mark" (the data marks a page check counts).
std::string render_svg(const ScatterPlot& plot);

}  // namespace sdc::engine
