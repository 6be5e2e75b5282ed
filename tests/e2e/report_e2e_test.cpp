// `sdc report`: a run report as an HTML page, and the errors of bad reports (docs/report.md).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kInvalidInput = 3;
constexpr int kIo = 5;

/// A real run report: the one of `sdc generate seed`, a run of one step.
std::filesystem::path seed_run_report(const TempDir& dir) {
  const auto result =
      run_sdc({"generate", "seed", "--output", (dir / "seed").string(), "--report", (dir / "seed.json").string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return dir / "seed.json";
}

TEST(SdcReport, RendersARunReportAsOnePageThatSaysWhatTheRunLacks) {
  TempDir dir;
  const auto result = run_sdc({"report", seed_run_report(dir).string(), "--output", (dir / "page.html").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string html = read_text(dir / "page.html");
  EXPECT_NE(html.find("id=\"chart-step-timings\""), std::string::npos);
  EXPECT_NE(html.find("generate seed"), std::string::npos);
  EXPECT_NE(html.find("id=\"section-risk-distribution\""), std::string::npos);
  EXPECT_NE(html.find("Not in this run"), std::string::npos);
}

TEST(SdcReport, RefusesBadReportsWithTheirCodeAndLeavesNoPage) {
  TempDir dir;
  write_text(dir / "text.json", "not json\n");
  write_text(dir / "other.json", R"({"steps": []})");
  nlohmann::json newer = nlohmann::json::parse(read_text(seed_run_report(dir)));
  newer["report_schema_version"] = 2;
  write_text(dir / "newer.json", newer.dump());
  struct Case {
    std::string input;
    int code;
    std::string message;
  };
  for (const Case& bad : {Case{"absent.json", kIo, "absent.json: cannot open run report"},
                          Case{"text.json", kInvalidInput, "text.json: not JSON"},
                          Case{"other.json", kInvalidInput, "other.json: not a run report"},
                          Case{"newer.json", kInvalidInput, "newer.json: report schema version 2"}}) {
    const auto result = run_sdc({"report", (dir / bad.input).string(), "--output", (dir / "page.html").string()});
    EXPECT_EQ(result.exit_code, bad.code) << bad.input << ": " << result.err;
    EXPECT_NE(result.err.find(bad.message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "page.html")) << bad.input;
  }
  const auto same = run_sdc({"report", (dir / "newer.json").string(), "--output", (dir / "newer.json").string()});
  EXPECT_EQ(same.exit_code, kUsage) << same.err;
  for (const std::string& entry : dir.entries()) EXPECT_NE(entry.front(), '.') << entry;
}

}  // namespace
}  // namespace sdc::testing
