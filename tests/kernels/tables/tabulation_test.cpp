#include "kernels/tables/tabulation.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <map>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

// Area: Total(0) -> A(1) -> a1(2), a2(3); B(4) -> b1(5). Codes of the data: a1, a2, b1 = 0, 1, 2.
// Sex: Total(0) -> M(1), F(2). Codes: M, F = 0, 1.
struct Fixture {
  std::vector<std::int32_t> area{0, 0, 1, 2, 2, 1, 0};
  std::vector<std::int32_t> sex{0, 1, 0, 1, 1, 0, 0};
  std::vector<double> value{10.0, 5.0, 7.0, 1.0, 2.0, 0.0, 30.0};
  std::vector<double> weight{1.0, 2.0, 1.5, 1.0, 1.0, 2.0, 1.0};
  std::vector<std::uint64_t> keys{40, 75, 95, 10, 30, 62, 99};  // modulus 100

  std::vector<TabulationDimension> dimensions(std::size_t begin, std::size_t end) const {
    const auto slice = [&](const std::vector<std::int32_t>& v) {
      return std::span<const std::int32_t>(v).subspan(begin, end - begin);
    };
    return {{slice(area), {2, 3, 5}, {-1, 0, 1, 1, 0, 4}}, {slice(sex), {1, 2}, {-1, 0, 0}}};
  }
  TabulationOptions options(std::size_t begin, std::size_t end) const {
    TabulationOptions o;
    o.weights = std::span<const double>(weight).subspan(begin, end - begin);
    o.values = std::span<const double>(value).subspan(begin, end - begin);
    o.record_keys = std::span<const std::uint64_t>(keys).subspan(begin, end - begin);
    o.key_modulus = 100;
    o.top_count = 2;
    o.first_row_id = static_cast<std::int64_t>(begin);
    return o;
  }
};

std::map<std::pair<int, int>, const CellSummary*> by_position(const CellTable& table) {
  std::map<std::pair<int, int>, const CellSummary*> out;
  for (std::size_t c = 0; c < table.cell_count(); ++c) {
    const auto p = cell_positions(table.cells[c], table.sizes);
    out[{p[0], p[1]}] = &table.summaries[c];
  }
  return out;
}

TEST(Tabulation, LeavesAndMarginsOfAHandTable) {
  const Fixture f;
  const auto dims = f.dimensions(0, 7);
  const auto options = f.options(0, 7);
  CellTable table = tabulate_leaves(dims, options);
  EXPECT_EQ(table.cell_count(), 4U);  // (a1,M) (a1,F) (a2,M) (b1,F)
  add_margins(table, dims, options);
  for (std::size_t c = 1; c < table.cell_count(); ++c) EXPECT_LT(table.cells[c - 1], table.cells[c]);
  const auto cells = by_position(table);
  // Non-empty cells: 4 leaves + area margins (A,M) (A,F) (B,F) (T,M) (T,F) + sex margins of every
  // area position (a1 a2 b1 A B T) x Total.
  EXPECT_EQ(table.cell_count(), 4U + 5U + 6U);
  const CellSummary& total = *cells.at({0, 0});
  EXPECT_EQ(total.count, 7);
  EXPECT_DOUBLE_EQ(total.weighted_count.value(), 9.5);
  EXPECT_DOUBLE_EQ(total.value.value(), 55.0);
  EXPECT_EQ(total.contributors, 6);
  EXPECT_EQ(total.key_sum, (40U + 75 + 95 + 10 + 30 + 62 + 99) % 100);
  EXPECT_EQ(total.key_sum_nonzero, (40U + 75 + 95 + 10 + 30 + 99) % 100);
  ASSERT_EQ(total.top.size(), 2U);
  EXPECT_DOUBLE_EQ(total.top[0].value, 30.0);
  EXPECT_EQ(total.top[0].row_id, 6);
  EXPECT_DOUBLE_EQ(total.top[1].value, 10.0);
  const CellSummary& a_male = *cells.at({1, 1});  // rows 0, 2, 5, 6
  EXPECT_EQ(a_male.count, 4);
  EXPECT_DOUBLE_EQ(a_male.value.value(), 47.0);
  EXPECT_EQ(a_male.key_sum, (40U + 95 + 62 + 99) % 100);
  const CellSummary& b_total = *cells.at({4, 0});  // rows 3, 4
  EXPECT_EQ(b_total.count, 2);
  EXPECT_EQ(b_total.contributors, 2);
  EXPECT_DOUBLE_EQ(b_total.weighted_value.value(), 3.0);
  EXPECT_EQ(cells.count({5, 0}), 1U);
  EXPECT_EQ(cells.count({3, 2}), 0U);  // (a2, F) is empty
}

TEST(Tabulation, MergedPartsEqualTheWhole) {
  const Fixture f;
  const auto whole_dims = f.dimensions(0, 7);
  CellTable whole = tabulate_leaves(whole_dims, f.options(0, 7));
  for (std::size_t split : {1U, 3U, 5U}) {
    CellTable left = tabulate_leaves(f.dimensions(0, split), f.options(0, split));
    const CellTable right = tabulate_leaves(f.dimensions(split, 7), f.options(split, 7));
    merge_cell_tables(left, right, f.options(0, 7));
    ASSERT_EQ(left.cells, whole.cells);
    for (std::size_t c = 0; c < whole.cell_count(); ++c) {
      EXPECT_EQ(left.summaries[c].count, whole.summaries[c].count);
      EXPECT_EQ(left.summaries[c].key_sum, whole.summaries[c].key_sum);
      EXPECT_EQ(left.summaries[c].value.value(), whole.summaries[c].value.value());
      ASSERT_EQ(left.summaries[c].top.size(), whole.summaries[c].top.size());
      for (std::size_t k = 0; k < whole.summaries[c].top.size(); ++k)
        EXPECT_EQ(left.summaries[c].top[k].row_id, whole.summaries[c].top[k].row_id);
    }
  }
}

TEST(Tabulation, ThreadCountDoesNotChangeTheTable) {
  std::vector<std::int32_t> a(20000);
  std::vector<std::int32_t> b(20000);
  std::vector<double> x(20000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::int32_t>((i * 7919) % 13);
    b[i] = static_cast<std::int32_t>((i * 104729) % 5);
    x[i] = static_cast<double>((i * 31) % 1000) * 0.1;
  }
  std::vector<std::int32_t> a_positions(13);
  std::vector<std::int32_t> a_parent{-1};
  for (std::int32_t k = 0; k < 13; ++k) {
    a_positions[static_cast<std::size_t>(k)] = k + 1;
    a_parent.push_back(0);
  }
  const std::vector<TabulationDimension> dims{{a, a_positions, a_parent}, {b, {1, 2, 3, 4, 5}, {-1, 0, 0, 0, 0, 0}}};
  TabulationOptions options;
  options.values = x;
  options.top_count = 3;
  const auto run = [&](int threads) {
    tbb::global_control control(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    CellTable table = tabulate_leaves(dims, options);
    add_margins(table, dims, options);
    return table;
  };
  const CellTable one = run(1);
  const CellTable four = run(4);
  ASSERT_EQ(one.cells, four.cells);
  EXPECT_EQ(one.cell_count(), 14U * 6U);
  for (std::size_t c = 0; c < one.cell_count(); ++c) {
    EXPECT_EQ(one.summaries[c].count, four.summaries[c].count);
    EXPECT_EQ(one.summaries[c].value.value(), four.summaries[c].value.value());
  }
  EXPECT_EQ(one.summaries.front().count, 20000);
}

TEST(Tabulation, RejectsACodeWithoutALeaf) {
  const std::vector<std::int32_t> codes{0, 1};
  // Position 1 is the parent of position 2: code 0 mapped to it would be counted twice.
  const std::vector<TabulationDimension> dims{{codes, {1, 2}, {-1, 0, 1}}};
  EXPECT_THROW(tabulate_leaves(dims, TabulationOptions{}), InvalidInput);
}

TEST(Tabulation, CellSpaceLimit) {
  const std::vector<std::int64_t> sizes{1000, 1000, 1000};
  EXPECT_TRUE(cell_space_within(sizes, 1'000'000'000));
  EXPECT_FALSE(cell_space_within(sizes, 999'999'999));
  const std::vector<std::int64_t> huge{1LL << 40, 1LL << 40};
  EXPECT_FALSE(cell_space_within(huge, std::uint64_t{1} << 62));
}

}  // namespace
}  // namespace sdc::tables
