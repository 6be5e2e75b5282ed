// `sdc risk --loglinear` under mpirun: the same output digest and the same log-linear results (fit,
// τ, model selection, parametric bootstrap) for 1, 2 and 3 ranks and 1 or 2 threads.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class ALogLinearMpiRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
    // A 50% household sample of a small census: weights 2, households split between ranks.
    const auto generated = run_process({sdc_executable().string(), "generate", "census", "--households", "3000",
                                        "--sample-fraction", "0.5", "-o", (dir_ / "census.h5").string()},
                                       mpi_environment({{"SDC_SEED", "20260611"}}));
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
  }

  /// Runs the configurations; expects equal digests and equal loglinear results; returns the results.
  nlohmann::json expect_invariant(const std::vector<std::string>& flags) {
    std::vector<std::string> digests;
    std::vector<nlohmann::json> results;
    for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}}) {
      const std::string output = "ll-" + std::to_string(ranks) + "x" + std::to_string(threads) + ".h5";
      std::vector<std::string> args{"--threads",
                                    std::to_string(threads),
                                    "risk",
                                    "-i",
                                    (dir_ / "census.h5").string(),
                                    "-o",
                                    (dir_ / output).string(),
                                    "--household",
                                    "hid",
                                    "--report",
                                    (dir_ / (output + ".json")).string()};
      args.insert(args.end(), flags.begin(), flags.end());
      const auto result = run_sdc_mpi(ranks, args, {{"SDC_SEED", "77"}});
      EXPECT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
      if (result.exit_code != 0) return {};
      EXPECT_EQ(validate_report(dir_ / (output + ".json")), "");
      digests.push_back(digest_of(dir_ / output));
      results.push_back(
          nlohmann::json::parse(read_text(dir_ / (output + ".json")))["steps"][0]["results"]["loglinear"]);
    }
    if (!digests.empty()) print_digest("loglinear", digests.front());
    for (std::size_t c = 1; c < digests.size(); ++c) {
      EXPECT_EQ(digests[c], digests.front()) << "configuration " << c;
      EXPECT_EQ(results[c], results.front()) << "configuration " << c;
    }
    return results.front();
  }

  TempDir dir_;
};

TEST_F(ALogLinearMpiRun, GivesTheSameFitAndTausForAnyRankAndThreadCount) {
  const auto results = expect_invariant({"--keys", "sex,age,marstat,education,occupation", "--weight", "weight",
                                         "--loglinear", "sex*age+age*marstat+age*education+education*occupation"});
  EXPECT_GT(results["sample_uniques"].get<std::int64_t>(), 0);
  EXPECT_GT(results["tau1"].get<double>(), 0.0);
  EXPECT_TRUE(results["converged"].get<bool>());
}

TEST_F(ALogLinearMpiRun, SelectsAndBootstrapsTheSameForAnyRankAndThreadCount) {
  const auto results = expect_invariant({"--keys", "sex,marstat,education,htype", "--loglinear-select", "bic",
                                         "--loglinear-candidates", "independence;two-way;sex*marstat+education*htype",
                                         "--loglinear-sampling-fraction", "0.5", "--loglinear-bootstrap", "12"});
  EXPECT_EQ(results["candidates"].size(), 3U);
  EXPECT_EQ(results["bootstrap"]["replicates"], 12);
}

TEST_F(ALogLinearMpiRun, GivesTheSameCompatRisksForAnyRankAndThreadCount) {
  const auto results = expect_invariant({"--keys", "sex,age,marstat,education", "--weight", "weight", "--mode",
                                         "compat", "--loglinear", "two-way", "--loglinear-bound", "5"});
  EXPECT_GT(results["kept_classes"].get<std::int64_t>(), 0);
}

}  // namespace
}  // namespace sdc::testing
