#include "kernels/recoding/local_suppression.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "io/csv.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::recoding {
namespace {

/// Key columns of a shared CSV file as codes (distinct values in numeric order), with level counts.
struct Keys {
  std::vector<std::vector<std::int32_t>> codes;
  std::vector<std::int32_t> level_counts;

  std::vector<std::span<std::int32_t>> spans() {
    std::vector<std::span<std::int32_t>> result;
    for (std::vector<std::int32_t>& column : codes) result.emplace_back(column);
    return result;
  }
};

Keys read_keys(const char* file, const std::vector<std::string>& names) {
  Keys keys;
  const auto path = testing::shared_data(file);
  if (path.empty()) return keys;
  const std::vector<io::CsvRecord> records = io::read_csv_records(path, "test data");
  const auto& header = records.front().fields;
  for (const std::string& name : names) {
    const auto at = static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    std::map<double, std::int32_t> levels;
    for (std::size_t r = 1; r < records.size(); ++r) levels.emplace(std::stod(records[r].fields.at(at)), 0);
    std::int32_t code = 0;
    for (auto& [value, level] : levels) level = code++;
    std::vector<std::int32_t> column;
    for (std::size_t r = 1; r < records.size(); ++r) column.push_back(levels.at(std::stod(records[r].fields.at(at))));
    keys.codes.push_back(std::move(column));
    keys.level_counts.push_back(static_cast<std::int32_t>(levels.size()));
  }
  return keys;
}

const std::vector<std::string> kTestdataKeys{"urbrur", "roof", "walls", "water", "electcon", "relat", "sex"};

LocalSuppressionResult suppress(Keys& keys, std::int64_t k, double alpha = 1.0,
                                std::vector<std::int32_t> importance = {},
                                CandidateSearch search = CandidateSearch::kIndexed) {
  LocalSuppressionOptions options;
  options.k = k;
  options.search = search;
  options.alpha = alpha;
  options.importance = std::move(importance);
  const std::vector<std::span<std::int32_t>> spans = keys.spans();
  return suppress_to_k_anonymity(spans, keys.level_counts, options);
}

// recoding.md §8, E francdat: importance Key1 4, Key2 1, Key3 2, Key4 3.
TEST(ALocalSuppression, ReproducesTheReferenceOnFrancdat) {
  Keys keys = read_keys("francdat.csv", {"Key1", "Key2", "Key3", "Key4"});
  if (keys.codes.empty()) GTEST_SKIP() << "../shared/data is absent";
  EXPECT_EQ(default_importance(keys.level_counts), (std::vector<std::int32_t>{4, 1, 2, 3}));
  Keys twice = keys;
  const LocalSuppressionResult k2 = suppress(keys, 2);
  EXPECT_EQ(k2.violators_before, 4);
  EXPECT_EQ(k2.suppressed, (std::vector<std::int64_t>{1, 1, 0, 2}));
  EXPECT_EQ(k2.passes, 1);
  EXPECT_EQ(k2.violators_after, 0);
  // Record 4 (3,3,1,5) lost Key1, record 7 (6,2,1,5) Key2.
  EXPECT_EQ(keys.codes[0][3], -1);
  EXPECT_EQ(keys.codes[1][6], -1);
  const LocalSuppressionResult k3 = suppress(twice, 3);
  EXPECT_EQ(k3.suppressed, (std::vector<std::int64_t>{3, 1, 3, 2}));
  EXPECT_EQ(k3.violators_after, 0);
}

// recoding.md §8, E sdcMicro testdata: new suppressions per key, passes and records touched.
TEST(ALocalSuppression, ReproducesTheReferenceOnTestdata) {
  Keys keys = read_keys("testdata.csv", kTestdataKeys);
  if (keys.codes.empty()) GTEST_SKIP() << "../shared/data is absent";
  EXPECT_EQ(default_importance(keys.level_counts), (std::vector<std::int32_t>{1, 5, 3, 6, 4, 7, 2}));
  struct Case {
    std::int64_t k;
    std::vector<std::int32_t> importance;
    std::int64_t violators;
    std::vector<std::int64_t> suppressed;
    std::int64_t passes;
    std::int64_t touched;
  };
  const std::vector<Case> cases{{2, {}, 157, {0, 9, 0, 19, 2, 127, 0}, 1, 157},
                                {3, {}, 281, {0, 14, 4, 40, 6, 229, 0}, 2, 281},
                                {5, {}, 458, {0, 31, 6, 104, 13, 346, 0}, 3, 458},
                                {3, {7, 6, 5, 4, 3, 2, 1}, 281, {76, 111, 58, 41, 4, 8, 0}, -1, -1}};
  for (const Case& c : cases) {
    SCOPED_TRACE("k = " + std::to_string(c.k) + (c.importance.empty() ? "" : ", importance given"));
    Keys copy = keys;
    const LocalSuppressionResult result = suppress(copy, c.k, 1.0, c.importance);
    EXPECT_EQ(result.violators_before, c.violators);
    EXPECT_EQ(result.suppressed, c.suppressed);
    if (c.passes >= 0) {
      EXPECT_EQ(result.passes, c.passes);
    }
    if (c.touched >= 0) {
      EXPECT_EQ(result.records_touched, c.touched);
    }
    EXPECT_EQ(result.violators_after, 0);
    EXPECT_TRUE(result.impossible.empty());
  }
}

// recoding.md §8, E missing values: key j of record i (1-based) missing when (7i + 11j) mod 41 = 0.
TEST(ALocalSuppression, ReproducesTheReferenceWithMissingValuesForBothAlphas) {
  Keys keys = read_keys("testdata.csv", kTestdataKeys);
  if (keys.codes.empty()) GTEST_SKIP() << "../shared/data is absent";
  std::int64_t missing = 0;
  for (std::size_t j = 0; j < keys.codes.size(); ++j)
    for (std::size_t i = 0; i < keys.codes[j].size(); ++i)
      if ((7 * (i + 1) + 11 * (j + 1)) % 41 == 0) {
        keys.codes[j][i] = -1;
        ++missing;
      }
  EXPECT_EQ(missing, 781);
  Keys half = keys;
  const LocalSuppressionResult full = suppress(keys, 3, 1.0);
  EXPECT_EQ(full.violators_before, 112);
  EXPECT_EQ(full.suppressed, (std::vector<std::int64_t>{0, 0, 0, 11, 1, 103, 0}));
  EXPECT_EQ(full.passes, 2);
  EXPECT_EQ(full.records_touched, 112);
  const LocalSuppressionResult partial = suppress(half, 3, 0.5);
  EXPECT_EQ(partial.violators_before, 179);
  EXPECT_EQ(partial.suppressed, (std::vector<std::int64_t>{0, 0, 0, 17, 2, 185, 0}));
  EXPECT_EQ(partial.passes, 2);
  EXPECT_EQ(partial.records_touched, 194);
  EXPECT_EQ(partial.violators_after, 0);
}

// The reference's scan of every record and the native indexed search suppress the same values in the
// same records on every oracle configuration (the oracle tests above check the native one's figures).
TEST(ALocalSuppression, SuppressesTheSameValuesWithTheRecordScanAndTheIndexedSearch) {
  Keys testdata = read_keys("testdata.csv", kTestdataKeys);
  if (testdata.codes.empty()) GTEST_SKIP() << "../shared/data is absent";
  Keys with_missing = testdata;
  for (std::size_t j = 0; j < with_missing.codes.size(); ++j)
    for (std::size_t i = 0; i < with_missing.codes[j].size(); ++i)
      if ((7 * (i + 1) + 11 * (j + 1)) % 41 == 0) with_missing.codes[j][i] = -1;
  struct Case {
    const Keys* keys;
    std::int64_t k;
    double alpha;
    std::vector<std::int32_t> importance;
  };
  const std::vector<Case> cases{{&testdata, 2, 1.0, {}},     {&testdata, 3, 1.0, {}},
                                {&testdata, 5, 1.0, {}},     {&testdata, 3, 1.0, {7, 6, 5, 4, 3, 2, 1}},
                                {&with_missing, 3, 1.0, {}}, {&with_missing, 3, 0.5, {}}};
  for (const Case& c : cases) {
    SCOPED_TRACE("k = " + std::to_string(c.k) + ", alpha = " + std::to_string(c.alpha));
    Keys scanned = *c.keys;
    Keys indexed = *c.keys;
    const LocalSuppressionResult by_scan = suppress(scanned, c.k, c.alpha, c.importance, CandidateSearch::kRecordScan);
    const LocalSuppressionResult by_index = suppress(indexed, c.k, c.alpha, c.importance, CandidateSearch::kIndexed);
    EXPECT_EQ(scanned.codes, indexed.codes);
    EXPECT_EQ(by_scan.suppressed, by_index.suppressed);
    EXPECT_EQ(by_scan.passes, by_index.passes);
    EXPECT_EQ(by_scan.records_touched, by_index.records_touched);
    EXPECT_EQ(by_scan.violators_after, 0);
  }
}

// recoding.md §8, E testdata2 (the reference's own unit test).
TEST(ALocalSuppression, ReproducesTheReferenceOnTestdata2) {
  Keys keys = read_keys("testdata2.csv", kTestdataKeys);
  if (keys.codes.empty()) GTEST_SKIP() << "../shared/data is absent";
  EXPECT_EQ(default_importance(keys.level_counts), (std::vector<std::int32_t>{1, 5, 4, 7, 2, 6, 3}));
  const LocalSuppressionResult result = suppress(keys, 2);
  EXPECT_EQ(result.suppressed, (std::vector<std::int64_t>{3, 10, 7, 56, 0, 16, 5}));
}

TEST(ALocalSuppression, SaysWhyWhenKAnonymityCannotBeReached) {
  // Two records, k = 3: each agrees with the other once its differing key is gone.
  std::vector<std::int32_t> a{0, 1};
  std::vector<std::int32_t> b{0, 0};
  const std::vector<std::span<std::int32_t>> keys{std::span<std::int32_t>(a), std::span<std::int32_t>(b)};
  LocalSuppressionOptions options;
  options.k = 3;
  const LocalSuppressionResult result = suppress_to_k_anonymity(keys, std::vector<std::int32_t>{2, 2}, options);
  EXPECT_EQ(result.violators_after, 2);
  EXPECT_NE(result.impossible.find("no suppression can raise its count"), std::string::npos) << result.impossible;
}

TEST(ALocalSuppression, RefusesOptionsNamingThem) {
  LocalSuppressionOptions options;
  options.k = 0;
  EXPECT_THROW(check_local_suppression_options(2, options), ParameterError);
  options.k = 2;
  options.alpha = 1.5;
  EXPECT_THROW(check_local_suppression_options(2, options), ParameterError);
  options.alpha = 1.0;
  options.importance = {1, 3};
  EXPECT_THROW(check_local_suppression_options(2, options), ParameterError);
  options.importance = {1};
  EXPECT_THROW(check_local_suppression_options(2, options), ParameterError);
}

}  // namespace
}  // namespace sdc::recoding
