#include "kernels/risk/l_diversity.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <map>
#include <random>

#include "kernels/core/table.h"

namespace sdc {
namespace {

KeyColumns one_key(const std::vector<std::int32_t>& codes, std::int32_t levels) {
  KeyColumns keys;
  keys.codes.emplace_back(codes);
  keys.level_counts = {levels};
  return keys;
}

LDiversity per_class(const std::vector<std::int32_t>& key, std::int32_t levels, const std::vector<std::int32_t>& s,
                     const LDiversityOptions& options = {}) {
  return l_diversity_finalize(l_diversity_local(one_key(key, levels), s).classes, options);
}

// risk.md §11 "E l-diversity": k1 = 1 (5 records), k1 = 2 (6 records) as codes 0 and 1.
const std::vector<std::int32_t> kKey{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
// S = (1,1,1,2,3 | 1,1,1,1,2,NA) and T = (1,2,1,2,1 | 1,1,2,2,3,3) as codes (value - 1).
const std::vector<std::int32_t> kS{0, 0, 0, 1, 2, 0, 0, 0, 0, 1, kMissingCode};
const std::vector<std::int32_t> kT{0, 1, 0, 1, 0, 0, 0, 1, 1, 2, 2};

TEST(LDiversityOracle, SensitiveVariableSWithAMissingValue) {
  for (const bool compat : {false, true}) {
    const LDiversity l = per_class(kKey, 2, kS, {2.0, compat});
    EXPECT_EQ(l.distinct, (std::vector<std::int64_t>{3, 3}));
    EXPECT_NEAR(l.entropy[0], 2.586409, 5e-7);
    EXPECT_NEAR(l.entropy[1], 2.381102, 5e-7);
    EXPECT_EQ(l.recursive, (std::vector<std::int64_t>{2, 1}));
  }
}

TEST(LDiversityOracle, SensitiveVariableT) {
  for (const bool compat : {false, true}) {
    const LDiversity l = per_class(kKey, 2, kT, {2.0, compat});
    EXPECT_EQ(l.distinct, (std::vector<std::int64_t>{2, 3}));
    EXPECT_NEAR(l.entropy[0], 1.960132, 5e-7);
    EXPECT_NEAR(l.entropy[1], 3.0, 1e-12);
    EXPECT_EQ(l.recursive, (std::vector<std::int64_t>{2, 3}));
  }
}

TEST(LDiversity, AssignsTheClassMeasuresToEveryRecord) {
  const auto local = l_diversity_local(one_key(kKey, 2), kS);
  const LDiversity records = l_diversity_assign(local.record_class, l_diversity_finalize(local.classes));
  ASSERT_EQ(records.distinct.size(), kKey.size());
  for (std::size_t i = 0; i < kKey.size(); ++i) {
    EXPECT_EQ(records.distinct[i], 3);
    EXPECT_EQ(records.recursive[i], kKey[i] == 0 ? 2 : 1);
    EXPECT_NEAR(records.entropy[i], kKey[i] == 0 ? 2.586409 : 2.381102, 5e-7);
  }
}

TEST(LDiversity, AllMissingClassAndMissingKeyEqualsMissing) {
  // Key -1 (missing) forms its own class; its sensitive values are all missing.
  const std::vector<std::int32_t> key{kMissingCode, kMissingCode, 0, 0};
  const std::vector<std::int32_t> s{kMissingCode, kMissingCode, 4, 4};
  const LDiversity l = per_class(key, 1, s);
  EXPECT_EQ(l.distinct, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(l.entropy, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(l.recursive, (std::vector<std::int64_t>{1, 1}));
}

TEST(LDiversity, CompatAccumulatesTheRecursiveSumInSinglePrecision) {
  // r = (2^24 + 2, 2^24 + 1, 2), c = 1. Exact: r_2 + r_3 = 2^24 + 3 > r_1, then 2 < r_1: l = 2.
  // Single precision: 2^24 + 1 rounds to 2^24, so s = 2^24 + 2 is not above r_1: l = 1.
  SensitiveClasses classes;
  classes.key_count = 1;
  classes.class_keys = {0};
  classes.categories = {0, 1, 2};
  classes.category_counts = {(std::int64_t{1} << 24) + 2, (std::int64_t{1} << 24) + 1, 2};
  classes.category_offsets = {0, 3};
  EXPECT_EQ(l_diversity_finalize(classes, {1.0, false}).recursive[0], 2);
  EXPECT_EQ(l_diversity_finalize(classes, {1.0, true}).recursive[0], 1);
}

TEST(LDiversity, SplitAndMergeEqualsOneBlock) {
  std::mt19937 engine(7);
  std::uniform_int_distribution<std::int32_t> key_code(-1, 4);
  std::uniform_int_distribution<std::int32_t> s_code(-1, 5);
  const std::size_t n = 2000;
  std::vector<std::int32_t> k1(n), k2(n), s(n);
  for (std::size_t i = 0; i < n; ++i) {
    k1[i] = key_code(engine);
    k2[i] = key_code(engine);
    s[i] = s_code(engine);
  }
  auto view = [&](std::size_t first, std::size_t count) {
    KeyColumns keys;
    keys.codes = {std::span<const std::int32_t>(k1).subspan(first, count),
                  std::span<const std::int32_t>(k2).subspan(first, count)};
    keys.level_counts = {5, 5};
    return keys;
  };
  const std::span<const std::int32_t> sensitive(s);
  const auto whole = l_diversity_local(view(0, n), sensitive);
  const std::size_t cuts[] = {0, 1, 613, 1400, n};
  SensitiveClasses merged;
  for (std::size_t b = 0; b + 1 < std::size(cuts); ++b) {
    const auto part =
        l_diversity_local(view(cuts[b], cuts[b + 1] - cuts[b]), sensitive.subspan(cuts[b], cuts[b + 1] - cuts[b]));
    if (b % 2 == 0) {
      l_diversity_merge(merged, part.classes);
    } else {
      SensitiveClasses reversed = part.classes;
      l_diversity_merge(reversed, merged);
      merged = std::move(reversed);
    }
  }
  EXPECT_EQ(merged.class_keys, whole.classes.class_keys);
  EXPECT_EQ(merged.category_offsets, whole.classes.category_offsets);
  EXPECT_EQ(merged.categories, whole.classes.categories);
  EXPECT_EQ(merged.category_counts, whole.classes.category_counts);
  const LDiversity a = l_diversity_finalize(merged);
  const LDiversity b = l_diversity_finalize(whole.classes);
  EXPECT_EQ(a.distinct, b.distinct);
  EXPECT_EQ(a.entropy, b.entropy);
  EXPECT_EQ(a.recursive, b.recursive);
}

TEST(LDiversityLocal, CountsManyClassesFromTheirGroupingAsAPlainTallyDoesForAnyThreadCount) {
  // More than two runs of 16 384 classes, so that the per-run lists are joined.
  std::mt19937 engine(11);
  std::uniform_int_distribution<std::int32_t> key_code(-1, 299);
  std::uniform_int_distribution<std::int32_t> s_code(-1, 3);
  const std::size_t n = 120000;
  std::vector<std::int32_t> k1(n), k2(n), s(n);
  for (std::size_t i = 0; i < n; ++i) {
    k1[i] = key_code(engine);
    k2[i] = key_code(engine);
    s[i] = s_code(engine);
  }
  KeyColumns keys;
  keys.codes = {std::span<const std::int32_t>(k1), std::span<const std::int32_t>(k2)};
  keys.level_counts = {300, 300};

  std::map<std::vector<std::int32_t>, std::map<std::int32_t, std::int64_t>> tally;
  for (std::size_t i = 0; i < n; ++i) ++tally[{k1[i], k2[i]}][s[i]];
  ASSERT_GT(tally.size(), 2U * 16384U);

  const KeyGrouping grouping = group_by_keys(keys);
  std::vector<LocalSensitiveClasses> results;
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    results.push_back(l_diversity_local(grouping, s));
  }
  results.push_back(l_diversity_local(keys, s));

  const SensitiveClasses& classes = results.front().classes;
  ASSERT_EQ(classes.class_count(), tally.size());
  std::size_t c = 0;
  for (const auto& [key, categories] : tally) {
    EXPECT_EQ(std::vector<std::int32_t>(classes.key(c).begin(), classes.key(c).end()), key);
    std::map<std::int32_t, std::int64_t> counted;
    for (std::size_t i = classes.category_offsets[c]; i < classes.category_offsets[c + 1]; ++i)
      counted[classes.categories[i]] = classes.category_counts[i];
    EXPECT_EQ(counted, categories) << "class " << c;
    ++c;
  }
  for (const auto& other : results) {
    EXPECT_EQ(other.classes.class_keys, classes.class_keys);
    EXPECT_EQ(other.classes.category_offsets, classes.category_offsets);
    EXPECT_EQ(other.classes.categories, classes.categories);
    EXPECT_EQ(other.classes.category_counts, classes.category_counts);
    EXPECT_EQ(other.record_class, results.front().record_class);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto key = classes.key(results.front().record_class[i]);
    ASSERT_EQ(key[0], k1[i]);
    ASSERT_EQ(key[1], k2[i]);
  }
}

}  // namespace
}  // namespace sdc
