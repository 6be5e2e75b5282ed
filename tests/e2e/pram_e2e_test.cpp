// `sdc pram` as a user runs it, and as a `pram` step of a job: the released file keeps every variable
// and the levels, the report (valid against the schema) agrees with the file, a job step gives the same
// content as the command, and the error cases name what is wrong.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "kernels/core/record_rng.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// `rows` persons: region (4 levels, some missing), sex, marstat (4 levels), education (6 levels, a
/// rare one) and a continuous income; values are functions of the row number.
std::string persons_csv(int rows) {
  const RecordRng rng(11, StepId::kRiskSimulation);
  std::ostringstream csv;
  csv << "region,sex,marstat,education,income\n";
  const char* regions[] = {"north", "south", "east", "west"};
  const char* marstat[] = {"single", "married", "divorced", "widowed"};
  const char* education[] = {"none", "primary", "secondary", "tertiary", "doctorate", "other"};
  for (int row = 0; row < rows; ++row) {
    const auto bits = rng.bits({.unit = static_cast<std::uint64_t>(row)});
    const double u = RecordRng::uniform_from_bits(bits[3]);
    const std::size_t e = u < 0.005 ? 4 : bits[2] % 6 == 4 ? 3 : static_cast<std::size_t>(bits[2] % 6);
    csv << (bits[0] % 50 == 0 ? "" : regions[bits[0] % 4]) << ',' << (bits[1] % 2 == 0 ? "male" : "female") << ','
        << marstat[(bits[1] >> 8) % 4] << ',' << education[e] << ',' << (bits[0] >> 40) % 90000 << ".5\n";
  }
  return csv.str();
}

/// sdc with `args` and SDC_SEED removed from the environment (an empty value would be a malformed seed).
ProcessResult run_without_seed_variable(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"env", "-u", "SDC_SEED", sdc_executable().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

class SdcPram : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_ / "persons.csv", persons_csv(2000));
    const auto result = run_sdc({"import", (dir_ / "persons.csv").string(), "-o", input_.string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  ProcessResult pram(const std::vector<std::string>& flags,
                     std::map<std::string, std::string> environment = {{"SDC_SEED", "424242"}}) {
    std::vector<std::string> args{"pram", "-i", input_.string(), "-o", (dir_ / "out.h5").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_sdc(args, environment);
  }
  std::vector<std::vector<std::string>> export_csv(const std::filesystem::path& file, const std::string& name) {
    const auto result = run_sdc({"export", file.string(), "-o", (dir_ / name).string()});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return read_csv_fields(dir_ / name);
  }
  TempDir dir_;
  std::filesystem::path input_ = dir_ / "persons.h5";
};

TEST_F(SdcPram, ReleasesTheVariablesWithTheirLevelsAndAReportThatAgreesWithTheFile) {
  const auto result = pram({"--variables", "marstat,education", "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto before = export_csv(input_, "in.csv");
  const auto after = export_csv(dir_ / "out.h5", "out.csv");
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(csv_column(after, "sex"), csv_column(before, "sex")) << "other variables are kept";
  EXPECT_EQ(csv_column(after, "income"), csv_column(before, "income"));
  EXPECT_EQ(csv_column(after, "region"), csv_column(before, "region"));

  const auto report = nlohmann::json::parse(read_text(dir_ / "r.json"));
  const auto& results = report["steps"][0]["results"];
  EXPECT_EQ(results["records"], 2000);
  EXPECT_EQ(results["strata"], 1);
  ASSERT_EQ(results["variables"].size(), 2U);
  const auto marstat_before = csv_column(before, "marstat");
  const auto marstat_after = csv_column(after, "marstat");
  const auto education_before = csv_column(before, "education");
  const auto education_after = csv_column(after, "education");
  const auto flags = csv_column(after, "pram_changed");
  std::int64_t any = 0;
  std::int64_t marstat_changes = 0;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const bool changed = marstat_before[i] != marstat_after[i] || education_before[i] != education_after[i];
    EXPECT_EQ(flags[i], changed ? "true" : "false") << "row " << i;
    any += changed ? 1 : 0;
    marstat_changes += marstat_before[i] != marstat_after[i] ? 1 : 0;
  }
  EXPECT_EQ(results["records_changed"], any);
  const auto& marstat = results["variables"][0];
  EXPECT_EQ(marstat["variable"], "marstat");
  EXPECT_EQ(marstat["matrix"], "reference");
  EXPECT_EQ(marstat["records_changed"], marstat_changes);
  EXPECT_GT(marstat_changes, 50) << "pd 0.8, alpha 0.5: about 5% to 10% of the records move";
  // Counts after, recounted from the file, in level order.
  const auto levels = marstat["levels"].get<std::vector<std::string>>();
  std::vector<std::int64_t> recount(levels.size(), 0);
  for (const auto& value : marstat_after)
    ++recount[static_cast<std::size_t>(std::find(levels.begin(), levels.end(), value) - levels.begin())];
  EXPECT_EQ(marstat["counts_after"].get<std::vector<std::int64_t>>(), recount);
  // The reference construction is invariant: the expected counts after are the counts before.
  const auto counts = marstat["counts_before"].get<std::vector<double>>();
  const auto expected = marstat["expected_after"].get<std::vector<double>>();
  for (std::size_t k = 0; k < counts.size(); ++k) EXPECT_NEAR(expected[k], counts[k], 1e-9 * counts[k]);
  ASSERT_EQ(marstat["strata"].size(), 1U);
  EXPECT_EQ(marstat["strata"][0]["drawn"].size(), 4U) << "K <= 50: the whole matrix is printed";
  EXPECT_TRUE(marstat["estimate"].is_array());
  EXPECT_TRUE(marstat["information_loss"]["rd"].is_number());
  // doctorate (about 10 records) is rare under tau = 100.
  const auto& education = results["variables"][1];
  EXPECT_GE(education["rare_cells"].get<std::int64_t>(), 1);
  const auto& stratum = education["strata"][0];
  EXPECT_EQ(stratum["rare_safe"].size() + stratum["rare_unsafe"].size(), education["rare_cells"].get<std::size_t>());
}

TEST_F(SdcPram, StratifiesWithMissingStratumValuesAsAStratumAndDrawsFamiliesAndUserMatrices) {
  write_text(dir_ / "sex.csv",
             "from,male,female\n"
             "female,0.25,0.75\n"
             "male,1,0\n");
  const auto result = pram({"--variables", "marstat,sex", "--strata", "region", "--matrix", "nB:0.6:2", "--matrix-file",
                            "sex=" + (dir_ / "sex.csv").string(), "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto results = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"];
  EXPECT_EQ(results["strata"], 5) << "four regions and the missing region";
  const auto& marstat = results["variables"][0];
  EXPECT_EQ(marstat["matrix"], "nB:0.6:2");
  EXPECT_EQ(marstat["invariant"], false);
  EXPECT_EQ(marstat["strata"][0]["drawn"], marstat["strata"][0]["p"]) << "drawn from the family matrix itself";
  ASSERT_EQ(marstat["strata"].size(), 5U);
  EXPECT_TRUE(marstat["strata"][4]["values"][0].is_null()) << "the missing region sorts last";
  const auto& sex = results["variables"][1];
  EXPECT_EQ(sex["matrix"], "file");
  // The file's male row keeps male; its female row sends a quarter of the women to male.
  const auto before = export_csv(input_, "in.csv");
  const auto after = export_csv(dir_ / "out.h5", "out.csv");
  const auto sex_before = csv_column(before, "sex");
  const auto sex_after = csv_column(after, "sex");
  std::int64_t women = 0;
  std::int64_t moved = 0;
  for (std::size_t i = 0; i < sex_before.size(); ++i) {
    if (sex_before[i] == "male") {
      EXPECT_EQ(sex_after[i], "male") << "row " << i;
    }
    if (sex_before[i] == "female") {
      ++women;
      moved += sex_after[i] == "male" ? 1 : 0;
    }
  }
  EXPECT_NEAR(static_cast<double>(moved) / static_cast<double>(women), 0.25, 0.06);

  // --invariant: the family matrix P becomes alpha P Q + (1 - alpha) I, which keeps the counts in expectation.
  const auto invariant = pram({"--variables", "marstat", "--strata", "region", "--matrix", "nE:0.6", "--invariant",
                               "--alpha", "0.7", "--report", (dir_ / "i.json").string()});
  ASSERT_EQ(invariant.exit_code, 0) << invariant.err;
  EXPECT_EQ(validate_report(dir_ / "i.json"), "");
  const auto entry = nlohmann::json::parse(read_text(dir_ / "i.json"))["steps"][0]["results"]["variables"][0];
  EXPECT_EQ(entry["invariant"], true);
  EXPECT_EQ(entry["alpha"], 0.7);
  const auto counts = entry["counts_before"].get<std::vector<double>>();
  const auto expected = entry["expected_after"].get<std::vector<double>>();
  for (std::size_t k = 0; k < counts.size(); ++k) EXPECT_NEAR(expected[k], counts[k], 1e-9 * counts[k]);
  EXPECT_NE(entry["strata"][0]["drawn"], entry["strata"][0]["p"]);
}

TEST_F(SdcPram, AJobStepGivesTheSameContentAsTheCommand) {
  ASSERT_EQ(pram({"--variables", "marstat,education", "--strata", "sex"}).exit_code, 0);
  write_text(dir_ / "seed", "424242\n");
  std::filesystem::permissions(dir_ / "seed", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  write_text(dir_ / "job.yaml",
             "version: 1\n"
             "input: " +
                 input_.string() +
                 "\n"
                 "output_dir: " +
                 dir_.path().string() +
                 "\n"
                 "report: " +
                 (dir_ / "job.json").string() +
                 "\n"
                 "seed_file: " +
                 (dir_ / "seed").string() +
                 "\n"
                 "steps:\n"
                 "  - method: pram\n"
                 "    name: released\n"
                 "    variables: [marstat, education]\n"
                 "    strata: [sex]\n"
                 "  - method: risk\n"
                 "    keys: [sex, marstat, education, pram_changed]\n"
                 "    missing: category\n");
  const auto result = run_without_seed_variable({"run", (dir_ / "job.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "job.json"), "");
  EXPECT_EQ(digest_of(dir_ / "released.h5"), digest_of(dir_ / "out.h5"));
  const auto report = nlohmann::json::parse(read_text(dir_ / "job.json"));
  EXPECT_EQ(report["steps"][0]["method"], "pram");
  EXPECT_EQ(report["steps"][0]["results"]["strata"], 2);
}

/// The position of `value` in `levels`.
std::size_t level_of(const std::vector<std::string>& levels, const std::string& value) {
  return static_cast<std::size_t>(std::find(levels.begin(), levels.end(), value) - levels.begin());
}

/// A count of the report: a number, or "< N" below the small-count rule.
nlohmann::json reported(std::int64_t count) {
  return count > 0 && count < 3 ? nlohmann::json("< 3") : nlohmann::json(count);
}

TEST_F(SdcPram, GivesEachVariableItsMatrixAndKeepsTheBlocksOfABlockMatrix) {
  const auto result =
      pram({"--variables", "marstat,education,sex", "--matrix", "education=block:1/nE:0.6:3/nB:0.6:2:2,sex=nE:0.9",
            "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto results = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"];
  const auto& marstat = results["variables"][0];
  const auto& education = results["variables"][1];
  const auto& sex = results["variables"][2];
  EXPECT_EQ(marstat["matrix"], "reference") << "a variable not named keeps the default";
  EXPECT_EQ(marstat["invariant"], true);
  EXPECT_EQ(education["matrix"], "block:1/nE:0.6:3/nB:0.6:2:2");
  EXPECT_EQ(sex["matrix"], "nE:0.9");
  EXPECT_EQ(sex["strata"][0]["p"], (nlohmann::json{{0.9, 1.0 - 0.9}, {1.0 - 0.9, 0.9}}));
  // Level order: doctorate, none, other, primary, secondary, tertiary (bytewise).
  const auto levels = education["levels"].get<std::vector<std::string>>();
  ASSERT_EQ(levels.size(), 6U);
  const auto& p = education["strata"][0]["p"];
  EXPECT_EQ(p[0], (nlohmann::json{1.0, 0.0, 0.0, 0.0, 0.0, 0.0})) << "\"1\" keeps the first level";
  EXPECT_EQ(p[1][1], 0.6);
  EXPECT_EQ(p[1][2], 0.2);
  EXPECT_EQ(p[1][4], 0.0);
  EXPECT_EQ(p[4][4], 0.6);
  EXPECT_EQ(p[4][5], 0.4) << "2B(0.6; 2) on the last two levels";
  // Every record stays in its block.
  const std::vector<int> block_of{0, 1, 1, 1, 2, 2};
  const auto before = csv_column(export_csv(input_, "in.csv"), "education");
  const auto after = csv_column(export_csv(dir_ / "out.h5", "out.csv"), "education");
  std::int64_t moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::size_t from = level_of(levels, before[i]);
    const std::size_t to = level_of(levels, after[i]);
    ASSERT_LT(to, levels.size());
    EXPECT_EQ(block_of[from], block_of[to]) << "row " << i;
    moved += from != to ? 1 : 0;
  }
  EXPECT_EQ(education["records_changed"], moved);
  EXPECT_GT(moved, 300) << "about 40% of the records outside the first block move";
}

TEST_F(SdcPram, EstimatesTwoWayTablesAndGroupMeansThatAgreeWithTheFiles) {
  const auto result =
      pram({"--variables", "marstat,education", "--strata", "sex", "--two-way", "marstat:sex,education:marstat",
            "--two-way", "region:marstat", "--regression-target", "income", "--report", (dir_ / "r.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto results = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"];
  EXPECT_EQ(results["regression_target"], "income");
  ASSERT_EQ(results["two_way"].size(), 3U);
  const auto before = export_csv(input_, "in.csv");
  const auto after = export_csv(dir_ / "out.h5", "out.csv");

  // The counts before and after, recounted from the files, with the small-count rule.
  for (const auto& pair : results["two_way"]) {
    const auto names = pair["variables"].get<std::vector<std::string>>();
    SCOPED_TRACE(names[0] + ":" + names[1]);
    const auto levels_of = [&](const std::string& name) {
      std::vector<std::string> levels;
      for (const auto& v : csv_column(before, name))
        if (!v.empty() && std::find(levels.begin(), levels.end(), v) == levels.end()) levels.push_back(v);
      std::sort(levels.begin(), levels.end());
      return levels;
    };
    const auto rows = levels_of(names[0]);
    const auto columns = levels_of(names[1]);
    EXPECT_EQ(pair["cells"], rows.size() * columns.size());
    const auto recount = [&](const std::vector<std::vector<std::string>>& file) {
      std::vector<std::vector<std::int64_t>> table(rows.size(), std::vector<std::int64_t>(columns.size(), 0));
      const auto a = csv_column(file, names[0]);
      const auto b = csv_column(file, names[1]);
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!a[i].empty() && !b[i].empty()) ++table[level_of(rows, a[i])][level_of(columns, b[i])];
      return table;
    };
    const auto table_before = recount(before);
    const auto table_after = recount(after);
    std::int64_t records = 0;
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (std::size_t c = 0; c < columns.size(); ++c) {
        records += table_before[r][c];
        EXPECT_EQ(pair["counts_before"][r][c], reported(table_before[r][c])) << r << ", " << c;
        EXPECT_EQ(pair["counts_after"][r][c], reported(table_after[r][c])) << r << ", " << c;
        EXPECT_EQ(pair["estimate"][r][c].is_null(), reported(table_before[r][c]).is_string()) << r << ", " << c;
      }
    EXPECT_EQ(pair["records"], records);
    const auto& loss = pair["information_loss"];
    ASSERT_TRUE(loss["rd"].is_number());
    EXPECT_GE(loss["mrd"].get<double>(), loss["rd"].get<double>());
  }
  EXPECT_EQ(results["two_way"][0]["prammed"], (nlohmann::json{true, false})) << "sex is a stratum variable";
  EXPECT_EQ(results["two_way"][2]["prammed"], (nlohmann::json{false, true}));
  EXPECT_LT(results["two_way"][2]["records"].get<std::int64_t>(), 2000) << "records missing a region are left out";
  // marstat:sex has only large cells. Per stratum (sex) the estimate has one non-zero column, and its
  // row sums are the one-way estimate of marstat (P_Y⁻¹ 1 = 1): the strata's estimates are summed.
  const auto& by_sex = results["two_way"][0];
  const auto one_way = results["variables"][0]["estimate"].get<std::vector<double>>();
  for (std::size_t r = 0; r < one_way.size(); ++r)
    EXPECT_NEAR(by_sex["estimate"][r][0].get<double>() + by_sex["estimate"][r][1].get<double>(), one_way[r],
                1e-9 * 2000)
        << r;

  // Group means of income per original category, recomputed from the input.
  const auto income = csv_column(before, "income");
  for (const auto& variable : results["variables"]) {
    const std::string name = variable["variable"];
    SCOPED_TRACE(name);
    const auto& regression = variable["regression"];
    EXPECT_EQ(regression["target"], "income");
    EXPECT_EQ(regression["records"], 2000);
    const auto levels = variable["levels"].get<std::vector<std::string>>();
    std::vector<double> sums(levels.size(), 0.0);
    std::vector<std::int64_t> counts(levels.size(), 0);
    const auto values = csv_column(before, name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      sums[level_of(levels, values[i])] += std::stod(income[i]);
      ++counts[level_of(levels, values[i])];
    }
    for (std::size_t k = 0; k < levels.size(); ++k) {
      if (counts[k] < 3) {
        EXPECT_TRUE(regression["mean_before"][k].is_null()) << k;
        continue;
      }
      const double mean = sums[k] / static_cast<double>(counts[k]);
      EXPECT_NEAR(regression["mean_before"][k].get<double>(), mean, 1e-9 * mean) << k;
      EXPECT_TRUE(regression["mean_estimate"][k].is_number()) << k;
    }
    const auto& loss = regression["information_loss"];
    EXPECT_EQ(loss["measured"], static_cast<std::int64_t>(levels.size())) << "every category has records and a mean";
    EXPECT_EQ(loss["empty"], 0);
    EXPECT_EQ(loss["zero_mean"], 0);
    ASSERT_TRUE(loss["lrd"].is_number());
    EXPECT_GE(loss["mlrd"].get<double>(), loss["lrd"].get<double>());
  }
  // pd 0.8, alpha 0.5 on 500 records per category: the marstat means come back within a few percent.
  EXPECT_LT(results["variables"][0]["regression"]["information_loss"]["mlrd"].get<double>(), 0.2);
}

TEST_F(SdcPram, AJobStepTakesPerVariableMatricesTwoWayPairsAndARegressionTargetAsKeys) {
  const auto command =
      pram({"--variables", "marstat,education", "--strata", "sex", "--matrix",
            "education=block:1/nE:0.6:3/nB:0.6:2:2,marstat=nF:0.7", "--two-way", "marstat:education,region:marstat",
            "--regression-target", "income", "--report", (dir_ / "c.json").string()});
  ASSERT_EQ(command.exit_code, 0) << command.err;
  write_text(dir_ / "seed", "424242\n");
  std::filesystem::permissions(dir_ / "seed", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  write_text(dir_ / "job.yaml", "version: 1\ninput: " + input_.string() + "\noutput_dir: " + dir_.path().string() +
                                    "\nreport: " + (dir_ / "job.json").string() +
                                    "\nseed_file: " + (dir_ / "seed").string() +
                                    "\n"
                                    "steps:\n"
                                    "  - method: pram\n"
                                    "    name: released\n"
                                    "    variables: [marstat, education]\n"
                                    "    strata: [sex]\n"
                                    "    matrix: [\"education=block:1/nE:0.6:3/nB:0.6:2:2\", marstat=nF:0.7]\n"
                                    "    two-way: [\"marstat:education\", \"region:marstat\"]\n"
                                    "    regression-target: income\n");
  const auto job = run_without_seed_variable({"run", (dir_ / "job.yaml").string()});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(validate_report(dir_ / "job.json"), "");
  EXPECT_EQ(digest_of(dir_ / "released.h5"), digest_of(dir_ / "out.h5"));
  const auto from_job = nlohmann::json::parse(read_text(dir_ / "job.json"))["steps"][0];
  const auto from_command = nlohmann::json::parse(read_text(dir_ / "c.json"))["steps"][0];
  EXPECT_EQ(from_job["results"], from_command["results"]);
  EXPECT_EQ(from_job["parameters"]["matrix"]["education"], "block:1/nE:0.6:3/nB:0.6:2:2");
  EXPECT_EQ(from_job["results"]["two_way"].size(), 2U);
}

TEST_F(SdcPram, RejectsABadPerVariableOrBlockMatrixNamingTheVariable) {
  const auto spec = pram({"--variables", "marstat,sex", "--matrix", "sex=nE:0.9,marstat=nX:0.5"});
  EXPECT_EQ(spec.exit_code, 2);
  EXPECT_NE(spec.err.find("--matrix marstat: expected reference, nE:P"), std::string::npos) << spec.err;
  const auto unknown = pram({"--variables", "marstat", "--matrix", "nosuch=nE:0.5"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--matrix: variable 'nosuch' is not one of --variables"), std::string::npos)
      << unknown.err;
  const auto sizes = pram({"--variables", "sex,marstat", "--matrix", "marstat=block:1/nE:0.8:2"});
  EXPECT_EQ(sizes.exit_code, 2);
  EXPECT_NE(sizes.err.find("the block sizes add up to 3, but variable 'marstat' has 4 levels"), std::string::npos)
      << sizes.err;
  const auto frequency = pram({"--variables", "marstat", "--matrix", "marstat=block:1/1/nF:0.6:2"});
  EXPECT_EQ(frequency.exit_code, 2);
  EXPECT_NE(frequency.err.find("block 'nF:0.6:2': the nF family needs at least 3 categories"), std::string::npos)
      << frequency.err;
  const auto empty = pram({"--variables", "marstat", "--matrix", "marstat=block:1//nE:0.8:2"});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  write_text(dir_ / "sex.csv", "from,male,female\nfemale,0.25,0.75\nmale,1,0\n");
  const auto both =
      pram({"--variables", "sex", "--matrix", "sex=nE:0.9", "--matrix-file", "sex=" + (dir_ / "sex.csv").string()});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("variable 'sex' also has a --matrix"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(SdcPram, RejectsABadTwoWayPairNamingIt) {
  const auto malformed = pram({"--variables", "marstat", "--two-way", "marstat"});
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_NE(malformed.err.find("--two-way: expected VAR1:VAR2, got 'marstat'"), std::string::npos) << malformed.err;
  const auto unperturbed = pram({"--variables", "marstat", "--two-way", "sex:region"});
  EXPECT_EQ(unperturbed.exit_code, 2);
  EXPECT_NE(unperturbed.err.find("at least one must be PRAMmed"), std::string::npos) << unperturbed.err;
  EXPECT_EQ(pram({"--variables", "marstat", "--two-way", "marstat:marstat"}).exit_code, 2);
  EXPECT_EQ(pram({"--variables", "marstat", "--two-way", "marstat:sex,marstat:sex"}).exit_code, 2);
  const auto continuous = pram({"--variables", "marstat", "--two-way", "marstat:income"});
  EXPECT_EQ(continuous.exit_code, 3);
  EXPECT_NE(continuous.err.find("'income' is continuous, expected categorical"), std::string::npos) << continuous.err;
  const auto unknown = pram({"--variables", "marstat", "--two-way", "nosuch:marstat"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(SdcPram, RejectsARegressionTargetThatIsNotContinuous) {
  const auto categorical = pram({"--variables", "marstat", "--regression-target", "sex"});
  EXPECT_EQ(categorical.exit_code, 3);
  EXPECT_NE(categorical.err.find("'sex' is categorical, expected continuous"), std::string::npos) << categorical.err;
  const auto unknown = pram({"--variables", "marstat", "--regression-target", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  EXPECT_EQ(pram({"--variables", "marstat", "--regression-target", "marstat"}).exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
  // In a job, the check before anything runs names the key.
  write_text(dir_ / "job.yaml", "version: 1\ninput: " + input_.string() + "\noutput_dir: " + dir_.path().string() +
                                    "\n"
                                    "steps:\n"
                                    "  - method: pram\n"
                                    "    variables: [marstat]\n"
                                    "    two-way: [\"marstat:income\"]\n"
                                    "    regression-target: sex\n");
  const auto job = run_sdc({"run", (dir_ / "job.yaml").string()}, {{"SDC_SEED", "424242"}});
  EXPECT_EQ(job.exit_code, 4) << job.err;
  EXPECT_NE(job.err.find("regression-target: variable 'sex' is categorical, expected continuous"), std::string::npos)
      << job.err;
  EXPECT_NE(job.err.find("two-way: variable 'income' is continuous, expected categorical"), std::string::npos)
      << job.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "1-pram.h5"));
}

TEST(SdcPramReport, StaysBoundedForManyCategoriesAndManyStrata) {
  TempDir dir;
  std::ostringstream csv;
  csv << "area,sex\n";
  for (int row = 0; row < 1200; ++row) csv << "a" << row % 120 << ',' << (row % 7 < 3 ? "male" : "female") << '\n';
  write_text(dir / "areas.csv", csv.str());
  ASSERT_EQ(run_sdc({"import", (dir / "areas.csv").string(), "-o", (dir / "areas.h5").string()}).exit_code, 0);
  const auto run = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> args{"pram",
                                  "-i",
                                  (dir / "areas.h5").string(),
                                  "-o",
                                  (dir / "out.h5").string(),
                                  "--report",
                                  (dir / "r.json").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "5"}});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(dir / "r.json"), "");
    return nlohmann::json::parse(read_text(dir / "r.json"))["steps"][0]["results"];
  };
  // 120 categories: the matrices are summarised by their diagonals.
  const auto categories = run({"--variables", "area"});
  const auto& stratum = categories["variables"][0]["strata"][0];
  EXPECT_TRUE(stratum["p"].is_null());
  EXPECT_TRUE(stratum["drawn"].is_null());
  EXPECT_EQ(stratum["drawn_diagonal"].size(), 120U);
  EXPECT_EQ(categories["variables"][0]["rare_cells"], 120) << "10 records each, below tau = 100";
  // 120 strata: only the totals.
  const auto strata = run({"--variables", "sex", "--strata", "area"});
  EXPECT_EQ(strata["strata"], 120);
  EXPECT_EQ(strata["strata_listed"], false);
  EXPECT_TRUE(strata["variables"][0]["strata"].empty());
  EXPECT_EQ(strata["variables"][0]["counts_before"], (std::vector<std::int64_t>{684, 516}))
      << "female, male (sorted levels)";
}

TEST_F(SdcPram, RejectsANonCategoricalOrUnknownVariableNamingIt) {
  const auto continuous = pram({"--variables", "marstat,income"});
  EXPECT_EQ(continuous.exit_code, 3);
  EXPECT_NE(continuous.err.find("'income' is continuous, expected categorical"), std::string::npos) << continuous.err;
  const auto unknown = pram({"--variables", "marstat,nosuch"});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
  EXPECT_EQ(pram({"--variables", "marstat", "--strata", "marstat"}).exit_code, 2);
  EXPECT_EQ(pram({"--variables", "marstat", "--matrix", "nX:0.5"}).exit_code, 2);
  EXPECT_EQ(pram({"--variables", "marstat", "--pd", "1.5"}).exit_code, 2);
  EXPECT_EQ(pram({"--variables", "sex", "--matrix", "nF:0.6"}).exit_code, 2) << "nF needs 3 categories";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(SdcPram, RejectsABadMatrixFileNamingTheFileTheLineAndTheLabel) {
  write_text(dir_ / "bad.csv",
             "from,male,female\n"
             "male,0.9,0.1\n"
             "female,0.3,0.6\n");
  const auto sums = pram({"--variables", "sex", "--matrix-file", "sex=" + (dir_ / "bad.csv").string()});
  EXPECT_EQ(sums.exit_code, 3);
  EXPECT_NE(sums.err.find((dir_ / "bad.csv").string() + ": line 3, row 'female': sums to 0.9"), std::string::npos)
      << sums.err;
  write_text(dir_ / "label.csv",
             "from,male,female\n"
             "male,0.9,0.1\n"
             "woman,0.3,0.7\n");
  const auto label = pram({"--variables", "sex", "--matrix-file", "sex=" + (dir_ / "label.csv").string()});
  EXPECT_EQ(label.exit_code, 3);
  EXPECT_NE(label.err.find("label.csv: line 3: label 'woman' is not a level of variable 'sex'"), std::string::npos)
      << label.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

TEST_F(SdcPram, NeedsASeed) {
  const auto result = run_without_seed_variable(
      {"pram", "-i", input_.string(), "-o", (dir_ / "out.h5").string(), "--variables", "sex"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("seed"), std::string::npos) << result.err;
  write_text(dir_ / "job.yaml",
             "version: 1\n"
             "input: " +
                 input_.string() +
                 "\n"
                 "output_dir: " +
                 dir_.path().string() +
                 "\n"
                 "steps:\n"
                 "  - method: pram\n"
                 "    variables: [sex]\n");
  const auto job = run_without_seed_variable({"run", (dir_ / "job.yaml").string()});
  EXPECT_EQ(job.exit_code, 4) << job.err;
  EXPECT_NE(job.err.find("needs a seed"), std::string::npos) << job.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

}  // namespace
}  // namespace sdc::testing
