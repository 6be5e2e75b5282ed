#pragma once
// Bootstrap replicates of class-based risk across ranks (kernels/bootstrap/replicate_risk.h,
// docs/methods/bootstrap.md §1-4).
//
//   1. Every rank groups its records by key tuple and sends each record — class key, resampling unit,
//      weight — to the owner rank of its class (owner_of, the hash of the frequency counts), so the
//      owner holds whole classes.
//   2. The owner groups what it received by key tuple (sorted, never hash order), builds the kernel's
//      plan and computes its integer partials for the replicates, in the kernel's batches.
//   3. The partials (integers and 128-bit fixed-point sums) are gathered on every rank and merged; the
//      merge is integer addition, so the order and the split of the classes do not matter.
// Multiplicities depend only on (seed, replicate, unit id): the statistics have the same bits for any
// number of ranks and threads.
//
// Memory: each record travels once (key codes, 8-byte unit, 8-byte weight); the owner holds its classes'
// records in the plan (about 28 bytes each, more while it is built); the gathered partials are
// ranks x replicates x 48 bytes.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/bootstrap/replicate_risk.h"
#include "kernels/core/key_grouping.h"

namespace sdc::distributed {

struct DistributedReplicateRisk {
  ReplicateRiskSeries full_sample;  ///< one "replicate": every multiplicity 1 (the estimates θ̂)
  ReplicateRiskSeries replicates;   ///< replicates [first_replicate, end_replicate)
};

/// Collective. `units` (one per record: record number, household id, or a unit number within strata)
/// and `weights` (empty when options.risk.weighted is false) are this rank's records in `keys` order.
/// The caller validates the weights collectively first (make_replicate_risk_plan throws on a bad one on
/// the rank that holds it). Every rank returns the same result.
DistributedReplicateRisk distributed_replicate_risk(const Communicator& comm, const KeyColumns& keys,
                                                    std::span<const std::uint64_t> units,
                                                    std::span<const double> weights,
                                                    const ReplicateRiskOptions& options, const ReplicateDesign& design,
                                                    std::uint64_t first_replicate, std::uint64_t end_replicate);

/// Global numbering of resampling units within strata, for the stratified (multinomial) design. The
/// units are taken in global file order: ranks hold consecutive rows in rank order, and a rank lists
/// its units in row order. Stratum h gets the unit numbers [offsets[h], offsets[h + 1]), in file order,
/// so the numbering does not depend on the partition.
struct StratifiedUnits {
  std::vector<std::uint64_t> numbers;  ///< per local unit, in the order given
  std::vector<std::uint64_t> offsets;  ///< strata + 1 entries, the same on every rank
};

/// Collective. unit_stratum[u] in [0, strata) is the stratum of local unit u.
StratifiedUnits number_units_within_strata(const Communicator& comm, std::span<const std::int32_t> unit_stratum,
                                           std::size_t strata);

}  // namespace sdc::distributed
