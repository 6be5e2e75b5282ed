#include "kernels/microaggregation/projection.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::microaggregation {

namespace {

/// Consecutive groups of k along `order`; the last group also takes the n mod k left over.
Grouping consecutive_groups(const std::vector<std::size_t>& order, std::size_t n, std::size_t k) {
  Grouping grouping;
  grouping.group_of_record.assign(n, 0);
  const std::size_t groups = std::max<std::size_t>(order.size() / k, 1);
  for (std::size_t position = 0; position < order.size(); ++position) {
    grouping.group_of_record[order[position]] = static_cast<std::int32_t>(std::min(position / k, groups - 1));
  }
  grouping.group_count = order.empty() ? 0 : static_cast<std::int32_t>(groups);
  return grouping;
}

std::vector<std::size_t> stable_order(const std::vector<double>& score) {
  std::vector<std::size_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  // Missing scores sort last, as the reference's `order` puts NA last.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (std::isnan(score[b])) return !std::isnan(score[a]);
    return score[a] < score[b];
  });
  return order;
}

std::vector<double> first_principal_component(const NumericData& z) {
  const std::size_t p = z.columns.size();
  const std::size_t n = z.row_ids.size();
  Eigen::MatrixXd correlation(static_cast<Eigen::Index>(p), static_cast<Eigen::Index>(p));
  for (std::size_t a = 0; a < p; ++a) {
    for (std::size_t b = a; b < p; ++b) {
      ExactSum product;
      for (std::size_t i = 0; i < n; ++i) product.add(z.columns[a][i] * z.columns[b][i]);
      const double value = product.value() / static_cast<double>(n);
      correlation(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) = value;
      correlation(static_cast<Eigen::Index>(b), static_cast<Eigen::Index>(a)) = value;
    }
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(correlation);
  SDC_CHECK(solver.info() == Eigen::Success, "the eigen solver converges on a correlation matrix");
  Eigen::VectorXd loading = solver.eigenvectors().col(static_cast<Eigen::Index>(p) - 1);
  Eigen::Index largest = 0;
  for (Eigen::Index j = 1; j < loading.size(); ++j) {
    if (std::fabs(loading(j)) > std::fabs(loading(largest))) largest = j;
  }
  // The solver's sign is arbitrary and decides which end receives the remainder group.
  if (loading(largest) < 0.0) loading = -loading;
  std::vector<double> score(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < p; ++j) score[i] += loading(static_cast<Eigen::Index>(j)) * z.columns[j][i];
  }
  return score;
}

}  // namespace

Grouping projection(const NumericColumns& x, int k, Projection method, int single_variable_index) {
  require_group_size(k, "projection microaggregation");
  const std::size_t n = x.records();
  const auto size = static_cast<std::size_t>(k);
  if (n < 2 * size) {
    throw ParameterError("projection microaggregation: the block has fewer than 2k records");
  }
  std::vector<double> score(n, 0.0);
  if (method == Projection::kSingleVariable) {
    if (single_variable_index < 0 || static_cast<std::size_t>(single_variable_index) >= x.variables()) {
      throw ParameterError("projection microaggregation: the sort variable is not among the variables");
    }
    const auto column = x.columns[static_cast<std::size_t>(single_variable_index)];
    score.assign(column.begin(), column.end());
  } else {
    require_complete(x, "projection microaggregation");
    const NumericData z = standardise(x, population_moments(x));
    if (method == Projection::kZScoreSum) {
      for (const auto& column : z.columns) {
        for (std::size_t i = 0; i < n; ++i) score[i] += column[i];
      }
    } else {
      score = first_principal_component(z);
    }
  }
  return consecutive_groups(stable_order(score), n, size);
}

std::vector<std::vector<double>> individual_ranking(const NumericColumns& x, int k) {
  require_group_size(k, "individual ranking");
  const std::size_t n = x.records();
  const auto size = static_cast<std::size_t>(k);
  if (n < 2 * size) throw ParameterError("individual ranking: the block has fewer than 2k records");
  std::vector<std::vector<double>> masked;
  for (const auto column : x.columns) {
    std::vector<double> values(column.begin(), column.end());
    std::vector<std::size_t> order = stable_order(values);
    while (!order.empty() && std::isnan(values[order.back()])) order.pop_back();
    const Grouping grouping = consecutive_groups(order, n, order.size() < 2 * size ? order.size() + 1 : size);
    std::vector<ExactSum> sums(static_cast<std::size_t>(grouping.group_count));
    std::vector<std::int64_t> counts(sums.size(), 0);
    for (const std::size_t i : order) {
      const auto group = static_cast<std::size_t>(grouping.group_of_record[i]);
      sums[group].add(values[i]);
      ++counts[group];
    }
    std::vector<double> out(n, std::numeric_limits<double>::quiet_NaN());
    for (const std::size_t i : order) {
      const auto group = static_cast<std::size_t>(grouping.group_of_record[i]);
      out[i] = sums[group].value() / static_cast<double>(counts[group]);
    }
    masked.push_back(std::move(out));
  }
  return masked;
}

}  // namespace sdc::microaggregation
