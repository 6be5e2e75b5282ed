// `sdc risk --nb-smoothing` under mpirun: the same output digest and the same results for 1, 2 and 3
// ranks and 1 or 2 threads, on a household sample of a generated census (classes split between ranks,
// neighbourhoods gathered at the owner of their fixed keys).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

TEST(AnNbSmoothingRun, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20261121"}});
  const auto sample = (dir / "sample.h5").string();
  // About 6 000 persons with design weights near 10.
  const auto generated = run_process({sdc_executable().string(), "generate", "census", "--households", "20000",
                                      "--sample-fraction", "0.1", "-o", sample},
                                     environment);
  ASSERT_EQ(generated.exit_code, 0) << generated.err;

  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}}) {
    const std::string name = "nb-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto output = (dir / (name + ".h5")).string();
    const auto report = (dir / (name + ".json")).string();
    // Fixed keys sex, marstat and nuts2 (72 groups spread over the ranks), age ordinal: |M| = 5.
    const auto result =
        run_sdc_mpi(ranks, {"--threads", std::to_string(threads), "risk", "-i", sample, "-o", output, "--keys",
                            "sex,age,marstat,nuts2", "--weight", "weight", "--household", "hid", "--nb-smoothing",
                            "--ordinal-keys", "age", "--report", report});
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(report), "");
    digests.push_back(digest_of(output));
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]["nb_smoothing"]);
  }
  const auto& first = results.front();
  EXPECT_GT(first["sample_uniques"].get<std::int64_t>(), 200);
  EXPECT_EQ(first["neighbourhood_size"], 5);
  EXPECT_GT(first["tau1"].get<double>(), 0.0);
  EXPECT_GE(first["tau2"].get<double>(), first["tau1"].get<double>());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << "run " << i;
    EXPECT_EQ(results[i], first) << "run " << i;  // τ1, τ2 to the bit
  }
}

}  // namespace
}  // namespace sdc::testing
