// `sdc swap rank` as a user runs it: sdcMicro's rankSwap oracle of docs/methods swapping.md §5 read back
// with `sdc export`, native mode keeping every variable's values and giving the same file twice, the
// step in a job, and every refusal with its exit code, a message naming what is wrong and no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// x = 1…20 and y = 10, 20, …, 200 as continuous variables, and a categorical one.
std::filesystem::path twenty_records(const TempDir& dir) {
  std::string csv = "x,y,group\n";
  for (int i = 1; i <= 20; ++i)
    csv += std::to_string(i) + "," + std::to_string(10 * i) + "," + (i % 2 ? "a" : "b") + "\n";
  write_text(dir / "twenty.csv", csv);
  const auto h5 = dir / "twenty.h5";
  const auto imported = run_sdc({"import", (dir / "twenty.csv").string(), "-o", h5.string(), "--type", "x=continuous",
                                 "--type", "y=continuous", "--type", "group=categorical"});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  return h5;
}

std::vector<std::vector<std::string>> exported(const TempDir& dir, const std::filesystem::path& h5) {
  const auto csv = dir / (h5.stem().string() + ".csv");
  const auto result = run_sdc({"export", h5.string(), "-o", csv.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return read_csv_fields(csv);
}

nlohmann::json step_results(const std::filesystem::path& report) {
  return nlohmann::json::parse(read_text(report))["steps"][0]["results"];
}

TEST(ARankSwap, ReproducesTheReferenceOnTwoVariablesSharingItsTaus88Stream) {
  TempDir dir;
  const auto input = twenty_records(dir);
  const auto report = dir / "swap.json";
  const auto result = run_sdc({"swap", "rank", input.string(), "-o", (dir / "swapped.h5").string(), "--variables",
                               "x,y", "--top-percent", "0", "--bottom-percent", "0", "--window-fraction", "0.2",
                               "--mode", "compat", "--reference-seed", "1", "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto rows = exported(dir, dir / "swapped.h5");
  EXPECT_EQ(csv_numbers(rows, "x"),
            (std::vector<double>{3, 5, 1, 6, 2, 4, 8, 7, 12, 13, 14, 9, 10, 11, 18, 19, 20, 15, 16, 17}));
  EXPECT_EQ(csv_numbers(rows, "y"), (std::vector<double>{20, 10,  50,  70,  30,  90,  40,  110, 60,  120,
                                                         80, 100, 140, 130, 170, 190, 150, 200, 160, 180}));
  const auto results = step_results(report);
  EXPECT_EQ(results["variables"][0]["top_coded"], 0);
  EXPECT_EQ(results["variables"][0]["window_fraction"], 0.2);
  EXPECT_EQ(results["swapped_values"], 40);
}

TEST(ARankSwap, KeepsEveryVariablesValuesAndGivesTheSameFileTwiceInNativeMode) {
  TempDir dir;
  std::mt19937_64 engine(7);
  std::uniform_int_distribution<int> value(0, 500);
  std::string csv = "income,rent\n";
  for (int i = 0; i < 500; ++i) csv += std::to_string(value(engine)) + "," + std::to_string(value(engine)) + "\n";
  write_text(dir / "survey.csv", csv);
  const auto input = dir / "survey.h5";
  ASSERT_EQ(run_sdc({"import", (dir / "survey.csv").string(), "-o", input.string(), "--type", "income=continuous",
                     "--type", "rent=continuous"})
                .exit_code,
            0);
  const std::map<std::string, std::string> seed{{"SDC_SEED", "20261126"}};
  std::vector<std::string> digests;
  for (const std::string name : {"first", "second"}) {
    const auto output = dir / (name + ".h5");
    const auto report = dir / (name + ".json");
    const auto result =
        run_sdc({"swap", "rank", input.string(), "-o", output.string(), "--variables", "income,rent", "--top-percent",
                 "0", "--bottom-percent", "0", "--window-percent", "5", "--report", report.string()},
                seed);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(report), "");
    EXPECT_GT(step_results(report)["swapped_values"].get<int>(), 400);
    const auto info = run_sdc({"info", output.string(), "--digest", "--json"});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    digests.push_back(nlohmann::json::parse(info.out)["content_digest"].get<std::string>());
  }
  EXPECT_EQ(digests[0], digests[1]);
  const auto before = read_csv_fields(dir / "survey.csv");
  const auto after = exported(dir, dir / "first.h5");
  for (const std::string variable : {"income", "rent"}) {
    auto original = csv_numbers(before, variable);
    auto swapped = csv_numbers(after, variable);
    EXPECT_NE(original, swapped) << variable;
    std::sort(original.begin(), original.end());
    std::sort(swapped.begin(), swapped.end());
    EXPECT_EQ(original, swapped) << variable << ": without top and bottom coding the values are only moved";
  }
}

TEST(ARankSwap, RunsAsAJobStep) {
  TempDir dir;
  const auto input = twenty_records(dir);
  write_text(dir / "job.yaml",
             "version: 1\n"
             "input: " +
                 input.string() +
                 "\n"
                 "output_dir: " +
                 (dir / "out").string() +
                 "\n"
                 "steps:\n"
                 "  - method: swap rank\n"
                 "    variables: [x, y]\n"
                 "    top-percent: 0\n"
                 "    bottom-percent: 0\n"
                 "    window-fraction: 0.2\n"
                 "    mode: compat\n"
                 "    reference-seed: 1\n");
  const auto result = run_sdc({"run", (dir / "job.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::filesystem::path> outputs;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out"))
    if (entry.path().extension() == ".h5") outputs.push_back(entry.path());
  ASSERT_EQ(outputs.size(), 1U);
  EXPECT_EQ(csv_numbers(exported(dir, outputs[0]), "x"),
            (std::vector<double>{3, 5, 1, 6, 2, 4, 8, 7, 12, 13, 14, 9, 10, 11, 18, 19, 20, 15, 16, 17}));
}

TEST(ARankSwap, RefusesBadFlagsAndDataNamingThemAndWritesNothing) {
  TempDir dir;
  const auto input = twenty_records(dir);
  const auto output = dir / "swapped.h5";
  struct Case {
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"--variables", "group", "--mode", "compat", "--reference-seed", "1"}, 3, "group"},
      {{"--variables", "x", "--r0", "0.9", "--k0", "1", "--mode", "compat", "--reference-seed", "1"},
       2,
       "give at most one"},
      {{"--variables", "x", "--mode", "compat"}, 2, "--reference-seed"},
      {{"--variables", "x", "--window-percent", "0", "--mode", "compat", "--reference-seed", "1"},
       2,
       "--window-percent"},
      {{"--variables", "x,x", "--mode", "compat", "--reference-seed", "1"}, 2, "given twice"},
      {{"--variables", "x", "--top-percent", "101", "--mode", "compat", "--reference-seed", "1"}, 2, "--top-percent"},
      {{"--variables", "x", "--reference-seed", "1"}, 2, "--reference-seed"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"swap", "rank", input.string(), "-o", output.string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    const std::string what = c.flags[1] + " " + c.flags[2];
    EXPECT_EQ(result.exit_code, c.exit_code) << what << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << what << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << what;
  }
}

}  // namespace
}  // namespace sdc::testing
