#include "kernels/tables/block_angular.h"

#include <gtest/gtest.h>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

TEST(ReorderingOptions, RefuseASingleBlock) {
  const CsrMatrix a = CsrMatrix::from_entries(2, 2, {{0, 0, 1.0}, {1, 1, 1.0}});
  ReorderingOptions options;
  options.blocks = 1;
  EXPECT_THROW(check_reordering_options(a.view(), options), ParameterError);
}

}  // namespace
}  // namespace sdc::tables
