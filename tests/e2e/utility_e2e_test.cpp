// `sdc utility` as a user runs it: the worked continuous example of the methods (the Domingo-Ferrer &
// Torra battery and sdcMicro's IL1, IL1s and eigen) read from the report, and a missing value in the
// masked file refused with its variable and row.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

class AUtility : public ::testing::Test {
 protected:
  void SetUp() override {
    import("original", "a,b\n1,2\n2,4\n3,6\n4,9\n");
    import("masked", "a,b\n1.5,3\n1.5,3\n3.5,7.5\n3.5,7.5\n");
  }
  void import(const std::string& name, const std::string& csv) {
    write_text(dir_ / (name + ".csv"), csv);
    const auto result = run_sdc({"import", (dir_ / (name + ".csv")).string(), "-o", (dir_ / (name + ".h5")).string(),
                                 "--type", "a=continuous", "--type", "b=continuous"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }
  ProcessResult utility(const std::string& masked) {
    return run_sdc({"utility", "-i", (dir_ / "original.h5").string(), "--masked", (dir_ / masked).string(),
                    "--variables", "a,b", "--report", (dir_ / "r.json").string()});
  }
  TempDir dir_;
};

TEST_F(AUtility, ReproducesTheWorkedContinuousExample) {
  const auto result = utility("masked.h5");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "r.json"), "");
  const auto step = nlohmann::json::parse(read_text(dir_ / "r.json"))["steps"][0];
  const auto& results = step["results"];
  const auto& battery = results["battery"];
  std::printf("values %s\ncovariances %s\ncorrelations %s\nil1 %s, il1s_sum %s, eigen %s, il_correl %s\n",
              battery["values"].dump().c_str(), battery["covariances"].dump().c_str(),
              battery["correlations"].dump().c_str(), results["il1"].dump().c_str(), results["il1s_sum"].dump().c_str(),
              results["eigen"].dump().c_str(), results["il_correl"].dump().c_str());
  EXPECT_EQ(results["records"], 4);
  // X - X': the printed digits.
  EXPECT_NEAR(battery["values"]["mean_square"].get<double>(), 0.9375, 1e-12);
  EXPECT_NEAR(battery["values"]["mean_absolute"].get<double>(), 0.875, 1e-12);
  EXPECT_NEAR(battery["values"]["mean_variation"].get<double>(), 0.2760417, 5e-8);
  EXPECT_EQ(battery["values"]["entries"], 8);
  // V - V' (divisor n - 1).
  EXPECT_NEAR(battery["covariances"]["mean_square"].get<double>(), 1.833333, 5e-7);
  EXPECT_NEAR(battery["covariances"]["mean_absolute"].get<double>(), 1.111111, 5e-7);
  EXPECT_NEAR(battery["covariances"]["mean_variation"].get<double>(), 0.2201273, 5e-8);
  // R - R': r = 0.9943767 against 1.
  EXPECT_NEAR(battery["correlations"]["mean_square"].get<double>(), 3.16214e-5, 5e-11);
  EXPECT_NEAR(battery["correlations"]["mean_absolute"].get<double>(), 0.00562329, 5e-9);
  EXPECT_NEAR(battery["correlations"]["mean_variation"].get<double>(), 0.00565509, 5e-9);
  EXPECT_NEAR(battery["means"]["mean_square"].get<double>(), 0.0, 1e-15);
  // sdcMicro's measures.
  EXPECT_NEAR(results["il1"].get<double>(), 220.8333, 5e-5);
  EXPECT_NEAR(results["il1s_sum"].get<double>(), 2.279451, 5e-7);
  EXPECT_NEAR(results["il1s_mean"].get<double>(), 2.279451 / 8, 5e-7);
  EXPECT_NEAR(results["eigen"].get<double>(), 1.00282, 5e-6);
  // The masked file's two variables are collinear: F - F' and IL_correl are not defined, with a warning.
  EXPECT_EQ(results["components"]["masked_correlation_singular"], true);
  EXPECT_EQ(battery["score_coefficients"]["defined"], false);
  EXPECT_TRUE(results["il_correl"].is_null());
  EXPECT_FALSE(step["warnings"].empty());
}

TEST_F(AUtility, NamesTheVariableAndRowOfAMissingMaskedValue) {
  import("gap", "a,b\n1.5,3\n1.5,3\n3.5,\n3.5,7.5\n");
  const auto before = dir_.entries();
  const auto result = utility("gap.h5");
  std::printf("exit %d: %s", result.exit_code, result.err.c_str());
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("variable 'b'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("row id 2"), std::string::npos) << result.err;
  EXPECT_EQ(dir_.entries(), before);
}

}  // namespace
}  // namespace sdc::testing
