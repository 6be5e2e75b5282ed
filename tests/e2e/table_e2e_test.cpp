// `sdc table tabulate` as a user runs it: a census hypercube whose margins add up, the report against
// its schema, a hierarchy file with a code the data lack refused with no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

std::filesystem::path census(const TempDir& dir) {
  const auto h5 = dir / "census.h5";
  const auto result =
      run_sdc({"generate", "census", "--households", "2000", "-o", h5.string()}, {{"SDC_SEED", "20261126"}});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

TEST(ATableTabulation, GivesAHypercubeWhoseMarginsAddUp) {
  TempDir dir;
  const auto input = census(dir);
  const auto output = dir / "cells.h5";
  const auto report = dir / "table.json";
  const auto result =
      run_sdc({"table", "tabulate", "-i", input.string(), "-o", output.string(), "--geography", "nuts1,nuts2,nuts3",
               "--dimensions", "sex,marstat", "--min-frequency", "3", "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  const auto csv = dir / "cells.csv";
  ASSERT_EQ(run_sdc({"export", output.string(), "-o", csv.string()}).exit_code, 0);
  const auto rows = read_csv_fields(csv);
  ASSERT_GT(rows.size(), 2U);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"nuts3", "sex", "marstat", "count", "status"}));
  EXPECT_EQ(static_cast<std::int64_t>(rows.size() - 1), results["cells"].get<std::int64_t>());
  // The grand total comes first and counts every person; per (area, marital status) the sexes add up
  // to the total over sex.
  EXPECT_EQ(rows[1][0], "Total");
  EXPECT_EQ(rows[1][1], "Total");
  EXPECT_EQ(rows[1][2], "Total");
  EXPECT_EQ(std::to_string(results["records"].get<std::int64_t>()), rows[1][3]);
  std::map<std::pair<std::string, std::string>, std::int64_t> by_sex_total;
  std::map<std::pair<std::string, std::string>, std::int64_t> sum_of_sexes;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const std::int64_t count = std::stoll(rows[r][3]);
    if (rows[r][1] == "Total") {
      by_sex_total[{rows[r][0], rows[r][2]}] = count;
    } else {
      sum_of_sexes[{rows[r][0], rows[r][2]}] += count;
    }
    EXPECT_EQ(rows[r][4] == "frequency", count > 0 && count < 3) << "row " << r;
  }
  EXPECT_EQ(by_sex_total, sum_of_sexes);
}

TEST(ATableTabulation, RefusesAHierarchyWithACodeMissingFromTheData) {
  TempDir dir;
  const auto input = census(dir);
  const auto output = dir / "cells.h5";
  write_text(dir / "sex.hrc", "persons\n@male\n@female\n@other\n");
  const auto result = run_sdc({"table", "tabulate", "-i", input.string(), "-o", output.string(), "--dimensions", "sex",
                               "--hierarchy", "sex=" + (dir / "sex.hrc").string()});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("other"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(output));
}

}  // namespace
}  // namespace sdc::testing
