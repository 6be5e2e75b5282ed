// `sdc risk --loglinear`: the log-linear model risk against the toy oracle of docs/methods risk.md §11
// ("E log-linear toy"), model selection, the parametric bootstrap and the option errors.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "tests/support/risk_runs.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// The sample 2x2 table [[1,3],[4,2]] of the oracle as ten records (a, b), all with weight `weight`;
/// the sample unique is the first record.
std::string toy_csv(const std::string& weight) {
  std::string csv = "a,b,w\n";
  const int counts[2][2] = {{1, 3}, {4, 2}};
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < counts[a][b]; ++i)
        csv += std::to_string(a + 1) + "," + std::to_string(b + 1) + "," + weight + "\n";
  return csv;
}

class LogLinearToy : public ::testing::Test {
 protected:
  void import(const std::string& weight) {
    write_text(dir_ / "toy.csv", toy_csv(weight));
    const auto imported = run_sdc({"import", (dir_ / "toy.csv").string(), "-o", (dir_ / "toy.h5").string(), "--role",
                                   "weight=w", "--role", "key=a,b"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }
  void SetUp() override { import("2.5"); }

  std::vector<std::string> args(const std::vector<std::string>& flags) const {
    std::vector<std::string> all{
        "risk", "-i",       (dir_ / "toy.h5").string(), "-o", (dir_ / "r.h5").string(), "--keys", "a,b", "--weight",
        "w",    "--report", (dir_ / "r.json").string()};
    all.insert(all.end(), flags.begin(), flags.end());
    return all;
  }

  /// Runs sdc risk with `flags`; returns the loglinear results and the output's rows.
  std::pair<nlohmann::json, std::vector<std::vector<std::string>>> risk(
      const std::vector<std::string>& flags, const std::map<std::string, std::string>& env = {}) {
    const auto [rows, results] = run_and_read_back(args(flags), dir_ / "r.h5", dir_ / "r.json", env);
    return {results["loglinear"], rows};
  }

  /// Runs sdc risk with `flags`, expecting `exit_code`, a message containing `message`, and no output.
  void expect_error(const std::vector<std::string>& flags, int exit_code, const std::string& message,
                    const std::map<std::string, std::string>& env = {}) {
    const auto result = run_sdc(args(flags), env);
    EXPECT_EQ(result.exit_code, exit_code) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.h5"));
  }

  TempDir dir_;
};

TEST_F(LogLinearToy, GivesThePaperTausOfTheOracleWithAScalarSamplingFraction) {
  const auto [results, rows] = risk({"--loglinear", "independence", "--loglinear-sampling-fraction", "0.4"});
  // mu_11 = 2, v = 2 (1 - 0.4) / 0.4 = 3: tau1 = e^-3, tau2 = (1 - e^-3) / 3.
  EXPECT_NEAR(results["tau1"].get<double>(), 0.0497871, 5e-8);
  EXPECT_NEAR(results["tau2"].get<double>(), 0.3167376, 5e-8);
  EXPECT_EQ(results["sample_uniques"], 1);
  EXPECT_EQ(results["model"], "a+b");
  EXPECT_EQ(results["generators"], (nlohmann::json{{"a"}, {"b"}}));
  EXPECT_EQ(results["mode"], "native");
  EXPECT_EQ(results["grid_cells"], 4);
  EXPECT_EQ(results["parameters"], 3);
  EXPECT_TRUE(results["converged"].get<bool>());
  EXPECT_NEAR(results["log_likelihood"].get<double>(), -6.2986980, 5e-7);
  const auto risk = csv_numbers(rows, "loglinear_risk");
  const auto inverse = csv_numbers(rows, "loglinear_expected_inverse");
  ASSERT_EQ(risk.size(), 10U);
  EXPECT_NEAR(risk[0], std::exp(-3.0), 1e-12);
  EXPECT_NEAR(inverse[0], (1 - std::exp(-3.0)) / 3, 1e-12);
  for (std::size_t i = 1; i < risk.size(); ++i) {
    EXPECT_EQ(risk[i], 0.0) << "record " << i;
    EXPECT_EQ(inverse[i], 0.0) << "record " << i;
  }
}

TEST_F(LogLinearToy, TakesThePerUniqueSamplingFractionFromTheWeights) {
  // Weights 2.5: the unique's f/F = 0.4, as with the scalar.
  const auto [results, rows] = risk({"--loglinear", "independence"});
  EXPECT_NEAR(results["tau1"].get<double>(), 0.0497871, 5e-8);
  EXPECT_NEAR(results["tau2"].get<double>(), 0.3167376, 5e-8);
  EXPECT_EQ(results["sampling_fraction"], "per-unique 1/weight");
}

TEST_F(LogLinearToy, FitsUserGenerators) {
  // The saturated model a*b: mu = f = 1 for the unique, v = 1.5.
  const auto [results, rows] = risk({"--loglinear", " a * b ", "--loglinear-sampling-fraction", "0.4"});
  EXPECT_EQ(results["model"], "a*b");
  EXPECT_EQ(results["parameters"], 4);
  EXPECT_NEAR(results["tau1"].get<double>(), std::exp(-1.5), 1e-9);
  EXPECT_NEAR(results["tau2"].get<double>(), (1 - std::exp(-1.5)) / 1.5, 1e-9);
}

TEST_F(LogLinearToy, GivesSdcMicrosGr1AndGr2InCompatMode) {
  const auto [results, rows] = risk({"--mode", "compat", "--loglinear", "independence"});
  EXPECT_NEAR(results["gr1"].get<double>(), 0.07529855, 5e-9);
  EXPECT_NEAR(results["gr2"].get<double>(), 0.14558454, 5e-9);
  EXPECT_EQ(results["kept_classes"], 4);
  EXPECT_EQ(results["mode"], "compat");
  EXPECT_FALSE(results.contains("tau1"));
  // bound 2 leaves out the cells with f = 3 and 4: K' = 2.
  const auto [bounded, unused] = risk({"--mode", "compat", "--loglinear", "independence", "--loglinear-bound", "2"});
  EXPECT_EQ(bounded["kept_classes"], 2);
  EXPECT_NEAR(bounded["gr1"].get<double>(), std::exp(-1.2) / 2, 1e-12);
}

TEST_F(LogLinearToy, ReportsGr2AsNullWhenAKeptCellHasInclusionOne) {
  import("2");  // the cell with f = 2 has sum(1/w) = 1: sdcMicro's gr2 is NaN
  const auto [results, rows] = risk({"--mode", "compat", "--loglinear", "independence"});
  EXPECT_NEAR(results["gr1"].get<double>(), 0.09196986, 5e-9);
  EXPECT_TRUE(results["gr2"].is_null()) << results.dump();
}

TEST_F(LogLinearToy, SelectsAmongCandidatesAndReportsEveryScore) {
  const auto [results, rows] = risk({"--loglinear-select", "aic", "--loglinear-candidates", "independence;a*b",
                                     "--loglinear-sampling-fraction", "0.4"});
  ASSERT_EQ(results["candidates"].size(), 2U);
  const auto& independence = results["candidates"][0];
  const auto& saturated = results["candidates"][1];
  EXPECT_NEAR(independence["log_likelihood"].get<double>(), -6.2986980, 5e-7);
  EXPECT_NEAR(independence["aic"].get<double>(), 18.5973961, 5e-7);
  EXPECT_NEAR(independence["bic"].get<double>(), 19.5051513, 5e-7);
  EXPECT_EQ(independence["df"], 1);
  EXPECT_NEAR(independence["deviance"].get<double>(), 1.7260924, 5e-7);
  EXPECT_NEAR(saturated["aic"].get<double>(), 18.8713036, 5e-7);
  EXPECT_EQ(saturated["df"], 0);
  EXPECT_NEAR(saturated["deviance"].get<double>(), 0.0, 1e-9);
  EXPECT_TRUE(independence["chosen"].get<bool>());
  EXPECT_FALSE(saturated["chosen"].get<bool>());
  EXPECT_EQ(results["model"], "a+b");
  EXPECT_EQ(results["selected_by"], "aic");
  EXPECT_NEAR(results["tau1"].get<double>(), 0.0497871, 5e-8);
}

TEST_F(LogLinearToy, BootstrapsTauReproduciblyFromTheSeed) {
  const std::map<std::string, std::string> env{{"SDC_SEED", "424242"}};
  const std::vector<std::string> flags{"--loglinear",           "independence", "--loglinear-sampling-fraction", "0.4",
                                       "--loglinear-bootstrap", "40",           "--loglinear-confidence",        "0.9"};
  const auto [first, rows] = risk(flags, env);
  const auto& bootstrap = first["bootstrap"];
  EXPECT_EQ(bootstrap["replicates"], 40);
  EXPECT_EQ(bootstrap["design"], "parametric");
  EXPECT_EQ(bootstrap["quantile_type"], 7);
  EXPECT_EQ(bootstrap["confidence"], 0.9);
  EXPECT_EQ(bootstrap["tau1"]["estimate"], first["tau1"]);
  EXPECT_LE(bootstrap["tau1"]["percentile_lower"].get<double>(), bootstrap["tau1"]["percentile_upper"].get<double>());
  EXPECT_GT(bootstrap["tau2"]["standard_error"].get<double>(), 0.0);
  const auto [second, unused] = risk(flags, env);
  EXPECT_EQ(second["bootstrap"], bootstrap);
  const auto [other, unused2] = risk(flags, {{"SDC_SEED", "424243"}});
  EXPECT_NE(other["bootstrap"]["tau1"], bootstrap["tau1"]);
}

TEST_F(LogLinearToy, RefusesBadOptionsWithoutLeavingOutput) {
  expect_error({"--loglinear", "a*c"}, 2, "--loglinear: 'c' in model 'a*c' is not one of the variables of --keys");
  expect_error({"--loglinear", "a+"}, 2, "--loglinear: model 'a+' has an empty term");
  expect_error({"--loglinear", "independence", "--loglinear-bound", "3"}, 2, "--loglinear-bound");
  expect_error({"--mode", "compat", "--loglinear", "independence", "--loglinear-sampling-fraction", "0.4"}, 2,
               "--loglinear-sampling-fraction is for native mode");
  expect_error({"--loglinear-sampling-fraction", "0.4"}, 2, "need --loglinear MODEL");
  expect_error({"--loglinear", "independence", "--loglinear-sampling-fraction", "1.5"}, 2,
               "--loglinear-sampling-fraction");
  expect_error({"--loglinear", "independence", "--loglinear-candidates", "independence"}, 2, "exclude each other");
  expect_error({"--loglinear", "independence", "--loglinear-bootstrap", "10"}, 2,
               "--loglinear-bootstrap needs --loglinear-sampling-fraction");
  expect_error({"--loglinear", "independence", "--loglinear-sampling-fraction", "0.4", "--loglinear-bootstrap", "10"},
               2, "needs a seed");
  expect_error({"--loglinear", "independence", "--loglinear-select", "aicc"}, 2, "--loglinear-select");
  EXPECT_EQ(dir_.entries().size(), 2U);  // toy.csv and toy.h5 only
}

TEST_F(LogLinearToy, NeedsWeightsOrASamplingFraction) {
  const auto result = run_sdc({"risk", "-i", (dir_ / "toy.h5").string(), "-o", (dir_ / "r.h5").string(), "--keys",
                               "a,b", "--loglinear", "independence"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--loglinear needs --weight"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "r.h5"));
}

TEST_F(LogLinearToy, RejectsZeroWeightsInCompatMode) {
  // (Native mode never gets here: a unique with weight below 1 already stops the individual risk.)
  import("0");
  expect_error({"--mode", "compat", "--loglinear", "independence"}, 3, "--weight, row id 0: a zero weight");
}

}  // namespace
}  // namespace sdc::testing
