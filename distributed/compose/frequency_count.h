#pragma once
// fk and Fk across ranks: local step on every rank, a hash shuffle of the local classes to their
// owner rank (MPI_Alltoallv), the merge on the owner, and the totals sent back to every rank that
// holds records of the class. No rank holds more than its share of classes; the coordinator holds
// only the summary.

#include <cstdint>
#include <span>

#include "distributed/comm.h"
#include "distributed/compose/class_exchange.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {

struct DistributedFrequencies {
  RecordFrequencies records;  ///< for this rank's records
  FrequencySummary summary;   ///< of all ranks, on every rank
};

DistributedFrequencies distributed_frequency_count(const Communicator& comm, const KeyColumns& keys,
                                                   std::span<const double> weights, std::int64_t k);
/// The same from this rank's records grouped already (group_by_keys of the keys).
DistributedFrequencies distributed_frequency_count(const Communicator& comm, const KeyGrouping& grouping,
                                                   std::span<const double> weights, std::int64_t k);

}  // namespace sdc::distributed
