#pragma once
// Information loss of a masked continuous file against its original (docs/methods/utility.md §1, §2,
// §8; microaggregation.md §1): the Domingo-Ferrer & Torra battery, the sdcMicro measures IL1, IL1s,
// eigen and IL_correl, and SSE/SST on z-scores.
//
// Shape (a), mergeable partials:
//   information_loss_local     one block of records, original and masked aligned by global row id:
//                              per variable n, Σx, Σx', Σ|x − x'|, Σ(x − x')², Σ|x − x'|/|x| (x ≠ 0),
//                              the number of x = 0 cells, min and max; the p × p Σxxᵀ and Σx'x'ᵀ;
//   information_loss_merge     exact sums (ExactSum), integer counts, min and max: any split of the
//                              records and any merge order give the same bits;
//   information_loss_finalize  the coordinator's work: every p × p computation happens here, once.
//
// Conventions and choices where the sources are silent:
// * Missing values are rejected: a NaN or infinite value in either file throws InvalidInput naming the
//   variable and the row id. Records must be aligned: equal numbers of records and variables, equal
//   row ids in the same order (InvalidInput naming the first differing row id).
// * Centred moments are Σxy − ΣxΣy/n, with Σxy exact (each product enters with its rounding error)
//   and the difference evaluated in double-double, so that a large mean does not cancel a small
//   spread. A variable is constant when its minimum equals its maximum (or, beyond any realistic
//   ratio of mean to spread, its centred sum of squares rounds to 0); its centred moments are then
//   exactly 0.
// * SSE = Σ_j Σ_i (x_ij − x'_ij)²/σ_j² and SST = Σ_j Σ_i (x_ij − x̄_j)²/σ_j² with the original's
//   population moments (divisor n), so SST = n × (number of non-constant variables) exactly; constant
//   variables contribute 0 to both. il_percent = 100·SSE/SST, and 0 when every variable is constant.
// * Mean variation divides each |difference| by |original entry|; entries equal to 0 are skipped, their
//   number is reported, and the divisor is the number of entries kept (with none kept, NaN).
// * The correlation-based measures (R, RF, C, F, eigen, IL_correl) use the variables that are constant
//   in neither file (correlation_variables). PCA of the correlation matrix: eigenvalues descending,
//   components matched by rank, e'_j negated when e_jᵀe'_j < 0, λ' < 0 from rounding read as 0 for RF.
//   RF and F are weighted by w_j (default λ_j/p of the original).
// * A correlation matrix is singular when its smallest eigenvalue is at most kSingularEigenvalueRatio
//   times its largest. Then F − F' and IL_correl are NaN with `defined = false` / the singular flags
//   set (the battery stays usable: a masked file with two collinear variables is common), and eigen is
//   NaN when the original matrix is singular.
// * IL1s skips constant original variables (s_j = 0); il1s_mean divides il1s_sum by n·p.
//
// Errors: InvalidInput (misaligned blocks, missing values; fewer than two records at finalize),
// ParameterError (component weights of the wrong length or not finite), InternalError through
// SDC_CHECK (partials of different numbers of variables merged, ragged columns).

#include <cstdint>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/numeric_columns.h"

namespace sdc::utility {

inline constexpr double kSingularEigenvalueRatio = 1e-12;

/// Sums over one block of records (or the merge of several). Lower triangles are packed by rows:
/// entry (j, k), k <= j, at j (j + 1) / 2 + k.
struct InformationLossPartial {
  std::size_t variables = 0;
  std::uint64_t records = 0;
  std::vector<ExactSum> sum_original;              ///< Σx per variable
  std::vector<ExactSum> sum_masked;                ///< Σx' per variable
  std::vector<ExactSum> cross_original;            ///< Σx_j x_k, packed lower triangle
  std::vector<ExactSum> cross_masked;              ///< Σx'_j x'_k, packed lower triangle
  std::vector<ExactSum> absolute_difference;       ///< Σ|x − x'| per variable
  std::vector<ExactSum> squared_difference;        ///< Σ(x − x')² per variable
  std::vector<ExactSum> relative_difference;       ///< Σ|x − x'|/|x| over x ≠ 0, per variable
  std::vector<std::uint64_t> zero_original;        ///< number of x = 0 cells per variable
  std::vector<double> min_original, max_original;  ///< ±infinity for an empty block
  std::vector<double> min_masked, max_masked;
};

/// Local step. `original` and `masked` hold the same records (same row ids, same order) and the same
/// variables; names come from `original`.
InformationLossPartial information_loss_local(const NumericColumns& original, const NumericColumns& masked);

/// Merge step: adds `from` into `into`. A default-constructed `into` takes the shape of `from`.
void information_loss_merge(InformationLossPartial& into, const InformationLossPartial& from);

struct InformationLossOptions {
  /// w_j of the RF − RF' and F − F' rows, one per correlation variable; empty = λ_j/p of the original.
  std::vector<double> component_weights;
};

/// Mean square, mean absolute and mean variation of the differences of one pair of matrices.
struct Discrepancy {
  double mean_square = 0.0;
  double mean_absolute = 0.0;
  double mean_variation = 0.0;
  std::uint64_t entries = 0;               ///< entries compared (the divisor of the first two)
  std::uint64_t zero_entries_skipped = 0;  ///< original entries equal to 0, left out of mean_variation
  bool defined = true;                     ///< false: the matrices do not exist (all three NaN)
};

struct InformationLoss {
  std::uint64_t records = 0;
  std::size_t variables = 0;

  // SSE/SST on z-scores with the original's population moments.
  double sse = 0.0;
  double sst = 0.0;
  double il_percent = 0.0;
  std::size_t constant_variables = 0;  ///< constant in the original file

  // The Domingo-Ferrer & Torra battery.
  Discrepancy values;              ///< X − X'
  Discrepancy covariances;         ///< V − V' (divisor n − 1, i <= j)
  Discrepancy correlations;        ///< R − R' (i < j)
  Discrepancy component_loadings;  ///< RF − RF', weighted by w_j
  Discrepancy communalities;       ///< C − C' (PC1)
  Discrepancy score_coefficients;  ///< F − F', weighted by w_j
  Discrepancy means;               ///< X̄ − X̄'
  Discrepancy variances;           ///< S − S' (diagonal of V)

  // The principal component analysis behind RF, C, F, eigen and IL_correl.
  std::vector<std::size_t> correlation_variables;  ///< indices of the variables constant in neither file
  std::vector<double> eigenvalues_original;        ///< descending
  std::vector<double> eigenvalues_masked;          ///< descending
  std::vector<double> eigen_gaps_original;         ///< λ_j − λ_{j+1}: small gaps make rank matching unstable
  std::vector<double> eigen_gaps_masked;
  std::vector<double> component_weights;  ///< the w_j used
  bool original_correlation_singular = false;
  bool masked_correlation_singular = false;

  // sdcMicro measures.
  double il1 = 0.0;  ///< Σ 100·|x − x'|/|x| (a sum; x = 0 cells dropped)
  double il1s_sum = 0.0;
  double il1s_mean = 0.0;
  double eigen = 0.0;      ///< Σ|λ − λ'|/λ; NaN when the original correlation matrix is singular
  double il_correl = 0.0;  ///< NaN when either correlation matrix is singular
};

/// Finalize step: needs at least two records in total.
InformationLoss information_loss_finalize(const InformationLossPartial& total,
                                          const InformationLossOptions& options = {});

/// SSE/SST alone (what a microaggregation report states), in the same shape: the battery's sse, sst,
/// il_percent and constant_variables bit for bit, from a third of its sums (per variable Σx, Σx²,
/// Σ(x − x')², and the original's min and max; no cross products, nothing of the masked file alone).
struct SumOfSquaresPartial {
  std::size_t variables = 0;
  std::uint64_t records = 0;
  std::vector<ExactSum> sum_original;        ///< Σx per variable
  std::vector<ExactSum> square_original;     ///< Σx² per variable, each product with its rounding error
  std::vector<ExactSum> squared_difference;  ///< Σ(x − x')² per variable
  std::vector<double> min_original, max_original;
};

struct SumOfSquares {
  std::uint64_t records = 0;
  double sse = 0.0;
  double sst = 0.0;
  double il_percent = 0.0;
  std::size_t constant_variables = 0;
};

/// Local step; the same alignment rules and errors as information_loss_local.
SumOfSquaresPartial sum_of_squares_local(const NumericColumns& original, const NumericColumns& masked);
void sum_of_squares_merge(SumOfSquaresPartial& into, const SumOfSquaresPartial& from);
/// Finalize step: needs at least two records in total.
SumOfSquares sum_of_squares_finalize(const SumOfSquaresPartial& total);

}  // namespace sdc::utility
