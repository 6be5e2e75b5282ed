#pragma once
// Two-swap local search (docs/methods/microaggregation.md §6): from a feasible partition, each pass
// applies the best-first improving exchange of two records between groups found in lexicographic
// pair order. A pass is O(n²·p): meant for blocks. Threads scan fixed chunks of the pair order; the
// chunks are resolved in order, so the swaps do not depend on the number of threads.

#include <cstdint>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

struct TwoSwapResult {
  Grouping grouping;  ///< group sizes are those of the start
  std::int64_t swaps = 0;
  double sse = 0.0;  ///< within-group SSE of the result
};

/// At most `max_passes` passes (one swap each); stops at the first pass without an improvement of
/// more than 1e−12. Throws InvalidInput naming the variable and row id of a missing value.
TwoSwapResult two_swap(const NumericColumns& standardised, Grouping start, std::int64_t max_passes);

}  // namespace sdc::microaggregation
