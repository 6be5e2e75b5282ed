#pragma once
// Bootstrap replicate designs and replicate summaries (docs/methods/bootstrap.md §1, §4).
//
// A replicate b is a multiplicity m_bu >= 0 for every resampling unit u. m_bu is a pure function of
// (seed, design, b, u), computable by any process for any unit without coordination, so replicates do
// not depend on how records are split over ranks and threads.
//
// Shapes:
//   fill_multiplicities           element-wise in the units (Poisson) or over a fixed tree of global unit
//                                 ranges (multinomial): no merge step; every caller computes the units it
//                                 holds and gets the bits any other caller would get
//   summarize_replicates          a pure function of the B replicate values (already merged)
//
// Designs (ReplicateScheme):
// * Poisson: m_bu ~ Poisson(1) independently, by inversion of the Poisson(1) distribution function from
//   the top 53 bits of one Philox word: word b mod 4 of counter (u, 0, floor(b / 4), 0) of StepId
//   kBootstrapReplicate, so one block serves four replicates of a unit. The
//   thresholds are integers (round(2^53 · P(X <= k)), k = 0..17, computed offline in 60-digit decimal
//   arithmetic), so the draw involves no floating point at all.
// * Multinomial (classical, and stratified): in stratum h the n_h draws are spread over its units by
//   conditional binomial splits down a fixed binary tree over leaves of kMultinomialLeafUnits units; at a
//   leaf the count is thrown uniformly onto its units. See "Multinomial tree" below.
// * Cluster: not a scheme of its own. Pass household (or PSU) ids as the unit ids: every member of a unit
//   has the unit's multiplicity because the multiplicity is a function of the unit id alone.
//
// Multinomial tree (per stratum h with units [s_h, e_h) and draws n_h):
// * leaves: L = ceil((e_h - s_h) / 4096) leaves, leaf j holds units s_h + [4096 j, min(4096 (j+1), e_h - s_h));
// * nodes: heap numbering, root 1 covers leaves [0, L); a node over leaves [lo, hi) with hi - lo >= 2
//   has children 2·id over [lo, mid) and 2·id + 1 over [mid, hi), mid = lo + ceil((hi - lo) / 2);
// * a node holding c draws gives Binomial(c, units(left) / units(node)) of them to its left child;
// * a leaf holding c draws throws each onto unit floor(word · size / 2^64) of its `size` units (one 64-bit
//   word per draw; the bias of this mapping is below size / 2^64 < 2^-52);
// * draws at a node come from counters (node id, 2^63 | h · 2^32 | i, b, 0), i = 0, 1, ... numbering
//   four-word Philox blocks; the top bit keeps them apart from the Poisson counters (u, 0, ⌊b/4⌋, 0).
// A unit's multiplicity needs the nodes on its root-to-leaf path and its leaf: O(depth + leaf) work.
//
// Binomial sampler (binomial_draw, hand-written: no exact binomial sampler is among the dependencies):
// * n·min(p, 1-p) < 10: inversion by sequential search from (1-p)^n (computed by repeated squaring) with
//   the ratio recurrence of the probability function; one uniform;
// * otherwise: Hörmann's BTRS transformed rejection with squeeze (Hörmann 1993, "The generation of
//   binomial random variates"), exact up to the accuracy of log and of the log-factorials (a table below
//   20, Stirling's series with terms to k^-7 above: error < 2e-15); two uniforms per attempt.
// Every result is a function of the counter words and IEEE arithmetic plus std::log / std::sqrt; sqrt is
// correctly rounded everywhere, log is not guaranteed to be, so two C libraries could differ only where a
// uniform falls within an ulp of an acceptance bound.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/bootstrap/quantiles.h"
#include "kernels/core/record_rng.h"

namespace sdc {

inline constexpr std::uint64_t kMultinomialLeafUnits = 4096;

enum class ReplicateScheme : std::uint8_t {
  kPoisson,      ///< m ~ Poisson(1), independent per unit (the native default at scale)
  kMultinomial,  ///< (m_u) ~ Multinomial(n_h; 1/N_h, ...) within each stratum (classical bootstrap)
};

struct ReplicateDesign {
  ReplicateScheme scheme = ReplicateScheme::kPoisson;
  std::uint64_t seed = 0;
  /// Multinomial only. The caller numbers the units so that every stratum is a contiguous range of unit
  /// ids: stratum h holds units [stratum_offsets[h], stratum_offsets[h+1]). The classical bootstrap of
  /// n units is {0, n}. (Per-unit stratum codes are turned into this by sorting the units by stratum.)
  std::vector<std::uint64_t> stratum_offsets;
  /// Multinomial only: n_h, the units drawn in stratum h; empty = each stratum's size (n_h = N_h).
  std::vector<std::uint64_t> stratum_draws;
  /// The key space of the draws: bootstrap replicates by default; a masking method that resamples
  /// (resampling_mask.h) uses its own, so that replicates never reuse a masking stream.
  StepId step = StepId::kBootstrapReplicate;

  static ReplicateDesign poisson(std::uint64_t seed) { return {ReplicateScheme::kPoisson, seed, {}, {}}; }
  /// The classical bootstrap of units 0..units-1.
  static ReplicateDesign multinomial(std::uint64_t seed, std::uint64_t units) {
    return {ReplicateScheme::kMultinomial, seed, {0, units}, {}};
  }
};

/// Throws ParameterError naming the field at fault: multinomial strata must be non-decreasing offsets with at
/// least one stratum, one draw count per stratum when given, no draws in an empty stratum, fewer than
/// 2^31 strata.
void validate_replicate_design(const ReplicateDesign& design);

/// m_bu for b in [first_replicate, end_replicate) and the given unit ids (any order, repeats allowed:
/// repeated ids get the same multiplicity). out[(b - first_replicate) · units.size() + i] is the
/// multiplicity of units[i]. Runs on the threads of the current TBB arena; the result does not depend on
/// their number. Multinomial: throws InvalidInput when a unit id lies outside the strata.
void fill_multiplicities(const ReplicateDesign& design, std::uint64_t first_replicate, std::uint64_t end_replicate,
                         std::span<const std::uint64_t> units, std::span<std::uint32_t> out);

/// One Poisson(1) multiplicity from 64 random bits (the top 53 are used).
std::uint32_t poisson1_from_bits(std::uint64_t bits);

/// Consecutive words of the Philox blocks of `base`, `base` with one counter word (`advancing`: draw,
/// or attempt for a sampler whose draw word is taken) raised by 1, by 2, ...: the words of a draw that
/// needs an unknown number of them (rejection samplers).
class CounterWords {
 public:
  CounterWords(const RecordRng& rng, const DrawCounter& base,
               std::uint64_t DrawCounter::*advancing = &DrawCounter::draw)
      : rng_(rng), counter_(base), advancing_(advancing) {}

  std::uint64_t next_word() {
    if (used_ == block_.size()) {
      block_ = rng_.bits(counter_);
      ++(counter_.*advancing_);
      used_ = 0;
    }
    return block_[used_++];
  }
  double next_uniform() { return RecordRng::uniform_from_bits(next_word()); }

 private:
  const RecordRng& rng_;
  DrawCounter counter_;
  std::uint64_t DrawCounter::*advancing_;
  RecordRng::Block block_{};
  std::size_t used_ = 4;
};

/// Binomial(trials, p) drawn from the uniforms of counters (base.unit, base.draw + i, base.replicate,
/// base.attempt), i = 0, 1, ..., four words per counter. p in [0, 1], trials < 2^53.
std::uint64_t binomial_draw(const RecordRng& rng, const DrawCounter& base, std::uint64_t trials, double p);

// ---- Summaries (bootstrap.md §4) ---------------------------------------------------------------------

struct ReplicateSummary {
  double estimate = 0.0;         ///< θ̂, the full-sample value, as given
  double mean = 0.0;             ///< mean of θ*
  double standard_error = 0.0;   ///< sd of θ* with divisor B - 1 (NaN for B < 2)
  double bias = 0.0;             ///< mean(θ*) - θ̂
  BootstrapInterval percentile;  ///< [Q(α/2), Q(1 - α/2)]
  BootstrapInterval basic;       ///< [2θ̂ - Q(1 - α/2), 2θ̂ - Q(α/2)]
  /// The order-statistic critical value t*_(⌊(1 - α)B⌋) for a test rejecting for large values
  /// (bootstrap.md §6); rank 0 (and value NaN) when B is below 1/(1 - α).
  CriticalValue critical;
  std::uint64_t replicates = 0;      ///< B: non-NaN replicate values
  std::uint64_t nan_replicates = 0;  ///< excluded from everything above
  double alpha = 0.05;
  QuantileType quantile_type = QuantileType::kType7;
};

/// Summaries of the replicate values of one statistic. Sums are exact until read (ExactSum), so the
/// result depends on the multiset of replicate values only. Throws ParameterError unless 0 < α < 1.
ReplicateSummary summarize_replicates(std::span<const double> replicates, double estimate, double alpha = 0.05,
                                      const QuantileOptions& options = {});

}  // namespace sdc
