#include "engine/report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/report/category_chart.h"
#include "engine/report/run_report.h"
#include "engine/report/scatter_plot.h"
#include "io/input_file.h"
#include "io/markup.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

using io::escape_markup;
using nlohmann::json;

// A run report is a few MB even for the census job with every table listed; this bounds what a
// wrong path (a data file) makes the command read.
constexpr std::size_t kMaxReportBytes = std::size_t{1} << 30;

constexpr std::string_view kBeforeColour = "#1f77b4";
constexpr std::string_view kAfterColour = "#d62728";
constexpr std::string_view kOtherColour = "#2ca02c";

/// N of a "< N" text (small_counts.h), or nothing.
std::optional<std::int64_t> hidden_count_bound(const json& value) {
  if (!value.is_string()) return std::nullopt;
  const std::string& text = value.get_ref<const std::string&>();
  if (text.size() < 3 || text.compare(0, 2, "< ") != 0) return std::nullopt;
  std::int64_t bound = 0;
  const auto [end, error] = std::from_chars(text.data() + 2, text.data() + text.size(), bound);
  if (error != std::errc{} || end != text.data() + text.size() || bound <= 0) return std::nullopt;
  return bound;
}

/// The largest N of any "< N" in the report: the minimum the run itself used, when larger.
std::int64_t largest_hidden_bound(const json& value) {
  if (const auto bound = hidden_count_bound(value)) return *bound;
  std::int64_t largest = 0;
  if (value.is_structured())
    for (const auto& item : value) largest = std::max(largest, largest_hidden_bound(item));
  return largest;
}

/// A count of the original data as the page may show it: a number at or above the minimum, zero, or
/// "< N". `value` is empty when only the bound is known.
struct ShownCount {
  std::optional<std::int64_t> value;
  std::int64_t bound = 0;
  std::string text;
};

ShownCount shown_count(const json& count, std::int64_t min_count) {
  if (const auto bound = hidden_count_bound(count)) return {std::nullopt, *bound, "< " + std::to_string(*bound)};
  if (!count.is_number()) return {std::nullopt, 0, "-"};
  const auto value = static_cast<std::int64_t>(std::llround(count.get<double>()));
  if (value > 0 && value < min_count) return {std::nullopt, min_count, "< " + std::to_string(min_count)};
  return {value, value, std::to_string(value)};
}

Bar count_bar(const ShownCount& count) {
  if (count.value) return {static_cast<double>(*count.value), false, count.text};
  return {static_cast<double>(count.bound), true, count.text};
}

double number_or_nan(const json& value) {
  return value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::string shown_number(const json& value) {
  return value.is_number() ? fmt::format("{:.4g}", value.get<double>()) : std::string("-");
}

/// A step as the page names it: its place in the run (1-based) and its method.
std::string step_label(std::size_t index, const json& step) {
  return fmt::format("step {} ({})", index + 1, step.at("method").get<std::string>());
}

std::vector<std::size_t> steps_of(const json& report, std::string_view method) {
  std::vector<std::size_t> found;
  const json& steps = report.at("steps");
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].at("method").get<std::string>() == method) found.push_back(i);
  return found;
}

/// The label of the `position`th of `count` steps of one method: the first is "before", the last
/// "after" (a run masks between its first and its last risk step).
std::string before_after_label(std::size_t position, std::size_t count, const std::string& step) {
  if (count > 1 && position == 0) return "before: " + step;
  if (count > 1 && position + 1 == count) return "after: " + step;
  return step;
}

std::string_view before_after_colour(std::size_t position, std::size_t count) {
  if (position == 0) return kBeforeColour;
  return position + 1 == count ? kAfterColour : kOtherColour;
}

struct Section {
  std::string key;    ///< ids: section-<key>, chart-<key>
  std::string title;  ///< the heading
  std::string body;   ///< the chart, or empty when the run lacks its data
  std::string absent_reason;
  std::string caption;

  /// This section with its chart and the caption that names the chart's source.
  Section drawn(std::string chart, std::string source_caption) && {
    body = std::move(chart);
    caption = std::move(source_caption);
    return std::move(*this);
  }
};

std::string render_section(const Section& section) {
  std::string html =
      fmt::format("<section id=\"section-{}\">\n<h2>{}</h2>\n", section.key, escape_markup(section.title));
  if (section.body.empty()) {
    html += fmt::format("<p class=\"not-in-run\">Not in this run: {}</p>\n", escape_markup(section.absent_reason));
  } else {
    html += section.body;
    if (!section.caption.empty()) html += fmt::format("<p class=\"caption\">{}</p>\n", escape_markup(section.caption));
  }
  return html + "</section>\n";
}

// ---- the charts -----------------------------------------------------------------------------------

/// Calls `visit(results, label, colour)` for every risk step in run order, the first labelled "before"
/// and the last "after".
template <typename Visit>
void for_each_risk_step(const json& report, Visit visit) {
  const std::vector<std::size_t> steps = steps_of(report, "risk");
  for (std::size_t position = 0; position < steps.size(); ++position) {
    const json& step = report.at("steps")[steps[position]];
    visit(step.at("results"), before_after_label(position, steps.size(), step_label(steps[position], step)),
          std::string(before_after_colour(position, steps.size())));
  }
}

Section risk_distribution(const json& report, std::int64_t min_count) {
  Section section{"risk-distribution", "Individual risk before and after", "",
                  "it needs a risk step (sdc risk) with individual risk quantiles.", ""};
  ScatterPlot plot{"chart-risk-distribution",
                   "Individual risk by quantile",
                   "share of records at or below (quantile level p)",
                   "individual risk",
                   {},
                   std::nullopt,
                   ""};
  for_each_risk_step(report, [&](const json& results, const std::string& label, const std::string& colour) {
    if (!results.contains("individual_risk") || !results.at("individual_risk").contains("quantiles")) return;
    const ShownCount records = shown_count(results.value("records", json()), min_count);
    if (!records.value) return;
    PlotSeries series{label, {}, colour, 4.0, true, false};
    // A quantile is a record's risk: shown only where at least min_count records lie at or below it
    // and at or above it, so that neither end of the distribution (one record's risk) is printed.
    for (const json& quantile : results.at("individual_risk").at("quantiles")) {
      const double p = quantile.at("p").get<double>();
      const double records_below = p * static_cast<double>(*records.value);
      const double records_above = (1.0 - p) * static_cast<double>(*records.value);
      if (records_below < static_cast<double>(min_count) || records_above < static_cast<double>(min_count)) continue;
      const double value = number_or_nan(quantile.at("value"));
      if (std::isfinite(value)) series.points.push_back({p, value});
    }
    if (!series.points.empty()) plot.series.push_back(std::move(series));
  });
  if (plot.series.empty()) return section;
  return std::move(section).drawn(
      render_svg(plot), fmt::format("Quantiles of the individual risk of each risk step "
                                    "(results.individual_risk.quantiles). Quantiles with fewer than {} records at or "
                                    "below them, or at or above them, are not shown.",
                                    min_count));
}

/// A chart drawn from the last step of `method`: `draw` fills the section's body and caption from the
/// step's results and label; the section stays a "not in this run" note when the run has no such step
/// or `draw` finds nothing to draw.
template <typename Draw>
Section from_last_step(const json& report, std::string_view method, Section section, Draw draw) {
  const std::vector<std::size_t> steps = steps_of(report, method);
  if (steps.empty()) return section;
  const json& step = report.at("steps")[steps.back()];
  draw(step.at("results"), step_label(steps.back(), step), section);
  return section;
}

Section risky_households(const json& report, std::int64_t min_count) {
  return from_last_step(
      report, "swap targeted",
      {"risky-households", "Risky households by geography level", "",
       "it needs a targeted swapping step (sdc swap targeted).", ""},
      [&](const json& results, const std::string& label, Section& section) {
        const json levels = results.value("levels", json::array());
        if (levels.empty()) return;
        BarChart chart{"chart-risky-households", "Households at risk, by level of the geography", "households", {}, {}};
        BarSeries before{"before swapping", {}, std::string(kBeforeColour)};
        BarSeries after{"after swapping", {}, std::string(kAfterColour)};
        for (const json& level : levels) {
          chart.categories.push_back(
              fmt::format("{} {}", level.at("level").get<std::int64_t>(), level.at("variable").get<std::string>()));
          before.bars.push_back(count_bar(shown_count(level.at("risky_households"), min_count)));
          after.bars.push_back(count_bar(shown_count(level.value("risky_households_after", json()), min_count)));
        }
        chart.series = {before, after};
        section.body = render_svg(chart);
        section.caption = fmt::format(
            "{}: households with a member in a cell below the threshold at each level (results.levels: "
            "risky_households, risky_households_after). Counts below {} are drawn as dashed outlines up to {}.",
            label, min_count, min_count);
      });
}

Section recoding_frontier(const json& report, std::int64_t min_count) {
  return from_last_step(report, "anonymize",
                        {"recoding-frontier", "Recoding frontier: loss against outliers", "",
                         "it needs a full-domain generalisation step (sdc anonymize).", ""},
                        [&](const json& results, const std::string& label, Section& section) {
                          PlotSeries shown{"frontier", {}, std::string(kBeforeColour), 4.0, true, false};
                          PlotSeries hidden{fmt::format("fewer than {} outliers (drawn at {})", min_count, min_count),
                                            {},
                                            std::string(kBeforeColour),
                                            4.0,
                                            false,
                                            true};
                          for (const json& node : results.value("frontier", json::array())) {
                            const ShownCount outliers = shown_count(node.at("outliers"), min_count);
                            const double loss = number_or_nan(node.at("loss"));
                            if (outliers.value)
                              shown.points.push_back({loss, static_cast<double>(*outliers.value)});
                            else
                              hidden.points.push_back({loss, static_cast<double>(outliers.bound)});
                          }
                          ScatterPlot plot{"chart-recoding-frontier",
                                           "Generalisations no other beats on both loss and outliers",
                                           "information loss (LM)",
                                           "outliers (records suppressed)",
                                           {},
                                           std::nullopt,
                                           ""};
                          for (PlotSeries* series : {&shown, &hidden})
                            if (!series->points.empty()) plot.series.push_back(*series);
                          if (plot.series.empty()) return;
                          section.body = render_svg(plot);
                          section.caption = label + ": results.frontier (loss, outliers).";
                        });
}

Section risk_utility_frontier(const json& report) {
  return from_last_step(
      report, "swap frontier",
      {"risk-utility-frontier", "Risk-utility frontier of data swapping", "",
       "it needs a data swapping frontier step (sdc swap frontier).", ""},
      [&](const json& results, const std::string& label, Section& section) {
        PlotSeries candidates{"candidates", {}, std::string(kOtherColour), 3.0, false, true};
        PlotSeries frontier{"frontier", {}, std::string(kAfterColour), 4.0, true, false};
        for (const json& candidate : results.value("candidates", json::array())) {
          const PlotPoint point{number_or_nan(candidate.at("disclosure_risk")), number_or_nan(candidate.at("utility"))};
          (candidate.value("on_frontier", false) ? frontier : candidates).points.push_back(point);
        }
        if (candidates.points.empty() && frontier.points.empty()) return;
        std::sort(frontier.points.begin(), frontier.points.end(),
                  [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
        ScatterPlot plot{"chart-risk-utility-frontier",
                         "Candidate releases: disclosure risk against utility",
                         "disclosure risk (DR)",
                         "data utility (DU)",
                         {candidates, frontier},
                         std::nullopt,
                         "risk bound"};
        if (results.contains("risk_bound") && results.at("risk_bound").is_number())
          plot.vertical_line = results.at("risk_bound").get<double>();
        section.body = render_svg(plot);
        section.caption =
            label + ": results.candidates (disclosure_risk, utility, on_frontier) and results.risk_bound.";
      });
}

struct LossRow {
  std::string step;
  std::string measure;
  std::string variables;
  std::string value;
};

std::string joined(const json& names, std::string_view separator) {
  std::string text;
  for (const json& name : names) {
    if (!text.empty()) text += separator;
    text += name.get<std::string>();
  }
  return text;
}

std::vector<LossRow> information_loss_rows(const json& report, std::int64_t min_count) {
  std::vector<LossRow> rows;
  const json& steps = report.at("steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string method = steps[i].at("method").get<std::string>();
    const json& results = steps[i].at("results");
    const std::string label = step_label(i, steps[i]);
    if (method == "microaggregate" && results.contains("il_percent")) {
      rows.push_back({label, "IL (SSE / SST, %)", joined(results.value("variables", json::array()), ", "),
                      shown_number(results.at("il_percent"))});
    }
    if (method != "utility") continue;
    if (results.contains("il1s_mean")) {
      const std::string variables = joined(results.value("variables", json::array()), ", ");
      for (const auto& [field, measure] :
           {std::pair{"il1s_mean", "IL1s (mean)"}, std::pair{"il_percent", "IL (%)"},
            std::pair{"il_correl", "IL of correlations"}, std::pair{"eigen", "eigenvalue loss"}})
        if (results.contains(field)) rows.push_back({label, measure, variables, shown_number(results.at(field))});
    }
    if (!results.contains("categorical")) continue;
    const json& categorical = results.at("categorical");
    for (const json& variable : categorical.value("variables", json::array())) {
      const std::string name = variable.at("name").get<std::string>();
      rows.push_back(
          {label, "records changed", name, shown_count(variable.value("records_changed", json()), min_count).text});
      if (variable.contains("ebil")) rows.push_back({label, "EBIL", name, shown_number(variable.at("ebil"))});
    }
    if (!categorical.contains("ctbil")) continue;
    for (const json& table : categorical.at("ctbil").value("by_table", json::array())) {
      const std::string variables = joined(table.at("variables"), " x ");
      rows.push_back({label, "CTBIL", variables, shown_count(table.value("ctbil", json()), min_count).text});
      rows.push_back({label, "Hellinger distance", variables, shown_number(table.value("hellinger", json()))});
      rows.push_back({label, "total variation", variables, shown_number(table.value("total_variation", json()))});
    }
  }
  return rows;
}

Section information_loss(const json& report, std::int64_t min_count) {
  Section section{"information-loss", "Information loss", "",
                  "it needs a utility step (sdc utility) or a microaggregation step.", ""};
  const std::vector<LossRow> rows = information_loss_rows(report, min_count);
  if (rows.empty()) return section;
  std::string html =
      "<table id=\"chart-information-loss\">\n<thead><tr><th>step</th><th>measure</th><th>variables</th>"
      "<th>value</th></tr></thead>\n<tbody>\n";
  for (const LossRow& row : rows)
    html += fmt::format("<tr class=\"mark\"><td>{}</td><td>{}</td><td>{}</td><td class=\"number\">{}</td></tr>\n",
                        escape_markup(row.step), escape_markup(row.measure), escape_markup(row.variables),
                        escape_markup(row.value));
  return std::move(section).drawn(
      html + "</tbody>\n</table>\n",
      "Continuous measures of utility steps (il1s_mean, il_percent, il_correl, eigen) and of microaggregation "
      "(il_percent); categorical measures (categorical.variables: records_changed, ebil; categorical.ctbil.by_table: "
      "ctbil, hellinger, total_variation).");
}

Section bootstrap_intervals(const json& report) {
  Section section{"bootstrap-intervals", "Bootstrap intervals of the global risk", "",
                  "it needs a risk step with a bootstrap (sdc risk --bootstrap).", ""};
  IntervalChart chart{"chart-bootstrap-intervals",
                      "Global risk: estimate and percentile interval",
                      "global risk",
                      {},
                      std::string(kBeforeColour)};
  double confidence = 0.0;
  for_each_risk_step(report, [&](const json& results, const std::string& label, const std::string&) {
    if (!results.contains("bootstrap") || !results.at("bootstrap").is_object()) return;
    const json& bootstrap = results.at("bootstrap");
    if (!bootstrap.contains("statistics") || !bootstrap.at("statistics").contains("global_risk")) return;
    const json& statistic = bootstrap.at("statistics").at("global_risk");
    const json& interval = statistic.at("percentile");
    confidence = number_or_nan(bootstrap.value("confidence", json()));
    chart.rows.push_back({label, number_or_nan(statistic.at("estimate")), number_or_nan(interval.at("lower")),
                          number_or_nan(interval.at("upper"))});
  });
  if (chart.rows.empty()) return section;
  return std::move(section).drawn(render_svg(chart),
                                  fmt::format("Risk steps' results.bootstrap.statistics.global_risk: the estimate "
                                              "(dot) and the {:.3g} percentile interval of the replicates (bar).",
                                              confidence));
}

Section step_timings(const json& report) {
  Section section{"step-timings", "Step timings", "", "the report lists no step.", ""};
  const json& steps = report.at("steps");
  if (steps.empty()) return section;
  BarChart chart{"chart-step-timings", "Wall time of each step", "seconds", {}, {}};
  BarSeries seconds{"seconds", {}, std::string(kBeforeColour)};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    chart.categories.push_back(step_label(i, steps[i]));
    const double value = number_or_nan(steps[i].at("seconds"));
    seconds.bars.push_back({value, false, fmt::format("{:.3g} s", value)});
  }
  chart.series = {seconds};
  return std::move(section).drawn(render_svg(chart), "Each step's seconds.");
}

// ---- the page -------------------------------------------------------------------------------------

std::string run_summary(const json& report, std::string_view source_name, std::int64_t min_count) {
  std::vector<std::pair<std::string, std::string>> rows{
      {"report", std::string(source_name)},
      {"tool", fmt::format("{} {}", report.at("tool").at("name").get<std::string>(),
                           report.at("tool").at("version").get<std::string>())},
      {"command", joined(report.value("command", json::array()), " ")},
      {"started (UTC)", report.value("started_utc", "-")},
      {"finished (UTC)", report.value("finished_utc", "-")},
      {"ranks x threads", fmt::format("{} x {}", report.value("ranks", 0), report.value("threads", 0))},
      {"steps", std::to_string(report.at("steps").size())},
  };
  std::string html = "<table class=\"summary\">\n";
  for (const auto& [name, value] : rows)
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape_markup(name), escape_markup(value));
  for (const json& input : report.value("inputs", json::array()))
    html +=
        fmt::format("<tr><th>{}</th><td>{} ({} rows)</td></tr>\n", escape_markup(input.at("name").get<std::string>()),
                    escape_markup(input.at("path").get<std::string>()),
                    escape_markup(shown_count(input.at("rows"), min_count).text));
  return html + "</table>\n";
}

constexpr std::string_view kStyle =
    "body{font-family:sans-serif;margin:24px;background:#fff;color:#222}"
    "section{display:inline-block;vertical-align:top;margin:12px 16px 12px 0;max-width:720px}"
    "h2{font-size:17px;margin:8px 0}table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}td.number{text-align:right}"
    ".not-in-run{color:#555;font-style:italic}.caption{color:#555;font-size:12px}"
    "#section-information-loss{max-height:480px;overflow:auto}";

}  // namespace

nlohmann::json read_run_report(const std::filesystem::path& path) {
  const std::string text = io::read_input_file(path, "run report", kMaxReportBytes);
  json report;
  try {
    report = json::parse(text);
  } catch (const json::parse_error& error) {
    // The parser's message quotes the text it stopped at; the position says enough.
    throw InvalidInput(fmt::format("{}: not JSON (syntax error at byte {})", path.string(), error.byte));
  }
  if (!report.is_object() || !report.contains("report_schema_version"))
    throw InvalidInput(path.string() + ": not a run report: no report_schema_version (docs/report-schema.json)");
  const json& version = report.at("report_schema_version");
  if (!version.is_number_integer())
    throw InvalidInput(path.string() + ": not a run report: report_schema_version is not an integer");
  if (version.get<std::int64_t>() != kReportSchemaVersion)
    throw InvalidInput(fmt::format("{}: report schema version {} is not one this sdc reads (version {})", path.string(),
                                   version.get<std::int64_t>(), kReportSchemaVersion));
  const auto missing = [&](std::string_view field) {
    throw InvalidInput(fmt::format("{}: not a run report: {} (docs/report-schema.json)", path.string(), field));
  };
  if (!report.contains("tool") || !report.at("tool").is_object() ||
      report.at("tool").value("name", json()) != json("sdc-engine"))
    missing("tool.name is not sdc-engine");
  if (!report.contains("steps") || !report.at("steps").is_array()) missing("no list of steps");
  for (const json& step : report.at("steps"))
    if (!step.is_object() || !step.contains("method") || !step.at("method").is_string() || !step.contains("results") ||
        !step.at("results").is_object() || !step.contains("seconds"))
      missing("a step without method, results or seconds");
  return report;
}

std::string render_html_report(const nlohmann::json& report, std::string_view source_name, std::int64_t min_count) {
  min_count = std::max(min_count, largest_hidden_bound(report));
  std::vector<Section> sections;
  try {
    sections = {risk_distribution(report, min_count),
                risky_households(report, min_count),
                recoding_frontier(report, min_count),
                risk_utility_frontier(report),
                information_loss(report, min_count),
                bootstrap_intervals(report),
                step_timings(report)};
    std::string html = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        // Nothing leaves the page: the report is read offline, often where no network may be reached.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<title>sdc-engine run report: {0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
        "<h1>sdc-engine run report</h1>\n",
        escape_markup(source_name), kStyle);
    html += run_summary(report, source_name, min_count);
    for (const Section& section : sections) html += render_section(section);
    html += fmt::format(
        "<p class=\"caption\">Small-count rule: counts of the original data below {0} are shown as \"&lt; {0}\" and "
        "drawn as dashed outlines; no value of a single record is shown.</p>\n</body>\n</html>\n",
        min_count);
    return html;
  } catch (const json::exception& error) {
    throw InvalidInput(fmt::format("{}: not a run report: a field has the wrong type or is missing ({})",
                                   std::string(source_name), error.what()));
  }
}

void write_html_report(const std::filesystem::path& run_report, const std::filesystem::path& output,
                       std::int64_t min_count, io::FilePermissions permissions) {
  const json report = read_run_report(run_report);
  io::write_file_atomically(output, render_html_report(report, run_report.string(), min_count), permissions);
}

}  // namespace sdc::engine
