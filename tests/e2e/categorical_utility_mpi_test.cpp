// `sdc utility` of categorical variables under mpirun: equal report results for 1, 2 and 3 ranks and 1
// or 2 threads on a generated census PRAMmed in three variables (dense tables of counts summed over the
// ranks; every finishing step on the same totals).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

TEST(ACategoricalUtilityMpiRun, GivesEqualResultsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20260418"}});
  const auto census = (dir / "census.h5").string();
  const auto released = (dir / "released.h5").string();
  // About 15 000 persons, PRAMmed in marital status, education and citizenship.
  ASSERT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "5000", "-o", census}, environment)
          .exit_code,
      0);
  const auto pram = run_process(
      {sdc_executable().string(), "pram", "-i", census, "-o", released, "--variables", "marstat,education,citizenship"},
      environment);
  ASSERT_EQ(pram.exit_code, 0) << pram.err;
  std::vector<nlohmann::json> results;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}, {2, 2}}) {
    const std::string name = "utility-" + std::to_string(ranks) + "x" + std::to_string(threads);
    const auto report = (dir / (name + ".json")).string();
    std::vector<std::string> args{"--threads", std::to_string(threads), "utility", "-i", census, "--masked", released};
    args.insert(args.end(), {"--categorical", "marstat,education,citizenship,sex", "--ordinal", "education"});
    args.insert(args.end(), {"--ctbil-order", "3", "--table-rows", "nuts2", "--table-columns", "marstat,agegroup"});
    args.insert(args.end(), {"--table-target-column", "married/[30,35)", "--report", report});
    const auto result = run_sdc_mpi(ranks, args);
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    EXPECT_EQ(validate_report(report), "");
    results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
  }
  const auto& categorical = results.front()["categorical"];
  const auto& table = categorical["table"];
  std::printf("CTBIL %s over %s tables (normalised %s); marstat EBIL %s, IL %s; table HD %s, RCV %s %%\n",
              categorical["ctbil"]["value"].dump().c_str(), categorical["ctbil"]["tables"].dump().c_str(),
              categorical["ctbil"]["normalised"].dump().c_str(), categorical["variables"][0]["ebil"].dump().c_str(),
              categorical["variables"][0]["information_loss"].dump().c_str(), table["hd"].dump().c_str(),
              table["rcv_percent"].dump().c_str());
  std::printf("table RAT %s, AT %s, BVR %s, LR %s, Wilcoxon %s\n", table["rat"].dump().c_str(),
              table["at"].dump().c_str(), table["bvr"].dump().c_str(), table["lr"].dump().c_str(),
              table["wilcoxon"].dump().c_str());
  // PRAM of marstat moves records between the columns of a row, never between rows: the row totals stay.
  EXPECT_EQ(table["rat"], 0.0);
  EXPECT_EQ(table["at"], 0.0);
  EXPECT_TRUE(table["bvr"].is_number());
  EXPECT_TRUE(table["lr"].is_number());
  EXPECT_GT(table["wilcoxon"]["cells"].get<std::int64_t>(), 0);
  // 4 one-way, 6 two-way and 4 three-way tables; PRAM changed records, sex is untouched.
  EXPECT_EQ(categorical["ctbil"]["tables"], 14);
  EXPECT_GT(categorical["ctbil"]["value"].get<std::int64_t>(), 0);
  EXPECT_GT(categorical["variables"][0]["records_changed"].get<std::int64_t>(), 0);
  EXPECT_EQ(categorical["variables"][3]["records_changed"], 0);
  for (std::size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[i], results.front()) << "run " << i;
}

}  // namespace
}  // namespace sdc::testing
