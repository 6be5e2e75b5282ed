#pragma once
// The transforms that turn every linkage distance but the kernel into plain Euclidean distance on
// transformed coordinates (docs/methods/linkage.md §2–3): standardisation with a file's own moments or
// with another file's, DBRL2 scaling by the sd of aligned differences, Mahalanobis whitening by the
// Cholesky factor of Var(A − B) (COV) or Var(A) + Var(B) (COV0).
//
// Shape (a) for the moments: `moments_local` (or `moments_difference_local` for the aligned A − B)
// on a block of records, `moments_merge`, `moments_finalize`. Sums and cross-products are exact
// (ExactSum) and the finalisation rounds n·Σxy − Σx·Σy once from its exact value, so means and
// covariances have the same bits for any split of the records and any merge order, and do not lose
// digits to cancellation when a mean is large against its spread. The transforms themselves are
// element-wise: one record's coordinates depend on that record and the finalized moments alone.
//
// Divisor: covariances and standard deviations divide by n − 1 (the sample convention of the
// reference's sd, shared with interval disclosure). Nearest neighbours do not depend on it: it scales
// every distance by the same factor. Missing values are rejected (require_complete).

#include <Eigen/Core>

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/distance/pairwise_tiles.h"

namespace sdc::distance {

struct MomentsPartial {
  std::int64_t count = 0;
  std::vector<ExactSum> sums;            ///< Σ x_j
  std::vector<ExactSum> cross_products;  ///< Σ x_j x_k for k ≤ j, row by row of the lower triangle
};

struct Moments {
  std::int64_t count = 0;
  Eigen::VectorXd mean;
  Eigen::MatrixXd covariance;  ///< divisor n − 1
  /// Square roots of the diagonal.
  std::vector<double> standard_deviations() const;
};

MomentsPartial moments_local(const NumericColumns& columns);
/// Moments of the aligned differences original − masked, record by record (same length and row ids:
/// the caller checks the alignment).
MomentsPartial moments_difference_local(const NumericColumns& original, const NumericColumns& masked);
void moments_merge(MomentsPartial& into, const MomentsPartial& from);
/// ParameterError with fewer than two records.
Moments moments_finalize(const MomentsPartial& total);

/// (n Σxy − Σx Σy) / (n (n − 1)) rounded once from its exact value.
double exact_covariance(std::int64_t count, const ExactSum& sum_x, const ExactSum& sum_y, const ExactSum& sum_xy);

/// (x_j − shift_j) / scale_j for every value. A zero scale (a constant variable) is taken as 1: the
/// variable is then centred but not scaled, since it cannot rank neighbours within its own file.
PointSet shift_and_scale(const NumericColumns& columns, std::span<const double> shift, std::span<const double> scale);
/// z-scores with the columns' own mean and sd (DBRL1).
PointSet standardise_own(const NumericColumns& columns);
/// z-scores with given moments, e.g. those of the original file for both files (DBRL1 `common`).
PointSet standardise_with(const NumericColumns& columns, const Moments& moments);
/// DBRL2: σ_j, the sd of the aligned differences V_j^A − V_j^B; both files are divided by it (after
/// subtracting a common shift, which leaves every distance unchanged and keeps the screening tight).
std::vector<double> difference_scales(const Moments& difference_moments);

/// x̃ = L⁻¹ (x − shift) with S + ε·tr(S)/p·I = L Lᵀ.
struct Whitening {
  Eigen::MatrixXd lower;  ///< L
  Eigen::VectorXd shift;
  double epsilon = 0.0;  ///< 0 when S itself is positive definite
};

/// Factors `covariance`. S counts as positive definite when Eigen's LLT succeeds and every squared
/// pivot exceeds 1e−12·tr(S)/p (a rounded pivot of a singular S is tiny but positive and would blow
/// one direction up); otherwise ε·tr(S)/p·I is added with ε = 1e−10, doubling until it is.
/// ParameterError when tr(S) is not positive (every variable constant).
Whitening whitening_finalize(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& shift);
/// Forward substitution per record, serially: the same bits for a record in any block.
PointSet whiten(const NumericColumns& columns, const Whitening& whitening);

}  // namespace sdc::distance
