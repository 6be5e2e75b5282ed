#pragma once
// PRAM across ranks (kernels/perturbation/pram.h, docs/pram.md). Pass 1: records per (stratum,
// category), counted locally and summed over ranks (integer all-reduce: the totals do not depend on the
// rank count). The matrices are pure functions of those totals, the parameters and the seed, so every
// rank builds the same ones itself and nothing is broadcast. Pass 2: each rank draws its own records,
// keyed by global row id, in parallel blocks on its threads.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "distributed/compose/strata.h"
#include "kernels/core/key_grouping.h"
#include "kernels/perturbation/pram.h"

namespace sdc::distributed {

/// Collective. counts[s · K + k] = the records of stratum strata.ids[s] whose code is k, over all ranks;
/// missing codes are not counted.
std::vector<std::int64_t> distributed_pram_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  const Strata& strata, std::int32_t categories);

/// Collective. Per stratum, the records (over all ranks) whose code differs between `original` and
/// `released`.
std::vector<std::int64_t> distributed_pram_changes(const Communicator& comm, std::span<const std::int32_t> original,
                                                   std::span<const std::int32_t> released, const Strata& strata);

}  // namespace sdc::distributed
