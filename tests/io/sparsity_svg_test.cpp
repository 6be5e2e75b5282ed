#include "io/sparsity_svg.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstdint>
#include <locale>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

/// A matrix with `entries` entries scattered over rows x columns.
CsrMatrix scattered_matrix(std::int64_t rows, std::int64_t columns, std::int64_t entries) {
  std::vector<MatrixEntry> list;
  for (std::int64_t i = 0; i < entries; ++i) list.push_back({(i * 7919) % rows, (i * i + 3 * i) % columns, 1.0});
  return CsrMatrix::from_entries(rows, columns, list);
}

/// A permutation of 0 .. size − 1: the indices sorted by `multiplier` × index modulo 2^64.
std::vector<std::int64_t> shuffled(std::int64_t size, std::uint64_t multiplier) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> keyed;
  for (std::int64_t i = 0; i < size; ++i) keyed.emplace_back(static_cast<std::uint64_t>(i) * multiplier, i);
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::int64_t> order;
  for (const auto& [key, index] : keyed) order.push_back(index);
  return order;
}

std::string drawing(const CsrView& matrix, const SparsityPanel& before, const SparsityPanel& after,
                    const SparsityDrawingOptions& options = {}) {
  std::ostringstream out;
  write_sparsity_svg(out, matrix, before, after, options);
  return out.str();
}

/// The non-empty bins of `matrix` in an order, counted here independently of the writer: the set of
/// (position row / bin size, position column / bin size) over the entries.
std::size_t non_empty_bins(const CsrView& matrix, const std::vector<std::int64_t>& row_order,
                           const std::vector<std::int64_t>& column_order, std::int64_t max_bins) {
  const std::int64_t longer = std::max({matrix.rows, matrix.columns, std::int64_t{1}});
  const std::int64_t bin = (longer + max_bins - 1) / max_bins;
  std::map<std::int64_t, std::int64_t> column_position;
  for (std::size_t p = 0; p < column_order.size(); ++p) column_position[column_order[p]] = static_cast<std::int64_t>(p);
  std::set<std::pair<std::int64_t, std::int64_t>> bins;
  for (std::size_t p = 0; p < row_order.size(); ++p)
    for (const std::int64_t column : matrix.row_columns(row_order[p]))
      bins.emplace(static_cast<std::int64_t>(p) / bin, column_position.at(column) / bin);
  return bins.size();
}

std::vector<std::int64_t> identity(std::int64_t size) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  return order;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

/// The element names of `svg` in document order, after checking its structure: an XML declaration,
/// then one root <svg> element that closes last, every start tag closed in order, nothing but blanks
/// after the root. A test failure otherwise.
std::vector<std::string> element_names(const std::string& svg) {
  std::vector<std::string> names;
  std::vector<std::string> open;
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0), 0U);
  std::size_t at = svg.find("?>") + 2;
  bool root_closed = false;
  while ((at = svg.find('<', at)) != std::string::npos) {
    EXPECT_FALSE(root_closed) << "content after the root element";
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated tag";
      break;
    }
    const std::string tag = svg.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        ADD_FAILURE() << "</" << tag.substr(1) << "> closes " << (open.empty() ? "nothing" : open.back());
        break;
      }
      open.pop_back();
      root_closed = open.empty();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (names.empty()) {
      EXPECT_EQ(name, "svg");
    }
    names.push_back(name);
    if (tag.back() != '/') open.push_back(name);
  }
  EXPECT_TRUE(open.empty() && root_closed) << "the root element is not closed";
  EXPECT_EQ(svg.substr(svg.rfind("</svg>")), "</svg>\n");
  return names;
}

/// The part of the drawing that holds the right panel (after the left one's group).
std::string right_panel(const std::string& svg) {
  const std::size_t first = svg.find("<g transform=");
  const std::size_t second = svg.find("<g transform=", first + 1);
  return svg.substr(second);
}

struct Example {
  CsrMatrix matrix;
  std::vector<std::int64_t> row_order;
  std::vector<std::int64_t> column_order;
  std::vector<std::int64_t> block_rows{4, 5, 3};
  std::vector<std::int64_t> block_columns{5, 6};  // 4 linking columns after them
};

Example small_example() {
  Example example{scattered_matrix(12, 15, 40), shuffled(12, 0x9E3779B97F4A7C15), shuffled(15, 0xD1B54A32D192ED03)};
  return example;
}

TEST(SparsitySvg, WritesTwoPanelsAsOneWellFormedDocument) {
  const Example example = small_example();
  const std::string svg =
      drawing(example.matrix.view(), {"as given", {}, {}, {}, {}},
              {"reordered", example.row_order, example.column_order, example.block_rows, example.block_columns});
  const std::vector<std::string> names = element_names(svg);
  EXPECT_EQ(std::count(names.begin(), names.end(), "svg"), 3);   // the root and one per panel
  EXPECT_EQ(std::count(names.begin(), names.end(), "text"), 6);  // title and sizes per panel, the caption
  EXPECT_NE(svg.find(">as given</text>"), std::string::npos);
  EXPECT_NE(svg.find(">reordered</text>"), std::string::npos);
  EXPECT_NE(svg.find(">12 rows \xC3\x97 15 columns, " + std::to_string(example.matrix.entry_count()) + " non-zeros<"),
            std::string::npos);
}

TEST(SparsitySvg, DrawsOneRectPerNonEmptyBinCountedExactly) {
  // 1000 x 700 in bins of 20 (50 per side): many entries share a bin.
  const CsrMatrix matrix = scattered_matrix(1000, 700, 3000);
  const std::vector<std::int64_t> rows = shuffled(1000, 0x9E3779B97F4A7C15);
  const std::vector<std::int64_t> columns = shuffled(700, 0xD1B54A32D192ED03);
  const SparsityDrawingOptions options{50, 300};
  const std::string svg = drawing(matrix.view(), {"before", {}, {}, {}, {}}, {"after", rows, columns, {}, {}}, options);
  const std::vector<std::string> names = element_names(svg);
  const std::size_t left = non_empty_bins(matrix.view(), identity(1000), identity(700), 50);
  const std::size_t right = non_empty_bins(matrix.view(), rows, columns, 50);
  EXPECT_LT(left, static_cast<std::size_t>(matrix.entry_count()));  // entries share bins
  EXPECT_LT(left, 50U * 35U);                                       // and some bins are empty
  EXPECT_EQ(static_cast<std::size_t>(std::count(names.begin(), names.end(), "rect")), left + right);
  EXPECT_EQ(occurrences(right_panel(svg), "<rect "), right);
  EXPECT_LE(left + right, 2U * 50U * 35U);
  EXPECT_NE(svg.find("One cell: 20 \xC3\x97 20 rows and columns"), std::string::npos);
}

TEST(SparsitySvg, DrawsTheBlockBoundariesAndTheLinkingPartOfTheReorderedPanelOnly) {
  const Example example = small_example();
  const std::string svg =
      drawing(example.matrix.view(), {"before", {}, {}, {}, {}},
              {"after", example.row_order, example.column_order, example.block_rows, example.block_columns});
  const std::string after = right_panel(svg);
  // Rows 4 | 5 | 3: lines below positions 4 and 9; columns 5 | 6 | linking 4: a line after 5 and a
  // dashed one after 11. Bins are single rows and columns here.
  EXPECT_EQ(occurrences(svg, "<line "), 4U);
  EXPECT_EQ(occurrences(after, "<line "), 4U);
  EXPECT_NE(after.find("<line x1=\"0.000\" y1=\"4.000\" x2=\"15.000\" y2=\"4.000\""), std::string::npos);
  EXPECT_NE(after.find("<line x1=\"0.000\" y1=\"9.000\" x2=\"15.000\" y2=\"9.000\""), std::string::npos);
  EXPECT_NE(after.find("<line x1=\"5.000\" y1=\"0.000\" x2=\"5.000\" y2=\"12.000\""), std::string::npos);
  const std::string dashed = after.substr(after.find("stroke-dasharray"));
  EXPECT_EQ(dashed.find("<line "), dashed.find("<line x1=\"11.000\" y1=\"0.000\" x2=\"11.000\" y2=\"12.000\""));
  EXPECT_EQ(occurrences(dashed, "<line "), 1U);
}

TEST(SparsitySvg, WritesTheSameBytesEveryTimeWhateverTheThreadsAndTheStreamLocale) {
  const CsrMatrix matrix = scattered_matrix(3000, 2000, 50000);
  const std::vector<std::int64_t> rows = shuffled(3000, 0x9E3779B97F4A7C15);
  const std::vector<std::int64_t> columns = shuffled(2000, 0xD1B54A32D192ED03);
  const std::vector<std::int64_t> block_rows{1000, 1000, 1000};
  const std::vector<std::int64_t> block_columns{900, 900};
  const SparsityPanel before{"before", {}, {}, {}, {}};
  const SparsityPanel after{"after", rows, columns, block_rows, block_columns};
  const std::string first = drawing(matrix.view(), before, after);
  EXPECT_EQ(drawing(matrix.view(), before, after), first);
  {
    const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    EXPECT_EQ(drawing(matrix.view(), before, after), first);
  }
  // A stream that would write 1234.5 as "1.234,5".
  struct Comma : std::numpunct<char> {
    char do_decimal_point() const override { return ','; }
    char do_thousands_sep() const override { return '.'; }
    std::string do_grouping() const override { return "\3"; }
  };
  std::ostringstream out;
  out.imbue(std::locale(std::locale::classic(), new Comma));
  write_sparsity_svg(out, matrix.view(), before, after);
  EXPECT_EQ(out.str(), first);
  EXPECT_NE(first.find("viewBox=\"0 0 250.000 375.000\""), std::string::npos);  // bins of 8 rows and columns
}

TEST(SparsitySvg, EscapesTitlesAndDrawsAnEmptyMatrix) {
  const CsrMatrix empty = CsrMatrix::from_entries(0, 0, {});
  const std::string svg = drawing(empty.view(), {"A & B <1>", {}, {}, {}, {}}, {"\"quoted\"", {}, {}, {}, {}});
  const std::vector<std::string> names = element_names(svg);
  EXPECT_EQ(std::count(names.begin(), names.end(), "rect"), 0);
  EXPECT_NE(svg.find(">A &amp; B &lt;1&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">&quot;quoted&quot;</text>"), std::string::npos);
}

TEST(SparsitySvg, RefusesAnOrderThatIsNotAPermutationOrBlocksLargerThanTheMatrix) {
  const Example example = small_example();
  std::vector<std::int64_t> repeated = example.row_order;
  repeated[3] = repeated[4];
  const std::vector<std::int64_t> short_order(5, 0);
  const std::vector<std::int64_t> too_many{10, 10};
  const SparsityPanel before{"before", {}, {}, {}, {}};
  EXPECT_THROW(drawing(example.matrix.view(), before, {"after", repeated, {}, {}, {}}), InternalError);
  EXPECT_THROW(drawing(example.matrix.view(), before, {"after", {}, short_order, {}, {}}), InternalError);
  EXPECT_THROW(drawing(example.matrix.view(), before, {"after", {}, {}, too_many, {}}), InternalError);
}

}  // namespace
}  // namespace sdc::io
