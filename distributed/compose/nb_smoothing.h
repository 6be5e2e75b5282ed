#pragma once
// Rinott–Shlomo negative-binomial smoothing risk across ranks (kernels/risk/nb_smoothing.h; docs/methods
// risk.md §8; docs/risk.md "NB smoothing"):
//   1. local classes: the records of this rank grouped by (fixed keys, ordinal keys), with counts and
//      exact weight sums (frequency_count_local);
//   2. each class goes to the rank owning the hash of its FIXED keys only, so that every neighbourhood
//      (fixed keys equal, ordinal keys near) lies on one rank; the owner merges what every rank sent
//      (class_exchange.h);
//   3. the owner runs nb_smoothing_local on its classes (the kernel fits the sample uniques on the
//      threads of the current TBB arena);
//   4. each rank that sent a class with one record gets P(F=1|f=1) and E[1/F|f=1] of that class back
//      (0, 0 when the class is not a sample unique over all ranks), in the order it sent its classes;
//   5. τ1 and τ2 are exact sums over the owners, counts integer sums.
// The results have the same bits for any number of ranks and threads: every fit reads only its own
// neighbourhood, and the neighbourhood is whole on its owner whatever the rank count.
//
// Without fixed keys (and several ranks) step 2 splits the codes of the first ordinal key into one
// range per rank, balanced on the classes with one record; a rank also receives copies of the classes
// within c of its range (a halo) so that its uniques' neighbourhoods are whole, fits the uniques of
// its range and answers for them only (the uniques among the copies are fitted and discarded).
//
// Memory: per rank, the grouping of its records (about 32 bytes per record, key_grouping.h) and its
// share of the classes (about 40 + 4 x keys bytes each), plus the halo copies without fixed keys.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "distributed/comm.h"
#include "kernels/core/key_grouping.h"
#include "kernels/risk/nb_smoothing.h"

namespace sdc::distributed {

struct NbSmoothingInput {
  /// Key columns of this rank's records: the fixed keys first, then the ordinal keys. Codes of fixed
  /// keys may be -1 (missing, a level of its own); codes of ordinal keys must lie in 0..L_j-1.
  KeyColumns keys;
  std::size_t fixed_key_count = 0;
  bool weighted = false;            ///< whether the step has weights (the same on every rank)
  std::span<const double> weights;  ///< this rank's weights when weighted (empty for a rank without records)
  std::string_view weight_name;     ///< the weight variable, for messages
  /// π of every sample unique; unset: π_k = f_k / F_k = 1 / F_k from the weights.
  std::optional<double> sampling_fraction;
  std::vector<std::string_view> ordinal_key_names;  ///< for messages, in ordinal key order
  NbSmoothingOptions options;
};

struct DistributedNbSmoothing {
  std::vector<double> unique_probability;  ///< per record of this rank: P(F=1|f=1) for a sample unique, else 0
  std::vector<double> expected_inverse;    ///< per record: E[1/F|f=1] for a sample unique, else 0
  NbSmoothingTotals totals;                ///< over all ranks, on every rank
  std::int64_t iterations = 0;             ///< Newton iterations of all fits, over all ranks
  std::size_t neighbourhood_size = 0;      ///< |M|: cells of a neighbourhood inside the key space
};

/// Collective. Throws InvalidInput on every rank when some rank's sample unique has a weight below 1
/// (π = 1/F > 1) and no `sampling_fraction` is given, and rethrows any error of the kernel on every
/// rank (the lowest failing rank's message), so that no rank waits in a collective for a failed one.
DistributedNbSmoothing distributed_nb_smoothing(const Communicator& comm, const NbSmoothingInput& input);

}  // namespace sdc::distributed
