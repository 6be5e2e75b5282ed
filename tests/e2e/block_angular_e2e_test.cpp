// `sdc reorder` and `sdc perturb-table adjust` as a user runs them: the reordered matrix scanned for
// the block pattern the report states, multilevel against single-level on a large instance, a perturbed
// table made additive by both solvers alike, and bad matrices and flags refused with no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

const std::map<std::string, std::string> kSeed{{"SDC_SEED", "20261127"}};

struct Entry {
  std::int64_t row = 0;
  std::int64_t column = 0;
};

/// A Matrix Market coordinate file's size and entries (0-based), read here rather than by the
/// project's reader so that the check does not trust the code it checks.
struct Pattern {
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::vector<Entry> entries;
};

Pattern read_pattern(const std::filesystem::path& path) {
  std::ifstream in(path);
  Pattern pattern;
  std::string line;
  bool sized = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '%') continue;
    std::istringstream fields(line);
    if (!sized) {
      std::int64_t entries = 0;
      fields >> pattern.rows >> pattern.columns >> entries;
      sized = true;
      continue;
    }
    Entry entry;
    fields >> entry.row >> entry.column;
    pattern.entries.push_back({entry.row - 1, entry.column - 1});
  }
  return pattern;
}

/// The ordering file: per kind (row, column), position → (original index, block; -1 = linking).
struct Ordering {
  std::vector<std::int64_t> row_order;
  std::vector<std::int64_t> column_order;
  std::vector<int> row_block;     // by original row
  std::vector<int> column_block;  // by original column
};

Ordering read_ordering(const std::filesystem::path& path, const Pattern& pattern) {
  const auto rows = read_csv_fields(path);
  Ordering ordering;
  ordering.row_block.assign(static_cast<std::size_t>(pattern.rows), -2);
  ordering.column_block.assign(static_cast<std::size_t>(pattern.columns), -2);
  EXPECT_EQ(rows.at(0), (std::vector<std::string>{"kind", "position", "index", "block"}));
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const bool is_row = rows[r][0] == "row";
    auto& order = is_row ? ordering.row_order : ordering.column_order;
    auto& block = is_row ? ordering.row_block : ordering.column_block;
    EXPECT_EQ(std::stoll(rows[r][1]), static_cast<std::int64_t>(order.size()) + 1);
    const std::int64_t index = std::stoll(rows[r][2]) - 1;
    order.push_back(index);
    EXPECT_EQ(block.at(static_cast<std::size_t>(index)), -2) << "index " << index << " twice";
    block.at(static_cast<std::size_t>(index)) = rows[r][3] == "linking" ? -1 : std::stoi(rows[r][3]) - 1;
  }
  EXPECT_EQ(static_cast<std::int64_t>(ordering.row_order.size()), pattern.rows);
  EXPECT_EQ(static_cast<std::int64_t>(ordering.column_order.size()), pattern.columns);
  return ordering;
}

std::filesystem::path instance(const TempDir& dir, const std::string& shape) {
  const auto path = dir / (shape + ".mtx");
  const auto result = run_sdc({"table", "instance", "--shape", shape, "-o", path.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return path;
}

nlohmann::json reorder(const TempDir& dir, const std::filesystem::path& matrix, const std::string& name,
                       const std::vector<std::string>& flags) {
  const auto report = dir / (name + ".json");
  std::vector<std::string> args{"reorder",  "-i",           matrix.string(), "-o", (dir / (name + ".csv")).string(),
                                "--report", report.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  if (result.exit_code != 0) return nullptr;
  EXPECT_EQ(validate_report(report), "");
  return nlohmann::json::parse(read_text(report))["steps"][0]["results"];
}

/// Scans the matrix in its new order: every non-zero lies in a diagonal block or in the linking part,
/// every linking column (row) spans two blocks or more, and the sizes are those reported.
void expect_block_pattern(const Pattern& pattern, const Ordering& ordering, const nlohmann::json& results) {
  const bool dual = results["form"] == "dual";
  const std::size_t blocks = results["blocks"].size();
  std::vector<std::set<int>> net_blocks(static_cast<std::size_t>(dual ? pattern.columns : pattern.rows));
  for (const Entry& entry : pattern.entries) {
    const int row_block = ordering.row_block[static_cast<std::size_t>(entry.row)];
    const int column_block = ordering.column_block[static_cast<std::size_t>(entry.column)];
    if (dual) {
      ASSERT_GE(row_block, 0) << "a linking row in the dual form";
      EXPECT_TRUE(column_block == -1 || column_block == row_block) << "entry " << entry.row << "," << entry.column;
      net_blocks[static_cast<std::size_t>(entry.column)].insert(row_block);
    } else {
      ASSERT_GE(column_block, 0) << "a linking column in the primal form";
      EXPECT_TRUE(row_block == -1 || row_block == column_block) << "entry " << entry.row << "," << entry.column;
      net_blocks[static_cast<std::size_t>(entry.row)].insert(column_block);
    }
  }
  const std::vector<int>& net_block = dual ? ordering.column_block : ordering.row_block;
  std::int64_t linking = 0;
  for (std::size_t j = 0; j < net_blocks.size(); ++j) {
    if (net_block[j] == -1) {
      ++linking;
      EXPECT_GE(net_blocks[j].size(), 2U) << "net " << j << " is linking within one block";
    }
  }
  EXPECT_EQ(linking, results["linking_size"].get<std::int64_t>());
  std::vector<std::int64_t> rows(blocks, 0);
  std::vector<std::int64_t> columns(blocks, 0);
  for (const int block : ordering.row_block)
    if (block >= 0) ++rows.at(static_cast<std::size_t>(block));
  for (const int block : ordering.column_block)
    if (block >= 0) ++columns.at(static_cast<std::size_t>(block));
  std::int64_t largest = 0;
  std::int64_t total = 0;
  for (std::size_t b = 0; b < blocks; ++b) {
    EXPECT_EQ(rows[b], results["blocks"][b]["rows"].get<std::int64_t>()) << "block " << b;
    EXPECT_EQ(columns[b], results["blocks"][b]["columns"].get<std::int64_t>()) << "block " << b;
    const std::int64_t weight = dual ? rows[b] : columns[b];
    largest = std::max(largest, weight);
    total += weight;
  }
  // The blocks come in order, the linking part last.
  for (std::size_t p = 1; p < ordering.row_order.size(); ++p) {
    const auto key = [&](std::int64_t row) {
      const int block = ordering.row_block[static_cast<std::size_t>(row)];
      return block == -1 ? static_cast<int>(blocks) : block;
    };
    EXPECT_LE(key(ordering.row_order[p - 1]), key(ordering.row_order[p]));
  }
  const double mean = static_cast<double>(total) / static_cast<double>(blocks);
  EXPECT_NEAR(static_cast<double>(largest) / mean - 1.0, results["imbalance"].get<double>(), 1e-12);
  // Balanced within the limit, up to the one whole vertex a block may need to exceed it.
  EXPECT_LE(static_cast<double>(largest), std::ceil((1.0 + results["imbalance_limit"].get<double>()) * mean));
}

TEST(AReordering, HasExactlyTheBlockPatternItReportsInBothForms) {
  TempDir dir;
  const auto matrix = instance(dir, "13x13x7");
  const Pattern pattern = read_pattern(matrix);
  ASSERT_EQ(pattern.rows, 1443);
  ASSERT_EQ(pattern.columns, 1183);
  for (const auto& [name, flags] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"dual4",
            {"--blocks", "4", "--svg", (dir / "dual4.svg").string(), "--permuted",
             (dir / "dual4-permuted.mtx").string()}},
           {"primal3", {"--blocks", "3", "--form", "primal"}},
           {"dual2-single", {"--algorithm", "single-level"}}}) {
    SCOPED_TRACE(name);
    const nlohmann::json results = reorder(dir, matrix, name, flags);
    ASSERT_FALSE(results.is_null());
    EXPECT_EQ(results["pattern_checked"], true);
    const Ordering ordering = read_ordering(dir / (name + ".csv"), pattern);
    expect_block_pattern(pattern, ordering, results);
    EXPECT_GT(results["linking_size"].get<std::int64_t>(), 0);
  }
  // The permuted matrix is the original with its rows and columns moved to their new positions.
  const Ordering ordering = read_ordering(dir / "dual4.csv", pattern);
  const Pattern permuted = read_pattern(dir / "dual4-permuted.mtx");
  std::vector<std::int64_t> row_position(static_cast<std::size_t>(pattern.rows));
  std::vector<std::int64_t> column_position(static_cast<std::size_t>(pattern.columns));
  for (std::size_t p = 0; p < ordering.row_order.size(); ++p)
    row_position[static_cast<std::size_t>(ordering.row_order[p])] = static_cast<std::int64_t>(p);
  for (std::size_t p = 0; p < ordering.column_order.size(); ++p)
    column_position[static_cast<std::size_t>(ordering.column_order[p])] = static_cast<std::int64_t>(p);
  std::set<std::pair<std::int64_t, std::int64_t>> moved;
  for (const Entry& entry : pattern.entries)
    moved.emplace(row_position[static_cast<std::size_t>(entry.row)],
                  column_position[static_cast<std::size_t>(entry.column)]);
  std::set<std::pair<std::int64_t, std::int64_t>> written;
  for (const Entry& entry : permuted.entries) written.emplace(entry.row, entry.column);
  EXPECT_EQ(written, moved);
  const std::string svg = read_text(dir / "dual4.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(AReordering, IsNoWorseMultilevelThanSingleLevelOnALargeInstanceAndTheSameForASeed) {
  TempDir dir;
  const auto matrix = instance(dir, "16x16x16x16");  // 65 536 columns, 114 688 rows
  const nlohmann::json multilevel = reorder(dir, matrix, "multilevel", {});
  const nlohmann::json single = reorder(dir, matrix, "single", {"--algorithm", "single-level"});
  ASSERT_FALSE(multilevel.is_null());
  ASSERT_FALSE(single.is_null());
  EXPECT_GT(multilevel["levels"].size(), 1U);
  EXPECT_EQ(single["levels"].size(), 1U);
  EXPECT_LE(multilevel["linking_size"].get<std::int64_t>(), single["linking_size"].get<std::int64_t>());
  const nlohmann::json again = reorder(dir, matrix, "again", {});
  EXPECT_EQ(read_text(dir / "again.csv"), read_text(dir / "multilevel.csv"));
  EXPECT_EQ(again["linking_size"], multilevel["linking_size"]);
  // Cycle 0 draws as one cycle does: at k = 2 more cycles can only cut fewer nets.
  const nlohmann::json one = reorder(dir, matrix, "one", {"--form", "primal", "--cycles", "1"});
  const nlohmann::json four = reorder(dir, matrix, "four", {"--form", "primal", "--cycles", "4"});
  ASSERT_FALSE(one.is_null());
  ASSERT_FALSE(four.is_null());
  EXPECT_LE(four["linking_size"].get<std::int64_t>(), one["linking_size"].get<std::int64_t>());
}

TEST(AReordering, RefusesBadMatricesAndFlagsNamingThemAndWritesNothing) {
  TempDir dir;
  const auto good = instance(dir, "13x7");
  write_text(dir / "banner.mtx", "%%MatrixMarket matrix coordinate\n2 2 1\n1 1 1\n");
  write_text(dir / "array.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n1\n");
  write_text(dir / "range.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 1\n");
  write_text(dir / "entry.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 1\n");
  const auto output = dir / "ordering.csv";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"-i", (dir / "banner.mtx").string()}, 3, "banner.mtx"},
      {{"-i", (dir / "array.mtx").string()}, 3, "array.mtx"},
      {{"-i", (dir / "range.mtx").string()}, 3, "range.mtx"},
      {{"-i", (dir / "entry.mtx").string()}, 3, "entry.mtx"},
      {{"-i", good.string(), "--blocks", "1"}, 2, "--blocks"},
      {{"-i", good.string(), "--blocks", "100000"}, 2, "--blocks"},
      {{"-i", good.string(), "--imbalance", "0"}, 2, "--imbalance"},
      {{"-i", good.string(), "--imbalance", "1.5"}, 2, "--imbalance"},
      {{"-i", good.string(), "--cycles", "65"}, 2, "--cycles"},
  };
  for (const Case& bad : cases) {
    std::vector<std::string> args{"reorder", "-o", output.string(), "--svg", (dir / "pattern.svg").string()};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, bad.exit_code) << bad.args.back() << "\n" << result.err;
    EXPECT_NE(result.err.find(bad.message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << bad.args.back();
    EXPECT_FALSE(std::filesystem::exists(dir / "pattern.svg")) << bad.args.back();
  }
}

/// A census tabulated by nuts1 > nuts2 > nuts3 × sex × agegroup with cell keys, protected by the cell
/// key method; returns the protected table.
std::filesystem::path perturbed_table(const TempDir& dir) {
  const auto census = dir / "census.h5";
  EXPECT_EQ(run_sdc({"generate", "census", "--households", "2000", "-o", census.string()}, kSeed).exit_code, 0);
  const auto keyed = dir / "keyed.h5";
  EXPECT_EQ(run_sdc({"perturb-table", "keys", "-i", census.string(), "-o", keyed.string()}, kSeed).exit_code, 0);
  const auto cells = dir / "cells.h5";
  const auto tabulated = run_sdc({"table", "tabulate", "-i", keyed.string(), "-o", cells.string(), "--geography",
                                  "nuts1,nuts2,nuts3", "--dimensions", "sex,agegroup", "--record-key", "record_key",
                                  "--constraints", (dir / "cells.mtx").string()});
  EXPECT_EQ(tabulated.exit_code, 0) << tabulated.err;
  const auto perturbed = dir / "perturbed.h5";
  const auto protected_table = run_sdc(
      {"perturb-table", "ckm", "-i", cells.string(), "-o", perturbed.string(), "--max-noise", "3", "--variance", "2"});
  EXPECT_EQ(protected_table.exit_code, 0) << protected_table.err;
  return perturbed;
}

/// Runs adjust and returns the step's results and the adjusted table's rows as CSV fields.
std::pair<nlohmann::json, std::vector<std::vector<std::string>>> adjust(const TempDir& dir,
                                                                        const std::filesystem::path& table,
                                                                        const std::string& name,
                                                                        const std::vector<std::string>& flags) {
  const auto output = dir / (name + ".h5");
  const auto report = dir / (name + ".json");
  std::vector<std::string> args{"perturb-table", "adjust",   "-i",           table.string(), "-o",
                                output.string(), "--report", report.string()};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  if (result.exit_code != 0) return {};
  EXPECT_EQ(validate_report(report), "");
  const auto csv = dir / (name + ".csv");
  EXPECT_EQ(run_sdc({"export", output.string(), "-o", csv.string()}).exit_code, 0);
  return {nlohmann::json::parse(read_text(report))["steps"][0]["results"], read_csv_fields(csv)};
}

/// The largest |total − Σ other codes| of a flat dimension's lines: for every combination of the other
/// dimensions' labels, the `Total` row against the sum of the others.
double largest_flat_line_gap(const std::vector<std::vector<std::string>>& rows, std::size_t dimension,
                             std::size_t dimensions, const std::string& variable) {
  const std::vector<double> values = csv_numbers(rows, variable);
  std::map<std::string, double> sums;
  std::map<std::string, double> totals;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t d = 0; d < dimensions; ++d)
      if (d != dimension) line += rows[r][d] + "|";
    if (rows[r][dimension] == "Total")
      totals[line] = values[r - 1];
    else
      sums[line] += values[r - 1];
  }
  double gap = 0.0;
  for (const auto& [line, total] : totals) gap = std::max(gap, std::abs(total - sums[line]));
  return gap;
}

TEST(AnAdjustment, MakesACellKeyTableAdditiveWithBothSolversAlike) {
  TempDir dir;
  const auto table = perturbed_table(dir);
  const auto [block, block_rows] = adjust(dir, table, "block", {"--blocks", "4"});
  const auto [direct, direct_rows] = adjust(dir, table, "direct", {"--solver", "direct"});
  ASSERT_FALSE(block.is_null());
  ASSERT_FALSE(direct.is_null());
  EXPECT_EQ(block["block_angular"]["blocks"], 4);
  EXPECT_TRUE(direct["block_angular"].is_null());
  EXPECT_GT(block["max_constraint_residual_before"].get<double>(), 0.5);
  const double scale = block["max_abs_perturbed"].get<double>();
  EXPECT_LE(block["max_constraint_residual"].get<double>(), 1e-9 * scale);
  EXPECT_LE(direct["max_constraint_residual"].get<double>(), 1e-9 * scale);
  // Read from the tables: the perturbed sex and agegroup lines do not add up, the adjusted ones do.
  const std::size_t sex = 1;
  const std::size_t agegroup = 2;
  EXPECT_GT(largest_flat_line_gap(block_rows, agegroup, 3, "published"), 0.5);
  EXPECT_LE(largest_flat_line_gap(block_rows, sex, 3, "adjusted"), 1e-8 * scale);
  EXPECT_LE(largest_flat_line_gap(block_rows, agegroup, 3, "adjusted"), 1e-8 * scale);
  const std::vector<double> by_blocks = csv_numbers(block_rows, "adjusted");
  const std::vector<double> by_cholesky = csv_numbers(direct_rows, "adjusted");
  ASSERT_EQ(by_blocks.size(), by_cholesky.size());
  double largest = 1.0;
  for (const double value : by_cholesky) largest = std::max(largest, std::abs(value));
  for (std::size_t c = 0; c < by_blocks.size(); ++c)
    EXPECT_LE(std::abs(by_blocks[c] - by_cholesky[c]), 1e-9 * largest) << "cell " << c;
  // The equations tabulate wrote describe the same table: the same adjusted figures.
  const auto [given, given_rows] =
      adjust(dir, table, "given", {"--blocks", "4", "--constraints", (dir / "cells.mtx").string()});
  EXPECT_EQ(given["constraints"], "given");
  EXPECT_EQ(csv_numbers(given_rows, "adjusted"), by_blocks);
}

TEST(AnAdjustment, RefusesAMatrixOfAnotherTableAndBadFlagsAndWritesNothing) {
  TempDir dir;
  const auto table = perturbed_table(dir);
  const auto other = instance(dir, "13x13x7");
  write_text(dir / "wrong.mtx", "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 1\n1 2 1\n");
  const auto output = dir / "adjusted.h5";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"--constraints", other.string()}, 3, "does not describe this table"},
      {{"--constraints", (dir / "wrong.mtx").string()}, 3, "wrong.mtx"},
      {{"--variable", "no_such_variable"}, 3, "no_such_variable"},
      {{"--blocks", "1"}, 2, "--blocks"},
      {{"--blocks", "10000000"}, 2, "--blocks"},
      {{"--imbalance", "1"}, 2, "--imbalance"},
      {{"--solver", "dense"}, 2, "--solver"},
  };
  for (const Case& bad : cases) {
    std::vector<std::string> args{"perturb-table", "adjust", "-i", table.string(), "-o", output.string()};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, bad.exit_code) << bad.args.back() << "\n" << result.err;
    EXPECT_NE(result.err.find(bad.message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << bad.args.back();
  }
}

}  // namespace
}  // namespace sdc::testing
