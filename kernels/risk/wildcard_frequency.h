#pragma once
// Sample frequency counts f and weighted counts F when key values are missing, under sdcMicro's
// wildcard semantics (freqCalc with parameter alpha; docs/methods risk.md §1): a missing value matches
// any value. Records are grouped by their exact pattern (missing code -1 is a value for grouping);
// pattern p of observed-key mask A then collects, from every compatible pattern q of mask B != A,
//   complete p:   alpha * n_q for partially-missing q; nothing from all-missing q (one key: alpha * n_q);
//   partial p:    n_q for complete q; alpha * n_q for any other partially- or all-missing q;
//   all-missing:  n_q for every q (f = n, F = sum of all weights);
// plus its own n_p. F is built identically from the weights.
//
// Algorithm, the pattern lattice: the patterns of mask B compatible with p are exactly those whose
// projection on I = obs(A) & obs(B) equals p's. So for every pair of masks (A, B) the patterns of mask
// B are totalled by their projection on I (a hash map, one per distinct (B, I)), and every pattern of
// mask A looks its projection up: O(|masks|^2 * #patterns) work instead of a pairwise scan of records.
//
// Shape (a) followed by a global step on patterns:
//   frequency_count_local / _merge   records -> exact missingness patterns with counts and exact weights
//   wildcard_lattice                 the distinct masks (agreed by all) -> projection tables and lookups
//   ProjectionTables                 totals of the patterns of mask B by projection on I
//   WildcardSum                      one pattern's f and F from its own count and its lookups
//   wildcard_frequency               all of the above for a complete pattern list in one process
//   wildcard_frequency_assign        per-pattern f and F -> per record
//   wildcard_frequency_finalize      report figures for real-valued f
// Counts add as integers and weights as exact sums, each rounded once at the end, so the results do
// not depend on thread counts, on the order of patterns, or on how the records were split.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/risk/frequency_count.h"

namespace sdc {

/// Bit j set when key j is observed (code != -1). Hence at most 64 key variables.
using KeyMask = std::uint64_t;
inline constexpr std::size_t kMaxWildcardKeys = 64;

KeyMask observed_mask(std::span<const std::int32_t> pattern);

/// Throws ParameterError unless 0 <= alpha <= 1.
void check_wildcard_alpha(double alpha);
/// Throws InvalidInput naming the key when a pattern code lies outside -1..L_j-1, ParameterError when
/// there are more than kMaxWildcardKeys keys.
void check_pattern_codes(const FrequencyClasses& patterns, std::span<const std::int32_t> level_counts);

/// How another pattern's count enters f: fully, or multiplied by alpha.
enum class WildcardWeight : std::uint8_t { kFull, kAlpha };

/// Which projection tables the masks need and which tables each mask reads.
struct WildcardLattice {
  struct Table {
    KeyMask source = 0;  ///< B: the mask of the patterns totalled
    KeyMask on = 0;      ///< I: the keys they are projected on
  };
  struct Lookup {
    std::uint32_t table = 0;
    WildcardWeight weight = WildcardWeight::kFull;
  };

  std::size_t key_count = 0;
  std::vector<KeyMask> masks;                ///< sorted, distinct
  std::vector<Table> tables;                 ///< sorted by (source, on), distinct
  std::vector<std::vector<Lookup>> lookups;  ///< per mask index: the tables its patterns read

  /// Index of `mask` in `masks` (it must be there).
  std::size_t mask_index(KeyMask mask) const;
  /// Indices of the tables whose source is `mask`: [first, last).
  std::pair<std::uint32_t, std::uint32_t> tables_fed_by(KeyMask mask) const;
};

/// `masks` in any order, duplicates allowed; the same set gives the same lattice in every process.
WildcardLattice wildcard_lattice(std::span<const KeyMask> masks, std::size_t key_count);

/// The tuple with every key outside `on` set to missing: the projection, itself a valid pattern.
void project_pattern(std::span<const std::int32_t> pattern, KeyMask on, std::span<std::int32_t> out);

struct ProjectionTotals {
  std::int64_t count = 0;
  ExactSum weight;
};

/// One hash map per table of the lattice, split into a fixed number of shards (independent of the
/// thread count) so that filling runs in parallel without locks. Keys are packed into 64 bits when
/// the product of (L_j + 1) allows, tuples otherwise. Nothing is ever read in hash order.
class ProjectionTables {
 public:
  ProjectionTables(const WildcardLattice& lattice, std::span<const std::int32_t> level_counts);
  ~ProjectionTables();
  ProjectionTables(ProjectionTables&&) noexcept;
  ProjectionTables& operator=(ProjectionTables&&) noexcept;

  /// Limits `table` to the projections of these rows (before any add_sources on it): a semi-join
  /// that keeps the table as small as its readers when they are fewer than its sources.
  void restrict_to(std::uint32_t table, const FrequencyClasses& rows, std::span<const std::uint32_t> row_indices);
  /// Adds each row's count and weight at its projection on the table's I (rows are patterns of the
  /// table's source mask, or projections of them). A restricted table drops unrequested projections.
  void add_sources(std::uint32_t table, const FrequencyClasses& rows, std::span<const std::uint32_t> row_indices);
  /// The totals at the projection of `pattern`; nullptr when no source projects there.
  const ProjectionTotals* find(std::uint32_t table, std::span<const std::int32_t> pattern) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// f and F of one pattern: exact integer and weight sums, split by how they enter.
class WildcardSum {
 public:
  void add(WildcardWeight weight, std::int64_t count, const ExactSum& total_weight);
  /// full + alpha * alpha-weighted count.
  double f(double alpha) const;
  /// The exact full weight plus alpha times the (once rounded) alpha-weighted weight, rounded once.
  double weighted(double alpha) const;

 private:
  std::int64_t full_count_ = 0;
  std::int64_t alpha_count_ = 0;
  ExactSum full_weight_;
  ExactSum alpha_weight_;
};

struct PatternFrequencies {
  std::vector<double> f;            ///< per pattern
  std::vector<double> fk_weighted;  ///< per pattern (F)
};

/// f and F of every pattern of a complete (globally merged) pattern list. Runs on the threads of the
/// current TBB arena; the result does not depend on their number.
PatternFrequencies wildcard_frequency(const FrequencyClasses& patterns, std::span<const std::int32_t> level_counts,
                                      double alpha);

/// Per record: the f and F of its pattern.
RecordFrequencies wildcard_frequency_assign(std::span<const std::uint32_t> record_pattern,
                                            const PatternFrequencies& frequencies);

/// Report figures with real-valued f: classes are the patterns; sample uniques are the records with
/// f == 1 exactly; records and classes below k compare f < k as reals (f = 2.5 is not below 2.5).
/// Partial sums over disjoint pattern sets add up to the figures of their union.
FrequencySummary wildcard_frequency_finalize(std::span<const std::int64_t> pattern_counts, std::span<const double> f,
                                             std::int64_t k);

}  // namespace sdc
