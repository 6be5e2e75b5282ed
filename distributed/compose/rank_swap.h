#pragma once
// Rank swapping over all ranks (kernels/swapping/rank_swap.h; docs/swapping.md). A variable's scan runs
// along its whole sorted order, so each variable is gathered whole on one rank (value and row id, 16
// bytes a record), swapped there, and its masked values return to the records' home ranks: the
// gathering alternative of docs/methods swapping.md §1 "Parallel composition". Native mode spreads the
// variables over the ranks (variable v on rank v mod P) and runs a rank's variables on threads, each
// with its own Philox draws; compat mode swaps every variable on the coordinator in the given order,
// because the reference draws all of them from one taus88 stream. Either way a variable's result is a
// function of its values, row ids and the seed alone: the same bits for any number of ranks and threads.

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
