// `sdc microaggregate`, `sdc linkage`, `sdc utility`, `sdc swap rank`, `sdc swap targeted`, `sdc swap
// shuffle` and `sdc noise` under mpirun: equal output digests and equal report results for 1, 2 and 3 ranks and 1 or 2
// threads on a generated census, for every blocking and both rank-swap modes; every group holds at least k records.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::vector<std::pair<int, int>> kRunShapes{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {2, 2}};
const std::string kVariables = "income,expenditure,savings";

class AContinuousMpiRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
    // About 15 000 persons.
    const auto result =
        run_process({sdc_executable().string(), "generate", "census", "--households", "5000", "-o", census_.string()},
                    mpi_environment({{"SDC_SEED", "20260418"}}));
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  /// Runs `args` (after --threads) for every run shape; expects equal digests of `output` (when given)
  /// and equal results; returns the results of the first run.
  nlohmann::json expect_invariant(const std::string& label, const std::vector<std::string>& args, bool has_output,
                                  const std::map<std::string, std::string>& environment = {}) {
    std::vector<std::string> digests;
    std::vector<nlohmann::json> results;
    for (const auto& [ranks, threads] : kRunShapes) {
      const std::string name = label + "-" + std::to_string(ranks) + "x" + std::to_string(threads);
      const auto output = dir_ / (name + ".h5");
      const auto report = dir_ / (name + ".json");
      std::vector<std::string> argv{"--threads", std::to_string(threads)};
      argv.insert(argv.end(), args.begin(), args.end());
      if (has_output) argv.insert(argv.end(), {"-o", output.string()});
      argv.insert(argv.end(), {"--report", report.string()});
      const auto result = run_sdc_mpi(ranks, argv, environment);
      EXPECT_EQ(result.exit_code, 0) << label << ", " << ranks << " ranks, " << threads << " threads:\n" << result.err;
      if (result.exit_code != 0) return {};
      EXPECT_EQ(validate_report(report), "");
      if (has_output) digests.push_back(digest_of(output));
      results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
    }
    if (has_output) print_digest(label, digests.front());
    for (std::size_t i = 1; i < results.size(); ++i) {
      if (has_output) {
        EXPECT_EQ(digests[i], digests.front()) << label << ", run " << i;
      }
      EXPECT_EQ(results[i], results.front()) << label << ", run " << i;
    }
    return results.front();
  }

  nlohmann::json microaggregate(const std::string& label, const std::vector<std::string>& blocking) {
    std::vector<std::string> args{"microaggregate", "-i", census_.string(), "--variables", kVariables, "-k", "3"};
    args.insert(args.end(), blocking.begin(), blocking.end());
    const auto results = expect_invariant(label, args, true);
    if (results.is_null()) return results;
    std::printf("%s: %s groups in %s blocks (largest %s), smallest %s, il_percent %.6f\n", label.c_str(),
                results["groups"].dump().c_str(), results["blocks"].dump().c_str(),
                results["largest_block"].dump().c_str(), results["smallest_group"].dump().c_str(),
                results["il_percent"].get<double>());
    EXPECT_GE(results["smallest_group"].get<int>(), 3) << label;
    return results;
  }

  TempDir dir_;
  std::filesystem::path census_ = dir_ / "census.h5";
};

TEST_F(AContinuousMpiRun, MicroaggregatesWithoutBlockingAlikeForAnyRankAndThreadCount) {
  const auto results = microaggregate("microaggregate-none", {"--blocking", "none"});
  EXPECT_EQ(results["blocks"], 1);
}

TEST_F(AContinuousMpiRun, MicroaggregatesWithinStrataAlikeForAnyRankAndThreadCount) {
  const auto results = microaggregate("microaggregate-strata", {"--blocking", "strata:nuts3", "--block-max", "500"});
  EXPECT_GT(results["blocks"].get<int>(), 1);
}

TEST_F(AContinuousMpiRun, MicroaggregatesWithinKdTreeBlocksAlikeForAnyRankAndThreadCount) {
  const auto results = microaggregate("microaggregate-kdtree", {"--blocking", "kdtree", "--block-max", "2000"});
  EXPECT_GT(results["blocks"].get<int>(), 1);
  EXPECT_LE(results["largest_block"].get<int>(), 2000);
}

TEST_F(AContinuousMpiRun, MicroaggregatesWithinPrincipalAxisBlocksAlikeForAnyRankAndThreadCount) {
  const auto results = microaggregate("microaggregate-pca-tree", {"--blocking", "pca-tree", "--block-max", "2000"});
  EXPECT_GT(results["blocks"].get<int>(), 1);
  EXPECT_LE(results["largest_block"].get<int>(), 2000);
}

TEST_F(AContinuousMpiRun, MicroaggregatesWithinPc1BlocksAlikeForAnyRankAndThreadCount) {
  const auto results = microaggregate("microaggregate-pc1", {"--blocking", "pc1", "--block-max", "2000"});
  EXPECT_GT(results["blocks"].get<int>(), 1);
}

TEST_F(AContinuousMpiRun, LinksAndMeasuresAMicroaggregatedFileAlikeForAnyRankAndThreadCount) {
  const auto masked = dir_ / "masked.h5";
  const auto made = run_sdc({"microaggregate", "-i", census_.string(), "-o", masked.string(), "--variables", kVariables,
                             "--blocking", "kdtree", "--block-max", "2000"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto linkage = expect_invariant("linkage",
                                        {"linkage", "-i", census_.string(), "--masked", masked.string(), "--variables",
                                         kVariables, "--rank-interval", "2", "--interval-k", "0.05,0.5"},
                                        true);
  const auto blocked = expect_invariant("linkage-strata",
                                        {"linkage", "-i", census_.string(), "--masked", masked.string(), "--variables",
                                         kVariables, "--blocking", "strata:nuts1"},
                                        true);
  if (!blocked.is_null() && !linkage.is_null()) {
    EXPECT_GE(blocked["fractional"].get<double>(), linkage["fractional"].get<double>())
        << "an intruder who knows the region links at least as often";
  }
  if (!linkage.is_null()) {
    std::printf("linkage: fractional %s, strict %s, optimistic %s; rank interval %s\n",
                linkage["fractional"].dump().c_str(), linkage["strict"].dump().c_str(),
                linkage["optimistic"].dump().c_str(), linkage["rank_interval_disclosure"].dump().c_str());
    EXPECT_LE(linkage["fractional_rate"].get<double>(), 1.0 / 3.0) << "groups of at least 3 tie every record";
    EXPECT_FALSE(linkage["rank_interval_disclosure"].is_null());
  }
  const auto utility = expect_invariant(
      "utility", {"utility", "-i", census_.string(), "--masked", masked.string(), "--variables", kVariables}, false);
  if (!utility.is_null()) std::printf("utility: il_percent %.6f\n", utility["il_percent"].get<double>());
}

TEST_F(AContinuousMpiRun, RankSwapsAlikeForAnyRankAndThreadCountInBothModes) {
  const auto native = expect_invariant(
      "swap-rank-native", {"swap", "rank", "-i", census_.string(), "--variables", kVariables, "--window-percent", "2"},
      true, {{"SDC_SEED", "20261126"}});
  const auto compat = expect_invariant("swap-rank-compat",
                                       {"swap", "rank", "-i", census_.string(), "--variables", kVariables, "--mode",
                                        "compat", "--reference-seed", "20261126"},
                                       true);
  // A window of 70 % of the values: partners reach across every rank's segment of the sorted order, and
  // the taken positions travel through all of them.
  const auto wide = expect_invariant("swap-rank-native-wide",
                                     {"swap", "rank", "-i", census_.string(), "--variables", kVariables,
                                      "--window-percent", "70", "--top-percent", "10", "--bottom-percent", "3"},
                                     true, {{"SDC_SEED", "20261126"}});
  for (const auto* results : {&native, &compat, &wide}) {
    ASSERT_FALSE(results->is_null());
    ASSERT_EQ((*results)["variables"].size(), 3U);
    for (const auto& variable : (*results)["variables"]) EXPECT_GT(variable["swapped_pairs"].get<int>(), 1000);
  }
}

TEST_F(AContinuousMpiRun, SwapsHouseholdsTargetedAlikeForAnyRankAndThreadCount) {
  // The coordinator plans from every rank's household summaries; ranks hold different households for
  // each run shape, so equal digests show that the plan depends on the households alone.
  const auto results =
      expect_invariant("swap-targeted",
                       {"swap", "targeted", "-i", census_.string(), "--household", "hid", "--hierarchy",
                        "nuts1,nuts2,nuts3,lau2", "--risk-variables", "sex,age,marstat", "--similar", "hsize,htype",
                        "--similar", "hsize", "--carry-along", "htype,hsize", "--swap-fraction", "0.1"},
                       true, {{"SDC_SEED", "20261126"}});
  ASSERT_FALSE(results.is_null());
  EXPECT_GT(results["swapped_households"].get<int>(), 500);
  EXPECT_EQ(results["levels"].size(), 4U);
}

TEST_F(AContinuousMpiRun, AddsExactNoiseAlikeForAnyRankAndThreadCount) {
  // The moments are exact sums merged in a fixed order, so every rank builds the same map whatever its
  // share of the records.
  const auto results = expect_invariant("noise-exact",
                                        {"noise", "-i", census_.string(), "--variables", kVariables, "--model", "exact",
                                         "--noise-percent-cov", "30", "--orthogonal"},
                                        true, {{"SDC_SEED", "20261126"}});
  ASSERT_FALSE(results.is_null());
  EXPECT_LT(results["noise_covariance_relative_deviation"].get<double>(), 1e-12);
}

TEST_F(AContinuousMpiRun, RestoresTheCovarianceAfterMicroaggregationAlikeForAnyRankAndThreadCount) {
  // Each rank reads the original in its own row range; both files' moments are exact sums, so every
  // rank builds the same target and map.
  const auto micro = dir_ / "micro.h5";
  const auto made = run_sdc({"microaggregate", "-i", census_.string(), "-o", micro.string(), "--variables", kVariables,
                             "--blocking", "kdtree", "--block-max", "2000"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto results = expect_invariant("noise-restore-covariance",
                                        {"noise", "-i", micro.string(), "--original", census_.string(), "--variables",
                                         kVariables, "--model", "restore-covariance-exact", "--orthogonal"},
                                        true, {{"SDC_SEED", "20261126"}});
  ASSERT_FALSE(results.is_null());
  EXPECT_LT(results["noise_covariance_relative_deviation"].get<double>(), 1e-12);
  EXPECT_EQ(results["restore_covariance"]["clipped_eigenvalues"], 0);
  EXPECT_LT(results["restore_covariance"]["released_covariance_relative_deviation"].get<double>(), 1e-9);
}

TEST_F(AContinuousMpiRun, ShufflesDataAlikeForAnyRankAndThreadCount) {
  // Each variable is gathered whole on its own rank for its scores and its reverse mapping.
  const auto results = expect_invariant(
      "swap-shuffle",
      {"swap", "shuffle", "-i", census_.string(), "--variables", "income,savings", "--given", "expenditure"}, true,
      {{"SDC_SEED", "20261126"}});
  ASSERT_FALSE(results.is_null());
  EXPECT_EQ(results["variables"].size(), 2U);
}

}  // namespace
}  // namespace sdc::testing
