#include "kernels/core/row_order.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "kernels/core/error.h"

namespace sdc {

std::optional<std::vector<std::uint64_t>> stable_sort_order(std::span<const std::int64_t> keys) {
  if (std::is_sorted(keys.begin(), keys.end())) return std::nullopt;
  // Sorting (key, row) pairs is stable by construction and parallel.
  std::vector<std::pair<std::int64_t, std::uint64_t>> pairs(keys.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, keys.size(), 1 << 16), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) pairs[i] = {keys[i], i};
  });
  tbb::parallel_sort(pairs.begin(), pairs.end());
  std::vector<std::uint64_t> order(keys.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, keys.size(), 1 << 16), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) order[i] = pairs[i].second;
  });
  return order;
}

void reorder_rows(Table& table, std::span<const std::uint64_t> order) {
  SDC_CHECK(static_cast<std::int64_t>(order.size()) == table.row_count(), "one position per row");
  for (Column& column : table.mutable_columns()) {
    const auto gather = [&](auto values) {
      std::vector<typename decltype(values)::value_type> sorted(values.size());
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, values.size(), 1 << 16), [&](const auto& range) {
        for (std::size_t i = range.begin(); i != range.end(); ++i) sorted[i] = values[order[i]];
      });
      std::copy(sorted.begin(), sorted.end(), values.begin());
    };
    switch (column.type()) {
      case VariableType::kCategorical:
        gather(column.mutable_codes());
        break;
      case VariableType::kContinuous:
        gather(column.mutable_values());
        break;
      case VariableType::kId:
        gather(column.mutable_ids());
        break;
    }
  }
}

}  // namespace sdc
