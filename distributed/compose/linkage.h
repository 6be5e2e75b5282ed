#pragma once
// Record linkage across ranks (kernels/linkage/record_linkage.h, docs/linkage.md; docs/methods
// linkage.md §3). Each rank holds a slice of the original records and the masked versions of the same
// records. The moments of the chosen distance are merged over the ranks, so every rank transforms
// its records alike; then the reference slices travel round the ranks in P rounds (round t: rank r
// sends its slice to rank r + t and receives that of rank r − t), each rank searches its queries'
// nearest neighbours in every slice, and the partial answers merge into the exact tie sets
// (distance::nearest_merge: minimum and union, independent of the order of the slices). Memory per
// rank: its own records, one received slice and one tile per thread.

#include <cstdint>
#include <span>

#include "distributed/comm.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/linkage/interval_disclosure.h"
#include "kernels/linkage/record_linkage.h"

namespace sdc::distributed {

/// Collective. The linkage of the records the ranks hold: per-record results for this rank's queries
/// (in its record order), and the counts over all ranks (equal on every rank). With `block_of_record`
/// (one block id per record, e.g. a stratum of variables released unperturbed), records link only
/// within their block (docs/methods linkage.md §3): the prepared coordinates travel to the rank of
/// their block, each block is searched there, and the answers return home.
linkage::LinkageResult distributed_record_linkage(const Communicator& comm, const NumericColumns& original,
                                                  const NumericColumns& masked, const linkage::LinkageOptions& options,
                                                  std::span<const std::int64_t> block_of_record = {});

/// Collective. sd-based interval disclosure: the masked sds merged over the ranks, each rank checks
/// its records; per-record flags for this rank's records, counts over all ranks.
linkage::IntervalDisclosure distributed_interval_disclosure(const Communicator& comm, const NumericColumns& original,
                                                            const NumericColumns& masked, double k);

/// Collective. Rank-based interval disclosure. The ranks of a variable are global, so the records'
/// values meet on the coordinator (16·p bytes per record there), which computes the rates and
/// broadcasts them.
linkage::RankIntervalDisclosure distributed_rank_interval_disclosure(const Communicator& comm,
                                                                     const NumericColumns& original,
                                                                     const NumericColumns& masked, double percent);

}  // namespace sdc::distributed
