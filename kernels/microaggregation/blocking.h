#pragma once
// Blocking for large n (docs/methods/microaggregation.md §7): partition the records first, then
// microaggregate each block on its own. Blocks are numbered deterministically; every block that can
// have 2k rows has (a smaller one is merged with its neighbour).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

struct Blocks {
  std::vector<std::int32_t> block_of_record;
  std::int32_t block_count = 0;
};

/// Recursive split (ties by row id) along the coordinate with the largest spread (max − min; ties:
/// the first variable) until blocks hold at most `block_max` rows. A node that will end as
/// m = ⌈size / block_max⌉ blocks is cut after ⌈m/2⌉·size/m of its records (the median when m is
/// even), so that blocks come out as large as the limit allows. Blocks numbered depth first, lower
/// part first. Throws ParameterError when block_max < 1 or k < 1, InvalidInput naming the variable
/// and row id of a missing value.
Blocks kdtree_blocks(const NumericColumns& standardised, std::int64_t block_max, int k);

/// The same recursion, cutting each node along its own first principal axis (the leading eigenvector
/// of the node's covariance matrix, its sign fixed so that the loading of largest magnitude is
/// positive) instead of a coordinate: on correlated variables the cuts run across the records'
/// spread rather than along it, and a block border cuts fewer groups apart.
Blocks principal_axis_blocks(const NumericColumns& standardised, std::int64_t block_max, int k);

/// Records sorted by (score, row id) and cut into consecutive chunks of `block_max`.
Blocks ordering_blocks(std::span<const double> score, std::span<const std::int64_t> row_ids, std::int64_t block_max,
                       int k);

/// One block per stratum code present, in code order; a stratum with fewer than 2k rows is merged
/// with the following one (the last with the preceding one).
Blocks strata_blocks(std::span<const std::int32_t> stratum_of_record, int k);

/// Runs `method` on every block (in parallel; `method` must be safe to call concurrently) and
/// numbers the groups by block, then by the group order within the block.
Grouping microaggregate_blocks(const NumericColumns& x, const Blocks& blocks, int k,
                               const std::function<Grouping(const NumericColumns& block)>& method);

}  // namespace sdc::microaggregation
