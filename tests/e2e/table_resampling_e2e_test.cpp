// `sdc perturb-table bootstrap|cell|simulate` as a user runs them on a census table of nested geography,
// sex and age group: the total (or the kept margins) published exactly, every leaf cell inside its
// quality interval, no cell added, the published table additive under the table's own constraint
// matrix; the exact-disclosure study against the seed paper's Table 1; bad flags and inputs refused
// with no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/tables/resampling.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::map<std::string, std::string> kSeed{{"SDC_SEED", "20261129"}};
const std::vector<std::string> kDimensions{"nuts3", "sex", "agegroup"};

// The seed paper's Table 1 (tabular.md §3): rows k = 1, 2, 3; columns M = 1, 3, 5, each S = 3, 2, 1.5.
constexpr std::array<std::array<double, 9>, 3> kPaperTable1{{{.40, .42, .47, .65, .65, .66, .76, .76, .76},
                                                             {.27, .28, .28, .46, .46, .46, .58, .58, .58},
                                                             {.22, .24, .27, .38, .38, .39, .48, .48, .48}}};

/// A census table (about 8 900 persons) of nuts1 > nuts2 > nuts3 × sex × agegroup, with the additivity
/// matrix `sdc table tabulate` writes for it.
struct CensusTable {
  std::filesystem::path cells;
  std::filesystem::path constraints;
};

CensusTable census_table(const TempDir& dir) {
  const auto census = dir / "census.h5";
  const auto generated = run_sdc({"generate", "census", "--households", "3000", "-o", census.string()}, kSeed);
  EXPECT_EQ(generated.exit_code, 0) << generated.err;
  CensusTable table{dir / "cells.h5", dir / "cells.mtx"};
  const auto tabulated =
      run_sdc({"table", "tabulate", "-i", census.string(), "-o", table.cells.string(), "--geography",
               "nuts1,nuts2,nuts3", "--dimensions", "sex,agegroup", "--constraints", table.constraints.string()});
  EXPECT_EQ(tabulated.exit_code, 0) << tabulated.err;
  return table;
}

/// The rows of a table file as `sdc export --codes` writes them, with each row's linear index.
struct TableRows {
  std::vector<std::int64_t> sizes;  ///< positions per dimension, in kDimensions' order
  std::int64_t cell_space = 1;
  std::vector<std::int64_t> cells;  ///< linear index per row
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> published;  ///< empty before protection
  std::vector<std::int64_t> noise;
};

TableRows read_rows(const TempDir& dir, const std::filesystem::path& file) {
  TableRows out;
  const auto info = run_sdc({"info", "--json", file.string()});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  std::map<std::string, std::int64_t> sizes;
  const auto described = nlohmann::json::parse(info.out);
  for (const auto& variable : described["variables"])
    if (variable["role"] == "key") sizes[variable["name"].get<std::string>()] = variable["levels"].get<std::int64_t>();
  const auto csv = dir / (file.stem().string() + ".csv");
  EXPECT_EQ(run_sdc({"export", file.string(), "-o", csv.string(), "--codes"}).exit_code, 0);
  const auto rows = read_csv_fields(csv);
  std::vector<std::vector<std::string>> codes;
  for (const auto& name : kDimensions) {
    codes.push_back(csv_column(rows, name));
    out.sizes.push_back(sizes[name]);
    out.cell_space *= sizes[name];
  }
  const auto to_integers = [](const std::vector<double>& values) {
    return std::vector<std::int64_t>(values.begin(), values.end());
  };
  out.counts = to_integers(csv_numbers(rows, "count"));
  if (std::find(rows[0].begin(), rows[0].end(), "published") != rows[0].end()) {
    out.published = to_integers(csv_numbers(rows, "published"));
    out.noise = to_integers(csv_numbers(rows, "noise"));
  }
  for (std::size_t r = 0; r < out.counts.size(); ++r) {
    std::int64_t cell = 0;
    for (std::size_t d = 0; d < kDimensions.size(); ++d) cell = cell * sizes[kDimensions[d]] + std::stoll(codes[d][r]);
    out.cells.push_back(cell);
  }
  return out;
}

/// The additivity matrix A (Matrix Market, 1-based): each equation as (cell, coefficient) pairs.
using Equations = std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>;

Equations read_equations(const std::filesystem::path& path) {
  std::istringstream in(read_text(path));
  std::string line;
  std::getline(in, line);  // the banner
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t entries = 0;
  in >> rows >> columns >> entries;
  Equations equations(static_cast<std::size_t>(rows));
  for (std::int64_t e = 0; e < entries; ++e) {
    std::int64_t row = 0;
    std::int64_t column = 0;
    double value = 0.0;
    in >> row >> column >> value;
    equations[static_cast<std::size_t>(row - 1)].emplace_back(column - 1, static_cast<std::int64_t>(value));
  }
  EXPECT_GT(rows, 0);
  return equations;
}

/// The equations Σ children − parent = 0 that `values` (per row, at the rows' cells; 0 elsewhere) breaks.
std::int64_t broken_equations(const Equations& equations, const TableRows& table,
                              const std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> dense(static_cast<std::size_t>(table.cell_space), 0);
  for (std::size_t r = 0; r < table.cells.size(); ++r) dense[static_cast<std::size_t>(table.cells[r])] = values[r];
  std::int64_t broken = 0;
  for (const auto& equation : equations) {
    std::int64_t sum = 0;
    for (const auto& [cell, coefficient] : equation) sum += coefficient * dense[static_cast<std::size_t>(cell)];
    if (sum != 0) ++broken;
  }
  return broken;
}

/// Per row, whether its cell is a leaf cell: the parent of no equation.
std::vector<bool> leaf_rows(const Equations& equations, const TableRows& table) {
  std::vector<bool> parent(static_cast<std::size_t>(table.cell_space), false);
  for (const auto& equation : equations)
    for (const auto& [cell, coefficient] : equation)
      if (coefficient < 0) parent[static_cast<std::size_t>(cell)] = true;
  std::vector<bool> leaf;
  for (const std::int64_t cell : table.cells) leaf.push_back(!parent[static_cast<std::size_t>(cell)]);
  return leaf;
}

/// Runs `sdc perturb-table <method> -i cells -o <name>.h5 --report <name>.json <flags>`; returns the
/// step's results.
nlohmann::json protect(const TempDir& dir, const std::string& method, const std::filesystem::path& cells,
                       const std::string& name, const std::vector<std::string>& flags) {
  const auto output = dir / (name + ".h5");
  const auto report = dir / (name + ".json");
  std::vector<std::string> args{"perturb-table", method,     "-i",           cells.string(), "-o",
                                output.string(), "--report", report.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto result = run_sdc(args, kSeed);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  return nlohmann::json::parse(read_text(report))["steps"][0]["results"];
}

/// What every resampled table shows: the original's rows (no cell added: zeros stay zero), counts
/// kept, noise = published − count, and an additive published table.
void expect_an_additive_release(const TableRows& original, const TableRows& released, const Equations& equations) {
  EXPECT_EQ(released.cells, original.cells);
  EXPECT_EQ(released.counts, original.counts);
  ASSERT_EQ(released.published.size(), released.counts.size());
  for (std::size_t r = 0; r < released.counts.size(); ++r) {
    EXPECT_GE(released.published[r], 0) << "row " << r;
    EXPECT_EQ(released.noise[r], released.published[r] - released.counts[r]) << "row " << r;
  }
  EXPECT_EQ(broken_equations(equations, original, original.counts), 0);
  EXPECT_EQ(broken_equations(equations, released, released.published), 0);
}

/// Leaf rows outside their quality interval, n the total of the leaves that `slice_of` puts with them.
template <typename SliceOf>
std::int64_t leaves_outside_their_interval(const TableRows& table, const std::vector<bool>& leaf, double s,
                                           const SliceOf& slice_of) {
  std::map<std::int64_t, std::int64_t> totals;
  for (std::size_t r = 0; r < table.cells.size(); ++r)
    if (leaf[r]) totals[slice_of(table.cells[r])] += table.counts[r];
  std::int64_t outside = 0;
  for (std::size_t r = 0; r < table.cells.size(); ++r) {
    if (!leaf[r]) continue;
    const auto interval = tables::quality_interval(table.counts[r], totals[slice_of(table.cells[r])], s);
    if (table.published[r] < interval.lower || table.published[r] > interval.upper) ++outside;
  }
  return outside;
}

TEST(ABootstrapTable, KeepsTheTotalAndEveryLeafInItsIntervalAndAddsUp) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto results = protect(dir, "bootstrap", table.cells, "bootstrap", {"--quality-s", "4"});
  const Equations equations = read_equations(table.constraints);
  const TableRows original = read_rows(dir, table.cells);
  const TableRows released = read_rows(dir, dir / "bootstrap.h5");
  expect_an_additive_release(original, released, equations);
  ASSERT_EQ(released.cells.front(), 0);  // the grand total comes first
  EXPECT_EQ(released.published.front(), released.counts.front());

  const std::vector<bool> leaf = leaf_rows(equations, original);
  const auto leaves = std::count(leaf.begin(), leaf.end(), true);
  EXPECT_EQ(leaves_outside_their_interval(released, leaf, 4.0, [](std::int64_t) { return 0; }), 0);
  std::int64_t changed = 0;
  for (std::size_t r = 0; r < leaf.size(); ++r)
    if (leaf[r] && released.published[r] != released.counts[r]) ++changed;
  EXPECT_GT(changed, 0);

  EXPECT_EQ(results["method"], "bootstrap");
  EXPECT_EQ(results["leaf_cells"], leaves);
  EXPECT_EQ(results["perturbed_cells"], changed);
  EXPECT_EQ(results["cells"], static_cast<std::int64_t>(released.cells.size()));
  EXPECT_EQ(results["outside_quality_interval"], 0);
  EXPECT_EQ(results["total_kept"], true);
  EXPECT_EQ(results["original_total"], released.counts.front());
  EXPECT_GE(results["attempts"].get<std::int64_t>(), 1);
  EXPECT_TRUE(results["draws"].is_null());
  EXPECT_EQ(results["acceptance_rate"].get<double>(), 1.0 / results["attempts"].get<double>());
}

TEST(ABootstrapTable, AveragesTablesIntoAnAdditiveRelease) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto results = protect(dir, "bootstrap", table.cells, "averaged", {"--quality-s", "2", "--average-m", "3"});
  const Equations equations = read_equations(table.constraints);
  const TableRows original = read_rows(dir, table.cells);
  const TableRows released = read_rows(dir, dir / "averaged.h5");
  expect_an_additive_release(original, released, equations);
  EXPECT_EQ(results["average_m"], 3);
  EXPECT_EQ(results["released_total"], released.published.front());
  EXPECT_EQ(results["total_kept"], released.published.front() == released.counts.front());
}

TEST(ACellPerturbation, KeepsTheTotalAndEveryLeafInItsInterval) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto results = protect(dir, "cell", table.cells, "cell", {"--quality-s", "1.5"});
  const Equations equations = read_equations(table.constraints);
  const TableRows original = read_rows(dir, table.cells);
  const TableRows released = read_rows(dir, dir / "cell.h5");
  expect_an_additive_release(original, released, equations);
  EXPECT_EQ(released.published.front(), released.counts.front());
  const std::vector<bool> leaf = leaf_rows(equations, original);
  EXPECT_EQ(leaves_outside_their_interval(released, leaf, 1.5, [](std::int64_t) { return 0; }), 0);
  EXPECT_EQ(results["method"], "cell");
  EXPECT_EQ(results["total_kept"], true);
  EXPECT_EQ(results["outside_quality_interval"], 0);
  EXPECT_GE(results["draws"].get<std::int64_t>(), results["leaf_cells"].get<std::int64_t>());
  EXPECT_GT(results["units_removed"].get<std::int64_t>() + results["units_added"].get<std::int64_t>(), 0);
  EXPECT_TRUE(results["attempts"].is_null());
}

TEST(ACellPerturbation, KeepsTheMarginsOfThePreservedDimension) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto results = protect(dir, "cell", table.cells, "by-sex", {"--preserve-margins", "sex"});
  const Equations equations = read_equations(table.constraints);
  const TableRows original = read_rows(dir, table.cells);
  const TableRows released = read_rows(dir, dir / "by-sex.h5");
  expect_an_additive_release(original, released, equations);

  // A cell (area, sex, age group) has the linear index (area · sexes + sex) · age groups + age group.
  const std::int64_t sexes = released.sizes[1];
  const std::int64_t age_groups = released.sizes[2];
  const auto sex_of = [&](std::int64_t cell) { return cell / age_groups % sexes; };
  std::int64_t sex_margins = 0;
  for (std::size_t r = 0; r < released.cells.size(); ++r) {
    const std::int64_t cell = released.cells[r];
    if (cell / (sexes * age_groups) != 0 || cell % age_groups != 0) continue;  // not at the total of area and age
    ++sex_margins;
    EXPECT_EQ(released.published[r], released.counts[r]) << "sex " << sex_of(cell);
  }
  EXPECT_EQ(sex_margins, 3);  // the grand total, male, female
  const std::vector<bool> leaf = leaf_rows(equations, original);
  EXPECT_EQ(leaves_outside_their_interval(released, leaf, 2.0, sex_of), 0);

  EXPECT_EQ(results["preserve_margins"], "sex");
  EXPECT_EQ(results["outside_quality_interval"], 0);
  for (const auto& margin : results["margins"]) {
    EXPECT_EQ(margin["preserved"], margin["dimension"] == "sex");
    if (margin["dimension"] == "sex") {
      EXPECT_EQ(margin["kept"], true);
      EXPECT_EQ(margin["cells"], 2);
    }
  }
}

TEST(ACellPerturbation, IsSkippedByResumeWhenItsOutputIsComplete) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto first = protect(dir, "cell", table.cells, "cell", {"--resume"});
  const std::string digest = digest_of(dir / "cell.h5");
  const auto report = dir / "resumed.json";
  const auto resumed = run_sdc({"perturb-table", "cell", "-i", table.cells.string(), "-o", (dir / "cell.h5").string(),
                                "--resume", "--report", report.string()},
                               kSeed);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(validate_report(report), "");
  const auto step = nlohmann::json::parse(read_text(report))["steps"][0];
  EXPECT_EQ(step["results"], first);
  ASSERT_EQ(step["warnings"].size(), 1U);
  EXPECT_NE(step["warnings"][0].get<std::string>().find("resumed"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(read_text(report))["outputs"][0]["kind"], "table");
  EXPECT_EQ(digest_of(dir / "cell.h5"), digest);
}

TEST(AnExactDisclosureSimulation, ReproducesTheSeedPapersTable1) {
  TempDir dir;
  const auto report = dir / "simulate.json";
  const auto result = run_sdc({"perturb-table", "simulate", "--draws", "1000000", "--report", report.string()}, kSeed);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  ASSERT_EQ(results["pairs"].size(), 9U);
  for (std::size_t column = 0; column < 9; ++column) {
    const auto& pair = results["pairs"][column];
    EXPECT_EQ(pair["average_m"], tables::kTable1Tables[column / 3]);
    EXPECT_EQ(pair["quality_s"], tables::kTable1S[column % 3]);
    EXPECT_EQ(pair["trials"], 1000000);
    for (std::size_t k = 0; k < 3; ++k) {
      const std::string name = "p_exact_" + std::to_string(k + 1);
      EXPECT_NEAR(pair[name].get<double>(), kPaperTable1[k][column], 0.01) << name << ", column " << column;
      EXPECT_NEAR(pair["analytic"][name].get<double>(), kPaperTable1[k][column], 0.006) << name;
      EXPECT_EQ(pair["released"][k].get<std::int64_t>() > 0, true);
      EXPECT_LE(pair["exact"][k], pair["released"][k]);
    }
    EXPECT_GE(pair["attempts"].get<std::int64_t>(), 1000000);
  }
}

TEST(AnExactDisclosureSimulation, OfTheCellMethodIsNearTheColumnWithoutAveraging) {
  TempDir dir;
  const auto report = dir / "simulate.json";
  const auto result = run_sdc({"perturb-table", "simulate", "--method", "cell", "--quality-s", "2,3", "--draws",
                               "200000", "--report", report.string()},
                              kSeed);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  ASSERT_EQ(results["pairs"].size(), 2U);
  for (const auto& pair : results["pairs"]) {
    EXPECT_EQ(pair["average_m"], 1);
    for (const char* name : {"p_exact_1", "p_exact_2", "p_exact_3"})
      EXPECT_NEAR(pair[name].get<double>(), pair["analytic"][name].get<double>(), 0.04) << name;
    EXPECT_LT(pair["acceptance_rate"].get<double>(), 1.0);
  }
}

TEST(ResamplingFlags, AreRefusedNamingTheFlagAndNothingIsWritten) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto output = dir / "out.h5";
  const auto report = dir / "out.json";
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::string cells = table.cells.string();
  const std::vector<Case> cases{
      {{"bootstrap", "-i", cells, "-o", output.string(), "--quality-s", "0"}, "--quality-s"},
      {{"bootstrap", "-i", cells, "-o", output.string(), "--quality-s", "-2"}, "--quality-s"},
      {{"bootstrap", "-i", cells, "-o", output.string(), "--average-m", "0"}, "--average-m"},
      {{"bootstrap", "-i", cells, "-o", output.string(), "--max-attempts", "0"}, "--max-attempts"},
      {{"cell", "-i", cells, "-o", output.string(), "--preserve-margins", "region"}, "--preserve-margins"},
      {{"cell", "-i", cells, "-o", output.string(), "--max-redraws", "0"}, "--max-redraws"},
      {{"simulate", "--method", "cell", "--average-m", "3"}, "--average-m"},
      {{"simulate", "--method", "weights"}, "--method"},
      {{"simulate", "--quality-s", "2,0"}, "--quality-s"},
      {{"simulate", "--draws", "0"}, "--draws"},
      {{"simulate", "--draws", "1000000000"}, "--draws"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"perturb-table"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"--report", report.string()});
    const auto result = run_sdc(args, kSeed);
    EXPECT_EQ(result.exit_code, 2) << c.names << ": " << result.err;
    EXPECT_NE(result.err.find(c.names), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.names;
    EXPECT_FALSE(std::filesystem::exists(report)) << c.names;
  }
}

TEST(ResamplingInputs, AreRefusedNamingTheFileAndNothingIsWritten) {
  TempDir dir;
  const CensusTable table = census_table(dir);
  const auto census = dir / "census.h5";
  const auto magnitude = dir / "income.h5";
  ASSERT_EQ(run_sdc({"table", "tabulate", "-i", census.string(), "-o", magnitude.string(), "--dimensions", "sex",
                     "--value", "income"})
                .exit_code,
            0);
  const auto output = dir / "out.h5";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases{
      {{"bootstrap", "-i", magnitude.string()}, 3, {"income.h5", "magnitude"}},
      {{"cell", "-i", census.string()}, 3, {"census.h5", "not a table file"}},
      // No table of some 1 200 leaf cells keeps every one within S = 0.5 of its count.
      {{"bootstrap", "-i", table.cells.string(), "--quality-s", "0.5", "--max-attempts", "3"},
       4,
       {"cells.h5", "--quality-s", "3 attempts"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"perturb-table"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    args.insert(args.end(), {"-o", output.string()});
    const auto result = run_sdc(args, kSeed);
    EXPECT_EQ(result.exit_code, c.exit_code) << result.err;
    for (const auto& name : c.names) EXPECT_NE(result.err.find(name), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.names.front();
  }
}

}  // namespace
}  // namespace sdc::testing
