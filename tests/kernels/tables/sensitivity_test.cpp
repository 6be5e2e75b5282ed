#include "kernels/tables/sensitivity.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

// Contributions with weight 1 and row ids 0, 1, ...
std::vector<Contribution> unweighted(const std::vector<double>& values) {
  std::vector<Contribution> out;
  for (std::size_t r = 0; r < values.size(); ++r)
    out.push_back(Contribution{values[r], 1.0, static_cast<std::int64_t>(r)});
  return out;
}

double sum_of(const std::vector<Contribution>& contributions, bool weighted) {
  double sum = 0.0;
  for (const Contribution& c : contributions) sum += weighted ? c.weight * c.value : c.value;
  return sum;
}

SensitivityRules frequency_rule(std::int64_t threshold) {
  SensitivityRules rules;
  rules.minimum_frequency = threshold;
  return rules;
}
SensitivityRules p_percent_rule(double p) {
  SensitivityRules rules;
  rules.p_percent = p;
  return rules;
}
SensitivityRules dominance_rules(std::vector<DominanceRule> dominance, bool weighted = false) {
  SensitivityRules rules;
  rules.dominance = std::move(dominance);
  rules.weighted = weighted;
  return rules;
}

// A cell whose listed contributions are all of its records.
SensitivityCell whole_cell(const std::vector<Contribution>& contributions, bool weighted = false) {
  double weighted_count = 0.0;
  for (const Contribution& c : contributions) weighted_count += c.weight;
  return SensitivityCell{.contributors = static_cast<std::int64_t>(contributions.size()),
                         .weighted_count = weighted_count,
                         .total = sum_of(contributions, weighted),
                         .top = contributions};
}

TEST(Sensitivity, MinimumFrequencyRule) {
  SensitivityRules rules;
  rules.minimum_frequency = 3;
  check_sensitivity_rules(rules, 0);
  EXPECT_EQ(top_contributions_needed(rules), 0);
  const auto status = [&](std::int64_t n, double w) {
    return classify_cell(SensitivityCell{.contributors = n, .weighted_count = w, .total = 0.0, .top = {}}, rules)
        .status;
  };
  EXPECT_EQ(status(0, 0.0), SensitivityStatus::kEmpty);
  EXPECT_EQ(status(1, 1.0), SensitivityStatus::kSensitiveFrequency);
  EXPECT_EQ(status(2, 2.0), SensitivityStatus::kSensitiveFrequency);
  EXPECT_EQ(status(3, 3.0), SensitivityStatus::kSafe);
  EXPECT_EQ(status(40, 40.0), SensitivityStatus::kSafe);

  // Weighted: the weighted count decides. 5 records of weight 0.5 make 2.5 < 3; 2 records of weight
  // 20 make 40.
  rules.weighted = true;
  EXPECT_EQ(status(5, 2.5), SensitivityStatus::kSensitiveFrequency);
  EXPECT_EQ(status(2, 40.0), SensitivityStatus::kSafe);
  EXPECT_EQ(status(3, 3.0), SensitivityStatus::kSafe);
  EXPECT_EQ(status(0, 0.0), SensitivityStatus::kEmpty);
}

TEST(Sensitivity, PPercentRule) {
  SensitivityRules rules;
  rules.p_percent = 10.0;
  EXPECT_EQ(top_contributions_needed(rules), 2);
  // X − x1 − x2 = 5 < 10% of 100.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100, 50, 5})), rules).status, SensitivityStatus::kSensitivePPercent);
  // 20 >= 10: safe; exactly 10 is not below 10: safe.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100, 50, 20})), rules).status, SensitivityStatus::kSafe);
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100, 50, 10})), rules).status, SensitivityStatus::kSafe);
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100, 50, 6, 5})), rules).status, SensitivityStatus::kSafe);
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100, 50, 6, 5})), rules).dominance_rule, -1);
  // One contributor: x2 = 0, nothing left over.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({100})), rules).status, SensitivityStatus::kSensitivePPercent);
  // All zero: no one learns anything.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({0, 0, 0})), rules).status, SensitivityStatus::kSafe);
  // Only the top two listed of 30 records: the total carries the rest (X − x1 − x2 = 30).
  const std::vector<Contribution> top = unweighted({100, 50});
  const SensitivityCell cell{.contributors = 30, .weighted_count = 30, .total = 180, .top = top};
  EXPECT_EQ(classify_cell(cell, rules).status, SensitivityStatus::kSafe);
}

TEST(Sensitivity, DominanceRules) {
  SensitivityRules rules;
  rules.dominance = {{1, 75.0}, {2, 85.0}};
  EXPECT_EQ(top_contributions_needed(rules), 2);
  // (1,75): 80 of 100.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({80, 10, 10})), rules),
            (CellSensitivity{SensitivityStatus::kSensitiveDominance, 0}));
  // (1,75) does not fire (60 <= 75), (2,85) does (90 > 85).
  EXPECT_EQ(classify_cell(whole_cell(unweighted({60, 30, 5, 5})), rules),
            (CellSensitivity{SensitivityStatus::kSensitiveDominance, 1}));
  // Exactly 75% and exactly 85% are not more: safe.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({75, 10, 10, 5})), rules).status, SensitivityStatus::kSafe);
  EXPECT_EQ(classify_cell(whole_cell(unweighted({50, 35, 10, 5})), rules).status, SensitivityStatus::kSafe);
  EXPECT_EQ(classify_cell(whole_cell(unweighted({0, 0})), rules).status, SensitivityStatus::kSafe);
  EXPECT_TRUE(is_sensitive(SensitivityStatus::kSensitiveDominance));
  EXPECT_FALSE(is_sensitive(SensitivityStatus::kEmpty));
}

TEST(Sensitivity, FirstRuleThatFiresInTheDocumentedOrder) {
  SensitivityRules rules;
  rules.minimum_frequency = 3;
  rules.p_percent = 10.0;
  rules.dominance = {{1, 75.0}};
  // Two contributors, dominated: the frequency rule comes first.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({90, 10})), rules).status, SensitivityStatus::kSensitiveFrequency);
  // p% and dominance both fire: p% comes first.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({90, 5, 3})), rules).status, SensitivityStatus::kSensitivePPercent);
  // Only the dominance rule: 80 > 75, X − x1 − x2 = 12 >= 8.
  EXPECT_EQ(classify_cell(whole_cell(unweighted({80, 8, 6, 6})), rules),
            (CellSensitivity{SensitivityStatus::kSensitiveDominance, 0}));
  EXPECT_EQ(classify_cell(whole_cell(unweighted({40, 30, 20, 10})), rules).status, SensitivityStatus::kSafe);
}

TEST(Sensitivity, WeightedUnitsWalkTheContributionsByWeight) {
  // 100 of weight 2.5, 40 of weight 3: the 3 largest units are 100 + 100 + 0.5·100 + 0.5·40.
  const std::vector<Contribution> top{{100.0, 2.5, 0}, {40.0, 3.0, 1}};
  EXPECT_DOUBLE_EQ(largest_units_sum(top, 1.0, true), 100.0);
  EXPECT_DOUBLE_EQ(largest_units_sum(top, 2.0, true), 200.0);
  EXPECT_DOUBLE_EQ(largest_units_sum(top, 3.0, true), 270.0);
  EXPECT_DOUBLE_EQ(largest_units_sum(top, 10.0, true), 370.0);  // all of them
  EXPECT_DOUBLE_EQ(largest_units_sum(top, 2.0, false), 140.0);
  // Fractional weights: 10 (0.5), 8 (0.5), 6 (2).
  const std::vector<Contribution> fractional{{10.0, 0.5, 0}, {8.0, 0.5, 1}, {6.0, 2.0, 2}};
  EXPECT_DOUBLE_EQ(largest_units_sum(fractional, 1.0, true), 9.0);
  EXPECT_DOUBLE_EQ(largest_units_sum(fractional, 2.0, true), 15.0);
}

TEST(Sensitivity, WeightedPPercentAndDominance) {
  // One record of value 100 and weight 5 stands for 5 units: unweighted it is alone (p% fires),
  // weighted x1 = x2 = 100 of X = 500, and X − x1 − x2 = 300 is far from 10% of 100.
  const std::vector<Contribution> single{{100.0, 5.0, 0}};
  SensitivityRules rules;
  rules.p_percent = 10.0;
  EXPECT_EQ(classify_cell(whole_cell(single, false), rules).status, SensitivityStatus::kSensitivePPercent);
  rules.weighted = true;
  EXPECT_EQ(classify_cell(whole_cell(single, true), rules).status, SensitivityStatus::kSafe);

  // (1,75): unweighted 100 of 100 dominates; weighted 100 of 500 does not.
  SensitivityRules dominance;
  dominance.dominance = {{1, 75.0}};
  EXPECT_EQ(classify_cell(whole_cell(single, false), dominance).status, SensitivityStatus::kSensitiveDominance);
  dominance.weighted = true;
  EXPECT_EQ(classify_cell(whole_cell(single, true), dominance).status, SensitivityStatus::kSafe);

  // (3,70) weighted on 100 (2.5), 40 (3): 270 > 0.7 · 370 = 259; (3,75): 270 <= 277.5.
  const std::vector<Contribution> top{{100.0, 2.5, 0}, {40.0, 3.0, 1}};
  dominance.dominance = {{3, 75.0}, {3, 70.0}};
  EXPECT_EQ(classify_cell(whole_cell(top, true), dominance),
            (CellSensitivity{SensitivityStatus::kSensitiveDominance, 1}));
  // Weighted p%: x1 = 100, x2 = 100, X − x1 − x2 = 170 against 10% of 100.
  EXPECT_EQ(classify_cell(whole_cell(top, true), rules).status, SensitivityStatus::kSafe);
  // 1000 (2.5), 40 (3): X = 2620, x1 = x2 = 1000, X − x1 − x2 = 620: sensitive for p above 62.
  const std::vector<Contribution> big{{1000.0, 2.5, 0}, {40.0, 3.0, 1}};
  rules.p_percent = 70.0;
  EXPECT_EQ(classify_cell(whole_cell(big, true), rules).status, SensitivityStatus::kSensitivePPercent);
  rules.p_percent = 60.0;
  EXPECT_EQ(classify_cell(whole_cell(big, true), rules).status, SensitivityStatus::kSafe);
}

TEST(Sensitivity, NegativeContributionsAreInvalidInput) {
  SensitivityRules rules;
  rules.dominance = {{1, 75.0}};
  std::vector<Contribution> negative{{50.0, 1.0, 40}, {-5.0, 1.0, 42}};
  try {
    classify_cell(whole_cell(negative), rules);
    ADD_FAILURE() << "accepted a negative contribution";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("row 42"), std::string::npos) << error.what();
  }
  // A negative total.
  const std::vector<Contribution> none;
  EXPECT_THROW(classify_cell(SensitivityCell{.contributors = 3, .weighted_count = 3, .total = -1.0, .top = none},
                             dominance_rules({{1, 75.0}})),
               InvalidInput);
  // Unlisted contributions that must be negative: the total is below the listed two.
  const std::vector<Contribution> top = unweighted({50, 40});
  const SensitivityCell short_total{.contributors = 10, .weighted_count = 10, .total = 60, .top = top};
  EXPECT_THROW(classify_cell(short_total, rules), InvalidInput);
  // Without a magnitude rule negative values do not matter.
  SensitivityRules frequency;
  frequency.minimum_frequency = 1;
  EXPECT_EQ(classify_cell(whole_cell(negative), frequency).status, SensitivityStatus::kSafe);
}

TEST(Sensitivity, ParametersAreValidated) {
  const auto rejects = [](const SensitivityRules& rules, int top_available, const std::string& name) {
    try {
      check_sensitivity_rules(rules, top_available);
      ADD_FAILURE() << "accepted a bad " << name;
    } catch (const ParameterError& error) {
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  rejects(frequency_rule(0), 8, "threshold");
  rejects(p_percent_rule(0.0), 8, "p of the p% rule");
  rejects(p_percent_rule(100.0), 8, "p of the p% rule");
  rejects(dominance_rules({{0, 75.0}}), 8, "n of a dominance rule");
  rejects(dominance_rules({{1, 0.0}}), 8, "k of a dominance rule");
  rejects(dominance_rules({{1, 100.5}}), 8, "k of a dominance rule");
  rejects(dominance_rules({{3, 75.0}}), 2, "top contributions");
  rejects(p_percent_rule(10.0), 1, "top contributions");
  SensitivityRules both = p_percent_rule(10.0);
  both.dominance = {{2, 100.0}};
  check_sensitivity_rules(both, 2);

  // Weights below 1: two listed records supply 0.6 units, the rule needs 1, the cell has more.
  const std::vector<Contribution> light{{10.0, 0.3, 0}, {8.0, 0.3, 1}};
  const SensitivityCell cell{.contributors = 5, .weighted_count = 1.5, .total = 30.0, .top = light};
  try {
    classify_cell(cell, dominance_rules({{1, 75.0}}, true));
    ADD_FAILURE() << "accepted too few contributions";
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find("top contributions"), std::string::npos) << error.what();
  }
}

TEST(Sensitivity, CellsInParallelAreDeterministic) {
  SensitivityRules rules;
  rules.minimum_frequency = 3;
  rules.p_percent = 15.0;
  rules.dominance = {{1, 60.0}, {2, 80.0}};
  std::vector<std::vector<Contribution>> tops;
  for (std::int64_t c = 0; c < 20000; ++c) {
    const auto a = static_cast<double>((c * 7919) % 1000);
    const auto b = static_cast<double>((c * 104729) % 700);
    tops.push_back(unweighted({std::max(a, b), std::min(a, b), 50.0}));
  }
  std::vector<SensitivityCell> cells;
  for (std::size_t c = 0; c < tops.size(); ++c) {
    SensitivityCell cell = whole_cell(tops[c]);
    cell.contributors = static_cast<std::int64_t>(c % 7);
    if (cell.contributors > 3) cell.total += 40.0 * static_cast<double>(cell.contributors - 3);
    cells.push_back(cell);
  }
  const auto sequential = [&] {
    std::vector<CellSensitivity> out;
    for (const SensitivityCell& cell : cells) out.push_back(classify_cell(cell, rules));
    return out;
  }();
  for (int threads : {1, 2, 4}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    EXPECT_EQ(classify_cells(cells, rules, 3), sequential);
  }

  // Two bad cells: the error is always the first one's.
  std::vector<Contribution> first_bad{{5.0, 1.0, 5001}, {-1.0, 1.0, 5002}};
  std::vector<Contribution> second_bad{{5.0, 1.0, 9001}, {-1.0, 1.0, 9002}};
  cells[5000] = whole_cell(first_bad);
  cells[9000] = whole_cell(second_bad);
  cells[5000].contributors = cells[9000].contributors = 5;
  for (int threads : {1, 4}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    try {
      classify_cells(cells, rules, 3);
      ADD_FAILURE() << "accepted negative contributions";
    } catch (const InvalidInput& error) {
      EXPECT_NE(std::string(error.what()).find("row 5002"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace sdc::tables
