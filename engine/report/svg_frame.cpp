#include "engine/report/svg_frame.h"

#include <fmt/format.h>

#include <cmath>

#include "io/markup.h"

namespace sdc::engine::svg {
namespace {

/// A tick step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
double tick_step(double span) {
  const double raw = span / 5.0;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double scaled = raw / power;
  return (scaled < 1.5 ? 1.0 : scaled < 3.5 ? 2.0 : scaled < 7.5 ? 5.0 : 10.0) * power;
}

/// A tick's value, with the rounding residue of a zero tick (1e-17) printed as 0.
double tick_value(double tick, double step) { return std::fabs(tick) < step * 1e-9 ? 0.0 : tick; }

}  // namespace

Range padded(double low, double high) {
  if (!(low < high)) {
    const double half = low == 0.0 ? 1.0 : std::fabs(low) * 0.1;
    return {low - half, high + half};
  }
  const double margin = (high - low) * 0.05;
  return {low - margin, high + margin};
}

double Frame::px(const Range& range, double value) const {
  return left + (value - range.low) / (range.high - range.low) * plot_width();
}

double Frame::py(const Range& range, double value) const {
  return top + (range.high - value) / (range.high - range.low) * plot_height();
}

std::string open_svg(const Frame& frame, std::string_view id, std::string_view title) {
  const std::string id_attribute = id.empty() ? std::string() : fmt::format(" id=\"{}\"", io::escape_markup(id));
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\"{0} width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{1}\" height=\"{2}\" fill=\"white\"/>\n"
      "<text x=\"{3}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{4}</text>\n"
      "<rect x=\"{5}\" y=\"{6}\" width=\"{7}\" height=\"{8}\" fill=\"none\" stroke=\"#444\"/>\n",
      id_attribute, frame.width, frame.height, frame.left + frame.plot_width() / 2, io::escape_markup(title),
      frame.left, frame.top, frame.plot_width(), frame.plot_height());
}

std::string x_axis(const Frame& frame, const Range& range, std::string_view label) {
  std::string svg;
  const double step = tick_step(range.high - range.low);
  const double bottom = frame.top + frame.plot_height();
  for (double tick = std::ceil(range.low / step) * step; tick <= range.high; tick += step) {
    svg += fmt::format(
        "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4:.4g}</text>\n",
        frame.px(range, tick), frame.top, bottom, bottom + 18, tick_value(tick, step));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", frame.left + frame.plot_width() / 2,
                     frame.height - 16, io::escape_markup(label));
  return svg;
}

std::string y_axis(const Frame& frame, const Range& range, std::string_view label) {
  std::string svg;
  const double step = tick_step(range.high - range.low);
  for (double tick = std::ceil(range.low / step) * step; tick <= range.high; tick += step) {
    const double at = frame.py(range, tick);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.2f}\" x2=\"{2}\" y2=\"{1:.2f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5:.4g}</text>\n",
        frame.left, at, frame.left + frame.plot_width(), frame.left - 6, at + 4, tick_value(tick, step));
  }
  svg += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}</text>\n",
                     frame.top + frame.plot_height() / 2, io::escape_markup(label));
  return svg;
}

std::string legend_entry(const Frame& frame, int index, std::string_view colour, std::string_view name, bool hollow) {
  const double x = frame.left + frame.plot_width() + 16;
  const double y = frame.top + 10 + 20.0 * index;
  return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" {}/>\n<text x=\"{}\" y=\"{}\">{}</text>\n", x, y,
                     hollow ? fmt::format("fill=\"none\" stroke=\"{}\" stroke-width=\"2\"", colour)
                            : fmt::format("fill=\"{}\"", colour),
                     x + 10, y + 4, io::escape_markup(name));
}

}  // namespace sdc::engine::svg
