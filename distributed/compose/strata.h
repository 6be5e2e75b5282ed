#pragma once
// Strata across ranks: the combinations of the values of categorical stratum variables, numbered the
// same on every rank. PRAM draws within strata; microaggregation blocks by them.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"

namespace sdc::distributed {

/// The strata of a step: the combinations of the stratum variables' codes present on any rank.
struct Strata {
  /// Stratum ids, ascending and equal on every rank. A record's id is the mixed-radix number of its
  /// codes, Σ_j c_j Π_{i<j} (L_i + 1), where a missing code counts as L_j: a record with a missing
  /// stratum value belongs to a stratum of its own for that variable. Without stratum variables, one
  /// stratum, id 0.
  std::vector<std::uint64_t> ids;
  std::vector<std::int32_t> record_stratum;  ///< this rank's records: the index of their id in `ids`
};

/// The codes of stratum id `id` (kMissingCode for a missing value), inverse of the mixed radix.
std::vector<std::int32_t> stratum_codes(std::uint64_t id, std::span<const std::int32_t> level_counts);

/// Collective. `records`: this rank's record count (the stratum columns, when any, have that length).
/// Throws UsageError naming `flag` when Π (L_j + 1) exceeds 2^62 (the ids would not fit).
Strata distributed_strata(const Communicator& comm, const KeyColumns& strata, std::size_t records,
                          const std::string& flag = "--strata");

}  // namespace sdc::distributed
