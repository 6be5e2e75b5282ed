#include "engine/report/html_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

using nlohmann::json;

json step(const std::string& method, json results, double seconds = 0.5) {
  return {{"method", method},
          {"parameters", json::object()},
          {"results", std::move(results)},
          {"warnings", json::array()},
          {"seconds", seconds}};
}

json risk_results(std::int64_t records, double median_risk, double low, double high) {
  return {{"records", records},
          {"individual_risk",
           {{"quantiles",
             {{{"p", 0.0}, {"value", 0.0123456}},
              {{"p", 0.5}, {"value", median_risk}},
              {{"p", 1.0}, {"value", 0.987654}}}}}},
          {"bootstrap",
           {{"confidence", 0.95},
            {"statistics",
             {{"global_risk", {{"estimate", median_risk}, {"percentile", {{"lower", low}, {"upper", high}}}}}}}}}};
}

json run_report(json steps) {
  return {{"report_schema_version", 1},
          {"tool", {{"name", "sdc-engine"}, {"version", "0.1.0"}}},
          {"command", {"sdc", "run", "jobs/census.yaml"}},
          {"started_utc", "2026-01-01T00:00:00Z"},
          {"finished_utc", "2026-01-01T00:01:00Z"},
          {"ranks", 1},
          {"threads", 2},
          {"seed_fingerprint", nullptr},
          {"inputs", {{{"name", "input"}, {"path", "census.h5"}, {"rows", 1000}, {"digest", std::string(64, 'a')}}}},
          {"outputs", json::array()},
          {"steps", std::move(steps)},
          {"peak_memory_bytes", {1}}};
}

/// A run with a step for every chart.
json complete_report() {
  return run_report({
      step("risk", risk_results(1000, 0.25, 0.2, 0.3)),
      step("anonymize", {{"frontier",
                          {{{"levels", {1, 0}}, {"loss", 0.1}, {"outliers", 40}, {"height", 1}},
                           {{"levels", {2, 1}}, {"loss", 0.3}, {"outliers", "< 3"}, {"height", 3}}}}}),
      step("swap targeted",
           {{"levels",
             {{{"level", 1}, {"variable", "nuts1"}, {"risky_households", 120}, {"risky_households_after", 80}},
              {{"level", 2}, {"variable", "nuts2"}, {"risky_households", 300}, {"risky_households_after", 250}}}}}),
      step("swap frontier", {{"risk_bound", 0.2},
                             {"candidates",
                              {{{"disclosure_risk", 0.1}, {"utility", 0.5}, {"on_frontier", true}},
                               {{"disclosure_risk", 0.3}, {"utility", 0.9}, {"on_frontier", true}},
                               {{"disclosure_risk", 0.4}, {"utility", 0.6}, {"on_frontier", false}}}}}),
      step("utility", {{"variables", {"income"}}, {"il1s_mean", 0.07}, {"il_percent", 11.9}}),
      step("risk", risk_results(1000, 0.05, 0.03, 0.07)),
  });
}

/// The markup of the element with `id` up to its closing tag (charts do not nest their own kind).
std::string element(const std::string& html, const std::string& id) {
  const auto start = html.find("id=\"" + id + "\"");
  if (start == std::string::npos) return {};
  const auto open = html.rfind('<', start);
  const std::string tag = html.substr(open + 1, html.find(' ', open) - open - 1);
  return html.substr(open, html.find("</" + tag + ">", start) - open);
}

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

constexpr const char* kCharts[] = {"risk-distribution",     "risky-households", "recoding-frontier",
                                   "risk-utility-frontier", "information-loss", "bootstrap-intervals",
                                   "step-timings"};

TEST(AnHtmlReport, DrawsEveryChartWithDataMarksWhenTheRunHasTheirSteps) {
  const std::string html = render_html_report(complete_report(), "run.json", 3);
  for (const char* chart : kCharts) {
    SCOPED_TRACE(chart);
    EXPECT_GE(count_of(element(html, std::string("chart-") + chart), "class=\"mark\""), 1U);
  }
  EXPECT_EQ(count_of(html, "not-in-run"), 1U);  // the style rule only
}

TEST(AnHtmlReport, SaysWhichChartsTheRunLacksInsteadOfLeavingThemOut) {
  const std::string html = render_html_report(run_report({step("recode", {{"records", 10}})}), "run.json", 3);
  for (const char* chart : kCharts)
    EXPECT_NE(html.find(std::string("id=\"section-") + chart + "\""), std::string::npos);
  EXPECT_EQ(count_of(html, "<p class=\"not-in-run\">Not in this run"), 6U);
  EXPECT_GE(count_of(element(html, "chart-step-timings"), "class=\"mark\""), 1U);
}

TEST(AnHtmlReport, ShowsACountOfOneAsBelowTheMinimum) {
  json report = complete_report();
  report["steps"][2]["results"]["levels"][0]["risky_households"] = 1;
  const std::string html = render_html_report(report, "run.json", 3);
  const std::string chart = element(html, "chart-risky-households");
  EXPECT_NE(chart.find("<title>1 nuts1, before swapping: &lt; 3</title>"), std::string::npos);
  EXPECT_EQ(chart.find(">1<"), std::string::npos);
  EXPECT_EQ(chart.find(": 1<"), std::string::npos);
  EXPECT_NE(chart.find("stroke-dasharray=\"4 3\""), std::string::npos);  // drawn as an outline up to 3
}

TEST(AnHtmlReport, NeverPrintsACountBelowALargerMinimumAnywhere) {
  json report = complete_report();
  report["steps"][2]["results"]["levels"][1]["risky_households_after"] = 4321;
  report["inputs"][0]["rows"] = 4322;
  const std::string html = render_html_report(report, "run.json", 5000);
  EXPECT_EQ(html.find("4321"), std::string::npos);
  EXPECT_EQ(html.find("4322"), std::string::npos);
  EXPECT_NE(html.find("&lt; 5000"), std::string::npos);
}

TEST(AnHtmlReport, TakesTheMinimumTheRunUsedWhenItIsLarger) {
  json report = complete_report();
  report["steps"][2]["results"]["levels"][0]["risky_households"] = "< 10";
  report["steps"][2]["results"]["levels"][0]["risky_households_after"] = 7;
  const std::string html = render_html_report(report, "run.json", 3);
  EXPECT_EQ(count_of(element(html, "chart-risky-households"), "nuts1, after swapping: &lt; 10</title>"), 1U);
}

TEST(AnHtmlReport, NeverShowsTheRiskOfASingleRecord) {
  const std::string html = render_html_report(complete_report(), "run.json", 3);
  const std::string chart = element(html, "chart-risk-distribution");
  // Of the quantiles 0, 0.5 and 1 only the median lies among enough records on both sides.
  EXPECT_EQ(count_of(chart, "class=\"mark\""), 2U);  // one per risk step
  for (const char* value : {"0.987654", "0.9877", "0.0123456", "0.01235"})
    EXPECT_EQ(html.find(value), std::string::npos);
}

TEST(AnHtmlReport, ShowsNoQuantileOfARunWithFewerRecordsThanTheMinimumOnEachSide) {
  json report = run_report({step("risk", risk_results(4, 0.5, 0.4, 0.6))});
  const std::string html = render_html_report(report, "run.json", 3);
  EXPECT_TRUE(element(html, "chart-risk-distribution").empty());
  EXPECT_NE(html.find("id=\"section-risk-distribution\""), std::string::npos);
  report["steps"][0]["results"]["records"] = "< 3";
  EXPECT_TRUE(element(render_html_report(report, "run.json", 3), "chart-risk-distribution").empty());
}

TEST(AnHtmlReport, EscapesTextItTakesFromTheReport) {
  json report = complete_report();
  report["command"] = {"sdc", "<script>alert(1)</script>", "a&b"};
  report["steps"][2]["results"]["levels"][0]["variable"] = "<img src=x onerror=alert(1)>";
  const std::string html = render_html_report(report, "<run>.json", 3);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&amp;b"), std::string::npos);
  EXPECT_NE(html.find("&lt;run&gt;.json"), std::string::npos);
}

TEST(AnHtmlReport, IsSelfContained) {
  const std::string html = render_html_report(complete_report(), "run.json", 3);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  // The only URL is the SVG namespace, a name that nothing fetches.
  EXPECT_EQ(count_of(html, "http://"), count_of(html, "http://www.w3.org/2000/svg"));
}

class AReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        std::filesystem::temp_directory_path() / ("sdc-html-report-test-" + std::to_string(::getpid()) + "-" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(directory_ / name) << text;
    return directory_ / name;
  }
  /// Renders `input` to page.html, expecting `Error` with a message holding `fragment`, and no page.
  template <typename Error>
  void expect_refused(const std::filesystem::path& input, const std::string& fragment) const {
    try {
      write_html_report(input, directory_ / "page.html", 3, io::FilePermissions{});
      ADD_FAILURE() << "no error for " << input;
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(input.filename().string()), std::string::npos) << error.what();
    }
    // Neither the page nor a temporary file of it is left.
    for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
      EXPECT_NE(entry.path().extension(), ".html") << entry.path();
      EXPECT_NE(entry.path().filename().string().front(), '.') << entry.path();
    }
  }

  std::filesystem::path directory_;
};

TEST_F(AReportFile, IsWrittenWholeUnderTheOutputName) {
  write_html_report(write("run.json", complete_report().dump()), directory_ / "page.html", 3, io::FilePermissions{});
  std::ifstream page(directory_ / "page.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0U);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(directory_), {}), 2);  // run.json, page.html
}

TEST_F(AReportFile, ThatIsMissingIsAnIoError) { expect_refused<IoError>(directory_ / "absent.json", "absent.json"); }

TEST_F(AReportFile, ThatIsNotJsonIsInvalidInput) {
  expect_refused<InvalidInput>(write("text.json", "steps: [risk]\n"), "not JSON");
}

TEST_F(AReportFile, ThatIsJsonButNoRunReportIsInvalidInput) {
  expect_refused<InvalidInput>(write("list.json", "[1, 2]"), "not a run report");
  expect_refused<InvalidInput>(write("other.json", R"({"report_schema_version": 1, "tool": {"name": "x"}})"),
                               "not a run report");
  json no_steps = complete_report();
  no_steps.erase("steps");
  expect_refused<InvalidInput>(write("no_steps.json", no_steps.dump()), "no list of steps");
}

TEST_F(AReportFile, OfAnotherSchemaVersionIsInvalidInput) {
  json report = complete_report();
  report["report_schema_version"] = 2;
  expect_refused<InvalidInput>(write("v2.json", report.dump()), "report schema version 2");
}

TEST_F(AReportFile, WithAFieldOfTheWrongTypeIsInvalidInput) {
  json report = complete_report();
  report["steps"][2]["results"]["levels"][0]["variable"] = 17;
  expect_refused<InvalidInput>(write("typed.json", report.dump()), "wrong type");
}

}  // namespace
}  // namespace sdc::engine
