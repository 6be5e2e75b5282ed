// `sdc recode`, `sdc suppress` and `sdc anonymize` under mpirun: equal output digests and equal reports
// for 1, 2 and 3 ranks and 1 or 2 threads on a generated census (recodings record-local after one
// reduction; the suppression on the coordinator; the key patterns merged in rank order).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

void write_hierarchies(const TempDir& dir) {
  std::filesystem::create_directories(dir / "hierarchies");
  std::string age = "level_0,level_1,level_2,level_3\n";
  for (int value = 0; value <= 100; ++value)
    age +=
        std::to_string(value) + "," + std::to_string(value / 5 * 5) + "+," + std::to_string(value / 20 * 20) + "+,*\n";
  write_text(dir / "hierarchies" / "census_age.csv", age);
  write_text(dir / "hierarchies" / "census_sex.csv", "level_0,level_1\nmale,*\nfemale,*\n");
  write_text(dir / "hierarchies" / "census_marstat.csv",
             "level_0,level_1,level_2\nsingle,single,*\nmarried,married,*\ndivorced,was married,*\nwidowed,was "
             "married,*\n");
}

TEST(ARecodingMpiRun, GivesEqualDigestsAndResultsForAnyRankAndThreadCount) {
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto census = (dir / "census.h5").string();
  ASSERT_EQ(run_process({sdc_executable().string(), "generate", "census", "--households", "3000", "-o", census},
                        mpi_environment({{"SDC_SEED", "20261127"}}))
                .exit_code,
            0);
  write_hierarchies(dir);
  const std::string hierarchies = (dir / "hierarchies").string();
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands{
      {"recode",
       {"recode", "--levels", "age=1", "--hierarchies", hierarchies, "--top-code", "income=150000:150000",
        "--intervals", "expenditure=quantiles:5,savings=equidistant:4"}},
      {"suppress", {"suppress", "--keys", "sex,age,marstat,citizenship,nuts2", "--k-anonymity", "3"}},
      {"anonymize-records",
       {"anonymize", "--keys", "sex,age,marstat", "--hierarchies", hierarchies, "--k-anonymity", "20",
        "--max-suppression-percent", "1", "--metric", "entropy"}},
      {"anonymize-cells",
       {"anonymize", "--keys", "sex,age,marstat", "--hierarchies", hierarchies, "--k-anonymity", "20",
        "--max-suppression-percent", "1", "--suppression", "cells"}},
  };
  for (const auto& [label, command] : commands) {
    std::vector<std::string> digests;
    std::vector<nlohmann::json> results;
    for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {3, 1}}) {
      const std::string name = label + "-" + std::to_string(ranks) + "x" + std::to_string(threads);
      const auto output = (dir / (name + ".h5")).string();
      const auto report = (dir / (name + ".json")).string();
      std::vector<std::string> args{"--threads", std::to_string(threads)};
      args.insert(args.end(), command.begin(), command.end());
      args.insert(args.end(), {"-i", census, "-o", output, "--report", report});
      const auto result = run_sdc_mpi(ranks, args);
      ASSERT_EQ(result.exit_code, 0) << label << ", " << ranks << " ranks, " << threads << " threads:\n" << result.err;
      EXPECT_EQ(validate_report(report), "") << label;
      digests.push_back(digest_of(output));
      results.push_back(nlohmann::json::parse(read_text(report))["steps"][0]["results"]);
    }
    print_digest(label, digests.front());
    for (std::size_t i = 1; i < digests.size(); ++i) {
      EXPECT_EQ(digests[i], digests.front()) << label << " run " << i;
      EXPECT_EQ(results[i], results.front()) << label << " run " << i;
    }
    if (label == "suppress") {
      EXPECT_GT(results.front()["violations_before"].get<std::int64_t>(), 0);
      EXPECT_EQ(results.front()["violations_left"], 0);
    }
    if (label.starts_with("anonymize")) {
      EXPECT_EQ(results.front()["suppression"]["violations_left"], 0) << label;
      EXPECT_GT(results.front()["lattice"]["anonymous"].get<std::int64_t>(), 0) << label;
    }
  }
}

}  // namespace
}  // namespace sdc::testing
