// `sdc utility` as a user runs it: the worked continuous example of the methods (the Domingo-Ferrer &
// Torra battery and sdcMicro's IL1, IL1s and eigen) read from the report, and a missing value in the
// masked file refused with its variable and row; the categorical oracles (CTBIL, EBIL, PRIL, Cramér's
// V) read from the report of the command and of a job step, a recoding matched by label, and the
// categorical misuses refused with nothing written.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class AUtility : public ::testing::Test {
 protected:
  void SetUp() override {
    import("original", "a,b\n1,2\n2,4\n3,6\n4,9\n");
    import("masked", "a,b\n1.5,3\n1.5,3\n3.5,7.5\n3.5,7.5\n");
  }
  void import(const std::string& name, const std::string& csv) {
    write_text(dir_ / (name + ".csv"), csv);
    const auto result = run_sdc({"import", (dir_ / (name + ".csv")).string(), "-o", (dir_ / (name + ".h5")).string(),
                                 "--type", "a=continuous", "--type", "b=continuous"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  ProcessResult utility(const std::string& masked) {
    return run_sdc({"utility", "-i", (dir_ / "original.h5").string(), "--masked", (dir_ / masked).string(),
                    "--variables", "a,b", "--report", (dir_ / "r.json").string()});
  }
  TempDir dir_;
};

TEST_F(AUtility, ReproducesTheWorkedContinuousExample) {
  const auto result = utility("masked.h5");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto step = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0];
  const auto& results = step["results"];
  const auto& battery = results["battery"];
  std::printf("values %s\ncovariances %s\ncorrelations %s\nil1 %s, il1s_sum %s, eigen %s, il_correl %s\n",
              battery["values"].dump().c_str(), battery["covariances"].dump().c_str(),
              battery["correlations"].dump().c_str(), results["il1"].dump().c_str(), results["il1s_sum"].dump().c_str(),
              results["eigen"].dump().c_str(), results["il_correl"].dump().c_str());
  EXPECT_EQ(results["records"], 4);
  // X - X': the printed digits.
  EXPECT_NEAR(battery["values"]["mean_square"].get<double>(), 0.9375, 1e-12);
  EXPECT_NEAR(battery["values"]["mean_absolute"].get<double>(), 0.875, 1e-12);
  EXPECT_NEAR(battery["values"]["mean_variation"].get<double>(), 0.2760417, 5e-8);
  EXPECT_EQ(battery["values"]["entries"], 8);
  // V - V' (divisor n - 1).
  EXPECT_NEAR(battery["covariances"]["mean_square"].get<double>(), 1.833333, 5e-7);
  EXPECT_NEAR(battery["covariances"]["mean_absolute"].get<double>(), 1.111111, 5e-7);
  EXPECT_NEAR(battery["covariances"]["mean_variation"].get<double>(), 0.2201273, 5e-8);
  // R - R': r = 0.9943767 against 1.
  EXPECT_NEAR(battery["correlations"]["mean_square"].get<double>(), 3.16214e-5, 5e-11);
  EXPECT_NEAR(battery["correlations"]["mean_absolute"].get<double>(), 0.00562329, 5e-9);
  EXPECT_NEAR(battery["correlations"]["mean_variation"].get<double>(), 0.00565509, 5e-9);
  EXPECT_NEAR(battery["means"]["mean_square"].get<double>(), 0.0, 1e-15);
  // sdcMicro's measures.
  EXPECT_NEAR(results["il1"].get<double>(), 220.8333, 5e-5);
  EXPECT_NEAR(results["il1s_sum"].get<double>(), 2.279451, 5e-7);
  EXPECT_NEAR(results["il1s_mean"].get<double>(), 2.279451 / 8, 5e-7);
  EXPECT_NEAR(results["eigen"].get<double>(), 1.00282, 5e-6);
  // The masked file's two variables are collinear: F - F' and IL_correl are not defined, with a warning.
  EXPECT_EQ(results["components"]["masked_correlation_singular"], true);
  EXPECT_EQ(battery["score_coefficients"]["defined"], false);
  EXPECT_TRUE(results["il_correl"].is_null());
  EXPECT_FALSE(step["warnings"].empty());
}

TEST_F(AUtility, NamesTheVariableAndRowOfAMissingMaskedValue) {
  import("gap", "a,b\n1.5,3\n1.5,3\n3.5,\n3.5,7.5\n");
  const auto before = dir_.entries();
  const auto result = utility("gap.h5");
  std::printf("exit %d: %s", result.exit_code, result.err.c_str());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("variable 'b'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("row id 2"), std::string::npos) << result.err;
  EXPECT_EQ(dir_.entries(), before);
}

class ACategoricalUtility : public ::testing::Test {
 protected:
  /// Imports `csv` as NAME.h5, types inferred (integer and text labels are categorical).
  void import(const std::string& name, const std::string& csv) {
    write_text(dir_ / (name + ".csv"), csv);
    const auto result = run_sdc({"import", (dir_ / (name + ".csv")).string(), "-o", (dir_ / (name + ".h5")).string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  /// `sdc utility` of original.h5 against MASKED with `flags`, the report in r.json.
  ProcessResult utility(const std::string& masked, const std::vector<std::string>& flags) {
    std::vector<std::string> args{"utility",
                                  "-i",
                                  (dir_ / "original.h5").string(),
                                  "--masked",
                                  (dir_ / masked).string(),
                                  "--report",
                                  (dir_ / "r.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_sdc(args);
  }
  nlohmann::json results() const { return nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"]; }
  /// 200 records: e goes 1 -> 1 99 times, 1 -> 2 11 times, 2 -> 1 9 times, 2 -> 2 81 times (the
  /// expected transitions of utility.md's EBIL oracle); r and t, unchanged, make the table
  /// [[20, 40], [60, 80]]; income is continuous.
  void import_transitions() {
    std::ostringstream original;
    std::ostringstream masked;
    original << "e,r,t,income\n";
    masked << "e,r,t,income\n";
    const int from[] = {1, 1, 2, 2};
    const int to[] = {1, 2, 1, 2};
    const int times[] = {99, 11, 9, 81};
    int row = 0;
    for (int pair = 0; pair < 4; ++pair) {
      for (int i = 0; i < times[pair]; ++i, ++row) {
        // Rows 0..59 in r = a (20 of t = 1), rows 60..199 in r = b (60 of t = 1).
        const char* r = row < 60 ? "a" : "b";
        const int t = row < 60 ? (row < 20 ? 1 : 2) : (row < 120 ? 1 : 2);
        original << from[pair] << ',' << r << ',' << t << ',' << row << ".5\n";
        masked << to[pair] << ',' << r << ',' << t << ',' << row << ".5\n";
      }
    }
    import("original", original.str());
    import("masked", masked.str());
  }
  TempDir dir_;
};

// utility.md §9, "E CTBIL": V = (A, A, B) -> (A, missing, B).
TEST_F(ACategoricalUtility, ReproducesTheCtbilOracleOfOneSuppression) {
  import("original", "v\nA\nA\nB\n");
  import("masked", "v\nA\n\nB\n");
  const auto result = utility("masked.h5", {"--categorical", "v", "--ctbil-order", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto r = results();
  const auto& ctbil = r["categorical"]["ctbil"];
  std::printf("ctbil %s\n", ctbil.dump().c_str());
  EXPECT_EQ(ctbil["value"], 2);
  EXPECT_EQ(ctbil["cells"], 3);
  EXPECT_NEAR(ctbil["normalised"].get<double>(), 2.0 / 3.0, 1e-15);
  EXPECT_EQ(r["records"], 3);
  EXPECT_FALSE(r.contains("sse")) << "no continuous variables, no continuous measures";
  // Counts of one or two records read "< 3".
  const auto& v = r["categorical"]["variables"][0];
  EXPECT_EQ(v["records_changed"], "< 3");
  EXPECT_EQ(v["missing_masked"], "< 3");
  EXPECT_EQ(v["missing_original"], 0);
  EXPECT_TRUE(r["categorical"]["table"].is_null());
}

// utility.md §9, "E EBIL" from the expected transitions, and Cramér's V of [[10, 20], [30, 40]] (here
// doubled: V does not change).
TEST_F(ACategoricalUtility, ReproducesTheEbilAndCramersVOraclesWithTheContinuousMeasures) {
  import_transitions();
  const auto result = utility("masked.h5", {"--variables", "income", "--categorical", "e,r", "--ordinal", "e",
                                            "--table-rows", "r", "--table-columns", "t"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto r = results();
  const auto& e = r["categorical"]["variables"][0];
  std::printf("e: %s\n", e.dump().c_str());
  EXPECT_EQ(e["name"], "e");
  EXPECT_EQ(e["scale"], "ordinal");
  EXPECT_NEAR(e["ebil"].get<double>(), 64.65561, 5e-6);
  EXPECT_NEAR(e["information_loss"].get<double>(), 64.65561, 5e-6);
  EXPECT_EQ(e["records_changed"], 20);
  EXPECT_DOUBLE_EQ(e["mean_distance"].get<double>(), 0.1);
  EXPECT_EQ(e["transitions"], nlohmann::json::parse("[[0, 0, 0], [0, 99, 11], [0, 9, 81]]"));
  const auto& table = r["categorical"]["table"];
  std::printf("table: %s\n", table.dump().c_str());
  EXPECT_NEAR(table["cramers_v_original"].get<double>(), 0.08909, 5e-6);
  EXPECT_NEAR(table["cramers_v_masked"].get<double>(), 0.08909, 5e-6);
  EXPECT_EQ(table["rcv_percent"], 0.0);
  EXPECT_EQ(table["hd"], 0.0);
  EXPECT_EQ(table["rows_compared"], 2);
  // An unchanged table: no total moves, L² is the same, no cell differs; no target column, no BVR.
  EXPECT_EQ(table["rat"], 0.0);
  EXPECT_EQ(table["at"], 0.0);
  EXPECT_EQ(table["lr"], 1.0);
  EXPECT_GT(table["l2_original"].get<double>(), 0.0);
  EXPECT_EQ(table["wilcoxon"]["cells"], 0);
  EXPECT_TRUE(table["wilcoxon"]["p_value"].is_null());
  EXPECT_TRUE(table["bvr"].is_null());
  EXPECT_TRUE(table["bv_rows_original"].is_null());
  // CTBIL of order 2 over e and r: e's one-way table, r's, and e x r.
  EXPECT_EQ(r["categorical"]["ctbil"]["tables"], 3);
  // The continuous part is there too.
  EXPECT_EQ(r["records"], 200);
  EXPECT_EQ(r["sse"], 0.0);

  // The printed PRIL, -ln P(V' = j | V = i): 180 records at -ln 0.9 and 20 at -ln 0.1.
  const auto printed = utility("masked.h5", {"--categorical", "e", "--pril-form", "printed"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  const auto p = results()["categorical"]["variables"][0];
  EXPECT_NEAR(p["information_loss"].get<double>(), -180 * std::log(0.9) - 20 * std::log(0.1), 1e-10);
  EXPECT_NEAR(p["ebil"].get<double>(), 64.65561, 5e-6);
}

// utility.md §6's RAT, AT, BVR, LR and the signed-rank test from files: the table of
// categorical_loss_test.cpp's GivesTheShlomoYoungTotalsVarianceAndLikelihoodRatiosOfATable, r × t,
// original [[6, 4], [3, 7], [5, 5]] and masked [[5, 4], [4, 6], [5, 6]]: one record moves from (a, x)
// to (b, x), one from (b, y) to (c, y). The grids' missing row and column hold no record and change
// nothing. RAT = 1/10 + 0 + 1/10 = 0.2, AT = 2/3; BVR of column x = 0.0062463/0.0233333 = 0.267699;
// L² = 1.914936 and 0.471654, LR = 0.246303; the cell differences −1, +1, −1, +1 all tie at rank
// 2.5: W+ = 5 = n(n + 1)/4, z = 0, p = 1.
TEST_F(ACategoricalUtility, ReportsTheTotalsBetweenRowVarianceLikelihoodRatioAndBiasTest) {
  struct Records {
    const char* original;
    const char* masked;
    int times;
  };
  const Records records[] = {{"a,x", "a,x", 5}, {"a,x", "b,x", 1}, {"a,y", "a,y", 4}, {"b,x", "b,x", 3},
                             {"b,y", "b,y", 6}, {"b,y", "c,y", 1}, {"c,x", "c,x", 5}, {"c,y", "c,y", 5}};
  std::string original = "r,t\n";
  std::string masked = "r,t\n";
  for (const Records& group : records) {
    for (int i = 0; i < group.times; ++i) {
      original += std::string(group.original) + "\n";
      masked += std::string(group.masked) + "\n";
    }
  }
  import("original", original);
  import("masked", masked);
  const auto result = utility("masked.h5", {"--table-rows", "r", "--table-columns", "t", "--table-target-column", "x"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto table = results()["categorical"]["table"];
  std::printf("table: %s\n", table.dump().c_str());
  EXPECT_EQ(table["rows_compared"], 3);
  EXPECT_NEAR(table["rat"].get<double>(), 0.2, 1e-15);
  EXPECT_EQ(table["rat_zero_rows_skipped"], 0);
  EXPECT_NEAR(table["at"].get<double>(), 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(table["bv_original"].get<double>(), 7.0 / 300.0, 1e-15);
  EXPECT_NEAR(table["bvr"].get<double>(), 0.267699, 5e-7);
  EXPECT_EQ(table["bv_rows_original"], 3);
  EXPECT_EQ(table["bv_rows_masked"], 3);
  EXPECT_NEAR(table["l2_original"].get<double>(), 1.914936, 5e-7);
  EXPECT_NEAR(table["l2_masked"].get<double>(), 0.471654, 5e-7);
  EXPECT_NEAR(table["lr"].get<double>(), 0.246303, 5e-7);
  EXPECT_EQ(table["wilcoxon"]["cells"], 4);
  EXPECT_EQ(table["wilcoxon"]["w_plus"], 5.0);
  EXPECT_EQ(table["wilcoxon"]["z"], 0.0);
  EXPECT_EQ(table["wilcoxon"]["p_value"], 1.0);
  EXPECT_EQ(nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["parameters"]["table-target-column"], "x");

  // Column y: P^k = 0.4, 0.7, 0.5 against 0.444444, 0.6, 0.545455 — the same gaps as column x, the same BVR.
  ASSERT_EQ(utility("masked.h5", {"--table-rows", "r", "--table-columns", "t", "--table-target-column", "y"}).exit_code,
            0);
  EXPECT_NEAR(results()["categorical"]["table"]["bvr"].get<double>(), 0.267699, 5e-7);

  // A label neither file has (exit 3), the wrong number of labels, a target without a table (exit 2).
  std::filesystem::remove(dir_ / "r.json");
  const auto before = dir_.entries();
  const auto unknown =
      utility("masked.h5", {"--table-rows", "r", "--table-columns", "t", "--table-target-column", "z"});
  std::printf("exit %d: %s", unknown.exit_code, unknown.err.c_str());
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("--table-target-column: label 'z' is not a level of variable 't'"), std::string::npos)
      << unknown.err;
  const auto two = utility("masked.h5", {"--table-rows", "r", "--table-columns", "t", "--table-target-column", "x/y"});
  std::printf("exit %d: %s", two.exit_code, two.err.c_str());
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("2 labels for 1 --table-columns variables"), std::string::npos) << two.err;
  const auto alone = utility("masked.h5", {"--categorical", "r", "--table-target-column", "x"});
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_EQ(dir_.entries(), before);
}

// utility.md §3's Albany example as files: towns recoded to their state, matched by label.
TEST_F(ACategoricalUtility, MatchesARecodingByLabelAndRefusesToRankItsNewCategory) {
  std::string original = "town\n";
  std::string masked = "town\n";
  for (int i = 0; i < 40; ++i) {
    original += i < 10 ? "Albany\n" : "New York City\n";
    masked += "NY\n";
  }
  import("original", original);
  import("masked", masked);
  const auto result = utility("masked.h5", {"--categorical", "town"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto town = results()["categorical"]["variables"][0];
  EXPECT_EQ(town["categories"], 2);
  EXPECT_EQ(town["masked_only_categories"], nlohmann::json::parse(R"(["NY"])"));
  EXPECT_EQ(town["records_changed"], 40);
  EXPECT_NEAR(town["information_loss"].get<double>(), -10 * std::log(0.25) - 30 * std::log(0.75), 1e-12);

  std::filesystem::remove(dir_ / "r.json");
  const auto ordinal = utility("masked.h5", {"--categorical", "town", "--ordinal", "town"});
  std::printf("exit %d: %s", ordinal.exit_code, ordinal.err.c_str());
  EXPECT_EQ(ordinal.exit_code, 3);
  EXPECT_NE(ordinal.err.find("--ordinal: variable 'town'"), std::string::npos) << ordinal.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "r.json"));
}

TEST_F(ACategoricalUtility, RunsAsAJobStepWithTheCommandsResults) {
  import_transitions();
  const std::vector<std::string> flags{
      "--categorical", "e,r", "--ordinal",    "e", "--ordinal-distance", "printed", "--pril-form",           "printed",
      "--ctbil-order", "2",   "--table-rows", "r", "--table-columns",    "t",       "--table-target-column", "2"};
  const auto direct = utility("masked.h5", flags);
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  const auto expected = results();
  write_text(dir_ / "job.yaml",
             "version: 1\n"
             "output_dir: " +
                 (dir_ / "out").string() +
                 "\n"
                 "steps:\n"
                 "  - method: utility\n"
                 "    masked: " +
                 (dir_ / "masked.h5").string() +
                 "\n"
                 "    categorical: [e, r]\n"
                 "    ordinal: [e]\n"
                 "    ordinal-distance: printed\n"
                 "    pril-form: printed\n"
                 "    ctbil-order: 2\n"
                 "    table-rows: [r]\n"
                 "    table-columns: [t]\n"
                 "    table-target-column: '2'\n");
  const auto job = run_sdc({"run", (dir_ / "job.yaml").string(), "--input", (dir_ / "original.h5").string(), "--report",
                            (dir_ / "job.json").string()});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(validate_report(dir_ / "job.json"), "");
  const auto step = nlohmann::json::parse(read_text(dir_ / "job.json"))["steps"][0];
  EXPECT_EQ(step["results"], expected);
  EXPECT_FALSE(expected["categorical"]["table"]["bvr"].is_null());
  EXPECT_EQ(step["parameters"]["ordinal-distance"], "printed");
  EXPECT_EQ(step["results"]["categorical"]["ordinal_distance"], "printed");
  // Printed ordinal distance on two levels: a change is 2/2 away, an unchanged record 1/2.
  EXPECT_DOUBLE_EQ(step["results"]["categorical"]["variables"][0]["mean_distance"].get<double>(),
                   (20 * 1.0 + 180 * 0.5) / 200);

  // A job names a continuous variable as categorical: found before anything runs.
  write_text(dir_ / "bad.yaml",
             "version: 1\n"
             "steps:\n"
             "  - method: utility\n"
             "    masked: " +
                 (dir_ / "masked.h5").string() +
                 "\n"
                 "    categorical: [income]\n");
  const auto bad = run_sdc({"run", (dir_ / "bad.yaml").string(), "--input", (dir_ / "original.h5").string()});
  std::printf("exit %d: %s", bad.exit_code, bad.err.c_str());
  EXPECT_EQ(bad.exit_code, 4);
  EXPECT_NE(bad.err.find("categorical: variable 'income' is continuous, expected categorical"), std::string::npos)
      << bad.err;
}

TEST_F(ACategoricalUtility, RefusesAContinuousOrUnknownVariableGivenAsCategoricalWritingNothing) {
  import_transitions();
  const auto before = dir_.entries();
  const auto continuous = utility("masked.h5", {"--categorical", "e,income"});
  std::printf("exit %d: %s", continuous.exit_code, continuous.err.c_str());
  EXPECT_EQ(continuous.exit_code, 3);
  EXPECT_NE(continuous.err.find("--categorical: variable 'income' is continuous, expected categorical"),
            std::string::npos)
      << continuous.err;
  const auto unknown = utility("masked.h5", {"--table-rows", "r", "--table-columns", "nosuch"});
  std::printf("exit %d: %s", unknown.exit_code, unknown.err.c_str());
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("--table-columns: variable 'nosuch' is not in the file"), std::string::npos)
      << unknown.err;
  EXPECT_EQ(dir_.entries(), before);
}

TEST_F(ACategoricalUtility, RefusesMisusedFlagsAsUsageErrors) {
  import_transitions();
  const auto before = dir_.entries();
  const auto nothing = utility("masked.h5", {});
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
  EXPECT_NE(nothing.err.find("nothing to compare"), std::string::npos) << nothing.err;
  const auto ordinal = utility("masked.h5", {"--categorical", "r", "--ordinal", "e"});
  EXPECT_EQ(ordinal.exit_code, 2) << ordinal.err;
  EXPECT_NE(ordinal.err.find("--ordinal: variable 'e' is not in --categorical"), std::string::npos) << ordinal.err;
  const auto half_table = utility("masked.h5", {"--table-rows", "r"});
  EXPECT_EQ(half_table.exit_code, 2) << half_table.err;
  const auto distance = utility("masked.h5", {"--categorical", "e", "--ordinal-distance", "manhattan"});
  EXPECT_EQ(distance.exit_code, 2) << distance.err;
  EXPECT_EQ(dir_.entries(), before);
}

// A variable of 4 100 categories: its cross-tabulation original x masked would have 4 101² cells, over
// the limit of 2^24 a table.
TEST_F(ACategoricalUtility, RefusesATableBeyondTheCellLimitNamingTheVariableAndItsCells) {
  std::string csv = "label\n";
  for (int i = 0; i < 4100; ++i) csv += "L" + std::to_string(100000 + i) + "\n";
  import("original", csv);
  const auto before = dir_.entries();
  const auto result = utility("original.h5", {"--categorical", "label"});
  std::printf("exit %d: %s", result.exit_code, result.err.c_str());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("'label'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("16818201 cells"), std::string::npos) << result.err;
  EXPECT_EQ(dir_.entries(), before);
}

}  // namespace
}  // namespace sdc::testing
