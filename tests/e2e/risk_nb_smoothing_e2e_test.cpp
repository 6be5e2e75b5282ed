// `sdc risk --nb-smoothing` (docs/risk.md "NB smoothing"): the per-unique risks through the command
// equal the kernel's (kernels/risk/nb_smoothing.h) on the same classes, τ1 and τ2 are the sums of the
// columns, and bad options fail with a message naming the flag and leave no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "kernels/risk/nb_smoothing.h"
#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

struct Row {
  int g = 0;  // fixed key, values 1..3
  int a = 0;  // ordinal key, values 0..11
  int b = 0;  // ordinal key, values 0..5
  double w = 0.0;
};

/// 240 records; every value of a and b occurs (so their codes are their values), with a few dense
/// cells and many sample uniques.
std::vector<Row> make_rows() {
  std::mt19937 generator(7);  // test data only
  std::vector<Row> rows;
  for (int i = 0; i < 240; ++i) {
    Row row;
    row.g = 1 + static_cast<int>(generator() % 3);
    // Skewed towards low a and b: dense cells there, uniques in the tails.
    row.a = i < 12 ? i : static_cast<int>((generator() % 12) * (generator() % 12) / 11);
    row.b = i < 6 ? i : static_cast<int>((generator() % 6) * (generator() % 6) / 5);
    row.w = 5.0 + static_cast<double>(generator() % 400) / 8.0;  // exact in binary: 5 + k/8
    rows.push_back(row);
  }
  return rows;
}

std::string to_csv(const std::vector<Row>& rows) {
  std::ostringstream csv;
  csv << "g,a,b,w\n";
  for (const Row& r : rows) csv << r.g << ',' << r.a << ',' << r.b << ',' << r.w << '\n';
  return csv.str();
}

/// The kernel on the classes of `rows` (fixed g, ordinal a then b): per record, P and E of its class
/// when it is a sample unique, else 0; and the kernel's τ1, τ2.
struct Expected {
  std::vector<double> probability;
  std::vector<double> inverse;
  NbSmoothingTotals totals;
};

Expected kernel_risks(const std::vector<Row>& rows, const NbSmoothingOptions& options, std::optional<double> pi) {
  std::map<std::tuple<int, int, int>, std::pair<std::int64_t, double>> cells;
  for (const Row& r : rows) {
    auto& cell = cells[{r.g - 1, r.a, r.b}];
    ++cell.first;
    cell.second += r.w;
  }
  std::vector<std::int32_t> fixed, ordinal;
  std::vector<std::int64_t> counts;
  std::vector<double> fractions;
  std::map<std::tuple<int, int, int>, std::size_t> index;
  for (const auto& [key, cell] : cells) {
    index[key] = counts.size();
    fixed.push_back(std::get<0>(key));
    ordinal.push_back(std::get<1>(key));
    ordinal.push_back(std::get<2>(key));
    counts.push_back(cell.first);
    fractions.push_back(cell.first == 1 ? 1.0 / cell.second : 1.0);
  }
  const std::vector<std::int32_t> levels{12, 6};
  const std::vector<double> scalar{pi.value_or(0.0)};
  NbSampleClasses classes;
  classes.fixed_key_count = 1;
  classes.ordinal_key_count = 2;
  classes.fixed_keys = fixed;
  classes.ordinal_keys = ordinal;
  classes.ordinal_levels = levels;
  classes.counts = counts;
  classes.sampling_fraction = pi ? std::span<const double>(scalar) : std::span<const double>(fractions);
  const NbSmoothingLocal local = nb_smoothing_local(classes, options);

  std::vector<double> class_p(counts.size(), 0.0), class_e(counts.size(), 0.0);
  for (std::size_t u = 0; u < local.unique_class.size(); ++u) {
    class_p[local.unique_class[u]] = local.risk[u].population_unique_probability;
    class_e[local.unique_class[u]] = local.risk[u].expected_inverse_population;
  }
  Expected expected;
  for (const Row& r : rows) {
    const std::size_t c = index.at({r.g - 1, r.a, r.b});
    expected.probability.push_back(class_p[c]);
    expected.inverse.push_back(class_e[c]);
  }
  expected.totals = nb_smoothing_finalize(local.partial);
  return expected;
}

class NbSmoothing : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = make_rows();
    write_text(dir_ / "s.csv", to_csv(rows_));
    const auto imported = run_sdc({"import", (dir_ / "s.csv").string(), "-o", (dir_ / "s.h5").string(), "--role",
                                   "weight=w", "--role", "key=g,a,b"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }

  std::vector<std::string> args(const std::vector<std::string>& flags) const {
    std::vector<std::string> all{
        "risk", "-i",       (dir_ / "s.h5").string(),  "-o", (dir_ / "r.h5").string(), "--keys", "g,a,b", "--weight",
        "w",    "--report", (dir_ / "r.json").string()};
    all.insert(all.end(), flags.begin(), flags.end());
    return all;
  }

  /// Runs sdc risk with `flags`; returns the exported rows and the measure's results.
  std::pair<std::vector<std::vector<std::string>>, nlohmann::json> risk(const std::vector<std::string>& flags) {
    const auto result = run_sdc(args(flags));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(dir_ / "r.json"), "");
    EXPECT_EQ(run_sdc({"export", (dir_ / "r.h5").string(), "-o", (dir_ / "r.csv").string()}).exit_code, 0);
    return {read_csv_fields(dir_ / "r.csv"),
            nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"]["nb_smoothing"]};
  }

  /// The command's columns and totals equal the kernel's on the same classes, bit for bit.
  void expect_kernel_results(const std::vector<std::string>& flags, const NbSmoothingOptions& options,
                             std::optional<double> pi) {
    const auto [rows, results] = risk(flags);
    const Expected expected = kernel_risks(rows_, options, pi);
    const auto p = csv_numbers(rows, "nb_risk");
    const auto e = csv_numbers(rows, "nb_expected_inverse");
    const auto fk = csv_numbers(rows, "fk");
    ASSERT_EQ(p.size(), rows_.size());
    ASSERT_EQ(e.size(), rows_.size());
    double sum_p = 0.0, sum_e = 0.0;
    std::int64_t uniques = 0;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      EXPECT_EQ(p[i], expected.probability[i]) << "record " << i;
      EXPECT_EQ(e[i], expected.inverse[i]) << "record " << i;
      if (fk[i] == 1.0) {
        ++uniques;
        EXPECT_GT(p[i], 0.0) << "record " << i;
        EXPECT_LE(p[i], 1.0) << "record " << i;
        EXPECT_GE(e[i], p[i]) << "record " << i;  // E[1/F] >= P(F = 1)
        EXPECT_LE(e[i], 1.0) << "record " << i;
      } else {
        EXPECT_EQ(p[i], 0.0) << "record " << i;
        EXPECT_EQ(e[i], 0.0) << "record " << i;
      }
      sum_p += p[i];
      sum_e += e[i];
    }
    EXPECT_GT(uniques, 20);
    EXPECT_EQ(results["sample_uniques"], uniques);
    EXPECT_EQ(results["sample_uniques"], expected.totals.sample_uniques);
    EXPECT_EQ(results["tau1"].get<double>(), expected.totals.tau1);
    EXPECT_EQ(results["tau2"].get<double>(), expected.totals.tau2);
    EXPECT_NEAR(results["tau1"].get<double>(), sum_p, 1e-12 * static_cast<double>(uniques));
    EXPECT_NEAR(results["tau2"].get<double>(), sum_e, 1e-12 * static_cast<double>(uniques));
    EXPECT_EQ(results["fits_not_converged"], expected.totals.not_converged);
    EXPECT_GE(results["mean_iterations"].get<double>(), 1.0);
    EXPECT_EQ(results["ordinal_keys"], (nlohmann::json{"a", "b"}));
    EXPECT_EQ(results["fixed_keys"], (nlohmann::json{"g"}));
  }

  TempDir dir_;
  std::vector<Row> rows_;
};

TEST_F(NbSmoothing, GivesTheKernelsRisksWithSamplingFractionsFromTheWeights) {
  NbSmoothingOptions options;  // c = 2, t = 2, out-of-range cells as zeros
  expect_kernel_results({"--nb-smoothing", "--ordinal-keys", "a,b"}, options, std::nullopt);
  const auto results = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"]["nb_smoothing"];
  EXPECT_EQ(results["neighbourhood_size"], 25);
  EXPECT_EQ(results["c"], 2);
  EXPECT_TRUE(results["d"].is_null());
  EXPECT_EQ(results["t"], 2);
  EXPECT_EQ(results["out_of_range"], "zero");
  EXPECT_TRUE(results["sampling_fraction"].is_null());
}

TEST_F(NbSmoothing, GivesTheKernelsRisksForAnL1BallExcludedEdgesAndAGivenSamplingFraction) {
  NbSmoothingOptions options;
  options.sup_radius = 3;
  options.l1_radius = 4;
  options.polynomial_degree = 1;
  options.out_of_range = OutOfRangeCells::kExclude;
  expect_kernel_results({"--nb-smoothing", "--ordinal-keys", "a,b", "--nb-radius", "3", "--nb-l1-radius", "4",
                         "--nb-degree", "1", "--nb-out-of-range", "exclude", "--nb-sampling-fraction", "0.2"},
                        options, 0.2);
  const auto results = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0]["results"]["nb_smoothing"];
  EXPECT_EQ(results["neighbourhood_size"], 37);  // |δ_a|, |δ_b| <= 3 and |δ_a| + |δ_b| <= 4: 41 - 4
  EXPECT_EQ(results["sampling_fraction"], 0.2);
  EXPECT_EQ(results["out_of_range"], "exclude");
}

TEST_F(NbSmoothing, GivesRiskOneToEveryUniqueOfACensus) {
  // π = 1: the sample is the population, every sample unique is a population unique (ρ = 1).
  const auto [rows, results] = risk({"--nb-smoothing", "--ordinal-keys", "a", "--nb-sampling-fraction", "1"});
  const auto p = csv_numbers(rows, "nb_risk");
  const auto e = csv_numbers(rows, "nb_expected_inverse");
  const auto fk = csv_numbers(rows, "fk");
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i], fk[i] == 1.0 ? 1.0 : 0.0);
    EXPECT_EQ(e[i], fk[i] == 1.0 ? 1.0 : 0.0);
  }
  EXPECT_EQ(results["tau1"].get<double>(), results["sample_uniques"].get<double>());
  EXPECT_EQ(results["fixed_keys"], (nlohmann::json{"g", "b"}));
}

TEST_F(NbSmoothing, RejectsBadOptionsWithTheFlagNamedAndNoOutput) {
  struct Case {
    std::vector<std::string> flags;
    int exit_code;
    std::string fragment;
  };
  const std::vector<Case> cases{
      {{"--nb-smoothing", "--ordinal-keys", "a,w"}, 2, "--ordinal-keys: variable 'w' is not one of the --keys"},
      {{"--nb-smoothing", "--ordinal-keys", "a,a"}, 2, "--ordinal-keys: variable 'a' is given twice"},
      {{"--nb-smoothing"}, 2, "--ordinal-keys"},
      {{"--ordinal-keys", "a"}, 2, "--nb-smoothing"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-radius", "0"}, 2, "--nb-radius"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-l1-radius", "0"}, 2, "--nb-l1-radius"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-degree", "0"}, 2, "--nb-degree"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-sampling-fraction", "1.5"},
       2,
       "--nb-sampling-fraction: expected a number in (0, 1]"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-out-of-range", "drop"}, 2, "--nb-out-of-range"},
      {{"--nb-smoothing", "--ordinal-keys", "a", "--nb-degree", "5"}, 4, "--nb-degree 5 exceeds 2 x --nb-radius"},
      {{"--nb-smoothing", "--ordinal-keys", "a,b", "--nb-radius", "600"}, 4, "--nb-radius 600"},
  };
  for (const Case& c : cases) {
    const auto result = run_sdc(args(c.flags));
    std::string joined;
    for (const auto& flag : c.flags) joined += flag + " ";
    EXPECT_EQ(result.exit_code, c.exit_code) << joined << "\n" << result.err;
    EXPECT_NE(result.err.find(c.fragment), std::string::npos) << joined << "\n" << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir_ / "r.h5")) << joined;
    auto entries = dir_.entries();
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, (std::vector<std::string>{"s.csv", "s.h5"}))
        << joined << ": no output, report or temporary file";
  }
  // Without weights the sampling fraction must be given.
  const auto unweighted = run_sdc({"risk", "-i", (dir_ / "s.h5").string(), "-o", (dir_ / "r.h5").string(), "--keys",
                                   "g,a", "--nb-smoothing", "--ordinal-keys", "a"});
  EXPECT_EQ(unweighted.exit_code, 2) << unweighted.err;
  EXPECT_NE(unweighted.err.find("--nb-sampling-fraction"), std::string::npos) << unweighted.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "r.h5"));
}

TEST(NbSmoothingInput, RejectsMissingOrdinalValuesAndUniquesWithWeightsBelowOne) {
  TempDir dir;
  write_text(dir / "m.csv", "g,a,w\n1,1,10\n1,,10\n2,3,10\n2,3,10\n");
  ASSERT_EQ(
      run_sdc({"import", (dir / "m.csv").string(), "-o", (dir / "m.h5").string(), "--role", "weight=w"}).exit_code, 0);
  const auto missing = run_sdc({"risk", "-i", (dir / "m.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "g,a",
                                "--weight", "w", "--missing", "category", "--nb-smoothing", "--ordinal-keys", "a"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("variable 'a', row id 1: missing value in an ordinal key"), std::string::npos)
      << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.h5"));

  write_text(dir / "l.csv", "g,a,w\n1,1,0.5\n1,2,3\n2,3,0.25\n2,3,0.25\n");
  ASSERT_EQ(
      run_sdc({"import", (dir / "l.csv").string(), "-o", (dir / "l.h5").string(), "--role", "weight=w"}).exit_code, 0);
  const auto light = run_sdc({"risk", "-i", (dir / "l.h5").string(), "-o", (dir / "r.h5").string(), "--keys", "g,a",
                              "--weight", "w", "--mode", "compat", "--nb-smoothing", "--ordinal-keys", "a"});
  EXPECT_EQ(light.exit_code, 3) << light.err;
  EXPECT_NE(light.err.find("1 sample unique has a weight below 1 in variable 'w'"), std::string::npos) << light.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r.h5"));
}

}  // namespace
}  // namespace sdc::testing
