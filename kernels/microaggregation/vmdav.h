#pragma once
// V-MDAV, variable-size groups (docs/methods/microaggregation.md §3). O(n²·p/k): meant for blocks.
// Block-local and serial; deterministic (ties go to the earlier record).

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

/// Groups of at least k rows on z-scored data (Euclidean distances). A group grows beyond k while
/// the nearest outside row is closer to the group than γ times its distance to its own nearest
/// outside neighbour, up to 2k − 1 rows; γ = 0 never extends. Rows left when fewer than k remain
/// join the group with the nearest centroid. Throws ParameterError for k < 1 or γ < 0,
/// InvalidInput naming the variable and row id of a missing value.
Grouping vmdav(const NumericColumns& standardised, int k, double gamma);

}  // namespace sdc::microaggregation
