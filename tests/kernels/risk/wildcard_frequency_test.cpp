#include "kernels/risk/wildcard_frequency.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "tests/kernels/key_columns_fixture.h"

namespace sdc {
namespace {

RecordFrequencies wildcard_counts(const Columns& columns, std::span<const double> weights, double alpha) {
  const auto local = frequency_count_local(columns.view(), weights);
  return wildcard_frequency_assign(local.record_class, wildcard_frequency(local.classes, columns.levels, alpha));
}

void expect_near_each(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "record " << i + 1;
}

// risk.md §11 "E missing values": francdat (codes of sorted levels as in frequency_count_test) with
// Key3 of record 3, Key1 and Key2 of record 4, Key4 of record 5 and Key1 of record 6 missing.
Columns francdat_with_missing_keys() {
  return {{{0, 0, 0, -1, 2, -1, 3, 0}, {0, 0, 0, -1, 1, 1, 0, 0}, {1, 0, -1, 0, 0, 0, 0, 1}, {0, 0, 0, 2, -1, 0, 2, 0}},
          {4, 2, 2, 3}};
}
const std::vector<double> kFrancdatWeights{18, 45.5, 39, 17, 541, 8, 5, 92};

TEST(WildcardFrequency, ReproducesTheFrancdatMissingValuesOracleWithAlphaOne) {
  const auto result = wildcard_counts(francdat_with_missing_keys(), kFrancdatWeights, 1.0);
  expect_near_each(result.fk, {3, 2, 4, 3, 3, 2, 2, 3}, 0.05);
  EXPECT_EQ(result.fk, (std::vector<double>{3, 2, 4, 3, 3, 2, 2, 3}));
  expect_near_each(result.fk_weighted, {149, 84.5, 194.5, 563, 566, 549, 22, 149}, 0.05);
}

TEST(WildcardFrequency, ReproducesTheFrancdatMissingValuesOracleWithAlphaHalf) {
  const auto result = wildcard_counts(francdat_with_missing_keys(), kFrancdatWeights, 0.5);
  expect_near_each(result.fk, {2.5, 1.5, 4, 2.5, 2, 1.5, 1.5, 2.5}, 0.05);
  expect_near_each(result.fk_weighted, {129.5, 65, 194.5, 292.5, 553.5, 278.5, 13.5, 129.5}, 0.05);
}

// risk.md §11 "E all-missing rule": keys (a,b) = (1,1),(1,1),(2,1),(NA,NA),(1,NA),(NA,2), w = 10..60.
Columns all_missing_rule_keys() { return {{{0, 0, 1, -1, 0, -1}, {0, 0, 0, -1, -1, 1}}, {2, 2}}; }
const std::vector<double> kAllMissingRuleWeights{10, 20, 30, 40, 50, 60};

TEST(WildcardFrequency, ReproducesTheAllMissingRuleOracleWithAlphaOne) {
  const auto result = wildcard_counts(all_missing_rule_keys(), kAllMissingRuleWeights, 1.0);
  expect_near_each(result.fk, {3, 3, 1, 6, 5, 3}, 0.05);
  expect_near_each(result.fk_weighted, {80, 80, 30, 210, 180, 150}, 0.05);
}

TEST(WildcardFrequency, ReproducesTheAllMissingRuleOracleWithAlphaHalf) {
  const auto result = wildcard_counts(all_missing_rule_keys(), kAllMissingRuleWeights, 0.5);
  expect_near_each(result.fk, {2.5, 2.5, 1, 6, 4, 2}, 0.05);
  expect_near_each(result.fk_weighted, {55, 55, 30, 210, 130, 105}, 0.05);
}

TEST(WildcardFrequency, WithOneKeyAddsMissingRecordsToEveryValueWithAlpha) {
  // risk.md §1: complete value n_value + alpha * n_missing; missing records f = n.
  const Columns columns{{{0, 0, 1, -1, -1}}, {2}};
  const std::vector<double> weights{1, 2, 4, 8, 16};
  const auto result = wildcard_counts(columns, weights, 0.25);
  EXPECT_EQ(result.fk, (std::vector<double>{2.5, 2.5, 1.5, 5, 5}));
  EXPECT_EQ(result.fk_weighted, (std::vector<double>{9, 9, 10, 31, 31}));
}

TEST(WildcardFrequency, SummaryComparesRealValuedCountsWithK) {
  const auto columns = francdat_with_missing_keys();
  const auto local = frequency_count_local(columns.view(), kFrancdatWeights);
  const auto patterns = wildcard_frequency(local.classes, columns.levels, 0.5);
  const auto below_two = wildcard_frequency_finalize(local.classes.counts, patterns.f, 2);
  EXPECT_EQ(below_two.records, 8);
  EXPECT_EQ(below_two.classes, 7);  // records 1 and 8 share their pattern
  EXPECT_EQ(below_two.sample_uniques, 0);
  EXPECT_EQ(below_two.records_below_k, 3);  // the three f = 1.5; f = 2 is not below 2
  EXPECT_EQ(below_two.classes_below_k, 3);
  const auto below_three = wildcard_frequency_finalize(local.classes.counts, patterns.f, 3);
  EXPECT_EQ(below_three.records_below_k, 7);
  EXPECT_EQ(below_three.classes_below_k, 6);
}

TEST(WildcardFrequency, WithoutMissingKeysGivesTheCompleteCountsBitForBit) {
  std::mt19937 generator(11);  // test data only
  Columns columns{{}, {3, 50, 4}};
  std::vector<double> weights(20000);
  for (auto levels : columns.levels) {
    std::vector<std::int32_t> c(weights.size());
    for (auto& x : c) x = static_cast<std::int32_t>(generator() % static_cast<unsigned>(levels));
    columns.codes.push_back(std::move(c));
  }
  for (auto& w : weights) w = std::uniform_real_distribution<double>(0.1, 900.0)(generator);
  const auto local = frequency_count_local(columns.view(), weights);
  std::vector<double> class_weights;
  for (const auto& w : local.classes.weights) class_weights.push_back(w.value());
  const auto complete = frequency_count_assign(local.record_class, local.classes.counts, class_weights);
  const auto wildcard = wildcard_counts(columns, weights, 0.5);
  EXPECT_EQ(wildcard.fk, complete.fk);
  EXPECT_EQ(wildcard.fk_weighted, complete.fk_weighted);
}

// ---- the reference: a pairwise scan over records, straight from the rules of risk.md §1 ----

RecordFrequencies pairwise_scan(const Columns& columns, std::span<const double> weights, double alpha) {
  const std::size_t n = columns.records();
  const std::size_t m = columns.codes.size();
  const auto code = [&](std::size_t record, std::size_t key) { return columns.codes[key][record]; };
  const auto missing_count = [&](std::size_t record) {
    std::size_t missing = 0;
    for (std::size_t j = 0; j < m; ++j) missing += code(record, j) == -1 ? 1U : 0U;
    return missing;
  };
  RecordFrequencies out;
  out.fk.resize(n);
  out.fk_weighted.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t missing_i = missing_count(i);
    std::int64_t full = 0, wild = 0;
    double full_weight = 0, wild_weight = 0;
    for (std::size_t j = 0; j < n; ++j) {
      bool compatible = true, same = true;
      for (std::size_t key = 0; key < m; ++key) {
        const auto a = code(i, key), b = code(j, key);
        same = same && a == b;
        compatible = compatible && (a == -1 || b == -1 || a == b);
      }
      if (!compatible) continue;
      const std::size_t missing_j = missing_count(j);
      bool counts_fully = false;
      if (same || missing_i == m) {
        counts_fully = true;
      } else if (missing_i == 0) {
        if (missing_j == m && m > 1) continue;  // all-missing records are not added to complete ones
      } else {
        counts_fully = missing_j == 0;
      }
      const double w = weights.empty() ? 1.0 : weights[j];
      if (counts_fully) {
        ++full;
        full_weight += w;
      } else {
        ++wild;
        wild_weight += w;
      }
    }
    out.fk[i] = static_cast<double>(full) + alpha * static_cast<double>(wild);
    out.fk_weighted[i] = full_weight + alpha * wild_weight;
  }
  return out;
}

void expect_equals_pairwise_scan(const Columns& columns, std::span<const double> weights, double alpha) {
  const auto expected = pairwise_scan(columns, weights, alpha);
  const auto actual = wildcard_counts(columns, weights, alpha);
  for (std::size_t i = 0; i < expected.fk.size(); ++i) {
    ASSERT_EQ(actual.fk[i], expected.fk[i]) << "record " << i << " alpha " << alpha;
    ASSERT_NEAR(actual.fk_weighted[i], expected.fk_weighted[i], 1e-9 * expected.fk_weighted[i])
        << "record " << i << " alpha " << alpha;
  }
}

Columns random_columns_with_missing(std::size_t records, std::vector<std::int32_t> levels,
                                    std::vector<double> missing_rate, unsigned seed) {
  std::mt19937 generator(seed);  // test data only
  Columns columns{{}, levels};
  for (std::size_t j = 0; j < levels.size(); ++j) {
    std::vector<std::int32_t> c(records);
    for (auto& x : c)
      x = std::uniform_real_distribution<double>(0, 1)(generator) < missing_rate[j]
              ? -1
              : static_cast<std::int32_t>(generator() % static_cast<unsigned>(levels[j]));
    columns.codes.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < records; i += 97)
    for (auto& c : columns.codes) c[i] = -1;  // some all-missing records
  return columns;
}

std::vector<double> random_weights(std::size_t records, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<double> weights(records);
  for (auto& w : weights) w = std::uniform_real_distribution<double>(0.5, 300.0)(generator);
  return weights;
}

TEST(WildcardFrequency, EqualsAPairwiseScanOnRandomKeysWithManyMasks) {
  const auto columns = random_columns_with_missing(2500, {3, 4, 2, 5}, {0.1, 0.3, 0.05, 0.2}, 5);
  const auto weights = random_weights(2500, 6);
  for (double alpha : {1.0, 0.5, 0.3, 0.0}) expect_equals_pairwise_scan(columns, weights, alpha);
  expect_equals_pairwise_scan(columns, {}, 0.7);
}

TEST(WildcardFrequency, EqualsAPairwiseScanWithOneKey) {
  const auto columns = random_columns_with_missing(800, {6}, {0.1}, 7);
  for (double alpha : {1.0, 0.4}) expect_equals_pairwise_scan(columns, random_weights(800, 8), alpha);
}

TEST(WildcardFrequency, EqualsAPairwiseScanWhenKeysDoNotPackIntoSixtyFourBits) {
  auto columns = random_columns_with_missing(1500, {3, 4, 5}, {0.2, 0.1, 0.3}, 9);
  const auto weights = random_weights(1500, 10);
  const auto packed = wildcard_counts(columns, weights, 0.5);
  columns.levels = {2000000000, 2000000000, 2000000000};
  const auto tuples = wildcard_counts(columns, weights, 0.5);
  EXPECT_EQ(packed.fk, tuples.fk);
  EXPECT_EQ(packed.fk_weighted, tuples.fk_weighted);
  expect_equals_pairwise_scan(columns, weights, 0.5);
}

/// testdata.csv (sdcMicro data(testdata)), the named integer columns as codes of their sorted values.
Columns read_testdata(const std::filesystem::path& path, const std::vector<std::string>& names,
                      std::vector<double>* weights, const std::string& weight_name) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream fields(line); std::getline(fields, header.emplace_back(), ',');) {
  }
  header.pop_back();
  const auto column_of = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  std::vector<std::vector<double>> values(names.size());
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    for (std::stringstream row(line); std::getline(row, fields.emplace_back(), ',');) {
    }
    for (std::size_t j = 0; j < names.size(); ++j) values[j].push_back(std::stod(fields.at(column_of(names[j]))));
    weights->push_back(std::stod(fields.at(column_of(weight_name))));
  }
  Columns columns;
  for (const auto& column : values) {
    std::vector<double> levels = column;
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    std::vector<std::int32_t> codes;
    for (double v : column)
      codes.push_back(static_cast<std::int32_t>(std::lower_bound(levels.begin(), levels.end(), v) - levels.begin()));
    columns.codes.push_back(std::move(codes));
    columns.levels.push_back(static_cast<std::int32_t>(levels.size()));
  }
  return columns;
}

TEST(WildcardFrequency, EqualsAPairwiseScanOnTestdataWithInjectedMissingValues) {
  const auto path = std::filesystem::path(SDC_SHARED_DATA_DIR) / "testdata.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "../shared/data is absent";
  std::vector<double> weights;
  auto columns = read_testdata(path, {"urbrur", "water", "relat", "sex", "age"}, &weights, "household_weights");
  ASSERT_EQ(columns.records(), 4580U);
  // About 5% missing per key, drawn per (record, key) so that the file is the same on every machine.
  const RecordRng rng(20260601, StepId::kRiskSimulation);
  std::size_t missing = 0;
  for (std::size_t i = 0; i < columns.records(); ++i)
    for (std::size_t j = 0; j < columns.codes.size(); ++j)
      if (rng.uniform({.unit = i, .draw = j}) < 0.05) {
        columns.codes[j][i] = -1;
        ++missing;
      }
  EXPECT_GT(missing, 900U);
  EXPECT_LT(missing, 1400U);
  for (double alpha : {1.0, 0.5}) expect_equals_pairwise_scan(columns, weights, alpha);
}

TEST(WildcardFrequency, DoesNotDependOnTheSplitOrTheThreadCount) {
  const auto columns = random_columns_with_missing(200000, {2, 40, 5, 9, 3}, {0.01, 0.05, 0.0, 0.02, 0.1}, 12);
  const auto weights = random_weights(200000, 13);
  const auto whole = frequency_count_local(columns.view(), weights).classes;
  PatternFrequencies one, two;
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    one = wildcard_frequency(whole, columns.levels, 0.5);
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    two = wildcard_frequency(whole, columns.levels, 0.5);
  }
  EXPECT_EQ(one.f, two.f);
  EXPECT_EQ(one.fk_weighted, two.fk_weighted);

  const std::size_t cut = 77777;
  const auto left = frequency_count_local(columns.view(0, cut), std::span(weights).first(cut)).classes;
  const auto right = frequency_count_local(columns.view(cut), std::span(weights).subspan(cut)).classes;
  auto right_left = right;
  frequency_count_merge(right_left, left);
  const auto merged = wildcard_frequency(right_left, columns.levels, 0.5);
  EXPECT_EQ(merged.f, one.f);
  EXPECT_EQ(merged.fk_weighted, one.fk_weighted);
}

TEST(WildcardLattice, ReadsOnlyTablesWithANonZeroWeight) {
  // Two keys: complete 0b11, partial 0b01 and 0b10, all-missing 0.
  const std::vector<KeyMask> masks{0b11, 0b10, 0, 0b01, 0b11};
  const auto lattice = wildcard_lattice(masks, 2);
  EXPECT_EQ(lattice.masks, (std::vector<KeyMask>{0, 0b01, 0b10, 0b11}));
  const auto reads = [&](KeyMask mask) {
    std::vector<std::tuple<KeyMask, KeyMask, WildcardWeight>> out;
    for (const auto& lookup : lattice.lookups[lattice.mask_index(mask)])
      out.emplace_back(lattice.tables[lookup.table].source, lattice.tables[lookup.table].on, lookup.weight);
    return out;
  };
  using W = WildcardWeight;
  // Complete patterns read the partial ones with alpha and never the all-missing ones.
  EXPECT_EQ(reads(0b11),
            (std::vector<std::tuple<KeyMask, KeyMask, W>>{{0b01, 0b01, W::kAlpha}, {0b10, 0b10, W::kAlpha}}));
  EXPECT_EQ(reads(0b01), (std::vector<std::tuple<KeyMask, KeyMask, W>>{
                             {0, 0, W::kAlpha}, {0b10, 0, W::kAlpha}, {0b11, 0b01, W::kFull}}));
  EXPECT_EQ(reads(0), (std::vector<std::tuple<KeyMask, KeyMask, W>>{
                          {0b01, 0, W::kFull}, {0b10, 0, W::kFull}, {0b11, 0, W::kFull}}));
}

TEST(WildcardFrequency, RejectsAlphaOutsideTheUnitInterval) {
  const auto columns = all_missing_rule_keys();
  const auto local = frequency_count_local(columns.view(), {});
  EXPECT_THROW(wildcard_frequency(local.classes, columns.levels, 1.5), ParameterError);
  EXPECT_THROW(wildcard_frequency(local.classes, columns.levels, -0.1), ParameterError);
  EXPECT_THROW(wildcard_frequency(local.classes, columns.levels, std::nan("")), ParameterError);
}

TEST(WildcardFrequency, RejectsACodeOutsideItsLevelsNamingTheKey) {
  Columns columns = all_missing_rule_keys();
  columns.codes[1][2] = 7;
  const auto local = frequency_count_local(Columns{columns.codes, {8, 8}}.view(), {});
  try {
    wildcard_frequency(local.classes, columns.levels, 1.0);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("key variable 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sdc
