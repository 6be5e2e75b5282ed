#include "engine/report/category_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "engine/report/svg_frame.h"
#include "io/markup.h"

namespace sdc::engine {
namespace {

constexpr double kRowHeight = 28.0;

/// A frame tall enough for `rows` rows, with a left margin for their labels.
svg::Frame frame_for_rows(std::size_t rows) {
  svg::Frame frame;
  frame.left = 210.0;  // room for labels such as "step 12 (perturb-table adjust)"
  frame.height = frame.top + frame.bottom + kRowHeight * static_cast<double>(std::max<std::size_t>(rows, 1));
  frame.height = std::max(frame.height, 200.0);
  return frame;
}

double row_top(const svg::Frame& frame, std::size_t rows, std::size_t row) {
  return frame.top +
         frame.plot_height() * static_cast<double>(row) / static_cast<double>(std::max<std::size_t>(rows, 1));
}

std::string row_label(const svg::Frame& frame, double centre, std::string_view label) {
  return fmt::format("<text x=\"{}\" y=\"{:.2f}\" text-anchor=\"end\">{}</text>\n", frame.left - 6, centre + 4,
                     io::escape_markup(label));
}

}  // namespace

std::string render_svg(const BarChart& chart) {
  double high = 0.0;
  for (const auto& series : chart.series)
    for (const auto& bar : series.bars)
      if (std::isfinite(bar.value)) high = std::max(high, bar.value);
  const svg::Frame frame = frame_for_rows(chart.categories.size());
  const svg::Range range{0.0, high > 0.0 ? high * 1.05 : 1.0};
  std::string svg = svg::open_svg(frame, chart.id, chart.title);
  svg += svg::x_axis(frame, range, chart.value_label);
  const std::size_t rows = chart.categories.size();
  const double row_height = frame.plot_height() / static_cast<double>(std::max<std::size_t>(rows, 1));
  const double bar_height = row_height * 0.8 / static_cast<double>(std::max<std::size_t>(chart.series.size(), 1));
  for (std::size_t row = 0; row < rows; ++row) {
    const double top = row_top(frame, rows, row) + row_height * 0.1;
    svg += row_label(frame, top + row_height * 0.4, chart.categories[row]);
    for (std::size_t s = 0; s < chart.series.size(); ++s) {
      const BarSeries& series = chart.series[s];
      if (row >= series.bars.size() || !std::isfinite(series.bars[row].value)) continue;
      const Bar& bar = series.bars[row];
      const double y = top + bar_height * static_cast<double>(s);
      const double width = frame.px(range, std::max(bar.value, 0.0)) - frame.left;
      const std::string paint =
          bar.below_value
              ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"", series.colour)
              : fmt::format("fill=\"{}\"", series.colour);
      const std::string tooltip = io::escape_markup(chart.categories[row] + ", " + series.name + ": " + bar.text);
      svg += fmt::format(
          "<rect class=\"mark\" x=\"{}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" {}><title>{}</title></rect>\n"
          "<text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"10\">{}</text>\n",
          frame.left, y, width, bar_height * 0.9, paint, tooltip, frame.left + width + 4, y + bar_height * 0.45 + 4,
          io::escape_markup(bar.text));
    }
  }
  for (std::size_t s = 0; s < chart.series.size(); ++s)
    svg += svg::legend_entry(frame, static_cast<int>(s), chart.series[s].colour, chart.series[s].name, false);
  svg += "</svg>\n";
  return svg;
}

std::string render_svg(const IntervalChart& chart) {
  std::vector<Interval> rows;
  for (const auto& row : chart.rows)
    if (std::isfinite(row.estimate) && std::isfinite(row.lower) && std::isfinite(row.upper)) rows.push_back(row);
  double low = 0.0;
  double high = 1.0;
  if (!rows.empty()) {
    low = rows.front().lower;
    high = rows.front().upper;
    for (const auto& row : rows) {
      low = std::min({low, row.lower, row.estimate});
      high = std::max({high, row.upper, row.estimate});
    }
  }
  const svg::Frame frame = frame_for_rows(rows.size());
  const svg::Range range = svg::padded(low, high);
  std::string svg = svg::open_svg(frame, chart.id, chart.title);
  svg += svg::x_axis(frame, range, chart.value_label);
  const double row_height = frame.plot_height() / static_cast<double>(std::max<std::size_t>(rows.size(), 1));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Interval& row = rows[r];
    const double centre = row_top(frame, rows.size(), r) + row_height / 2;
    svg += row_label(frame, centre, row.label);
    const double from = frame.px(range, row.lower);
    const double to = frame.px(range, row.upper);
    const std::string tooltip =
        io::escape_markup(fmt::format("{}: {:.4g} [{:.4g}, {:.4g}]", row.label, row.estimate, row.lower, row.upper));
    svg += fmt::format(
        "<g class=\"mark\"><title>{0}</title>\n"
        "<rect x=\"{1:.2f}\" y=\"{2:.2f}\" width=\"{3:.2f}\" height=\"8\" fill=\"{4}\" fill-opacity=\"0.35\"/>\n"
        "<line x1=\"{1:.2f}\" y1=\"{5:.2f}\" x2=\"{1:.2f}\" y2=\"{6:.2f}\" stroke=\"{4}\" stroke-width=\"2\"/>\n"
        "<line x1=\"{7:.2f}\" y1=\"{5:.2f}\" x2=\"{7:.2f}\" y2=\"{6:.2f}\" stroke=\"{4}\" stroke-width=\"2\"/>\n"
        "<circle cx=\"{8:.2f}\" cy=\"{9:.2f}\" r=\"5\" fill=\"{4}\"/></g>\n",
        tooltip, from, centre - 4, std::max(to - from, 1.0), chart.colour, centre - 8, centre + 8, to,
        frame.px(range, row.estimate), centre);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace sdc::engine
