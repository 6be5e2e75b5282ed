#pragma once
// Optimal microaggregation of one variable (Hansen–Mukherjee) and the optimal segmentation of any
// one-dimensional ordering of multivariate records: docs/methods/microaggregation.md §4. A shortest
// path over prefix sums, O(n·k) (O(n·k·p) for a segmentation). Block-local and serial.

#include <cstdint>
#include <span>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

/// Groups of k … 2k − 1 consecutive values in ascending order (ties by row id) with the least SSE;
/// among equal costs the smaller last group wins. Fewer than k values form one group. Groups are
/// numbered from the smallest values up. Throws InvalidInput for a missing value, ParameterError
/// when k < 1.
Grouping univariate_optimal(std::span<const double> x, std::span<const std::int64_t> row_ids, int k);

/// The same shortest path over records taken in `order` (positions 0 … n − 1, a permutation): the
/// segmentation of that sequence into runs of k … 2k − 1 with the least within-group SSE. Groups are
/// numbered along the ordering.
Grouping optimal_segmentation(const NumericColumns& standardised, std::span<const std::int64_t> order, int k);

}  // namespace sdc::microaggregation
