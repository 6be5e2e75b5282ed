// Runs `sdc risk` under mpirun: equal digests for 1, 2 and 3 ranks and 1 or 2 threads, a household
// that straddles the naive row split, and a failure on one rank that ends the whole job.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <sstream>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// A household file of about 6000 persons; one household of 400 persons covers the middle row (3000),
/// where a naive split into two ranks would cut it.
std::string household_csv(bool negative_weight_late = false) {
  std::mt19937 generator(11);  // test data only
  std::ostringstream csv;
  csv << "hid,region,sex,age,marstat,weight\n";
  std::int64_t rows = 0;
  bool placed_large = false;
  for (int household = 1; rows < 6000; ++household) {
    const bool large = !placed_large && rows >= 2850;
    placed_large = placed_large || large;
    const int size = large ? 400 : 1 + static_cast<int>(generator() % 6);
    const int region = static_cast<int>(generator() % 40);
    const double weight = 50.0 + static_cast<double>(generator() % 1000) / 7.0;
    for (int person = 0; person < size; ++person, ++rows) {
      const bool bad = negative_weight_late && rows == 5500;
      csv << household << ',' << region << ',' << 1 + generator() % 2 << ',' << generator() % 100 << ','
          << 1 + generator() % 4 << ',' << (bad ? -weight : weight) << '\n';
    }
  }
  return csv.str();
}

class AnMpiRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
    write_text(dir_ / "persons.csv", household_csv());
    const auto imported =
        run_sdc({"import", (dir_ / "persons.csv").string(), "-o", (dir_ / "persons.h5").string(), "--role",
                 "household=hid", "--role", "weight=weight", "--role", "key=region,sex,age,marstat"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }

  std::vector<std::string> risk_args(const std::string& output) const {
    return {"risk",
            "--input",
            (dir_ / "persons.h5").string(),
            "--output",
            (dir_ / output).string(),
            "--keys",
            "region,sex,age",
            "--sensitive",
            "marstat",
            "--weight",
            "weight",
            "--household",
            "hid",
            "--k-anonymity",
            "3",
            "--external",
            (dir_ / "persons.h5").string(),
            "--report",
            (dir_ / (output + ".json")).string()};
  }

  TempDir dir_;
};

TEST_F(AnMpiRun, GivesEqualDigestsForAnyRankAndThreadCount) {
  const std::string input_digest = digest_of(dir_ / "persons.h5");
  std::vector<std::string> digests;
  for (const auto& [ranks, threads] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {3, 1}}) {
    const std::string output = "risk-" + std::to_string(ranks) + "x" + std::to_string(threads) + ".h5";
    auto args = risk_args(output);
    args.insert(args.begin(), {"--threads", std::to_string(threads)});
    const auto result = run_sdc_mpi(ranks, args);
    ASSERT_EQ(result.exit_code, 0) << ranks << " ranks, " << threads << " threads:\n" << result.err;
    digests.push_back(digest_of(dir_ / output));
    EXPECT_EQ(validate_report(dir_ / (output + ".json")), "");
    const auto report = nlohmann::json::parse(read_text(dir_ / (output + ".json")));
    EXPECT_EQ(report["ranks"], ranks);
    EXPECT_EQ(report["peak_memory_bytes"].size(), static_cast<std::size_t>(ranks));
    // The ranks compute the input's digest from the rows they hold: it equals a sequential pass.
    EXPECT_EQ(report["inputs"][0]["digest"], input_digest) << ranks << " ranks";
  }
  print_digest("risk", digests.front());
  for (const auto& digest : digests) EXPECT_EQ(digest, digests.front());
}

TEST_F(AnMpiRun, EndsTheWholeJobWhenOneRankFails) {
  // The negative weight sits in the last rank's rows only: that rank fails alone, the others are
  // already waiting in the shuffle. The job must end with the error's exit code, not hang.
  write_text(dir_ / "bad.csv", household_csv(true));
  ASSERT_EQ(run_sdc({"import", (dir_ / "bad.csv").string(), "-o", (dir_ / "bad.h5").string(), "--role", "household=hid",
                     "--role", "key=region,sex,age,marstat"})
                .exit_code,
            0);
  const auto result =
      run_sdc_mpi(2, {"risk", "--input", (dir_ / "bad.h5").string(), "--output", (dir_ / "out.h5").string(), "--keys",
                      "region,sex", "--weight", "weight", "--household", "hid"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("rank 1: "), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("negative weight"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out.h5"));
}

}  // namespace
}  // namespace sdc::testing

namespace sdc::testing {
namespace {

TEST(AnMpiDigest, EqualsTheSequentialDigestWhenBlocksSpanRanks) {
  // About 180 000 rows: several digest blocks of 65 536 rows, two of them split between ranks.
  if (!mpirun_available()) GTEST_SKIP() << "mpirun not available";
  TempDir dir;
  const auto environment = mpi_environment({{"SDC_SEED", "20261121"}});
  const auto census = (dir / "census.h5").string();
  ASSERT_EQ(
      run_process({sdc_executable().string(), "generate", "census", "--households", "60000", "-o", census}, environment)
          .exit_code,
      0);
  const std::string sequential = digest_of(census);
  const auto risk = [&](int ranks, const std::string& name) {
    const auto report = (dir / (name + ".json")).string();
    const std::vector<std::string> args{"risk",   "-i",      census,        "-o",  (dir / (name + ".h5")).string(),
                                        "--keys", "sex,age", "--household", "hid", "--report",
                                        report};
    std::vector<std::string> alone{sdc_executable().string()};
    alone.insert(alone.end(), args.begin(), args.end());
    const auto result = ranks == 1 ? run_process(alone, environment) : run_sdc_mpi(ranks, args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(nlohmann::json::parse(read_text(report))["inputs"][0]["digest"], sequential) << name;
    return digest_of(dir / (name + ".h5"));
  };
  // The ranks take the stored digests of the variables and carry those the step does not use.
  const std::string output = risk(1, "r1");
  for (int ranks : {2, 3}) EXPECT_EQ(risk(ranks, "r" + std::to_string(ranks)), output) << ranks << " ranks";
  // Without them (removed by another tool) the ranks hash the values they hold and read every variable.
  const auto removed =
      run_process({"/usr/bin/python3", "-c",
                   "import sys, h5py\nwith h5py.File(sys.argv[1], 'r+') as f: del f['stored_digests']", census});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(digest_of(census), sequential);
  for (int ranks : {2, 3})
    EXPECT_EQ(risk(ranks, "hashed" + std::to_string(ranks)), output) << ranks << " ranks, values hashed";
}

}  // namespace
}  // namespace sdc::testing
