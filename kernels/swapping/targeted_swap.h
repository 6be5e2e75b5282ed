#pragma once
// Targeted record swapping of households across a geography hierarchy (the census method; the reference
// is sdcMicro's recordSwap): docs/methods swapping.md §2, docs/swapping.md. Households at risk on the
// risk variables within their area are swapped with households of another area that look alike on a
// similarity profile; every household's geography (and its carry-along variables) moves with it.
//
// Shape, in the order the composition (distributed/compose/targeted_swap.h) runs it:
//   level_keys / person_risk_from_counts   per level h: counts of (risk variables, geography 0..h) -> 1/count
//   summarise_households                   person records of one block -> one summary per household
//   area_parents                           the nesting of the hierarchy seen in one block (checked globally)
//   plan_targeted_swap                     every household's summary -> the pairs (on one rank)
//   count_risky_households                 risky households per level (before and after the swap)
//
// Conventions (docs/methods swapping.md §2, "native"):
// * Levels are numbered 0 (coarsest) … H−1 (finest). A household's risk at level h is the largest
//   1/count of its members; its level is the smallest h with risk_h > threshold, or H (not at risk).
// * Donor keys κ_h = risk_h / E, E = −ln u, u = (k + 1/2)·2^-53 from the top 53 bits k of Philox
//   (StepId::kTargetedSwapDonor, counter = (household id, level, 0, 0)); descending κ is a
//   risk-proportional sample without replacement. Equal keys: the smaller household id first (the
//   reference loses one of two households with equal keys; here none is lost).
// * Quota: total = ⌊nhid·rate/2⌋, plus one when the fraction is not zero (beyond 1e-9 relative, so that
//   a target whole in decimals is whole) and a fair coin (StepId::
//   kTargetedSwapQuota, unit 0, draw 2) says so; area a of the finest level gets ⌊total·N_a/nhid⌋
//   (in integers) and the remaining total − Σ of those go to as many distinct areas, the ones with the
//   smallest uniform keys (unit = the area's position in lexicographic order, draw 1).
// * Areas are processed in the lexicographic order of their geography codes; an area's swap set is its
//   unused, not yet failed households of the level in household id order, then (finest level only) the
//   households added to reach the area's quota in descending order of a fresh key risk_{H−1}/E (unit =
//   household id, draw 0). For each, the profiles are tried in order; the donor is the household of
//   largest κ_h that is unused, lies in another level-h area and equals it on every variable of the
//   profile (values of each household's first record). No donor: the household is recorded as failed
//   and not retried, but it can still be taken as a donor — the reference's behaviour, kept.
// * Donors may come from any other area, not only from the same parent area (as the reference).
//
// Cost: O(n log n) per level and profile (sorting the donors); each donor search costs O(log) amortised:
// per (profile values, area) the donors sorted by κ with a lazily advanced head, and per profile values
// an ordered set of the areas' heads, so "the best donor outside area a" skips at most one entry.
// Memory on the planning rank: about 60 bytes a household plus 8 bytes per carry-along variable.

#include <cstdint>
#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "kernels/core/key_grouping.h"

namespace sdc::swapping {

/// A column of person records as the kernel reads a household-level variable: codes, values or ids.
using RecordValues =
    std::variant<std::span<const std::int32_t>, std::span<const double>, std::span<const std::int64_t>>;

/// The bit pattern of row `row` of `values` as one 64-bit word (codes and ids sign-extended, doubles
/// bit for bit), so that values of any type travel and compare alike.
std::uint64_t value_word(const RecordValues& values, std::size_t row);

/// The threshold of the risk levels: `risk_threshold` when above 0, else 1/k_anonymity; k_anonymity 0
/// disables the forced swaps (threshold 2, above every risk).
double targeted_swap_threshold(double risk_threshold, std::int64_t k_anonymity);

/// The keys whose counts give the risk at level `level`: the risk variables, then geography 0..level.
KeyColumns level_keys(const KeyColumns& risk_variables, const KeyColumns& geography, std::size_t level);

/// Person risk 1/count from the counts of each record's cell.
std::vector<double> person_risk_from_counts(std::span<const double> counts);

/// Person risk per level of one complete file (all its records in one block): the single-process form
/// of what the composition computes with counts over all ranks.
std::vector<std::vector<double>> person_risk_per_level(const KeyColumns& risk_variables, const KeyColumns& geography);

/// Person records of one block. Records of a household are contiguous; a household never spans blocks.
struct HouseholdRecords {
  std::span<const std::int64_t> household_ids;
  KeyColumns geography;                                ///< coarse → fine
  std::vector<std::span<const std::int32_t>> similar;  ///< the distinct variables of all profiles
  std::vector<RecordValues> carry_along;               ///< household-level variables moved with the geography
  std::vector<std::span<const double>> person_risk;    ///< per level
};

/// One entry per household, in the order of the records. Flat arrays: entry i's geography is
/// geography[i·levels, (i+1)·levels), and so on.
struct HouseholdSummaries {
  std::size_t levels = 0;
  std::size_t similar_count = 0;
  std::size_t carry_count = 0;
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> first_rows;  ///< the household's first record within its block
  std::vector<std::int32_t> members;
  std::vector<std::int32_t> geography;  ///< codes of the first record
  std::vector<std::int32_t> similar;    ///< codes of the first record
  std::vector<std::uint64_t> carry;     ///< value_word of the first record
  std::vector<double> risk;             ///< household risk per level (maximum over the members)

  std::size_t size() const { return ids.size(); }
  std::span<const std::int32_t> geography_of(std::size_t i) const {
    return std::span<const std::int32_t>(geography).subspan(i * levels, levels);
  }
  std::span<const std::uint64_t> carry_of(std::size_t i) const {
    return std::span<const std::uint64_t>(carry).subspan(i * carry_count, carry_count);
  }
};

/// A member whose geography or carry-along value differs from its household's first record.
struct HouseholdDisagreement {
  std::size_t first_row = 0;  ///< the household's first record, within the block
  std::size_t row = 0;        ///< the member that differs
  std::size_t variable = 0;   ///< index into geography, then carry_along (geography.key_count() + c)
};

std::optional<HouseholdDisagreement> first_household_disagreement(const HouseholdRecords& records);

/// The summaries of a block's households (checked by first_household_disagreement beforehand).
HouseholdSummaries summarise_households(const HouseholdRecords& records);

/// Appends `more` (the next block's households) to `into`.
void append_households(HouseholdSummaries& into, const HouseholdSummaries& more);

/// The (area, parent area) pairs of one level seen in a block, with a record of each.
struct AreaParent {
  std::int32_t area = 0;
  std::int32_t parent = 0;
  std::int64_t row = 0;  ///< a record of the pair within the block
};

/// Per level 1…H−1, the distinct (code at level h, code at level h−1) pairs of the block, sorted.
std::vector<std::vector<AreaParent>> area_parents(const KeyColumns& geography);

/// Two records placing one area of `level` (≥ 1) in two parent areas, if any (`pairs` sorted, from
/// one or more blocks: equal pairs may repeat).
struct NestingConflict {
  std::size_t level = 0;
  AreaParent first;
  AreaParent second;
};
std::optional<NestingConflict> first_nesting_conflict(std::size_t level, std::span<const AreaParent> pairs);

struct TargetedSwapOptions {
  double threshold = 1.0 / 3.0;  ///< targeted_swap_threshold
  double swap_fraction = 0.05;
  /// Similarity profiles, each a list of indexes into HouseholdSummaries::similar; one empty profile
  /// matches any donor.
  std::vector<std::vector<std::size_t>> profiles{{}};
};

/// The household's level: the smallest h with risk_h > threshold, or `levels` when none.
std::vector<std::uint8_t> household_levels(const HouseholdSummaries& households, double threshold);

/// The quota's total: ⌊nhid·rate/2⌋ or one more by a fair coin.
std::int64_t quota_total(std::int64_t households, double swap_fraction, std::uint64_t seed);

/// Quotas of the finest-level areas (in lexicographic order of their codes), given each area's household
/// count: summing to `total`.
std::vector<std::int64_t> area_quotas(std::span<const std::int64_t> area_households, std::int64_t total,
                                      std::uint64_t seed);

/// Per level, what the report counts.
struct TargetedSwapLevel {
  std::int64_t risky_households = 0;  ///< risk_h > threshold, before swapping
  std::int64_t must_swap = 0;         ///< households of this level
  std::int64_t swapped_pairs = 0;     ///< pairs whose initiator was swapped at this level
  std::int64_t without_donor = 0;     ///< initiators of this level that found no donor
  std::int64_t quota_added = 0;       ///< finest level: households added to reach the quotas
};

struct SwapPair {
  std::uint32_t initiator = 0;  ///< household indexes of the summaries
  std::uint32_t donor = 0;
  std::uint8_t level = 0;
  std::uint8_t profile = 0;  ///< the profile that matched
};

struct TargetedSwapPlan {
  std::vector<SwapPair> pairs;
  std::vector<TargetedSwapLevel> levels;
  std::int64_t households = 0;
  std::int64_t quota_total = 0;
  std::int64_t swapped_households = 0;  ///< 2 · pairs
  std::int64_t swapped_records = 0;     ///< members of both households, over the pairs
  std::int64_t households_without_donor = 0;
};

/// The swap of all households (every block's summaries appended in record order).
TargetedSwapPlan plan_targeted_swap(const HouseholdSummaries& households, const TargetedSwapOptions& options,
                                    std::uint64_t seed);

/// Households of a block with risk_h > threshold (risk_h the largest person risk of the members), per
/// level: the local step of the risk measured before and after swapping; the counts add over blocks.
std::vector<std::int64_t> count_risky_households(std::span<const std::int64_t> household_ids,
                                                 const std::vector<std::span<const double>>& person_risk,
                                                 double threshold);

}  // namespace sdc::swapping
