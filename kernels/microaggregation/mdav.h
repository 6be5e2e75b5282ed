#pragma once
// MDAV (maximum distance to average vector) microaggregation, docs/methods/microaggregation.md §2.
// Shape (b) block-local: the whole block is one problem (global MDAV across ranks is composed from
// the same per-round steps in distributed/compose/). On a large block a StepTeam splits every search
// of a round between threads by cells, and the parts' results are merged on total-order keys, so the
// grouping has the same bits for any number of threads.

#include <cstdint>

#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation {

enum class MdavMode {
  /// The reference exactly: weights 1/Var_j, single-precision distances, missing values allowed.
  kCompat,
  /// Double-precision distances on the z-scored data; missing values are rejected.
  kNative,
};

struct MdavResult {
  Grouping grouping;
  /// The group of the rows left after the main loop (§2.5), −1 if none; pass it to
  /// AggregateOptions::divide_by_rows_group to reproduce the reference's tail means.
  std::int32_t tail_group = -1;
};

/// Groups of k rows (the tail k … 2k − 1 rows, or all rows when there are fewer than 2k). Groups are
/// numbered in the order they are formed. Native mode standardises with `standardisation` when given
/// (a block of a larger file measured on the file's scale), else with the rows' own population
/// moments; compat mode ignores it (the reference weighs what it sees). Throws ParameterError when
/// k < 1 and, in native mode, InvalidInput naming the variable and row id of a missing value.
MdavResult mdav(const NumericColumns& x, int k, MdavMode mode, const Moments* standardisation = nullptr);

}  // namespace sdc::microaggregation
