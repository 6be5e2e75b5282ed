#pragma once
// Additive and correlated noise on continuous variables (docs/methods perturbation.md §2; docs/noise.md).
// Every released value is x' = x + e, the noise of a record computed from its standard normals z (p of
// them, drawn by Philox from its row id: noise_normals) and a p × p map fixed by the file's moments:
//   e = ((z − z̄) − (x − x̄)·B)·A        (row vectors)
// * additive (the reference's `additive`, unit: percent of each sd): z̄ = 0, B = 0, A = diag(pct/100 · s_j);
// * correlated (the reference's `correlated`, unit: percent of the covariance): z̄ = 0, B = 0, A = L_Σᵀ
//   with L_Σ L_Σᵀ = c·Σ, c = pct/100: e ~ N(0, cΣ) in expectation;
// * exact (Oganian & Karr): z̄ the sample mean of the z, A = L_Z^{−T} L_Σᵀ with L_Z L_Zᵀ = cov(z), so
//   the noise has sample mean exactly 0 and sample covariance exactly cΣ (to rounding); with
//   `orthogonal`, B = Σ^{−1} cov(x, z) first removes the z's regression on x, L_Z factors the
//   residuals' covariance cov(z) − cov(z, x) Σ^{−1} cov(x, z), and X and E are sample-uncorrelated:
//   cov(X + E) = (1 + c)Σ exactly.
// `restore_variance` then releases x'' = x̄ + (x' − x̄)/sqrt(1 + c), whose covariance is Σ again
// (exactly with orthogonal exact noise).
// * restore-covariance (Oganian & Karr's two-stage method, perturbation.md §3): x is a first stage's
//   output (a microaggregated file) and the noise gives back the covariance that stage took away,
//   D = Cov(original) − Cov(x), projected onto the positive semi-definite cone (restore_target). The
//   map is that of correlated noise (random: e ~ N(0, D₊)) or of exact noise (exact: sample mean 0 and
//   sample covariance exactly D₊, with `orthogonal` also uncorrelated with x, so that Cov(x + e) =
//   Cov(original) exactly when D is PSD), with L_Σ replaced by a factor F of D₊ (F Fᵀ = D₊) from its
//   eigen decomposition: D is often singular (a variable whose covariances the first stage did not
//   change, as one it left alone that is constant within the groups, has a zero row: a zero pivot),
//   and a singular matrix has no Cholesky factor.
//
// Shape: the moments of (x, z) come from distance::moments_local/merge/finalize (exact sums: the same
// bits for any split of the records); noise_map turns them into the map on every rank; apply_noise
// is element-wise per record. Divisor n − 1 throughout.

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/core/record_rng.h"
#include "kernels/distance/whitening.h"

namespace sdc::perturbation {

enum class NoiseMethod { kAdditive, kCorrelated, kExact, kRestoreCovariance, kRestoreCovarianceExact };

/// The restore-covariance methods take their target from an original file (restore_covariance_map).
bool restores_covariance(NoiseMethod method);

struct NoiseOptions {
  NoiseMethod method = NoiseMethod::kAdditive;
  /// additive: the noise sd in percent of each variable's sd (the reference's `noise`, default 150);
  /// correlated and exact: the noise covariance in percent of the covariance (c = percent/100).
  /// The restore-covariance methods do not read it.
  double percent = 150.0;
  bool orthogonal = false;        ///< exact and restore-covariance exact only
  bool restore_variance = false;  ///< correlated and exact
};

/// The records' standard normals: p columns, z_ij from Philox (`step`, counter (row id, j/4, 0, 0)), two
/// normals from each pair of words (normal_pair_from_bits). Noise draws with StepId::kNoise; data
/// shuffling (kernels/swapping/data_shuffle.h) with its own StepId.
NumericData noise_normals(std::span<const std::int64_t> row_ids, std::size_t variables, std::uint64_t seed,
                          StepId step = StepId::kNoise);

/// The columns of x, then those of z, as one block for the joint moments.
NumericColumns joint_columns(const NumericColumns& x, const NumericColumns& z);

struct NoiseMap {
  Eigen::RowVectorXd x_mean;
  Eigen::RowVectorXd z_mean;
  Eigen::MatrixXd regression;  ///< B (p × p), zero unless orthogonal
  Eigen::MatrixXd transform;   ///< A (p × p)
  double c = 0.0;  ///< the noise's covariance as a multiple of Σ (additive and restore-covariance: none, 0)
  bool restore_variance = false;
  std::vector<std::string> warnings;
};

/// The map from the moments of the joint (x, z) columns (2p variables). ParameterError when Σ or the
/// residual covariance is not positive definite where the method needs a Cholesky factor, naming why.
NoiseMap noise_map(const distance::Moments& joint, std::size_t variables, const NoiseOptions& options);

/// The noise covariance that restores an original's covariance after a first masking stage.
struct RestoreTarget {
  Eigen::MatrixXd difference;  ///< D = Cov(original) − Cov(x)
  /// D₊, what the noise's covariance is made: D itself when no eigenvalue is clipped, else
  /// S⁻¹ V Λ₊ Vᵀ S⁻¹ (below).
  Eigen::MatrixXd target;
  Eigen::MatrixXd factor;  ///< F = S⁻¹ V Λ₊^{1/2} Vᵀ: F Fᵀ = D₊ (to rounding)
  /// Of S D S, ascending, S = diag(1/s_j) with s_j the original's sd (the input's where the original's
  /// is 0, else 1): unit-free, so that the projection and the clipped mass do not depend on units.
  Eigen::VectorXd eigenvalues;
  std::size_t clipped = 0;    ///< eigenvalues below 0, set to 0
  double clipped_mass = 0.0;  ///< the sum of their magnitudes (in the unit-free scale of `eigenvalues`)
};

/// D = `original` − `input` (p × p covariances of the same variables) and its projection onto the
/// positive semi-definite cone in the scale of the original's sds: the eigenvalues of S D S below 0
/// are set to 0. The factor's square root of V Λ₊ Vᵀ is symmetric, so it does not depend on the signs
/// the solver gives the eigenvectors. D may be singular (a zero pivot): no Cholesky factor is taken.
RestoreTarget restore_target(const Eigen::MatrixXd& original, const Eigen::MatrixXd& input);

/// The map of the restore-covariance methods from the moments of the joint (x, z) columns: as
/// correlated noise (kRestoreCovariance) or exact noise (kRestoreCovarianceExact, with `orthogonal`)
/// with the factor of `target` in place of L_Σ. ParameterError when `orthogonal` meets too few
/// records or a covariance of x that is not positive definite (the regression on x needs Σ⁻¹).
NoiseMap restore_covariance_map(const distance::Moments& joint, std::size_t variables, const RestoreTarget& target,
                                const NoiseOptions& options);

/// x' (or x'') for every record of the block.
std::vector<std::vector<double>> apply_noise(const NumericColumns& x, const NumericColumns& z, const NoiseMap& map);

}  // namespace sdc::perturbation
