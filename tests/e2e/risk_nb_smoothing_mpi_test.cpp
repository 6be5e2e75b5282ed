// `sdc risk --nb-smoothing` under mpirun: the same output digest and the same results for 1, 2 and 3
// ranks and 1 or 2 threads, on a household sample of a generated census (classes split between ranks,
// neighbourhoods gathered at the owner of their fixed keys).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class AnNbSmoothingRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
    // About 6 000 persons with design weights near 10.
    const auto generated = run_process({sdc_executable().string(), "generate", "census", "--households", "20000",
                                        "--sample-fraction", "0.1", "-o", sample_},
                                       mpi_environment({{"SDC_SEED", "20261121"}}));
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
  }

  /// Runs the measure for (ranks, threads) = (1,1), (1,2), (2,1), (3,1); expects equal output digests
  /// and equal results (τ1, τ2 to the bit); returns the results.
  nlohmann::json expect_invariance(const std::vector<std::string>& flags) {
    std::vector<std::string> digests;
    std::vector<nlohmann::json> results;
    for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}}) {
      const std::string name = "nb-" + std::to_string(ranks) + "x" + std::to_string(threads);
      const auto output = (dir_ / (name + ".h5")).string();
      const auto report = (dir_ / (name + ".json")).string();
      std::vector<std::string> args{"--threads", std::to_string(threads),
                                    "risk",      "-i",
                                    sample_,     "-o",
                                    output,      "--weight",
                                    "weight",    "--household",
                                    "hid",       "--nb-smoothing",
                                    "--report",  report};
      args.insert(args.end(), flags.begin(), flags.end());
      const auto result = run_sdc_mpi(ranks, args);
      EXPECT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
      if (result.exit_code != 0) return {};
      EXPECT_EQ(validate_report(report), "");
      digests.push_back(digest_of(output));
      results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]["nb_smoothing"]);
    }
    if (!digests.empty()) print_digest("nb-smoothing", digests.front());
    for (std::size_t i = 1; i < digests.size(); ++i) {
      EXPECT_EQ(digests[i], digests.front()) << "run " << i;
      EXPECT_EQ(results[i], results.front()) << "run " << i;
    }
    return results.front();
  }

  TempDir dir_;
  std::string sample_ = (dir_ / "sample.h5").string();
};

TEST_F(AnNbSmoothingRun, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  // Fixed keys sex, marstat and nuts2 (72 groups spread over the ranks), age ordinal: |M| = 5.
  const auto results = expect_invariance({"--keys", "sex,age,marstat,nuts2", "--ordinal-keys", "age"});
  EXPECT_GT(results["sample_uniques"].get<std::int64_t>(), 200);
  EXPECT_EQ(results["neighbourhood_size"], 5);
  EXPECT_GT(results["tau1"].get<double>(), 0.0);
  EXPECT_GE(results["tau2"].get<double>(), results["tau1"].get<double>());
}

TEST_F(AnNbSmoothingRun, SplitsTheFirstOrdinalKeyWithAHaloWhenNoKeyIsFixed) {
  // Every key ordinal: ranks own ranges of the 9 hsize codes and get copies of the classes within
  // c = 4 of their range, which on 3 ranks reach beyond the next rank's range.
  const auto results = expect_invariance(
      {"--keys", "hsize,age", "--ordinal-keys", "hsize,age", "--nb-radius", "4", "--nb-l1-radius", "5"});
  EXPECT_GT(results["sample_uniques"].get<std::int64_t>(), 50);
  EXPECT_EQ(results["neighbourhood_size"], 57);  // |δ| <= 4 each, |δ_1| + |δ_2| <= 5: 61 - 4
  EXPECT_EQ(results["fixed_keys"], nlohmann::json::array());
}

TEST(AnNbSmoothingError, StopsEveryRankWithTheSameMessage) {
  // The one sample unique with a weight below 1 lies in the last rows (the last rank's); compat mode
  // lets the counts pass, the measure must stop the whole job, not leave ranks waiting.
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  std::string csv = "g,a,w\n";
  for (int i = 0; i < 30; ++i) csv += std::to_string(1 + i % 2) + "," + std::to_string(i % 5) + ",4\n";
  csv += "2,9,0.5\n";
  write_text(dir / "l.csv", csv);
  ASSERT_EQ(
      run_sdc({"import", (dir / "l.csv").string(), "-o", (dir / "l.h5").string(), "--role", "weight=w"}).exit_code, 0);
  const auto result =
      run_sdc_mpi(3, {"risk", "-i", (dir / "l.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "g,a", "--weight",
                      "w", "--mode", "compat", "--nb-smoothing", "--ordinal-keys", "a"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("1 sample unique has a weight below 1 in variable 'w'"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.h5"));
}

}  // namespace
}  // namespace sdc::testing
