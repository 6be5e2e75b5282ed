#include "kernels/tables/constraint_matrix.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/tables/hierarchy.h"
#include "kernels/tables/instance_generator.h"

namespace sdc::tables {
namespace {

// A x for the constraint matrix of `dimensions`.
std::vector<double> residuals(std::span<const DimensionEquations> dimensions, const std::vector<double>& cells) {
  const CsrMatrix a = constraint_matrix(dimensions);
  std::vector<double> y(static_cast<std::size_t>(a.rows()));
  multiply(a.view(), cells, y);
  return y;
}

void expect_sizes(const std::vector<DimensionEquations>& dimensions, std::int64_t n, std::int64_t m, std::int64_t nnz) {
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  EXPECT_EQ(sizes.cells, n);
  EXPECT_EQ(sizes.equations, m);
  EXPECT_EQ(sizes.nonzeros, nnz);
  const CsrMatrix a = constraint_matrix(dimensions);
  EXPECT_EQ(a.columns(), n);
  EXPECT_EQ(a.rows(), m);
  EXPECT_EQ(a.entry_count(), nnz);
}

// tabular.md §5, "E instance sizes", through the named shapes of §1: both the closed form and the
// built matrix.
TEST(ConstraintMatrix, InstanceSizesOfHier13x13x13a) { expect_sizes(shape_dimensions("13x13x13"), 2197, 3549, 11661); }

TEST(ConstraintMatrix, InstanceSizesOfHier13x7x7d) { expect_sizes(shape_dimensions("13x7x7"), 637, 525, 2401); }

TEST(ConstraintMatrix, InstanceSizesOfHier16x16x16a) { expect_sizes(shape_dimensions("16x16x16"), 4096, 5376, 21504); }

// A c3 cross is h16 with its codes in the same places; a c14 cross has 1 + 28 + 196 = 225 codes, 29
// equations and 14 + 2 × 196 = 406 child entries, so c14 × f2 has n = 450, m = 29 × 2 + 1 × 225 and
// nnz = (29 + 406) × 2 + (1 + 1) × 225.
TEST(ConstraintMatrix, ACrossDimensionWidensH16) {
  const DimensionEquations c3 = named_dimension("c3", "d1");
  const DimensionEquations h16 = named_dimension("h16", "d1");
  EXPECT_EQ(c3.code_count, h16.code_count);
  ASSERT_EQ(c3.equations.size(), h16.equations.size());
  for (std::size_t e = 0; e < c3.equations.size(); ++e) {
    EXPECT_EQ(c3.equations[e].parent, h16.equations[e].parent);
    EXPECT_EQ(c3.equations[e].children, h16.equations[e].children);
  }
  expect_sizes(shape_dimensions("c14xf2"), 450, 29 * 2 + 225, 435 * 2 + 2 * 225);
  EXPECT_THROW(shape_dimensions("c1"), ParameterError);
  EXPECT_THROW(shape_dimensions("c99999999"), ParameterError);
}

TEST(ConstraintMatrix, InstanceSizesOfHier13x13x7d) { expect_sizes(shape_dimensions("13x13x7"), 1183, 1443, 5369); }

// tabular.md §5, "E 2-D table": activities I–III × regions A–C with totals.
TEST(ConstraintMatrix, TwoDimensionalTableOracle) {
  const std::vector<std::string> activities{"I", "II", "III"};
  const std::vector<std::string> regions{"A", "B", "C"};
  const std::vector<DimensionEquations> dimensions{equations_of(flat_hierarchy("activity", activities)),
                                                   equations_of(flat_hierarchy("region", regions))};
  // Rows Total, I, II, III; columns Total, A, B, C.
  const std::vector<double> cells{190, 45, 101, 44,  //
                                  80,  20, 50,  10,  //
                                  49,  8,  19,  22,  //
                                  61,  17, 32,  12};
  const CsrMatrix a = constraint_matrix(dimensions);
  EXPECT_EQ(a.columns(), 16);
  EXPECT_EQ(a.rows(), 8);
  EXPECT_EQ(a.entry_count(), 32);
  EXPECT_EQ(constraint_rank(a.view()), 7);
  for (const double r : residuals(dimensions, cells)) EXPECT_EQ(r, 0.0);
  // A cell off by one breaks exactly its row's and its column's equations.
  std::vector<double> broken = cells;
  broken[6] += 1;  // (I, B)
  int nonzero = 0;
  for (const double r : residuals(dimensions, broken)) nonzero += r != 0.0 ? 1 : 0;
  EXPECT_EQ(nonzero, 2);
}

// tabular.md §5, "E multi-equation marginals": 9 English regions + England, Wales, Scotland, Great
// Britain × {total, male, female, young, adult, thin, fat}, total = male + female = young + adult =
// thin + fat. Only the North East and Great Britain lines are printed.
TEST(ConstraintMatrix, MultiEquationMarginalsOracle) {
  const Hierarchy gb = parse_hrc(
      "England\n@North East\n@North West\n@Yorkshire and The Humber\n@East Midlands\n@West Midlands\n"
      "@East\n@London\n@South East\n@South West\nWales\nScotland\n",
      "gb.hrc", "region");
  ASSERT_EQ(gb.size(), 13U);
  const DimensionEquations people{"people", 7, {{0, {1, 2}}, {0, {3, 4}}, {0, {5, 6}}}};
  const std::vector<DimensionEquations> dimensions{equations_of(gb), people};
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  EXPECT_EQ(sizes.cells, 91);
  EXPECT_EQ(sizes.equations, 2 * 7 + 3 * 13);
  EXPECT_EQ(sizes.nonzeros, (2 + 12) * 7 + (3 + 6) * 13);
  const CsrMatrix a = constraint_matrix(dimensions);
  EXPECT_EQ(a.rows(), sizes.equations);
  EXPECT_EQ(a.entry_count(), sizes.nonzeros);

  std::vector<double> cells(91, 0.0);
  const auto fill = [&](std::int32_t region, std::vector<double> line) {
    for (std::int32_t k = 0; k < 7; ++k) {
      const std::vector<std::int32_t> at{region, k};
      cells[static_cast<std::size_t>(cell_column(dimensions, at))] = line[static_cast<std::size_t>(k)];
    }
  };
  const std::int32_t north_east = gb.find("North East");
  ASSERT_EQ(north_east, 2);
  fill(north_east, {60593, 29225, 31368, 13856, 46737, 34565, 26028});
  fill(0, {1250098, 560722, 689376, 273340, 976758, 204762, 1045336});
  // The rows of the people dimension on the two filled lines: rows 14 + 3·line + e (the region
  // dimension's 2 equations × 7 lines come first).
  const std::vector<double> y = residuals(dimensions, cells);
  for (const std::int32_t line : {0, north_east}) {
    for (std::int32_t e = 0; e < 3; ++e) {
      const auto row = static_cast<std::size_t>(2 * 7 + 3 * line + e);
      EXPECT_EQ(y[row], 0.0) << "line " << line << ", equation " << e;
    }
  }
  // Three breakdowns of one total: three independent equations on a line.
  EXPECT_EQ(constraint_rank(constraint_matrix(std::vector<DimensionEquations>{people}).view()), 3);
}

TEST(ConstraintMatrix, RowsGoDimensionByDimensionThenLineByLine) {
  const std::vector<DimensionEquations> dimensions{named_dimension("f3", "a"), named_dimension("f4", "b")};
  std::vector<ConstraintRow> rows;
  std::vector<std::vector<std::int64_t>> children;
  for_each_constraint_row(dimensions, [&](const ConstraintRow& row) {
    rows.push_back(row);
    children.emplace_back(row.child_columns.begin(), row.child_columns.end());
  });
  ASSERT_EQ(rows.size(), 4U + 3U);
  // Dimension a, one line per position of b: parent (0, j), children (1, j), (2, j).
  for (std::int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(rows[static_cast<std::size_t>(j)].row, j);
    EXPECT_EQ(rows[static_cast<std::size_t>(j)].dimension, 0U);
    EXPECT_EQ(rows[static_cast<std::size_t>(j)].parent_column, j);
    EXPECT_EQ(children[static_cast<std::size_t>(j)], (std::vector<std::int64_t>{4 + j, 8 + j}));
  }
  // Dimension b, one line per position of a.
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rows[static_cast<std::size_t>(4 + i)].dimension, 1U);
    EXPECT_EQ(rows[static_cast<std::size_t>(4 + i)].parent_column, 4 * i);
    EXPECT_EQ(children[static_cast<std::size_t>(4 + i)], (std::vector<std::int64_t>{4 * i + 1, 4 * i + 2, 4 * i + 3}));
  }
}

TEST(ConstraintMatrix, StreamedMatrixMarketEqualsTheBuiltMatrix) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("13x7x3");
  std::ostringstream built;
  write_matrix_market(built, constraint_matrix(dimensions).view());
  std::ostringstream streamed;
  write_constraint_matrix_market(streamed, dimensions);
  EXPECT_EQ(built.str(), streamed.str());
  const std::string text = streamed.str();
  const TableShapeSizes sizes = constraint_sizes(dimensions);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1) + 1),
            "%%MatrixMarket matrix coordinate real general\n" + std::to_string(sizes.equations) + " " +
                std::to_string(sizes.cells) + " " + std::to_string(sizes.nonzeros) + "\n");
}

TEST(ConstraintMatrix, MatrixMarketOfASmallTable) {
  const std::vector<DimensionEquations> dimensions{named_dimension("f3", "a")};
  std::ostringstream out;
  write_constraint_matrix_market(out, dimensions);
  EXPECT_EQ(out.str(), "%%MatrixMarket matrix coordinate real general\n1 3 3\n1 1 -1\n1 2 1\n1 3 1\n");
}

TEST(ConstraintMatrix, CellAndEquationListOfTheTwoDimensionalTable) {
  const std::vector<DimensionEquations> dimensions{named_dimension("f2", "a"), named_dimension("f3", "b")};
  const std::vector<double> weights(6, 1.0);
  const std::vector<CellStatus> statuses{CellStatus::kSafe,       CellStatus::kSensitive, CellStatus::kZero,
                                         CellStatus::kSuppressed, CellStatus::kSafe,      CellStatus::kSafe};
  const std::vector<double> values{5, 2, 3, 5, 2, 3};
  const std::vector<double> zeros(6, 0.0);
  const std::vector<double> upper(6, 10.5);
  const std::vector<double> protection{0, 1, 0, 0, 0, 0};
  const CellListView cells{values, weights, statuses, zeros, upper, protection, protection, zeros};
  std::ostringstream out;
  write_cell_equation_list(out, dimensions, cells);
  EXPECT_EQ(out.str(),
            "0\n6\n"
            "0 5 1 s 0 10.5 0 0 0\n"
            "1 2 1 u 0 10.5 1 1 0\n"
            "2 3 1 z 0 10.5 0 0 0\n"
            "3 5 1 m 0 10.5 0 0 0\n"
            "4 2 1 s 0 10.5 0 0 0\n"
            "5 3 1 s 0 10.5 0 0 0\n"
            "5\n"
            "0 2 : 0 (-1) 3 (1)\n"
            "0 2 : 1 (-1) 4 (1)\n"
            "0 2 : 2 (-1) 5 (1)\n"
            "0 3 : 0 (-1) 1 (1) 2 (1)\n"
            "0 3 : 3 (-1) 4 (1) 5 (1)\n");
}

TEST(ConstraintMatrix, RefusesAMatrixAboveTheLimit) {
  const std::vector<DimensionEquations> dimensions = shape_dimensions("16x16x16");
  try {
    constraint_matrix(dimensions, 1000);
    FAIL() << "no ParameterError";
  } catch (const ParameterError& e) {
    const std::string message = e.what();
    for (const char* fragment : {"21504 non-zeros", "limit of 1000", "'d1' (16 codes, 7 equations)", "'d3'"})
      EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(ConstraintMatrix, ChecksEveryEquation) {
  const auto message_of = [](DimensionEquations d) {
    try {
      check_dimension(d);
    } catch (const ParameterError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of({"x", 0, {}}).find("no codes"), std::string::npos);
  EXPECT_NE(message_of({"x", 3, {{3, {1}}}}).find("equation 1: parent position 3"), std::string::npos);
  EXPECT_NE(message_of({"x", 3, {{0, {}}}}).find("no children"), std::string::npos);
  EXPECT_NE(message_of({"x", 3, {{0, {1, 1}}}}).find("appears twice"), std::string::npos);
  EXPECT_NE(message_of({"x", 3, {{0, {1, 2}}, {1, {1}}}}).find("equation 2: position 1 is its own child"),
            std::string::npos);
  EXPECT_NE(message_of({"x", 3, {{0, {1, 5}}}}).find("child position 5"), std::string::npos);
}

TEST(ConstraintMatrix, EquationsOfAHierarchyFollowItsTree) {
  const Hierarchy h = parse_hrc("1\n@11\n@12\n2\n", "nuts.hrc", "nuts");
  const DimensionEquations d = equations_of(h);
  EXPECT_EQ(d.name, "nuts");
  EXPECT_EQ(d.code_count, 5);
  ASSERT_EQ(d.equations.size(), 2U);
  EXPECT_EQ(d.equations[0].parent, 0);
  EXPECT_EQ(d.equations[0].children, (std::vector<std::int32_t>{1, 4}));
  EXPECT_EQ(d.equations[1].parent, 1);
  EXPECT_EQ(d.equations[1].children, (std::vector<std::int32_t>{2, 3}));
}

TEST(ConstraintMatrix, RankRefusesLargeDenseMatrices) {
  const CsrMatrix a = constraint_matrix(shape_dimensions("13x13x13"));
  EXPECT_THROW(constraint_rank(a.view(), 1e-9, 1000), ParameterError);
}

}  // namespace
}  // namespace sdc::tables
