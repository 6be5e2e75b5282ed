#include "kernels/perturbation/noise.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <cmath>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::perturbation {
namespace {

/// L with L Lᵀ = s, or ParameterError naming `what` and ending in `remedy`.
Eigen::MatrixXd cholesky(const Eigen::MatrixXd& s, const std::string& what,
                         const std::string& remedy = "drop or recode it, or use --model additive") {
  Eigen::LLT<Eigen::MatrixXd> llt(s);
  const Eigen::MatrixXd lower = llt.matrixL();
  bool positive = llt.info() == Eigen::Success;
  // Each pivot against its own variable's variance, so that the verdict does not depend on units: a
  // rounded pivot of a variable that is a linear function of others is tiny against its variance.
  for (Eigen::Index k = 0; positive && k < lower.rows(); ++k)
    positive = s(k, k) > 0.0 && lower(k, k) * lower(k, k) > 1e-12 * s(k, k);
  if (!positive)
    throw ParameterError(
        what + " is not positive definite (a constant variable, or one a linear function of others); " + remedy);
  return lower;
}

/// Completes `map` (means set, regression zero) for noise whose covariance target is F Fᵀ, F = `factor`:
/// correlated draws A = Fᵀ, or exact moments A = L_Z^{−T} Fᵀ (after the regression on x with
/// `orthogonal`). `check_x` verifies that Σ is positive definite before the regression solves with it
/// (correlated and exact noise have verified it already by factoring cΣ).
void complete_map(NoiseMap& map, const distance::Moments& joint, std::size_t variables, const Eigen::MatrixXd& factor,
                  bool exact, bool orthogonal, bool check_x) {
  const auto p = static_cast<Eigen::Index>(variables);
  if (!exact) {
    map.transform = factor.transpose();
    return;
  }
  map.z_mean = joint.mean.tail(p).transpose();
  Eigen::MatrixXd szz = joint.covariance.bottomRightCorner(p, p);
  if (orthogonal) {
    if (joint.count <= 2 * static_cast<std::int64_t>(variables))
      throw ParameterError("--orthogonal regresses the noise on the variables: it needs more than 2p = " +
                           std::to_string(2 * variables) + " records, the file has " + std::to_string(joint.count));
    const Eigen::MatrixXd sxx = joint.covariance.topLeftCorner(p, p);
    if (check_x)
      cholesky(sxx, "the covariance matrix of the input's variables",
               "--orthogonal regresses the noise on them: leave it out, or drop or recode the variable");
    const Eigen::MatrixXd sxz = joint.covariance.topRightCorner(p, p);
    map.regression = sxx.llt().solve(sxz);
    szz -= sxz.transpose() * map.regression;
    szz = (szz + szz.transpose()) / 2.0;
  }
  const Eigen::MatrixXd lower_z = cholesky(szz, "the covariance matrix of the records' normal draws");
  // A = L_Z^{-T} Fᵀ: solve L_Zᵀ A = Fᵀ.
  map.transform = lower_z.transpose().triangularView<Eigen::Upper>().solve(factor.transpose());
}

/// A map with the means of x, no regression and no transform yet.
NoiseMap empty_map(const distance::Moments& joint, std::size_t variables) {
  const auto p = static_cast<Eigen::Index>(variables);
  SDC_CHECK(joint.covariance.rows() == 2 * p, "moments of the joint (x, z) columns");
  NoiseMap map;
  map.x_mean = joint.mean.head(p).transpose();
  map.z_mean = Eigen::RowVectorXd::Zero(p);
  map.regression = Eigen::MatrixXd::Zero(p, p);
  return map;
}

}  // namespace

NumericData noise_normals(std::span<const std::int64_t> row_ids, std::size_t variables, std::uint64_t seed,
                          StepId step) {
  NumericData z;
  z.row_ids.assign(row_ids.begin(), row_ids.end());
  z.columns.assign(variables, std::vector<double>(row_ids.size()));
  for (std::size_t j = 0; j < variables; ++j) z.names.push_back("z" + std::to_string(j + 1));
  const RecordRng rng(seed, step);
  for (std::size_t i = 0; i < row_ids.size(); ++i) {
    for (std::size_t block = 0; block * 4 < variables; ++block) {
      const auto bits = rng.bits({static_cast<std::uint64_t>(row_ids[i]), block, 0, 0});
      const auto [a, b] = normal_pair_from_bits(bits[0], bits[1]);
      const auto [c, d] = normal_pair_from_bits(bits[2], bits[3]);
      const double normals[4] = {a, b, c, d};
      for (std::size_t k = 0; k < 4 && block * 4 + k < variables; ++k) z.columns[block * 4 + k][i] = normals[k];
    }
  }
  return z;
}

NumericColumns joint_columns(const NumericColumns& x, const NumericColumns& z) {
  NumericColumns joint = x;
  joint.names.insert(joint.names.end(), z.names.begin(), z.names.end());
  joint.columns.insert(joint.columns.end(), z.columns.begin(), z.columns.end());
  return joint;
}

bool restores_covariance(NoiseMethod method) {
  return method == NoiseMethod::kRestoreCovariance || method == NoiseMethod::kRestoreCovarianceExact;
}

NoiseMap noise_map(const distance::Moments& joint, std::size_t variables, const NoiseOptions& options) {
  const auto p = static_cast<Eigen::Index>(variables);
  SDC_CHECK(!restores_covariance(options.method), "a restore-covariance target (restore_covariance_map)");
  SDC_CHECK(options.percent >= 0.0 && std::isfinite(options.percent), "a finite, non-negative noise percent");
  NoiseMap map = empty_map(joint, variables);
  const Eigen::MatrixXd sxx = joint.covariance.topLeftCorner(p, p);
  map.restore_variance = options.restore_variance && options.method != NoiseMethod::kAdditive;
  if (options.method == NoiseMethod::kAdditive) {
    map.transform = Eigen::MatrixXd::Zero(p, p);
    for (Eigen::Index j = 0; j < p; ++j) map.transform(j, j) = options.percent / 100.0 * std::sqrt(sxx(j, j));
    return map;
  }
  map.c = options.percent / 100.0;
  if (map.c == 0.0) {
    map.transform = Eigen::MatrixXd::Zero(p, p);
    return map;
  }
  const Eigen::MatrixXd lower_sigma = cholesky(map.c * sxx, "the covariance matrix of the variables");
  complete_map(map, joint, variables, lower_sigma, options.method == NoiseMethod::kExact, options.orthogonal, false);
  return map;
}

RestoreTarget restore_target(const Eigen::MatrixXd& original, const Eigen::MatrixXd& input) {
  SDC_CHECK(original.rows() == input.rows() && original.cols() == input.cols() && original.rows() == original.cols(),
            "two covariance matrices of the same variables");
  const Eigen::Index p = original.rows();
  RestoreTarget out;
  out.difference = original - input;
  out.difference = ((out.difference + out.difference.transpose()) / 2.0).eval();
  // The scale of each variable: its sd in the original (in the input when the original's is 0, as for
  // a constant original variable), so that the eigenvalues are those of a correlation-like matrix.
  Eigen::VectorXd scale(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    const double variance = original(j, j) > 0.0 ? original(j, j) : input(j, j);
    scale(j) = variance > 0.0 ? std::sqrt(variance) : 1.0;
  }
  const Eigen::MatrixXd scaled = scale.cwiseInverse().asDiagonal() * out.difference * scale.cwiseInverse().asDiagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(scaled);
  SDC_CHECK(solver.info() == Eigen::Success, "the eigen decomposition of a finite symmetric matrix");
  out.eigenvalues = solver.eigenvalues();
  Eigen::VectorXd kept = out.eigenvalues;
  for (Eigen::Index k = 0; k < p; ++k) {
    if (kept(k) >= 0.0) continue;
    ++out.clipped;
    out.clipped_mass += -kept(k);
    kept(k) = 0.0;
  }
  const Eigen::MatrixXd& vectors = solver.eigenvectors();
  const Eigen::MatrixXd root = vectors * kept.cwiseSqrt().asDiagonal() * vectors.transpose();
  out.factor = scale.asDiagonal() * root;
  if (out.clipped == 0) {
    out.target = out.difference;
  } else {
    const Eigen::MatrixXd projected = vectors * kept.asDiagonal() * vectors.transpose();
    out.target = scale.asDiagonal() * ((projected + projected.transpose()) / 2.0) * scale.asDiagonal();
  }
  return out;
}

NoiseMap restore_covariance_map(const distance::Moments& joint, std::size_t variables, const RestoreTarget& target,
                                const NoiseOptions& options) {
  SDC_CHECK(restores_covariance(options.method), "a restore-covariance method");
  SDC_CHECK(target.factor.rows() == static_cast<Eigen::Index>(variables), "a target of the same variables");
  NoiseMap map = empty_map(joint, variables);
  complete_map(map, joint, variables, target.factor, options.method == NoiseMethod::kRestoreCovarianceExact,
               options.orthogonal, true);
  return map;
}

std::vector<std::vector<double>> apply_noise(const NumericColumns& x, const NumericColumns& z, const NoiseMap& map) {
  const std::size_t p = x.variables();
  const std::size_t n = x.records();
  SDC_CHECK(z.variables() == p && z.records() == n, "one normal per value");
  std::vector<std::vector<double>> out(p, std::vector<double>(n));
  const double shrink = map.restore_variance ? 1.0 / std::sqrt(1.0 + map.c) : 1.0;
  Eigen::RowVectorXd centred_x(static_cast<Eigen::Index>(p));
  Eigen::RowVectorXd draws(static_cast<Eigen::Index>(p));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < p; ++j) {
      const auto k = static_cast<Eigen::Index>(j);
      centred_x(k) = x.columns[j][i] - map.x_mean(k);
      draws(k) = z.columns[j][i] - map.z_mean(k);
    }
    const Eigen::RowVectorXd noise = (draws - centred_x * map.regression) * map.transform;
    for (std::size_t j = 0; j < p; ++j) {
      const auto k = static_cast<Eigen::Index>(j);
      const double released = x.columns[j][i] + noise(k);
      out[j][i] = map.restore_variance ? map.x_mean(k) + (released - map.x_mean(k)) * shrink : released;
    }
  }
  return out;
}

}  // namespace sdc::perturbation
