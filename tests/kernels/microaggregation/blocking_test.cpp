#include "kernels/microaggregation/blocking.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <random>
#include <vector>

#include "kernels/microaggregation/grouping.h"
#include "kernels/microaggregation/mdav.h"
#include "tests/kernels/microaggregation/information_loss_support.h"

namespace sdc::microaggregation {
namespace {

using testing::columns_of;

NumericData random_records(std::size_t n, unsigned seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> columns(3, std::vector<double>(n));
  for (auto& column : columns) {
    for (auto& value : column) value = normal(engine);
  }
  return columns_of(columns);
}

std::vector<std::int64_t> block_sizes(const Blocks& blocks) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(blocks.block_count), 0);
  for (const std::int32_t block : blocks.block_of_record) ++sizes[static_cast<std::size_t>(block)];
  return sizes;
}

Grouping blocked_mdav(const NumericData& data, const Blocks& blocks, int k) {
  return microaggregate_blocks(data.view(), blocks, k,
                               [k](const NumericColumns& block) { return mdav(block, k, MdavMode::kNative).grouping; });
}

TEST(AKdTreeBlocking, CutsBlocksNoLargerThanTheLimitAndNoSmallerThanTwoK) {
  const auto data = random_records(5000, 1);
  const Blocks blocks = kdtree_blocks(data.view(), 700, 3);
  EXPECT_GT(blocks.block_count, 7);
  for (const std::int64_t size : block_sizes(blocks)) {
    EXPECT_LE(size, 700);
    EXPECT_GE(size, 6);
  }
}

TEST(ABlockedMicroaggregation, KeepsEveryGroupAtLeastK) {
  const auto data = random_records(5000, 2);
  for (const int k : {3, 5}) {
    const Grouping grouping = blocked_mdav(data, kdtree_blocks(data.view(), 400, k), k);
    const auto histogram = group_size_histogram(grouping);
    for (std::size_t size = 0; size < static_cast<std::size_t>(k); ++size) EXPECT_EQ(histogram[size], 0) << "k " << k;
  }
}

TEST(ABlockedMicroaggregation, GroupsTheSameWayForOneAndTwoThreads) {
  const auto data = random_records(4000, 3);
  const Blocks blocks = kdtree_blocks(data.view(), 500, 3);
  Grouping one;
  Grouping two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = blocked_mdav(data, blocks, 3);
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = blocked_mdav(data, blocks, 3);
  }
  EXPECT_EQ(one.group_of_record, two.group_of_record);
}

TEST(AnOrderingBlocking, MergesASmallLastChunkIntoThePreviousOne) {
  std::vector<double> score = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10, 11};
  std::vector<std::int64_t> row_ids(12);
  for (std::size_t i = 0; i < 12; ++i) row_ids[i] = static_cast<std::int64_t>(i);
  const Blocks blocks = ordering_blocks(score, row_ids, 5, 2);
  EXPECT_EQ(blocks.block_count, 2);
  EXPECT_EQ(block_sizes(blocks), (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(blocks.block_of_record[9], 0);
  EXPECT_EQ(blocks.block_of_record[11], 1);
}

TEST(AStrataBlocking, MergesSmallStrataWithTheNextInCodeOrder) {
  const std::vector<std::int32_t> strata = {7, 1, 1, 1, 1, 1, 1, 4, 4, 9, 9, 9, 9, 9, 9, 9, 2};
  const Blocks blocks = strata_blocks(strata, 3);
  // Codes 1 (6 rows) | 2, 4, 7 merged forwards (4 rows) into 9 (7 rows).
  EXPECT_EQ(blocks.block_count, 2);
  EXPECT_EQ(blocks.block_of_record[1], 0);
  EXPECT_EQ(blocks.block_of_record[16], 1);
  EXPECT_EQ(blocks.block_of_record[0], 1);
  EXPECT_EQ(blocks.block_of_record[9], 1);
}

TEST(AStrataBlocking, MergesASmallLastStratumBackwards) {
  const std::vector<std::int32_t> strata = {1, 1, 1, 1, 2, 2, 2, 2, 3};
  const Blocks blocks = strata_blocks(strata, 2);
  EXPECT_EQ(blocks.block_count, 2);
  EXPECT_EQ(blocks.block_of_record[8], 1);
}

}  // namespace
}  // namespace sdc::microaggregation
