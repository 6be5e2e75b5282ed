#pragma once
// Information loss of masked categorical variables against their originals (docs/methods utility.md
// §3, §4, §6, §8): the direct comparison of categories, CTBIL over every table of up to K variables
// with the distances of table_distance.h, the entropy-based EBIL and the per-record PRIL, and the
// Shlomo & Young measures of a two-way table.
//
// Shape (a), mergeable partials that are dense tables of integer counts:
//   count_table_cells      one block of records -> the counts of one table's cells (row-major over its
//                          axes, the last axis fastest);
//   merge_table_cells      element-wise integer addition: any split of the records and any merge order
//                          give the same counts;
// then finishing functions on the merged tables (the same bits on every rank that runs them):
//   compare_categories     a variable's cross-tabulation original × masked -> direct distance, records
//                          changed, EBIL and IL = Σ_r PRIL from the observed transitions;
//   compare_tables         one table of each file -> Σ|x − x'| (its CTBIL term) and the distances of
//                          table_distance.h; ctbil adds the terms of all tables;
//   shlomo_young_measures  a two-way table rows × columns of each file -> the §6 measures;
//   signed_rank_test       the cells of the two tables -> the Wilcoxon signed-rank bias test of
//                          D_pert − D_orig (shlomo_young_measures reports it too).
// And functions on given figures rather than records: backward_probabilities, entropy_based_loss and
// summed_record_loss (EBIL and PRIL from a known transition matrix P and original counts T, as PRAM
// knows them), cramers_v, impute_suppressed_cells (§6's imputation of suppressed cells before a loss
// is computed) and exact_binomial_test (§6's bias test of rounding directions). The imputation and
// the binomial test serve table protection (a table with suppressed or rounded cells against its
// original); `sdc utility` compares files of records, which have neither.
//
// Categories. A compared variable's categories are its original levels (in code order), then the
// labels of the masked file that the original lacks (a recoding's new categories), matched by label
// (match_categories); the missing code is a category of its own, category 0, so a local suppression
// moves a record between two cells (CTBIL = 2 per suppression on a one-way table). Every table is
// dense over the product of its axes' categories and refused beyond kMaxTableCells.
//
// Conventions where the sources are silent or in error (docs/utility.md lists them):
// * Ordinal distance, native: |rank(c) − rank(c')|/(|D| − 1), ranks in original code order, |D| the
//   original levels (0 when |D| = 1); printed (OrdinalDistance::kPrinted): the number of categories
//   from min(c, c') to max(c, c') over |D|, so d(c, c) = 1/|D| as printed. One side missing: 1 (the
//   largest distance); both missing: 0.
// * PRIL: the text's −ln P(V = i | V' = j) (RecordLossForm::kText, default), or the printed formula's
//   −ln P(V' = j | V = i) (kPrinted). From observed transitions N_kl, P(V = k | V' = l) = N_kl/N_.l
//   and P(V' = l | V = k) = N_kl/N_k.; EBIL = Σ_l N_.l H(V | V' = l) then equals the text IL exactly.
// * Shlomo & Young: rows are those with a positive count in either file; n_k is the number of
//   columns; RAD skips original zero cells and counts them; entropies are −Σ p ln p per row (the
//   relative change does not depend on the sign); Cramér's V over the rows and columns with positive
//   margins, divisor min(R − 1, C − 1); rank distortion with 20 quantile groups and a 20 % threshold;
//   RAT and AT over the compared rows, RAT skipping (and counting) rows with N_orig = 0; BVR with
//   P^k(c) = D_k(c)/(row total) over each file's rows with a positive total, P(c) the overall
//   proportion; LR of the independence model rows × columns, whose fit is closed-form (IPF stops after
//   one cycle); the signed-rank test over every cell, zero differences dropped.
//
// Errors: ParameterError (a grid beyond kMaxTableCells, mismatched figures of the given-figure
// functions, no records), InternalError through SDC_CHECK (ragged axes, codes outside their levels).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/utility/table_distance.h"

namespace sdc::utility {

/// The most cells of one dense table (per file): 2^24, 128 MiB of counts for the two files' tables.
inline constexpr std::uint64_t kMaxTableCells = std::uint64_t{1} << 24;
/// Rank distortion (Shlomo & Young): the quantile groups of each column, and the share of cells that
/// change group beyond which a column counts as distorted (percent).
inline constexpr std::uint64_t kRankGroups = 20;
inline constexpr double kRankChangeThresholdPercent = 20.0;

// ---- categories and tables ----

/// The categories of one compared variable: 0 = missing, 1..original_levels = the original's levels
/// in code order, then the masked file's labels the original lacks, in masked code order.
struct CategoryDomain {
  std::uint32_t categories = 1;                  ///< missing included
  std::uint32_t original_levels = 0;             ///< |D|: the ordered categories of an ordinal variable
  std::vector<std::int32_t> original_category;   ///< [code + 1]: the category of an original code
  std::vector<std::int32_t> masked_category;     ///< [code + 1]: the category of a masked code
  std::vector<std::uint32_t> masked_only_codes;  ///< masked codes whose labels the original lacks
};

/// Matches the masked levels to the original ones by label.
CategoryDomain match_categories(std::span<const std::string> original_levels,
                                std::span<const std::string> masked_levels);

/// How one file's variable enters a table: its codes (kMissingCode = −1 .. levels − 1) and the category
/// of each code (a CategoryDomain's original_category or masked_category).
struct TableAxis {
  std::span<const std::int32_t> codes;
  std::span<const std::int32_t> category_of_code;  ///< [code + 1]
  std::uint32_t categories = 0;
};

/// The cells of a table over axes of these category counts, saturating at UINT64_MAX.
std::uint64_t grid_cells(std::span<const std::uint32_t> categories);

/// Local step: the counts of the table's cells over one block of records (all axes equally long).
/// Runs on the threads of the current TBB arena; integer counts, so their number changes nothing.
/// Throws ParameterError beyond kMaxTableCells cells.
std::vector<std::uint64_t> count_table_cells(std::span<const TableAxis> axes);

/// Merge step: element-wise addition of two tables of the same cells.
void merge_table_cells(std::vector<std::uint64_t>& into, std::span<const std::uint64_t> from);

// ---- §3: one variable, original × masked ----

enum class CategoricalScale { kNominal, kOrdinal };
enum class OrdinalDistance { kRank, kPrinted };
enum class RecordLossForm { kText, kPrinted };

struct CategoryComparisonOptions {
  CategoricalScale scale = CategoricalScale::kNominal;
  OrdinalDistance ordinal_distance = OrdinalDistance::kRank;
  RecordLossForm record_loss_form = RecordLossForm::kText;
  /// |D| of an ordinal variable: the categories 1..ordered_categories are ranked; a pair outside them
  /// (but missing) is an InternalError (the caller refuses an ordinal variable with masked-only labels).
  std::uint32_t ordered_categories = 0;
};

/// d(c, c') between categories of a CategoryDomain (0 = missing).
double category_distance(std::uint32_t original, std::uint32_t masked, const CategoryComparisonOptions& options);

struct CategoryComparison {
  std::uint64_t records = 0;
  std::uint64_t records_changed = 0;  ///< original category ≠ masked category (missing included)
  std::uint64_t missing_original = 0;
  std::uint64_t missing_masked = 0;
  double mean_distance = 0.0;     ///< Σ_r d(c_r, c'_r)/records
  double ebil = 0.0;              ///< Σ_r H(V | V' = j_r), backward probabilities from the transitions
  double information_loss = 0.0;  ///< IL = Σ_r PRIL(i_r, j_r) in the options' form
};

/// Finishing step of a variable: `cross_tabulation` is categories × categories, row = original
/// category, column = masked category. Throws ParameterError when it holds no record.
CategoryComparison compare_categories(std::span<const std::uint64_t> cross_tabulation, std::uint32_t categories,
                                      const CategoryComparisonOptions& options);

// ---- §3: EBIL and PRIL from given figures ----

/// P(V = k | V' = l) for k < original_categories, l < masked_categories, row-major.
struct BackwardProbabilities {
  std::size_t original_categories = 0;
  std::size_t masked_categories = 0;
  std::vector<double> probability;  ///< NaN in a column no original category reaches
  double at(std::size_t k, std::size_t l) const { return probability[k * masked_categories + l]; }
};

/// From a transition matrix p_kl = P(V' = l | V = k) (original_categories × masked_categories,
/// row-major; a recoding is a matrix of 0 and 1) and the original counts T:
/// p_kl T_k / Σ_m p_ml T_m. Throws ParameterError when the sizes disagree or a figure is negative or
/// not finite.
BackwardProbabilities backward_probabilities(std::span<const double> transition, std::size_t masked_categories,
                                             std::span<const double> original_counts);
/// From observed transition counts N_kl: N_kl / Σ_m N_ml.
BackwardProbabilities backward_probabilities(std::span<const std::uint64_t> transition_counts,
                                             std::size_t masked_categories);

/// H(V | V' = l) = −Σ_k P(V = k | V' = l) ln P(V = k | V' = l) per masked category (NaN where the
/// column is NaN).
std::vector<double> conditional_entropies(const BackwardProbabilities& backward);

/// EBIL = Σ_l masked_counts[l]·H(V | V' = l): Σ over the masked records. A category with no masked
/// record adds nothing; one with records and no backward probabilities is a ParameterError.
double entropy_based_loss(const BackwardProbabilities& backward, std::span<const double> masked_counts);

/// IL = Σ_kl counts[k, l]·(−ln probabilities[k, l]) over the pairs with counts > 0: the sum of PRIL over
/// records with original k and masked l. `probabilities` are backward (the text's PRIL) or the
/// transition matrix (the printed PRIL). +inf when a pair with records has probability 0.
double summed_record_loss(std::span<const double> probabilities, std::span<const double> counts);

// ---- §3: CTBIL ----

/// The subsets of {0..variables − 1} of sizes 1..order, by size, then lexicographically.
std::vector<std::vector<std::size_t>> table_subsets(std::size_t variables, std::size_t order);

struct TableComparison {
  std::uint64_t cells = 0;
  std::uint64_t absolute_difference = 0;  ///< Σ_cells |x^F − x^G|: the table's CTBIL term
  TableDistances distances;               ///< of the cell proportions (table_distance.h)
};

/// Finishing step of one table: the same cells of the original and of the masked file, neither empty.
TableComparison compare_tables(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked);

struct Ctbil {
  std::uint64_t tables = 0;
  std::uint64_t cells = 0;  ///< over all tables
  std::uint64_t value = 0;  ///< CTBIL(F, G; W, K) = Σ_tables Σ_cells |x^F − x^G|
  double normalised = 0.0;  ///< value / cells
};
Ctbil ctbil(std::span<const TableComparison> tables);

// ---- §6: Shlomo & Young measures of a two-way table ----

struct Association {
  double chi_square = 0.0;    ///< Σ (o − e)²/e, e = n_i. n_.j / n, over positive margins
  double cramers_v = 0.0;     ///< sqrt((χ²/n)/min(R − 1, C − 1)); NaN when min(R − 1, C − 1) = 0
  std::uint64_t rows = 0;     ///< R: rows with a positive margin
  std::uint64_t columns = 0;  ///< C: columns with a positive margin
};
/// χ² and Cramér's V of a rows × columns table of counts (row-major).
Association cramers_v(std::span<const double> table, std::size_t rows, std::size_t columns);

/// The Wilcoxon signed-rank test of the differences D_pert − D_orig of a table's cells: zero
/// differences dropped, average ranks of |d| for ties, the normal approximation with tie and
/// continuity corrections.
struct SignedRankTest {
  std::uint64_t differences = 0;  ///< n: the cells whose difference is not 0
  double w_plus = 0.0;            ///< W+: the sum of the ranks of the positive differences
  double z = 0.0;                 ///< (W+ − n(n + 1)/4 − ½·sign)/σ; NaN when n = 0
  double p_value = 0.0;           ///< two-sided, erfc(|z|/√2); NaN when n = 0
};

/// The test of the differences masked − original of the same cells. Memory: one entry per distinct
/// |difference|, never a copy of the cells.
SignedRankTest signed_rank_test(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked);

/// What the Shlomo & Young measures need beyond the two tables.
struct ShlomoYoungOptions {
  /// C′ of RAT and AT: the columns whose counts add up to N_k, each once; empty: every column (the
  /// row total).
  std::vector<std::size_t> total_columns;
  /// The target column c of BVR; none: BVR is not computed (its figures are NaN).
  std::optional<std::size_t> target_column;
};

struct ShlomoYoung {
  std::uint64_t rows = 0;                  ///< the grid's rows (combinations of the row variables)
  std::uint64_t columns = 0;               ///< cells per row, n_k (combinations of the column variables)
  std::uint64_t rows_compared = 0;         ///< n_r: rows with a positive count in either file
  double hellinger = 0.0;                  ///< HD, on raw counts
  double relative_absolute = 0.0;          ///< RAD over the cells with D_orig > 0
  std::uint64_t zero_cells_skipped = 0;    ///< cells with D_orig = 0, left out of RAD
  double average_absolute = 0.0;           ///< AAD
  double average_variance_original = 0.0;  ///< AV: mean over rows of V(D^k), divisor n_k − 1
  double average_variance_masked = 0.0;
  double relative_average_variance = 0.0;  ///< RAV, percent
  double cramers_v_original = 0.0;
  double cramers_v_masked = 0.0;
  double relative_cramers_v = 0.0;  ///< RCV, percent
  double entropy_original = 0.0;    ///< ENT = Σ_k −Σ_c p ln p
  double entropy_masked = 0.0;
  double relative_entropy = 0.0;             ///< ENTT, percent
  std::uint64_t rank_distorted_columns = 0;  ///< columns with RC > kRankChangeThresholdPercent
  double mean_rank_change = 0.0;             ///< mean RC over the columns, percent
  std::uint64_t small_cells = 0;             ///< original count 1 or 2
  std::uint64_t small_cells_unchanged = 0;   ///< of those, the masked count is the same
  double small_cells_unchanged_percent = 0.0;
  std::uint64_t total_columns = 0;            ///< |C′|: the columns of N_k
  double relative_absolute_total = 0.0;       ///< RAT = Σ_k |N_pert − N_orig|/N_orig over rows with N_orig > 0
  std::uint64_t zero_total_rows_skipped = 0;  ///< compared rows with N_orig = 0, left out of RAT
  double absolute_total = 0.0;                ///< AT = Σ_k |N_pert − N_orig|/n_r
  double between_variance_original = 0.0;     ///< BV = Σ_k (P^k(c) − P(c))²/(rows − 1); NaN without a target
  double between_variance_masked = 0.0;
  double between_variance_ratio = 0.0;               ///< BVR = BV_pert/BV_orig
  std::uint64_t between_variance_rows_original = 0;  ///< rows with a positive total in the original
  std::uint64_t between_variance_rows_masked = 0;
  double likelihood_ratio_original = 0.0;  ///< L² = 2 Σ o ln(o/ê) of independence, ê = o_k. o_.c/n
  double likelihood_ratio_masked = 0.0;
  double likelihood_ratio = 0.0;  ///< LR = L²_pert/L²_orig
  SignedRankTest bias;            ///< D_pert − D_orig over every cell
};

/// Finishing step: `original` and `masked` are rows × columns tables (row-major) of the two files.
/// A figure a measure does not define (no columns to vary, a zero denominator) is NaN. Throws
/// ParameterError when both tables are empty or an option names a column outside the table (or one
/// of C′ twice).
ShlomoYoung shlomo_young_measures(std::span<const std::uint64_t> original, std::span<const std::uint64_t> masked,
                                  std::size_t rows, std::size_t columns, const ShlomoYoungOptions& options = {});

// ---- §6: bias test of rounding ----

/// H0 of base-3 random rounding: a cell is rounded to the nearer multiple with probability 2/3.
inline constexpr double kRoundingNearerProbability = 2.0 / 3.0;

/// The exact binomial test of `successes` in `trials` against P(success) = `probability`: the
/// two-sided p-value Σ P(i) over the outcomes i with P(i) ≤ P(successes)·(1 + 10⁻⁷) (R's
/// binom.test), at most 1; 1 when there are no trials. For rounded tables: the successes are the
/// cells rounded to the nearer multiple. O(trials) time. Throws ParameterError when successes >
/// trials or the probability is not in (0, 1).
double exact_binomial_test(std::uint64_t successes, std::uint64_t trials,
                           double probability = kRoundingNearerProbability);

// ---- §6: suppressed cells ----

enum class SuppressedCellImputation {
  kZero,            ///< a suppressed cell is 0
  kRowAverage,      ///< (m_k. − Σ unsuppressed)/#suppressed in each suppressed cell
  kColumnWeighted,  ///< m_k. − Σ unsuppressed shared in proportion to the column weights w_j ∝ m_.j
};

/// One row of a table with suppressed cells: `row` holds the published values (those of suppressed
/// cells are ignored), `suppressed[j]` != 0 marks cell j, `row_total` is the published m_k., and
/// `column_weights` (kColumnWeighted only) the column averages m_.j/n_r or any multiple of them.
/// Returns the row with every suppressed cell imputed. When the weights of the suppressed cells add up
/// to 0, the column-weighted imputation shares equally (the row average). A row total below the
/// unsuppressed cells' sum gives negative imputations: the caller's tables must be consistent.
std::vector<double> impute_suppressed_cells(std::span<const double> row, std::span<const std::uint8_t> suppressed,
                                            double row_total, SuppressedCellImputation method,
                                            std::span<const double> column_weights = {});

}  // namespace sdc::utility
