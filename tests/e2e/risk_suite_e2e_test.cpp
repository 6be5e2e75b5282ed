// `sdc risk` beyond the counts: individual, household and global risk, the threshold for a target
// global risk, k-anonymity per k and l-diversity, against the oracles of docs/methods risk.md §11.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/expectations.h"
#include "tests/support/risk_runs.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// risk.md oracle "E francdat" with its household ids, as f.h5.
class Francdat : public ::testing::Test {
 protected:
  void SetUp() override { import_francdat_with_households(dir_); }

  /// Runs sdc risk with `flags`, exports the output and returns its rows and the step's results.
  std::pair<std::vector<std::vector<std::string>>, nlohmann::json> risk(const std::vector<std::string>& flags) {
    std::vector<std::string> args{"risk",
                                  "-i",
                                  (dir_ / "f.h5").string(),
                                  "-o",
                                  (dir_ / "r.h5").string(),
                                  "--keys",
                                  "Key1,Key2,Key3,Key4",
                                  "--weight",
                                  "w",
                                  "--report",
                                  (dir_ / "r.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_and_read_back(args, dir_ / "r.h5", dir_ / "r.json");
  }

  TempDir dir_;
};

TEST_F(Francdat, GivesTheIndividualAndGlobalRiskOfTheOracle) {
  const auto [rows, results] = risk({});
  expect_all_near(csv_numbers(rows, "individual_risk"),
                  {0.01714426, 0.02204233, 0.02204233, 0.17707583, 0.01165448, 0.29706308, 0.40235948, 0.01714426},
                  5e-9);
  EXPECT_NEAR(results["individual_risk"]["expected_reidentifications"].get<double>(), 0.966526, 5e-7);
  EXPECT_NEAR(results["individual_risk"]["global_risk"].get<double>(), 0.1208158, 5e-8);
  EXPECT_EQ(results["individual_risk"]["method"], "approx");
  // Exact quantiles of the eight risks, type 7: the minimum, median and maximum.
  const auto& quantiles = results["individual_risk"]["quantiles"];
  EXPECT_EQ(quantiles[0]["p"], 0.0);
  EXPECT_NEAR(quantiles[0]["value"].get<double>(), 0.01165448, 5e-9);
  EXPECT_NEAR(quantiles[2]["value"].get<double>(), (0.02204233 + 0.02204233) / 2, 5e-9);
  EXPECT_NEAR(quantiles[6]["value"].get<double>(), 0.40235948, 5e-9);
}

TEST_F(Francdat, GivesTheHouseholdRiskOfTheOracle) {
  const auto [rows, results] = risk({"--household", "hid"});
  expect_all_near(csv_numbers(rows, "household_risk"),
                  {0.03880869, 0.03880869, 0.20459435, 0.20459435, 0.20459435, 0.29706308, 0.41260558, 0.41260558},
                  5e-9);
  EXPECT_NEAR(results["household_risk"]["expected_reidentifications"].get<double>(), 1.8136747, 5e-8);
  EXPECT_NEAR(results["household_risk"]["global_risk"].get<double>(), 0.2267093, 5e-8);
}

TEST_F(Francdat, GivesTheThresholdsOfTheOracleAndFlagsTheRecordsAbove) {
  {
    const auto [rows, results] = risk({"--global-risk-target", "0.05"});
    EXPECT_NEAR(results["risk_threshold"]["threshold"].get<double>(), 0.02204233, 5e-9);
    EXPECT_EQ(results["risk_threshold"]["records_above"], 3);
    // Risks above 0.02204233: records 4, 6 and 7 (0.177, 0.297, 0.402).
    EXPECT_EQ(csv_column(rows, "exceeds_risk_threshold"),
              (std::vector<std::string>{"false", "false", "false", "true", "false", "true", "true", "false"}));
  }
  {
    const auto [rows, results] = risk({"--global-risk-target", "0.10"});
    EXPECT_NEAR(results["risk_threshold"]["threshold"].get<double>(), 0.1770758, 5e-8);
    EXPECT_EQ(results["risk_threshold"]["records_above"], 2);
  }
  {
    const auto [rows, results] = risk({"--global-risk-target", "0.01"});
    EXPECT_EQ(results["risk_threshold"]["threshold"].get<double>(), 0.0);
    EXPECT_FALSE(results["risk_threshold"]["already_safe"].get<bool>());
    EXPECT_EQ(results["risk_threshold"]["records_above"], 8);
  }
  {
    const auto [rows, results] = risk({"--global-risk-target", "0.5"});
    EXPECT_TRUE(results["risk_threshold"]["threshold"].is_null()) << "sdcMicro reports NA when the file is safe";
    EXPECT_TRUE(results["risk_threshold"]["already_safe"].get<bool>());
    EXPECT_EQ(results["risk_threshold"]["records_above"], 0);
  }
}

TEST_F(Francdat, CountsKAnonymityViolationsForEachReportedK) {
  const auto [rows, results] = risk({"--k-anonymity", "4"});
  // f = 2,2,2,1,1,1,1,2: classes of sizes 2 (two of them) and 1 (four).
  const auto& table = results["k_anonymity"];
  ASSERT_EQ(table.size(), 4U);  // k = 2, 3, 4, 5
  EXPECT_EQ(table[0], (nlohmann::json{{"k", 2}, {"records_below_k", 4}, {"classes_below_k", 4}}));
  EXPECT_EQ(table[1], (nlohmann::json{{"k", 3}, {"records_below_k", 8}, {"classes_below_k", 6}}));
  EXPECT_EQ(table[2]["k"], 4);
  EXPECT_EQ(table[3], (nlohmann::json{{"k", 5}, {"records_below_k", 8}, {"classes_below_k", 6}}));
}

TEST_F(Francdat, ExactMethodChangesOnlyClassesAboveTwo) {
  const auto [approx_rows, approx] = risk({});
  const auto [exact_rows, exact] = risk({"--risk-method", "exact"});
  // francdat has no class with f > 2: the two methods agree.
  expect_all_near(csv_numbers(exact_rows, "individual_risk"), csv_numbers(approx_rows, "individual_risk"), 0.0);
  EXPECT_EQ(exact["individual_risk"]["method"], "exact");
}

TEST_F(Francdat, RejectsWeightsBelowOneInNativeModeAndComputesThemInCompat) {
  write_text(dir_ / "low.csv", "hid,Key1,w\n1,1,0.5\n2,1,0.25\n3,2,3\n");
  ASSERT_EQ(run_sdc({"import", (dir_ / "low.csv").string(), "-o", (dir_ / "low.h5").string(), "--role", "household=hid",
                     "--role", "weight=w"})
                .exit_code,
            0);
  const auto native = run_sdc(
      {"risk", "-i", (dir_ / "low.h5").string(), "-o", (dir_ / "n.h5").string(), "--keys", "Key1", "--weight", "w"});
  EXPECT_EQ(native.exit_code, 3);
  EXPECT_NE(native.err.find("variable 'w', row id 0"), std::string::npos) << native.err;
  EXPECT_NE(native.err.find("--mode compat"), std::string::npos) << native.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "n.h5"));
  const auto compat = run_sdc({"risk", "-i", (dir_ / "low.h5").string(), "-o", (dir_ / "c.h5").string(), "--keys",
                               "Key1", "--weight", "w", "--mode", "compat"});
  EXPECT_EQ(compat.exit_code, 0) << compat.err;
}

TEST(MarketerRisk, ReproducesTheOracleAgainstAnExternalFile) {
  // risk.md oracle "E marketer risks": classes (f, F) = (3, 2) (1, 0) (2, 4) (4, 10) give IM 0.4,
  // CEM 0.29, OREM 0.15, AREM 0.09. The external file also holds a value the input lacks.
  TempDir dir;
  write_text(dir / "d.csv", "id,k\n1,a\n2,a\n3,a\n4,b\n5,c\n6,c\n7,d\n8,d\n9,d\n10,d\n");
  std::string external = "k\n";
  for (const auto& [value, count] : std::vector<std::pair<std::string, int>>{{"d", 10}, {"a", 2}, {"e", 3}, {"c", 4}})
    for (int i = 0; i < count; ++i) external += value + "\n";
  write_text(dir / "e.csv", external);
  ASSERT_EQ(
      run_sdc({"import", (dir / "d.csv").string(), "-o", (dir / "d.h5").string(), "--type", "k=categorical"}).exit_code,
      0);
  ASSERT_EQ(
      run_sdc({"import", (dir / "e.csv").string(), "-o", (dir / "e.h5").string(), "--type", "k=categorical"}).exit_code,
      0);
  const auto [rows, results] =
      run_and_read_back({"risk", "-i", (dir / "d.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "k",
                         "--external", (dir / "e.h5").string(), "--report", (dir / "r.json").string()},
                        dir / "r.h5", dir / "r.json");
  const auto& marketer = results["marketer_risk"];
  EXPECT_NEAR(marketer["im"].get<double>(), 0.4, 1e-12);
  EXPECT_NEAR(marketer["cem"].get<double>(), 0.29, 1e-12);
  EXPECT_NEAR(marketer["orem"].get<double>(), 0.15, 1e-12);
  EXPECT_NEAR(marketer["arem"].get<double>(), 0.09, 1e-12);
  EXPECT_EQ(marketer["invalid_records"], 4);
  EXPECT_EQ(marketer["external_records"], 19);
  EXPECT_EQ(marketer["external_records_unmatched"], 3);
  expect_all_near(csv_numbers(rows, "fk_external"), {2, 2, 2, 0, 4, 4, 10, 10, 10, 10}, 0);

  const auto missing_key = run_sdc({"risk", "-i", (dir / "d.h5").string(), "-o", (dir / "x.h5").string(), "--keys",
                                    "id", "--external", (dir / "e.h5").string()});
  EXPECT_NE(missing_key.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir / "x.h5"));
}

TEST(LDiversity, ReproducesTheOracleThroughSdcRisk) {
  // risk.md oracle "E l-diversity": k1 = 1 (5 records), k1 = 2 (6 records).
  TempDir dir;
  write_text(dir / "l.csv", "k1,S,T\n1,1,1\n1,1,2\n1,1,1\n1,2,2\n1,3,1\n2,1,1\n2,1,1\n2,1,2\n2,1,2\n2,2,3\n2,,3\n");
  ASSERT_EQ(run_sdc({"import", (dir / "l.csv").string(), "-o", (dir / "l.h5").string(), "--type", "S=categorical",
                     "--type", "T=categorical", "--type", "k1=categorical"})
                .exit_code,
            0);
  const auto result = run_sdc({"risk", "-i", (dir / "l.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "k1",
                               "--sensitive", "S,T", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "r.json"), "");
  ASSERT_EQ(run_sdc({"export", (dir / "r.h5").string(), "-o", (dir / "r.csv").string()}).exit_code, 0);
  const auto rows = read_csv_fields(dir / "r.csv");
  const auto first_and_last = [&](const std::string& name) {
    const auto values = csv_numbers(rows, name);
    return std::vector<double>{values.front(), values.back()};
  };
  expect_all_near(first_and_last("l_distinct.S"), {3, 3}, 0);
  expect_all_near(first_and_last("l_entropy.S"), {2.586409, 2.381102}, 5e-7);
  expect_all_near(first_and_last("l_recursive.S"), {2, 1}, 0);
  expect_all_near(first_and_last("l_distinct.T"), {2, 3}, 0);
  expect_all_near(first_and_last("l_entropy.T"), {1.960132, 3}, 5e-7);
  expect_all_near(first_and_last("l_recursive.T"), {2, 3}, 0);
  const auto results = nlohmann::json::parse(read_text(dir / "r.json"))["steps"][0]["results"]["l_diversity"];
  EXPECT_EQ(results["S"]["classes"], 2);
  EXPECT_EQ(results["S"]["min_distinct"], 3);
  EXPECT_EQ(results["S"]["min_recursive"], 1);
  EXPECT_EQ(results["T"]["min_distinct"], 2);
  EXPECT_EQ(results["T"]["classes_distinct_below_l"], 0);
}

TEST(WildcardMissingKeys, ReproduceTheFrancdatMissingValueOracleThroughSdcRisk) {
  // risk.md oracle "E missing values": francdat with Key3 of record 3, Key1 and Key2 of record 4, Key4
  // of record 5 and Key1 of record 6 missing.
  TempDir dir;
  write_text(dir / "m.csv",
             "Key1,Key2,Key3,Key4,w\n1,2,5,1,18\n1,2,1,1,45.5\n1,2,,1,39\n,,1,5,17\n4,3,1,,541\n,3,1,1,8\n"
             "6,2,1,5,5\n1,2,5,1,92\n");
  ASSERT_EQ(run_sdc({"import", (dir / "m.csv").string(), "-o", (dir / "m.h5").string(), "--role", "weight=w", "--role",
                     "key=Key1,Key2,Key3,Key4"})
                .exit_code,
            0);
  const auto run = [&](const std::string& alpha) {
    const auto result =
        run_sdc({"risk", "-i", (dir / "m.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "Key1,Key2,Key3,Key4",
                 "--weight", "w", "--missing", "wildcard", "--alpha", alpha, "--report", (dir / "r.json").string()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(dir / "r.json"), "");
    EXPECT_EQ(run_sdc({"export", (dir / "r.h5").string(), "-o", (dir / "r.csv").string()}).exit_code, 0);
    return read_csv_fields(dir / "r.csv");
  };
  {
    const auto rows = run("1");
    expect_all_near(csv_numbers(rows, "fk"), {3, 2, 4, 3, 3, 2, 2, 3}, 0);
    expect_all_near(csv_numbers(rows, "fk_weighted"), {149, 84.5, 194.5, 563, 566, 549, 22, 149}, 1e-9);
  }
  {
    const auto rows = run("0.5");
    expect_all_near(csv_numbers(rows, "fk"), {2.5, 1.5, 4, 2.5, 2, 1.5, 1.5, 2.5}, 0);
    expect_all_near(csv_numbers(rows, "fk_weighted"), {129.5, 65, 194.5, 292.5, 553.5, 278.5, 13.5, 129.5}, 1e-9);
    expect_all_near(csv_numbers(rows, "individual_risk"),
                    {0.01270648, 0, 0.006808511, 0.005665722, 0.003552522, 0, 0, 0.01270648}, 5e-9);
    const auto report = nlohmann::json::parse(read_text(dir / "r.json"));
    // The three records with f = 1.5 get risk 0 by the reference's quirk; native mode warns.
    EXPECT_NE(report["steps"][0]["warnings"].dump().find("3 records have a non-integer fk"), std::string::npos);
    // k = 2: records 2, 6 and 7 (f = 1.5) are below, each in a pattern of its own.
    const auto& table = report["steps"][0]["results"]["k_anonymity"];
    EXPECT_EQ(table[0], (nlohmann::json{{"k", 2}, {"records_below_k", 3}, {"classes_below_k", 3}}));
  }
}

}  // namespace
}  // namespace sdc::testing
