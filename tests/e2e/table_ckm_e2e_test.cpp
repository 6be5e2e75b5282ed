// `sdc perturb-table keys` and `sdc perturb-table ckm` as a user runs them: record keys stored with
// the records, two tables of them publishing a shared cell alike, nothing published in the blocked
// range, a p-table file read back, magnitude cells, and bad p-tables and parameters refused with no
// output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::map<std::string, std::string> kSeed{{"SDC_SEED", "20261127"}};

/// A generated census with record keys.
std::filesystem::path keyed_census(const TempDir& dir) {
  const auto census = dir / "census.h5";
  EXPECT_EQ(run_sdc({"generate", "census", "--households", "2000", "-o", census.string()}, kSeed).exit_code, 0);
  const auto keyed = dir / "keyed.h5";
  const auto report = dir / "keys.json";
  const auto result = run_sdc(
      {"perturb-table", "keys", "-i", census.string(), "-o", keyed.string(), "--report", report.string()}, kSeed);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  return keyed;
}

std::filesystem::path tabulate(const TempDir& dir, const std::filesystem::path& keyed, const std::string& name,
                               const std::vector<std::string>& extra) {
  const auto cells = dir / (name + ".h5");
  std::vector<std::string> args{"table", "tabulate",     "-i",           keyed.string(),
                                "-o",    cells.string(), "--record-key", "record_key"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return cells;
}

/// Runs ckm and returns the protected table's rows as CSV fields (header first) and the step's results.
std::pair<std::vector<std::vector<std::string>>, nlohmann::json> protect(const TempDir& dir,
                                                                         const std::filesystem::path& cells,
                                                                         const std::string& name,
                                                                         const std::vector<std::string>& flags) {
  const auto output = dir / (name + ".h5");
  const auto report = dir / (name + ".json");
  std::vector<std::string> args{"perturb-table", "ckm",      "-i",           cells.string(), "-o",
                                output.string(), "--report", report.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto csv = dir / (name + ".csv");
  EXPECT_EQ(run_sdc({"export", output.string(), "-o", csv.string()}).exit_code, 0);
  return {read_csv_fields(csv), nlohmann::json::parse(read_text(report))["steps"][0]["results"]};
}

std::size_t column_of(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  EXPECT_NE(it, header.end()) << name;
  return static_cast<std::size_t>(it - header.begin());
}

/// Published counts of the cells whose second dimension is its total, by the first dimension's code.
std::map<std::string, std::int64_t> published_over_second_total(const std::vector<std::vector<std::string>>& rows) {
  std::map<std::string, std::int64_t> out;
  const std::size_t published = column_of(rows[0], "published");
  for (std::size_t r = 1; r < rows.size(); ++r)
    if (rows[r][1] == "Total") out[rows[r][0]] = std::stoll(rows[r][published]);
  return out;
}

TEST(ACellKeyMethod, PublishesACellAlikeInTwoTablesAndNothingInTheBlockedRange) {
  TempDir dir;
  const auto keyed = keyed_census(dir);
  const auto by_age = tabulate(dir, keyed, "by-age", {"--dimensions", "sex,agegroup"});
  const auto by_marstat = tabulate(dir, keyed, "by-marstat", {"--dimensions", "sex,marstat"});
  const std::vector<std::string> ptable{"--max-noise", "3", "--variance", "3", "--js", "2"};
  const auto [age_rows, age_results] = protect(dir, by_age, "age-ckm", ptable);
  const auto [marstat_rows, marstat_results] = protect(dir, by_marstat, "marstat-ckm", ptable);

  // The sexes and their total are cells of both tables: the same records, the same keys, the same noise.
  const auto age_margin = published_over_second_total(age_rows);
  EXPECT_EQ(age_margin.size(), 3U);
  EXPECT_EQ(age_margin, published_over_second_total(marstat_rows));

  for (const auto* rows : {&age_rows, &marstat_rows}) {
    const auto& header = rows->front();
    const std::size_t count = column_of(header, "count");
    const std::size_t published = column_of(header, "published");
    const std::size_t noise = column_of(header, "noise");
    std::int64_t changed = 0;
    for (std::size_t r = 1; r < rows->size(); ++r) {
      const std::int64_t n = std::stoll((*rows)[r][count]);
      const std::int64_t p = std::stoll((*rows)[r][published]);
      const std::int64_t v = std::stoll((*rows)[r][noise]);
      EXPECT_GT(n, 0) << "row " << r;  // a table file holds the non-empty cells; empty ones stay empty
      EXPECT_EQ(p, n + v) << "row " << r;
      EXPECT_LE(std::abs(v), 3) << "row " << r;
      EXPECT_TRUE(p == 0 || p > 2) << "row " << r << ": published in the blocked range 1..2";
      if (v != 0) ++changed;
    }
    EXPECT_GT(changed, 0);
  }
  for (const auto* results : {&age_results, &marstat_results}) {
    EXPECT_EQ((*results)["published_in_blocked_range"], 0);
    EXPECT_EQ((*results)["ptable"]["max_noise"], 3);
    EXPECT_EQ((*results)["ptable"]["blocked_up_to"], 2);
    EXPECT_EQ((*results)["cells"].get<std::size_t>() + 1, (*results == age_results ? age_rows : marstat_rows).size());
    EXPECT_GT((*results)["non_additivity"]["relations"].get<std::int64_t>(), 0);
    EXPECT_GT((*results)["measures"]["hellinger"].get<double>(), 0.0);
  }
}

TEST(ACellKeyMethod, PublishesAlikeFromAPTableFileWrittenByAnEarlierRun) {
  TempDir dir;
  const auto keyed = keyed_census(dir);
  const auto cells = tabulate(dir, keyed, "cells", {"--geography", "nuts1,nuts2", "--dimensions", "agegroup"});
  const auto ptable = dir / "ptable.csv";
  const auto [built_rows, built_results] =
      protect(dir, cells, "built", {"--max-noise", "2", "--variance", "1.5", "--write-ptable", ptable.string()});
  ASSERT_TRUE(std::filesystem::exists(ptable));
  EXPECT_EQ(read_text(ptable).substr(0, 4), "i;j;");
  const auto [file_rows, file_results] = protect(dir, cells, "from-file", {"--ptable", ptable.string()});
  EXPECT_EQ(file_rows, built_rows);
  EXPECT_EQ(file_results["measures"], built_results["measures"]);
  EXPECT_EQ(file_results["ptable"]["source"], "ptable.csv");
  EXPECT_EQ(built_results["ptable"]["source"], "built");
}

TEST(ACellKeyMethod, PerturbsTheValuesOfAMagnitudeTable) {
  TempDir dir;
  const auto keyed = keyed_census(dir);
  const auto cells =
      tabulate(dir, keyed, "cells",
               {"--dimensions", "sex,agegroup", "--value", "income", "--top-contributions", "2", "--p-percent", "10"});
  const auto [rows, results] = protect(dir, cells, "ckm", {"--flex", "0.3,0.05,1000", "--epsilon", "1,0.5"});
  EXPECT_EQ(results["kind"], "magnitude");
  const std::size_t value = column_of(rows[0], "value");
  const std::size_t published = column_of(rows[0], "published_value");
  const std::size_t noise = column_of(rows[0], "value_noise");
  std::int64_t changed = 0;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const double x = std::stod(rows[r][value]);
    const double p = std::stod(rows[r][published]);
    if (x == 0.0) {
      EXPECT_EQ(p, 0.0) << "row " << r;
    }
    EXPECT_NEAR(p - x, std::stod(rows[r][noise]), 1e-6 * std::max(1.0, std::fabs(x))) << "row " << r;
    if (p != x) ++changed;
  }
  EXPECT_GT(changed, 0);
  EXPECT_GT(results["magnitude"]["mean_relative_deviation"].get<double>(), 0.0);
}

TEST(ACellKeyMethod, IsSkippedByResumeWhenItsOutputIsComplete) {
  TempDir dir;
  const auto keyed = keyed_census(dir);
  const auto cells = tabulate(dir, keyed, "cells", {"--dimensions", "sex,marstat"});
  const auto [rows, first] =
      protect(dir, cells, "ckm", {"--max-noise", "3", "--variance", "2.5", "--js", "2", "--resume"});
  const std::string digest = digest_of(dir / "ckm.h5");
  const auto report = dir / "resumed.json";
  const auto resumed =
      run_sdc({"perturb-table", "ckm", "-i", cells.string(), "-o", (dir / "ckm.h5").string(), "--max-noise", "3",
               "--variance", "2.5", "--js", "2", "--resume", "--report", report.string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(validate_report(report), "");
  const auto document = nlohmann::json::parse(read_text(report));
  EXPECT_EQ(document["steps"][0]["results"], first);
  ASSERT_EQ(document["steps"][0]["warnings"].size(), 1U);
  EXPECT_NE(document["steps"][0]["warnings"][0].get<std::string>().find("resumed"), std::string::npos);
  EXPECT_EQ(document["outputs"][0]["kind"], "table");
  EXPECT_EQ(digest_of(dir / "ckm.h5"), digest);
}

TEST(ACellKeyMethod, RefusesBadPTablesAndParametersNamingThemAndWritesNothing) {
  TempDir dir;
  const auto keyed = keyed_census(dir);
  const auto cells = tabulate(dir, keyed, "cells", {"--dimensions", "sex,agegroup"});
  const auto unkeyed = dir / "unkeyed.h5";
  ASSERT_EQ(
      run_sdc({"table", "tabulate", "-i", keyed.string(), "-o", unkeyed.string(), "--dimensions", "sex"}).exit_code, 0);
  // Row 1 sums to 0.9.
  write_text(dir / "bad.csv", "i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;0.2;-1;0.2\n1;1;0.5;0;0.7\n1;2;0.2;1;0.9\n");
  const auto output = dir / "out.h5";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string names;
  };
  const std::vector<Case> cases{
      {{"-i", cells.string(), "--ptable", (dir / "bad.csv").string()}, 3, "bad.csv"},
      {{"-i", cells.string(), "--ptable", (dir / "bad.csv").string(), "--max-noise", "2"}, 2, "--ptable"},
      {{"-i", cells.string(), "--variance", "0"}, 2, "--variance"},
      {{"-i", cells.string(), "--max-noise", "0"}, 2, "--max-noise"},
      {{"-i", cells.string(), "--max-noise", "2", "--variance", "1", "--js", "1"}, 2, "--js"},
      {{"-i", cells.string(), "--flex", "0.3,0.05"}, 2, "--flex"},
      {{"-i", unkeyed.string()}, 3, "--record-key"},
      {{"-i", keyed.string()}, 3, "not a table file"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"perturb-table", "ckm", "-o", output.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, c.exit_code) << c.names << ": " << result.err;
    EXPECT_NE(result.err.find(c.names), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.names;
  }
}

}  // namespace
}  // namespace sdc::testing
