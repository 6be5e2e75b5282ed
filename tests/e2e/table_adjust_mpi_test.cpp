// `sdc perturb-table adjust` under mpirun: the blocks of the reordered equations are dealt to the
// ranks and factored there, the linking equations solved on every rank from the shared per-block
// parts; equal output digests and equal figures for 1, 2 and 3 ranks and 1 or 2 threads.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::string kSeed = "20261127";

/// (ranks, threads per rank).
using Layout = std::pair<int, int>;
const std::vector<Layout> kLayouts{{1, 1}, {2, 1}, {3, 1}, {1, 2}, {2, 2}};

/// About 15 000 persons tabulated by nuts1 > nuts2 > nuts3 × sex × agegroup with cell keys and
/// protected by the cell key method.
std::filesystem::path perturbed_table(const TempDir& dir) {
  const auto environment = mpi_environment({{"SDC_SEED", kSeed}});
  const auto run = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv{sdc_executable().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto result = run_process(argv, environment);
    EXPECT_EQ(result.exit_code, 0) << args.at(0) << ":\n" << result.err;
  };
  const auto census = dir / "census.h5";
  const auto keyed = dir / "keyed.h5";
  const auto cells = dir / "cells.h5";
  const auto perturbed = dir / "perturbed.h5";
  run({"generate", "census", "--households", "5000", "-o", census.string()});
  run({"perturb-table", "keys", "-i", census.string(), "-o", keyed.string()});
  run({"table", "tabulate", "-i", keyed.string(), "-o", cells.string(), "--geography", "nuts1,nuts2,nuts3",
       "--dimensions", "sex,agegroup", "--record-key", "record_key"});
  run({"perturb-table", "ckm", "-i", cells.string(), "-o", perturbed.string()});
  return perturbed;
}

void expect_equal_adjustments(const TempDir& dir, const std::filesystem::path& table, const std::string& name,
                              const std::vector<std::string>& flags) {
  std::vector<std::string> digests;
  std::vector<nlohmann::json> results;
  for (const Layout& layout : kLayouts) {
    const std::string run_name = name + "-" + std::to_string(layout.first) + "x" + std::to_string(layout.second);
    const auto output = dir / (run_name + ".h5");
    const auto report = dir / (run_name + ".json");
    std::vector<std::string> args{"--threads",
                                  std::to_string(layout.second),
                                  "perturb-table",
                                  "adjust",
                                  "-i",
                                  table.string(),
                                  "-o",
                                  output.string(),
                                  "--report",
                                  report.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_sdc_mpi(layout.first, args, {{"SDC_SEED", kSeed}});
    ASSERT_EQ(result.exit_code, 0) << run_name << ":\n" << result.err;
    EXPECT_EQ(validate_report(report), "") << run_name;
    digests.push_back(digest_of(output));
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
  }
  print_digest(name, digests.front());
  EXPECT_GT(results.front()["changed_cells"].get<std::int64_t>(), 0);
  for (std::size_t i = 1; i < digests.size(); ++i) {
    EXPECT_EQ(digests[i], digests.front()) << name << ", run " << i;
    for (const char* figure :
         {"max_constraint_residual", "weighted_distance", "max_absolute_change", "mean_absolute_change",
          "changed_cells", "refinements", "pcg_iterations", "block_angular"}) {
      nlohmann::json mine = results[i][figure];
      nlohmann::json first = results.front()[figure];
      if (mine.is_object()) {  // the reordering's figures, less its time
        mine.erase("reorder_seconds");
        first.erase("reorder_seconds");
      }
      EXPECT_EQ(mine, first) << name << ", run " << i << ", " << figure;
    }
  }
}

TEST(AnAdjustmentMpiRun, GivesEqualDigestsOfTheBlockAngularSolveForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto table = perturbed_table(dir);
  expect_equal_adjustments(dir, table, "adjust-blocks", {"--blocks", "6"});
  expect_equal_adjustments(dir, table, "adjust-direct", {"--solver", "direct", "--weights", "uniform"});
}

}  // namespace
}  // namespace sdc::testing
