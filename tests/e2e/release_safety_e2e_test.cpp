// A masked output is meant for release: its provenance discloses nothing of the original data, and
// reports, handed to review boards, follow the small-count rule (engine/report/small_counts.h).
// The data plant a label that one record carries and cells of one record, and the tests look for
// them everywhere a release or a report could leak them.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr const char* kPlantedLabel = "atlantis";

/// 400 persons in four regions, and one in a fifth region that nobody else lives in; the single
/// "divorced" person lives in the north.
std::string persons_csv() {
  std::ostringstream csv;
  csv << "region,sex,marstat\n";
  const char* regions[] = {"north", "south", "east", "west"};
  const char* marstat[] = {"single", "married", "widowed"};
  for (int row = 0; row < 400; ++row)
    csv << regions[row % 4] << ',' << 1 + row % 2 << ',' << marstat[(row / 4) % 3] << '\n';
  csv << kPlantedLabel << ",1,single\n";
  csv << "north,2,divorced\n";
  return csv.str();
}

/// Every attribute of the file's root group, as text (the provenance lives there).
std::string root_attributes(const std::filesystem::path& file) {
  const auto script =
      "import h5py, sys\n"
      "with h5py.File(sys.argv[1], 'r') as f:\n"
      "    for k, v in f.attrs.items():\n"
      "        print(k, '=', v.decode() if isinstance(v, bytes) else v)\n";
  const auto result = run_process({"/usr/bin/python3", "-c", script, file.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

class ReleaseSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(secret_);
    write_text(secret_ / "persons.csv", persons_csv());
    ASSERT_EQ(run_sdc({"import", (secret_ / "persons.csv").string(), "-o", input_.string()}).exit_code, 0);
    ASSERT_EQ(run_sdc({"generate", "seed", "--output", seed_.string()}).exit_code, 0);
  }

  ProcessResult pram(const std::vector<std::string>& more = {}) {
    std::vector<std::string> args{"pram",         "-i",       input_.string(), "-o",     released_.string(),
                                  "--variables",  "marstat",  "--strata",      "region", "--seed-file",
                                  seed_.string(), "--report", report_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_sdc(args);
  }

  TempDir dir_;
  std::filesystem::path secret_ = dir_ / "secret-census-directory";
  std::filesystem::path input_ = secret_ / "census.h5";
  std::filesystem::path seed_ = secret_ / "census.seed";
  std::filesystem::path released_ = dir_ / "released.h5";
  std::filesystem::path report_ = dir_ / "pram.json";
};

TEST_F(ReleaseSafety, AMaskedOutputsProvenanceHoldsNoCountLabelOrPath) {
  const auto result = pram();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string attributes = root_attributes(released_);
  EXPECT_EQ(attributes.find(kPlantedLabel), std::string::npos) << attributes;
  EXPECT_EQ(attributes.find("secret-census-directory"), std::string::npos) << attributes;
  EXPECT_EQ(attributes.find("counts_before"), std::string::npos) << attributes;
  // What stays: the method and its parameters, with base names of files, the tool and the input's digest.
  EXPECT_NE(attributes.find("provenance_command = sdc pram -i census.h5 -o released.h5 --variables marstat"),
            std::string::npos)
      << attributes;
  EXPECT_NE(attributes.find("--seed-file census.seed"), std::string::npos) << attributes;
  EXPECT_NE(attributes.find("provenance_input_digest = " + digest_of(input_)), std::string::npos) << attributes;
  // The step's results live in the checkpoint beside the release, owner-only, never in it.
  const auto checkpoint = nlohmann::json::parse(read_text(dir_ / "released.h5.checkpoint.json"));
  EXPECT_EQ(checkpoint["results"], nlohmann::json::parse(read_text(report_))["steps"][0]["results"]);
}

TEST_F(ReleaseSafety, TheReportShowsSmallCountsAsLessThanTheMinimumAndNoLabelOfFewRecords) {
  ASSERT_EQ(pram().exit_code, 0);
  const std::string text = read_text(report_);
  EXPECT_EQ(validate_report(report_), "");
  EXPECT_EQ(text.find(kPlantedLabel), std::string::npos) << "the label only one record carries is printed";
  const auto variable = nlohmann::json::parse(text)["steps"][0]["results"]["variables"][0];
  // The single divorced person: a cell of one, shown as "< 3", in the totals and in the north.
  const auto& levels = variable["levels"];
  const auto divorced = static_cast<std::size_t>(std::find(levels.begin(), levels.end(), "divorced") - levels.begin());
  ASSERT_LT(divorced, levels.size());
  EXPECT_EQ(variable["counts_before"][divorced], "< 3");
  EXPECT_EQ(variable["strata_withheld"], 1) << "the region of one person is listed";
  ASSERT_EQ(variable["strata"].size(), 4U);
  for (const auto& stratum : variable["strata"]) {
    if (stratum["values"][0] == "north") {
      EXPECT_EQ(stratum["counts_before"][divorced], "< 3");
    }
    for (const auto& label : stratum["rare_safe"]) EXPECT_NE(label, "divorced");
    for (const auto& label : stratum["rare_unsafe"]) EXPECT_NE(label, "divorced");
  }
}

TEST_F(ReleaseSafety, AMinimumOfOneShowsEveryCountAndResumingRepeatsTheResults) {
  ASSERT_EQ(pram({"--report-min-count", "1"}).exit_code, 0);
  const auto first = nlohmann::json::parse(read_text(report_))["steps"][0];
  EXPECT_EQ(first["results"]["variables"][0]["strata_withheld"], 0);
  EXPECT_NE(read_text(report_).find(kPlantedLabel), std::string::npos);

  const auto resumed = pram({"--report-min-count", "1", "--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto again = nlohmann::json::parse(read_text(report_))["steps"][0];
  EXPECT_EQ(again["results"], first["results"]);
  ASSERT_FALSE(again["warnings"].empty());
  EXPECT_NE(again["warnings"].back().get<std::string>().find("resumed"), std::string::npos);
}

TEST_F(ReleaseSafety, ARiskReportNamesNoKeyLevelOfFewRecords) {
  const auto result =
      run_sdc({"risk", "-i", input_.string(), "-o", (dir_ / "risk.h5").string(), "--keys", "region,sex,marstat",
               "--suda2", "--suda2-contributions", "--report", (dir_ / "risk.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "risk.json"), "");
  const std::string text = read_text(dir_ / "risk.json");
  EXPECT_EQ(text.find(kPlantedLabel), std::string::npos) << text;
  EXPECT_EQ(text.find("divorced"), std::string::npos) << text;
}

}  // namespace
}  // namespace sdc::testing
