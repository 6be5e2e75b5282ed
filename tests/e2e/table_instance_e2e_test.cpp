// `sdc table instance` as a user runs it: the Matrix Market header of the classic synthetic shapes
// against the sizes docs/methods tabular.md prints, a four-dimensional shape against the closed forms,
// a generated cell list whose equations hold and whose sensitive cells the report counts, and a bad
// shape refused with nothing written.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr const char* kSeed = "20261126";

struct MatrixSizes {
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t entries = 0;
  bool operator==(const MatrixSizes&) const = default;
};

std::ostream& operator<<(std::ostream& out, const MatrixSizes& sizes) {
  return out << sizes.rows << " x " << sizes.columns << ", " << sizes.entries << " entries";
}

/// The size line of a Matrix Market file (after its banner).
MatrixSizes matrix_market_sizes(const std::filesystem::path& path) {
  std::istringstream text(read_text(path));
  std::string banner;
  std::getline(text, banner);
  EXPECT_EQ(banner, "%%MatrixMarket matrix coordinate real general");
  MatrixSizes sizes;
  text >> sizes.rows >> sizes.columns >> sizes.entries;
  return sizes;
}

TEST(ATableInstance, MatchesTheSizesOfTheClassicInstances) {
  struct Classic {
    std::string shape;
    std::string name;
    std::int64_t cells;
    std::int64_t equations;
    std::int64_t nonzeros;
  };
  // docs/methods tabular.md §1: n, m, nnz of the public instances the named shapes reproduce.
  const std::vector<Classic> classics{{"13x13x13", "hier13x13x13a", 2197, 3549, 11661},
                                      {"16x16x16", "hier16x16x16a", 4096, 5376, 21504},
                                      {"13x7x7", "hier13x7x7d", 637, 525, 2401},
                                      {"13x13x7", "h13 x h13 x f7", 1183, 1443, 5369}};
  for (const Classic& classic : classics) {
    TempDir dir;
    const auto matrix = dir / "A.mtx";
    const auto result = run_sdc({"table", "instance", "--shape", classic.shape, "--output", matrix.string()});
    ASSERT_EQ(result.exit_code, 0) << classic.shape << ": " << result.err;
    EXPECT_EQ(matrix_market_sizes(matrix), (MatrixSizes{classic.equations, classic.cells, classic.nonzeros}))
        << classic.name;
  }
}

TEST(ATableInstance, GivesTheClosedFormSizesOfAFourDimensionalShapeInItsValidReport) {
  TempDir dir;
  const auto matrix = dir / "A.mtx";
  const auto report = dir / "instance.json";
  const auto result =
      run_sdc({"table", "instance", "--shape", "13x13x7x7", "-o", matrix.string(), "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // h13: L 13, E 7, C 16; f7: L 7, E 1, C 6.
  //   n = 13·13·7·7; m = 2·7·(13·7·7) + 2·1·(13·13·7); nnz = 2·(7 + 16)·(13·7·7) + 2·(1 + 6)·(13·13·7).
  const std::int64_t cells = 13 * 13 * 7 * 7;
  const std::int64_t equations = 2 * 7 * (13 * 7 * 7) + 2 * 1 * (13 * 13 * 7);
  const std::int64_t nonzeros = 2 * (7 + 16) * (13 * 7 * 7) + 2 * (1 + 6) * (13 * 13 * 7);
  EXPECT_EQ(matrix_market_sizes(matrix), (MatrixSizes{equations, cells, nonzeros}));
  std::int64_t lines = 0;
  for (const char c : read_text(matrix)) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, nonzeros + 2);  // the banner, the sizes, one line per entry

  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  EXPECT_EQ(results["shape"], "13x13x7x7");
  EXPECT_EQ(results["cells"], cells);
  EXPECT_EQ(results["equations"], equations);
  EXPECT_EQ(results["nonzeros"], nonzeros);
  EXPECT_TRUE(results["statuses"].is_null());
  ASSERT_EQ(results["dimensions"].size(), 4U);
  EXPECT_EQ(results["dimensions"][0]["codes"], 13);
  EXPECT_EQ(results["dimensions"][0]["equations"], 7);
  EXPECT_EQ(results["dimensions"][0]["child_entries"], 16);
  EXPECT_EQ(results["dimensions"][3]["codes"], 7);
  EXPECT_EQ(results["dimensions"][3]["leaves"], 6);
}

struct CellList {
  std::vector<double> values;
  std::vector<char> statuses;
  std::vector<std::vector<std::int64_t>> equations;  ///< parent first, then the children
};

/// Reads the JJ format: "0", n, n cell lines, m, m lines "0 <k> : <parent> (-1) <child> (1) ...".
CellList read_cell_list(const std::filesystem::path& path) {
  std::istringstream text(read_text(path));
  CellList list;
  std::int64_t first = -1;
  std::int64_t n = 0;
  text >> first >> n;
  EXPECT_EQ(first, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t index = 0;
    double value = 0.0;
    double weight = 0.0;
    char status = '?';
    double bounds_and_levels[5] = {};
    text >> index >> value >> weight >> status;
    for (double& field : bounds_and_levels) text >> field;
    EXPECT_EQ(index, i);
    list.values.push_back(value);
    list.statuses.push_back(status);
  }
  std::int64_t m = 0;
  text >> m;
  for (std::int64_t r = 0; r < m; ++r) {
    std::int64_t right_hand_side = -1;
    std::int64_t entries = 0;
    std::string colon;
    text >> right_hand_side >> entries >> colon;
    EXPECT_EQ(right_hand_side, 0);
    std::vector<std::int64_t> cells;
    for (std::int64_t e = 0; e < entries; ++e) {
      std::int64_t cell = 0;
      std::string coefficient;
      text >> cell >> coefficient;
      EXPECT_EQ(coefficient, e == 0 ? "(-1)" : "(1)");
      cells.push_back(cell);
    }
    list.equations.push_back(std::move(cells));
  }
  EXPECT_TRUE(text.good());
  return list;
}

TEST(ATableInstance, WritesACellListWhoseEquationsHoldAndWhoseSensitiveCellsTheReportCounts) {
  TempDir dir;
  const auto matrix = dir / "A.mtx";
  const auto equations = dir / "A.jj";
  const auto report = dir / "instance.json";
  const auto result =
      run_sdc({"table", "instance", "--shape", "13x7x7", "-o", matrix.string(), "--equations", equations.string(),
               "--mean-count", "2", "--density", "0.7", "--report", report.string()},
              {{"SDC_SEED", kSeed}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto parsed = nlohmann::json::parse(read_text(report));
  EXPECT_FALSE(parsed["seed_fingerprint"].is_null());
  const auto results = parsed["steps"][0]["results"];

  const CellList list = read_cell_list(equations);
  ASSERT_EQ(static_cast<std::int64_t>(list.values.size()), results["cells"].get<std::int64_t>());
  ASSERT_EQ(static_cast<std::int64_t>(list.equations.size()), results["equations"].get<std::int64_t>());
  for (std::size_t r = 0; r < list.equations.size(); ++r) {
    const auto& cells = list.equations[r];
    double children = 0.0;
    for (std::size_t e = 1; e < cells.size(); ++e) children += list.values[static_cast<std::size_t>(cells[e])];
    EXPECT_EQ(children, list.values[static_cast<std::size_t>(cells[0])]) << "equation " << r;
  }
  std::int64_t sensitive = 0;
  std::int64_t zero = 0;
  for (const char status : list.statuses) {
    sensitive += status == 'u' ? 1 : 0;
    zero += status == 'z' ? 1 : 0;
  }
  EXPECT_GT(sensitive, 0);  // λ = 2 leaves many leaf cells of 1 or 2 contributors
  EXPECT_GT(zero, 0);       // density 0.7 leaves about 30 % of the leaf cells empty
  EXPECT_EQ(results["statuses"]["sensitive"], sensitive);
  EXPECT_EQ(results["statuses"]["zero"], zero);

  // The same seed gives the same cell list.
  const auto again = dir / "again.jj";
  ASSERT_EQ(run_sdc({"table", "instance", "--shape", "13x7x7", "-o", (dir / "again.mtx").string(), "--equations",
                     again.string(), "--mean-count", "2", "--density", "0.7"},
                    {{"SDC_SEED", kSeed}})
                .exit_code,
            0);
  EXPECT_EQ(read_text(again), read_text(equations));
}

TEST(ATableInstance, RefusesABadShapeNamingTheFlagAndWritesNothing) {
  for (const std::string shape : {"13x", "13xq7", "1x7", "x16", "16x16x99999999999999999999"}) {
    TempDir dir;
    const auto result = run_sdc({"table", "instance", "--shape", shape, "-o", (dir / "A.mtx").string(), "--equations",
                                 (dir / "A.jj").string(), "--report", (dir / "instance.json").string()},
                                {{"SDC_SEED", kSeed}});
    EXPECT_EQ(result.exit_code, 2) << shape;
    EXPECT_NE(result.err.find("--shape"), std::string::npos) << shape << ": " << result.err;
    EXPECT_TRUE(dir.entries().empty()) << shape;
  }
}

TEST(ATableInstance, RefusesCellListFlagsWithoutACellListAndAnInstanceAboveTheLimit) {
  TempDir dir;
  const auto matrix = dir / "A.mtx";
  const auto without_list =
      run_sdc({"table", "instance", "--shape", "16x16", "-o", matrix.string(), "--density", "0.5"});
  EXPECT_EQ(without_list.exit_code, 2);
  EXPECT_NE(without_list.err.find("--equations"), std::string::npos) << without_list.err;
  const auto too_large =
      run_sdc({"table", "instance", "--shape", "16x16x16", "-o", matrix.string(), "--max-nonzeros", "21503"});
  EXPECT_EQ(too_large.exit_code, 2);
  EXPECT_NE(too_large.err.find("--max-nonzeros"), std::string::npos) << too_large.err;
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace sdc::testing
