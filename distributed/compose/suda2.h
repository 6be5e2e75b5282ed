#pragma once
// SUDA2 across ranks (kernels/risk/suda2.h; docs/risk.md "## SUDA2"). The kernel's level-wise MSU
// search runs on every rank over its own records; the only global quantity it needs, the sample count
// of a record's combination on a key subset, comes from a collective SubsetCounter:
//   - small tuple spaces (at most kDenseSubsetSpace combinations, a function of the key levels only,
//     so every rank takes the same branch): a dense histogram of the flagged records, summed over
//     ranks (integer all-reduce);
//   - otherwise a distributed group-by of the flagged records' projected tuples: local classes
//     (sorted), hash shuffle to the owner rank (class_exchange.h), merged there, and min(3, count)
//     sent back class by class in the order sent.
// Then the partials (U, D, exact sums, MSU counts, contributions) merge over ranks (one all-gather,
// folded in rank order: integer counts and exact sums, so the fold order changes no bit) and every
// rank finalises the DIS scores of its records. Counts are integers and scores record-local, so the
// results have the same bits for any number of ranks and threads. Memory: the kernel's per-record bits
// plus, per subset, the flagged records' projected codes and their classes (transient).

#include <cstdint>
#include <optional>
#include <vector>

#include "distributed/comm.h"
#include "kernels/risk/suda2.h"

namespace sdc::distributed {

/// Subsets whose tuple space (the product of L_j + 1 over its keys) is at most this are counted densely.
inline constexpr std::uint64_t kDenseSubsetSpace = std::uint64_t{1} << 16;

/// Collective counter over the records of all ranks: every rank must call it with the same subsets in
/// the same order (checked: a rank that sees another subset than some other rank throws, on every
/// rank). Keeps a reference to `keys`, this rank's records. Creating it is collective too: a code
/// outside its key's levels on any rank is an InvalidInput on every rank.
SubsetCounter make_distributed_subset_counter(const Communicator& comm, const KeyColumns& keys);

/// Collective: the merge of every rank's partial, the same on every rank.
Suda2Partial all_reduce_suda2_partial(const Communicator& comm, const Suda2Partial& local);

struct DistributedSuda2 {
  std::vector<double> score;                                 ///< SUDA score of this rank's records
  std::vector<double> dis;                                   ///< DIS score of this rank's records
  Suda2Partial total;                                        ///< merged over all ranks
  double score_max = 0.0;                                    ///< over all ranks
  double dis_max = 0.0;                                      ///< over all ranks
  std::optional<Suda2AttributeContributions> contributions;  ///< when options.contributions
};

/// Collective: SUDA2 of the records of all ranks. One rank counts with the kernel's local counter.
DistributedSuda2 distributed_suda2(const Communicator& comm, const KeyColumns& keys, const Suda2Options& options);

}  // namespace sdc::distributed
