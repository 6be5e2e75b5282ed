// `sdc risk --suda2` under mpirun: equal output digests and equal SUDA2 results for 1, 2 and 3 ranks
// and 1 or 2 threads on a generated census (the distributed subset counter against the local one).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

TEST(ASuda2MpiRun, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20260417"}});
  const auto census = (dir / "census.h5").string();
  // About 59 000 persons in 400 lau2 areas.
  ASSERT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "20000", "-o", census}, environment)
          .exit_code,
      0);
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}}) {
    const std::string name = "suda-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto output = (dir / (name + ".h5")).string();
    const auto report = (dir / (name + ".json")).string();
    const auto result = run_sdc_mpi(ranks, {"--threads", std::to_string(threads), "risk", "-i", census, "-o", output,
                                            "--keys", "sex,age,marstat,citizenship,lau2", "--household", "hid",
                                            "--suda2", "--suda2-contributions", "--report", report});
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(report), "");
    digests.push_back(digest_of(output));
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]["suda2"]);
  }
  // The census has special uniques on these keys: the search found some at every level.
  const auto& suda = results.front();
  EXPECT_GT(suda["records_with_msu"].get<std::int64_t>(), 0);
  EXPECT_GT(suda["U"].get<std::int64_t>(), 0);
  EXPECT_EQ(suda["msus_by_size"].size(), 5U);
  EXPECT_EQ(suda["contributions"].size(), 5U);
  print_digest("suda2", digests.front());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << "run " << i;
    EXPECT_EQ(results[i], results.front()) << "run " << i;
  }
}

}  // namespace
}  // namespace sdc::testing
