#pragma once
// Targeted record swapping over all ranks (kernels/swapping/targeted_swap.h; docs/swapping.md). Ranks
// own whole households (the input is split between households). Phase A: the risk per level from
// counts over all ranks (distributed_frequency_count on the risk variables and the geography prefix)
// and one summary per household, all local. Phase B: the summaries (about 60 bytes a household) go to
// the coordinator, which plans every swap in one pass, areas in lexicographic order, as the method
// demands: a donor may come from any other area, so no area can be settled without the others. Phase
// C: each rank receives, for each of its swapped households, the geography and carry-along values of
// its partner. The plan depends on the summaries in record order and the seed only, so the output is
// the same for any number of ranks and threads.

#include <cstdint>
#include <span>
#include <vector>

#include "distributed/comm.h"
#include "kernels/swapping/targeted_swap.h"

namespace sdc::distributed {

/// Collective. Person risk per level (1/count of the person's cell of the risk variables and geography
/// 0..h over all ranks) for this rank's records.
std::vector<std::vector<double>> distributed_person_risk(const Communicator& comm, const KeyColumns& risk_variables,
                                                         const KeyColumns& geography);

/// Collective. Households with risk_h > threshold over all ranks, per level (the same on every rank).
std::vector<std::int64_t> distributed_risky_households(const Communicator& comm,
                                                       std::span<const std::int64_t> household_ids,
                                                       const std::vector<std::vector<double>>& person_risk,
                                                       double threshold);

/// This rank's swapped households and the values each takes from its partner.
struct TargetedSwappedPart {
  std::size_t levels = 0;
  std::size_t carry_count = 0;
  std::vector<std::int64_t> first_rows;  ///< the household's first record within this rank's block
  std::vector<std::int32_t> members;
  std::vector<std::int32_t> geography;  ///< household k's new codes: [k·levels, (k+1)·levels)
  std::vector<std::uint64_t> carry;     ///< household k's new carry-along words (value_word)
  /// The plan's counts, the same on every rank (its pairs are left on the coordinator).
  swapping::TargetedSwapPlan plan;
};

/// Collective. `records` holds this rank's records (households whole; person_risk from
/// distributed_person_risk), checked by the step for disagreeing members and nesting beforehand.
TargetedSwappedPart targeted_swap_households(const Communicator& comm, const swapping::HouseholdRecords& records,
                                             const swapping::TargetedSwapOptions& options, std::uint64_t seed);

}  // namespace sdc::distributed
