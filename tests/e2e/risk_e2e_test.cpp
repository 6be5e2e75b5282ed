// `sdc risk` as a user runs it: the francdat oracle, missing keys, unsorted households, resume.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

TEST(SdcRisk, ReproducesTheFrancdatOracle) {
  const auto francdat = shared_data("francdat.csv");
  if (francdat.empty()) GTEST_SKIP() << "../shared/data is absent";
  TempDir dir;
  ASSERT_EQ(run_sdc({"import", francdat.string(), "-o", (dir / "f.h5").string(), "--role", "weight=w"}).exit_code, 0);
  const auto result =
      run_sdc({"risk", "-i", (dir / "f.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "Key1,Key2,Key3,Key4",
               "--weight", "w", "--k-anonymity", "2", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(run_sdc({"export", (dir / "r.h5").string(), "-o", (dir / "r.csv").string()}).exit_code, 0);
  const auto rows = read_csv_fields(dir / "r.csv");
  // risk.md, oracle "E francdat".
  EXPECT_EQ(csv_column(rows, "fk"), (std::vector<std::string>{"2", "2", "2", "1", "1", "1", "1", "2"}));
  EXPECT_EQ(csv_column(rows, "fk_weighted"),
            (std::vector<std::string>{"110", "84.5", "84.5", "17", "541", "8", "5", "110"}));
  EXPECT_EQ(csv_column(rows, "violates_k_anonymity"),
            (std::vector<std::string>{"false", "false", "false", "true", "true", "true", "true", "false"}));
  EXPECT_EQ(csv_column(rows, "Num1").size(), 8U) << "the input's variables are kept";

  EXPECT_EQ(validate_report(dir / "r.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir / "r.json"));
  const auto& results = report["steps"][0]["results"];
  EXPECT_EQ(results["equivalence_classes"], 6);
  EXPECT_EQ(results["sample_uniques"], 4);
  EXPECT_EQ(results["records_below_k"], 4);
  EXPECT_EQ(report["inputs"][0]["rows"], 8);
}

TEST(SdcRisk, StoresItsComputedColumnsWithTheDerivedFiltersAndTheSameContent) {
  TempDir dir;
  const auto census = dir / "census.h5";
  ASSERT_EQ(
      run_sdc({"generate", "census", "--households", "3000", "-o", census.string()}, {{"SDC_SEED", "7"}}).exit_code, 0);
  const auto risk = [&](const std::string& output, std::vector<std::string> global) {
    global.insert(global.end(), {"risk", "-i", census.string(), "-o", (dir / output).string(), "--keys",
                                 "sex,age,marstat,lau2", "--weight", "weight", "--sensitive", "occupation"});
    return run_sdc(global);
  };
  ASSERT_EQ(risk("shuffled.h5", {}).exit_code, 0);
  ASSERT_EQ(risk("deflated.h5", {"--derived-filters", "shuffle,deflate=1"}).exit_code, 0);
  EXPECT_EQ(digest_of(dir / "shuffled.h5"), digest_of(dir / "deflated.h5"));
  // Shuffle alone leaves the nine computed columns' bytes uncompressed.
  EXPECT_GT(std::filesystem::file_size(dir / "shuffled.h5"), std::filesystem::file_size(dir / "deflated.h5") + 100000);

  const auto refused = risk("bad.h5", {"--derived-filters", "lz4"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("lz4"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.h5"));
}

TEST(SdcRisk, CarriesTheVariablesItDoesNotUseUnreadAndWritesTheSameFileAndReport) {
  TempDir dir;
  const auto census = dir / "census.h5";
  // About 150 000 persons: two chunks of 131 072 rows, so that the variables have stored digests.
  ASSERT_EQ(
      run_sdc({"generate", "census", "--households", "50000", "-o", census.string()}, {{"SDC_SEED", "7"}}).exit_code,
      0);
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--household", "hid", "--sensitive", "occupation"}}) {
    const auto risk = [&](const std::string& name, const std::vector<std::string>& filters) {
      std::vector<std::string> args{"--log-level",
                                    "debug",
                                    "risk",
                                    "-i",
                                    census.string(),
                                    "-o",
                                    (dir / (name + ".h5")).string(),
                                    "--keys",
                                    "sex,age,marstat,lau2",
                                    "--weight",
                                    "weight",
                                    "--report",
                                    (dir / (name + ".json")).string()};
      args.insert(args.end(), extra.begin(), extra.end());
      args.insert(args.end(), filters.begin(), filters.end());
      return run_sdc(args);
    };
    const auto carried = risk("carried", {});
    ASSERT_EQ(carried.exit_code, 0) << carried.err;
    EXPECT_NE(carried.err.find("variables carried unread"), std::string::npos) << carried.err;
    // Other filters than the input's: every variable is read and encoded again.
    const auto read = risk("read", {"--filters", "shuffle,deflate=2"});
    ASSERT_EQ(read.exit_code, 0) << read.err;
    EXPECT_EQ(read.err.find("variables carried unread"), std::string::npos) << read.err;

    EXPECT_EQ(digest_of(dir / "carried.h5"), digest_of(dir / "read.h5"));
    const auto carried_report = nlohmann::json::parse(read_text(dir / "carried.json"));
    const auto read_report = nlohmann::json::parse(read_text(dir / "read.json"));
    EXPECT_EQ(carried_report["inputs"], read_report["inputs"]);
    EXPECT_EQ(carried_report["inputs"][0]["digest"], digest_of(census));
    EXPECT_EQ(carried_report["steps"][0]["results"], read_report["steps"][0]["results"]);
    EXPECT_EQ(carried_report["steps"][0]["warnings"], read_report["steps"][0]["warnings"]);
  }
}

class ASmallHouseholdFile : public ::testing::Test {
 protected:
  void import(const std::string& csv, const std::vector<std::string>& flags) {
    write_text(dir_ / "in.csv", csv);
    std::vector<std::string> args{"import", (dir_ / "in.csv").string(), "-o", (dir_ / "in.h5").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc(args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  ProcessResult risk(const std::vector<std::string>& flags) {
    std::vector<std::string> args{"risk", "-i", (dir_ / "in.h5").string(), "-o", (dir_ / "out.h5").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_sdc(args);
  }
  TempDir dir_;
};

TEST_F(ASmallHouseholdFile, RejectsAMissingKeyNamingItsVariableAndRow) {
  import("hid,sex,age\n1,1,30\n1,2,31\n2,,40\n3,1,50\n", {"--role", "household=hid"});
  const auto result = risk({"--keys", "sex,age"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("variable 'sex', row id 2: missing key value"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(ASmallHouseholdFile, TreatsMissingAsALevelWithMissingCategory) {
  import("hid,sex,age\n1,1,30\n1,,30\n2,,30\n3,1,50\n", {"--role", "household=hid"});
  const auto result = risk({"--keys", "sex,age", "--missing", "category", "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(run_sdc({"export", (dir_ / "out.h5").string(), "-o", (dir_ / "out.csv").string()}).exit_code, 0);
  EXPECT_EQ(csv_column(read_csv_fields(dir_ / "out.csv"), "fk"), (std::vector<std::string>{"1", "2", "2", "1"}));
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
}

TEST_F(ASmallHouseholdFile, RejectsAFileNotSortedByHouseholdNamingTheFirstBadRow) {
  import("hid,sex\n1,1\n1,2\n3,1\n2,2\n2,1\n", {"--type", "hid=id"});  // without the household role: not sorted
  const auto result = risk({"--keys", "sex", "--household", "hid"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("variable 'hid', row id 3"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(ASmallHouseholdFile, RejectsANonCategoricalKeyAndABadThreshold) {
  import("hid,sex,income\n1,1,10.5\n2,2,20.25\n", {"--role", "household=hid"});
  const auto continuous_key = risk({"--keys", "sex,income"});
  EXPECT_EQ(continuous_key.exit_code, 3);
  EXPECT_NE(continuous_key.err.find("'income' is continuous, expected categorical"), std::string::npos)
      << continuous_key.err;
  EXPECT_EQ(risk({"--keys", "sex", "--k-anonymity", "0"}).exit_code, 2);
  EXPECT_EQ(risk({"--keys", "sex", "--missing", "anything"}).exit_code, 2);
  EXPECT_EQ(risk({"--keys", "sex", "--missing", "wildcard", "--alpha", "1.5"}).exit_code, 2);
  EXPECT_EQ(risk({"--keys", "sex", "--global-risk-target", "1"}).exit_code, 2);
}

TEST_F(ASmallHouseholdFile, ResumeSkipsACompletedStepAndReportsItsResults) {
  import("hid,sex,age\n1,1,30\n1,2,31\n2,1,30\n3,1,50\n", {"--role", "household=hid"});
  ASSERT_EQ(risk({"--keys", "sex,age", "--resume", "--report", (dir_ / "first.json").string()}).exit_code, 0);
  const auto before = std::filesystem::last_write_time(dir_ / "out.h5");
  const auto resumed = risk({"--keys", "sex,age", "--resume", "--report", (dir_ / "second.json").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(std::filesystem::last_write_time(dir_ / "out.h5"), before) << "the output was not rewritten";
  const auto first = nlohmann::json::parse(read_text(dir_ / "first.json"));
  const auto second = nlohmann::json::parse(read_text(dir_ / "second.json"));
  EXPECT_EQ(second["steps"][0]["results"], first["steps"][0]["results"]);
  EXPECT_NE(second["steps"][0]["warnings"].dump().find("resumed"), std::string::npos);
  EXPECT_EQ(validate_report(dir_ / "second.json"), "");

  // Other parameters make another step: it runs.
  const auto changed = risk({"--keys", "sex", "--resume", "--report", (dir_ / "third.json").string()});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  const auto third = nlohmann::json::parse(read_text(dir_ / "third.json"));
  EXPECT_EQ(third["steps"][0]["warnings"].dump().find("resumed"), std::string::npos);
  EXPECT_EQ(third["steps"][0]["results"]["equivalence_classes"], 2);
}

}  // namespace
}  // namespace sdc::testing

namespace sdc::testing {
namespace {

TEST(SdcImport, SortsRowsByTheHouseholdVariableStably) {
  TempDir dir;
  write_text(dir / "in.csv", "hid,person\n3,a\n1,b\n3,c\n2,d\n1,e\n");
  const auto result = run_sdc({"import", (dir / "in.csv").string(), "-o", (dir / "in.h5").string(), "--role",
                               "household=hid", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(run_sdc({"export", (dir / "in.h5").string(), "-o", (dir / "out.csv").string()}).exit_code, 0);
  EXPECT_EQ(read_text(dir / "out.csv"), "hid,person\n1,b\n1,e\n2,d\n3,a\n3,c\n");
  const auto report = nlohmann::json::parse(read_text(dir / "r.json"));
  EXPECT_EQ(report["steps"][0]["results"]["sorted_by_household"], true);
  EXPECT_EQ(validate_report(dir / "r.json"), "");
}

}  // namespace
}  // namespace sdc::testing
