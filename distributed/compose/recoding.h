#pragma once
// Recoding, local suppression and the lattice search across ranks (docs/methods recoding.md §6).
// Recodings are record-local; what they need from all the records is one reduction: the codes in use
// (to check a hierarchy against the data), the range of a variable (equidistant breaks). The lattice
// search works on the records' key patterns, grouped on every rank and merged in rank order, so every
// rank holds the same patterns (in global first-seen order) and finds the same node. The reference's
// local suppression compares each record below k with all the others: the key columns are gathered on
// the coordinator, suppressed there, and each rank gets its own records back.

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "distributed/comm.h"
#include "kernels/recoding/lattice.h"
#include "kernels/recoding/local_suppression.h"

namespace sdc::distributed {

/// Collective. Per code 0 .. categories − 1, the records of all ranks that carry it (missing codes not
/// counted).
std::vector<std::int64_t> distributed_code_counts(const Communicator& comm, std::span<const std::int32_t> codes,
                                                  std::int32_t categories);

/// Collective. The smallest and largest non-missing value over all ranks; nullopt when every value is
/// missing.
std::optional<std::pair<double, double>> distributed_value_range(const Communicator& comm,
                                                                 std::span<const double> values);

/// Collective. The key patterns of all ranks' records (rank order is record order), the same on every
/// rank: leaf_patterns of the whole data.
recoding::LeafPatterns distributed_leaf_patterns(const Communicator& comm,
                                                 std::span<const std::span<const std::int32_t>> leaves);

/// Collective. recoding::suppress_to_k_anonymity over the records of all ranks (this rank's `keys` are
/// changed in place); the same result on every rank. Memory on the coordinator: the key columns of all
/// records (4 bytes per key and record) and the kernel's own.
recoding::LocalSuppressionResult distributed_local_suppression(const Communicator& comm,
                                                               std::span<const std::span<std::int32_t>> keys,
                                                               std::span<const std::int32_t> level_counts,
                                                               const recoding::LocalSuppressionOptions& options);

}  // namespace sdc::distributed
