#include "kernels/distance/whitening.h"

#include <Eigen/Cholesky>

#include <cmath>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::distance {
namespace {

constexpr double kFirstEpsilon = 1e-10;
constexpr double kSmallestRelativePivot = 1e-12;

/// x·y as the exact pair high + low (no overflow or underflow for the data at hand).
void add_exact_product(ExactSum& sum, double x, double y) {
  const double high = x * y;
  sum.add(high);
  sum.add(std::fma(x, y, -high));
}

std::size_t triangle_index(std::size_t j, std::size_t k) { return j * (j + 1) / 2 + k; }

MomentsPartial empty_partial(std::size_t p) {
  MomentsPartial partial;
  partial.sums.resize(p);
  partial.cross_products.resize(p * (p + 1) / 2);
  return partial;
}

void add_record(MomentsPartial& partial, const std::vector<double>& x) {
  const std::size_t p = x.size();
  ++partial.count;
  for (std::size_t j = 0; j < p; ++j) {
    partial.sums[j].add(x[j]);
    for (std::size_t k = 0; k <= j; ++k) add_exact_product(partial.cross_products[triangle_index(j, k)], x[j], x[k]);
  }
}

}  // namespace

std::vector<double> Moments::standard_deviations() const {
  std::vector<double> sds(static_cast<std::size_t>(covariance.rows()));
  for (std::size_t j = 0; j < sds.size(); ++j) {
    sds[j] = std::sqrt(covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j)));
  }
  return sds;
}

MomentsPartial moments_local(const NumericColumns& columns) {
  sdc::require_complete(columns, "distances");
  const std::size_t p = columns.variables();
  MomentsPartial partial = empty_partial(p);
  std::vector<double> record(p);
  for (std::size_t i = 0; i < columns.records(); ++i) {
    for (std::size_t j = 0; j < p; ++j) record[j] = columns.columns[j][i];
    add_record(partial, record);
  }
  return partial;
}

MomentsPartial moments_difference_local(const NumericColumns& original, const NumericColumns& masked) {
  sdc::require_complete(original, "distances");
  sdc::require_complete(masked, "distances");
  SDC_CHECK(original.variables() == masked.variables() && original.records() == masked.records(),
            "aligned files have the same shape");
  const std::size_t p = original.variables();
  MomentsPartial partial = empty_partial(p);
  std::vector<double> record(p);
  for (std::size_t i = 0; i < original.records(); ++i) {
    for (std::size_t j = 0; j < p; ++j) record[j] = original.columns[j][i] - masked.columns[j][i];
    add_record(partial, record);
  }
  return partial;
}

void moments_merge(MomentsPartial& into, const MomentsPartial& from) {
  if (into.sums.empty() && into.count == 0) {
    into = from;
    return;
  }
  SDC_CHECK(into.sums.size() == from.sums.size() || from.count == 0, "moments of the same variables");
  if (from.count == 0 && from.sums.empty()) return;
  into.count += from.count;
  for (std::size_t j = 0; j < into.sums.size(); ++j) into.sums[j].merge(from.sums[j]);
  for (std::size_t t = 0; t < into.cross_products.size(); ++t) into.cross_products[t].merge(from.cross_products[t]);
}

double exact_covariance(std::int64_t count, const ExactSum& sum_x, const ExactSum& sum_y, const ExactSum& sum_xy) {
  ExactSum numerator;
  const auto n = static_cast<double>(count);
  for (double part : sum_xy.partials()) add_exact_product(numerator, n, part);
  for (double x : sum_x.partials()) {
    for (double y : sum_y.partials()) add_exact_product(numerator, -x, y);
  }
  return numerator.value() / (n * static_cast<double>(count - 1));
}

Moments moments_finalize(const MomentsPartial& total) {
  if (total.count < 2) throw ParameterError("means and covariances need at least two records");
  const std::size_t p = total.sums.size();
  Moments moments;
  moments.count = total.count;
  moments.mean.resize(static_cast<Eigen::Index>(p));
  moments.covariance.resize(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    moments.mean[static_cast<Eigen::Index>(j)] = total.sums[j].value() / static_cast<double>(total.count);
    for (std::size_t k = 0; k <= j; ++k) {
      const double covariance =
          exact_covariance(total.count, total.sums[j], total.sums[k], total.cross_products[triangle_index(j, k)]);
      moments.covariance(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k)) = covariance;
      moments.covariance(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(j)) = covariance;
    }
  }
  return moments;
}

PointSet shift_and_scale(const NumericColumns& columns, std::span<const double> shift, std::span<const double> scale) {
  sdc::require_complete(columns, "distances");
  const std::size_t n = columns.records();
  const std::size_t p = columns.variables();
  SDC_CHECK(shift.size() == p && scale.size() == p, "one shift and one scale per variable");
  CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    const double divisor = scale[j] > 0.0 ? scale[j] : 1.0;
    for (std::size_t i = 0; i < n; ++i) {
      coordinates(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) =
          (columns.columns[j][i] - shift[j]) / divisor;
    }
  }
  return make_point_set(std::move(coordinates), {columns.row_ids.begin(), columns.row_ids.end()});
}

PointSet standardise_with(const NumericColumns& columns, const Moments& moments) {
  SDC_CHECK(static_cast<std::size_t>(moments.mean.size()) == columns.variables(), "moments of the same variables");
  const std::vector<double> shift(moments.mean.data(), moments.mean.data() + moments.mean.size());
  return shift_and_scale(columns, shift, moments.standard_deviations());
}

PointSet standardise_own(const NumericColumns& columns) {
  return standardise_with(columns, moments_finalize(moments_local(columns)));
}

std::vector<double> difference_scales(const Moments& difference_moments) {
  return difference_moments.standard_deviations();
}

Whitening whitening_finalize(const Eigen::MatrixXd& covariance, const Eigen::VectorXd& shift) {
  const Eigen::Index p = covariance.rows();
  SDC_CHECK(covariance.cols() == p && shift.size() == p, "a square covariance matrix and one shift per variable");
  const double mean_variance = p == 0 ? 0.0 : covariance.trace() / static_cast<double>(p);
  if (!(mean_variance > 0.0) || !std::isfinite(mean_variance)) {
    throw ParameterError("Mahalanobis whitening needs at least one variable with positive variance");
  }
  Whitening whitening;
  whitening.shift = shift;
  double epsilon = 0.0;
  for (;;) {
    Eigen::MatrixXd regularised = covariance;
    regularised.diagonal().array() += epsilon * mean_variance;
    Eigen::LLT<Eigen::MatrixXd> factor(regularised);
    if (factor.info() == Eigen::Success) {
      Eigen::MatrixXd lower = factor.matrixL();
      const double smallest_pivot = lower.diagonal().array().square().minCoeff();
      if (smallest_pivot > kSmallestRelativePivot * mean_variance) {
        whitening.lower = std::move(lower);
        whitening.epsilon = epsilon;
        return whitening;
      }
    }
    epsilon = epsilon == 0.0 ? kFirstEpsilon : 2.0 * epsilon;
  }
}

PointSet whiten(const NumericColumns& columns, const Whitening& whitening) {
  sdc::require_complete(columns, "distances");
  const std::size_t n = columns.records();
  const std::size_t p = columns.variables();
  SDC_CHECK(static_cast<std::size_t>(whitening.lower.rows()) == p, "a factor of the same variables");
  CoordinateMatrix coordinates(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  for (std::size_t i = 0; i < n; ++i) {
    double* y = coordinates.data() + i * p;
    for (std::size_t j = 0; j < p; ++j) {
      double value = columns.columns[j][i] - whitening.shift[static_cast<Eigen::Index>(j)];
      for (std::size_t k = 0; k < j; ++k)
        value -= whitening.lower(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(k)) * y[k];
      y[j] = value / whitening.lower(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j));
    }
  }
  return make_point_set(std::move(coordinates), {columns.row_ids.begin(), columns.row_ids.end()});
}

}  // namespace sdc::distance
