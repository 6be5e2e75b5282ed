#include "io/sparsity_svg.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <string_view>
#include <vector>

#include "io/markup.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

/// Shades of a bin, lightest first: the opacity of the bin colour.
constexpr std::array<const char*, 6> kShadeOpacity = {"0.25", "0.4", "0.55", "0.7", "0.85", "1"};
constexpr const char* kBinColour = "#1f3b73";
constexpr const char* kBlockColour = "#d62728";

// The layout, in pixels.
constexpr std::int64_t kMargin = 20;
constexpr std::int64_t kGap = 40;
constexpr std::int64_t kTitleHeight = 44;
constexpr std::int64_t kCaptionHeight = 46;
constexpr std::int64_t kMinimumPanelSide = 8;
constexpr std::int64_t kMinimumSlotWidth = 280;  // room for a panel's title and sizes

void append(std::string& text, std::int64_t value) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  text.append(digits.data(), result.ptr);
}

/// `value` with three decimals, correctly rounded (std::to_chars: no locale).
void append_fixed(std::string& text, double value) {
  std::array<char, 64> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value, std::chars_format::fixed, 3);
  text.append(digits.data(), result.ptr);
}

/// Original index → position; InternalError unless `order` is empty (the identity) or a permutation
/// of 0 .. size − 1.
std::vector<std::int64_t> positions_of(std::span<const std::int64_t> order, std::int64_t size, const char* what) {
  std::vector<std::int64_t> position(static_cast<std::size_t>(size), -1);
  if (order.empty()) {
    for (std::size_t i = 0; i < position.size(); ++i) position[i] = static_cast<std::int64_t>(i);
    return position;
  }
  SDC_CHECK(order.size() == position.size(), std::string("sparsity drawing: the ") + what + " order has " +
                                                 std::to_string(order.size()) + " positions for " +
                                                 std::to_string(size));
  for (std::size_t p = 0; p < order.size(); ++p) {
    const std::int64_t index = order[p];
    SDC_CHECK(index >= 0 && index < size && position[static_cast<std::size_t>(index)] < 0,
              std::string("sparsity drawing: the ") + what + " order is not a permutation");
    position[static_cast<std::size_t>(index)] = static_cast<std::int64_t>(p);
  }
  return position;
}

/// The boundaries to draw: after each block (between blocks) and before a non-empty linking part.
struct Boundaries {
  std::vector<std::int64_t> between;
  std::int64_t linking = -1;  ///< start of the linking part, or −1 when there is none to mark
};

Boundaries boundaries_of(std::span<const std::int64_t> blocks, std::int64_t size, const char* what) {
  Boundaries boundaries;
  std::int64_t end = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    SDC_CHECK(blocks[b] >= 0 && blocks[b] <= size - end,
              std::string("sparsity drawing: the ") + what + " blocks are negative or hold more than the matrix");
    end += blocks[b];
    const bool last = b + 1 == blocks.size();
    if (last || end == 0 || end == size) continue;
    if (boundaries.between.empty() || boundaries.between.back() != end) boundaries.between.push_back(end);
  }
  if (!blocks.empty() && end > 0 && end < size) boundaries.linking = end;
  return boundaries;
}

/// Exact non-zero counts per bin, row-major over bin_rows × bin_columns.
struct Bins {
  std::int64_t bin_size = 1;  ///< rows and columns per bin
  std::int64_t bin_rows = 0;
  std::int64_t bin_columns = 0;
  std::vector<std::int64_t> counts;
};

Bins bin_panel(const CsrView& matrix, const SparsityPanel& panel, std::int64_t bin_size) {
  Bins bins;
  bins.bin_size = bin_size;
  bins.bin_rows = (matrix.rows + bin_size - 1) / bin_size;
  bins.bin_columns = (matrix.columns + bin_size - 1) / bin_size;
  bins.counts.assign(static_cast<std::size_t>(bins.bin_rows * bins.bin_columns), 0);
  positions_of(panel.row_order, matrix.rows, "row");
  const std::vector<std::int64_t> column_position = positions_of(panel.column_order, matrix.columns, "column");
  // One task per row of bins: each writes its own counts, so the sums are exact and thread-free.
  tbb::parallel_for(std::int64_t{0}, bins.bin_rows, [&](std::int64_t bin_row) {
    std::int64_t* counts = bins.counts.data() + bin_row * bins.bin_columns;
    const std::int64_t last = std::min(matrix.rows, (bin_row + 1) * bin_size);
    for (std::int64_t position = bin_row * bin_size; position < last; ++position) {
      const std::int64_t row = panel.row_order.empty() ? position : panel.row_order[static_cast<std::size_t>(position)];
      for (const std::int64_t column : matrix.row_columns(row))
        ++counts[column_position[static_cast<std::size_t>(column)] / bin_size];
    }
  });
  return bins;
}

/// The shade of a count, 0 (lightest) .. levels − 1 (the largest count): its power of two on the scale
/// of the largest count's. Integer arithmetic, so the bytes are the same on every machine.
std::size_t shade_of(std::int64_t count, std::int64_t largest) {
  const auto top = static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(largest))) - 1;
  const auto levels = static_cast<std::int64_t>(kShadeOpacity.size());
  if (top == 0) return kShadeOpacity.size() - 1;
  const auto power = static_cast<std::int64_t>(std::bit_width(static_cast<std::uint64_t>(count))) - 1;
  return static_cast<std::size_t>(power * (levels - 1) / top);
}

struct PanelSize {
  std::int64_t width = 0;
  std::int64_t height = 0;
};

/// The panel's pixels: the longer side of the matrix gets `panel_pixels`, the other its share.
PanelSize panel_size(const CsrView& matrix, std::int64_t panel_pixels) {
  const double longer = static_cast<double>(std::max<std::int64_t>({matrix.rows, matrix.columns, 1}));
  const auto side = [&](std::int64_t extent) {
    const auto pixels =
        static_cast<std::int64_t>(static_cast<double>(panel_pixels) * static_cast<double>(extent) / longer + 0.5);
    return std::max(pixels, kMinimumPanelSide);
  };
  return {side(matrix.columns), side(matrix.rows)};
}

void append_line(std::string& text, double x1, double y1, double x2, double y2) {
  text += "<line x1=\"";
  append_fixed(text, x1);
  text += "\" y1=\"";
  append_fixed(text, y1);
  text += "\" x2=\"";
  append_fixed(text, x2);
  text += "\" y2=\"";
  append_fixed(text, y2);
  text += "\" vector-effect=\"non-scaling-stroke\"/>\n";
}

/// The block lines of a panel in bin units: horizontal ones at row boundaries, vertical at columns.
void append_block_lines(std::string& text, const Boundaries& rows, const Boundaries& columns, double bin_size,
                        double width, double height) {
  const auto horizontal = [&](std::int64_t at) {
    const double y = static_cast<double>(at) / bin_size;
    append_line(text, 0.0, y, width, y);
  };
  const auto vertical = [&](std::int64_t at) {
    const double x = static_cast<double>(at) / bin_size;
    append_line(text, x, 0.0, x, height);
  };
  if (!rows.between.empty() || !columns.between.empty()) {
    text += "<g stroke=\"";
    text += kBlockColour;
    text += "\" stroke-width=\"1.5\">\n";
    for (const std::int64_t at : rows.between) horizontal(at);
    for (const std::int64_t at : columns.between) vertical(at);
    text += "</g>\n";
  }
  if (rows.linking >= 0 || columns.linking >= 0) {
    text += "<g stroke=\"";
    text += kBlockColour;
    text += "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\">\n";
    if (rows.linking >= 0) horizontal(rows.linking);
    if (columns.linking >= 0) vertical(columns.linking);
    text += "</g>\n";
  }
}

void append_panel(std::string& text, const CsrView& matrix, const SparsityPanel& panel, const Bins& bins,
                  std::int64_t largest, PanelSize size, std::int64_t left) {
  const Boundaries rows = boundaries_of(panel.block_rows, matrix.rows, "row");
  const Boundaries columns = boundaries_of(panel.block_columns, matrix.columns, "column");
  const auto bin_size = static_cast<double>(bins.bin_size);
  // The view box spans the matrix exactly, in bins; the last bins' overhang is clipped.
  const double view_width = matrix.columns > 0 ? static_cast<double>(matrix.columns) / bin_size : 1.0;
  const double view_height = matrix.rows > 0 ? static_cast<double>(matrix.rows) / bin_size : 1.0;

  text += "<g transform=\"translate(";
  append(text, left);
  text += ',';
  append(text, kMargin);
  text += ")\">\n<text x=\"0\" y=\"16\" font-size=\"15\" font-weight=\"bold\">";
  append_escaped_markup(text, panel.title);
  text += "</text>\n<text x=\"0\" y=\"34\" font-size=\"12\" fill=\"#444444\">";
  append(text, matrix.rows);
  text += " rows \xC3\x97 ";  // U+00D7 MULTIPLICATION SIGN
  append(text, matrix.columns);
  text += " columns, ";
  append(text, matrix.entry_count());
  text += " non-zeros</text>\n<svg x=\"0\" y=\"";
  append(text, kTitleHeight);
  text += "\" width=\"";
  append(text, size.width);
  text += "\" height=\"";
  append(text, size.height);
  text += "\" viewBox=\"0 0 ";
  append_fixed(text, view_width);
  text += ' ';
  append_fixed(text, view_height);
  text += "\" preserveAspectRatio=\"none\">\n<g fill=\"";
  text += kBinColour;
  text += "\" shape-rendering=\"crispEdges\">\n";
  for (std::size_t shade = 0; shade < kShadeOpacity.size(); ++shade) {
    bool opened = false;
    for (std::int64_t r = 0; r < bins.bin_rows; ++r) {
      for (std::int64_t c = 0; c < bins.bin_columns; ++c) {
        const std::int64_t count = bins.counts[static_cast<std::size_t>(r * bins.bin_columns + c)];
        if (count == 0 || shade_of(count, largest) != shade) continue;
        if (!opened) {
          text += "<g fill-opacity=\"";
          text += kShadeOpacity[shade];
          text += "\">\n";
          opened = true;
        }
        text += "<rect x=\"";
        append(text, c);
        text += "\" y=\"";
        append(text, r);
        text += "\" width=\"1\" height=\"1\"/>\n";
      }
    }
    if (opened) text += "</g>\n";
  }
  text += "</g>\n";
  append_block_lines(text, rows, columns, bin_size, view_width, view_height);
  text += "</svg>\n<path d=\"M0 ";
  append(text, kTitleHeight);
  text += 'h';
  append(text, size.width);
  text += 'v';
  append(text, size.height);
  text += 'h';
  append(text, -size.width);
  text += "Z\" fill=\"none\" stroke=\"#333333\"/>\n</g>\n";
}

}  // namespace

void write_sparsity_svg(std::ostream& out, const CsrView& matrix, const SparsityPanel& before,
                        const SparsityPanel& after, const SparsityDrawingOptions& options) {
  SDC_CHECK(options.max_bins >= 1, "sparsity drawing: max_bins must be at least 1");
  SDC_CHECK(options.panel_pixels >= 16, "sparsity drawing: panel_pixels must be at least 16");
  const std::int64_t longer = std::max<std::int64_t>({matrix.rows, matrix.columns, 1});
  const std::int64_t bin_size = (longer + options.max_bins - 1) / options.max_bins;
  const Bins left_bins = bin_panel(matrix, before, bin_size);
  const Bins right_bins = bin_panel(matrix, after, bin_size);
  const auto largest_of = [](const Bins& bins) {
    return bins.counts.empty() ? std::int64_t{0} : *std::max_element(bins.counts.begin(), bins.counts.end());
  };
  const std::int64_t largest = std::max(largest_of(left_bins), largest_of(right_bins));

  const PanelSize size = panel_size(matrix, options.panel_pixels);
  const std::int64_t slot = std::max(size.width, kMinimumSlotWidth);
  const std::int64_t width = 2 * kMargin + 2 * slot + kGap;
  const std::int64_t height = 2 * kMargin + kTitleHeight + size.height + kCaptionHeight;

  std::string text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"";
  append(text, width);
  text += "\" height=\"";
  append(text, height);
  text += "\" viewBox=\"0 0 ";
  append(text, width);
  text += ' ';
  append(text, height);
  text += "\" font-family=\"sans-serif\">\n<path d=\"M0 0H";
  append(text, width);
  text += 'V';
  append(text, height);
  text += "H0Z\" fill=\"#ffffff\"/>\n";
  append_panel(text, matrix, before, left_bins, std::max<std::int64_t>(largest, 1), size, kMargin);
  append_panel(text, matrix, after, right_bins, std::max<std::int64_t>(largest, 1), size, kMargin + slot + kGap);
  // The caption, in two lines that fit the narrowest drawing.
  text += "<text x=\"";
  append(text, kMargin);
  text += "\" y=\"";
  append(text, height - kMargin - 16);
  text += "\" font-size=\"12\" fill=\"#444444\">One cell: ";
  append(text, bin_size);
  text += " \xC3\x97 ";
  append(text, bin_size);
  text += " rows and columns, darker with more non-zeros (up to ";
  append(text, largest);
  text += " in a cell).</text>\n<text x=\"";
  append(text, kMargin);
  text += "\" y=\"";
  append(text, height - kMargin);
  text +=
      "\" font-size=\"12\" fill=\"#444444\">Lines: block boundaries; dashed: the linking part "
      "follows.</text>\n</svg>\n";
  out << text;
}

}  // namespace sdc::io
