#pragma once
// Test data of the distributed tests: every rank generates the whole file from global row ids and
// takes an uneven share of its rows.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"

namespace sdc::distributed {

/// Uneven shares of `rows` rows: rank r holds rows [rows r^2 / R^2, rows (r+1)^2 / R^2), so rank 0
/// holds fewest. Returns (first row, row count) as `Index`.
template <typename Index = std::int64_t>
std::pair<Index, Index> uneven_share(const Communicator& comm, std::int64_t rows) {
  const std::int64_t ranks = comm.size(), r = comm.rank();
  const std::int64_t first = rows * r * r / (ranks * ranks);
  const std::int64_t end = rows * (r + 1) * (r + 1) / (ranks * ranks);
  return {static_cast<Index>(first), static_cast<Index>(end - first)};
}

/// Rows [first, first + count) of key columns `codes` (codes[j][i]: key j of row i) with `levels`.
inline KeyColumns key_columns_of(const std::vector<std::vector<std::int32_t>>& codes,
                                 const std::vector<std::int32_t>& levels, std::int64_t first, std::int64_t count) {
  KeyColumns keys;
  keys.level_counts = levels;
  for (const auto& c : codes) keys.codes.emplace_back(c.data() + first, static_cast<std::size_t>(count));
  return keys;
}

}  // namespace sdc::distributed
