#pragma once
// Reordering a table's rows: `sdc import` sorts records by household id, because partitions keep
// households whole only when each household's records are contiguous (docs/distributed.md).

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/core/table.h"

namespace sdc {

/// The stable ascending order of `keys` (row i of the sorted table is row order[i]); none when the
/// keys are already non-decreasing.
std::optional<std::vector<std::uint64_t>> stable_sort_order(std::span<const std::int64_t> keys);

/// Reorders every column of `table`: row i becomes the old row order[i].
void reorder_rows(Table& table, std::span<const std::uint64_t> order);

}  // namespace sdc
