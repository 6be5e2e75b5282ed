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

enum class NoiseMethod { kAdditive, kCorrelated, kExact };

struct NoiseOptions {
  NoiseMethod method = NoiseMethod::kAdditive;
  /// additive: the noise sd in percent of each variable's sd (the reference's `noise`, default 150);
  /// correlated and exact: the noise covariance in percent of the covariance (c = percent/100).
  double percent = 150.0;
  bool orthogonal = false;        ///< exact only
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
  double c = 0.0;              ///< the noise's covariance as a multiple of Σ (additive: none, 0)
  bool restore_variance = false;
  std::vector<std::string> warnings;
};

/// The map from the moments of the joint (x, z) columns (2p variables). ParameterError when Σ or the
/// residual covariance is not positive definite where the method needs a Cholesky factor, naming why.
NoiseMap noise_map(const distance::Moments& joint, std::size_t variables, const NoiseOptions& options);

/// x' (or x'') for every record of the block.
std::vector<std::vector<double>> apply_noise(const NumericColumns& x, const NumericColumns& z, const NoiseMap& map);

}  // namespace sdc::perturbation
