// `sdc perturb-table bootstrap|cell|simulate` under mpirun: equal output digests and equal reports for
// 1, 2 and 3 ranks and 1 or 2 threads. The table's rows are read across the ranks, gathered on the
// coordinator in row order and the published counts sent back; the draws are keyed by cell, and the
// simulation's (S, M) pairs are dealt to the ranks, each drawn from the seed and its own S and M.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::string kSeed = "20261130";

/// (ranks, threads per rank).
using Layout = std::pair<int, int>;
const std::vector<Layout> kLayouts{{1, 1}, {2, 1}, {3, 1}, {2, 2}};

std::string layout_name(const std::string& name, Layout layout) {
  return name + "-" + std::to_string(layout.first) + "x" + std::to_string(layout.second);
}

/// About 15 000 persons tabulated by nuts1 > nuts2 > nuts3 × sex × agegroup.
std::filesystem::path census_table(const TempDir& dir) {
  const auto environment = mpi_environment({{"SDC_SEED", kSeed}});
  const auto census = dir / "census.h5";
  const auto cells = dir / "cells.h5";
  EXPECT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "5000", "-o", census.string()},
                  environment)
          .exit_code,
      0);
  const auto tabulated =
      run_process({sdc_executable().string(), "table", "tabulate", "-i", census.string(), "-o", cells.string(),
                   "--geography", "nuts1,nuts2,nuts3", "--dimensions", "sex,agegroup"},
                  environment);
  EXPECT_EQ(tabulated.exit_code, 0) << tabulated.err;
  return cells;
}

/// Runs `sdc --threads T perturb-table <args> --report <name>-RxT.json` on R ranks; returns the report's
/// results (null when the run failed).
nlohmann::json run_layout(const TempDir& dir, const std::string& name, Layout layout,
                          const std::vector<std::string>& args) {
  const auto report = dir / (layout_name(name, layout) + ".json");
  std::vector<std::string> full{"--threads", std::to_string(layout.second), "perturb-table"};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {"--report", report.string()});
  const auto result = run_sdc_mpi(layout.first, full, {{"SDC_SEED", kSeed}});
  EXPECT_EQ(result.exit_code, 0) << name << ", " << layout.first << " ranks, " << layout.second << " threads:\n"
                                 << result.err;
  if (result.exit_code != 0) return nullptr;
  EXPECT_EQ(validate_report(report), "") << layout_name(name, layout);
  return nlohmann::json::parse(read_text(report))["steps"][0]["results"];
}

/// Runs a protection of the table on every layout: equal content digests and results.
void expect_equal_protections(const TempDir& dir, const std::filesystem::path& cells, const std::string& name,
                              const std::vector<std::string>& method_and_flags) {
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const Layout& layout : kLayouts) {
    const auto output = dir / (layout_name(name, layout) + ".h5");
    std::vector<std::string> args = method_and_flags;
    args.insert(args.end(), {"-i", cells.string(), "-o", output.string()});
    results.push_back(run_layout(dir, name, layout, args));
    if (results.back().is_null()) return;
    digests.push_back(digest_of(output));
  }
  EXPECT_GT(results.front()["perturbed_cells"].get<std::int64_t>(), 0) << name;
  print_digest(name, digests.front());
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << name << ", run " << i;
    EXPECT_EQ(results[i], results.front()) << name << ", run " << i;
  }
}

TEST(AResamplingMpiRun, GivesEqualDigestsOfTheBootstrapForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto cells = census_table(dir);
  expect_equal_protections(dir, cells, "bootstrap", {"bootstrap", "--quality-s", "4"});
  expect_equal_protections(dir, cells, "bootstrap-averaged", {"bootstrap", "--quality-s", "2", "--average-m", "3"});
}

TEST(AResamplingMpiRun, GivesEqualDigestsOfTheCellPerturbationForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto cells = census_table(dir);
  expect_equal_protections(dir, cells, "cell", {"cell"});
  expect_equal_protections(dir, cells, "cell-by-area", {"cell", "--preserve-margins", "nuts3"});
}

TEST(AResamplingMpiRun, GivesEqualSimulationsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  std::vector<nlohmann::json> results;
  for (const Layout& layout : kLayouts) {
    results.push_back(run_layout(dir, "simulate", layout, {"simulate", "--draws", "20000"}));
    if (results.back().is_null()) return;
  }
  EXPECT_EQ(results.front()["pairs"].size(), 9U);
  for (std::size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i], results.front()) << "run " << i;
}

}  // namespace
}  // namespace sdc::testing
