// `sdc noise` as a user runs it: exact noise whose released file keeps the means and covariance the
// method promises (read back with `sdc export` and measured here), the same file for the same seed,
// the other variables untouched, the step in a job, and every refusal with its exit code and no output.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
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

}  // namespace
}  // namespace sdc::testing
