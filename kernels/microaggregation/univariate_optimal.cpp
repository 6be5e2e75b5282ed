#include "kernels/microaggregation/univariate_optimal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::microaggregation {

namespace {

/// The shortest path 0 → n over arcs (i, j), k ≤ j − i ≤ 2k − 1, with `cost(i, j)`; returns the
/// start of the last run ending at each node, scanning sizes upwards so that ties keep the smaller.
template <typename Cost>
std::vector<std::size_t> shortest_segmentation(std::size_t n, std::size_t k, Cost cost) {
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, infinity);
  std::vector<std::size_t> start(n + 1, 0);
  best[0] = 0.0;
  for (std::size_t j = k; j <= n; ++j) {
    for (std::size_t size = k; size <= 2 * k - 1 && size <= j; ++size) {
      const std::size_t i = j - size;
      if (best[i] == infinity) continue;
      const double candidate = best[i] + cost(i, j);
      if (candidate < best[j]) {
        best[j] = candidate;
        start[j] = i;
      }
    }
  }
  return start;
}

/// Group ids along `sequence` (positions of records) from the run starts of the shortest path.
Grouping grouping_from_runs(std::span<const std::int64_t> sequence, const std::vector<std::size_t>& start,
                            std::size_t k) {
  const std::size_t n = sequence.size();
  Grouping grouping;
  grouping.group_of_record.assign(n, 0);
  if (n < k || n == 0) {
    grouping.group_count = n == 0 ? 0 : 1;
    return grouping;
  }
  std::vector<std::size_t> ends;
  for (std::size_t j = n; j > 0; j = start[j]) ends.push_back(j);
  std::reverse(ends.begin(), ends.end());
  std::size_t begin = 0;
  for (std::size_t g = 0; g < ends.size(); ++g) {
    for (std::size_t position = begin; position < ends[g]; ++position) {
      grouping.group_of_record[static_cast<std::size_t>(sequence[position])] = static_cast<std::int32_t>(g);
    }
    begin = ends[g];
  }
  grouping.group_count = static_cast<std::int32_t>(ends.size());
  return grouping;
}

}  // namespace

Grouping univariate_optimal(std::span<const double> x, std::span<const std::int64_t> row_ids, int k) {
  require_group_size(k, "optimal univariate microaggregation");
  SDC_CHECK(row_ids.size() == x.size(), "a row id per value");
  const std::size_t n = x.size();
  ExactSum total;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) {
      throw InvalidInput("optimal univariate microaggregation: the variable is missing in row " +
                         std::to_string(row_ids[i]));
    }
    total.add(x[i]);
  }
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const auto ua = static_cast<std::size_t>(a);
    const auto ub = static_cast<std::size_t>(b);
    return x[ua] < x[ub] || (x[ua] == x[ub] && row_ids[ua] < row_ids[ub]);
  });
  // Centring keeps the prefix-sum differences free of cancellation against a large mean.
  const double mean = n == 0 ? 0.0 : total.value() / static_cast<double>(n);
  std::vector<double> sum(n + 1, 0.0);
  std::vector<double> sum_of_squares(n + 1, 0.0);
  for (std::size_t position = 0; position < n; ++position) {
    const double value = x[static_cast<std::size_t>(order[position])] - mean;
    sum[position + 1] = sum[position] + value;
    sum_of_squares[position + 1] = sum_of_squares[position] + value * value;
  }
  const auto size = static_cast<std::size_t>(k);
  const auto start = shortest_segmentation(n, size, [&](std::size_t i, std::size_t j) {
    const double run_sum = sum[j] - sum[i];
    return (sum_of_squares[j] - sum_of_squares[i]) - run_sum * run_sum / static_cast<double>(j - i);
  });
  return grouping_from_runs(order, start, size);
}

Grouping optimal_segmentation(const NumericColumns& standardised, std::span<const std::int64_t> order, int k) {
  require_group_size(k, "optimal segmentation");
  require_complete(standardised, "optimal segmentation");
  const std::size_t n = standardised.records();
  const std::size_t p = standardised.variables();
  SDC_CHECK(order.size() == n, "the ordering covers every record");
  std::vector<double> sum((n + 1) * p, 0.0);  // row-major prefix sums, one row per position
  std::vector<double> sum_of_squares(n + 1, 0.0);
  for (std::size_t position = 0; position < n; ++position) {
    const auto record = static_cast<std::size_t>(order[position]);
    SDC_CHECK(record < n, "the ordering names records of the block");
    double squares = 0.0;
    for (std::size_t j = 0; j < p; ++j) {
      const double value = standardised.columns[j][record];
      sum[(position + 1) * p + j] = sum[position * p + j] + value;
      squares += value * value;
    }
    sum_of_squares[position + 1] = sum_of_squares[position] + squares;
  }
  const auto size = static_cast<std::size_t>(k);
  const auto start = shortest_segmentation(n, size, [&](std::size_t i, std::size_t j) {
    double centre = 0.0;
    for (std::size_t v = 0; v < p; ++v) {
      const double run_sum = sum[j * p + v] - sum[i * p + v];
      centre += run_sum * run_sum;
    }
    return (sum_of_squares[j] - sum_of_squares[i]) - centre / static_cast<double>(j - i);
  });
  return grouping_from_runs(order, start, size);
}

}  // namespace sdc::microaggregation
