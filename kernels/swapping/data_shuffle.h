#pragma once
// Data shuffling with reverse mapping (Muralidhar & Sarathy; docs/methods swapping.md §4,
// docs/swapping.md). Each confidential variable X_j is replaced by its own values, redistributed over
// the records: (1) a perturbed value Y*_j is drawn for every record from the conditional distribution
// of the confidential variables' normal scores given the non-confidential ones S,
//   Y* = z_S·B + w·Lᵀ,  B = Σ_SS⁻¹ Σ_SX,  L Lᵀ = Σ_XX − Σ_XS Σ_SS⁻¹ Σ_SX,
// with z the normal scores Φ⁻¹(rank/(n + 1)) (average ranks for ties) and w standard normals from
// Philox (StepId::kDataShuffle, counter (row id, j/4, 0, 0)); without S, Y* = w·Lᵀ with Σ_XX the normal
// scores' covariance; (2) reverse mapping: the record holding the r-th smallest Y*_j (ties by row id)
// receives the r-th smallest original value of X_j. Marginals are kept exactly, rank correlations
// approximately, and no record keeps its value except by chance.
//
// Shape: normal_scores and reverse_map run on one whole variable (the composition gathers it);
// shuffle_map turns the merged moments of the scores (X first, then S) into B and L on every rank;
// shuffle_targets is element-wise per record.

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/numeric_columns.h"
#include "kernels/distance/whitening.h"

namespace sdc::swapping {

/// Φ⁻¹(p), the standard normal quantile, for p in (0, 1): Acklam's rational approximation refined by one
/// Halley step (on std::erfc in the lower tail, std::erf against p − 1/2 near the centre), and
/// −Φ⁻¹(1 − p) above one half, so that Φ⁻¹(p) = −Φ⁻¹(1 − p) exactly (relative error below 1e-15 for
/// p ≤ 0.4 as tested; above, that of the mirrored value).
double normal_quantile(double p);

/// Normal scores of a whole variable: Φ⁻¹(r_i/(n + 1)), r_i the rank of value i (1-based; equal values
/// share the average of their ranks). No missing values (the caller checks).
std::vector<double> normal_scores(std::span<const double> values);

/// For every record (in the order of `keys`), the value it receives: the r-th smallest of `values` goes
/// to the record of the r-th smallest key, equal keys by smaller row id. `values`, `keys` and `row_ids`
/// describe the same records.
std::vector<double> reverse_map(std::span<const double> values, std::span<const double> keys,
                                std::span<const std::int64_t> row_ids);

struct ShuffleMap {
  Eigen::MatrixXd regression;    ///< B (q × p): the conditional mean of the X scores given the S scores
  Eigen::MatrixXd noise_factor;  ///< Lᵀ (p × p)
  Eigen::RowVectorXd s_mean;     ///< the S scores' mean (0 up to rounding)
};

/// From the moments of the scores of X (first p) and S (the rest). ParameterError when the conditional
/// covariance is not positive definite (a confidential variable constant or determined by the others).
ShuffleMap shuffle_map(const distance::Moments& scores, std::size_t confidential);

/// Y* for a block: p columns. `s_scores` has q columns (none without S), `normals` p.
std::vector<std::vector<double>> shuffle_targets(const NumericColumns& s_scores, const NumericColumns& normals,
                                                 const ShuffleMap& map);

}  // namespace sdc::swapping
