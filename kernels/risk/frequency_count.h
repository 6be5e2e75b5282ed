#pragma once
// Sample frequency counts f_k and weighted counts F_k of the equivalence classes of key variables
// (sdcMicro freqCalc with complete keys; docs/methods risk.md §1; missing keys either rejected by the
// caller or, with the `category` policy, an ordinary level).
//
// Shape (a), mergeable partials:
//   frequency_count_local    records of one block  -> classes with counts and exact weight sums
//   frequency_count_merge    two class lists       -> their sorted union (associative, commutative)
//   frequency_count_assign   global class totals   -> per-record fk and fk_weighted
//   frequency_count_finalize global classes        -> report figures
// Weighted sums are exact until read (ExactSum), so F_k has the same bits however the records are split.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/key_grouping.h"

namespace sdc {

/// Classes sorted by key tuple with their sample counts and weight sums.
struct FrequencyClasses {
  std::size_t key_count = 0;
  std::vector<std::int32_t> class_keys;  ///< class c's tuple: [c*key_count, (c+1)*key_count)
  std::vector<std::int64_t> counts;
  std::vector<ExactSum> weights;

  std::size_t class_count() const { return counts.size(); }
  std::span<const std::int32_t> key(std::size_t c) const {
    return std::span<const std::int32_t>(class_keys).subspan(c * key_count, key_count);
  }
};

struct LocalFrequencyCount {
  FrequencyClasses classes;
  std::vector<std::uint32_t> record_class;  ///< index into classes, per record of the block
};

/// `weights` empty = unweighted (F_k = f_k).
LocalFrequencyCount frequency_count_local(const KeyColumns& keys, std::span<const double> weights);
/// The same from the records' classes already formed (group_by_keys of the keys), for a step that
/// uses them again (l-diversity).
LocalFrequencyCount frequency_count_local(const KeyGrouping& grouping, std::span<const double> weights);

/// The sorted union of two class lists, counts and weights added for equal tuples.
void frequency_count_merge(FrequencyClasses& into, const FrequencyClasses& from);

/// Per record: fk = f of its class, fk_weighted = F of its class (rounded once from the exact sum).
struct RecordFrequencies {
  std::vector<double> fk;
  std::vector<double> fk_weighted;
};
RecordFrequencies frequency_count_assign(std::span<const std::uint32_t> record_class,
                                         std::span<const std::int64_t> class_counts,
                                         std::span<const double> class_weights);

struct FrequencySummary {
  std::int64_t records = 0;
  std::int64_t classes = 0;
  std::int64_t sample_uniques = 0;   ///< records (= classes) with f_k = 1
  std::int64_t records_below_k = 0;  ///< records in classes with f_k < k
  std::int64_t classes_below_k = 0;
  std::int64_t k = 0;
};
FrequencySummary frequency_count_finalize(std::span<const std::int64_t> class_counts, std::int64_t k);

/// Index of the first record with a missing (-1) code in any key, and that key; nullopt when complete.
struct MissingKey {
  std::size_t key = 0;
  std::size_t record = 0;
};
std::optional<MissingKey> first_missing_key(const KeyColumns& keys);

}  // namespace sdc
