#include "kernels/utility/information_loss.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::utility {
namespace {

using Matrix = Eigen::MatrixXd;
using Index = Eigen::Index;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::size_t packed(std::size_t j, std::size_t k) { return j * (j + 1) / 2 + k; }

std::string variable_label(const NumericColumns& data, std::size_t j) {
  if (j < data.names.size()) return "variable '" + data.names[j] + "'";
  return "variable " + std::to_string(j) + " (0-based column)";
}

void check_aligned(const NumericColumns& original, const NumericColumns& masked) {
  require_aligned(original, masked, "information loss");
  const std::size_t p = original.variables();
  for (const auto* data : {&original, &masked})
    for (std::size_t j = 0; j < p; ++j)
      SDC_CHECK(data->columns[j].size() == data->row_ids.size(),
                "information loss: every column of a block has one value per row id");
  for (std::size_t j = 0; j < std::min(original.names.size(), masked.names.size()); ++j)
    if (original.names[j] != masked.names[j])
      throw InvalidInput("information loss: " + variable_label(original, j) +
                         " of the original file is named differently in the masked file");
  for (const auto* data : {&original, &masked}) {
    const char* file = data == &original ? "original" : "masked";
    for (std::size_t j = 0; j < p; ++j) {
      const auto column = data->columns[j];
      for (std::size_t i = 0; i < column.size(); ++i)
        if (!std::isfinite(column[i]))
          throw InvalidInput("information loss: " + variable_label(original, j) +
                             " is missing or not finite at row id " + std::to_string(data->row_ids[i]) + " of the " +
                             file + " file");
    }
  }
}

void accumulate_variable(InformationLossPartial& partial, std::span<const double> x, std::span<const double> y,
                         std::size_t j) {
  ExactSum sum_x, sum_y, absolute, square, relative;
  std::uint64_t zeros = 0;
  double min_x = kInfinity, max_x = -kInfinity, min_y = kInfinity, max_y = -kInfinity;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double difference = std::fabs(x[i] - y[i]);
    sum_x.add(x[i]);
    sum_y.add(y[i]);
    absolute.add(difference);
    square.add(difference * difference);
    if (x[i] == 0.0) {
      ++zeros;
    } else {
      relative.add(difference / std::fabs(x[i]));
    }
    min_x = std::min(min_x, x[i]);
    max_x = std::max(max_x, x[i]);
    min_y = std::min(min_y, y[i]);
    max_y = std::max(max_y, y[i]);
  }
  partial.sum_original[j] = std::move(sum_x);
  partial.sum_masked[j] = std::move(sum_y);
  partial.absolute_difference[j] = std::move(absolute);
  partial.squared_difference[j] = std::move(square);
  partial.relative_difference[j] = std::move(relative);
  partial.zero_original[j] = zeros;
  partial.min_original[j] = min_x;
  partial.max_original[j] = max_x;
  partial.min_masked[j] = min_y;
  partial.max_masked[j] = max_y;
}

// Each product enters with its rounding error (exact by fma), so that Σxy is exact: a rounded product
// of two values near a large mean would lose the spread that the centred moments are made of.
ExactSum cross_product_sum(std::span<const double> a, std::span<const double> b) {
  ExactSum sum;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double product = a[i] * b[i];
    sum.add(product);
    sum.add(std::fma(a[i], b[i], -product));
  }
  return sum;
}

void resize(InformationLossPartial& partial, std::size_t p) {
  partial.variables = p;
  const std::size_t pairs = p * (p + 1) / 2;
  partial.sum_original.assign(p, {});
  partial.sum_masked.assign(p, {});
  partial.cross_original.assign(pairs, {});
  partial.cross_masked.assign(pairs, {});
  partial.absolute_difference.assign(p, {});
  partial.squared_difference.assign(p, {});
  partial.relative_difference.assign(p, {});
  partial.zero_original.assign(p, 0);
  partial.min_original.assign(p, kInfinity);
  partial.max_original.assign(p, -kInfinity);
  partial.min_masked.assign(p, kInfinity);
  partial.max_masked.assign(p, -kInfinity);
}

void merge_sums(std::vector<ExactSum>& into, const std::vector<ExactSum>& from) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i].merge(from[i]);
}

// Centred moments Σxy − ΣxΣy/n lose every digit to cancellation in plain double when the mean is large
// against the spread; double-double keeps about 106 bits of the exact sums through the subtraction.
struct DoubleDouble {
  double hi = 0.0;
  double lo = 0.0;
};

DoubleDouble two_sum(double a, double b) {
  const double s = a + b;
  const double v = s - a;
  return {s, (a - (s - v)) + (b - v)};
}

DoubleDouble renormalised(double hi, double lo) {
  const double s = hi + lo;
  return {s, lo - (s - hi)};
}

DoubleDouble to_double_double(const ExactSum& sum) {
  const double hi = sum.value();
  ExactSum rest = sum;
  rest.add(-hi);
  return {hi, rest.value()};
}

DoubleDouble multiply(DoubleDouble a, DoubleDouble b) {
  const double hi = a.hi * b.hi;
  const double lo = std::fma(a.hi, b.hi, -hi) + (a.hi * b.lo + a.lo * b.hi);
  return renormalised(hi, lo);
}

DoubleDouble divide(DoubleDouble a, double d) {
  const double q1 = a.hi / d;
  const double product = q1 * d;
  const double product_error = std::fma(q1, d, -product);
  DoubleDouble remainder = two_sum(a.hi, -product);
  remainder.lo += a.lo - product_error;
  const double q2 = (remainder.hi + remainder.lo) / d;
  return renormalised(q1, q2);
}

double subtract(DoubleDouble a, DoubleDouble b) {
  const DoubleDouble s = two_sum(a.hi, -b.hi);
  return s.hi + (s.lo + (a.lo - b.lo));
}

// Co-moment matrix Σ(x_j − x̄_j)(x_k − x̄_k); rows and columns of constant variables are exactly 0. A
// variable whose spread is below the double-double resolution of its mean is marked constant too.
Matrix centred_moments(const std::vector<ExactSum>& sums, const std::vector<ExactSum>& cross,
                       std::vector<bool>& constant, double n) {
  const std::size_t p = sums.size();
  std::vector<DoubleDouble> sum(p);
  for (std::size_t j = 0; j < p; ++j) sum[j] = to_double_double(sums[j]);
  Matrix moments = Matrix::Zero(static_cast<Index>(p), static_cast<Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    if (constant[j]) continue;
    for (std::size_t k = 0; k <= j; ++k) {
      if (constant[k]) continue;
      const double value = subtract(to_double_double(cross[packed(j, k)]), divide(multiply(sum[j], sum[k]), n));
      moments(static_cast<Index>(j), static_cast<Index>(k)) = value;
      moments(static_cast<Index>(k), static_cast<Index>(j)) = value;
    }
  }
  for (std::size_t j = 0; j < p; ++j) {
    const auto jj = static_cast<Index>(j);
    if (constant[j] || moments(jj, jj) > 0.0) continue;
    constant[j] = true;
    moments.row(jj).setZero();
    moments.col(jj).setZero();
  }
  return moments;
}

/// SSE and SST on z-scores with the original's population moments: `centred[j]` = n·σ_j², and a
/// constant variable adds to neither.
SumOfSquares sum_of_squares_of(std::uint64_t records, const std::vector<ExactSum>& squared_difference,
                               const std::vector<double>& centred, const std::vector<bool>& constant) {
  SumOfSquares out;
  out.records = records;
  const auto n = static_cast<double>(records);
  for (std::size_t j = 0; j < constant.size(); ++j) {
    if (constant[j]) {
      ++out.constant_variables;
      continue;
    }
    out.sse += squared_difference[j].value() / (centred[j] / n);
  }
  out.sst = n * static_cast<double>(constant.size() - out.constant_variables);
  out.il_percent = out.sst > 0.0 ? 100.0 * out.sse / out.sst : 0.0;
  return out;
}

class DiscrepancyAccumulator {
 public:
  void add(double original, double masked, double weight = 1.0) {
    const double difference = std::fabs(original - masked);
    ++entries_;
    square_ += weight * difference * difference;
    absolute_ += weight * difference;
    if (original == 0.0) {
      ++skipped_;
    } else {
      variation_ += weight * difference / std::fabs(original);
    }
  }

  Discrepancy result() const {
    Discrepancy discrepancy;
    discrepancy.entries = entries_;
    discrepancy.zero_entries_skipped = skipped_;
    if (entries_ == 0) return undefined();
    const auto entries = static_cast<double>(entries_);
    discrepancy.mean_square = square_ / entries;
    discrepancy.mean_absolute = absolute_ / entries;
    discrepancy.mean_variation = entries_ > skipped_ ? variation_ / static_cast<double>(entries_ - skipped_) : kNaN;
    return discrepancy;
  }

  static Discrepancy undefined() {
    Discrepancy discrepancy;
    discrepancy.mean_square = discrepancy.mean_absolute = discrepancy.mean_variation = kNaN;
    discrepancy.defined = false;
    return discrepancy;
  }

 private:
  std::uint64_t entries_ = 0;
  std::uint64_t skipped_ = 0;
  double square_ = 0.0;
  double absolute_ = 0.0;
  double variation_ = 0.0;
};

struct Components {
  Eigen::VectorXd eigenvalues;  // descending
  Matrix eigenvectors;          // column j belongs to eigenvalues(j)
  bool singular = false;
};

Components principal_components(const Matrix& correlation) {
  const Eigen::SelfAdjointEigenSolver<Matrix> solver(correlation);
  SDC_CHECK(solver.info() == Eigen::Success, "information loss: the eigensolver converges on a correlation matrix");
  Components components;
  components.eigenvalues = solver.eigenvalues().reverse();
  components.eigenvectors = solver.eigenvectors().rowwise().reverse();
  const Index q = correlation.rows();
  components.singular = components.eigenvalues(q - 1) <= kSingularEigenvalueRatio * components.eigenvalues(0);
  return components;
}

Matrix correlation_matrix(const Matrix& moments, const std::vector<std::size_t>& variables) {
  const auto q = static_cast<Index>(variables.size());
  Matrix correlation = Matrix::Identity(q, q);
  for (Index a = 0; a < q; ++a)
    for (Index b = 0; b < a; ++b) {
      const auto i = static_cast<Index>(variables[static_cast<std::size_t>(a)]);
      const auto j = static_cast<Index>(variables[static_cast<std::size_t>(b)]);
      const double r = moments(i, j) / std::sqrt(moments(i, i) * moments(j, j));
      correlation(a, b) = correlation(b, a) = r;
    }
  return correlation;
}

// d = diag(R⁻¹) from R = Σ λ_j e_j e_jᵀ, scaled to unit length.
Eigen::VectorXd unit_inverse_diagonal(const Components& components) {
  const Eigen::VectorXd inverse_eigenvalues = components.eigenvalues.cwiseInverse();
  const Eigen::VectorXd diagonal = components.eigenvectors.cwiseAbs2() * inverse_eigenvalues;
  return diagonal / diagonal.norm();
}

std::vector<double> to_vector(const Eigen::VectorXd& v) { return {v.data(), v.data() + v.size()}; }

std::vector<double> gaps(const Eigen::VectorXd& eigenvalues) {
  std::vector<double> result;
  for (Index j = 0; j + 1 < eigenvalues.size(); ++j) result.push_back(eigenvalues(j) - eigenvalues(j + 1));
  return result;
}

void component_measures(InformationLoss& loss, const Matrix& moments_original, const Matrix& moments_masked,
                        const InformationLossOptions& options) {
  const std::size_t q = loss.correlation_variables.size();
  const Matrix correlation = correlation_matrix(moments_original, loss.correlation_variables);
  const Matrix correlation_masked = correlation_matrix(moments_masked, loss.correlation_variables);

  DiscrepancyAccumulator correlations;
  for (Index a = 0; a < static_cast<Index>(q); ++a)
    for (Index b = a + 1; b < static_cast<Index>(q); ++b) correlations.add(correlation(a, b), correlation_masked(a, b));
  loss.correlations = q >= 2 ? correlations.result() : DiscrepancyAccumulator::undefined();

  if (q == 0) {
    loss.component_loadings = loss.communalities = loss.score_coefficients = DiscrepancyAccumulator::undefined();
    loss.eigen = loss.il_correl = kNaN;
    return;
  }

  const Components original = principal_components(correlation);
  Components masked = principal_components(correlation_masked);
  for (Index j = 0; j < static_cast<Index>(q); ++j)
    if (original.eigenvectors.col(j).dot(masked.eigenvectors.col(j)) < 0.0) masked.eigenvectors.col(j) *= -1.0;
  loss.eigenvalues_original = to_vector(original.eigenvalues);
  loss.eigenvalues_masked = to_vector(masked.eigenvalues);
  loss.eigen_gaps_original = gaps(original.eigenvalues);
  loss.eigen_gaps_masked = gaps(masked.eigenvalues);
  loss.original_correlation_singular = original.singular;
  loss.masked_correlation_singular = masked.singular;

  if (options.component_weights.empty()) {
    for (double lambda : loss.eigenvalues_original) loss.component_weights.push_back(lambda / static_cast<double>(q));
  } else {
    if (options.component_weights.size() != q)
      throw ParameterError("information loss: component_weights needs one weight per correlation variable (" +
                           std::to_string(q) + ")");
    if (!std::all_of(options.component_weights.begin(), options.component_weights.end(),
                     [](double w) { return std::isfinite(w); }))
      throw ParameterError("information loss: component_weights must be finite");
    loss.component_weights = options.component_weights;
  }

  DiscrepancyAccumulator loadings, communalities, scores;
  const auto loading = [](const Components& c, Index i, Index j) {
    return c.eigenvectors(i, j) * std::sqrt(std::max(c.eigenvalues(j), 0.0));
  };
  for (Index j = 0; j < static_cast<Index>(q); ++j) {
    const double weight = loss.component_weights[static_cast<std::size_t>(j)];
    for (Index i = 0; i < static_cast<Index>(q); ++i) {
      loadings.add(loading(original, i, j), loading(masked, i, j), weight);
      if (!original.singular && !masked.singular)
        scores.add(original.eigenvectors(i, j) / std::sqrt(original.eigenvalues(j)),
                   masked.eigenvectors(i, j) / std::sqrt(masked.eigenvalues(j)), weight);
    }
  }
  for (Index i = 0; i < static_cast<Index>(q); ++i) {
    const double c = loading(original, i, 0);
    const double c_masked = loading(masked, i, 0);
    communalities.add(c * c, c_masked * c_masked);
  }
  loss.component_loadings = loadings.result();
  loss.communalities = communalities.result();
  loss.score_coefficients =
      original.singular || masked.singular ? DiscrepancyAccumulator::undefined() : scores.result();

  if (original.singular) {
    loss.eigen = kNaN;
  } else {
    double eigen = 0.0;
    for (Index j = 0; j < static_cast<Index>(q); ++j)
      eigen += std::fabs(original.eigenvalues(j) - masked.eigenvalues(j)) / original.eigenvalues(j);
    loss.eigen = eigen;
  }
  loss.il_correl =
      original.singular || masked.singular
          ? kNaN
          : std::numbers::sqrt2 / 2.0 * (unit_inverse_diagonal(original) - unit_inverse_diagonal(masked)).norm();
}

}  // namespace

InformationLossPartial information_loss_local(const NumericColumns& original, const NumericColumns& masked) {
  check_aligned(original, masked);
  const std::size_t p = original.variables();
  InformationLossPartial partial;
  resize(partial, p);
  partial.records = original.row_ids.size();

  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, p, 1), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t j = range.begin(); j != range.end(); ++j)
      accumulate_variable(partial, original.columns[j], masked.columns[j], j);
  });
  // Each pair's sum is exact, so the split of pairs over threads cannot change a bit.
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t k = 0; k <= j; ++k) pairs.emplace_back(j, k);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, pairs.size(), 1),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t t = range.begin(); t != range.end(); ++t) {
                        const auto [j, k] = pairs[t];
                        partial.cross_original[t] = cross_product_sum(original.columns[j], original.columns[k]);
                        partial.cross_masked[t] = cross_product_sum(masked.columns[j], masked.columns[k]);
                      }
                    });
  return partial;
}

void information_loss_merge(InformationLossPartial& into, const InformationLossPartial& from) {
  if (into.variables == 0 && into.records == 0 && from.variables != 0) resize(into, from.variables);
  SDC_CHECK(into.variables == from.variables, "information loss: partials of the same variables are merged");
  into.records += from.records;
  merge_sums(into.sum_original, from.sum_original);
  merge_sums(into.sum_masked, from.sum_masked);
  merge_sums(into.cross_original, from.cross_original);
  merge_sums(into.cross_masked, from.cross_masked);
  merge_sums(into.absolute_difference, from.absolute_difference);
  merge_sums(into.squared_difference, from.squared_difference);
  merge_sums(into.relative_difference, from.relative_difference);
  for (std::size_t j = 0; j < into.variables; ++j) {
    into.zero_original[j] += from.zero_original[j];
    into.min_original[j] = std::min(into.min_original[j], from.min_original[j]);
    into.max_original[j] = std::max(into.max_original[j], from.max_original[j]);
    into.min_masked[j] = std::min(into.min_masked[j], from.min_masked[j]);
    into.max_masked[j] = std::max(into.max_masked[j], from.max_masked[j]);
  }
}

InformationLoss information_loss_finalize(const InformationLossPartial& total, const InformationLossOptions& options) {
  if (total.records < 2) throw InvalidInput("information loss: the files need at least two records");
  const std::size_t p = total.variables;
  const auto n = static_cast<double>(total.records);
  InformationLoss loss;
  loss.records = total.records;
  loss.variables = p;

  std::vector<bool> constant(p), constant_masked(p);
  for (std::size_t j = 0; j < p; ++j) {
    constant[j] = total.min_original[j] == total.max_original[j];
    constant_masked[j] = total.min_masked[j] == total.max_masked[j];
  }
  const Matrix moments = centred_moments(total.sum_original, total.cross_original, constant, n);
  const Matrix moments_masked = centred_moments(total.sum_masked, total.cross_masked, constant_masked, n);
  for (std::size_t j = 0; j < p; ++j)
    if (!constant[j] && !constant_masked[j]) loss.correlation_variables.push_back(j);

  // Cells: X − X', IL1, IL1s and SSE from the per-variable exact sums.
  ExactSum absolute, square, relative;
  std::uint64_t zeros = 0;
  for (std::size_t j = 0; j < p; ++j) {
    absolute.merge(total.absolute_difference[j]);
    square.merge(total.squared_difference[j]);
    relative.merge(total.relative_difference[j]);
    zeros += total.zero_original[j];
    if (constant[j]) continue;
    const auto jj = static_cast<Index>(j);
    loss.il1s_sum +=
        total.absolute_difference[j].value() / (std::numbers::sqrt2 * std::sqrt(moments(jj, jj) / (n - 1.0)));
  }
  std::vector<double> centred(p);
  for (std::size_t j = 0; j < p; ++j) centred[j] = moments(static_cast<Index>(j), static_cast<Index>(j));
  const SumOfSquares squares = sum_of_squares_of(total.records, total.squared_difference, centred, constant);
  loss.sse = squares.sse;
  loss.sst = squares.sst;
  loss.il_percent = squares.il_percent;
  loss.constant_variables = squares.constant_variables;
  const double cells = n * static_cast<double>(p);
  loss.values.entries = total.records * p;
  loss.values.zero_entries_skipped = zeros;
  if (p == 0) {
    loss.values = DiscrepancyAccumulator::undefined();
  } else {
    loss.values.mean_square = square.value() / cells;
    loss.values.mean_absolute = absolute.value() / cells;
    loss.values.mean_variation =
        zeros < loss.values.entries ? relative.value() / static_cast<double>(loss.values.entries - zeros) : kNaN;
  }
  loss.il1 = 100.0 * relative.value();
  loss.il1s_mean = p == 0 ? 0.0 : loss.il1s_sum / cells;

  // Moments: X̄ − X̄', S − S', V − V'.
  const Matrix covariance = moments / (n - 1.0);
  const Matrix covariance_masked = moments_masked / (n - 1.0);
  DiscrepancyAccumulator means, variances, covariances;
  for (std::size_t j = 0; j < p; ++j) {
    const auto jj = static_cast<Index>(j);
    means.add(total.sum_original[j].value() / n, total.sum_masked[j].value() / n);
    variances.add(covariance(jj, jj), covariance_masked(jj, jj));
    for (Index k = 0; k <= jj; ++k) covariances.add(covariance(jj, k), covariance_masked(jj, k));
  }
  loss.means = means.result();
  loss.variances = variances.result();
  loss.covariances = covariances.result();

  component_measures(loss, moments, moments_masked, options);
  return loss;
}

SumOfSquaresPartial sum_of_squares_local(const NumericColumns& original, const NumericColumns& masked) {
  check_aligned(original, masked);
  const std::size_t p = original.variables();
  SumOfSquaresPartial partial;
  partial.variables = p;
  partial.records = original.row_ids.size();
  partial.sum_original.resize(p);
  partial.square_original.resize(p);
  partial.squared_difference.resize(p);
  partial.min_original.assign(p, kInfinity);
  partial.max_original.assign(p, -kInfinity);
  // The same terms as information_loss_local adds, so that the exact sums are the same.
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, p, 1), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t j = range.begin(); j != range.end(); ++j) {
      const auto x = original.columns[j];
      const auto y = masked.columns[j];
      ExactSum sum;
      ExactSum square;
      double low = kInfinity;
      double high = -kInfinity;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double difference = std::fabs(x[i] - y[i]);
        sum.add(x[i]);
        square.add(difference * difference);
        low = std::min(low, x[i]);
        high = std::max(high, x[i]);
      }
      partial.sum_original[j] = std::move(sum);
      partial.squared_difference[j] = std::move(square);
      partial.square_original[j] = cross_product_sum(x, x);
      partial.min_original[j] = low;
      partial.max_original[j] = high;
    }
  });
  return partial;
}

void sum_of_squares_merge(SumOfSquaresPartial& into, const SumOfSquaresPartial& from) {
  if (into.variables == 0 && into.records == 0 && from.variables != 0) {
    into = from;
    return;
  }
  SDC_CHECK(into.variables == from.variables, "sums of squares: partials of the same variables are merged");
  into.records += from.records;
  merge_sums(into.sum_original, from.sum_original);
  merge_sums(into.square_original, from.square_original);
  merge_sums(into.squared_difference, from.squared_difference);
  for (std::size_t j = 0; j < into.variables; ++j) {
    into.min_original[j] = std::min(into.min_original[j], from.min_original[j]);
    into.max_original[j] = std::max(into.max_original[j], from.max_original[j]);
  }
}

SumOfSquares sum_of_squares_finalize(const SumOfSquaresPartial& total) {
  if (total.records < 2) throw InvalidInput("information loss: the files need at least two records");
  const std::size_t p = total.variables;
  const auto n = static_cast<double>(total.records);
  // Each variable's 1 × 1 co-moment matrix: the battery's diagonal, with its rule for constant variables.
  std::vector<bool> constant(p);
  std::vector<double> centred(p, 0.0);
  for (std::size_t j = 0; j < p; ++j) {
    std::vector<bool> alone{total.min_original[j] == total.max_original[j]};
    centred[j] = centred_moments({total.sum_original[j]}, {total.square_original[j]}, alone, n)(0, 0);
    constant[j] = alone[0];
  }
  return sum_of_squares_of(total.records, total.squared_difference, centred, constant);
}

}  // namespace sdc::utility
