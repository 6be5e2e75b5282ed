#pragma once
// SUDA2 special-uniques risk (sdcMicro suda2; docs/methods risk.md §9; Manning, Haglin and Keane 2008;
// Elliot et al., "SUDA: a program for detecting special uniques").
//
// A minimal sample unique (MSU) of a record is a key subset S on which the record's value combination
// occurs once in the sample while it occurs more than once on every proper subset of S. With M keys an
// MSU of size s weighs (M - s)!; a record's SUDA score is the sum over its MSUs of size <= max_size.
// Uniqueness is monotone in the subset, so S is an MSU of a record iff the record is unique on S and on
// no S \ {x}. The search therefore runs level by level over subset size and keeps, per subset of the
// previous and the current level, one bit per record: "dead" = unique on the subset or on one of its
// subsets (or missing on one of its keys). A record is a candidate on S iff it is dead on no S \ {x};
// it has an MSU on S iff it is a candidate and unique on S.
//
// Global counts come from an injected SubsetCounter, so the same search runs on one block (the local
// counter below) or on the records of all ranks (a distributed group-by passed by distributed/).
//
// Shape (a), mergeable partials:
//   suda2_local      records of one block + a SubsetCounter -> per-record scores (and contributions)
//                    and a Suda2Partial (U, D, the sum A, contribution totals)
//   suda2_merge      two partials -> their sum (associative, commutative; sums exact until read)
//   suda2_dis_scores per-record scores + the global partial -> per-record DIS scores
//   suda2_attribute_contributions  global partial -> percentages per key and per key level
// Scores are record-local and built in a fixed order (level, then subset), so they have the same bits
// however the records are split and whatever the thread count.
//
// Memory: besides the per-record outputs (8 bytes, plus 8 x M with contributions), the search keeps
// ceil((C(M, k-1) + C(M, k)) / 8) bytes per record at level k (16 bytes for M = 8 at k = 4, 58 for
// M = 10 at k = 5), one count byte and one candidate bit per record; the local counter's scratch is
// transient, at most about 40 + 8|S| bytes per flagged record. Subset pairs of adjacent levels beyond
// kMaxSubsetsPerLevelPair are refused: lower max_size.
//
// Reference conventions (sdcMicro 5.8.1, src/Suda2.h and R/suda2.R), and where we differ:
// - Missing key values (kMissingCode): a key value that is missing never forms part of an MSU (the
//   reference drops every item whose value is the missing code); for counting it is a value of its
//   own, equal to no observed value. U and D compare whole key tuples with missing as a value, as the
//   reference's duplicate scan does.
// - Fewer than three keys: the reference pads the data with constant dummy keys up to three; a
//   constant key never enters an MSU of a sample with more than one record, so the padding only sets
//   the M of the weights (M - s)! and of Q. We use M' = max(M, 3) there and add no columns. (In a
//   sample of a single record the reference also scores the dummy keys as 1-MSUs; we do not.)
// - A: the sum of score^-Q over the records with a positive score (the reference skips score 0; every
//   record with a positive score is unique on all keys). DIS = 0 where the score is 0.
// - U: we count every record unique on all keys. The reference counts only records alone in their
//   bucket of a 16-bit hash of the key values (its branch for unique records in shared buckets cannot
//   be reached), so its U is too small on large files. U enters DIS only through U/Dis - U, which
//   equals D(1 - phi)/phi for U > 0, so DIS agrees unless the reference's U is 0 (it then gives NaN).
// - Precision: the reference computes Dis, phi and Q in single precision (Q = 1.2f for M = 4), which
//   moves DIS by about 1e-7 relative; we compute in double.
// - Per-variable contributions: each MSU adds its weight to every key in it; a record's contribution
//   of key j divided by its score is the reference's contributionPercent (a fraction). The reference
//   merges key values that cover exactly the same records and its bookkeeping of the merged items
//   under-counts some keys; we follow the definition.
// - max_size is our option (the reference always searches up to M).

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/key_grouping.h"

namespace sdc {

/// How an MSU of size s is weighed (sdcMicro's `original_scores`).
enum class Suda2Weights {
  kElliot,  ///< (M - s)!  (original_scores = TRUE, the reference's default)
  kIhsn,    ///< (2^(M-s) - 1) / C(M, s)  (original_scores = FALSE, the IHSN implementation)
};

struct Suda2Options {
  std::size_t max_size = 0;    ///< largest MSU size searched, 1..M; 0 = M
  double dis_fraction = 0.01;  ///< phi, the sampling fraction (DisFraction), in (0, 1]
  Suda2Weights weights = Suda2Weights::kElliot;
  bool contributions = false;  ///< also per-record, per-key contributions and their totals
};

/// Sample counts capped at three: what a SubsetCounter reports per record.
inline constexpr std::uint8_t kCountUnique = 1;
inline constexpr std::uint8_t kCountPair = 2;
inline constexpr std::uint8_t kCountMore = 3;

/// Bit i % 64 of word i / 64 flags local record i.
using RecordBits = std::vector<std::uint64_t>;
inline std::size_t record_bit_words(std::size_t records) { return (records + 63) / 64; }

/// Given key indices `subset` (ascending) and the local records flagged in `candidates`, writes for
/// every flagged record r: min(3, number of records of the whole sample whose codes on `subset` equal
/// r's), missing (-1) counting as a value. Entries of unflagged records are left unspecified.
///
/// The flags are a hint: the kernel guarantees that no unflagged record anywhere shares its
/// combination with a flagged one, so a counter may count over all records or over the flagged ones
/// only (fewer to shuffle). suda2_local calls the counter for the same subsets in the same order on
/// every block, also when a block flags no record, so a distributed counter may be collective.
using SubsetCounter = std::function<void(std::span<const std::size_t> subset, std::span<const std::uint64_t> candidates,
                                         std::span<std::uint8_t> capped_counts)>;

/// The index of each listed record's value tuple on the keys of `subset` in their mixed-radix space
/// (code c of key j is digit c + 1 of radix L_j + 1, so missing is digit 0): below the product of
/// (L_j + 1) over the subset, which the caller checks fits in 64 bits. Parallel; the local and the
/// distributed counters histogram these indices.
std::vector<std::uint64_t> subset_tuple_indices(const KeyColumns& keys, std::span<const std::size_t> subset,
                                                std::span<const std::uint32_t> records);

/// The counter over one block of records (the whole sample when the block is). Keeps a reference
/// to `keys`. Dense counting when the subset's tuple space is small against the flagged records,
/// otherwise group_by_keys on their gathered codes; parallel with TBB, integer counts only, so the
/// result does not depend on the thread count.
SubsetCounter make_local_subset_counter(const KeyColumns& keys);

/// The global sums of SUDA2.
struct Suda2Partial {
  std::int64_t unique_records = 0;   ///< U: records unique on all keys
  std::int64_t pair_records = 0;     ///< D: records in key patterns of exactly two records
  ExactSum inverse_score_power_sum;  ///< A: sum of score^-Q over records with a positive score
  ExactSum score_sum;
  std::int64_t scored_records = 0;  ///< records with a positive score
  std::int64_t msu_count = 0;
  /// Per MSU size s (index s - 1): the number of MSUs found.
  std::vector<std::int64_t> msus_by_size;
  /// With contributions: per key, the sum over records of its contribution.
  std::vector<ExactSum> key_contribution;
  /// With contributions: key j's level c (0..L_j-1) at level_offsets[j] + c, the sum of key j's
  /// contribution over the records with that level.
  std::vector<ExactSum> level_contribution;
  std::vector<std::size_t> level_offsets;
};

struct Suda2Local {
  std::vector<double> score;         ///< per record
  std::vector<double> contribution;  ///< with contributions: record i's key j at i * M + j
  Suda2Partial partial;
};

/// Throws ParameterError for max_size outside 0..M, dis_fraction outside (0, 1], no keys, more than 63
/// keys or a search that needs more than kMaxSubsetsPerLevelPair subsets in two adjacent levels.
Suda2Local suda2_local(const KeyColumns& keys, const SubsetCounter& counter, const Suda2Options& options);

void suda2_merge(Suda2Partial& into, const Suda2Partial& from);

/// The exponent Q = 1 + (8 - M')/20 and the weight of an MSU of size s, with M' = max(M, 3).
double suda2_q(std::size_t key_count);
double suda2_msu_weight(std::size_t key_count, std::size_t size, Suda2Weights weights);

/// DIS per record from its score and the merged partial of the whole sample:
/// Dis = U phi / (U phi + D (1 - phi)); DIS = 1 / (1 + (U/Dis - U) / (score^Q A)), 0 for score 0.
std::vector<double> suda2_dis_scores(std::span<const double> scores, const Suda2Partial& total, std::size_t key_count,
                                     const Suda2Options& options);

/// sdcMicro's attribute_contributions (per key: 100 x its contribution total / the score total) and
/// attribute_level_contributions (per key level: 100 x its share of the key's total), from a merged
/// partial computed with contributions. Levels in level_offsets layout; 0 where a total is 0.
struct Suda2AttributeContributions {
  std::vector<double> key_percent;
  std::vector<double> level_percent;
};
Suda2AttributeContributions suda2_attribute_contributions(const Suda2Partial& total);

inline constexpr std::size_t kMaxSubsetsPerLevelPair = 8192;

}  // namespace sdc
