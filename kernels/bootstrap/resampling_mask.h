#pragma once
// Resampling as a masking method for one continuous variable (docs/methods bootstrap.md §8): t
// bootstrap samples of the n values are drawn and sorted, the j-th masked value is the mean of their
// j-th order statistics, and the record holding the j-th smallest original value (ties by row id)
// receives it. The total is kept in expectation; extremes move towards the centre.
//
// Shape: global on one process (the distributed composition needs a distributed sample sort and
// comes with the masking methods). A sorted bootstrap sample is the sorted original with multinomial
// multiplicities c_i, so its j-th order statistic is x_(i) for the first i with c_1 + ... + c_i >= j:
// O(n) per sample, no sort. The multiplicities are the classical bootstrap of replicates.h over the
// sorted positions 0..n-1, keyed by StepId kResamplingMask with replicate = sample 1..t, so they do
// not depend on threads or on how the caller holds the records.

#include <cstdint>
#include <span>
#include <vector>

namespace sdc {

struct ResamplingMaskOptions {
  std::uint64_t samples = 10;  ///< t; the source leaves it open, the engine's default is 10
  std::uint64_t seed = 0;
};

/// Masked values, one per input value in input order. `row_ids` break ties between equal values (the
/// record with the smaller row id gets the smaller order statistic); NaN values are missing and stay
/// NaN, and the others are masked among themselves. Throws ParameterError when samples is 0.
std::vector<double> resampling_mask(std::span<const double> values, std::span<const std::int64_t> row_ids,
                                    const ResamplingMaskOptions& options);

}  // namespace sdc
