#pragma once
// Rank swapping over all ranks (kernels/swapping/rank_swap.h; docs/swapping.md). Native mode: each
// variable's sorted order is split into contiguous segments over the ranks by a sample sort; the coding
// sums and the scan are chained through the segments in rank order (the scan of a position depends on
// the positions before it), partners' values cross ranks in two all-to-alls, and every value returns
// to its record's rank — the bits of swapping::rank_swap on the whole variable, with no rank holding
// more than its segment and a window. Compat mode gathers every variable on the coordinator and swaps
// them in the given order, because the reference draws all of them from one taus88 stream.

#include <cstdint>
#include <vector>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/swapping/rank_swap.h"

namespace sdc::distributed {

struct RankSwappedPart {
  std::vector<std::vector<double>> masked;           ///< per variable, this rank's records in row order
  std::vector<swapping::RankSwapSummary> summaries;  ///< per variable, the same on every rank
};

/// Collective. `part` holds this rank's records (every variable of `options`' step, row ids of the
/// rank's `home` range). `seed` keys the native draws; `reference_seed` seeds compat's taus88.
RankSwappedPart rank_swap_variables(const Communicator& comm, const NumericColumns& part, const RowRange& home,
                                    const swapping::RankSwapOptions& options, std::uint64_t seed,
                                    std::uint32_t reference_seed);

}  // namespace sdc::distributed
