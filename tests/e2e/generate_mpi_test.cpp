// Runs `sdc generate census` under mpirun: equal digests for 1, 2 and 3 ranks and 1 or 2 threads, for
// a census and for a sample, with the ranks' row ranges falling inside households.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class AnMpiCensus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  }
  /// Digests of the runs; every report valid and naming its rank count.
  std::vector<std::string> digests(const std::vector<std::string>& flags) {
    std::vector<std::string> out;
    for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 1}}) {
      const std::string output = "census-" + std::to_string(ranks) + "x" + std::to_string(threads) + ".h5";
      std::vector<std::string> args{
          "--threads", std::to_string(threads),  "generate", "census",
          "--output",  (dir_ / output).string(), "--report", (dir_ / (output + ".json")).string()};
      args.insert(args.end(), flags.begin(), flags.end());
      const auto result = run_sdc_mpi(ranks, args, {{"SDC_SEED", "20261121"}});
      EXPECT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
      if (result.exit_code != 0) continue;
      out.push_back(digest_of(dir_ / output));
      EXPECT_EQ(validate_report(dir_ / (output + ".json")), "");
      const auto report = nlohmann::json::parse(read_text(dir_ / (output + ".json")));
      EXPECT_EQ(report["ranks"], ranks);
      EXPECT_EQ(report["peak_memory_bytes"].size(), static_cast<std::size_t>(ranks));
    }
    return out;
  }
  TempDir dir_;
};

TEST_F(AnMpiCensus, GivesEqualDigestsForAnyRankAndThreadCount) {
  // About 270 000 rows: three chunks of 131 072, so two and three ranks each write rows.
  const auto all = digests({"--households", "90000"});
  ASSERT_EQ(all.size(), 5U);
  for (const auto& digest : all) EXPECT_EQ(digest, all.front());
}

TEST_F(AnMpiCensus, GivesEqualDigestsForASampleOnAnyRankAndThreadCount) {
  const auto all = digests({"--households", "200000", "--sample-fraction", "0.3"});
  ASSERT_EQ(all.size(), 5U);
  for (const auto& digest : all) EXPECT_EQ(digest, all.front());
}

}  // namespace
}  // namespace sdc::testing
