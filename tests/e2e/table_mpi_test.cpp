// `sdc table tabulate` and the cell key method under mpirun: equal output digests and equal reports for
// 1, 2 and 3 ranks and 1 or 2 threads on a generated census, for a 5-dimensional census hypercube of
// counts and of sums (cells merged over ranks, top contributions ordered by value then record id) and
// for record keys, the hypercube of their sums and its CKM protection (keys drawn by record id, cell
// keys summed modulo M).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::string kSeed = "20261128";

/// (ranks, threads per rank).
using Layout = std::pair<int, int>;
const std::vector<Layout> kLayouts{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {2, 2}};

const std::vector<std::string> kHypercube{
    "--geography", "nuts1,nuts2,nuts3", "--dimensions", "sex,agegroup,marstat,citizenship", "--min-frequency", "3"};

/// What one layout's run of a step left: its output and the results of its report.
struct StepRun {
  std::filesystem::path output;
  std::string digest;
  nlohmann::json results;
};

/// About 15 000 persons.
std::filesystem::path census(const TempDir& dir) {
  const auto h5 = dir / "census.h5";
  const auto result =
      run_process({sdc_executable().string(), "generate", "census", "--households", "5000", "-o", h5.string()},
                  mpi_environment({{"SDC_SEED", kSeed}}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

/// Runs `sdc --threads T <command> -i input -o <name>-RxT.h5 <flags>` on R ranks, with its report.
StepRun run_step(const TempDir& dir, const std::string& name, Layout layout, const std::vector<std::string>& command,
                 const std::filesystem::path& input, const std::vector<std::string>& flags) {
  const auto [ranks, threads] = layout;
  const std::string run = name + "-" + std::to_string(ranks) + "x" + std::to_string(threads);
  const auto output = dir / (run + ".h5");
  const auto report = dir / (run + ".json");
  std::vector<std::string> args{"--threads", std::to_string(threads)};
  args.insert(args.end(), command.begin(), command.end());
  args.insert(args.end(), {"-i", input.string(), "-o", output.string(), "--report", report.string()});
  args.insert(args.end(), flags.begin(), flags.end());
  const auto result = run_sdc_mpi(ranks, args, {{"SDC_SEED", kSeed}});
  EXPECT_EQ(result.exit_code, 0) << name << ", " << ranks << " ranks, " << threads << " threads:\n" << result.err;
  if (result.exit_code != 0) return {output, {}, {}};
  EXPECT_EQ(validate_report(report), "") << run;
  return {output, digest_of(output), nlohmann::json::parse(read_text(report))["steps"][0]["results"]};
}

/// Prints the first layout's digest and expects every other layout to match it in digest and results.
void expect_equal_runs(const std::string& label, const std::vector<StepRun>& runs) {
  ASSERT_EQ(runs.size(), kLayouts.size()) << label;
  print_digest(label, runs.front().digest);
  for (std::size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].digest, runs.front().digest) << label << ", run " << i;
    EXPECT_EQ(runs[i].results, runs.front().results) << label << ", run " << i;
  }
}

TEST(ATableMpiRun, GivesEqualDigestsAndResultsOfACensusHypercubeForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto input = census(dir);
  std::vector<StepRun> runs;
  for (const Layout& layout : kLayouts) {
    runs.push_back(run_step(dir, "hypercube", layout, {"table", "tabulate"}, input, kHypercube));
    if (HasFailure()) return;
  }
  const auto& results = runs.front().results;
  EXPECT_EQ(results["kind"], "frequency");
  EXPECT_EQ(results["dimensions"].size(), 5U);
  EXPECT_GT(results["cells"].get<std::int64_t>(), 0);
  EXPECT_GT(results["statuses"]["frequency"].get<std::int64_t>(), 0);
  EXPECT_GT(results["statuses"]["safe"].get<std::int64_t>(), 0);
  expect_equal_runs("hypercube", runs);
}

// Income is zero for many persons (children, the unemployed): cells whose records have fewer non-zero
// incomes than the rules read contributions, split over ranks like any other.
TEST(ATableMpiRun, GivesEqualDigestsAndResultsOfAMagnitudeHypercubeForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto input = census(dir);
  auto flags = kHypercube;
  flags.insert(flags.end(), {"--value", "income", "--p-percent", "10", "--dominance", "2,80"});
  std::vector<StepRun> runs;
  for (const Layout& layout : kLayouts) {
    runs.push_back(run_step(dir, "income", layout, {"table", "tabulate"}, input, flags));
    if (HasFailure()) return;
  }
  const auto& results = runs.front().results;
  EXPECT_EQ(results["kind"], "magnitude");
  EXPECT_GT(results["statuses"]["p-percent"].get<std::int64_t>() + results["statuses"]["dominance"].get<std::int64_t>(),
            0);
  expect_equal_runs("income-hypercube", runs);
}

// Each layout runs the whole chain, keys included: the keys, the hypercube's cell keys and the
// published counts must not depend on how the records were split.
TEST(ATableMpiRun, GivesEqualDigestsAndResultsOfKeysAndACellKeyProtectedHypercubeForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto input = census(dir);
  auto keyed_hypercube = kHypercube;
  keyed_hypercube.insert(keyed_hypercube.end(), {"--record-key", "record_key"});
  std::vector<StepRun> keys;
  std::vector<StepRun> hypercubes;
  std::vector<StepRun> protected_hypercubes;
  for (const Layout& layout : kLayouts) {
    keys.push_back(run_step(dir, "keys", layout, {"perturb-table", "keys"}, input, {}));
    if (HasFailure()) return;
    hypercubes.push_back(run_step(dir, "keyed", layout, {"table", "tabulate"}, keys.back().output, keyed_hypercube));
    if (HasFailure()) return;
    protected_hypercubes.push_back(run_step(dir, "ckm", layout, {"perturb-table", "ckm"}, hypercubes.back().output,
                                            {"--max-noise", "3", "--variance", "2.5", "--js", "2"}));
    if (HasFailure()) return;
  }
  const auto& tabulated = hypercubes.front().results;
  const auto& published = protected_hypercubes.front().results;
  EXPECT_EQ(tabulated["record_keys"]["variable"], "record_key");
  EXPECT_EQ(published["cells"], tabulated["cells"]);
  EXPECT_EQ(published["published_in_blocked_range"], 0);
  EXPECT_GT(published["measures"]["noise_counts"].size(), 1U);
  expect_equal_runs("keys", keys);
  expect_equal_runs("keyed-hypercube", hypercubes);
  expect_equal_runs("ckm-hypercube", protected_hypercubes);
}

}  // namespace
}  // namespace sdc::testing
