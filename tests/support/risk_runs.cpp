#include "tests/support/risk_runs.h"

#include <gtest/gtest.h>

namespace sdc::testing {

void import_francdat_with_households(const TempDir& dir) {
  constexpr const char* kFrancdat =
      "hid,Key1,Key2,Key3,Key4,w\n"
      "1,1,2,5,1,18\n1,1,2,1,1,45.5\n2,1,2,1,1,39\n2,3,3,1,5,17\n2,4,3,1,4,541\n3,4,3,1,1,8\n4,6,2,1,5,5\n4,1,2,5,1,"
      "92\n";
  write_text(dir / "f.csv", kFrancdat);
  const auto imported = run_sdc({"import", (dir / "f.csv").string(), "-o", (dir / "f.h5").string(), "--role",
                                 "household=hid", "--role", "weight=w", "--role", "key=Key1,Key2,Key3,Key4"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
}

std::pair<std::vector<std::vector<std::string>>, nlohmann::json> run_and_read_back(
    const std::vector<std::string>& args, const std::filesystem::path& output, const std::filesystem::path& report,
    const std::map<std::string, std::string>& environment) {
  const auto result = run_sdc(args, environment);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto csv = std::filesystem::path(output).replace_extension(".csv");
  EXPECT_EQ(run_sdc({"export", output.string(), "-o", csv.string()}).exit_code, 0);
  const auto results = nlohmann::json::parse(read_text(report))["steps"][0]["results"];
  return {read_csv_fields(csv), results};
}

}  // namespace sdc::testing
