#pragma once
// Interval disclosure of masked continuous variables (docs/methods/linkage.md §4).
//
// sd-based (the reference's dRisk, k = 0.05 by default): the interval of masked value x'_ij is
// [x'_ij − k s'_j, x'_ij + k s'_j], bounds included, with s'_j the sd (divisor n − 1) of masked
// variable j over its non-missing values. A record is disclosed when every original value that can be
// compared (both values present) lies inside its interval; a record with no comparison at all counts
// as disclosed, as nothing protects it. Shape (a) for s'_j (`interval_sd_local / _merge / _finalize`,
// exact sums), then element-wise (`interval_disclosure_check`) with additive counts
// (`interval_disclosure_merge`).
//
// rank-based (parameter p %): masked variable j is sorted by (value, row id); the value at rank r is
// given the interval between the masked values at ranks r − h and r + h (clipped to the ranks that
// exist), h = ⌈p·n_j/200⌉ clipped to 1 … n_j, n_j the non-missing masked values of j. Value-level rate:
// share of compared (i, j) inside; record-level: share of records with every comparison inside.
// One process only: distributed, it needs a sort of each variable across ranks, which the
// composition provides and this kernel does not.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/numeric_columns.h"

namespace sdc::linkage {

inline constexpr double kDefaultIntervalK = 0.05;

struct IntervalSdPartial {
  std::vector<std::int64_t> counts;  ///< non-missing masked values per variable
  std::vector<ExactSum> sums;
  std::vector<ExactSum> squares;
};

IntervalSdPartial interval_sd_local(const NumericColumns& masked);
void interval_sd_merge(IntervalSdPartial& into, const IntervalSdPartial& from);
/// s'_j per variable; NaN for a variable with fewer than two values (its comparisons then fail
/// unless the values are equal, and the caller may prefer to report it).
std::vector<double> interval_sd_finalize(const IntervalSdPartial& total);

struct IntervalDisclosure {
  std::int64_t records = 0;
  std::int64_t disclosed = 0;
  std::vector<std::uint8_t> record_disclosed;  ///< per record of the block checked (not merged)

  double risk() const { return records == 0 ? 0.0 : static_cast<double>(disclosed) / static_cast<double>(records); }
};

/// Element-wise check of aligned files (same length and row ids: InvalidInput naming the first row
/// where they part; ParameterError for a negative k or different numbers of variables).
IntervalDisclosure interval_disclosure_check(const NumericColumns& original, const NumericColumns& masked,
                                             std::span<const double> masked_sd, double k = kDefaultIntervalK);
/// Adds the counts; per-record flags stay with the block that produced them.
void interval_disclosure_merge(IntervalDisclosure& into, const IntervalDisclosure& from);
/// One process: local sd, finalize, check.
IntervalDisclosure interval_disclosure_sd(const NumericColumns& original, const NumericColumns& masked,
                                          double k = kDefaultIntervalK);

struct RankIntervalDisclosure {
  std::int64_t values_compared = 0;
  std::int64_t values_inside = 0;
  std::int64_t records = 0;
  std::int64_t records_disclosed = 0;

  double value_rate() const {
    return values_compared == 0 ? 0.0 : static_cast<double>(values_inside) / static_cast<double>(values_compared);
  }
  double record_rate() const {
    return records == 0 ? 0.0 : static_cast<double>(records_disclosed) / static_cast<double>(records);
  }
};

/// ParameterError for p outside (0, 100].
RankIntervalDisclosure interval_disclosure_rank(const NumericColumns& original, const NumericColumns& masked,
                                                double percent);

}  // namespace sdc::linkage
