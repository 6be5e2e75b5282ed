// `sdc linkage` as a user runs it: the ties oracle (strict, fractional, optimistic), sd-based interval
// disclosure against the reference, a regularised Mahalanobis distance on collinear variables, the
// refusals with their exit codes and messages and nothing left behind, and a job that microaggregates,
// then links and measures the masked file against the original.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// Writes `csv` and imports it with the given variables continuous.
void import_csv(const TempDir& dir, const std::string& name, const std::string& csv,
                const std::vector<std::string>& continuous, const std::vector<std::string>& extra = {}) {
  write_text(dir / (name + ".csv"), csv);
  std::vector<std::string> args{"import", (dir / (name + ".csv")).string(), "-o", (dir / (name + ".h5")).string()};
  for (const auto& variable : continuous) {
    args.push_back("--type");
    args.push_back(variable + "=continuous");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_sdc(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
}

nlohmann::json step_of(const std::filesystem::path& report) {
  return nlohmann::json::parse(read_text(report))["steps"][0];
}

TEST(ALinkage, CountsTiedNearestRecordsStrictlyFractionallyAndOptimistically) {
  TempDir dir;
  import_csv(dir, "original", "v\n1\n2\n3\n10\n11\n12\n", {"v"});
  import_csv(dir, "masked", "v\n2\n2\n2\n11\n11\n11\n", {"v"});
  const auto result =
      run_sdc({"linkage", "--input", (dir / "original.h5").string(), "--masked", (dir / "masked.h5").string(),
               "--variables", "v", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "r.json"), "");
  const auto results = step_of(dir / "r.json")["results"];
  std::printf("ties: strict %s, fractional %s, optimistic %s\n", results["strict"].dump().c_str(),
              results["fractional"].dump().c_str(), results["optimistic"].dump().c_str());
  EXPECT_EQ(results["records"], 6);
  EXPECT_EQ(results["distance"], "dbrl1");
  EXPECT_EQ(results["strict"], 0);
  EXPECT_DOUBLE_EQ(results["fractional"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(results["fractional_rate"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(results["optimistic"], 6);
  EXPECT_EQ(results["regularisation_epsilon"], 0.0);
}

TEST(ALinkage, GivesTheReferenceIntervalDisclosureRiskForEachK) {
  TempDir dir;
  import_csv(dir, "original", "a,b\n1,2\n2,4\n3,6\n4,9\n", {"a", "b"});
  import_csv(dir, "masked", "a,b\n1.5,3\n1.5,3\n3.5,7.5\n3.5,7.5\n", {"a", "b"});
  const auto result =
      run_sdc({"linkage", "--input", (dir / "original.h5").string(), "--masked", (dir / "masked.h5").string(),
               "--variables", "a,b", "--interval-k", "0.05,0.4,0.5,0.6", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "r.json"), "");
  const auto intervals = step_of(dir / "r.json")["results"]["interval_disclosure"];
  std::printf("interval disclosure: %s\n", intervals.dump().c_str());
  ASSERT_EQ(intervals.size(), 4U);
  const std::vector<std::pair<double, double>> expected{{0.05, 0.0}, {0.4, 0.0}, {0.5, 0.5}, {0.6, 1.0}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(intervals[i]["k"].get<double>(), expected[i].first);
    EXPECT_DOUBLE_EQ(intervals[i]["risk"].get<double>(), expected[i].second) << "k = " << expected[i].first;
    EXPECT_EQ(intervals[i]["disclosed"].get<double>(), 4 * expected[i].second) << "k = " << expected[i].first;
  }
}

TEST(ALinkage, RegularisesAMahalanobisDistanceOnCollinearVariablesWithAWarning) {
  TempDir dir;
  std::ostringstream csv;
  csv << "x,y,z\n";
  for (int i = 0; i < 30; ++i) csv << i * 7 % 13 << ',' << 2 * (i * 7 % 13) << ',' << i * i % 17 << '\n';
  import_csv(dir, "original", csv.str(), {"x", "y", "z"});
  const auto masked = run_sdc({"microaggregate", (dir / "original.h5").string(), "-o", (dir / "masked.h5").string(),
                               "--variables", "x,y,z", "-k", "3"});
  ASSERT_EQ(masked.exit_code, 0) << masked.err;
  const auto result =
      run_sdc({"linkage", "-i", (dir / "original.h5").string(), "--masked", (dir / "masked.h5").string(), "--variables",
               "x,y,z", "--distance", "mahalanobis-cov0", "--report", (dir / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "r.json"), "");
  const auto step = step_of(dir / "r.json");
  const double epsilon = step["results"]["regularisation_epsilon"].get<double>();
  std::printf("regularisation_epsilon %g; warnings %s\n", epsilon, step["warnings"].dump().c_str());
  EXPECT_GT(epsilon, 0.0);
  ASSERT_EQ(step["warnings"].size(), 1U);
  const auto warning = step["warnings"][0].get<std::string>();
  EXPECT_NE(warning.find("singular"), std::string::npos) << warning;
  EXPECT_NE(warning.find("added to its diagonal"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("0.000000 x"), std::string::npos)
      << "the warning should give the epsilon that was added, not a figure rounded to zero: " << warning;
}

class AMaskedPairRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ostringstream csv;
    std::ostringstream other_id;
    csv << "id,x,y\n";
    other_id << "id,x,y\n";
    for (int i = 0; i < 20; ++i) {
      csv << i << ',' << i * 3 % 7 << ".5," << i * i % 11 << '\n';
      other_id << (i == 13 ? 99 : i) << ',' << i * 3 % 7 << ".5," << i * i % 11 << '\n';
    }
    std::string shorter = csv.str();
    shorter.erase(shorter.rfind('\n', shorter.size() - 2) + 1);
    import_csv(dir_, "original", csv.str(), {"x", "y"}, {"--role", "identifier=id"});
    import_csv(dir_, "shorter", shorter, {"x", "y"}, {"--role", "identifier=id"});
    import_csv(dir_, "other-id", other_id.str(), {"x", "y"}, {"--role", "identifier=id"});
    before_ = dir_.entries();
  }
  void expect_refused(const std::string& command, const std::string& masked, const std::vector<std::string>& flags,
                      int code, const std::vector<std::string>& parts) {
    std::vector<std::string> args{
        command, "-i",       (dir_ / "original.h5").string(), "--masked", (dir_ / masked).string(), "--variables",
        "x,y",   "--report", (dir_ / "out.json").string()};
    if (command == "linkage") args.insert(args.end(), {"-o", (dir_ / "out.h5").string()});
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc(args);
    std::string described = command + " --masked " + masked + " ";
    for (const auto& flag : flags) described += flag + " ";
    std::printf("%s-> exit %d: %s", described.c_str(), result.exit_code, result.err.c_str());
    EXPECT_EQ(result.exit_code, code) << described << result.err;
    for (const auto& part : parts) EXPECT_NE(result.err.find(part), std::string::npos) << part << "\n" << result.err;
    EXPECT_EQ(dir_.entries(), before_) << described << "left something behind";
  }
  TempDir dir_;
  std::vector<std::string> before_;
};

TEST_F(AMaskedPairRefusal, RefusesAMaskedFileWithAnotherNumberOfRecords) {
  expect_refused("linkage", "shorter.h5", {}, 3, {"shorter.h5", "19 records", "20"});
  expect_refused("utility", "shorter.h5", {}, 3, {"shorter.h5", "19 records", "20"});
}

TEST_F(AMaskedPairRefusal, NamesTheRowWhereTheIdentifiersDiffer) {
  expect_refused("linkage", "other-id.h5", {}, 3, {"row id 13", "identifier 'id' differs"});
  expect_refused("utility", "other-id.h5", {}, 3, {"row id 13", "identifier 'id' differs"});
}

TEST_F(AMaskedPairRefusal, RefusesAnUnknownDistanceAndAZeroRankIntervalAsUsageErrors) {
  expect_refused("linkage", "original.h5", {"--distance", "nonsense"}, 2, {"--distance", "'nonsense'"});
  expect_refused("linkage", "original.h5", {"--rank-interval", "0"}, 2, {"--rank-interval", "'0'"});
}

TEST(ALinkageJob, MicroaggregatesThenLinksAndMeasuresTheMaskedFileAgainstTheOriginal) {
  TempDir dir;
  const auto census = (dir / "census.h5").string();
  const auto generated =
      run_sdc({"generate", "census", "--households", "1000", "-o", census}, {{"SDC_SEED", "20260418"}});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  write_text(dir / "job.yaml",
             "version: 1\n"
             "input: " +
                 census +
                 "\n"
                 "output_dir: " +
                 (dir / "out").string() +
                 "\n"
                 "report: " +
                 (dir / "job.json").string() +
                 "\n"
                 "steps:\n"
                 "  - method: microaggregate\n"
                 "    name: released\n"
                 "    variables: [income, expenditure, savings]\n"
                 "    group-size: 3\n"
                 "    blocking: kdtree\n"
                 "    block-max: 1000\n"
                 "  - method: linkage\n"
                 "    name: linked\n"
                 "    from: {input: input, masked: released}\n"
                 "    variables: [income, expenditure, savings]\n"
                 "    interval-k: [0.05, 0.5]\n"
                 "  - method: utility\n"
                 "    from: {input: input, masked: released}\n"
                 "    variables: [income, expenditure, savings]\n");
  const auto result = run_sdc({"run", (dir / "job.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "job.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir / "job.json"));
  ASSERT_EQ(report["steps"].size(), 3U);
  EXPECT_EQ(report["steps"][0]["method"], "microaggregate");
  EXPECT_EQ(report["steps"][1]["method"], "linkage");
  EXPECT_EQ(report["steps"][2]["method"], "utility");
  const auto& micro = report["steps"][0]["results"];
  const auto& linkage = report["steps"][1]["results"];
  const auto& utility = report["steps"][2]["results"];
  std::printf("job: il_percent %.6f (microaggregate) %.6f (utility); fractional linkage rate %.4f\n",
              micro["il_percent"].get<double>(), utility["il_percent"].get<double>(),
              linkage["fractional_rate"].get<double>());
  EXPECT_GE(micro["smallest_group"].get<int>(), 3);
  EXPECT_EQ(micro["il_percent"], utility["il_percent"]);
  EXPECT_EQ(linkage["records"], micro["records"]);
  EXPECT_LE(linkage["fractional_rate"].get<double>(), 1.0 / 3.0) << "groups of at least 3 tie every record";
  EXPECT_EQ(linkage["interval_disclosure"].size(), 2U);
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "released.h5"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "linked.h5"));
  // The job's microaggregation step gives the same content as the command.
  const auto command = run_sdc({"microaggregate", census, "-o", (dir / "command.h5").string(), "--variables",
                                "income,expenditure,savings", "--blocking", "kdtree", "--block-max", "1000"});
  ASSERT_EQ(command.exit_code, 0) << command.err;
  EXPECT_EQ(digest_of(dir / "out" / "released.h5"), digest_of(dir / "command.h5"));
}

}  // namespace
}  // namespace sdc::testing
