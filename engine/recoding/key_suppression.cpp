#include "engine/recoding/key_suppression.h"

#include "distributed/compose/recoding.h"
#include "distributed/compose/wildcard_frequency.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"

namespace sdc::engine {

KeySuppression suppress_keys(const distributed::Communicator& comm, Table& table, const std::vector<std::string>& keys,
                             const recoding::LocalSuppressionOptions& options) {
  KeySuppression out;
  std::vector<std::span<std::int32_t>> columns;
  std::vector<std::int32_t> level_counts;
  {
    const KeyColumns view = key_columns(table, keys);  // checks that every key is categorical
    level_counts = view.level_counts;
  }
  for (const auto& name : keys) {
    Column& column = mutable_column(table, name);
    out.missing_before.push_back(comm.all_reduce_sum(column.missing_count()));
    columns.push_back(column.mutable_codes());
  }
  out.result = distributed::distributed_local_suppression(comm, columns, level_counts, options);
  for (const auto& name : keys) out.missing_after.push_back(comm.all_reduce_sum(table.require(name).missing_count()));
  const KeyColumns suppressed = key_columns(table, keys);
  out.violations_left =
      distributed::distributed_wildcard_frequency_count(comm, suppressed, {}, options.alpha, options.k)
          .summary.records_below_k;
  return out;
}

nlohmann::json suppression_results(const KeySuppression& suppression, const std::vector<std::string>& keys,
                                   std::int64_t min_count) {
  const recoding::LocalSuppressionResult& result = suppression.result;
  nlohmann::json per_key = nlohmann::json::array();
  std::int64_t total = 0;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    total += result.suppressed[j];
    per_key.push_back({{"name", keys[j]},
                       {"suppressed", reported_count(result.suppressed[j], min_count)},
                       {"missing_before", reported_count(suppression.missing_before[j], min_count)},
                       {"missing_after", reported_count(suppression.missing_after[j], min_count)}});
  }
  return {{"suppressed", reported_count(total, min_count)},
          {"keys", std::move(per_key)},
          {"passes", result.passes},
          {"records_touched", reported_count(result.records_touched, min_count)},
          {"violations_before", reported_count(result.violators_before, min_count)},
          {"violations_left", reported_count(suppression.violations_left, min_count)},
          {"impossible", result.impossible.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.impossible)}};
}

}  // namespace sdc::engine
