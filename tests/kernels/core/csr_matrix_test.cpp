#include "kernels/core/csr_matrix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// 3 x 4:  [1 0 2 0]
//         [0 0 0 0]
//         [0 3 0 4]
CsrMatrix example() { return CsrMatrix(3, 4, {0, 2, 2, 4}, {0, 2, 1, 3}, {1.0, 2.0, 3.0, 4.0}); }

TEST(CsrMatrix, ViewsItsRowsAndMultipliesAVector) {
  const CsrMatrix m = example();
  const CsrView v = m.view();
  EXPECT_EQ(v.entry_count(), 4);
  EXPECT_TRUE(v.row_columns(1).empty());
  EXPECT_EQ(std::vector<std::int64_t>(v.row_columns(2).begin(), v.row_columns(2).end()),
            (std::vector<std::int64_t>{1, 3}));
  std::vector<double> y(3);
  multiply(v, std::vector<double>{1, 10, 100, 1000}, y);
  EXPECT_EQ(y, (std::vector<double>{201, 0, 4030}));
}

TEST(CsrMatrix, BuildsFromEntriesInAnyOrderAddingRepeatedPlacesExactly) {
  std::vector<MatrixEntry> entries{{2, 3, 4.0}, {0, 2, 1.5}, {2, 1, 3.0}, {0, 0, 1.0}, {0, 2, 0.5}};
  EXPECT_EQ(CsrMatrix::from_entries(3, 4, entries), example());
  // Sums of many parts do not depend on the order the parts come in.
  std::vector<MatrixEntry> parts;
  for (int i = 0; i < 1000; ++i) parts.push_back({0, 0, i % 2 == 0 ? 1e16 : -1e16 + 1.0 / (i + 1)});
  const double forward = CsrMatrix::from_entries(1, 1, parts).view().values[0];
  std::shuffle(parts.begin(), parts.end(), std::mt19937(4));  // test data only
  EXPECT_EQ(CsrMatrix::from_entries(1, 1, parts).view().values[0], forward);
}

TEST(CsrMatrix, TransposesIntoSortedRows) {
  const CsrMatrix t = example().transposed();
  EXPECT_EQ(t, CsrMatrix(4, 3, {0, 1, 2, 3, 4}, {0, 2, 0, 2}, {1.0, 3.0, 2.0, 4.0}));
  EXPECT_EQ(t.transposed(), example());
}

TEST(CsrMatrix, RefusesArraysThatBreakTheRules) {
  EXPECT_THROW(CsrMatrix(2, 2, {0, 1}, {0}, {1.0}), InternalError);           // offsets not rows + 1
  EXPECT_THROW(CsrMatrix(1, 2, {0, 2}, {1, 0}, {1.0, 2.0}), InternalError);   // columns out of order
  EXPECT_THROW(CsrMatrix(1, 2, {0, 1}, {2}, {1.0}), InternalError);           // column outside
  EXPECT_THROW(CsrMatrix::from_entries(1, 1, {{1, 0, 1.0}}), InternalError);  // entry outside
  EXPECT_EQ(CsrView{}.problem(), "row offsets are not rows + 1");
}

}  // namespace
}  // namespace sdc
