#include "kernels/risk/frequency_count.h"
#include "tests/kernels/key_columns_fixture.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <random>

namespace sdc {
namespace {

// francdat (risk.md oracle "E francdat"): keys Key1..Key4 as codes of their sorted levels.
// Key1 levels {1,3,4,6}, Key2 {2,3}, Key3 {1,5}, Key4 {1,4,5}.
Columns francdat_keys() {
  return {{{0, 0, 0, 1, 2, 2, 3, 0}, {0, 0, 0, 1, 1, 1, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 2, 1, 0, 2, 0}},
          {4, 2, 2, 3}};
}
const std::vector<double> kFrancdatWeights{18, 45.5, 39, 17, 541, 8, 5, 92};

TEST(FrequencyCount, ReproducesTheFrancdatOracle) {
  const auto columns = francdat_keys();
  const auto local = frequency_count_local(columns.view(), kFrancdatWeights);
  std::vector<double> class_weights;
  for (const auto& w : local.classes.weights) class_weights.push_back(w.value());
  const auto result = frequency_count_assign(local.record_class, local.classes.counts, class_weights);
  EXPECT_EQ(result.fk, (std::vector<double>{2, 2, 2, 1, 1, 1, 1, 2}));
  EXPECT_EQ(result.fk_weighted, (std::vector<double>{110, 84.5, 84.5, 17, 541, 8, 5, 110}));

  const auto summary = frequency_count_finalize(local.classes.counts, 3);
  EXPECT_EQ(summary.classes, 6);
  EXPECT_EQ(summary.sample_uniques, 4);
  EXPECT_EQ(summary.records_below_k, 8);
  EXPECT_EQ(summary.classes_below_k, 6);
}

TEST(FrequencyCount, SortsClassesByKeyTupleWithMissingFirst) {
  const Columns columns{{{1, -1, 0, 1}, {0, 0, 1, 0}}, {2, 2}};
  const auto local = frequency_count_local(columns.view(), {});
  ASSERT_EQ(local.classes.class_count(), 3U);
  EXPECT_EQ(local.classes.class_keys, (std::vector<std::int32_t>{-1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(local.classes.counts, (std::vector<std::int64_t>{1, 1, 2}));
  EXPECT_EQ(local.record_class, (std::vector<std::uint32_t>{2, 0, 1, 2}));
}

Columns random_columns(std::size_t records, std::vector<std::int32_t> levels, unsigned seed) {
  std::mt19937 generator(seed);  // test data only
  Columns columns;
  columns.levels = levels;
  for (auto l : levels) {
    std::uniform_int_distribution<std::int32_t> code(-1, l - 1);
    std::vector<std::int32_t> c(records);
    for (auto& x : c) x = code(generator);
    columns.codes.push_back(std::move(c));
  }
  return columns;
}

TEST(FrequencyCount, MergeOverAnySplitEqualsOneBlock) {
  const auto columns = random_columns(50000, {3, 7, 11, 5}, 1);
  std::vector<double> weights(50000);
  std::mt19937 generator(2);
  std::uniform_real_distribution<double> weight(0.5, 300.0);
  for (auto& w : weights) w = weight(generator);

  const auto whole = frequency_count_local(columns.view(), weights).classes;
  for (std::size_t cut : {std::size_t{1}, std::size_t{17}, std::size_t{25000}, std::size_t{49999}}) {
    const auto left = frequency_count_local(columns.view(0, cut), std::span(weights).first(cut)).classes;
    const auto right = frequency_count_local(columns.view(cut), std::span(weights).subspan(cut)).classes;
    auto left_right = left;
    frequency_count_merge(left_right, right);
    auto right_left = right;
    frequency_count_merge(right_left, left);
    for (const auto& merged : {left_right, right_left}) {
      ASSERT_EQ(merged.class_keys, whole.class_keys);
      ASSERT_EQ(merged.counts, whole.counts);
      for (std::size_t c = 0; c < whole.class_count(); ++c)
        ASSERT_EQ(merged.weights[c].value(), whole.weights[c].value()) << "class " << c << " cut " << cut;
    }
  }
}

TEST(FrequencyCount, PackedAndTupleGroupingAgree) {
  // Level counts whose product exceeds 2^64 force the comparison-sort path.
  auto small = random_columns(20000, {3, 4, 5}, 3);
  auto huge = small;
  huge.levels = {2000000000, 2000000000, 2000000000};
  const auto a = group_by_keys(small.view());
  const auto b = group_by_keys(huge.view());
  EXPECT_EQ(a.class_keys, b.class_keys);
  EXPECT_EQ(a.record_class, b.record_class);
}

TEST(FrequencyCount, DoesNotDependOnTheThreadCount) {
  const auto columns = random_columns(300000, {2, 101, 5, 9}, 4);
  KeyGrouping one, two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = group_by_keys(columns.view());
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = group_by_keys(columns.view());
  }
  EXPECT_EQ(one.class_keys, two.class_keys);
  EXPECT_EQ(one.record_class, two.record_class);
}

TEST(FirstMissingKey, FindsTheEarliestRecordAcrossKeys) {
  const Columns columns{{{0, 0, -1}, {0, -1, 0}}, {1, 1}};
  const auto missing = first_missing_key(columns.view());
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->record, 1U);
  EXPECT_EQ(missing->key, 1U);
  EXPECT_FALSE(first_missing_key(Columns{{{0, 0}}, {1}}.view()).has_value());
}

}  // namespace
}  // namespace sdc
