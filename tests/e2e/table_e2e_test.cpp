// `sdc table tabulate` as a user runs it: a census hypercube whose margins add up, the report against
// its schema, a hierarchy file with a code the data lack, a cycle, a negative contribution, a magnitude
// variable that is not continuous and a table over its cell limit refused with no output.

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

  // h5py reads the table file as any data file: the dimension's codes with their parents, the counts.
  const std::string script = R"(
import json, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    v = f["variables"]
    print(json.dumps({"levels": [str(x) for x in v["nuts3"].attrs["levels"]],
                      "parents": [int(x) for x in v["nuts3"].attrs["level_parents"]],
                      "total": float(v["count"][0]), "rows": int(f.attrs["row_count"])}))
)";
  const auto read = run_process({"/usr/bin/python3", "-c", script, output.string()});
  ASSERT_EQ(read.exit_code, 0) << read.err;
  const auto h5 = nlohmann::json::parse(read.out);
  EXPECT_EQ(h5["rows"], results["cells"]);
  EXPECT_EQ(h5["total"], results["records"]);
  const auto levels = h5["levels"].get<std::vector<std::string>>();
  const auto parents = h5["parents"].get<std::vector<int>>();
  ASSERT_EQ(levels.size(), parents.size());
  EXPECT_EQ(levels.front(), "Total");
  EXPECT_EQ(parents.front(), -1);
  for (std::size_t code = 1; code < parents.size(); ++code)
    EXPECT_TRUE(parents[code] >= 0 && static_cast<std::size_t>(parents[code]) < code) << levels[code];
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

TEST(ATableTabulation, RefusesBadInputNamingItAndWritesNothing) {
  TempDir dir;
  const auto input = census(dir);
  write_text(dir / "small.csv", "region,sex,amount\nnorth,m,10.5\nnorth,f,-2.5\nsouth,m,7.25\nsouth,f,3.5\n");
  const auto small = dir / "small.h5";
  ASSERT_EQ(run_sdc({"import", (dir / "small.csv").string(), "--output", small.string()}).exit_code, 0);
  write_text(dir / "sex.csv", "code,parent\nmale,female\nfemale,male\n");
  const auto output = dir / "cells.h5";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::vector<std::string> named;
  };
  const std::vector<Case> cases{
      {{"-i", small.string(), "--dimensions", "region,sex", "--value", "amount", "--p-percent", "10"},
       3,
       {"small.h5", "'amount'", "row id 1", "negative"}},
      {{"-i", small.string(), "--dimensions", "region", "--value", "sex"}, 3, {"'sex'", "continuous"}},
      {{"-i", input.string(), "--geography", "nuts1,nuts2,nuts3", "--dimensions", "sex,agegroup,marstat", "--max-cells",
        "1000"},
       4,
       {"--max-cells 1000", "nuts3 (", "sex (3 codes)", "agegroup (", "marstat ("}},
      {{"-i", input.string(), "--dimensions", "sex", "--hierarchy", "sex=" + (dir / "sex.csv").string()},
       3,
       {"sex.csv", "line 2", "cycle"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"table", "tabulate", "-o", output.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, c.exit_code) << result.err;
    for (const std::string& name : c.named) EXPECT_NE(result.err.find(name), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << result.err;
  }
}

}  // namespace
}  // namespace sdc::testing
