#pragma once
// Information loss over all ranks (kernels/utility/information_loss.h): each rank's partial of its own
// records, original and masked aligned by row id on that rank, is merged in pairwise rounds on every
// rank, and every rank finalizes the same bits whatever the number of ranks.

#include "distributed/comm.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/utility/information_loss.h"

namespace sdc::distributed {

/// Collective. The information loss of the masked records against the original ones that the ranks
/// hold (each rank the same row ids in both).
utility::InformationLoss distributed_information_loss(const Communicator& comm, const NumericColumns& original,
                                                      const NumericColumns& masked,
                                                      const utility::InformationLossOptions& options = {});

/// Collective. SSE/SST alone, the same bits as distributed_information_loss gives for them.
utility::SumOfSquares distributed_sum_of_squares(const Communicator& comm, const NumericColumns& original,
                                                 const NumericColumns& masked);

}  // namespace sdc::distributed
