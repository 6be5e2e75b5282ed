#pragma once
// Partitions of records into microaggregation groups, and what every microaggregation method does
// with one: group statistics in original units, the group-size histogram, the within-group sum of
// squares, and the population standardisation that information loss is measured on
// (docs/methods/microaggregation.md §1). Element-wise on a block of records; sums are exact, so no
// result depends on the number of threads.

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/core/numeric_columns.h"

namespace sdc::microaggregation {

/// Group ids run 0 … group_count − 1 in the order the method formed the groups.
struct Grouping {
  std::vector<std::int32_t> group_of_record;
  std::int32_t group_count = 0;
};

enum class Aggregation { kMean, kMedian };

struct AggregateOptions {
  /// The MDAV tail (§2.5) divides each variable's sum of non-missing values by the number of rows of
  /// the group instead of the number of non-missing values; −1 when no group does.
  std::int32_t divide_by_rows_group = -1;
};

/// The masked columns: every record's value replaced by its group's statistic over the non-missing
/// values of that variable; a missing input value stays missing.
std::vector<std::vector<double>> aggregate(const NumericColumns& x, const Grouping& grouping, Aggregation aggregation,
                                           const AggregateOptions& options = {});

/// histogram[s] = number of groups of size s (index 0 … largest size).
std::vector<std::int64_t> group_size_histogram(const Grouping& grouping);

/// Σ over groups and variables of the squared deviations from the group centroid (non-missing values
/// around the mean of the group's non-missing values).
double within_group_sse(const NumericColumns& standardised, const Grouping& grouping);

/// Σ over variables of the squared deviations from the variable's mean (non-missing values): SST.
double total_sum_of_squares(const NumericColumns& standardised);

/// Per variable: mean and population standard deviation (divisor = number of non-missing values).
/// A column whose variance is at most 1e−12 of its mean square counts as constant (sd 0).
struct Moments {
  std::vector<double> mean;
  std::vector<double> sd;
};

Moments population_moments(const NumericColumns& x);

/// z = (x − mean) / sd per variable; a constant column becomes 0 (it contributes nothing), missing
/// stays missing. Row ids and names are kept.
NumericData standardise(const NumericColumns& x, const Moments& moments);

/// Throws ParameterError when k < 1.
void require_group_size(int k, std::string_view method);

}  // namespace sdc::microaggregation
