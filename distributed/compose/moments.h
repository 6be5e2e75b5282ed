#pragma once
// Means and covariances of continuous variables over all ranks (kernels/distance/whitening.h): each
// rank's exact sums travel to every rank and are merged in pairwise rounds, so every rank finalizes
// the same bits whatever the number of ranks. Microaggregation standardises and blocks with them;
// record linkage standardises and whitens.

#include "distributed/comm.h"
#include "kernels/distance/whitening.h"

namespace sdc::distributed {

/// Collective. The merge of every rank's `local` partial (the same bits on every rank).
distance::MomentsPartial merged_moments(const Communicator& comm, const distance::MomentsPartial& local);

/// Collective. The merge of every rank's `local` partial, finalized (ParameterError with fewer than
/// two records over all ranks).
distance::Moments distributed_moments(const Communicator& comm, const distance::MomentsPartial& local);

}  // namespace sdc::distributed
