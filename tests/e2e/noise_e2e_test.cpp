// `sdc noise` as a user runs it: exact noise whose released file keeps the means and covariance the
// method promises (read back with `sdc export` and measured here), the same file for the same seed,
// the other variables untouched, the step in a job, and every refusal with its exit code and no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// 400 records of two correlated variables of different scales and a categorical one.
std::filesystem::path survey(const TempDir& dir, bool with_missing = false, bool with_constant = false) {
  std::mt19937_64 engine(11);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::string csv = "income,age,region\n";
  for (int i = 0; i < 400; ++i) {
    const double a = normal(engine);
    const double income = 30000.0 + 8000.0 * a + 2000.0 * normal(engine);
    const double age = with_constant ? 40.0 : 45.0 + 10.0 * a + 5.0 * normal(engine);
    csv += (with_missing && i == 17 ? std::string() : std::to_string(income)) + "," + std::to_string(age) + "," +
           (i % 3 == 0 ? "north" : "south") + "\n";
  }
  write_text(dir / "survey.csv", csv);
  const auto h5 = dir / "survey.h5";
  const auto result = run_sdc({"import", (dir / "survey.csv").string(), "-o", h5.string(), "--type",
                               "income=continuous", "--type", "age=continuous"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::vector<std::string>> exported(const TempDir& dir, const std::filesystem::path& h5) {
  const auto csv = dir / (h5.stem().string() + ".csv");
  const auto result = run_sdc({"export", h5.string(), "-o", csv.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return read_csv_fields(csv);
}

struct SampleMoments {
  double mean_x = 0, mean_y = 0, var_x = 0, var_y = 0, cov = 0;
};

SampleMoments moments(const std::vector<double>& x, const std::vector<double>& y) {
  SampleMoments m;
  const auto n = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    m.mean_x += x[i] / n;
    m.mean_y += y[i] / n;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    m.var_x += (x[i] - m.mean_x) * (x[i] - m.mean_x) / (n - 1);
    m.var_y += (y[i] - m.mean_y) * (y[i] - m.mean_y) / (n - 1);
    m.cov += (x[i] - m.mean_x) * (y[i] - m.mean_y) / (n - 1);
  }
  return m;
}

TEST(ExactNoise, ReleasesAFileWithTheOriginalMeansAndCovarianceWhenOrthogonalAndRestored) {
  TempDir dir;
  const auto input = survey(dir);
  const auto report = dir / "noise.json";
  const auto result =
      run_sdc({"noise", input.string(), "-o", (dir / "noised.h5").string(), "--variables", "income,age", "--model",
               "exact", "--noise-percent-cov", "50", "--orthogonal", "--restore-variance", "--report", report.string()},
              {{"SDC_SEED", "20261126"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  EXPECT_EQ(results["c"], 0.5);
  EXPECT_LT(results["noise_covariance_relative_deviation"].get<double>(), 1e-12);
  const auto before = exported(dir, input);
  const auto after = exported(dir, dir / "noised.h5");
  const auto original = moments(csv_numbers(before, "income"), csv_numbers(before, "age"));
  const auto released = moments(csv_numbers(after, "income"), csv_numbers(after, "age"));
  EXPECT_NEAR(released.mean_x, original.mean_x, 1e-9 * std::sqrt(original.var_x));
  EXPECT_NEAR(released.mean_y, original.mean_y, 1e-9 * std::sqrt(original.var_y));
  EXPECT_NEAR(released.var_x, original.var_x, 1e-9 * original.var_x);
  EXPECT_NEAR(released.var_y, original.var_y, 1e-9 * original.var_y);
  EXPECT_NEAR(released.cov, original.cov, 1e-9 * std::sqrt(original.var_x * original.var_y));
  EXPECT_NE(csv_numbers(after, "income"), csv_numbers(before, "income")) << "every value moved";
  EXPECT_EQ(csv_column(after, "region"), csv_column(before, "region"));
}

TEST(ExactNoise, GivesTheSameFileForTheSameSeedAndRunsAsAJobStep) {
  TempDir dir;
  const auto input = survey(dir);
  const auto direct = dir / "direct.h5";
  ASSERT_EQ(run_sdc({"noise", input.string(), "-o", direct.string(), "--variables", "income,age", "--model",
                     "correlated", "--noise-percent-cov", "20"},
                    {{"SDC_SEED", "5"}})
                .exit_code,
            0);
  write_text(dir / "job.yaml", "version: 1\ninput: " + input.string() + "\noutput_dir: " + (dir / "out").string() +
                                   "\nsteps:\n  - method: noise\n    name: noise\n    variables: [income, age]\n"
                                   "    model: correlated\n    noise-percent-cov: 20\n");
  const auto job = run_sdc({"run", (dir / "job.yaml").string()}, {{"SDC_SEED", "5"}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  auto digest = [](const std::filesystem::path& h5) {
    const auto info = run_sdc({"info", h5.string(), "--digest", "--json"});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    return nlohmann::json::parse(info.out)["content_digest"].get<std::string>();
  };
  EXPECT_EQ(digest(dir / "out" / "noise.h5"), digest(direct));
  const auto other = dir / "other.h5";
  ASSERT_EQ(run_sdc({"noise", input.string(), "-o", other.string(), "--variables", "income,age", "--model",
                     "correlated", "--noise-percent-cov", "20"},
                    {{"SDC_SEED", "6"}})
                .exit_code,
            0);
  EXPECT_NE(digest(other), digest(direct));
}

TEST(ANoiseRun, RefusesBadFlagsAndDataNamingThemAndWritesNothing) {
  TempDir dir;
  struct Case {
    std::string label;
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
    bool missing = false;
    bool constant = false;
  };
  const std::vector<Case> cases{
      {"covariance percent for additive noise", {"--noise-percent-cov", "10"}, 2, "--noise-percent-sd"},
      {"sd percent for exact noise", {"--model", "exact", "--noise-percent-sd", "10"}, 2, "--noise-percent-cov"},
      {"an unknown method", {"--model", "uniform"}, 2, "--model"},
      {"orthogonal additive noise", {"--orthogonal"}, 2, "--model exact"},
      {"restored additive noise", {"--restore-variance"}, 2, "--restore-variance"},
      {"a negative percent", {"--noise-percent-sd", "-5"}, 2, "--noise-percent-sd"},
      {"a categorical variable", {"--variables", "region"}, 3, "region"},
      {"a missing value", {"--model", "exact"}, 3, "row id 17", true},
      {"a constant variable", {"--model", "exact"}, 4, "not positive definite", false, true},
  };
  for (const Case& c : cases) {
    TempDir case_dir;
    const auto input = survey(case_dir, c.missing, c.constant);
    const auto output = case_dir / "noised.h5";
    std::vector<std::string> args{"noise", input.string(), "-o", output.string()};
    if (c.flags.front() != "--variables") args.insert(args.end(), {"--variables", "income,age"});
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    EXPECT_EQ(result.exit_code, c.exit_code) << c.label << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.label << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.label;
  }
}

// ---- noise that restores the covariance a microaggregation took away ----

/// 450 records with an identifier, three correlated continuous variables and a categorical one, and
/// the same records microaggregated (`sdc microaggregate`, groups of 3) on income and age.
struct RestoreFiles {
  std::filesystem::path original;
  std::filesystem::path micro;
};

std::string restore_csv(std::size_t records, bool swap_two = false, int missing_row = -1) {
  std::mt19937_64 engine(12);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < records; ++i) {
    const double a = normal(engine);
    const double income = 30000.0 + 8000.0 * a + 2000.0 * normal(engine);
    const double age = 45.0 + 10.0 * a + 5.0 * normal(engine);
    const double hours = 38.0 + 3.0 * a + 4.0 * normal(engine);
    lines.push_back(std::to_string(i) + "," +
                    (static_cast<int>(i) == missing_row ? std::string() : std::to_string(income)) + "," +
                    std::to_string(age) + "," + std::to_string(hours) + "," + (i % 3 == 0 ? "north" : "south"));
  }
  if (swap_two) std::swap(lines[10], lines[11]);
  std::string csv = "pid,income,age,hours,region\n";
  for (const auto& line : lines) csv += line + "\n";
  return csv;
}

std::filesystem::path import_restore_csv(const TempDir& dir, const std::string& name, const std::string& csv,
                                         const std::vector<std::string>& types) {
  write_text(dir / (name + ".csv"), csv);
  const auto h5 = dir / (name + ".h5");
  std::vector<std::string> args{"import",        (dir / (name + ".csv")).string(), "-o", h5.string(), "--role",
                                "identifier=pid"};
  for (const auto& type : types) args.insert(args.end(), {"--type", type});
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

const std::vector<std::string> kRestoreTypes{"income=continuous", "age=continuous", "hours=continuous"};

RestoreFiles restore_files(const TempDir& dir) {
  RestoreFiles files;
  files.original = import_restore_csv(dir, "original", restore_csv(450), kRestoreTypes);
  files.micro = dir / "micro.h5";
  const auto result = run_sdc({"microaggregate", files.original.string(), "-o", files.micro.string(), "--variables",
                               "income,age", "--group-size", "3"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return files;
}

/// Sample covariance (divisor n − 1) of the named columns, in long double.
std::vector<std::vector<long double>> covariance_of(const std::vector<std::vector<std::string>>& rows,
                                                    const std::vector<std::string>& names) {
  std::vector<std::vector<double>> columns;
  for (const auto& name : names) columns.push_back(csv_numbers(rows, name));
  const std::size_t n = columns.front().size();
  std::vector<long double> mean(names.size(), 0.0L);
  for (std::size_t j = 0; j < names.size(); ++j) {
    for (double v : columns[j]) mean[j] += v;
    mean[j] /= static_cast<long double>(n);
  }
  std::vector<std::vector<long double>> cov(names.size(), std::vector<long double>(names.size(), 0.0L));
  for (std::size_t j = 0; j < names.size(); ++j) {
    for (std::size_t k = 0; k < names.size(); ++k) {
      for (std::size_t i = 0; i < n; ++i) cov[j][k] += (columns[j][i] - mean[j]) * (columns[k][i] - mean[k]);
      cov[j][k] /= static_cast<long double>(n - 1);
    }
  }
  return cov;
}

TEST(RestoreCovarianceNoise, ReleasesTheOriginalCovarianceAfterMicroaggregationWhenExactAndOrthogonal) {
  TempDir dir;
  const RestoreFiles files = restore_files(dir);
  const auto released = dir / "released.h5";
  const auto report = dir / "noise.json";
  const auto result = run_sdc(
      {"noise", files.micro.string(), "-o", released.string(), "--variables", "income,age", "--model",
       "restore-covariance-exact", "--orthogonal", "--original", files.original.string(), "--report", report.string()},
      {{"SDC_SEED", "20261126"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto json = nlohmann::json::parse(read_text(report));
  const auto results = json["steps"][0]["results"];
  EXPECT_TRUE(results["c"].is_null());
  EXPECT_LT(results["noise_covariance_relative_deviation"].get<double>(), 1e-12);
  EXPECT_EQ(results["restore_covariance"]["clipped_eigenvalues"], 0) << "the scatter within groups is PSD";
  EXPECT_LT(results["restore_covariance"]["released_covariance_relative_deviation"].get<double>(), 1e-12);
  EXPECT_TRUE(json["steps"][0]["warnings"].empty()) << json["steps"][0]["warnings"].dump();
  bool lists_original = false;
  for (const auto& input : json["inputs"]) lists_original = lists_original || input["name"] == "original";
  EXPECT_TRUE(lists_original) << json["inputs"].dump();

  const auto original = exported(dir, files.original);
  const auto micro = exported(dir, files.micro);
  const auto after = exported(dir, released);
  const std::vector<std::string> names{"income", "age"};
  const auto sigma = covariance_of(original, names);
  const auto sigma_micro = covariance_of(micro, names);
  const auto sigma_released = covariance_of(after, names);
  EXPECT_LT(sigma_micro[0][0], 0.999L * sigma[0][0]) << "microaggregation took variance away";
  for (std::size_t j = 0; j < 2; ++j) {
    for (std::size_t k = 0; k < 2; ++k)
      EXPECT_NEAR(static_cast<double>(sigma_released[j][k]), static_cast<double>(sigma[j][k]),
                  static_cast<double>(1e-9L * std::sqrt(sigma[j][j] * sigma[k][k])))
          << "released covariance (" << j << ", " << k << ")";
  }
  const auto original_income = csv_numbers(original, "income");
  const auto released_income = csv_numbers(after, "income");
  double original_sum = 0.0;
  double released_sum = 0.0;
  for (std::size_t i = 0; i < original_income.size(); ++i) {
    original_sum += original_income[i];
    released_sum += released_income[i];
  }
  EXPECT_NEAR(released_sum, original_sum, 1e-9 * std::abs(original_sum)) << "the mean is kept";
  EXPECT_NE(csv_numbers(after, "income"), csv_numbers(micro, "income")) << "every value moved";
  EXPECT_EQ(csv_numbers(after, "hours"), csv_numbers(original, "hours")) << "other variables untouched";
  EXPECT_EQ(csv_column(after, "region"), csv_column(original, "region"));
}

TEST(RestoreCovarianceNoise, ProjectsTheDifferenceAndWarnsWhenAVariableWasNotMicroaggregated) {
  // hours was left alone but varies within the groups: Cov(original) − Cov(micro) has a zero diagonal
  // entry with a non-zero row, which no positive semi-definite matrix has.
  TempDir dir;
  const RestoreFiles files = restore_files(dir);
  const auto report = dir / "noise.json";
  const auto result =
      run_sdc({"noise", files.micro.string(), "-o", (dir / "released.h5").string(), "--variables", "income,age,hours",
               "--model", "restore-covariance", "--original", files.original.string(), "--report", report.string()},
              {{"SDC_SEED", "7"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto step = nlohmann::json::parse(read_text(report))["steps"][0];
  const auto restore = step["results"]["restore_covariance"];
  EXPECT_GE(restore["clipped_eigenvalues"].get<int>(), 1);
  EXPECT_GT(restore["clipped_mass"].get<double>(), 1e-6);
  double negative = 0.0;
  for (const auto& eigenvalue : restore["difference_eigenvalues"]) negative += std::min(0.0, eigenvalue.get<double>());
  EXPECT_NEAR(restore["clipped_mass"].get<double>(), -negative, 1e-15);
  ASSERT_EQ(step["warnings"].size(), 1U) << step["warnings"].dump();
  EXPECT_NE(step["warnings"][0].get<std::string>().find("not positive semi-definite"), std::string::npos);
}

TEST(RestoreCovarianceNoise, RunsAfterMicroaggregationInAJobWithTheJobInputAsOriginalAndResumes) {
  TempDir dir;
  const auto original = import_restore_csv(dir, "original", restore_csv(450), kRestoreTypes);
  write_text(dir / "job.yaml", "version: 1\ninput: " + original.string() + "\noutput_dir: " + (dir / "out").string() +
                                   "\nreport: " + (dir / "out" / "report.json").string() +
                                   "\nsteps:\n"
                                   "  - method: microaggregate\n    name: micro\n    variables: [income, age]\n"
                                   "  - method: noise\n    name: restored\n    from: {original: input}\n"
                                   "    variables: [income, age]\n    model: restore-covariance-exact\n"
                                   "    orthogonal: true\n");
  const auto job = run_sdc({"run", (dir / "job.yaml").string()}, {{"SDC_SEED", "5"}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(validate_report(dir / "out" / "report.json"), "");
  const auto direct = dir / "direct.h5";
  const auto made =
      run_sdc({"noise", (dir / "out" / "micro.h5").string(), "-o", direct.string(), "--variables", "income,age",
               "--model", "restore-covariance-exact", "--orthogonal", "--original", original.string()},
              {{"SDC_SEED", "5"}});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(digest_of(dir / "out" / "restored.h5"), digest_of(direct));

  const auto again = run_sdc({"run", (dir / "job.yaml").string(), "--resume"}, {{"SDC_SEED", "5"}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const auto steps = nlohmann::json::parse(read_text(dir / "out" / "report.json"))["steps"];
  ASSERT_EQ(steps.size(), 2U);
  ASSERT_FALSE(steps[1]["warnings"].empty());
  EXPECT_NE(steps[1]["warnings"][0].get<std::string>().find("resumed"), std::string::npos) << steps[1].dump();
  EXPECT_FALSE(steps[1]["results"]["restore_covariance"].is_null());
}

TEST(ARestoreCovarianceNoiseRun, RefusesABadOriginalAndBadFlagsNamingThemAndWritesNothing) {
  TempDir dir;
  const RestoreFiles files = restore_files(dir);
  const auto fewer = import_restore_csv(dir, "fewer", restore_csv(449), kRestoreTypes);
  const auto reordered = import_restore_csv(dir, "reordered", restore_csv(450, true), kRestoreTypes);
  const auto with_missing = import_restore_csv(dir, "missing", restore_csv(450, false, 17), kRestoreTypes);
  const auto categorical_age =
      import_restore_csv(dir, "categorical", restore_csv(450), {"income=continuous", "age=categorical"});
  std::string no_age_csv;  // the third field, age, left out of every line
  for (const auto& line : split_lines(restore_csv(450))) {
    const auto second = line.find(',', line.find(',') + 1);
    no_age_csv += line.substr(0, second) + line.substr(line.find(',', second + 1)) + "\n";
  }
  const auto no_age = import_restore_csv(dir, "no_age", no_age_csv, {"income=continuous"});
  const std::string original = files.original.string();
  struct Case {
    std::string label;
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {"no original", {"--model", "restore-covariance"}, 2, "--original FILE"},
      {"an original for exact noise", {"--model", "exact", "--original", original}, 2, "restore-covariance"},
      {"a covariance percent",
       {"--model", "restore-covariance", "--original", original, "--noise-percent-cov", "50"},
       2,
       "--noise-percent-cov"},
      {"a restored variance",
       {"--model", "restore-covariance-exact", "--original", original, "--restore-variance"},
       2,
       "--restore-variance"},
      {"orthogonal random draws",
       {"--model", "restore-covariance", "--original", original, "--orthogonal"},
       2,
       "restore-covariance-exact"},
      {"fewer records", {"--model", "restore-covariance", "--original", fewer.string()}, 3, "449 records"},
      {"records in another order", {"--model", "restore-covariance", "--original", reordered.string()}, 3, "row id 10"},
      {"a missing value", {"--model", "restore-covariance", "--original", with_missing.string()}, 3, "row id 17"},
      {"a categorical variable",
       {"--model", "restore-covariance", "--original", categorical_age.string()},
       3,
       "'age' is categorical"},
      {"a variable missing", {"--model", "restore-covariance", "--original", no_age.string()}, 3, "'age' not found"},
  };
  for (const Case& c : cases) {
    const auto output = dir / "released.h5";
    std::vector<std::string> args{"noise", files.micro.string(), "-o", output.string(), "--variables", "income,age"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    EXPECT_EQ(result.exit_code, c.exit_code) << c.label << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.label << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.label;
  }
}

}  // namespace
}  // namespace sdc::testing
