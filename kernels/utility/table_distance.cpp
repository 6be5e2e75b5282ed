#include "kernels/utility/table_distance.h"

#include <cmath>
#include <limits>

#include "kernels/core/error.h"

namespace sdc::utility {

void TableDistancePartial::merge(const TableDistancePartial& other) {
  squared_root_gaps.merge(other.squared_root_gaps);
  absolute_gaps.merge(other.absolute_gaps);
  original_entropy.merge(other.original_entropy);
  masked_entropy.merge(other.masked_entropy);
  divergence.merge(other.divergence);
  divergence_infinite = divergence_infinite || other.divergence_infinite;
}

void add_table_cells(TableDistancePartial& partial, std::span<const double> original_counts,
                     std::span<const double> masked_counts, double original_total, double masked_total) {
  if (original_counts.size() != masked_counts.size())
    throw ParameterError("table distances: the two tables have different numbers of cells");
  if (!(original_total > 0.0) || !(masked_total > 0.0)) throw ParameterError("table distances: a table is empty");
  for (std::size_t c = 0; c < original_counts.size(); ++c) {
    const double p = original_counts[c] / original_total;
    const double q = masked_counts[c] / masked_total;
    const double root_gap = std::sqrt(p) - std::sqrt(q);
    partial.squared_root_gaps.add(root_gap * root_gap);
    partial.absolute_gaps.add(std::fabs(p - q));
    // 0 · ln 0 = 0: empty cells add nothing to either entropy.
    if (p > 0.0) partial.original_entropy.add(-p * std::log(p));
    if (q > 0.0) partial.masked_entropy.add(-q * std::log(q));
    if (p > 0.0) {
      if (q > 0.0)
        partial.divergence.add(p * std::log(p / q));
      else
        partial.divergence_infinite = true;
    }
  }
}

TableDistances finish_table_distances(const TableDistancePartial& partial) {
  TableDistances out;
  out.hellinger = std::sqrt(0.5 * partial.squared_root_gaps.value());
  out.total_variation = 0.5 * partial.absolute_gaps.value();
  out.original_entropy = partial.original_entropy.value();
  out.masked_entropy = partial.masked_entropy.value();
  out.entropy_change = out.masked_entropy - out.original_entropy;
  out.kullback_leibler =
      partial.divergence_infinite ? std::numeric_limits<double>::infinity() : partial.divergence.value();
  return out;
}

TableDistances table_distances(std::span<const double> original_counts, std::span<const double> masked_counts) {
  ExactSum original_total;
  ExactSum masked_total;
  for (double count : original_counts) original_total.add(count);
  for (double count : masked_counts) masked_total.add(count);
  TableDistancePartial partial;
  add_table_cells(partial, original_counts, masked_counts, original_total.value(), masked_total.value());
  return finish_table_distances(partial);
}

}  // namespace sdc::utility
