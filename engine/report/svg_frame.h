#pragma once
// What every SVG chart of the reports shares: the frame (size, margins, title, plot area), the
// numeric axes with their ticks and grid, and the legend; text goes through io/markup.h. The scatter plots
// (scatter_plot.h) and the charts of one row per category (category_chart.h) draw their marks inside
// it, so that the figures of a report read alike.

#include <string>
#include <string_view>

namespace sdc::engine::svg {

struct Range {
  double low = 0.0;
  double high = 1.0;
};

/// [low, high] widened by 5 % on each side; a single value gets a range around it.
Range padded(double low, double high);

struct Frame {
  double width = 720.0;
  double height = 480.0;
  double left = 80.0;
  double right = 190.0;  ///< room for the legend
  double top = 40.0;
  double bottom = 60.0;

  double plot_width() const { return width - left - right; }
  double plot_height() const { return height - top - bottom; }
  /// The x pixel of `value` on the horizontal axis spanning `range`.
  double px(const Range& range, double value) const;
  /// The y pixel of `value` on the vertical axis spanning `range`.
  double py(const Range& range, double value) const;
};

/// The opening tag (with `id` when given), the background, the title and the plot area's border.
std::string open_svg(const Frame& frame, std::string_view id, std::string_view title);
/// Ticks at 1, 2 or 5 times a power of ten, their grid lines and the axis label.
std::string x_axis(const Frame& frame, const Range& range, std::string_view label);
std::string y_axis(const Frame& frame, const Range& range, std::string_view label);
/// One legend entry, the `index`th, in the right margin: a disc (or ring when `hollow`) and the name.
std::string legend_entry(const Frame& frame, int index, std::string_view colour, std::string_view name, bool hollow);

}  // namespace sdc::engine::svg
