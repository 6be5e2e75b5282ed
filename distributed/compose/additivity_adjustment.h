#pragma once
// Restoring a table's additivity across ranks (kernels/tables/additivity_adjustment.h; docs/tables.md
// "sdc perturb-table adjust"). Every rank holds the constraint matrix, the perturbed values and the
// block-angular ordering; the blocks are dealt round-robin (block b to rank b mod ranks), each rank
// factors its own, and every per-block segment (Schur products, linking residuals, the adjusted values
// of a block's columns) is shared by one all-gather. The kernel sums the segments in block order, so
// every rank returns the same bits, and the same as one process with every block.
//
// Memory per rank: the matrix and its transpose, the factors of its own blocks, and per share the
// segments of every block (k × l doubles for the Schur products, n for the adjusted values).

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/csr_matrix.h"
#include "kernels/tables/additivity_adjustment.h"
#include "kernels/tables/block_angular.h"

namespace sdc::distributed {

/// The blocks rank `rank` of `ranks` factors: b with b mod ranks = rank, increasing.
std::vector<std::int32_t> blocks_of_rank(std::int32_t blocks, int rank, int ranks);

/// Collective: the block-angular solve with the blocks spread over the ranks. Same arguments and
/// result as tables::adjust_additivity_block_angular, on every rank.
tables::AdjustmentResult adjust_additivity_block_angular(const Communicator& comm, const CsrView& matrix,
                                                         std::span<const double> perturbed,
                                                         std::span<const double> weights,
                                                         const tables::BlockAngularOrdering& ordering,
                                                         const tables::AdjustmentOptions& options);

/// Collective: the coordinator's `ordering` on every rank (the others' argument is replaced).
void broadcast_ordering(const Communicator& comm, tables::BlockAngularOrdering& ordering);

}  // namespace sdc::distributed
