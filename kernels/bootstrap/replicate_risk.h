#pragma once
// Bootstrap replicates of class-based disclosure risk (docs/methods/bootstrap.md §2, §3; risk.md §4-5).
//
// For every replicate b of a ReplicateDesign, from the multiplicities m_b of the records' resampling
// units: n^(b) = Σ_i m_bi; per class k, f_k^(b) = Σ_{i∈k} m_bi and F_k^(b) = Σ_{i∈k} m_bi·w_i; then the
// sample uniques (classes with f^(b) = 1), the records in classes with 0 < f^(b) < k, and the expected
// re-identifications ER^(b) = Σ_k f_k^(b)·r(f_k^(b), F_k^(b)) with the Benedetti–Franconi risk r of
// individual_risk.h (classes with f^(b) = 0 are absent from the replicate); global risk ER^(b) / n^(b).
//
// Shape (a), mergeable partials:
//   make_replicate_risk_plan   a rank's records, each class whole (the distributed composition sends
//                              every record — class key, unit id, weight — to its class's owner rank);
//                              records are put in a canonical order: by class, then unit id, then
//                              weight bits, so a class's sums do not depend on the order records arrived
//   replicate_risk_local       the plan and a replicate range -> per-replicate integer partials
//   replicate_risk_merge        adds partials of the same replicate range (associative, commutative)
//   replicate_risk_finalize    merged partials -> per-replicate statistics
// Every partial is an integer: counts, and ER as a fixed-point sum in units of 2^-64 in 128 bits (each
// class's f·r, a double, is truncated to that grid before it is added: an error below 2^-64 per class).
// Integer sums do not depend on the order or grouping of their terms, so the statistics have the same
// bits for any split of the classes over ranks and threads.
//
// Memory: the plan holds 28 bytes per record, 4 per class and 8 per distinct unit (24 more per record
// while it is built); replicate_risk_local holds the multiplicities of batch_replicates replicates at a
// time (2 bytes per distinct unit and replicate).
//
// Cluster bootstrap: pass household (or PSU) ids as the unit ids; members share their household's
// multiplicity wherever their classes live. The household risk (risk.md §5), which needs whole
// households rather than whole classes, is not provided here.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/bootstrap/replicates.h"
#include "kernels/core/error.h"
#include "kernels/risk/individual_risk.h"

namespace sdc {

/// Statistics a report may bootstrap from resampled records.
enum class BootstrappedStatistic : std::uint8_t {
  kReplicateSize,              ///< n^(b)
  kSampleUniques,              ///< classes with f = 1
  kRecordsBelowK,              ///< records in classes with f < k (k-anonymity violations)
  kExpectedReidentifications,  ///< ER = Σ f·r (Benedetti–Franconi)
  kGlobalRisk,                 ///< ER / n
  kTau1,                       ///< τ̂1, population uniques among sample uniques (model-based)
  kTau2,                       ///< τ̂2
  kSuda,                       ///< SUDA scores
};

enum class BootstrapValidity : std::uint8_t {
  kValid,  ///< the naive (resampling) bootstrap distribution is usable
  /// Uniqueness-based: a sample unique stays unique in a replicate only with probability e^-1 and
  /// duplicated records form artificial classes, so the naive bootstrap is biased (bootstrap.md §3).
  /// Report it only with a warning; the parametric bootstrap is the right tool.
  kNaive,
};

/// Whether resampling records gives a usable bootstrap distribution of `statistic`.
BootstrapValidity naive_bootstrap_validity(BootstrappedStatistic statistic);

/// A non-negative sum in units of 2^-64 held in 128 bits: adding is integer addition, exact and
/// independent of the order of the terms.
struct FixedPointSum {
  std::uint64_t high = 0;  ///< integer part
  std::uint64_t low = 0;   ///< fraction, in units of 2^-64

  /// Adds x truncated to the 2^-64 grid; x finite, 0 <= x < 2^64. Inline: it runs once per class
  /// and replicate.
  void add(double x) {
    SDC_CHECK(x >= 0.0 && x < 0x1p64, "a fixed-point term lies in [0, 2^64)");
    const auto whole_part = static_cast<std::uint64_t>(x);  // truncation = floor for x >= 0
    // x - whole is exact, and so is scaling by 2^64; the conversion truncates below 2^-64.
    const auto fraction_part = static_cast<std::uint64_t>((x - static_cast<double>(whole_part)) * 0x1p64);
    low += fraction_part;
    high += whole_part + (low < fraction_part ? 1U : 0U);
  }
  void merge(const FixedPointSum& other);
  /// high + low·2^-64, rounded to a double.
  double value() const;
  friend bool operator==(const FixedPointSum&, const FixedPointSum&) = default;
};

struct ReplicateRiskOptions {
  IndividualRiskOptions risk;         ///< method, mode, qual, weighted (false: r = 1/f, weights unused)
  std::int64_t k = 3;                 ///< records below k count classes with f^(b) < k; k >= 1
  std::size_t batch_replicates = 32;  ///< replicates whose multiplicities are held at once; >= 1
};

/// One rank's records in canonical order, ready for any number of replicates.
struct ReplicateRiskPlan {
  ReplicateRiskOptions options;
  std::vector<std::uint64_t> units;          ///< distinct resampling units, ascending
  std::vector<std::uint32_t> class_offsets;  ///< class c holds canonical records [offsets[c], offsets[c+1])
  std::vector<std::uint32_t> record_unit;    ///< per canonical record: index into units
  std::vector<double> record_weight;         ///< per canonical record (1 when unweighted)
  std::vector<double> record_unique_risk;    ///< r(1, w_i): the risk of the record alone in its class
  std::vector<double> record_twice_risk;     ///< r(2, 2·w_i): the record alone, drawn twice

  std::size_t record_count() const { return record_unit.size(); }
  std::size_t class_count() const { return class_offsets.empty() ? 0 : class_offsets.size() - 1; }
  std::size_t unit_count() const { return units.size(); }
};

/// record_class: the class of each record (any uint32 ids; each class whole on this rank; classes
/// are taken in id order); units: each record's resampling unit (record id, household id, PSU id);
/// weights: design weights, empty only when options.risk.weighted is false. Throws InvalidInput naming
/// the column at fault: unequal lengths, 2^32 or more records, weights that are not finite and
/// positive, or (native mode) below 1, where the model's F >= f fails. Throws ParameterError for k < 1 or
/// batch_replicates = 0.
ReplicateRiskPlan make_replicate_risk_plan(std::span<const std::uint32_t> record_class,
                                           std::span<const std::uint64_t> units, std::span<const double> weights,
                                           const ReplicateRiskOptions& options);

/// Per-replicate integer partials for replicates [first_replicate, first_replicate + records.size()).
struct ReplicateRiskPartial {
  std::uint64_t first_replicate = 0;
  std::vector<std::uint64_t> records;          ///< n^(b)
  std::vector<std::uint64_t> sample_uniques;   ///< classes with f^(b) = 1
  std::vector<std::uint64_t> records_below_k;  ///< Σ f^(b) over classes with 0 < f^(b) < k
  std::vector<FixedPointSum> expected;         ///< ER^(b)
  /// Full-sample uniques (classes of one record) whose record is drawn exactly once: still unique in
  /// the replicate (its class holds only its own copies). bootstrap.md §3: a fraction e^-1 under the
  /// Poisson bootstrap.
  std::vector<std::uint64_t> unique_survivors;

  std::size_t replicate_count() const { return records.size(); }
  friend bool operator==(const ReplicateRiskPartial&, const ReplicateRiskPartial&) = default;
};

/// The plan's partial for replicates [first_replicate, end_replicate) of `design`. Runs on the threads of
/// the current TBB arena; the result does not depend on their number.
ReplicateRiskPartial replicate_risk_local(const ReplicateRiskPlan& plan, const ReplicateDesign& design,
                                          std::uint64_t first_replicate, std::uint64_t end_replicate);
/// Adds `from`, a partial of the same replicate range (InternalError otherwise), to `into`.
void replicate_risk_merge(ReplicateRiskPartial& into, const ReplicateRiskPartial& from);

/// The same statistics for the full sample (every multiplicity 1), as a one-replicate partial (replicate 0).
ReplicateRiskPartial replicate_risk_full_sample(const ReplicateRiskPlan& plan);

struct ReplicateRiskSeries {
  std::uint64_t first_replicate = 0;
  std::vector<std::uint64_t> records;
  std::vector<std::uint64_t> sample_uniques;
  std::vector<std::uint64_t> records_below_k;
  std::vector<double> expected_reidentifications;  ///< ER^(b)
  std::vector<double> global_risk;                 ///< ER^(b) / n^(b); 0 when n^(b) = 0
  std::vector<std::uint64_t> unique_survivors;     ///< full-sample uniques drawn exactly once
};
ReplicateRiskSeries replicate_risk_finalize(const ReplicateRiskPartial& total);

}  // namespace sdc
