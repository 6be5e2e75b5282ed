#pragma once
// l-diversity across ranks (kernels/risk/l_diversity.h): the local classes with their sensitive
// category counts go to the owner of their key tuple (the same hash as the frequency counts), the
// owner merges and finalizes them, and each rank gets back the measures of the classes its records
// belong to. Counts are integers, so every rank count gives the same measures.

#include <span>

#include "distributed/comm.h"
#include "kernels/risk/l_diversity.h"

namespace sdc::distributed {

struct DistributedLDiversity {
  LDiversity records;  ///< the measures of each local record's class
  /// Over all classes, on every rank.
  std::int64_t classes = 0;
  std::int64_t min_distinct = 0;
  double min_entropy = 0.0;
  std::int64_t min_recursive = 0;
  std::int64_t classes_distinct_below = 0;  ///< classes whose distinct l is below `l`
  std::int64_t records_distinct_below = 0;  ///< records in those classes
};

/// `l` sets the threshold of the "below" counts.
DistributedLDiversity distributed_l_diversity(const Communicator& comm, const KeyColumns& keys,
                                              std::span<const std::int32_t> sensitive, const LDiversityOptions& options,
                                              std::int64_t l);
/// The same from this rank's records grouped already (group_by_keys of the keys).
DistributedLDiversity distributed_l_diversity(const Communicator& comm, const KeyGrouping& grouping,
                                              std::span<const std::int32_t> sensitive, const LDiversityOptions& options,
                                              std::int64_t l);

}  // namespace sdc::distributed
