// `sdc recode`, `sdc suppress` and `sdc anonymize` as a user runs them (docs/recoding.md): recodings
// with their metadata, the refusals of bad input with nothing written, local suppression re-checked by
// the risk kernel, and the lattice search on the shared adult data.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// Ages 0 .. 100 → decades "0-9" .. "100-109" → "*".
std::string age_hierarchy(int oldest = 100) {
  std::string text = "level_0,level_1,level_2\n";
  for (int age = 0; age <= oldest; ++age)
    text +=
        std::to_string(age) + "," + std::to_string(age / 10 * 10) + "-" + std::to_string(age / 10 * 10 + 9) + ",*\n";
  return text;
}

class ARecodingRun : public ::testing::Test {
 protected:
  void SetUp() override {
    census_ = (dir_ / "census.h5").string();
    const auto generated =
        run_sdc({"generate", "census", "--households", "2000", "-o", census_}, {{"SDC_SEED", "20261127"}});
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    std::filesystem::create_directories(dir_ / "hierarchies");
    write_text(dir_ / "hierarchies" / "census_age.csv", age_hierarchy());
  }

  std::map<std::string, nlohmann::json> variables_of(const std::string& file) const {
    const auto info = run_sdc({"info", "--json", file});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    std::map<std::string, nlohmann::json> out;
    const auto parsed = nlohmann::json::parse(info.out);
    for (const auto& variable : parsed["variables"]) out[variable["name"].get<std::string>()] = variable;
    return out;
  }

  TempDir dir_;
  std::string census_;
};

TEST_F(ARecodingRun, RecodesByHierarchyIntervalsAndTailsAndKeepsHowInTheMetadata) {
  const auto output = (dir_ / "recoded.h5").string();
  const auto report = (dir_ / "recoded.json").string();
  const auto result = run_sdc({"recode", census_, "-o", output, "--report", report, "--levels", "age=1",
                               "--hierarchies", (dir_ / "hierarchies").string(), "--top-code", "income=150000:150000",
                               "--intervals", "expenditure=quantiles:4,savings=breaks:0/1000/10000/1e12"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto variables = variables_of(output);
  EXPECT_EQ(variables.at("age")["recoding"], "hierarchy census_age.csv level 1");
  EXPECT_EQ(variables.at("age")["hierarchy_level"], 1);
  EXPECT_EQ(variables.at("age")["levels"], 11);
  EXPECT_EQ(variables.at("income")["type"], "continuous");
  EXPECT_EQ(variables.at("expenditure")["type"], "categorical");
  EXPECT_EQ(variables.at("expenditure")["recoding"], "intervals quantiles:4");
  EXPECT_EQ(variables.at("savings")["recoding"], "intervals breaks:0/1000/10000/1e12");
  EXPECT_FALSE(variables.at("sex").contains("recoding"));

  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  std::map<std::string, nlohmann::json> by_method;
  for (const auto& entry : results["variables"])
    by_method[entry["method"].get<std::string>() + ":" + entry["name"].get<std::string>()] = entry;
  EXPECT_EQ(by_method.at("hierarchy:age")["categories_before"], 101);
  EXPECT_EQ(by_method.at("intervals:expenditure")["categories"], 4);
  EXPECT_EQ(by_method.at("intervals:expenditure")["first_closed"], true);
  EXPECT_GT(by_method.at("top-code:income")["replaced"].get<std::int64_t>(), 0);

  // The values themselves: every age in its decade, every expenditure in its quarter (about a quarter of the
  // records each), and a zero saving below the first break (missing).
  const auto original = dir_ / "census.csv";
  const auto recoded = dir_ / "recoded.csv";
  ASSERT_EQ(run_sdc({"export", census_, "-o", original.string()}).exit_code, 0);
  ASSERT_EQ(run_sdc({"export", output, "-o", recoded.string()}).exit_code, 0);
  const auto before = read_csv_fields(original);
  const auto after = read_csv_fields(recoded);
  const auto ages = csv_column(before, "age");
  const auto decades = csv_column(after, "age");
  ASSERT_EQ(ages.size(), decades.size());
  for (std::size_t r = 0; r < ages.size(); ++r) {
    const int age = std::stoi(ages[r]);
    EXPECT_EQ(decades[r], std::to_string(age / 10 * 10) + "-" + std::to_string(age / 10 * 10 + 9)) << r;
  }
  std::map<std::string, std::size_t> quarters;
  for (const auto& label : csv_column(after, "expenditure")) ++quarters[label];
  ASSERT_EQ(quarters.size(), 4U);
  for (const auto& [label, count] : quarters) EXPECT_GT(count, ages.size() / 8) << label;
  for (const double income : csv_numbers(after, "income")) EXPECT_LE(income, 150000.0);
  const auto savings = csv_numbers(before, "savings");
  const auto coded = csv_column(after, "savings");
  for (std::size_t r = 0; r < savings.size(); ++r)
    if (savings[r] == 0.0) {
      EXPECT_EQ(coded[r], "") << r;
    }
}

TEST_F(ARecodingRun, RefusesBadHierarchiesBreaksAndLimitsAndWritesNothing) {
  std::filesystem::create_directories(dir_ / "h");
  const auto output = dir_ / "out.h5";
  const auto refuses = [&](const std::vector<std::string>& args, int code, const std::string& message) {
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, code) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output));
  };
  // A hierarchy without the ages above 60, which the census has.
  write_text(dir_ / "h" / "short_age.csv", age_hierarchy(60));
  refuses({"recode", census_, "-o", output.string(), "--levels", "age=1", "--hierarchy",
           "age=" + (dir_ / "h" / "short_age.csv").string()},
          3, "value(s) in the data are no leaf of the hierarchy short_age.csv: '61'");
  // Levels that do not nest: 10 and 11 have different parents at level 2 though they share level 1.
  write_text(dir_ / "h" / "nest_age.csv", "level_0,level_1,level_2\n10,10-19,young\n11,10-19,old\n");
  refuses({"recode", census_, "-o", output.string(), "--levels", "age=1", "--hierarchy",
           "age=" + (dir_ / "h" / "nest_age.csv").string()},
          3, "nest_age.csv");
  // A ragged file.
  write_text(dir_ / "h" / "ragged_age.csv", "level_0,level_1,level_2\n10,10-19,*\n11,10-19\n");
  refuses({"recode", census_, "-o", output.string(), "--levels", "age=1", "--hierarchy",
           "age=" + (dir_ / "h" / "ragged_age.csv").string()},
          3, "ragged_age.csv");
  // Breaks that overlap (not increasing) or leave a gap cannot be written as B0/B1/...: a repeated or
  // decreasing break is refused.
  refuses({"recode", census_, "-o", output.string(), "--intervals", "income=breaks:0/1000/500"}, 4,
          "is not above break");
  refuses({"recode", census_, "-o", output.string(), "--intervals", "income=thirds:3"}, 2, "unknown rule");
  refuses({"recode", census_, "-o", output.string(), "--intervals", "sex=equidistant:3"}, 3, "no number");
  refuses({"recode", census_, "-o", output.string(), "--levels", "age=5", "--hierarchy",
           "age=" + (dir_ / "hierarchies" / "census_age.csv").string()},
          4, "beyond its hierarchy");
  refuses({"anonymize", census_, "-o", output.string(), "--keys", "age", "--hierarchies",
           (dir_ / "hierarchies").string(), "--max-suppression-percent", "120"},
          2, "--max-suppression-percent");
  refuses({"anonymize", census_, "-o", output.string(), "--keys", "age,sex", "--hierarchies",
           (dir_ / "hierarchies").string()},
          2, "no hierarchy for variable 'sex'");
  refuses({"suppress", census_, "-o", output.string(), "--keys", "age,income"}, 3, "income");
  refuses({"suppress", census_, "-o", output.string(), "--keys", "age,sex", "--importance", "age=1"}, 2,
          "'sex' has none");
}

TEST_F(ARecodingRun, SuppressesKeyValuesUntilNoRecordIsBelowK) {
  const auto output = (dir_ / "suppressed.h5").string();
  const auto report = (dir_ / "suppressed.json").string();
  const auto result = run_sdc({"suppress", census_, "-o", output, "--report", report, "--keys",
                               "sex,age,marstat,citizenship", "--k-anonymity", "3"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  EXPECT_GT(results["violations_before"].get<std::int64_t>(), 0);
  EXPECT_EQ(results["violations_left"], 0);
  EXPECT_EQ(results["impossible"], nullptr);
  // The risk step agrees: no record below 3 with missing values as wildcards.
  const auto risk_report = (dir_ / "risk.json").string();
  const auto risk = run_sdc({"risk", output, "-o", (dir_ / "risk.h5").string(), "--report", risk_report, "--keys",
                             "sex,age,marstat,citizenship", "--k-anonymity", "3", "--missing", "wildcard"});
  ASSERT_EQ(risk.exit_code, 0) << risk.err;
  const auto risk_results = nlohmann::json::parse(read_text(risk_report))["steps"][0]["results"];
  bool checked = false;
  for (const auto& entry : risk_results["k_anonymity"]) {
    if (entry["k"] != 3) continue;
    EXPECT_EQ(entry["records_below_k"], 0) << entry;
    checked = true;
  }
  EXPECT_TRUE(checked) << risk_results["k_anonymity"];
  // Per key, the new suppressions are the missing values the output holds.
  const auto variables = variables_of(output);
  std::int64_t total = 0;
  for (const auto& key : results["keys"]) {
    EXPECT_EQ(variables.at(key["name"])["missing"], key["missing_after"]) << key["name"];
    EXPECT_EQ(key["suppressed"], key["missing_after"]) << key["name"];
    total += key["suppressed"].get<std::int64_t>();
  }
  EXPECT_EQ(results["suppressed"], total);
  // The reference's scan of every record suppresses the same values.
  const auto scanned = (dir_ / "scanned.h5").string();
  const auto compat = run_sdc({"suppress", census_, "-o", scanned, "--keys", "sex,age,marstat,citizenship",
                               "--k-anonymity", "3", "--mode", "compat"});
  ASSERT_EQ(compat.exit_code, 0) << compat.err;
  EXPECT_EQ(digest_of(scanned), digest_of(output));
  // Age has the most levels: it is suppressed first.
  EXPECT_GT(results["keys"][1]["suppressed"].get<std::int64_t>(), 0);
}

// The issue's adult check: 8 keys with the shared hierarchies, k = 5, at most 2 % suppressed: nothing
// left below k, the chosen node in the report with its loss, the outliers within the limit.
TEST(AnAnonymizeRun, ReachesFiveAnonymityOnAdultWithinTwoPercentSuppression) {
  const auto adult = shared_data("adult.csv.gz");
  if (adult.empty()) GTEST_SKIP() << "../shared/data is absent";
  TempDir dir;
  const auto data = (dir / "adult.h5").string();
  ASSERT_EQ(run_sdc({"import", adult.string(), "-o", data}).exit_code, 0);
  const auto output = (dir / "anonymous.h5").string();
  const auto report = (dir / "anonymous.json").string();
  const auto result =
      run_sdc({"anonymize", data, "-o", output, "--report", report, "--keys",
               "sex,age,race,marital-status,education,native-country,workclass,occupation", "--hierarchies",
               adult.parent_path().string(), "--k-anonymity", "5", "--max-suppression-percent", "2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  EXPECT_EQ(results["patterns"], 18109);
  EXPECT_EQ(results["lattice"]["nodes"], 6480);
  const auto& chosen = results["chosen"];
  EXPECT_EQ(chosen["levels"], nlohmann::json::parse(R"({"sex": 0, "age": 3, "race": 0, "marital-status": 1,
      "education": 2, "native-country": 1, "workclass": 1, "occupation": 2})"));
  EXPECT_NEAR(chosen["loss"].get<double>(), 0.33144040, 1e-8);
  EXPECT_EQ(chosen["outliers"], 552);
  EXPECT_LE(chosen["outliers"].get<std::int64_t>(), 603);
  EXPECT_EQ(results["suppression"]["records_suppressed"], 552);
  EXPECT_EQ(results["suppression"]["violations_left"], 0);
  EXPECT_EQ(results["frontier"][0]["levels"], chosen["levels"]);
  EXPECT_GT(results["frontier"].size(), 1U);
  const auto info = run_sdc({"info", "--json", output});
  ASSERT_EQ(info.exit_code, 0);
  const auto described = nlohmann::json::parse(info.out);
  for (const auto& variable : described["variables"]) {
    if (variable["name"] == "salary-class") continue;
    EXPECT_EQ(variable["missing"], 552) << variable["name"];
    EXPECT_EQ(variable["hierarchy_level"], chosen["levels"][variable["name"].get<std::string>()]) << variable["name"];
  }
}

}  // namespace
}  // namespace sdc::testing
