#include "kernels/tables/ptable.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

__extension__ using Wide = unsigned __int128;  // GCC/Clang: a bound times a 2^32 modulus, exactly

PTableParameters d2_v1() {
  PTableParameters parameters;
  parameters.max_noise = 2;
  parameters.variance = 1.0;
  return parameters;
}

// cellkey.md §5: the CensusProtection tables and the parameters that reproduce them.
PTableParameters ptab1() {
  PTableParameters parameters;
  parameters.max_noise = 2;
  parameters.variance = 1.08;
  parameters.js = 1;
  parameters.mono = {true, true, false, true};
  return parameters;
}

PTableParameters ptab2() {
  PTableParameters parameters;
  parameters.max_noise = 8;
  parameters.variance = 3.0;
  parameters.pstay = {0.6};
  parameters.optim = 4;
  return parameters;
}

PTableParameters ptab3() {
  PTableParameters parameters = ptab2();
  parameters.pstay = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.3};
  return parameters;
}

PTableParameters ptab6() {
  PTableParameters parameters = ptab2();
  parameters.variance = 2.0;
  return parameters;
}

// A printed row: its targets and printed probabilities in units of 1e-8; the bounds are their cumulative sums.
void expect_row(const PTable& table, std::size_t i, const std::vector<std::int64_t>& targets,
                const std::vector<std::uint64_t>& printed) {
  ASSERT_LT(i, table.rows.size());
  const std::vector<PTableEntry>& row = table.rows[i];
  ASSERT_EQ(row.size(), targets.size()) << "row " << i;
  std::uint64_t bound = 0;
  for (std::size_t k = 0; k < row.size(); ++k) {
    bound += printed[k];
    EXPECT_EQ(row[k].target, targets[k]) << "row " << i << " entry " << k;
    EXPECT_EQ(row[k].upper_bound, bound) << "row " << i << " target " << targets[k];
    EXPECT_DOUBLE_EQ(row[k].probability, static_cast<double>(printed[k]) / 1e8) << "row " << i << " target " << k;
  }
  EXPECT_EQ(bound, kPTableBoundScale);
}

std::uint64_t units(double value) { return static_cast<std::uint64_t>(std::llround(value * 1e8)); }

CellKey key(double ck) { return CellKey{units(ck), kPTableBoundScale}; }

// ---- construction: the E oracles of cellkey.md §11 ---------------------------------------------

// "E p-table D = 2, V = 1", row 1: mono binds, p(−1) = p(0) = a.
TEST(PTableBuild, DTwoVOneRowOneMatchesPrintedDigits) {
  const PTableBuild build = build_ptable_with_report(d2_v1());
  ASSERT_EQ(build.table.rows.size(), 3U);
  expect_row(build.table, 0, {0}, {100000000});
  expect_row(build.table, 1, {0, 1, 2, 3}, {36648551, 36648550, 16757247, 9945652});
  ASSERT_EQ(build.rows.size(), 2U);
  const PTableRowReport& row = build.rows[0];
  EXPECT_EQ(row.i, 1);
  EXPECT_TRUE(row.mono);
  EXPECT_FALSE(row.variance_binds);
  EXPECT_TRUE(row.variance_fails);  // ptable flags it: 0.932 != 1
  EXPECT_NEAR(row.solved_variance, 0.93188, 5e-6);
  EXPECT_NEAR(row.variance, 0.93188, 5e-6);
}

// The same row against its closed form: −2 ln a + 5 ln(2 − 5a) − 3 ln(3a − 1) = 0, variance 8a − 2.
TEST(PTableBuild, DTwoVOneRowOneSolvesTheClosedForm) {
  double low = 1.0 / 3.0 + 1e-12;
  double high = 0.4 - 1e-12;
  const auto f = [](double a) { return -2 * std::log(a) + 5 * std::log(2 - 5 * a) - 3 * std::log(3 * a - 1); };
  for (int step = 0; step < 200; ++step) {
    const double middle = 0.5 * (low + high);
    (f(middle) > 0 ? low : high) = middle;
  }
  const double a = 0.5 * (low + high);
  const PTableBuild build = build_ptable_with_report(d2_v1());
  const std::vector<PTableEntry>& row = build.table.rows[1];
  EXPECT_EQ(row[0].upper_bound, units(a));
  EXPECT_EQ(row[1].upper_bound, units(2 * a));
  EXPECT_EQ(row[2].upper_bound, units(2 * a + (2 - 5 * a)));
  EXPECT_NEAR(build.rows[0].solved_variance, 8 * a - 2, 1e-10);
}

// "E p-table D = 2, V = 1", i >= 2 (symmetric): p(±1) = 6^(−1/4)·p0, p(±2) = p0/6.
TEST(PTableBuild, DTwoVOneSymmetricRowMatchesPrintedDigitsAndClosedForm) {
  const PTableBuild build = build_ptable_with_report(d2_v1());
  expect_row(build.table, 2, {0, 1, 2, 3, 4}, {6382714, 24469145, 38296282, 24469145, 6382714});
  const double p0 = 1.0 / (4.0 / 3.0 + 2.0 * std::pow(6.0, -0.25));
  const double p1 = std::pow(6.0, -0.25) * p0;
  const double p2 = p0 / 6.0;
  const std::vector<PTableEntry>& row = build.table.rows[2];
  EXPECT_EQ(row[0].upper_bound, units(p2));
  EXPECT_EQ(row[1].upper_bound, units(p2 + p1));
  EXPECT_EQ(row[2].upper_bound, units(p2 + p1 + p0));
  EXPECT_EQ(row[3].upper_bound, units(p2 + p1 + p0 + p1));
  const PTableRowReport& report = build.rows[1];
  EXPECT_TRUE(report.variance_binds);
  EXPECT_FALSE(report.variance_fails);
  EXPECT_NEAR(report.solved_variance, 1.0, 1e-12);
  EXPECT_EQ(build.table.max_noise(), 2);
  EXPECT_EQ(build.table.blocked_threshold, 0);
}

// "With mono = FALSE, row 1 becomes 0.39806471, 0.30580587, 0.19419413, 0.10193529 (variance 1)".
TEST(PTableBuild, DTwoVOneWithoutMonoReachesVarianceOne) {
  PTableParameters parameters = d2_v1();
  parameters.mono = {false};
  const PTableBuild build = build_ptable_with_report(parameters);
  expect_row(build.table, 1, {0, 1, 2, 3}, {39806471, 30580587, 19419413, 10193529});
  expect_row(build.table, 2, {0, 1, 2, 3, 4}, {6382714, 24469145, 38296282, 24469145, 6382714});
  EXPECT_FALSE(build.rows[0].mono);
  EXPECT_TRUE(build.rows[0].variance_binds);
  EXPECT_FALSE(build.rows[0].variance_fails);
  EXPECT_NEAR(build.rows[0].variance, 1.0, 1e-7);
}

// "D = 2, V = 1, js = 1 must fail as infeasible": row 1 has support {−1, +1, +2}, variance 1 + 3p(+2) > 1.
TEST(PTableBuild, DTwoVOneJsOneIsInfeasible) {
  PTableParameters parameters = d2_v1();
  parameters.js = 1;
  try {
    build_ptable(parameters);
    FAIL() << "no error";
  } catch (const ParameterError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("V = 1"), std::string::npos) << message;
    EXPECT_NE(message.find("infeasible"), std::string::npos) << message;
    EXPECT_NE(message.find("row i = 1"), std::string::npos) << message;
  }
}

// "E ptab1" (D 2, V 1.08, js 1, mono T, T, F, T): every row to the printed 8 decimals.
TEST(PTableBuild, Ptab1MatchesEveryPrintedDigit) {
  const PTableBuild build = build_ptable_with_report(ptab1());
  ASSERT_EQ(build.table.rows.size(), 5U);  // I = D + js + 1 = 4
  expect_row(build.table, 0, {0}, {100000000});
  expect_row(build.table, 1, {0, 2, 3}, {51333333, 46000000, 2666667});
  expect_row(build.table, 2, {0, 2, 3, 4}, {16560835, 54634992, 24486677, 4317496});
  expect_row(build.table, 3, {2, 3, 4, 5}, {42078468, 27764596, 18235404, 11921532});
  expect_row(build.table, 4, {2, 3, 4, 5, 6}, {7394668, 24421329, 36368006, 24421329, 7394668});
  EXPECT_EQ(build.table.blocked_threshold, 1);
  // "Every row has mean 0 and variance 1.08"; row 1's closed form p(+2) = (V − 1)/3.
  for (const PTableRowReport& row : build.rows) {
    EXPECT_NEAR(row.mean, 0.0, 1e-7) << "row " << row.i;
    EXPECT_NEAR(row.variance, 1.08, 1e-7) << "row " << row.i;
    EXPECT_NEAR(row.solved_variance, 1.08, 1e-12) << "row " << row.i;
    EXPECT_FALSE(row.variance_fails) << "row " << row.i;
  }
  EXPECT_EQ(build.table.rows[1][2].upper_bound - build.table.rows[1][1].upper_bound, units(0.08 / 3.0));
  EXPECT_FALSE(build.rows[0].mono);  // a blocked count has no v = 0
  EXPECT_TRUE(build.rows[1].mono);
  EXPECT_FALSE(build.rows[2].mono);
  EXPECT_TRUE(build.rows[3].mono);
}

// "i = 3 (mono off) … with mono it would be the D = 2, V = 1 row-1 values".
TEST(PTableBuild, Ptab1RowThreeWithMonoFallsBackToTheDTwoVOneRow) {
  PTableParameters parameters = ptab1();
  parameters.mono = {true};
  const PTableBuild build = build_ptable_with_report(parameters);
  expect_row(build.table, 3, {2, 3, 4, 5}, {36648551, 36648550, 16757247, 9945652});
  EXPECT_TRUE(build.rows[2].variance_fails);
}

// §5: "ptab2 row 1 puts 0.0357 on +8" (optim 4, high pstay: U-shaped small-count rows).
TEST(PTableBuild, Ptab2RowOnePilesMassOnPlusEight) {
  const PTable table = build_ptable(ptab2());
  const std::vector<PTableEntry>& row = table.rows[1];
  ASSERT_EQ(row.back().target, 9);
  EXPECT_NEAR(row.back().probability, 0.0357, 5e-5);
  EXPECT_NEAR(row[1].probability, 0.6, 1e-8);  // pstay binds
  EXPECT_EQ(table.max_noise(), 8);
}

struct NamedParameters {
  const char* name;
  PTableParameters parameters;
  bool every_row_binds;
};

// The digits of ptab2, ptab3 and ptab6 are not printed in the spec: their properties (§7, "E properties").
TEST(PTableBuild, CensusProtectionParameterSetsHaveTheProperties) {
  PTableParameters blocked;
  blocked.max_noise = 3;
  blocked.variance = 2.5;
  blocked.js = 2;
  // Rows 1 and 4 of the last set cannot reach V (a blocked row; mono): ptable flags them.
  const std::vector<NamedParameters> sets{{"ptab1", ptab1(), true},
                                          {"ptab2", ptab2(), true},
                                          {"ptab3", ptab3(), true},
                                          {"ptab6", ptab6(), true},
                                          {"D3 V2.5 js2", blocked, false}};
  for (const auto& [name, parameters, every_row_binds] : sets) {
    SCOPED_TRACE(name);
    const PTableBuild build = build_ptable_with_report(parameters);
    const PTable& table = build.table;
    const std::int64_t last_row = static_cast<std::int64_t>(table.rows.size()) - 1;
    EXPECT_EQ(last_row, parameters.js == 0 ? parameters.max_noise : parameters.max_noise + parameters.js + 1);
    for (std::int64_t i = 1; i <= last_row; ++i) {
      const auto& row = table.rows[static_cast<std::size_t>(i)];
      std::uint64_t lower = 0;
      for (const PTableEntry& entry : row) {
        EXPECT_GT(entry.upper_bound, lower) << "row " << i;
        EXPECT_GE(entry.target, 0) << "row " << i;
        EXPECT_FALSE(entry.target >= 1 && entry.target <= parameters.js) << "row " << i << " publishes a blocked value";
        EXPECT_LE(std::abs(entry.target - i), parameters.max_noise) << "row " << i;
        lower = entry.upper_bound;
      }
      EXPECT_EQ(lower, kPTableBoundScale) << "row " << i;
      const PTableRowMoments moments = ptable_row_moments(table, static_cast<std::size_t>(i));
      EXPECT_NEAR(moments.mean, 0.0, 1e-7) << "row " << i;
      EXPECT_LE(moments.variance, parameters.variance + 1e-6) << "row " << i;
    }
    for (const PTableRowReport& row : build.rows) {
      if (every_row_binds) {
        EXPECT_TRUE(row.variance_binds) << "row " << row.i;
      }
      EXPECT_EQ(row.variance_fails, !row.variance_binds) << "row " << row.i;
      if (row.variance_binds) {
        EXPECT_NEAR(row.solved_variance, parameters.variance, 1e-12) << "row " << row.i;
        EXPECT_NEAR(row.variance, parameters.variance, 1e-6) << "row " << row.i;
      }
      if (!parameters.pstay.empty() && row.i > parameters.js) {
        const double pstay =
            parameters.pstay.size() == 1 ? parameters.pstay[0] : parameters.pstay[static_cast<std::size_t>(row.i - 1)];
        EXPECT_EQ(row.pstay_steps, 0) << "row " << row.i;
        const auto& entries = table.rows[static_cast<std::size_t>(row.i)];
        for (std::size_t k = 0; k < entries.size(); ++k) {
          if (entries[k].target == row.i) {
            EXPECT_GE(entries[k].probability, pstay - 1e-8) << "row " << row.i;
          }
        }
      }
    }
    // Row I serves every larger count: it is symmetric in v.
    const auto& symmetric = table.rows.back();
    for (std::size_t k = 0; k < symmetric.size(); ++k) {
      EXPECT_NEAR(symmetric[k].probability, symmetric[symmetric.size() - 1 - k].probability, 1.5e-8);
    }
  }
}

// ptable's loop: with optim 4 and pstay 0.9, V = 3 cannot be met in the small-count rows (mono caps the
// negative side), so their pstay is lowered by 0.05 until it can.
TEST(PTableBuild, LowersPstayUntilTheVarianceIsMet) {
  PTableParameters parameters = ptab2();
  parameters.pstay = {0.9};
  const PTableBuild build = build_ptable_with_report(parameters);
  ASSERT_EQ(build.rows.size(), 8U);
  EXPECT_GT(build.rows[0].pstay_steps, 0);
  EXPECT_NEAR(build.rows[0].pstay, 0.9 - 0.05 * build.rows[0].pstay_steps, 1e-12);
  EXPECT_EQ(build.rows[7].pstay_steps, 0);
  EXPECT_NEAR(build.rows[7].pstay, 0.9, 1e-12);
  for (const PTableRowReport& row : build.rows) {
    EXPECT_FALSE(row.variance_fails) << "row " << row.i;
    EXPECT_NEAR(row.solved_variance, 3.0, 1e-12) << "row " << row.i;
  }
}

void expect_parameter_error(const PTableParameters& parameters, const std::string& fragment) {
  try {
    build_ptable(parameters);
    ADD_FAILURE() << "no error for " << fragment;
  } catch (const ParameterError& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(PTableBuild, RejectsParametersNamingThem) {
  PTableParameters parameters = d2_v1();
  parameters.max_noise = 0;
  expect_parameter_error(parameters, "D = 0");
  parameters = d2_v1();
  parameters.variance = 0.0;
  expect_parameter_error(parameters, "V = 0");
  parameters.variance = -1.0;
  expect_parameter_error(parameters, "V = -1");
  parameters.variance = std::nan("");
  expect_parameter_error(parameters, "V = nan");
  parameters = d2_v1();
  parameters.js = -1;
  expect_parameter_error(parameters, "js = -1");
  parameters.js = 2;
  expect_parameter_error(parameters, "js = 2 is not below D = 2");
  parameters = d2_v1();
  parameters.pstay = {0.0};
  expect_parameter_error(parameters, "pstay = 0 ");
  parameters.pstay = {1.0};
  expect_parameter_error(parameters, "pstay = 1 ");
  parameters.pstay = {0.5, 1.5};
  expect_parameter_error(parameters, "pstay = 1.5");
  parameters.pstay = {0.5, 0.5, 0.5};
  expect_parameter_error(parameters, "pstay has 3 values");
  parameters = d2_v1();
  parameters.mono = {true, false, true};
  expect_parameter_error(parameters, "mono has 3 flags");
  parameters.mono = {};
  expect_parameter_error(parameters, "mono has 0 flags");
  parameters = d2_v1();
  parameters.optim = 2;
  expect_parameter_error(parameters, "optim = 2");
  // optim 4 asks for variance V exactly; D = 2 cannot carry V = 5 in row 1.
  parameters.optim = 4;
  parameters.variance = 5.0;
  expect_parameter_error(parameters, "V = 5 is infeasible");
}

// ---- lookup -------------------------------------------------------------------------------------

struct LookupOracle {
  std::int64_t count;
  double ck;
  std::int64_t d2_v1_tau;
  std::int64_t ptab1_tau;
  std::int64_t d2_v1_sas;
  std::int64_t ptab1_sas;
};

// "E lookups" (row, ck -> v) with the D 2 V 1 table / ptab1, under both rules.
TEST(PTableLookup, ELookupsForBothRulesAndBothTables) {
  const PTable d2 = build_ptable(d2_v1());
  const PTable p1 = build_ptable(ptab1());
  const std::vector<LookupOracle> oracles{
      {1, 0.36648551, 0, -1, -1, -1},  // a bound hit: the SAS rule gives -1 / -1
      {1, 0.10, -1, -1, -1, -1},      {1, 0.95, 2, 1, 2, 1}, {2, 0.05, -2, -2, -2, -2}, {2, 0.50, 0, 0, 0, 0},
      {3, 0.10, -1, -1, -1, -1},      {3, 0.70, 1, 1, 1, 1}, {7, 0.30, -1, -1, -1, -1}, {1000, 0.99, 2, 2, 2, 2},
  };
  for (const LookupOracle& o : oracles) {
    SCOPED_TRACE("count " + std::to_string(o.count) + " ck " + std::to_string(o.ck));
    EXPECT_EQ(lookup_noise(d2, o.count, key(o.ck), LookupRule::kTauArgus), o.d2_v1_tau);
    EXPECT_EQ(lookup_noise(p1, o.count, key(o.ck), LookupRule::kTauArgus), o.ptab1_tau);
    EXPECT_EQ(lookup_noise(d2, o.count, key(o.ck), LookupRule::kSas), o.d2_v1_sas);
    EXPECT_EQ(lookup_noise(p1, o.count, key(o.ck), LookupRule::kSas), o.ptab1_sas);
  }
  // (0, any) -> 0, under both rules.
  for (const double ck : {0.0, 0.10, 0.36648551, 0.99999999}) {
    for (const LookupRule rule : {LookupRule::kTauArgus, LookupRule::kSas}) {
      EXPECT_EQ(lookup_noise(d2, 0, key(ck), rule), 0);
      EXPECT_EQ(lookup_noise(p1, 0, key(ck), rule), 0);
    }
  }
  // SAS: v = 0 when ck == 0 exactly; tau-Argus takes the first target.
  EXPECT_EQ(lookup_noise(d2, 1, key(0.0), LookupRule::kSas), 0);
  EXPECT_EQ(lookup_noise(d2, 1, key(0.0), LookupRule::kTauArgus), -1);
}

// "E hand table": A n 2 ck 0.15, B n 4 ck 0.97, total n 6 ck 0.12.
TEST(PTableLookup, HandTableOracle) {
  const PTable d2 = build_ptable(d2_v1());
  const PTable p1 = build_ptable(ptab1());
  const auto published = [](const PTable& table, std::int64_t n, double ck) {
    return n + lookup_noise(table, n, key(ck), LookupRule::kTauArgus);
  };
  EXPECT_EQ(published(d2, 2, 0.15), 1);
  EXPECT_EQ(published(d2, 4, 0.97), 6);
  EXPECT_EQ(published(d2, 6, 0.12), 5);
  EXPECT_EQ(published(p1, 2, 0.15), 0);
  EXPECT_EQ(published(p1, 4, 0.97), 6);
  EXPECT_EQ(published(p1, 6, 0.12), 5);
}

// "E CensusProtection data": the cells whose (n, ck) the spec prints, with ptab1 and ptab2.
TEST(PTableLookup, CensusProtectionCellsWithPtab1AndPtab2) {
  const PTable p1 = build_ptable(ptab1());
  const PTable p2 = build_ptable(ptab2());
  struct Cell {
    std::int64_t count;
    double ck;
    std::int64_t ptab1_v;
    std::int64_t ptab2_v;
  };
  const std::vector<Cell> cells{
      {15307, 0.74500811, 1, 0}, {15271, 0.69061967, 1, 0}, {30578, 0.43562778, 0, 0},  // SEX
      {72, 0.78432511, 1, 0},    {66, 0.28331954, -1, 0},   {138, 0.06764465, -2, -3},  // NUTS3 111
      {138, 0.04901542, -2, -3},                                                        // (113, 2)
      {26, 0.98893485, 2, 5},    {2, 0.71470333, 1, 0},                                 // COC.M × SEX
  };
  for (const Cell& cell : cells) {
    SCOPED_TRACE("count " + std::to_string(cell.count));
    EXPECT_EQ(lookup_noise(p1, cell.count, key(cell.ck), LookupRule::kTauArgus), cell.ptab1_v);
    EXPECT_EQ(lookup_noise(p2, cell.count, key(cell.ck), LookupRule::kTauArgus), cell.ptab2_v);
    // None of these keys sits on a bound, so the SAS rule agrees.
    EXPECT_EQ(lookup_noise(p1, cell.count, key(cell.ck), LookupRule::kSas), cell.ptab1_v);
    EXPECT_EQ(lookup_noise(p2, cell.count, key(cell.ck), LookupRule::kSas), cell.ptab2_v);
  }
}

// A key on a bound is detected exactly whatever the modulus, 2^32 and 10^18 (products past 2^64) included.
TEST(PTableLookup, ComparesKeysWithBoundsExactlyForAnyModulus) {
  const PTable d2 = build_ptable(d2_v1());
  const std::uint64_t bound = 36648551;  // row 1, first target
  for (const std::uint64_t modulus : {std::uint64_t{200000000}, std::uint64_t{1000000000000000000}}) {
    const std::uint64_t on_bound = bound * (modulus / kPTableBoundScale);
    EXPECT_EQ(lookup_noise(d2, 1, CellKey{on_bound, modulus}, LookupRule::kTauArgus), 0);
    EXPECT_EQ(lookup_noise(d2, 1, CellKey{on_bound, modulus}, LookupRule::kSas), -1);
    EXPECT_EQ(lookup_noise(d2, 1, CellKey{on_bound - 1, modulus}, LookupRule::kTauArgus), -1);
    EXPECT_EQ(lookup_noise(d2, 1, CellKey{on_bound + 1, modulus}, LookupRule::kSas), 0);
  }
  const std::uint64_t modulus = std::uint64_t{1} << 32;
  const auto below = static_cast<std::uint64_t>(Wide{bound} * modulus / kPTableBoundScale);  // ck < ub
  EXPECT_EQ(lookup_noise(d2, 1, CellKey{below, modulus}, LookupRule::kTauArgus), -1);
  EXPECT_EQ(lookup_noise(d2, 1, CellKey{below + 1, modulus}, LookupRule::kTauArgus), 0);
  EXPECT_EQ(lookup_noise(d2, 1, CellKey{below, modulus}, LookupRule::kSas), -1);
  EXPECT_EQ(lookup_noise(d2, 1, CellKey{below + 1, modulus}, LookupRule::kSas), 0);
  EXPECT_EQ(lookup_noise(d2, 1, CellKey{modulus - 1, modulus}, LookupRule::kTauArgus), 2);
}

TEST(PTableLookup, RejectsBadInput) {
  const PTable d2 = build_ptable(d2_v1());
  EXPECT_THROW(lookup_noise(d2, -1, key(0.5), LookupRule::kTauArgus), ParameterError);
  EXPECT_THROW(lookup_noise(d2, 1, CellKey{100, 100}, LookupRule::kTauArgus), ParameterError);
  EXPECT_THROW(lookup_noise(d2, 1, CellKey{0, 0}, LookupRule::kTauArgus), ParameterError);
  EXPECT_THROW(lookup_noise(PTable{}, 1, key(0.5), LookupRule::kTauArgus), ParameterError);
}

// ---- files --------------------------------------------------------------------------------------

// ptab1 as R writes it for tau-Argus: leading blanks from R's formatting (cellkey.md §4).
constexpr const char* kPtab1TauArgus =
    "i;j;p;v;p_int_ub\n"
    "0;0;1.00000000; 0;1.00000000\n"
    "1;0;0.51333333;-1;0.51333333\n"
    "1;2;0.46000000; 1;0.97333333\n"
    "1;3;0.02666667; 2;1.00000000\n"
    "2;0;0.16560835;-2;0.16560835\n"
    "2;2;0.54634992; 0;0.71195827\n"
    "2;3;0.24486677; 1;0.95682504\n"
    "2;4;0.04317496; 2;1.00000000\n"
    "3;2;0.42078468;-1;0.42078468\n"
    "3;3;0.27764596; 0;0.69843064\n"
    "3;4;0.18235404; 1;0.88078468\n"
    "3;5;0.11921532; 2;1.00000000\n"
    "4;2;0.07394668;-2;0.07394668\n"
    "4;3;0.24421329;-1;0.31815997\n"
    "4;4;0.36368006; 0;0.68184003\n"
    "4;5;0.24421329; 1;0.92605332\n"
    "4;6;0.07394668; 2;1.00000000\n";

void expect_same_rows(const PTable& actual, const PTable& expected) {
  ASSERT_EQ(actual.rows.size(), expected.rows.size());
  for (std::size_t i = 0; i < expected.rows.size(); ++i) {
    ASSERT_EQ(actual.rows[i].size(), expected.rows[i].size()) << "row " << i;
    for (std::size_t k = 0; k < expected.rows[i].size(); ++k) {
      EXPECT_EQ(actual.rows[i][k].target, expected.rows[i][k].target) << "row " << i;
      EXPECT_EQ(actual.rows[i][k].upper_bound, expected.rows[i][k].upper_bound) << "row " << i;
      EXPECT_EQ(actual.rows[i][k].probability, expected.rows[i][k].probability) << "row " << i;
    }
  }
}

TEST(PTableFile, ReadsTheTauArgusFileOfPtab1) {
  PTableFormat format = PTableFormat::kSas;
  const PTable read = parse_ptable(kPtab1TauArgus, "ptab1.csv", &format);
  EXPECT_EQ(format, PTableFormat::kTauArgus);
  expect_same_rows(read, build_ptable(ptab1()));
  EXPECT_EQ(read.max_noise(), 2);
  EXPECT_EQ(read.blocked_threshold, 0);  // not stored in the file
  EXPECT_EQ(lookup_noise(read, 1000, key(0.99), LookupRule::kTauArgus), 2);
}

TEST(PTableFile, WriteThenReadGivesTheSameTableInBothFormats) {
  for (const PTableParameters& parameters : {d2_v1(), ptab1(), ptab2(), ptab3()}) {
    const PTable table = build_ptable(parameters);
    for (const PTableFormat format : {PTableFormat::kTauArgus, PTableFormat::kSas}) {
      const std::string text = format_ptable(table, format);
      PTableFormat detected = format == PTableFormat::kSas ? PTableFormat::kTauArgus : PTableFormat::kSas;
      const PTable read = parse_ptable(text, "round-trip.csv", &detected);
      EXPECT_EQ(detected, format);
      expect_same_rows(read, table);
      EXPECT_EQ(format_ptable(read, format), text);
    }
  }
  const std::string sas = format_ptable(build_ptable(d2_v1()), PTableFormat::kSas);
  EXPECT_TRUE(
      sas.starts_with("i;j;p;v;p_int_lb;p_int_ub\n0;0;1.00000000;0;0.00000000;1.00000000\n"
                      "1;0;0.36648551;-1;0.00000000;0.36648551\n1;1;0.36648550;0;0.36648551;0.73297101\n"))
      << sas;
}

TEST(PTableFile, ToleratesQuotesCarriageReturnsAndALastBoundWithin1eMinus7) {
  const std::string text =
      "\"i\";\"j\";\"p\";\"v\";\"p_int_ub\"\r\n"
      "0;0;1.00000000;0;1.00000000\r\n"
      "1;0;0.50000000;-1;0.50000000\r\n"
      "1;2;0.49999995;1;0.99999995\r\n"
      "\r\n";
  const PTable table = parse_ptable(text, "quoted.csv");
  ASSERT_EQ(table.rows.size(), 2U);
  EXPECT_EQ(table.rows[1].back().upper_bound, kPTableBoundScale);
  EXPECT_DOUBLE_EQ(table.rows[1].back().probability, 0.5);
}

void expect_file_error(const std::string& text, const std::string& line, const std::string& fragment) {
  try {
    parse_ptable(text, "bad.csv");
    ADD_FAILURE() << "no error for " << fragment;
  } catch (const InvalidInput& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("bad.csv" + line), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(PTableFile, ValidationErrorsNameTheFileAndLine) {
  const std::string header = "i;j;p;v;p_int_ub\n";
  const std::string row0 = "0;0;1;0;1\n";
  expect_file_error("i;j;p;v;ub\n0;0;1;0;1\n", " line 1", "header");
  expect_file_error("", "", "empty");
  expect_file_error(header, "", "no rows");
  expect_file_error(header + "1;1;1;0;1\n", " line 2", "row i = 0 is missing");
  expect_file_error(header + row0 + "1;0;0.5;-1;0.5\n1;1;0.5;0;1\n3;3;1;0;1\n", " line 5", "row i = 2 is missing");
  expect_file_error(header + row0 + "1;1;1;0;1\n0;0;1;0;1\n", " line 4", "row i = 0 appears after row i = 1");
  expect_file_error(header + row0 + "1;0;0.5;-1;0.5\n1;1;0.4999;0;0.9999\n", " line 4", "do not sum to 1");
  expect_file_error(header + row0 + "1;0;0.5;-1;0.5\n1;1;0.4;0;0.4\n1;2;0.6;1;1\n", " line 4",
                    "p_int_ub is not increasing");
  expect_file_error(header + row0 + "1;1;0.5;0;0.5\n1;0;0.5;-1;1\n", " line 4", "j is not ascending");
  expect_file_error(header + row0 + "1;0;abc;-1;0.5\n", " line 3", "column p is not a number");
  expect_file_error(header + row0 + "x;0;0.5;-1;0.5\n", " line 3", "column i is not an integer");
  expect_file_error(header + row0 + "1;0;0.5;-1;0.5x\n", " line 3", "column p_int_ub is not a number");
  expect_file_error(header + row0 + "1;0;0.5;-1;1.5\n", " line 3", "outside [0, 1]");
  expect_file_error(header + row0 + "1;0;0.5;-1\n", " line 3", "expected 5 fields, found 4");
  expect_file_error(header + row0 + "1;-1;0.5;-2;1\n", " line 3", "j is negative");
  const std::string sas = "i;j;p;v;p_int_lb;p_int_ub\n0;0;1;0;0;1\n";
  expect_file_error(sas + "1;0;0.5;-1;0;0.5\n1;1;0.5;0;0.4;1\n", " line 4", "p_int_lb is not the p_int_ub");
  expect_file_error(sas + "1;0;0.5;-1;0.1;0.5\n", " line 3", "p_int_lb of the first target");
}

}  // namespace
}  // namespace sdc::tables
