#pragma once
// The small-count rule of reports. A report is not for release, but it is handed to review boards
// and kept with the job: a count of 1 or 2 of the original data, or a category label that only one
// or two records carry, would tell of those records. Counts of the original data that are positive
// and below the run's --report-min-count are shown as the text "< N" (docs/report-schema.json
// `$defs/count`), and labels carried by fewer records are not printed. Zero stays 0: it says no
// record has the value.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>

namespace sdc::engine {

/// `count`, or "< min_count" when it is positive and below `min_count`.
inline nlohmann::json reported_count(std::int64_t count, std::int64_t min_count) {
  if (count > 0 && count < min_count) return "< " + std::to_string(min_count);
  return count;
}

inline nlohmann::json reported_counts(std::span<const std::int64_t> counts, std::int64_t min_count) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::int64_t count : counts) out.push_back(reported_count(count, min_count));
  return out;
}

/// Whether a label carried by `count` records may be printed.
inline bool label_may_be_printed(std::int64_t count, std::int64_t min_count) { return count >= min_count; }

}  // namespace sdc::engine
