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
#include "kernels/core/key_grouping.h"
#include "kernels/perturbation/pram.h"

namespace sdc::distributed {

/// The strata of a step: the combinations of the stratum variables' codes present on any rank.
struct PramStrata {
  /// Stratum ids, ascending and equal on every rank. A record's id is the mixed-radix number of its
  /// codes, Σ_j c_j Π_{i<j} (L_i + 1), where a missing code counts as L_j: a record with a missing
  /// stratum value belongs to a stratum of its own for that variable. Without stratum variables, one
  /// stratum, id 0.
  std::vector<std::uint64_t> ids;
  std::vector<std::int32_t> record_stratum;  ///< this rank's records: the index of their id in `ids`
};

/// The codes of stratum id `id` (kMissingCode for a missing value), inverse of the mixed radix.
std::vector<std::int32_t> pram_stratum_codes(std::uint64_t id, std::span<const std::int32_t> level_counts);

/// Collective. `records`: this rank's record count (the stratum columns, when any, have that length).
/// Throws UsageError when Π (L_j + 1) exceeds 2^62 (the ids would not fit).
PramStrata distributed_pram_strata(const Communicator& comm, const KeyColumns& strata, std::size_t records);

/// Collective. counts[s · K + k] = the records of stratum strata.ids[s] whose code is k, over all ranks;
/// missing codes are not counted.
std::vector<std::int64_t> distributed_pram_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  const PramStrata& strata, std::int32_t categories);

/// Collective. Per stratum, the records (over all ranks) whose code differs between `original` and
/// `released`.
std::vector<std::int64_t> distributed_pram_changes(const Communicator& comm, std::span<const std::int32_t> original,
                                                   std::span<const std::int32_t> released, const PramStrata& strata);

}  // namespace sdc::distributed
