// `sdc risk --bootstrap`: the full-sample estimates equal the step's own figures, the summaries follow
// bootstrap.md §4, the designs (Poisson, multinomial, cluster, stratified) behave as documented, runs
// are reproducible from the seed, and bad options or inputs fail with a clear message and no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <sstream>

#include "tests/support/risk_runs.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::map<std::string, std::string> kSeed{{"SDC_SEED", "20260517"}};

/// Holds risk.md oracle "E francdat" with household ids as f.h5.
class ABootstrap : public ::testing::Test {
 protected:
  void SetUp() override { import_francdat_with_households(dir_); }

  /// A household sample of a generated census (about 4 500 persons, weights above 1), made once.
  const std::filesystem::path& census() {
    if (census_.empty()) {
      census_ = dir_ / "census.h5";
      const auto generated = run_sdc(
          {"generate", "census", "--households", "5000", "--sample-fraction", "0.3", "--output", census_.string()},
          kSeed);
      EXPECT_EQ(generated.exit_code, 0) << generated.err;
    }
    return census_;
  }

  /// The distinct household ids of the census sample (exported to CSV; hid is its first column).
  std::int64_t census_households() {
    const auto exported = run_sdc({"export", census().string(), "-o", (dir_ / "census.csv").string()});
    EXPECT_EQ(exported.exit_code, 0) << exported.err;
    std::istringstream in(read_text(dir_ / "census.csv"));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line.substr(0, 4), "hid,");
    std::set<std::string> ids;
    while (std::getline(in, line)) ids.insert(line.substr(0, line.find(',')));
    std::filesystem::remove(dir_ / "census.csv");
    return static_cast<std::int64_t>(ids.size());
  }

  /// Runs sdc risk on `input` with `flags`; returns the step (results and warnings) of a valid report.
  nlohmann::json risk(const std::filesystem::path& input, const std::vector<std::string>& flags,
                      const std::map<std::string, std::string>& environment = kSeed) {
    std::vector<std::string> args{
        "risk", "-i", input.string(), "-o", (dir_ / "r.h5").string(), "--report", (dir_ / "r.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    std::filesystem::remove(dir_ / "r.h5");
    const auto result = run_sdc(args, environment);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(dir_ / "r.json"), "");
    return nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0];
  }

  /// Runs sdc risk expecting failure; checks that it left no output behind.
  ProcessResult failing_risk(const std::filesystem::path& input, const std::vector<std::string>& flags) {
    const auto before = dir_.entries();
    std::vector<std::string> args{
        "risk", "-i", input.string(), "-o", (dir_ / "bad.h5").string(), "--report", (dir_ / "bad.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc(args, kSeed);
    EXPECT_EQ(dir_.entries(), before) << "a failed run leaves nothing behind";
    return result;
  }

  TempDir dir_;
  std::filesystem::path census_;
};

bool has_warning(const nlohmann::json& step, const std::string& text) {
  for (const auto& warning : step["warnings"])
    if (warning.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

TEST_F(ABootstrap, EstimatesAreTheStepsOwnFiguresAndSummariesFollowTheirDefinitions) {
  const auto step = risk(dir_ / "f.h5", {"--keys", "Key1,Key2,Key3,Key4", "--weight", "w", "--bootstrap", "200",
                                         "--bootstrap-design", "poisson"});
  const auto& results = step["results"];
  const auto& bootstrap = results["bootstrap"];
  EXPECT_EQ(bootstrap["replicates"], 200);
  EXPECT_EQ(bootstrap["design"], "poisson");
  EXPECT_EQ(bootstrap["resampling_unit"], "record");
  EXPECT_EQ(bootstrap["units"], 8);
  EXPECT_EQ(bootstrap["confidence"], 0.95);
  EXPECT_EQ(bootstrap["alpha"], 0.05);
  EXPECT_EQ(bootstrap["quantile_type"], 7);
  EXPECT_EQ(bootstrap["first_replicate"], 1);
  EXPECT_FALSE(step["parameters"]["bootstrap"].is_null());
  const auto& statistics = bootstrap["statistics"];
  // francdat: ER = 0.966526, global risk 0.1208158, 4 sample uniques, 8 records below k = 3.
  EXPECT_NEAR(statistics["expected_reidentifications"]["estimate"].get<double>(), 0.966526, 5e-7);
  EXPECT_NEAR(statistics["expected_reidentifications"]["estimate"].get<double>(),
              results["individual_risk"]["expected_reidentifications"].get<double>(), 1e-14);
  EXPECT_NEAR(statistics["global_risk"]["estimate"].get<double>(), 0.1208158, 5e-8);
  EXPECT_EQ(statistics["sample_uniques"]["estimate"], 4.0);
  EXPECT_EQ(statistics["records_below_k"]["estimate"], 8.0);
  for (const auto& [name, s] : statistics.items()) {
    const double estimate = s["estimate"].get<double>();
    EXPECT_NEAR(s["bias"].get<double>(), s["mean"].get<double>() - estimate, 1e-12) << name;
    EXPECT_GT(s["standard_error"].get<double>(), 0.0) << name;
    EXPECT_LE(s["percentile"]["lower"].get<double>(), s["percentile"]["upper"].get<double>()) << name;
    // Basic interval: [2θ̂ - Q(1 - α/2), 2θ̂ - Q(α/2)].
    EXPECT_NEAR(s["basic"]["lower"].get<double>(), 2 * estimate - s["percentile"]["upper"].get<double>(), 1e-12)
        << name;
    EXPECT_NEAR(s["basic"]["upper"].get<double>(), 2 * estimate - s["percentile"]["lower"].get<double>(), 1e-12)
        << name;
  }
  // Uniqueness-based statistics are flagged and warned about (bootstrap.md §3).
  EXPECT_FALSE(statistics["global_risk"]["naive"].get<bool>());
  EXPECT_FALSE(statistics["expected_reidentifications"]["naive"].get<bool>());
  EXPECT_TRUE(statistics["sample_uniques"]["naive"].get<bool>());
  EXPECT_TRUE(statistics["records_below_k"]["naive"].get<bool>());
  EXPECT_TRUE(has_warning(step,
                          "naive bootstrap of a uniqueness measure is biased: uniques survive a replicate with "
                          "probability 0.368; use a parametric bootstrap"));
  EXPECT_EQ(bootstrap["unique_survival"]["sample_uniques"], 4);
  // Poisson replicate sizes vary around n = 8.
  EXPECT_LT(bootstrap["replicate_records"]["min"].get<std::int64_t>(), 8);
  EXPECT_GT(bootstrap["replicate_records"]["max"].get<std::int64_t>(), 8);
}

TEST_F(ABootstrap, TakesTheConfidenceAndQuantileType) {
  const std::vector<std::string> base{"--keys", "Key1,Key2", "--bootstrap", "99", "--bootstrap-design", "poisson"};
  auto flags = base;
  flags.insert(flags.end(), {"--confidence", "0.9", "--quantile-type", "1"});
  const auto narrow = risk(dir_ / "f.h5", flags)["results"]["bootstrap"];
  const auto wide = risk(dir_ / "f.h5", base)["results"]["bootstrap"];
  EXPECT_EQ(narrow["confidence"], 0.9);
  EXPECT_EQ(narrow["alpha"], 0.1);
  EXPECT_EQ(narrow["quantile_type"], 1);
  // Same replicates (same seed and design): only the intervals change, and the 90% one lies inside.
  const auto& n = narrow["statistics"]["global_risk"];
  const auto& w = wide["statistics"]["global_risk"];
  EXPECT_EQ(n["mean"], w["mean"]);
  EXPECT_EQ(n["standard_error"], w["standard_error"]);
  EXPECT_GE(n["percentile"]["lower"].get<double>(), w["percentile"]["lower"].get<double>());
  EXPECT_LE(n["percentile"]["upper"].get<double>(), w["percentile"]["upper"].get<double>());
  // The order-statistic critical value (bootstrap.md §6): t*_(floor((1 - alpha) B)), B = 99.
  EXPECT_EQ(w["critical_value"]["rank"], 94) << "floor(0.95 * 99)";
  EXPECT_EQ(n["critical_value"]["rank"], 89) << "floor(0.9 * 99)";
  EXPECT_LE(n["critical_value"]["value"].get<double>(), w["critical_value"]["value"].get<double>());
}

TEST_F(ABootstrap, UsesTheStepsRiskMethodQualAndK) {
  // A weighted census sample with classes above 2: the exact method and qual change every risk.
  const auto step =
      risk(census(), {"--keys", "sex,age,marstat,nuts2", "--weight", "weight", "--household", "hid", "--risk-method",
                      "exact", "--qual", "0.7", "--k-anonymity", "5", "--bootstrap", "20"});
  const auto& results = step["results"];
  const auto& statistics = results["bootstrap"]["statistics"];
  const double er = results["individual_risk"]["expected_reidentifications"].get<double>();
  EXPECT_NEAR(statistics["expected_reidentifications"]["estimate"].get<double>(), er, 1e-12 * er);
  EXPECT_NEAR(statistics["global_risk"]["estimate"].get<double>(),
              results["individual_risk"]["global_risk"].get<double>(), 1e-12);
  EXPECT_EQ(statistics["sample_uniques"]["estimate"].get<double>(), results["sample_uniques"].get<double>());
  EXPECT_EQ(results["k"], 5);
  EXPECT_EQ(results["bootstrap"]["k"], 5);
  EXPECT_EQ(statistics["records_below_k"]["estimate"].get<double>(), results["records_below_k"].get<double>());
}

TEST_F(ABootstrap, ClusterIsTheDefaultWithHouseholdsAndIsReproducibleFromTheSeed) {
  const std::vector<std::string> flags{"--keys", "sex,age,marstat", "--household", "hid", "--bootstrap", "30"};
  const auto first = risk(census(), flags);
  const auto& bootstrap = first["results"]["bootstrap"];
  EXPECT_EQ(bootstrap["design"], "cluster");
  EXPECT_EQ(bootstrap["resampling_unit"], "household");
  EXPECT_EQ(bootstrap["units"], census_households());  // about 30% of 5 000
  EXPECT_FALSE(has_warning(first, "resamples persons independently"));
  // Without weights r = 1/f: ER is the number of classes, as naive as the uniques.
  EXPECT_TRUE(bootstrap["statistics"]["global_risk"]["naive"].get<bool>());
  EXPECT_TRUE(bootstrap["statistics"]["expected_reidentifications"]["naive"].get<bool>());
  EXPECT_TRUE(has_warning(first, "naive bootstrap of a uniqueness measure is biased"));
  const auto again = risk(census(), flags);
  EXPECT_EQ(again["results"]["bootstrap"], bootstrap);
  const auto other_seed = risk(census(), flags, {{"SDC_SEED", "4711"}});
  EXPECT_NE(other_seed["results"]["bootstrap"]["statistics"]["global_risk"]["mean"],
            bootstrap["statistics"]["global_risk"]["mean"]);
  EXPECT_EQ(other_seed["results"]["bootstrap"]["statistics"]["global_risk"]["estimate"],
            bootstrap["statistics"]["global_risk"]["estimate"]);
  // Record-level designs with households are allowed, with a warning.
  const auto poisson = risk(census(), {"--keys", "sex,age,marstat", "--household", "hid", "--bootstrap", "10",
                                       "--bootstrap-design", "poisson"});
  EXPECT_EQ(poisson["results"]["bootstrap"]["resampling_unit"], "record");
  EXPECT_TRUE(has_warning(poisson, "resamples persons independently"));
}

TEST_F(ABootstrap, MultinomialAndStratifiedDesignsDrawExactlyTheirSampleSizes) {
  const auto records =
      risk(census(), {"--keys", "sex,age", "--bootstrap", "10"})["results"]["records"].get<std::int64_t>();
  const auto multinomial = risk(census(), {"--keys", "sex,age", "--bootstrap", "10", "--bootstrap-design",
                                           "multinomial"})["results"]["bootstrap"];
  EXPECT_EQ(multinomial["design"], "multinomial");
  EXPECT_EQ(multinomial["replicate_records"]["min"], records);
  EXPECT_EQ(multinomial["replicate_records"]["max"], records);
  // Records within strata: n_h records drawn in every stratum, so n in all.
  const auto by_record =
      risk(census(), {"--keys", "sex,age", "--bootstrap", "10", "--bootstrap-strata", "nuts2"})["results"]["bootstrap"];
  EXPECT_EQ(by_record["design"], "stratified");
  EXPECT_EQ(by_record["resampling_unit"], "record");
  EXPECT_EQ(by_record["strata"]["variable"], "nuts2");
  EXPECT_EQ(by_record["strata"]["strata"], 9);
  EXPECT_EQ(by_record["replicate_records"]["min"], records);
  EXPECT_EQ(by_record["replicate_records"]["max"], records);
  // Households within strata: the household count is fixed, the record count varies.
  const auto by_household =
      risk(census(), {"--keys", "sex,age", "--household", "hid", "--bootstrap", "10", "--bootstrap-design",
                      "stratified", "--bootstrap-strata", "nuts2"})["results"]["bootstrap"];
  EXPECT_EQ(by_household["resampling_unit"], "household");
  EXPECT_EQ(by_household["units"], census_households());
  EXPECT_LT(by_household["replicate_records"]["min"].get<std::int64_t>(),
            by_household["replicate_records"]["max"].get<std::int64_t>());
}

TEST_F(ABootstrap, RejectsBadOptionsWithAClearMessageAndNoOutput) {
  const std::vector<std::string> keys{"--keys", "Key1,Key2"};
  const auto with = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), keys.begin(), keys.end());
    return failing_risk(dir_ / "f.h5", flags);
  };
  {
    const auto result = with({"--bootstrap", "50", "--bootstrap-design", "cluster"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--household"), std::string::npos) << result.err;
  }
  for (const char* b : {"0", "1", "-3", "many"}) {
    const auto result = with({"--bootstrap", b});
    EXPECT_EQ(result.exit_code, 2) << b << ": " << result.err;
    EXPECT_NE(result.err.find("--bootstrap"), std::string::npos) << result.err;
  }
  for (const char* level : {"0", "1", "1.5", "-0.2", "high"}) {
    const auto result = with({"--bootstrap", "50", "--confidence", level});
    EXPECT_EQ(result.exit_code, 2) << level << ": " << result.err;
    EXPECT_NE(result.err.find("--confidence"), std::string::npos) << result.err;
  }
  for (const char* type : {"0", "10", "7.5"}) {
    const auto result = with({"--bootstrap", "50", "--quantile-type", type});
    EXPECT_EQ(result.exit_code, 2) << type << ": " << result.err;
    EXPECT_NE(result.err.find("--quantile-type"), std::string::npos) << result.err;
  }
  {
    const auto result = with({"--bootstrap", "50", "--bootstrap-design", "jackknife"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--bootstrap-design"), std::string::npos) << result.err;
  }
  {
    const auto result = with({"--confidence", "0.9"});
    EXPECT_EQ(result.exit_code, 2) << "a bootstrap option without --bootstrap: " << result.err;
    EXPECT_NE(result.err.find("--bootstrap"), std::string::npos) << result.err;
  }
  {
    const auto result = with({"--bootstrap", "50", "--bootstrap-design", "stratified"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--bootstrap-strata"), std::string::npos) << result.err;
  }
  {
    const auto result = with({"--bootstrap", "50", "--bootstrap-design", "poisson", "--bootstrap-strata", "Key3"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("--bootstrap-strata"), std::string::npos) << result.err;
  }
  {
    // Without a seed.
    const auto before = dir_.entries();
    const auto result = run_sdc({"risk", "-i", (dir_ / "f.h5").string(), "-o", (dir_ / "bad.h5").string(), "--keys",
                                 "Key1", "--bootstrap", "50"},
                                {{"SDC_SEED", ""}});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_NE(result.err.find("seed"), std::string::npos) << result.err;
    EXPECT_EQ(dir_.entries(), before);
  }
}

TEST_F(ABootstrap, RejectsBadStrataAndWeightsNamingTheVariableAndRow) {
  {
    // The stratum of a household must not change between its members.
    const auto result = failing_risk(
        census(), {"--keys", "sex,age", "--household", "hid", "--bootstrap", "10", "--bootstrap-strata", "sex"});
    EXPECT_EQ(result.exit_code, 3) << result.err;
    EXPECT_NE(result.err.find("'sex'"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("row id"), std::string::npos) << result.err;
  }
  {
    const auto result =
        failing_risk(census(), {"--keys", "sex,age", "--bootstrap", "10", "--bootstrap-strata", "weight"});
    EXPECT_NE(result.exit_code, 0) << result.err;
    EXPECT_NE(result.err.find("weight"), std::string::npos) << result.err;
  }
  {
    // A weight below 1 in a class whose F is still >= f: the step is fine, the bootstrap is not.
    write_text(dir_ / "low.csv", "hid,k,w\n1,1,0.5\n2,1,3\n3,2,4\n");
    ASSERT_EQ(run_sdc({"import", (dir_ / "low.csv").string(), "-o", (dir_ / "low.h5").string(), "--role",
                       "household=hid", "--role", "weight=w", "--role", "key=k"})
                  .exit_code,
              0);
    const auto result = failing_risk(dir_ / "low.h5", {"--keys", "k", "--weight", "w", "--bootstrap", "10"});
    EXPECT_EQ(result.exit_code, 3) << result.err;
    EXPECT_NE(result.err.find("variable 'w', row id 0"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("--mode compat"), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace sdc::testing
