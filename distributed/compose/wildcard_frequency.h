#pragma once
// f and F with missing key values as wildcards (sdcMicro freqCalc, alpha; docs/methods risk.md §1)
// across ranks, by the pattern lattice of kernels/risk/wildcard_frequency.h:
//   1. local patterns (missing is a value), shuffled to the owner of their key tuple and merged there
//      (the class shuffle of distributed_frequency_count);
//   2. the distinct observed-key masks, all-gathered, give the same lattice on every rank;
//   3. every owned pattern of mask B sends its count and exact weight, projected on I, to the owner of
//      (table (B, I), projected tuple): a second hash shuffle that builds the projection tables;
//   4. every owned pattern of mask A asks the owners of the tables it reads for the totals at its
//      projections (request / reply, answers in the order asked) and forms its f and F;
//   5. f and F go back to every rank holding records of the pattern.
// With no missing key on any rank this is distributed_frequency_count itself (same results, same
// bits). Counts are integers and weights exact sums until each f and F is formed once, so the
// results are identical for any number of ranks and threads.
//
// Summary with real-valued f (alpha < 1): classes are the patterns, sample uniques the records with
// f == 1, records and classes below k those with f < k compared as reals.

#include <cstdint>
#include <span>

#include "distributed/comm.h"
#include "distributed/compose/frequency_count.h"

namespace sdc::distributed {

/// Collective. Throws InvalidJob for alpha outside [0, 1] (on every rank), InvalidInput on every rank
/// when a key code lies outside its levels on any rank.
DistributedFrequencies distributed_wildcard_frequency_count(const Communicator& comm, const KeyColumns& keys,
                                                            std::span<const double> weights, double alpha,
                                                            std::int64_t k);

}  // namespace sdc::distributed
