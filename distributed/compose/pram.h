#pragma once
// PRAM across ranks (kernels/perturbation/pram.h, docs/pram.md). Pass 1: records per (stratum,
// category), counted locally and summed over ranks (integer all-reduce: the totals do not depend on the
// rank count). The matrices are pure functions of those totals, the parameters and the seed, so every
// rank builds the same ones itself and nothing is broadcast. Pass 2: each rank draws its own records,
// keyed by global row id, in parallel blocks on its threads. The two-way tables and the sums of a
// continuous variable per category (for the estimates of the report) are merged the same way: integer
// counts by an all-reduce, exact sums gathered and added in rank order.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "distributed/compose/strata.h"
#include "kernels/core/exact_sum.h"
#include "kernels/core/key_grouping.h"
#include "kernels/perturbation/pram.h"

namespace sdc::distributed {

/// Collective. counts[s · K + k] = the records of stratum strata.ids[s] whose code is k, over all ranks;
/// missing codes are not counted.
std::vector<std::int64_t> distributed_pram_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  const Strata& strata, std::int32_t categories);

/// Collective. counts[(s · K_row + j) · K_column + l] = the records of stratum strata.ids[s] whose codes
/// are j in `rows` and l in `columns`, over all ranks: one K_row×K_column table (row-major) per stratum.
/// Records with either code missing are not counted.
std::vector<std::int64_t> distributed_pram_pair_counts(const Communicator& comm, std::span<const std::int32_t> rows,
                                                       std::span<const std::int32_t> columns, const Strata& strata,
                                                       std::int32_t row_categories, std::int32_t column_categories);

/// Per (stratum, category) s · K + k, over the records that have both a code and a value of y: their
/// number and the exact sum of y.
struct PramTargetSums {
  std::vector<std::int64_t> counts;
  std::vector<ExactSum> sums;
};

/// Collective. The counts and sums of `values` (NaN = missing) per (stratum, code), over all ranks;
/// the sums are exact, so neither the rank count nor the order matters (they are added in rank order).
PramTargetSums distributed_pram_target_sums(const Communicator& comm, std::span<const std::int32_t> codes,
                                            std::span<const double> values, const Strata& strata,
                                            std::int32_t categories);

/// Collective. Per stratum, the records (over all ranks) whose code differs between `original` and
/// `released`.
std::vector<std::int64_t> distributed_pram_changes(const Communicator& comm, std::span<const std::int32_t> original,
                                                   std::span<const std::int32_t> released, const Strata& strata);

}  // namespace sdc::distributed
