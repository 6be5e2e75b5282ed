#pragma once
// Projection microaggregation as sdcMicro defines it (docs/methods/microaggregation.md §5): score the
// records, sort stably, cut consecutive groups of k with the remainder in the last group; and
// individual ranking (`onedims`). Block-local and serial.

#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

enum class Projection {
  kZScoreSum,                ///< Σ_j z_ij with population moments
  kFirstPrincipalComponent,  ///< PC1 of the correlation matrix, largest |loading| positive
  kSingleVariable,           ///< one variable (`varsort`); missing values sort last
};

/// Groups numbered along the ascending score. Throws ParameterError when k < 1 or there are fewer
/// than 2k records or `single_variable_index` names no variable; InvalidInput naming the variable
/// and row id of a missing value for the z-score and PC1 scores.
Grouping projection(const NumericColumns& x, int k, Projection method, int single_variable_index = 0);

/// Each variable ranked and grouped on its own (non-missing values, ties in record order), every
/// value replaced by its group mean; missing stays missing. A variable with fewer than 2k values
/// forms one group.
std::vector<std::vector<double>> individual_ranking(const NumericColumns& x, int k);

}  // namespace sdc::microaggregation
