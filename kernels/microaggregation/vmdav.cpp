#include "kernels/microaggregation/vmdav.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/core/error.h"

namespace sdc::microaggregation {

namespace {

class RowMajor {
 public:
  explicit RowMajor(const NumericColumns& x) : p_(x.variables()), values_(x.records() * x.variables()) {
    for (std::size_t j = 0; j < p_; ++j) {
      for (std::size_t i = 0; i < x.records(); ++i) values_[i * p_ + j] = x.columns[j][i];
    }
  }
  const double* row(std::size_t i) const { return values_.data() + i * p_; }
  double squared_distance(std::size_t i, const double* point) const {
    const double* a = row(i);
    double sum = 0.0;
    for (std::size_t j = 0; j < p_; ++j) sum += (a[j] - point[j]) * (a[j] - point[j]);
    return sum;
  }
  std::size_t variables() const { return p_; }

 private:
  std::size_t p_;
  std::vector<double> values_;
};

void centroid_of(const RowMajor& data, const std::vector<std::size_t>& rows, std::vector<double>& out) {
  std::fill(out.begin(), out.end(), 0.0);
  for (const std::size_t i : rows) {
    for (std::size_t j = 0; j < out.size(); ++j) out[j] += data.row(i)[j];
  }
  for (double& value : out) value /= static_cast<double>(rows.size());
}

}  // namespace

Grouping vmdav(const NumericColumns& standardised, int k, double gamma) {
  require_group_size(k, "vmdav");
  if (!(gamma >= 0.0)) throw ParameterError("vmdav: the gain factor gamma must be non-negative");
  require_complete(standardised, "vmdav");
  const std::size_t n = standardised.records();
  const auto size = static_cast<std::size_t>(k);
  const RowMajor data(standardised);
  Grouping grouping;
  grouping.group_of_record.assign(n, -1);
  std::vector<std::size_t> remaining(n);  // in record order
  for (std::size_t i = 0; i < n; ++i) remaining[i] = i;
  std::vector<double> centre(data.variables());
  std::vector<double> distance(n);
  std::vector<double> to_group(n);
  std::vector<std::size_t> members;
  std::int32_t next_group = 0;
  auto leave = [&](std::size_t record) {
    grouping.group_of_record[record] = next_group;
    members.push_back(record);
  };
  auto compact = [&]() { std::erase_if(remaining, [&](std::size_t i) { return grouping.group_of_record[i] >= 0; }); };
  while (remaining.size() >= size) {
    members.clear();
    centroid_of(data, remaining, centre);
    std::size_t extreme = remaining.front();
    double farthest = -1.0;
    for (const std::size_t i : remaining) {
      const double d = data.squared_distance(i, centre.data());
      if (d > farthest) {
        farthest = d;
        extreme = i;
      }
    }
    for (const std::size_t i : remaining) distance[i] = data.squared_distance(i, data.row(extreme));
    std::vector<std::size_t> by_distance = remaining;
    const auto closer = [&](std::size_t a, std::size_t b) {
      return distance[a] < distance[b] || (distance[a] == distance[b] && a < b);
    };
    std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(size), by_distance.end(),
                      closer);
    leave(extreme);
    for (std::size_t m = 0; members.size() < size; ++m) {
      if (by_distance[m] != extreme) leave(by_distance[m]);
    }
    compact();
    for (const std::size_t i : remaining) {
      to_group[i] = std::numeric_limits<double>::infinity();
      for (const std::size_t member : members)
        to_group[i] = std::min(to_group[i], data.squared_distance(i, data.row(member)));
    }
    while (members.size() < 2 * size - 1 && !remaining.empty() && gamma > 0.0) {
      std::size_t candidate = remaining.front();
      for (const std::size_t i : remaining) {
        if (to_group[i] < to_group[candidate]) candidate = i;
      }
      double outside = std::numeric_limits<double>::infinity();
      for (const std::size_t i : remaining) {
        if (i != candidate) outside = std::min(outside, data.squared_distance(i, data.row(candidate)));
      }
      if (!(std::sqrt(to_group[candidate]) < gamma * std::sqrt(outside))) break;
      leave(candidate);
      compact();
      for (const std::size_t i : remaining) {
        to_group[i] = std::min(to_group[i], data.squared_distance(i, data.row(candidate)));
      }
    }
    ++next_group;
  }
  if (!remaining.empty() && next_group > 0) {
    const auto groups = static_cast<std::size_t>(next_group);
    std::vector<double> centroids(groups * data.variables(), 0.0);
    std::vector<std::int64_t> counts(groups, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t group = grouping.group_of_record[i];
      if (group < 0) continue;
      const auto g = static_cast<std::size_t>(group);
      for (std::size_t j = 0; j < data.variables(); ++j) centroids[g * data.variables() + j] += data.row(i)[j];
      ++counts[g];
    }
    for (std::size_t g = 0; g < groups; ++g) {
      for (std::size_t j = 0; j < data.variables(); ++j)
        centroids[g * data.variables() + j] /= static_cast<double>(counts[g]);
    }
    for (const std::size_t i : remaining) {
      std::size_t nearest = 0;
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t g = 0; g < groups; ++g) {
        const double d = data.squared_distance(i, centroids.data() + g * data.variables());
        if (d < best) {
          best = d;
          nearest = g;
        }
      }
      grouping.group_of_record[i] = static_cast<std::int32_t>(nearest);
    }
  } else if (!remaining.empty()) {
    for (const std::size_t i : remaining) grouping.group_of_record[i] = 0;
    next_group = 1;
  }
  grouping.group_count = next_group;
  return grouping;
}

}  // namespace sdc::microaggregation
