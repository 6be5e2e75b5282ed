// `sdc swap frontier` as a user runs it: the report, the frontier table and plot beside it, the
// released file against the method's promises (only the chosen attributes move, every one-way margin
// and every within-region margin is kept, the risk of the release recomputed here from the two files),
// the step in a job, every refusal with its exit code and no output, and the same figures and file for
// 1, 2 and 3 ranks and 1 or 2 threads.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// 3 000 records over a (4 levels), b (3), c (up to 30, rare ones above 10) and region (2), drawn with
/// a fixed seed: b leans on a so that swapping it costs utility, and the rare values of c make small
/// cells.
std::filesystem::path survey(const TempDir& dir) {
  std::mt19937 random(20261126);
  std::string csv = "a,b,c,region\n";
  for (int i = 0; i < 3000; ++i) {
    const int a = static_cast<int>(random() % 4);
    const int b = random() % 3 == 0 ? a % 3 : static_cast<int>(random() % 3);
    const int c = random() % 10 == 0 ? 10 + static_cast<int>(random() % 20) : static_cast<int>(random() % 10);
    csv += "a" + std::to_string(a) + ",b" + std::to_string(b) + ",c" + std::to_string(c) + ",r" +
           std::to_string(random() % 2) + "\n";
  }
  write_text(dir / "survey.csv", csv);
  const auto h5 = dir / "survey.h5";
  const auto imported = run_sdc({"import", (dir / "survey.csv").string(), "-o", h5.string(), "--type", "a=categorical",
                                 "--type", "b=categorical", "--type", "c=categorical", "--type", "region=categorical"});
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

std::map<std::string, int> counts_of(const std::vector<std::string>& values) {
  std::map<std::string, int> counts;
  for (const auto& value : values) ++counts[value];
  return counts;
}

TEST(ASwapFrontier, ReleasesTheBestCandidateUnderTheBoundKeepingMarginsAndItsRisk) {
  TempDir dir;
  const auto input = survey(dir);
  const auto output = dir / "released.h5";
  const auto report = dir / "frontier.json";
  const auto result = run_sdc({"swap",
                               "frontier",
                               "-i",
                               input.string(),
                               "-o",
                               output.string(),
                               "--report",
                               report.string(),
                               "--variables",
                               "a,b,c",
                               "--within",
                               "region",
                               "--rates",
                               "0.02,0.1,0.3",
                               "--replicates",
                               "3",
                               "--risk-bound",
                               "0.2",
                               "--unchanged-count-as-unswapped",
                               "--loglinear",
                               "independence;a*b+c"},
                              {{"SDC_SEED", "7"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = step_results(report);
  // Each single attribute and each pair, at three rates.
  ASSERT_EQ(results["candidates"].size(), 18U);
  EXPECT_EQ(results["loglinear"]["model"], "a*b+c");  // BIC prefers the model with the a–b link
  EXPECT_GT(results["original_disclosure_risk"].get<double>(), 0.0);

  // The frontier: no candidate dominates a frontier point, and every other point is dominated.
  std::set<int> frontier;
  for (const auto& c : results["frontier"]) frontier.insert(c.get<int>());
  const auto& candidates = results["candidates"];
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const double ri = candidates[i]["disclosure_risk"].get<double>();
    const double ui = candidates[i]["utility"].get<double>();
    bool dominated = false;
    for (std::size_t j = 0; j < candidates.size(); ++j) {
      const double rj = candidates[j]["disclosure_risk"].get<double>();
      const double uj = candidates[j]["utility"].get<double>();
      dominated = dominated || (rj <= ri && uj >= ui && (rj < ri || uj > ui));
    }
    EXPECT_EQ(frontier.count(static_cast<int>(i)) == 1, !dominated) << "candidate " << i;
    EXPECT_EQ(candidates[i]["on_frontier"].get<bool>(), !dominated) << "candidate " << i;
  }

  // The release: the chosen candidate, within the bound.
  const auto& chosen = results["chosen"];
  ASSERT_FALSE(chosen.is_null());
  EXPECT_LE(chosen["disclosure_risk"].get<double>(), 0.2);
  std::set<std::string> swapped;
  for (const auto& name : chosen["swap_attributes"]) swapped.insert(name.get<std::string>());

  const auto before = exported(dir, input);
  const auto after = exported(dir, output);
  ASSERT_EQ(before.size(), after.size());
  for (const std::string name : {"a", "b", "c", "region"}) {
    const auto original = csv_column(before, name);
    const auto released = csv_column(after, name);
    if (swapped.count(name) == 0) {
      EXPECT_EQ(released, original) << name << " is not swapped";
      continue;
    }
    EXPECT_NE(released, original) << name << " is swapped";
    EXPECT_EQ(counts_of(released), counts_of(original)) << name << ": swapping keeps the one-way margin";
    // Pairs stay within a region: the margin within each region is kept too.
    const auto region = csv_column(before, "region");
    std::vector<std::string> original_by_region;
    std::vector<std::string> released_by_region;
    for (std::size_t i = 0; i < region.size(); ++i) {
      original_by_region.push_back(region[i] + "/" + original[i]);
      released_by_region.push_back(region[i] + "/" + released[i]);
    }
    EXPECT_EQ(counts_of(released_by_region), counts_of(original_by_region)) << name;
  }

  // DR of the release from the files alone: with unchanged pair members counted as unswapped, the
  // unswapped records are those whose values did not change.
  std::map<std::string, int> released_cells;
  std::vector<std::string> cell(after.size() - 1);
  std::vector<bool> unchanged(after.size() - 1);
  const auto a0 = csv_column(before, "a"), b0 = csv_column(before, "b"), c0 = csv_column(before, "c");
  const auto a1 = csv_column(after, "a"), b1 = csv_column(after, "b"), c1 = csv_column(after, "c");
  for (std::size_t i = 0; i < cell.size(); ++i) {
    cell[i] = a1[i] + "," + b1[i] + "," + c1[i];
    unchanged[i] = a0[i] == a1[i] && b0[i] == b1[i] && c0[i] == c1[i];
    ++released_cells[cell[i]];
  }
  int unswapped = 0;
  int small = 0;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (!unchanged[i]) continue;
    ++unswapped;
    if (released_cells[cell[i]] <= 2) ++small;
  }
  EXPECT_DOUBLE_EQ(chosen["disclosure_risk"].get<double>(), static_cast<double>(small) / unswapped);
  EXPECT_EQ(chosen["records_changed"].get<int>(), static_cast<int>(cell.size()) - unswapped);

  // The table and the plot beside the output.
  const auto table = read_csv_fields(dir / "released.frontier.csv");
  EXPECT_EQ(table.size(), 19U);
  EXPECT_NE(read_text(dir / "released.frontier.svg").find("<svg"), std::string::npos);

  // The same seed gives the same file.
  const auto again = dir / "again.h5";
  const auto rerun = run_sdc({"swap", "frontier", "-i", input.string(), "-o", again.string(), "--variables", "a,b,c",
                              "--within", "region", "--rates", "0.02,0.1,0.3", "--replicates", "3", "--risk-bound",
                              "0.2", "--unchanged-count-as-unswapped", "--loglinear", "independence;a*b+c"},
                             {{"SDC_SEED", "7"}});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(digest_of(again), digest_of(output));
}

TEST(ASwapFrontier, WritesOnlyTheFrontierWithoutAnOutputAndRunsAsAJobStep) {
  TempDir dir;
  const auto input = survey(dir);
  const auto report = dir / "r.json";
  const auto result = run_sdc(
      {"swap", "frontier", "-i", input.string(), "--report", report.string(), "--variables", "a,b", "--swap-attributes",
       "b", "--rates", "0.05", "--replicates", "2", "--utility", "loglinear", "--loglinear", "a*b"},
      {{"SDC_SEED", "7"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = step_results(report);
  EXPECT_EQ(results["candidates"].size(), 1U);
  EXPECT_TRUE(results["chosen"].is_null());
  // Swapping b alone breaks the a–b link that the saturated model a*b holds: the likelihood drops.
  EXPECT_LT(results["candidates"][0]["loglinear_utility"].get<double>(), 0.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "r.frontier.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "r.frontier.svg"));

  write_text(dir / "job.yaml", "version: 1\ninput: " + input.string() + "\noutput_dir: " + (dir / "out").string() +
                                   "\nsteps:\n"
                                   "  - method: swap frontier\n"
                                   "    variables: [a, b, c]\n"
                                   "    swap-attributes: [b, \"a,c\"]\n"
                                   "    rates: [0.05, 0.1]\n"
                                   "    replicates: 2\n"
                                   "    risk-bound: 0.5\n");
  std::filesystem::create_directories(dir / "out");
  const auto job =
      run_sdc({"run", (dir / "job.yaml").string(), "--report", (dir / "job.json").string()}, {{"SDC_SEED", "7"}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const auto job_results = nlohmann::json::parse(read_text(dir / "job.json"))["steps"][0]["results"];
  EXPECT_EQ(job_results["candidates"].size(), 4U);
  EXPECT_FALSE(job_results["chosen"].is_null());
  bool table_written = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out"))
    table_written = table_written || entry.path().string().ends_with(".frontier.csv");
  EXPECT_TRUE(table_written);
}

TEST(ASwapFrontier, RefusesBadFlagsNamingThemAndWritesNothing) {
  TempDir dir;
  const auto input = survey(dir);
  const auto output = dir / "released.h5";
  struct Case {
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"--variables", "a,b", "--rates", "0", "--risk-bound", "0.5"}, 2, "--rates"},
      {{"--variables", "a,b", "--rates", "1.5", "--risk-bound", "0.5"}, 2, "--rates"},
      {{"--variables", "a,b", "--swap-attributes", "c", "--risk-bound", "0.5"}, 2, "--swap-attributes"},
      {{"--variables", "a,b", "--within", "a", "--risk-bound", "0.5"}, 2, "--within"},
      {{"--variables", "a,b"}, 2, "--risk-bound"},
      {{"--variables", "a,b", "--utility", "kl", "--risk-bound", "0.5"}, 2, "--utility"},
      {{"--variables", "a,b", "--loglinear", "a*z", "--risk-bound", "0.5"}, 2, "--loglinear"},
      {{"--variables", "a,a", "--risk-bound", "0.5"}, 2, "given twice"},
      {{"--variables", "a,nope", "--risk-bound", "0.5"}, 3, "nope"},
      {{"--variables", "a,b", "--replicates", "0", "--risk-bound", "0.5"}, 2, "--replicates"},
      {{"--variables", "a,c", "--risk-bound", "0"}, 4, "--risk-bound"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"swap", "frontier", "-i", input.string(), "-o", output.string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    std::string what;
    for (const auto& flag : c.flags) what += flag + " ";
    EXPECT_EQ(result.exit_code, c.exit_code) << what << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << what << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << what;
    EXPECT_FALSE(std::filesystem::exists(dir / "released.frontier.csv")) << what;
  }
  // Without an output, a report or frontier files, the frontier has nowhere to go.
  const auto nowhere = run_sdc({"swap", "frontier", "-i", input.string(), "--variables", "a,b"}, {{"SDC_SEED", "1"}});
  EXPECT_EQ(nowhere.exit_code, 2);
  EXPECT_NE(nowhere.err.find("--frontier-table"), std::string::npos) << nowhere.err;
}

TEST(ASwapFrontier, GivesTheSameFileAndFiguresForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto input = survey(dir);
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  std::vector<std::string> tables;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {2, 2}}) {
    const std::string name = "run-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto output = dir / (name + ".h5");
    const auto report = dir / (name + ".json");
    const auto result = run_sdc_mpi(ranks, {"--threads",    std::to_string(threads),
                                            "swap",         "frontier",
                                            "-i",           input.string(),
                                            "-o",           output.string(),
                                            "--report",     report.string(),
                                            "--variables",  "a,b,c",
                                            "--within",     "region",
                                            "--rates",      "0.05,0.2",
                                            "--replicates", "4",
                                            "--risk-bound", "0.3",
                                            "--loglinear",  "two-way"},
                                    {{"SDC_SEED", "11"}});
    ASSERT_EQ(result.exit_code, 0) << name << ":\n" << result.err;
    digests.push_back(digest_of(output));
    auto figures = step_results(report);
    figures.erase("frontier_table");
    figures.erase("frontier_plot");
    results.push_back(figures);
    tables.push_back(read_text(dir / (name + ".frontier.csv")));
  }
  print_digest("swap-frontier", digests.front());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << "run " << i;
    EXPECT_EQ(results[i], results.front()) << "run " << i;
    EXPECT_EQ(tables[i], tables.front()) << "run " << i;
  }
}

}  // namespace
}  // namespace sdc::testing
