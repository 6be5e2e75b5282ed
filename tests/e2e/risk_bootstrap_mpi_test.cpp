// `sdc risk --bootstrap` under mpirun: the acceptance point (a sample unique survives a
// Poisson-bootstrap replicate with probability e^-1 = 0.368, within Monte Carlo error, for 1 to 4 ranks,
// with identical results for every rank count), and equal output digests and bootstrap results for
// (ranks, threads) = (1,1), (1,2), (2,1), (3,1) under the cluster and stratified designs.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class ABootstrapUnderMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
    const auto generated = run_sdc({"generate", "census", "--households", "20000", "--output", census().string()},
                                   {{"SDC_SEED", "20261121"}});
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
  }

  std::filesystem::path census() const { return dir_ / "census.h5"; }

  /// Runs `sdc --threads T risk ...` on `ranks` ranks; returns the step's results.
  nlohmann::json risk(int ranks, int threads, const std::string& output, const std::vector<std::string>& flags) {
    std::vector<std::string> args{"--threads",
                                  std::to_string(threads),
                                  "risk",
                                  "-i",
                                  census().string(),
                                  "-o",
                                  (dir_ / output).string(),
                                  "--report",
                                  (dir_ / (output + ".json")).string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc_mpi(ranks, args, {{"SDC_SEED", "77"}});
    EXPECT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(dir_ / (output + ".json")), "");
    return nlohmann::json::parse(read_text(dir_ / (output + ".json")))["steps"][0]["results"];
  }

  TempDir dir_;
};

TEST_F(ABootstrapUnderMpi, UniquesSurvivePoissonReplicatesWithProbabilityOneOverEForOneToFourRanks) {
  // About 59 000 persons; keys that leave thousands of sample uniques.
  const std::vector<std::string> flags{
      "--keys", "sex,age,marstat,citizenship,lau2", "--bootstrap", "40", "--bootstrap-design", "poisson"};
  nlohmann::json one_rank;
  for (int ranks = 1; ranks <= 4; ++ranks) {
    const auto results = risk(ranks, 1, "poisson-" + std::to_string(ranks) + ".h5", flags);
    const auto& bootstrap = results["bootstrap"];
    const auto& survival = bootstrap["unique_survival"];
    const double uniques = survival["sample_uniques"].get<double>();
    ASSERT_EQ(uniques, results["sample_uniques"].get<double>());
    ASSERT_GT(uniques, 2000.0);
    // Each full-sample unique is a record drawn m ~ Poisson(1) times, independently: it stays unique
    // when m = 1. Over 40 replicates the rate's Monte Carlo standard error is sqrt(p(1-p) / (U B)).
    const double p = std::exp(-1.0);
    const double error = std::sqrt(p * (1 - p) / (uniques * 40.0));
    EXPECT_NEAR(survival["mean_rate"].get<double>(), p, 4 * error) << ranks << " ranks";
    EXPECT_NEAR(survival["poisson_probability"].get<double>(), 0.3679, 0.5e-4);
    if (ranks == 1) {
      one_rank = bootstrap;
    } else {
      EXPECT_EQ(bootstrap, one_rank) << ranks << " ranks give other bootstrap results than one";
    }
  }
}

TEST_F(ABootstrapUnderMpi, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  const std::string input_digest = digest_of(census());
  using Runs = std::vector<std::pair<int, int>>;
  // Cluster: the four (ranks, threads) of the issue; stratified over households: one and three ranks.
  for (const auto& [design, runs] : std::vector<std::pair<std::vector<std::string>, Runs>>{
           {{"--bootstrap-design", "cluster"}, {{1, 1}, {1, 2}, {2, 1}, {3, 1}}},
           {{"--bootstrap-design", "stratified", "--bootstrap-strata", "nuts3"}, {{1, 2}, {3, 1}}}}) {
    std::vector<std::string> flags{"--keys", "sex,age,marstat,lau2", "--household", "hid", "--bootstrap", "20"};
    flags.insert(flags.end(), design.begin(), design.end());
    std::vector<std::string> digests;
    nlohmann::json first;
    for (const auto& [ranks, threads] : runs) {
      const std::string output = design[1] + "-" + std::to_string(ranks) + "x" + std::to_string(threads) + ".h5";
      const auto results = risk(ranks, threads, output, flags);
      digests.push_back(digest_of(dir_ / output));
      EXPECT_EQ(results["bootstrap"]["design"], design[1]);
      EXPECT_EQ(results["bootstrap"]["resampling_unit"], "household");
      EXPECT_EQ(results["bootstrap"]["units"], 20000);
      if (first.is_null()) {
        first = results["bootstrap"];
      } else {
        EXPECT_EQ(results["bootstrap"], first) << design[1] << ": " << ranks << " ranks, " << threads << " threads";
      }
    }
    print_digest(design[1], digests.front());
    for (const auto& digest : digests) EXPECT_EQ(digest, digests.front()) << design[1];
    EXPECT_NE(digests.front(), input_digest);
  }
}

}  // namespace
}  // namespace sdc::testing
