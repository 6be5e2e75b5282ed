// `sdc pram` under mpirun: equal output digests and equal reports for 1, 2 and 3 ranks and 1 or 2
// threads on a generated census (counts merged over ranks, matrices built on every rank, draws keyed by
// row id).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

TEST(APramMpiRun, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20260418"}});
  const auto census = (dir / "census.h5").string();
  // About 15 000 persons.
  ASSERT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "5000", "-o", census}, environment)
          .exit_code,
      0);
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {2, 2}}) {
    const std::string name = "pram-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto output = (dir / (name + ".h5")).string();
    const auto report = (dir / (name + ".json")).string();
    const auto result =
        run_sdc_mpi(ranks,
                    {"--threads", std::to_string(threads), "pram", "-i", census, "-o", output, "--variables",
                     "marstat,education,citizenship", "--strata", "sex,nuts1", "--report", report},
                    {{"SDC_SEED", "20260418"}});
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(report), "");
    digests.push_back(digest_of(output));
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
  }
  EXPECT_EQ(results.front()["strata"], 6);
  EXPECT_GT(results.front()["records_changed"].get<std::int64_t>(), 0);
  print_digest("pram", digests.front());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << "run " << i;
    EXPECT_EQ(results[i], results.front()) << "run " << i;
  }
}

// Per-variable Block and nF matrices, two-way tables (one with a stratum variable) and the group means
// of income: the two-way counts are all-reduced, the sums of income are exact sums merged in rank order.
TEST(APramMpiRun, GivesEqualDigestsAndEstimatesWithBlockMatricesTwoWayTablesAndARegressionTarget) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20260419"}});
  const auto census = (dir / "census.h5").string();
  ASSERT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "3000", "-o", census}, environment)
          .exit_code,
      0);
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {3, 1}, {2, 2}}) {
    const std::string name = "pram-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto output = (dir / (name + ".h5")).string();
    const auto report = (dir / (name + ".json")).string();
    const auto result =
        run_sdc_mpi(ranks,
                    {"--threads", std::to_string(threads), "pram", "-i", census, "-o", output, "--variables",
                     "marstat,education,citizenship", "--strata", "sex,nuts1", "--matrix",
                     "education=block:1/nE:0.85:3/nB:0.7:2:3,citizenship=nF:0.9", "--two-way",
                     "marstat:education,nuts1:citizenship", "--regression-target", "income", "--report", report},
                    {{"SDC_SEED", "20260419"}});
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(report), "");
    digests.push_back(digest_of(output));
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
  }
  const auto& first = results.front();
  ASSERT_EQ(first["two_way"].size(), 2U);
  EXPECT_TRUE(first["two_way"][0]["information_loss"]["rd"].is_number());
  EXPECT_TRUE(first["two_way"][1]["information_loss"]["rd"].is_number());
  EXPECT_TRUE(first["variables"][0]["regression"]["information_loss"]["lrd"].is_number());
  EXPECT_EQ(first["variables"][1]["matrix"], "block:1/nE:0.85:3/nB:0.7:2:3");
  print_digest("pram-estimates", digests.front());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << "run " << i;
    EXPECT_EQ(results[i], results.front()) << "run " << i;
  }
}

}  // namespace
}  // namespace sdc::testing
