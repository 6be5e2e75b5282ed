// `sdc risk --suda2`: the SUDA2 oracle of docs/methods risk.md §11 through the command, its options
// (weights, maximum size, contributions, DIS fraction) and its bad-option errors.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "tests/support/expectations.h"
#include "tests/support/risk_runs.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// risk.md §11 "E SUDA2": keys (a,b,c).
constexpr const char* kOracle = "a,b,c\n1,1,1\n1,1,2\n1,2,1\n2,2,1\n2,3,1\n2,3,1\n3,3,2\n";

class Suda2Oracle : public ::testing::Test {
 protected:
  void SetUp() override { import("o", kOracle); }

  void import(const std::string& name, const std::string& csv) {
    write_text(dir_ / (name + ".csv"), csv);
    const auto imported = run_sdc({"import", (dir_ / (name + ".csv")).string(), "-o", (dir_ / (name + ".h5")).string(),
                                   "--type", "a=categorical", "--type", "b=categorical", "--type", "c=categorical"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }

  /// Runs sdc risk --suda2 with `flags` on `input`; returns the output's rows and the step's results.
  std::pair<std::vector<std::vector<std::string>>, nlohmann::json> suda2(const std::vector<std::string>& flags,
                                                                         const std::string& input = "o") {
    std::vector<std::string> args{
        "risk",    "-i",       (dir_ / (input + ".h5")).string(), "-o", (dir_ / "r.h5").string(), "--keys", "a,b,c",
        "--suda2", "--report", (dir_ / "r.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_and_read_back(args, dir_ / "r.h5", dir_ / "r.json");
  }

  /// A run that must fail with a usage error naming `fragment` and leave no output.
  void expect_usage_error(const std::vector<std::string>& flags, const std::string& fragment) {
    std::vector<std::string> args{"risk",   "-i",   (dir_ / "o.h5").string(), "-o", (dir_ / "bad.h5").string(),
                                  "--keys", "a,b,c"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "bad.h5"));
    for (const auto& entry : dir_.entries()) EXPECT_EQ(entry.find("bad"), std::string::npos) << entry;
  }

  TempDir dir_;
};

TEST_F(Suda2Oracle, GivesTheScoresAndDisScoresOfTheOracle) {
  const auto [rows, results] = suda2({});
  expect_all_near(csv_numbers(rows, "suda_score"), {1, 2, 1, 1, 0, 0, 3}, 0);
  expect_all_near(csv_numbers(rows, "dis_score"), {0.01822, 0.04226, 0.01822, 0.01822, 0, 0, 0.06826}, 5e-6);
  const auto& suda = results["suda2"];
  EXPECT_EQ(suda["max_size"], 3);
  EXPECT_EQ(suda["dis_fraction"], 0.01);
  EXPECT_EQ(suda["weights"], "elliot");
  EXPECT_EQ(suda["U"], 5);
  EXPECT_EQ(suda["D"], 2);
  EXPECT_EQ(suda["msus"], 7);
  EXPECT_EQ(suda["msus_by_size"],
            (nlohmann::json{{{"size", 1}, {"msus", 1}}, {{"size", 2}, {"msus", 6}}, {{"size", 3}, {"msus", 0}}}));
  EXPECT_EQ(suda["records_with_msu"], 5);
  EXPECT_EQ(suda["score_sum"], 8.0);
  EXPECT_EQ(suda["score_max"], 3.0);
  EXPECT_NEAR(suda["dis_max"].get<double>(), 0.06826, 5e-6);
  EXPECT_FALSE(suda.contains("contributions"));
}

TEST_F(Suda2Oracle, GivesTheContributionsOfEveryKeyAndLevel) {
  // Record 7 has MSUs {a} (weight 2) and {b,c} (1); key totals a 5, b 5, c 4 of a score total 8.
  // Every level is shown (--report-min-count 1): the oracle's levels are carried by one or two records.
  const auto [rows, results] = suda2({"--suda2-contributions", "--report-min-count", "1"});
  const auto& contributions = results["suda2"]["contributions"];
  ASSERT_EQ(contributions.size(), 3U);
  EXPECT_EQ(contributions[0]["variable"], "a");
  EXPECT_EQ(contributions[0]["percent"], 62.5);
  EXPECT_EQ(contributions[1]["percent"], 62.5);
  EXPECT_EQ(contributions[2]["variable"], "c");
  EXPECT_EQ(contributions[2]["percent"], 50.0);
  EXPECT_EQ(contributions[0]["levels"], (nlohmann::json{{{"level", "1"}, {"percent", 40.0}},
                                                        {{"level", "2"}, {"percent", 20.0}},
                                                        {{"level", "3"}, {"percent", 40.0}}}));
  EXPECT_EQ(contributions[2]["levels"],
            (nlohmann::json{{{"level", "1"}, {"percent", 25.0}}, {{"level", "2"}, {"percent", 75.0}}}));
  expect_all_near(csv_numbers(rows, "suda_score"), {1, 2, 1, 1, 0, 0, 3}, 0);
}

TEST_F(Suda2Oracle, NamesNoLevelThatFewerRecordsThanTheReportMinimumCarry) {
  // a = 3 and c = 2 are carried by one and two records: with the default --report-min-count 3 the
  // report counts them instead of naming them.
  const auto [rows, results] = suda2({"--suda2-contributions"});
  const auto& contributions = results["suda2"]["contributions"];
  ASSERT_EQ(contributions.size(), 3U);
  EXPECT_EQ(contributions[0]["levels"],
            (nlohmann::json{{{"level", "1"}, {"percent", 40.0}}, {{"level", "2"}, {"percent", 20.0}}}));
  EXPECT_EQ(contributions[0]["levels_withheld"], 1);
  EXPECT_EQ(contributions[2]["levels"], (nlohmann::json{{{"level", "1"}, {"percent", 25.0}}}));
  EXPECT_EQ(contributions[2]["levels_withheld"], 1);
  EXPECT_EQ(contributions[0]["percent"], 62.5) << "key totals keep every level's share";
}

TEST_F(Suda2Oracle, IhsnWeightsScoreSizesByTheirShareOfSubsets) {
  // (2^(M-s) - 1) / C(M, s) with M = 3: 1, 1/3 and 0 for sizes 1, 2 and 3.
  const auto [rows, results] = suda2({"--suda2-weights", "ihsn"});
  expect_all_near(csv_numbers(rows, "suda_score"), {1.0 / 3, 2.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 4.0 / 3}, 1e-12);
  const auto dis = csv_numbers(rows, "dis_score");
  EXPECT_NEAR(dis[0], 0.0178436, 5e-8);
  EXPECT_NEAR(dis[6], 0.0931947, 5e-8);
  EXPECT_EQ(results["suda2"]["weights"], "ihsn");
}

TEST_F(Suda2Oracle, MaximumSizeOneKeepsOnlySingleKeyMsus) {
  // Only record 7 is unique on one key (a = 3): weight (3 - 1)! = 2.
  const auto [rows, results] = suda2({"--suda2-max-size", "1"});
  expect_all_near(csv_numbers(rows, "suda_score"), {0, 0, 0, 0, 0, 0, 2}, 0);
  EXPECT_EQ(results["suda2"]["max_size"], 1);
  EXPECT_EQ(results["suda2"]["msus_by_size"], (nlohmann::json{{{"size", 1}, {"msus", 1}}}));
  // U and D do not depend on the maximum size; DIS of the only scored record: A = 2^-1.25.
  EXPECT_EQ(results["suda2"]["U"], 5);
  EXPECT_GT(csv_numbers(rows, "dis_score")[6], 0.0);
}

TEST_F(Suda2Oracle, DisFractionEntersOnlyTheDisScores) {
  const auto [rows, results] = suda2({"--dis-fraction", "0.5"});
  expect_all_near(csv_numbers(rows, "suda_score"), {1, 2, 1, 1, 0, 0, 3}, 0);
  // Dis = U phi / (U phi + D (1 - phi)) = 5/7; U/Dis - U = 2; A = 3 + 2^-1.25 + 3^-1.25.
  const double a = 3.0 + std::pow(2.0, -1.25) + std::pow(3.0, -1.25);
  const auto dis = csv_numbers(rows, "dis_score");
  EXPECT_NEAR(dis[0], 1.0 / (1.0 + 2.0 / a), 1e-12);
  EXPECT_NEAR(dis[6], 1.0 / (1.0 + 2.0 / (std::pow(3.0, 1.25) * a)), 1e-12);
  EXPECT_EQ(results["suda2"]["dis_fraction"], 0.5);
}

TEST_F(Suda2Oracle, AMissingKeyValueNeverFormsAnMsu) {
  // Record 7's a missing: it keeps only {b,c}; missing is a value of its own for U and D.
  import("m", "a,b,c\n1,1,1\n1,1,2\n1,2,1\n2,2,1\n2,3,1\n2,3,1\n,3,2\n");
  const auto [rows, results] = suda2({"--missing", "category"}, "m");
  expect_all_near(csv_numbers(rows, "suda_score"), {1, 2, 1, 1, 0, 0, 1}, 0);
  expect_all_near(csv_numbers(rows, "dis_score"), {0.0218380, 0.0504219, 0.0218380, 0.0218380, 0, 0, 0.0218380}, 5e-8);
  EXPECT_EQ(results["suda2"]["U"], 5);
}

TEST_F(Suda2Oracle, WithoutTheFlagAddsNoColumnsAndNoResults) {
  const auto result = run_sdc({"risk", "-i", (dir_ / "o.h5").string(), "-o", (dir_ / "r.h5").string(), "--keys",
                               "a,b,c", "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(read_text(dir_ / "r.json"));
  EXPECT_FALSE(report["steps"][0]["results"].contains("suda2"));
  ASSERT_EQ(run_sdc({"export", (dir_ / "r.h5").string(), "-o", (dir_ / "r.csv").string()}).exit_code, 0);
  const auto header = read_csv_fields(dir_ / "r.csv").at(0);
  EXPECT_EQ(std::find(header.begin(), header.end(), "suda_score"), header.end());
}

TEST_F(Suda2Oracle, RejectsBadOptionsNamingTheFlag) {
  expect_usage_error({"--suda2", "--suda2-max-size", "4"}, "--suda2-max-size");
  expect_usage_error({"--suda2", "--suda2-max-size", "0"}, "--suda2-max-size");
  expect_usage_error({"--suda2", "--dis-fraction", "0"}, "--dis-fraction");
  expect_usage_error({"--suda2", "--dis-fraction", "1.5"}, "--dis-fraction");
  expect_usage_error({"--suda2", "--suda2-weights", "uniform"}, "--suda2-weights");
  expect_usage_error({"--suda2-max-size", "2"}, "--suda2");
  expect_usage_error({"--suda2-contributions"}, "--suda2");
}

}  // namespace
}  // namespace sdc::testing
