#include "kernels/swapping/data_shuffle.h"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/core/error.h"

namespace sdc::swapping {

double normal_quantile(double p) {
  SDC_CHECK(p > 0.0 && p < 1.0, "a probability strictly between 0 and 1");
  // Above one half 1 − p is exact, and the residual below is only exact below one half.
  if (p > 0.5) return -normal_quantile(1.0 - p);
  // Acklam's coefficients (a public rational approximation, relative error 1.15e-9 before refinement).
  constexpr double kA[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                           1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  constexpr double kB[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
                           -1.328068155288572e+01};
  constexpr double kC[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                           -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  constexpr double kD[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x = 0.0;
  if (p < kLow) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((kC[0] * q + kC[1]) * q + kC[2]) * q + kC[3]) * q + kC[4]) * q + kC[5]) /
        ((((kD[0] * q + kD[1]) * q + kD[2]) * q + kD[3]) * q + 1.0);
  } else if (p <= 1.0 - kLow) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((kA[0] * r + kA[1]) * r + kA[2]) * r + kA[3]) * r + kA[4]) * r + kA[5]) * q /
        (((((kB[0] * r + kB[1]) * r + kB[2]) * r + kB[3]) * r + kB[4]) * r + 1.0);
  } else {
    const double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((kC[0] * q + kC[1]) * q + kC[2]) * q + kC[3]) * q + kC[4]) * q + kC[5]) /
        ((((kD[0] * q + kD[1]) * q + kD[2]) * q + kD[3]) * q + 1.0);
  }
  // One Halley step on Φ(x) − p: Φ from erfc in the lower tail; near the centre from erf against
  // p − 1/2 (exact there), where erfc's rounding would swamp a tiny x.
  constexpr double kSqrt2 = 1.4142135623730950488;
  constexpr double kSqrt2Pi = 2.5066282746310005024;
  const double error = p > 0.25 ? 0.5 * std::erf(x / kSqrt2) - (p - 0.5) : 0.5 * std::erfc(-x / kSqrt2) - p;
  const double u = error * kSqrt2Pi * std::exp(x * x / 2.0);
  return x - u / (1.0 + x * u / 2.0);
}

std::vector<double> normal_scores(std::span<const double> values) {
  const std::size_t n = values.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> scores(n);
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = begin + 1;
    while (end < n && values[order[end]] == values[order[begin]]) ++end;
    // Ranks begin + 1 … end share their average.
    const double rank = (static_cast<double>(begin + 1) + static_cast<double>(end)) / 2.0;
    const double score = normal_quantile(rank / static_cast<double>(n + 1));
    for (std::size_t k = begin; k < end; ++k) scores[order[k]] = score;
    begin = end;
  }
  return scores;
}

std::vector<double> reverse_map(std::span<const double> values, std::span<const double> keys,
                                std::span<const std::int64_t> row_ids) {
  const std::size_t n = values.size();
  SDC_CHECK(keys.size() == n && row_ids.size() == n, "a key and a row id per value");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return keys[a] != keys[b] ? keys[a] < keys[b] : row_ids[a] < row_ids[b];
  });
  std::vector<double> out(n);
  for (std::size_t r = 0; r < n; ++r) out[order[r]] = sorted[r];
  return out;
}

ShuffleMap shuffle_map(const distance::Moments& scores, std::size_t confidential) {
  const auto p = static_cast<Eigen::Index>(confidential);
  const Eigen::Index q = scores.covariance.rows() - p;
  SDC_CHECK(p >= 1 && q >= 0, "at least one confidential variable");
  ShuffleMap map;
  Eigen::MatrixXd conditional = scores.covariance.topLeftCorner(p, p);
  map.regression = Eigen::MatrixXd::Zero(q, p);
  map.s_mean = scores.mean.tail(q).transpose();
  if (q > 0) {
    const Eigen::MatrixXd sss = scores.covariance.bottomRightCorner(q, q);
    const Eigen::MatrixXd ssx = scores.covariance.bottomLeftCorner(q, p);
    const Eigen::LLT<Eigen::MatrixXd> llt(sss);
    if (llt.info() != Eigen::Success)
      throw ParameterError(
          "the normal scores of the non-confidential variables (--given) have a singular covariance: one is "
          "constant or determined by the others; drop it");
    map.regression = llt.solve(ssx);
    conditional -= ssx.transpose() * map.regression;
    conditional = (conditional + conditional.transpose()) / 2.0;
  }
  const Eigen::LLT<Eigen::MatrixXd> llt(conditional);
  bool positive = llt.info() == Eigen::Success;
  const Eigen::MatrixXd lower = llt.matrixL();
  for (Eigen::Index k = 0; positive && k < p; ++k)
    positive = scores.covariance(k, k) > 0.0 && lower(k, k) * lower(k, k) > 1e-12 * scores.covariance(k, k);
  if (!positive)
    throw ParameterError(
        "the conditional covariance of the confidential variables' normal scores is not positive definite: a "
        "confidential variable is constant or determined by the others (given --given); drop it");
  map.noise_factor = lower.transpose();
  return map;
}

std::vector<std::vector<double>> shuffle_targets(const NumericColumns& s_scores, const NumericColumns& normals,
                                                 const ShuffleMap& map) {
  const std::size_t p = normals.variables();
  const std::size_t q = s_scores.variables();
  const std::size_t n = normals.records();
  std::vector<std::vector<double>> out(p, std::vector<double>(n));
  Eigen::RowVectorXd s(static_cast<Eigen::Index>(q));
  Eigen::RowVectorXd w(static_cast<Eigen::Index>(p));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < q; ++k) s(static_cast<Eigen::Index>(k)) = s_scores.columns[k][i];
    for (std::size_t j = 0; j < p; ++j) w(static_cast<Eigen::Index>(j)) = normals.columns[j][i];
    const Eigen::RowVectorXd y = (s - map.s_mean) * map.regression + w * map.noise_factor;
    for (std::size_t j = 0; j < p; ++j) out[j][i] = y(static_cast<Eigen::Index>(j));
  }
  return out;
}

}  // namespace sdc::swapping
