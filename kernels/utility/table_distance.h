#pragma once
// Distances between two contingency tables over the same cells (docs/methods utility.md §4): the
// Hellinger distance, total variation, the entropy change and the Kullback–Leibler divergence of the
// cell proportions. Used by the categorical utility of `sdc utility` and by the Karr–Sanil frontier of
// `sdc swap frontier`, whose data utility is minus one of them.
//
// Shape: a sum over cells. Each block of cells (a rank's share of a distributed table, a thread's
// chunk) adds its terms to a partial with exact sums, so partials merge in any order to the same
// figures; the totals of both tables must be known first (one reduction of the counts).

#include <span>

#include "kernels/core/exact_sum.h"

namespace sdc::utility {

struct TableDistancePartial {
  ExactSum squared_root_gaps;        ///< Σ (√p − √q)²
  ExactSum absolute_gaps;            ///< Σ |p − q|
  ExactSum original_entropy;         ///< −Σ p ln p
  ExactSum masked_entropy;           ///< −Σ q ln q
  ExactSum divergence;               ///< Σ_{p > 0} p ln(p/q), over cells with q > 0
  bool divergence_infinite = false;  ///< a cell with p > 0 and q = 0

  void merge(const TableDistancePartial& other);
};

/// Adds the cells original_counts[c], masked_counts[c] (the same cell c in both tables; a cell absent
/// from one table has count 0 there) to `partial`. Totals are those of the whole tables, both > 0.
void add_table_cells(TableDistancePartial& partial, std::span<const double> original_counts,
                     std::span<const double> masked_counts, double original_total, double masked_total);

struct TableDistances {
  double hellinger = 0.0;        ///< sqrt(½ Σ (√p − √q)²), in [0, 1]
  double total_variation = 0.0;  ///< ½ Σ |p − q|
  double original_entropy = 0.0;
  double masked_entropy = 0.0;
  double entropy_change = 0.0;    ///< H(q) − H(p); its absolute value is the distortion
  double kullback_leibler = 0.0;  ///< KL(p‖q); +inf when a cell has p > 0 = q
};
TableDistances finish_table_distances(const TableDistancePartial& partial);

/// The whole computation on one block of cells (tests, single-table callers).
TableDistances table_distances(std::span<const double> original_counts, std::span<const double> masked_counts);

}  // namespace sdc::utility
