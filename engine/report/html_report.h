#pragma once
// `sdc report`: a run report (docs/report-schema.json) as one self-contained HTML page, its charts
// inline SVG (scatter_plot.h, category_chart.h), for review boards that read reports rather than JSON.
// It is rendered from the report alone, never from the data, and keeps the report's small-count rule
// (small_counts.h): a count of the original data below the rule's minimum is shown as "< N", and no
// value of a single record is shown (docs/report.md lists each chart, its source and what it leaves out).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "io/atomic_output.h"

namespace sdc::engine {

/// The run report in `path`. Throws IoError when it cannot be read, and InvalidInput naming the file
/// when it is not JSON, not a run report, or a run report of another schema version.
nlohmann::json read_run_report(const std::filesystem::path& path);

/// The page. `min_count` is the small-count minimum (--report-min-count); a report that hides counts
/// below a larger N ("< N") raises it to that N. Throws InvalidInput naming `source_name` when a
/// field the page reads has the wrong type.
std::string render_html_report(const nlohmann::json& report, std::string_view source_name, std::int64_t min_count);

/// Reads `run_report`, renders it and writes the page to `output` atomically: a failed run leaves no page.
void write_html_report(const std::filesystem::path& run_report, const std::filesystem::path& output,
                       std::int64_t min_count, io::FilePermissions permissions);

}  // namespace sdc::engine
