#pragma once
// Local suppression to k-anonymity, sdcMicro's algorithm (localSuppression / kAnon; docs/methods
// recoding.md §4), cell by cell as the reference does it:
// 1. importance: by default the keys ranked by their number of levels, fewest first (ties in key
//    order), so the key with the most levels is suppressed first; or given;
// 2. the records of every exact key tuple beyond its first k are set aside (they never need it);
// 3. a pass computes f on the rest (wildcard semantics with alpha, kernels/risk/wildcard_frequency.h)
//    and lists the records with f < k, f ascending, ties by position; f is not updated in the pass;
// 4. for each listed record p: the smallest positive distance D* (keys where both are observed and
//    differ; D* starts at m) to the current records, the candidates at D*, and the first key in
//    suppression order where p is observed and some candidate is observed and different: suppressed;
// 5. passes repeat until no record has f < k.
//
// Shape: a function of one block of records that holds every record of the data (or of a stratum).
// The candidate search is the reference's scan of every record (CandidateSearch::kRecordScan,
// O(passes × |P| × |Y| × m)) or, by default, the native one of recoding.md §4 ("Native, same result"),
// which gives the reference's choice: the nearest rows of a listed record are found among distinct key tuples, not
// records; phase A compares the listed records' tuples with the tuples of the rows not listed (which
// the pass never changes) in parallel, phase B with the listed rows in their current state, in list
// order. O(passes × (|T_P| × |T_Y| + |P| × |T_P|) × m): T_P the distinct tuples listed, T_Y those not
// listed, |P| the records listed. Memory: the working set Y (at most k records of each tuple) and the
// tuples, O(|Y| × m).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sdc::recoding {

/// Keys beyond this are refused (the differing keys of a candidate are one 64-bit mask).
inline constexpr std::size_t kMaxSuppressionKeys = 64;

/// How a pass finds the nearest records of a listed one; both give the reference's result.
enum class CandidateSearch : std::uint8_t {
  kIndexed,     ///< native: distinct tuples indexed by value, phases A and B (recoding.md §4)
  kRecordScan,  ///< compat: every record of the working set, as the reference scans them
};

struct LocalSuppressionOptions {
  std::int64_t k = 2;
  CandidateSearch search = CandidateSearch::kIndexed;
  double alpha = 1.0;  ///< weight of a wildcard match in f (risk.md §1)
  /// Per key, 1 (kept longest) .. m; ties allowed. Empty: ranked by level counts.
  std::vector<std::int32_t> importance;
};

struct LocalSuppressionResult {
  std::vector<std::int64_t> suppressed;  ///< new suppressions per key
  std::int64_t passes = 0;
  std::int64_t records_touched = 0;  ///< records with at least one new suppression
  /// Records with f < k in the whole data before and after (the passes count f on the records kept in
  /// step 2, which with alpha < 1 can list more).
  std::int64_t violators_before = 0;
  std::int64_t violators_after = 0;  ///< 0 unless `impossible`
  /// Why k-anonymity could not be reached, or empty: with alpha = 1, a record below k whose every
  /// other record agrees with it wherever both are observed (there are fewer than k records).
  std::string impossible;
};

/// ParameterError naming the option: k < 1, more than kMaxSuppressionKeys keys, alpha outside [0, 1],
/// importance not one value in 1..m per key.
void check_local_suppression_options(std::size_t key_count, const LocalSuppressionOptions& options);

/// The importance of each key by default: rank by level count, fewest first, ties in key order.
std::vector<std::int32_t> default_importance(std::span<const std::int32_t> level_counts);

/// Suppresses key values (sets them to −1) in `keys` (one column of codes per key, codes in
/// −1 .. level_counts[j] − 1) until every record has f ≥ k.
LocalSuppressionResult suppress_to_k_anonymity(std::span<const std::span<std::int32_t>> keys,
                                               std::span<const std::int32_t> level_counts,
                                               const LocalSuppressionOptions& options);

}  // namespace sdc::recoding
