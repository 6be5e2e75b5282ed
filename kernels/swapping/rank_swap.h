#pragma once
// Rank swapping (Moore 1996; the reference is sdcMicro 5.8.1's rankSwap): docs/methods swapping.md §1,
// docs/swapping.md. Each variable on its own: its non-missing values are sorted in descending order, the
// largest t and the smallest b are replaced by their means (top and bottom coding), and a walk down the
// N_u values left exchanges each value not yet swapped with one drawn uniformly among the values not yet
// swapped within the next window of ranks. Missing values (NaN) never move.
//
// Conventions (docs/methods swapping.md §1):
// * Sort: value descending; equal values put the later record (larger global row id) first, so the
//   outcome depends on the records' values and row ids only, never on their order in memory.
// * Single precision where the reference computes in single precision: the coded counts
//   t = int(float(N) · (float(percent) · 0.01f)) — 0.01f is below 0.01, so 5 % of 100 values codes 4 —,
//   the variance σ² of the N_u values left (accumulated in double, stored as float), the window fraction
//   P, and the end of the window of sorted position j, r = min(N_u, int(float(j) + float(N_u) · P)).
//   Partners of j are the free positions k with j < k < r.
// * Top coding first, then bottom coding of what it left: when t + b > N the two overlap and the bottom
//   mean averages top-coded means too, as in the reference. Coding one value keeps it but still takes it
//   out of the swapping.
// * P: given as a fraction of N_u (`window_fraction`, the reference's P — a *fraction*, although the
//   reference's documentation calls it a percentage); or from R0, P = sqrt(2σ²(1 − R0))/Δ; or from K0,
//   P = sqrt(8/3)·K0·|μ|/Δ; with none given R0 = 0.95. μ is the mean of the values left, Δ = |BottomValue −
//   TopValue| (the smallest top-coded and the largest bottom-coded original value; the largest and the
//   smallest value when nothing is coded), and P = 0 when Δ = 0.
//
// The two modes compute all of that identically and differ in the draws only (RankSwapDraws):
// * kCompat reproduces the reference: one taus88 stream (kernels/swapping/taus88.h) shared by the
//   variables in their order, Random(count) = int(u·count) in single precision. Where that reaches
//   count (u rounded to 1.0f, probability about 3e-8 a draw) the reference reads one past its candidates;
//   compat takes the last candidate instead and counts the event (RankSwapDraws::clamped()).
// * kNative draws from Philox (StepId::kRankSwap, docs/rng.md), keyed by the seed, with counter (row id of
//   the record at sorted position j, the variable's position in the step, 0, 0): Random(count) =
//   ⌊k·count / 2^53⌋ with k the top 53 bits of word 0, i.e. ⌊u·count⌋ for u in [0, 1) computed exactly,
//   never count. No draw depends on another variable, a thread or a rank.
// Where the reference is wrong, both modes differ from it, documented here:
// * When exactly one of top and bottom coding is non-empty the reference re-sorts with a value range
//   taken from the coded mean alone and crashes or corrupts memory; the engine always uses the true
//   range (its comparison sort needs none).
// * Rounding can make the variance slightly negative (values left all equal); the reference's R0 window
//   is then sqrt of a negative, NaN, and on x86 nobody gets a partner. The engine takes σ² = 0, hence
//   P = 0: the same no-swap outcome, with a window it can report.
// * The reference converts j + N_u·P to a 32-bit int, undefined beyond 2^31 (a window fraction far
//   above 1, a P from a tiny Δ); the engine clamps it to N_u, the whole rest of the file.
//
// Cost: O(N log N) per variable. The reference scans every window for free positions, O(P·N²) (a million
// values do not finish in minutes); rank_swap keeps the free positions in a Fenwick tree, so the number
// of candidates is a difference of two prefix counts and the chosen one, the (prefix(j) + t + 1)-th free
// position, is found by descending the tree — the same choices, draw for draw, as the scan, which
// rank_swap_by_scan keeps for the tests. Memory: about 40 bytes a value.

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kernels/core/record_rng.h"
#include "kernels/swapping/taus88.h"

namespace sdc::swapping {

enum class RankSwapMode { kCompat, kNative };

struct RankSwapOptions {
  double top_percent = 5.0;     ///< [0, 100]
  double bottom_percent = 5.0;  ///< [0, 100]
  /// At most one of the three; none given → r0 = 0.95 (§1).
  std::optional<double> window_fraction;  ///< P as a fraction of N_u (the reference's P): above 0, finite as a float
  std::optional<double> r0;               ///< [0, 1]: 1 keeps every value in place
  std::optional<double> k0;               ///< above 0, finite as a float
  RankSwapMode mode = RankSwapMode::kNative;
};

/// What happened to one variable (counts, never values).
struct RankSwapSummary {
  std::int64_t records = 0;       ///< values given (missing included)
  std::int64_t missing = 0;       ///< NaN values, never moved
  std::int64_t top_coded = 0;     ///< t
  std::int64_t bottom_coded = 0;  ///< b (t + b may exceed N: both codings then cover every value)
  std::int64_t swapped_pairs = 0;
  /// The P used, a float, as the double of its shortest decimal form (0.2f reads 0.2): float(window_fraction)
  /// gives back exactly the P of the scan.
  double window_fraction = 0.0;
  /// min(N_u, int(float(N_u) · P)) in single precision as the scan uses it: a partner lies at most this
  /// many sorted positions further down (informational).
  std::int64_t window_positions = 0;
};

/// The draws of the scan: compat = one taus88 stream shared by the variables in order (the caller keeps
/// it and passes the same object for every variable); native = Philox keyed by (seed, StepId::kRankSwap),
/// counter unit = the global row id of the record at sorted position j, draw = the variable's position in
/// the step (one object per variable; they are independent).
class RankSwapDraws {
 public:
  static RankSwapDraws compat(std::uint32_t taus88_seed);
  static RankSwapDraws native(std::uint64_t seed, std::uint64_t variable_position);

  RankSwapMode mode() const noexcept { return mode_; }

  /// Random(count) for the scan at the position holding global row id `row_id` (count ≥ 1): an index into
  /// the ascending candidates, in [0, count). Compat ignores `row_id`: its stream is sequential.
  std::int64_t pick(std::int64_t count, std::int64_t row_id);

  /// Draws taken (compat: by every variable that shared the stream).
  std::int64_t draws() const noexcept { return draws_; }

  /// Compat draws where the reference's Random(count) was count or more, taken as count − 1 (always 0 in
  /// native mode).
  std::int64_t clamped() const noexcept { return clamped_; }

 private:
  RankSwapDraws(RankSwapMode mode, std::uint32_t taus88_seed, std::uint64_t seed, std::uint64_t variable_position)
      : mode_(mode), taus88_(taus88_seed), philox_(seed, StepId::kRankSwap), variable_(variable_position) {}

  RankSwapMode mode_;
  Taus88 taus88_;
  RecordRng philox_;
  std::uint64_t variable_;
  std::int64_t draws_ = 0;
  std::int64_t clamped_ = 0;
};

/// Rank-swaps one variable. `values` in record order (NaN = missing, never moved), `row_ids` the records'
/// global row ids (same length, distinct; ties in the sort: the later record — larger row id — comes
/// first). Returns the masked values in record order; fills `summary` when given. `draws` must be of
/// `options.mode` (a mismatch is a bug of the caller: InternalError).
/// Throws ParameterError for a percent outside [0, 100] (NaN included), more than one of
/// window_fraction / r0 / k0, a window_fraction or k0 not above 0 or not finite as a float, an r0 outside
/// [0, 1]; InvalidInput naming the row id of an infinite value.
std::vector<double> rank_swap(std::span<const double> values, std::span<const std::int64_t> row_ids,
                              const RankSwapOptions& options, RankSwapDraws& draws, RankSwapSummary* summary = nullptr);

// ---- the pieces of rank_swap for a sorted order split into contiguous segments over ranks ----
// (distributed/compose/rank_swap.h). Applied segment by segment in sorted order, they give the same
// bits as rank_swap on the whole variable.

/// A non-missing value with its record's global row id.
struct SortedValue {
  double value = 0.0;
  std::int64_t row_id = 0;
};

/// The sorted order of §1.2: descending values, equal values by descending row id.
inline bool sorted_before(const SortedValue& a, const SortedValue& b) {
  return a.value > b.value || (a.value == b.value && a.row_id > b.row_id);
}

/// ParameterError for options rank_swap refuses (the same messages).
void check_rank_swap_options(const RankSwapOptions& options);

/// t (or b) of §1.3 for n non-missing values: every step in single precision.
std::int64_t rank_swap_coded_count(std::int64_t n, double percent);

/// The sums rank_swap runs down the sorted order, kept in that order's sequence of additions: a segment
/// continues the sums of the segments before it, so the total has the bits of one pass.
struct RankSwapSums {
  double top = 0.0;           ///< of positions [0, t)
  double bottom = 0.0;        ///< of positions [N − b, N), after top coding
  double free = 0.0;          ///< of positions [t, N − b)
  double free_squares = 0.0;  ///< of their squares
};

/// The window fraction P of §1.5 from the sums of the free values, the top and bottom values.
float rank_swap_window_fraction(const RankSwapOptions& options, const RankSwapSums& sums, std::int64_t free_count,
                                double top_value, double bottom_value);

/// r = min(N_u, int(float(j) + float(N_u)·P)) in single precision (the candidates of j are j < k < r).
std::int64_t rank_swap_window_end(std::int64_t j, std::int64_t free_count, float p);

/// The float P as the double of its shortest decimal form (RankSwapSummary::window_fraction).
double rank_swap_reported_fraction(float p);

/// Step 6 of §1 on the free positions [first, first + row_ids.size()) of a scan over `free_count`
/// positions: `row_ids` those positions' records (the draws' counters), `taken_before` the positions
/// >= first that earlier segments took (increasing). Returns the pairs (position, partner), partner >
/// position, in scan order, and the taken positions past the segment for the next one (increasing).
struct SegmentScan {
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::vector<std::int64_t> taken_after;
};
SegmentScan rank_swap_scan_segment(std::int64_t first, std::span<const std::int64_t> row_ids, std::int64_t free_count,
                                   float p, std::span<const std::int64_t> taken_before, RankSwapDraws& draws);

/// The reference's O(P·N²) window scan, kept for the Fenwick = scan test only: the same arguments,
/// checks, draws and result as rank_swap.
std::vector<double> rank_swap_by_scan(std::span<const double> values, std::span<const std::int64_t> row_ids,
                                      const RankSwapOptions& options, RankSwapDraws& draws);

}  // namespace sdc::swapping
