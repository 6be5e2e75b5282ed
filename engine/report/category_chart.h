#pragma once
// Charts of one row per category, drawn horizontally so that long labels (step names, geography
// variables) read without rotation: grouped bars (counts, timings) and intervals (an estimate with its
// confidence interval). The frame and the value axis are svg_frame.h's, as for the scatter plots.

#include <string>
#include <vector>

namespace sdc::engine {

/// One bar. A count the small-count rule hides ("< N", engine/report/small_counts.h) is known only to
/// lie below N: it is drawn as a dashed outline up to N, so that the chart shows no more than the text.
struct Bar {
  double value = 0.0;
  bool below_value = false;  ///< only "below `value`" is known
  std::string text;          ///< the value as printed beside the bar and in its tooltip
};

struct BarSeries {
  std::string name;       ///< the legend's label
  std::vector<Bar> bars;  ///< one per category, in the categories' order
  std::string colour = "#1f77b4";
};

struct BarChart {
  std::string id;  ///< the svg element's id; none when empty
  std::string title;
  std::string value_label;              ///< the horizontal axis
  std::vector<std::string> categories;  ///< one row each, top to bottom
  std::vector<BarSeries> series;        ///< side by side within a row
};

struct Interval {
  std::string label;
  double estimate = 0.0;
  double lower = 0.0;
  double upper = 0.0;
};

struct IntervalChart {
  std::string id;
  std::string title;
  std::string value_label;
  std::vector<Interval> rows;  ///< top to bottom; rows with a non-finite bound are left out
  std::string colour = "#1f77b4";
};

/// The SVG documents; each bar and each interval has the class "mark". The value axis starts at 0
/// for bars and spans the intervals (with a margin) for intervals.
std::string render_svg(const BarChart& chart);
std::string render_svg(const IntervalChart& chart);

}  // namespace sdc::engine
