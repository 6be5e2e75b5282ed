// `sdc generate census` as a user runs it: the variables and roles of the file, the report, equal
// digests for one and two threads, the sample option, and the seed and flag errors.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kUsage = 2;

class SdcGenerateCensus : public ::testing::Test {
 protected:
  /// `sdc [global...] generate census --households N -o out [flags...]` with the seed in SDC_SEED.
  ProcessResult census(const std::vector<std::string>& global, std::int64_t households, const std::string& output,
                       const std::vector<std::string>& flags = {}, const std::string& seed = "20261121") {
    std::vector<std::string> args = global;
    args.insert(args.end(),
                {"generate", "census", "--households", std::to_string(households), "-o", (dir_ / output).string()});
    args.insert(args.end(), flags.begin(), flags.end());
    return run_sdc(args, {{"SDC_SEED", seed}});
  }
  nlohmann::json info(const std::string& file) {
    const auto result = run_sdc({"info", (dir_ / file).string(), "--json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  }
  TempDir dir_;
};

TEST_F(SdcGenerateCensus, WritesTheDocumentedVariablesAndAValidReport) {
  const auto result = census({}, 3000, "c.h5", {"--report", (dir_ / "c.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto file = info("c.h5");
  std::vector<std::pair<std::string, std::string>> roles;
  for (const auto& variable : file["variables"]) roles.emplace_back(variable["name"], variable["role"]);
  const std::vector<std::pair<std::string, std::string>> expected{
      {"hid", "household"},      {"nuts1", "geography"}, {"nuts2", "geography"},   {"nuts3", "geography"},
      {"lau2", "geography"},     {"sex", "key"},         {"age", "key"},           {"agegroup", "key"},
      {"marstat", "key"},        {"citizenship", "key"}, {"education", "key"},     {"occupation", "key"},
      {"htype", "key"},          {"hsize", "key"},       {"income", "continuous"}, {"expenditure", "continuous"},
      {"savings", "continuous"}, {"weight", "weight"}};
  EXPECT_EQ(roles, expected);
  EXPECT_EQ(file["variables"][1]["levels"], 3);
  EXPECT_EQ(file["variables"][2]["levels"], 9);
  EXPECT_EQ(file["variables"][3]["levels"], 36);
  EXPECT_EQ(file["variables"][4]["levels"], 60) << "3000 households / 50 areas";
  EXPECT_EQ(file["variables"][4]["geography_level"], 4);

  // Labels are readable and the geography codes nest: "1" > "11" > "111" > "1110001".
  ASSERT_EQ(run_sdc({"export", (dir_ / "c.h5").string(), "-o", (dir_ / "c.csv").string()}).exit_code, 0);
  const std::string csv = read_text(dir_ / "c.csv");
  const auto first_end = csv.find('\n');
  EXPECT_EQ(csv.substr(0, first_end),
            "hid,nuts1,nuts2,nuts3,lau2,sex,age,agegroup,marstat,citizenship,education,occupation,htype,hsize,income,"
            "expenditure,savings,weight");
  std::vector<std::string> fields;
  std::string row = csv.substr(first_end + 1, csv.find('\n', first_end + 1) - first_end - 1);
  for (std::size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
    comma = row.find(',', start);
    fields.push_back(row.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
  }
  ASSERT_EQ(fields.size(), 19U) << row << " (agegroup holds a quoted comma)";
  EXPECT_EQ(fields[0], "1");
  EXPECT_EQ(fields[2].substr(0, 1), fields[1]);
  EXPECT_EQ(fields[3].substr(0, 2), fields[2]);
  EXPECT_EQ(fields[4].substr(0, 3), fields[3]);
  EXPECT_EQ(fields[4].size(), 7U);
  EXPECT_TRUE(fields[5] == "male" || fields[5] == "female") << fields[5];

  EXPECT_EQ(validate_report(dir_ / "c.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir_ / "c.json"));
  const auto& step = report["steps"][0];
  EXPECT_EQ(step["method"], "generate census");
  EXPECT_EQ(step["parameters"]["households"], 3000);
  EXPECT_TRUE(step["parameters"]["sample-fraction"].is_null());
  EXPECT_EQ(step["results"]["households"], 3000);
  EXPECT_EQ(step["results"]["sample_households"], 3000);
  EXPECT_EQ(step["results"]["sample_persons"], file["rows"]);
  EXPECT_EQ(step["results"]["persons"], file["rows"]);
  EXPECT_TRUE(report["seed_fingerprint"].is_string());
  EXPECT_TRUE(report["inputs"].empty());
  EXPECT_EQ(report["outputs"][0]["kind"], "data");
  EXPECT_EQ(result.err.find("20261121"), std::string::npos) << "the seed is never logged";
}

TEST_F(SdcGenerateCensus, GivesEqualDigestsForOneAndTwoThreads) {
  // 50 000 households are about 150 000 rows: two chunks of the default 131 072 rows.
  ASSERT_EQ(census({"--threads", "1"}, 50000, "one.h5").exit_code, 0);
  ASSERT_EQ(census({"--threads", "2"}, 50000, "two.h5").exit_code, 0);
  EXPECT_GT(info("one.h5")["rows"].get<std::int64_t>(), 131072);
  EXPECT_EQ(digest_of(dir_ / "one.h5"), digest_of(dir_ / "two.h5"));
  // Filters change the bytes, not the content.
  ASSERT_EQ(census({}, 50000, "plain.h5", {"--filters", "none"}).exit_code, 0);
  EXPECT_EQ(digest_of(dir_ / "plain.h5"), digest_of(dir_ / "one.h5"));
}

TEST_F(SdcGenerateCensus, TakesTheSeedFromAFileOrTheEnvironmentAndDependsOnIt) {
  write_text(dir_ / "seed", "20261121\n");
  std::filesystem::permissions(dir_ / "seed", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const auto from_file = run_sdc({"generate", "census", "--households", "500", "--seed-file", (dir_ / "seed").string(),
                                  "-o", (dir_ / "file.h5").string()});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  ASSERT_EQ(census({}, 500, "env.h5").exit_code, 0);
  ASSERT_EQ(census({}, 500, "other.h5", {}, "7").exit_code, 0);
  EXPECT_EQ(digest_of(dir_ / "file.h5"), digest_of(dir_ / "env.h5"));
  EXPECT_NE(digest_of(dir_ / "other.h5"), digest_of(dir_ / "env.h5"));
}

TEST_F(SdcGenerateCensus, DrawsAHouseholdSampleWithDesignWeights) {
  const auto result = census({}, 20000, "s.h5", {"--sample-fraction", "0.1", "--report", (dir_ / "s.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "s.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir_ / "s.json"));
  const auto& results = report["steps"][0]["results"];
  EXPECT_EQ(report["steps"][0]["parameters"]["sample-fraction"], 0.1);
  EXPECT_NEAR(results["sample_households"].get<double>(), 2000.0, 200.0);
  EXPECT_LT(results["sample_persons"].get<std::int64_t>(), results["persons"].get<std::int64_t>());
  EXPECT_EQ(info("s.h5")["rows"], results["sample_persons"]);

  ASSERT_EQ(run_sdc({"export", (dir_ / "s.h5").string(), "-o", (dir_ / "s.csv").string()}).exit_code, 0);
  const std::string csv = read_text(dir_ / "s.csv");
  const auto header_end = csv.find('\n');
  EXPECT_EQ(csv.substr(0, header_end).substr(csv.substr(0, header_end).rfind(',') + 1), "weight");
  // Every weight is above 1 (inverse inclusion probabilities below 1).
  std::size_t line = header_end + 1;
  int rows = 0;
  while (line < csv.size()) {
    const auto end = csv.find('\n', line);
    const double weight = std::stod(csv.substr(csv.rfind(',', end) + 1, end - csv.rfind(',', end) - 1));
    EXPECT_GT(weight, 1.0);
    line = end + 1;
    ++rows;
  }
  EXPECT_EQ(rows, results["sample_persons"].get<int>());
}

TEST_F(SdcGenerateCensus, RefusesToRunWithoutASeedOrWithBadFlags) {
  const auto no_seed =
      run_sdc({"generate", "census", "--households", "10", "-o", (dir_ / "x.h5").string()}, {{"SDC_SEED", ""}});
  EXPECT_NE(no_seed.exit_code, 0);
  EXPECT_EQ(census({}, 10, "x.h5", {"--sample-fraction", "0"}).exit_code, kUsage);
  EXPECT_EQ(census({}, 10, "x.h5", {"--sample-fraction", "1.5"}).exit_code, kUsage);
  EXPECT_EQ(census({}, 0, "x.h5").exit_code, kUsage);
  EXPECT_EQ(census({}, 10, "x.h5", {"--filters", "gzip"}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"generate", "census", "-o", (dir_ / "x.h5").string()}, {{"SDC_SEED", "1"}}).exit_code, kUsage);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.h5"));
  EXPECT_EQ(dir_.entries().size(), 0U) << "no temporary files left";
}

TEST(SdcGenerateSeed, StillWritesASeedBesideCensus) {
  TempDir dir;
  const auto result = run_sdc({"generate", "seed", "-o", (dir / "seed").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto generated = run_sdc({"generate", "census", "--households", "20", "--seed-file", (dir / "seed").string(),
                                  "-o", (dir / "c.h5").string()});
  EXPECT_EQ(generated.exit_code, 0) << generated.err;
}

}  // namespace
}  // namespace sdc::testing
