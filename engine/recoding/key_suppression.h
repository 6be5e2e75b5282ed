#pragma once
// What `suppress` and `anonymize` share (docs/recoding.md): local suppression of a table's key
// columns in place, re-checked by the risk kernel, and its part of the report.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/table.h"
#include "kernels/recoding/local_suppression.h"

namespace sdc::engine {

struct KeySuppression {
  recoding::LocalSuppressionResult result;
  std::vector<std::int64_t> missing_before;  ///< per key, over all ranks
  std::vector<std::int64_t> missing_after;
  /// Records with f < k after the suppression, counted again by the risk kernel (wildcards with the
  /// same alpha): equal to result.violators_after.
  std::int64_t violations_left = 0;
};

/// Collective. Suppresses the categorical `keys` of `table` in place (distributed_local_suppression),
/// then counts the records still below k with distributed_wildcard_frequency_count.
KeySuppression suppress_keys(const distributed::Communicator& comm, Table& table, const std::vector<std::string>& keys,
                             const recoding::LocalSuppressionOptions& options);

/// The report's part: per key its new suppressions and missing values, the passes, the records
/// touched, the violations before and left, and why any are left. Counts below `min_count` are
/// reported as such (engine/report/small_counts.h).
nlohmann::json suppression_results(const KeySuppression& suppression, const std::vector<std::string>& keys,
                                   std::int64_t min_count);

}  // namespace sdc::engine
