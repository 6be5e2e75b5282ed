#include "kernels/recoding/lattice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "io/csv.h"
#include "io/hierarchy_file.h"
#include "kernels/core/error.h"
#include "tests/kernels/recoding/hierarchy_rows.h"
#include "tests/support/sdc_process.h"

namespace sdc::recoding {
namespace {

HierarchyRows rows_of(std::vector<std::vector<std::string>> rows) {
  return fixtures::hierarchy_rows("hand", std::move(rows), 1);
}

// recoding.md §8, E lattice by hand: (age, sex) of 8 records; age value → 5-year band → 10-year band
// → *, sex value → *; k = 2, s = 0.
struct HandLattice {
  GeneralizationHierarchy age = GeneralizationHierarchy::build(rows_of(fixtures::oracle_age_rows()));
  GeneralizationHierarchy sex = GeneralizationHierarchy::build(rows_of({{"M", "*"}, {"F", "*"}}));
  std::vector<const GeneralizationHierarchy*> hierarchies{&age, &sex};
  LeafPatterns patterns;

  HandLattice() {
    const std::vector<std::int32_t> ages{0, 1, 2, 3, 4, 5, 6, 7};
    const std::vector<std::int32_t> sexes{0, 0, 1, 1, 0, 1, 0, 1};  // M M F F M F M F
    const std::vector<std::span<const std::int32_t>> leaves{ages, sexes};
    patterns = leaf_patterns(leaves);
  }
};

TEST(ALattice, EvaluatesTheHandOraclesNodes) {
  const HandLattice hand;
  LatticeSearchOptions options;
  const NodeMetrics a = evaluate_node(hand.patterns, hand.hierarchies, std::vector<std::int32_t>{1, 1}, options);
  const NodeMetrics b = evaluate_node(hand.patterns, hand.hierarchies, std::vector<std::int32_t>{2, 0}, options);
  for (const NodeMetrics* metrics : {&a, &b}) {
    EXPECT_TRUE(metrics->anonymous);
    EXPECT_EQ(metrics->classes, 4);
    EXPECT_EQ(metrics->smallest_released, 2);
    EXPECT_EQ(metrics->discernibility, 16.0);
    EXPECT_DOUBLE_EQ(metrics->entropy, 16.0);
  }
  EXPECT_NEAR(a.precision_loss, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(b.precision_loss, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(a.loss_mean, 0.5714285714, 1e-9);
  EXPECT_NEAR(b.loss_mean, 0.2142857143, 1e-9);
  const NodeMetrics c = evaluate_node(hand.patterns, hand.hierarchies, std::vector<std::int32_t>{1, 0}, options);
  EXPECT_EQ(c.outliers, 4);
  EXPECT_FALSE(c.anonymous);
  options.suppression_limit = 0.5;
  EXPECT_TRUE(evaluate_node(hand.patterns, hand.hierarchies, std::vector<std::int32_t>{1, 0}, options).anonymous);
  EXPECT_THROW((void)evaluate_node(hand.patterns, hand.hierarchies, std::vector<std::int32_t>{4, 0}, options),
               ParameterError);
}

TEST(ALattice, FindsTheHandOraclesOptimumForEachMetric) {
  const HandLattice hand;
  LatticeSearchOptions options;
  const auto optimum = [&](LossMetric metric) {
    options.metric = metric;
    const LatticeSearchResult result = search_lattice(hand.patterns, hand.hierarchies, options);
    EXPECT_EQ(result.nodes, 8);
    EXPECT_EQ(result.anonymous_nodes, 5);  // (1,1) (2,0) (2,1) (3,0) (3,1)
    EXPECT_EQ(result.minimal_nodes, 2);
    return result.optimum;
  };
  EXPECT_EQ(optimum(LossMetric::kPrecision), (std::vector<std::int32_t>{2, 0}));
  EXPECT_EQ(optimum(LossMetric::kLoss), (std::vector<std::int32_t>{2, 0}));
  // Entropy and DM tie at 16: the same height, so the lexicographically smaller node.
  EXPECT_EQ(optimum(LossMetric::kEntropy), (std::vector<std::int32_t>{1, 1}));
  EXPECT_EQ(optimum(LossMetric::kDiscernibility), (std::vector<std::int32_t>{1, 1}));
}

/// The shared adult data's keys as leaf indices of their ARX hierarchies, with the hierarchies.
struct AdultKeys {
  std::vector<GeneralizationHierarchy> hierarchies;
  std::vector<const GeneralizationHierarchy*> pointers;
  LeafPatterns patterns;
};

std::optional<AdultKeys> adult_keys(const std::vector<std::string>& names) {
  const auto data = testing::shared_data("adult.csv.gz");
  if (data.empty()) return std::nullopt;
  const io::CsvImportResult imported = io::import_csv(data, {});
  AdultKeys keys;
  std::vector<std::vector<std::int32_t>> leaves;
  for (const std::string& name : names) {
    keys.hierarchies.push_back(io::load_hierarchy(testing::shared_data("adult_hierarchy_" + name + ".csv")));
    const Column& column = *imported.table.find(name);
    const std::vector<std::int32_t> leaf_of_code = keys.hierarchies.back().recoding(column.info().levels, name, 0);
    std::vector<std::int32_t> values;
    for (const std::int32_t code : column.codes())
      values.push_back(code < 0 ? -1 : leaf_of_code[static_cast<std::size_t>(code)]);
    leaves.push_back(std::move(values));
  }
  for (const GeneralizationHierarchy& hierarchy : keys.hierarchies) keys.pointers.push_back(&hierarchy);
  std::vector<std::span<const std::int32_t>> spans;
  for (const std::vector<std::int32_t>& column : leaves) spans.emplace_back(column);
  keys.patterns = leaf_patterns(spans);
  return keys;
}

const std::vector<std::string> kAdultKeys{
    "sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"};

// recoding.md §8, E adult with 8 keys (salary-class not a key), k = 5, s = 0.
TEST(ALattice, FindsTheAdultOptimaOfEveryMetric) {
  const std::optional<AdultKeys> adult = adult_keys(kAdultKeys);
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  const LeafPatterns& patterns = adult->patterns;
  const std::vector<const GeneralizationHierarchy*>& pointers = adult->pointers;
  EXPECT_EQ(patterns.pattern_count(), 18109U);
  LatticeSearchOptions options;
  options.k = 5;
  const auto search = [&](LossMetric metric) {
    options.metric = metric;
    return search_lattice(patterns, pointers, options);
  };
  const LatticeSearchResult entropy = search(LossMetric::kEntropy);
  EXPECT_EQ(entropy.nodes, 6480);
  EXPECT_EQ(entropy.anonymous_nodes, 67);
  EXPECT_EQ(entropy.minimal_nodes, 23);
  EXPECT_LT(entropy.checked_nodes, 6480 / 4);
  EXPECT_EQ(entropy.optimum, (std::vector<std::int32_t>{1, 2, 1, 1, 3, 2, 2, 1}));
  EXPECT_NEAR(entropy.metrics.entropy, 382871.4142, 1e-4);
  EXPECT_EQ(entropy.metrics.classes, 48);
  const LatticeSearchResult dm = search(LossMetric::kDiscernibility);
  EXPECT_EQ(dm.optimum, (std::vector<std::int32_t>{1, 1, 1, 2, 3, 2, 2, 1}));
  EXPECT_EQ(dm.metrics.discernibility, 33627534.0);
  EXPECT_EQ(dm.metrics.classes, 45);
  EXPECT_EQ(dm.metrics.smallest_released, 6);
  const LatticeSearchResult lm = search(LossMetric::kLoss);
  EXPECT_EQ(lm.optimum, (std::vector<std::int32_t>{0, 4, 0, 2, 3, 2, 2, 1}));
  EXPECT_NEAR(lm.metrics.loss_mean, 0.6608417, 1e-7);
  const LatticeSearchResult precision = search(LossMetric::kPrecision);
  EXPECT_EQ(precision.optimum, (std::vector<std::int32_t>{0, 4, 0, 1, 3, 2, 2, 2}));
  EXPECT_NEAR(precision.metrics.precision_loss, 0.6875, 1e-12);
}

// recoding.md §8, E adult with 8 keys and s = 0.02 (at most 603 records suppressed).
TEST(ALattice, FindsTheAdultOptimaOfEveryMetricWithTwoPercentSuppression) {
  const std::optional<AdultKeys> adult = adult_keys(kAdultKeys);
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  LatticeSearchOptions options;
  options.k = 5;
  options.suppression_limit = 0.02;
  const NodeMetrics bottom = evaluate_node(adult->patterns, adult->pointers, std::vector<std::int32_t>(8, 0), options);
  EXPECT_EQ(bottom.classes, 18109);
  EXPECT_EQ(bottom.outliers, 21977);
  const auto search = [&](LossMetric metric) {
    options.metric = metric;
    return search_lattice(adult->patterns, adult->pointers, options);
  };
  const LatticeSearchResult entropy = search(LossMetric::kEntropy);
  EXPECT_EQ(entropy.anonymous_nodes, 1639);
  EXPECT_EQ(entropy.minimal_nodes, 447);
  EXPECT_EQ(entropy.optimum, (std::vector<std::int32_t>{0, 0, 1, 1, 3, 2, 2, 1}));
  EXPECT_NEAR(entropy.metrics.entropy, 258520.9089, 1e-4);
  EXPECT_EQ(entropy.metrics.outliers, 309);
  const LatticeSearchResult lm = search(LossMetric::kLoss);
  EXPECT_EQ(lm.optimum, (std::vector<std::int32_t>{0, 3, 0, 1, 2, 1, 1, 2}));
  EXPECT_NEAR(lm.metrics.loss_mean, 0.3314404, 1e-7);
  EXPECT_EQ(lm.metrics.outliers, 552);
  const LatticeSearchResult dm = search(LossMetric::kDiscernibility);
  EXPECT_EQ(dm.optimum, (std::vector<std::int32_t>{0, 0, 1, 2, 3, 2, 2, 1}));
  EXPECT_EQ(dm.metrics.discernibility, 7220555.0);
  EXPECT_EQ(dm.metrics.outliers, 105);
}

std::optional<AdultKeys> adult_nine_keys() {
  std::vector<std::string> names = kAdultKeys;
  names.push_back("salary-class");
  return adult_keys(names);
}

// recoding.md §8, E adult with all nine keys, k = 5, entropy, no suppression.
TEST(ALattice, FindsTheAdultOptimumWithNineKeys) {
  const std::optional<AdultKeys> adult = adult_nine_keys();
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  LatticeSearchOptions options;
  options.k = 5;
  const LatticeSearchResult result = search_lattice(adult->patterns, adult->pointers, options);
  EXPECT_EQ(result.nodes, 12960);
  EXPECT_EQ(result.anonymous_nodes, 87);
  EXPECT_EQ(result.minimal_nodes, 27);
  EXPECT_EQ(result.optimum, (std::vector<std::int32_t>{1, 2, 1, 1, 3, 2, 2, 1, 1}));
  EXPECT_NEAR(result.metrics.entropy, 407289.5388925, 1e-6);
  EXPECT_EQ(result.metrics.classes, 48);
  EXPECT_EQ(result.metrics.smallest_released, 5);
}

// The same with s = 0.04: 4 452 anonymous nodes, every one evaluated (the metrics are not monotone
// with suppression).
TEST(ALattice, FindsTheAdultOptimumWithNineKeysAndSuppression) {
  const std::optional<AdultKeys> adult = adult_nine_keys();
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  LatticeSearchOptions options;
  options.k = 5;
  options.suppression_limit = 0.04;
  const LatticeSearchResult result = search_lattice(adult->patterns, adult->pointers, options);
  EXPECT_EQ(result.anonymous_nodes, 4452);
  EXPECT_EQ(result.optimum, (std::vector<std::int32_t>{1, 0, 1, 1, 3, 2, 2, 0, 1}));
  EXPECT_NEAR(result.metrics.entropy, 255559.8545573, 1e-6);
  EXPECT_EQ(result.metrics.outliers, 906);
  EXPECT_EQ(result.metrics.classes, 1498);
}

// recoding.md §8 and the check: on adult with five keys (a reduced lattice of 240 nodes), k = 5
// and 2 % suppression, the search finds the optimum of a brute-force evaluation of every node, for
// every metric, and its frontier is exactly the anonymous nodes no other beats on loss and outliers.
TEST(ALattice, FindsTheBruteForceOptimumAndFrontierOfAReducedAdultLattice) {
  const std::optional<AdultKeys> adult = adult_keys({"sex", "age", "race", "marital-status", "education"});
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  const std::vector<const GeneralizationHierarchy*>& hierarchies = adult->pointers;
  std::vector<std::vector<std::int32_t>> nodes{{}};
  for (const GeneralizationHierarchy* hierarchy : hierarchies) {
    std::vector<std::vector<std::int32_t>> longer;
    for (const auto& node : nodes)
      for (std::int32_t level = 0; level <= hierarchy->height(); ++level) {
        longer.push_back(node);
        longer.back().push_back(level);
      }
    nodes = std::move(longer);
  }
  ASSERT_EQ(nodes.size(), 240U);
  for (const LossMetric metric : {LossMetric::kEntropy, LossMetric::kDiscernibility, LossMetric::kLoss,
                                  LossMetric::kPrecision, LossMetric::kSuppressed}) {
    LatticeSearchOptions options;
    options.k = 5;
    options.suppression_limit = 0.02;
    options.metric = metric;
    std::vector<NodeMetrics> metrics;
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      metrics.push_back(evaluate_node(adult->patterns, hierarchies, nodes[i], options));
      if (!metrics[i].anonymous) continue;
      const double loss = metrics[i].loss(metric);
      // Nodes are enumerated in lexicographic order, so the first of equal loss and height wins.
      if (!best || loss < metrics[*best].loss(metric) ||
          (loss == metrics[*best].loss(metric) && metrics[i].height < metrics[*best].height))
        best = i;
    }
    const LatticeSearchResult result = search_lattice(adult->patterns, hierarchies, options);
    ASSERT_TRUE(best.has_value());
    ASSERT_TRUE(result.found);
    EXPECT_EQ(result.optimum, nodes[*best]) << "metric " << static_cast<int>(metric);
    EXPECT_EQ(result.metrics.outliers, metrics[*best].outliers);
    EXPECT_LE(result.metrics.outliers, 603);  // ⌊0.02 × 30 162⌋

    std::vector<std::vector<std::int32_t>> undominated;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!metrics[i].anonymous) continue;
      bool dominated = false;
      bool preferred_twin = false;  // an equal (loss, outliers) node the tie rule prefers
      for (std::size_t j = 0; j < nodes.size() && !dominated && !preferred_twin; ++j) {
        if (j == i || !metrics[j].anonymous) continue;
        const double li = metrics[i].loss(metric);
        const double lj = metrics[j].loss(metric);
        const std::int64_t oi = metrics[i].outliers;
        const std::int64_t oj = metrics[j].outliers;
        dominated = lj <= li && oj <= oi && (lj < li || oj < oi);
        preferred_twin = lj == li && oj == oi &&
                         (metrics[j].height < metrics[i].height || (metrics[j].height == metrics[i].height && j < i));
      }
      if (!dominated && !preferred_twin) undominated.push_back(nodes[i]);
    }
    std::vector<std::vector<std::int32_t>> frontier;
    for (const FrontierNode& node : result.frontier) frontier.push_back(node.levels);
    std::sort(undominated.begin(), undominated.end());
    std::sort(frontier.begin(), frontier.end());
    EXPECT_EQ(frontier, undominated) << "metric " << static_cast<int>(metric);
    for (std::size_t f = 1; f < result.frontier.size(); ++f) {
      EXPECT_GT(result.frontier[f].loss, result.frontier[f - 1].loss);
      EXPECT_LT(result.frontier[f].outliers, result.frontier[f - 1].outliers);
    }
  }
}

// Adult replicated: every key tuple occurs at least k times, so no record is below k at the bottom
// node. One check; the bottom node is the optimum of every metric (its generalisations along age lose
// more) and every node is anonymous.
TEST(ALattice, StopsAtTheBottomNodeWhenTheDataIsAnonymousAlready) {
  std::optional<AdultKeys> adult = adult_keys({"sex", "age", "race", "marital-status", "education"});
  if (!adult) GTEST_SKIP() << "../shared/data is absent";
  for (std::int64_t& count : adult->patterns.counts) count *= 100;
  for (const LossMetric metric : {LossMetric::kEntropy, LossMetric::kDiscernibility, LossMetric::kLoss,
                                  LossMetric::kPrecision, LossMetric::kSuppressed}) {
    LatticeSearchOptions options;
    options.k = 5;
    options.suppression_limit = 0.02;
    options.metric = metric;
    const LatticeSearchResult result = search_lattice(adult->patterns, adult->pointers, options);
    EXPECT_EQ(result.optimum, std::vector<std::int32_t>(5, 0));
    EXPECT_EQ(result.checked_nodes, 1);
    EXPECT_EQ(result.anonymous_nodes, 240);
    EXPECT_EQ(result.minimal_nodes, 1);
    ASSERT_EQ(result.frontier.size(), 1U);
    const NodeMetrics bottom = evaluate_node(adult->patterns, adult->pointers, result.optimum, options);
    EXPECT_EQ(bottom.outliers, 0);
    for (std::int32_t level = 1; level <= adult->hierarchies[1].height(); ++level) {
      std::vector<std::int32_t> coarser(5, 0);
      coarser[1] = level;  // age, the deepest hierarchy
      const NodeMetrics metrics = evaluate_node(adult->patterns, adult->pointers, coarser, options);
      EXPECT_TRUE(metrics.anonymous);
      EXPECT_GE(metrics.loss(metric), bottom.loss(metric)) << "age level " << level;
    }
  }
}

// The patterns of consecutive blocks of records, merged in block order, are the patterns of all of them.
TEST(ALattice, MergesThePatternsOfConsecutiveBlocksIntoThoseOfTheWhole) {
  const std::vector<std::int32_t> a{0, 1, 0, 2, 1, 0, 2, -1, 0, 1};
  const std::vector<std::int32_t> b{3, 3, 3, 1, 3, 3, 1, 2, 2, 3};
  const std::vector<std::span<const std::int32_t>> whole{a, b};
  const LeafPatterns expected = leaf_patterns(whole);
  for (const std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{7}}) {
    const std::vector<std::span<const std::int32_t>> first{std::span(a).first(cut), std::span(b).first(cut)};
    const std::vector<std::span<const std::int32_t>> second{std::span(a).subspan(cut), std::span(b).subspan(cut)};
    const std::vector<LeafPatterns> parts{leaf_patterns(first), leaf_patterns(second)};
    const LeafPatterns merged = merge_leaf_patterns(parts);
    EXPECT_EQ(merged.leaves, expected.leaves) << "cut " << cut;
    EXPECT_EQ(merged.counts, expected.counts) << "cut " << cut;
  }
  LeafPatterns three_keys;
  three_keys.key_count = 3;
  const std::vector<LeafPatterns> mixed{expected, three_keys};
  EXPECT_THROW(merge_leaf_patterns(mixed), ParameterError);
}

}  // namespace
}  // namespace sdc::recoding
