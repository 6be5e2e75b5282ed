#pragma once
// Data swapping as a risk–utility decision (Karr & Sanil; docs/methods swapping.md §3,
// docs/swapping.md "sdc swap frontier"). A candidate release swaps the values of some attributes A
// between ⌊s·n/2⌋ disjoint random pairs of records; its disclosure risk DR is the share of unswapped
// records that sit in cells of count 1 or 2 of the swapped table over all the release's attributes,
// its data utility DU minus a distance between the tables before and after (Hellinger, total
// variation, entropy change) or the change of the log-likelihood under a log-linear model of the
// original table. The frontier is the set of undominated (DR, DU) points.
//
// Shape, in the order the composition (distributed/compose/karr_sanil.h) runs it:
//   make_release_table        the merged table over the attributes (cells in the data's codes) -> dense levels
//   selection_key             per record and replicate: the Philox key whose 2m smallest values select it
//   make_swap_selection       the selected records of one replicate, in key order, as table levels
//   pair_selected             the first 2m selected records -> pairs (consecutive, or within strata)
//   evaluate_release          one candidate (attributes, pairs) on the table: DR, distances, log-likelihood
//   undominated_points        the frontier of (risk, utility) points
// A candidate's figures depend on the data only through the table and its selection, so every rank
// that holds them computes the same numbers; candidates are independent tasks.

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kernels/risk/frequency_count.h"
#include "kernels/risk/loglinear.h"
#include "kernels/utility/table_distance.h"

namespace sdc::swapping {

/// The contingency table over the release's attributes. Each attribute's observed codes (the missing
/// code included when a record has it) are renumbered 0..L−1 in increasing order, so the order of
/// cells is that of the data's codes.
struct ReleaseTable {
  std::size_t attribute_count = 0;
  std::vector<std::int32_t> level_counts;                ///< L_j, the observed levels of attribute j
  std::vector<std::vector<std::int32_t>> level_of_code;  ///< [j][code + 1] -> level, −1 when unobserved
  std::vector<std::vector<std::int32_t>> code_of_level;  ///< [j][level] -> the data's code
  std::vector<std::int32_t> cells;                       ///< sorted level tuples, attribute_count each
  std::vector<std::int64_t> counts;                      ///< records per cell, >= 1
  std::int64_t total = 0;

  std::size_t cell_count() const { return counts.size(); }
  std::span<const std::int32_t> cell(std::size_t c) const {
    return std::span<const std::int32_t>(cells).subspan(c * attribute_count, attribute_count);
  }
  /// The index of the cell with `levels`, or none.
  std::optional<std::size_t> find(std::span<const std::int32_t> levels) const;
};

/// From the merged classes over the attributes (codes as in the data, sorted, counts >= 1).
ReleaseTable make_release_table(const FrequencyClasses& classes, std::span<const std::int32_t> code_counts);

/// ⌊rate·records/2⌋ pairs, the product taken as whole when within 1e-9 relative of the next integer
/// (so that a rate written in decimals, 0.05 of 200 000, gives its whole number).
std::int64_t pairs_for_rate(double rate, std::int64_t records);

/// The selection key of a record in replicate `replicate`: word 0 of Philox (StepId::kKarrSanilSelection)
/// at counter (row id, 0, replicate, 0). A replicate's selected records are those of the 2m smallest
/// (key, row id).
std::uint64_t selection_key(std::uint64_t seed, std::uint64_t replicate, std::int64_t row_id);

/// One replicate's selected records, in increasing (key, row id).
struct SwapSelection {
  std::size_t attribute_count = 0;
  std::size_t within_count = 0;  ///< stratum codes after the attributes (the --within variables)
  std::vector<std::int64_t> row_ids;
  std::vector<std::int32_t> levels;  ///< per record: attribute levels (ReleaseTable), then stratum codes
  std::vector<std::uint32_t> cells;  ///< per record: its cell of the table, found once for every candidate

  std::size_t size() const { return row_ids.size(); }
  std::span<const std::int32_t> attributes(std::size_t i) const {
    return std::span<const std::int32_t>(levels).subspan(i * (attribute_count + within_count), attribute_count);
  }
  std::span<const std::int32_t> stratum(std::size_t i) const {
    return std::span<const std::int32_t>(levels).subspan(i * (attribute_count + within_count) + attribute_count,
                                                         within_count);
  }
};

/// One selected record as gathered: its key, row id and codes (attributes, then strata) as in the data.
struct SelectedRecord {
  std::uint64_t key = 0;
  std::int64_t row_id = 0;
  std::vector<std::int32_t> codes;
};

/// Sorts `records` by (key, row id), keeps the first `wanted` and turns their attribute codes into
/// table levels. InvalidInput when a record's code is not in the table (the table and the records do
/// not come from the same data).
SwapSelection make_swap_selection(std::vector<SelectedRecord> records, std::size_t wanted, const ReleaseTable& table,
                                  std::size_t within_count);

/// The pairs of a release of `pairs_wanted` pairs: the first 2·pairs_wanted selected records, paired in
/// key order, (0, 1), (2, 3), …; with strata (within_count > 0), records are paired in key order
/// within their stratum and a stratum's odd record is left unpaired. Indices into the selection.
std::vector<std::pair<std::uint32_t, std::uint32_t>> pair_selected(const SwapSelection& selection,
                                                                   std::int64_t pairs_wanted);

/// The log-linear utility's baseline: M*, chosen on (or given for) the original table, its fit to the
/// original table and L(D_pre) = Σ_cells n ln(m̂/N).
struct LogLinearBaseline {
  LogLinearModelSpec model;  ///< canonical, on the table's levels
  LogLinearFit fit;          ///< to the original table
  double log_likelihood = 0.0;
  bool refit = true;  ///< DU_llm fits M* again to each swapped table (false: keeps the original's fit)
};
LogLinearBaseline make_loglinear_baseline(const ReleaseTable& table, const LogLinearModelSpec& model, bool refit,
                                          const LogLinearFitOptions& options = {});

struct ReleaseOptions {
  /// A record of a pair whose attribute values did not change (its partner had the same values of A)
  /// counts as unswapped (swapping.md §3, "option").
  bool unchanged_count_as_unswapped = false;
};

struct ReleaseEvaluation {
  std::int64_t pairs = 0;
  std::int64_t swapped_records = 0;  ///< records in a pair
  std::int64_t changed_records = 0;  ///< of those, records whose cell changed
  std::int64_t unswapped_records = 0;
  std::int64_t unswapped_in_small_cells = 0;  ///< unswapped records in cells of count 1 or 2 after the swap
  double disclosure_risk = 0.0;               ///< DR = unswapped_in_small_cells / unswapped_records
  utility::TableDistances distances;          ///< original table against the swapped one
  /// DU_llm = L_{M*}(D_post) − L_{M*}(D_pre); NaN without a baseline, −inf when a swapped cell has
  /// m̂ = 0 under the original's fit.
  double loglinear_utility = 0.0;
};

/// One candidate release: the pairs swap the attributes `swap_attributes` (indices into the table's
/// attributes). O(cells + pairs · log cells); the baseline may be null.
ReleaseEvaluation evaluate_release(const ReleaseTable& table, const SwapSelection& selection,
                                   std::span<const std::pair<std::uint32_t, std::uint32_t>> pairs,
                                   std::span<const std::size_t> swap_attributes, const ReleaseOptions& options,
                                   const LogLinearBaseline* baseline, const LogLinearFitOptions& fit_options = {});

/// DR of the original table: the share of records in cells of count 1 or 2.
double original_disclosure_risk(const ReleaseTable& table);

struct RiskUtilityPoint {
  double risk = 0.0;
  double utility = 0.0;
};

/// The undominated points (swapping.md §3): sorted by risk ascending then utility descending, a point
/// is kept iff its utility is the largest among the points of its risk and exceeds the best utility of
/// every point of smaller risk; identical points are all kept; a point with a NaN coordinate never is. Indices in
/// frontier order (risk ascending, then input order). O(m log m).
std::vector<std::size_t> undominated_points(std::span<const RiskUtilityPoint> points);

/// The point of largest utility among those with risk <= bound (ties: smaller risk, then the first),
/// or none.
std::optional<std::size_t> best_under_risk_bound(std::span<const RiskUtilityPoint> points, double bound);

}  // namespace sdc::swapping
