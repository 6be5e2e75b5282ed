#pragma once
// The class shuffle shared by the frequency-count compositions: each rank's classes (sorted by key
// tuple) go to the rank owning their tuple (fixed hash, MPI_Alltoallv), the owner merges them, and
// answers every sender class by class in the order it was sent.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::distributed {

/// The rank owning a key tuple: a fixed hash (the same in every process, unlike absl::Hash) modulo ranks.
int owner_of(std::span<const std::int32_t> key, int ranks);

struct OwnedClasses {
  FrequencyClasses owned;                   ///< merged totals of the tuples this rank owns, sorted
  std::vector<FrequencyClasses> from_rank;  ///< what each rank sent here, in the order sent
  std::vector<int> owner;                   ///< owner rank of each local class
};

/// Collective. Counts and exact weight sums of `mine` arrive merged at their owners.
OwnedClasses send_classes_to_owners(const Communicator& comm, const FrequencyClasses& mine);

/// Collective. As above with the owner of each local class given (`owner[c]` in 0..ranks-1), e.g. a
/// hash of part of the key tuple, so that related classes meet on one rank. Equal tuples must have
/// the same owner on every rank. Optionally class c also goes, as a copy, to the ranks
/// copy_ranks[copy_offsets[c] .. copy_offsets[c+1]) (other than its owner): a halo of the classes
/// near the ones a rank owns. A rank answers (answer_senders) only for the classes it owns: its
/// `write` must append nothing for a copy.
OwnedClasses send_classes_to_owners(const Communicator& comm, const FrequencyClasses& mine, std::vector<int> owner,
                                    std::span<const std::size_t> copy_offsets = {},
                                    std::span<const int> copy_ranks = {});

/// Collective. `write(out, g)` appends the answer for owned class g; every sender gets one answer per
/// class it sent, in its order. Returns what each owner answered this rank, by owner rank: read the
/// answers of local class c, in class order, from the buffer of owner[c].
template <typename Write>
std::vector<std::vector<std::byte>> answer_senders(const Communicator& comm, const OwnedClasses& classes,
                                                   Write&& write) {
  std::vector<std::vector<std::byte>> replies(classes.from_rank.size());
  for (std::size_t r = 0; r < replies.size(); ++r) {
    ByteWriter reply;
    const FrequencyClasses& sent = classes.from_rank[r];
    std::size_t g = 0;
    for (std::size_t c = 0; c < sent.class_count(); ++c) {  // a merge join on sorted lists
      while (compare_key_tuples(classes.owned.key(g), sent.key(c)) < 0) ++g;
      write(reply, g);
    }
    replies[r] = std::move(reply.bytes());
  }
  return comm.all_to_all_bytes(replies);
}

/// Collective. The field-wise sum over ranks of summaries of disjoint class sets (k is kept).
FrequencySummary sum_over_ranks(const Communicator& comm, const FrequencySummary& mine);

void put_exact_sum(ByteWriter& out, const ExactSum& sum);
ExactSum get_exact_sum(ByteReader& in);
/// A vector of exact sums: its length, then each sum.
void put_exact_sums(ByteWriter& out, const std::vector<ExactSum>& sums);
std::vector<ExactSum> get_exact_sums(ByteReader& in);

}  // namespace sdc::distributed
