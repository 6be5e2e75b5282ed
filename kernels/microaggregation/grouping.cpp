#include "kernels/microaggregation/grouping.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"

namespace sdc::microaggregation {

namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

void check_grouping(const NumericColumns& x, const Grouping& grouping) {
  SDC_CHECK(grouping.group_of_record.size() == x.records(), "a grouping covers every record of its block");
  for (const std::int32_t group : grouping.group_of_record) {
    SDC_CHECK(group >= 0 && group < grouping.group_count, "group ids lie in 0 … group_count − 1");
  }
}

/// Records of each group, in record order (CSR: members[offsets[g] … offsets[g+1])).
struct Members {
  std::vector<std::int64_t> offsets;
  std::vector<std::int64_t> records;
};

Members members_of(const Grouping& grouping) {
  Members members;
  const auto groups = static_cast<std::size_t>(grouping.group_count);
  members.offsets.assign(groups + 1, 0);
  for (const std::int32_t group : grouping.group_of_record) ++members.offsets[static_cast<std::size_t>(group) + 1];
  for (std::size_t g = 0; g < groups; ++g) members.offsets[g + 1] += members.offsets[g];
  members.records.resize(grouping.group_of_record.size());
  std::vector<std::int64_t> next(members.offsets.begin(), members.offsets.end() - 1);
  for (std::size_t i = 0; i < grouping.group_of_record.size(); ++i) {
    const auto group = static_cast<std::size_t>(grouping.group_of_record[i]);
    members.records[static_cast<std::size_t>(next[group]++)] = static_cast<std::int64_t>(i);
  }
  return members;
}

double median_of(std::vector<double>& values) {
  if (values.empty()) return kMissing;
  const std::size_t half = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half), values.end());
  const double upper = values[half];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half));
  return lower + (upper - lower) / 2.0;
}

}  // namespace

std::vector<std::vector<double>> aggregate(const NumericColumns& x, const Grouping& grouping, Aggregation aggregation,
                                           const AggregateOptions& options) {
  check_grouping(x, grouping);
  const std::size_t n = x.records();
  const auto groups = static_cast<std::size_t>(grouping.group_count);
  std::vector<std::vector<double>> masked(x.variables(), std::vector<double>(n, kMissing));
  std::vector<double> statistic(groups);
  std::vector<std::int64_t> rows(groups, 0);
  for (const std::int32_t group : grouping.group_of_record) ++rows[static_cast<std::size_t>(group)];
  const Members members = aggregation == Aggregation::kMedian ? members_of(grouping) : Members{};
  std::vector<double> values;
  for (std::size_t j = 0; j < x.variables(); ++j) {
    const auto column = x.columns[j];
    if (aggregation == Aggregation::kMean) {
      std::vector<ExactSum> sums(groups);
      std::vector<std::int64_t> present(groups, 0);
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(column[i])) continue;
        const auto group = static_cast<std::size_t>(grouping.group_of_record[i]);
        sums[group].add(column[i]);
        ++present[group];
      }
      for (std::size_t g = 0; g < groups; ++g) {
        const bool by_rows = static_cast<std::int64_t>(g) == options.divide_by_rows_group;
        const std::int64_t divisor = by_rows ? rows[g] : present[g];
        statistic[g] = present[g] == 0 ? kMissing : sums[g].value() / static_cast<double>(divisor);
      }
    } else {
      for (std::size_t g = 0; g < groups; ++g) {
        values.clear();
        for (auto m = members.offsets[g]; m < members.offsets[g + 1]; ++m) {
          const double value = column[static_cast<std::size_t>(members.records[static_cast<std::size_t>(m)])];
          if (!std::isnan(value)) values.push_back(value);
        }
        statistic[g] = median_of(values);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isnan(column[i])) masked[j][i] = statistic[static_cast<std::size_t>(grouping.group_of_record[i])];
    }
  }
  return masked;
}

std::vector<std::int64_t> group_size_histogram(const Grouping& grouping) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(grouping.group_count), 0);
  for (const std::int32_t group : grouping.group_of_record) ++sizes[static_cast<std::size_t>(group)];
  const std::int64_t largest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::int64_t> histogram(static_cast<std::size_t>(largest) + 1, 0);
  for (const std::int64_t size : sizes) ++histogram[static_cast<std::size_t>(size)];
  return histogram;
}

double within_group_sse(const NumericColumns& standardised, const Grouping& grouping) {
  check_grouping(standardised, grouping);
  const auto groups = static_cast<std::size_t>(grouping.group_count);
  ExactSum total;
  std::vector<double> centroid(groups);
  for (const auto column : standardised.columns) {
    std::vector<ExactSum> sums(groups);
    std::vector<std::int64_t> present(groups, 0);
    for (std::size_t i = 0; i < column.size(); ++i) {
      if (std::isnan(column[i])) continue;
      const auto group = static_cast<std::size_t>(grouping.group_of_record[i]);
      sums[group].add(column[i]);
      ++present[group];
    }
    for (std::size_t g = 0; g < groups; ++g) {
      centroid[g] = present[g] == 0 ? 0.0 : sums[g].value() / static_cast<double>(present[g]);
    }
    for (std::size_t i = 0; i < column.size(); ++i) {
      if (std::isnan(column[i])) continue;
      const double deviation = column[i] - centroid[static_cast<std::size_t>(grouping.group_of_record[i])];
      total.add(deviation * deviation);
    }
  }
  return total.value();
}

double total_sum_of_squares(const NumericColumns& standardised) {
  const Moments moments = population_moments(standardised);
  ExactSum total;
  for (std::size_t j = 0; j < standardised.variables(); ++j) {
    for (const double value : standardised.columns[j]) {
      if (std::isnan(value)) continue;
      const double deviation = value - moments.mean[j];
      total.add(deviation * deviation);
    }
  }
  return total.value();
}

Moments population_moments(const NumericColumns& x) {
  Moments moments;
  for (const auto column : x.columns) {
    ExactSum sum;
    std::int64_t present = 0;
    for (const double value : column) {
      if (std::isnan(value)) continue;
      sum.add(value);
      ++present;
    }
    const double mean = present == 0 ? kMissing : sum.value() / static_cast<double>(present);
    ExactSum squares;
    ExactSum raw_squares;
    for (const double value : column) {
      if (std::isnan(value)) continue;
      squares.add((value - mean) * (value - mean));
      raw_squares.add(value * value);
    }
    double sd = 0.0;
    if (present > 0) {
      const double variance = squares.value() / static_cast<double>(present);
      const double mean_square = raw_squares.value() / static_cast<double>(present);
      if (variance > 1e-12 * mean_square) sd = std::sqrt(variance);
    }
    moments.mean.push_back(mean);
    moments.sd.push_back(sd);
  }
  return moments;
}

NumericData standardise(const NumericColumns& x, const Moments& moments) {
  SDC_CHECK(moments.mean.size() == x.variables() && moments.sd.size() == x.variables(), "moments cover every variable");
  NumericData z;
  z.names = x.names;
  z.row_ids.assign(x.row_ids.begin(), x.row_ids.end());
  z.columns.resize(x.variables());
  for (std::size_t j = 0; j < x.variables(); ++j) {
    const double mean = moments.mean[j];
    const double sd = moments.sd[j];
    auto& out = z.columns[j];
    out.resize(x.records());
    for (std::size_t i = 0; i < x.records(); ++i) {
      const double value = x.columns[j][i];
      if (std::isnan(value)) {
        out[i] = kMissing;
      } else {
        out[i] = sd > 0.0 ? (value - mean) / sd : 0.0;
      }
    }
  }
  return z;
}

void require_group_size(int k, std::string_view method) {
  if (k < 1) throw ParameterError(std::string(method) + ": the minimum group size k must be at least 1");
}

}  // namespace sdc::microaggregation
