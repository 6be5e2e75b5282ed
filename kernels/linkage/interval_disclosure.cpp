#include "kernels/linkage/interval_disclosure.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "kernels/core/error.h"
#include "kernels/distance/whitening.h"

namespace sdc::linkage {

IntervalSdPartial interval_sd_local(const NumericColumns& masked) {
  const std::size_t p = masked.variables();
  IntervalSdPartial partial;
  partial.counts.assign(p, 0);
  partial.sums.resize(p);
  partial.squares.resize(p);
  for (std::size_t j = 0; j < p; ++j) {
    for (double x : masked.columns[j]) {
      if (std::isnan(x)) continue;
      ++partial.counts[j];
      partial.sums[j].add(x);
      const double high = x * x;
      partial.squares[j].add(high);
      partial.squares[j].add(std::fma(x, x, -high));
    }
  }
  return partial;
}

void interval_sd_merge(IntervalSdPartial& into, const IntervalSdPartial& from) {
  if (into.counts.empty()) {
    into = from;
    return;
  }
  if (from.counts.empty()) return;
  SDC_CHECK(into.counts.size() == from.counts.size(), "partials of the same variables");
  for (std::size_t j = 0; j < into.counts.size(); ++j) {
    into.counts[j] += from.counts[j];
    into.sums[j].merge(from.sums[j]);
    into.squares[j].merge(from.squares[j]);
  }
}

std::vector<double> interval_sd_finalize(const IntervalSdPartial& total) {
  std::vector<double> sds(total.counts.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t j = 0; j < sds.size(); ++j) {
    if (total.counts[j] < 2) continue;
    sds[j] = std::sqrt(
        std::max(0.0, distance::exact_covariance(total.counts[j], total.sums[j], total.sums[j], total.squares[j])));
  }
  return sds;
}

IntervalDisclosure interval_disclosure_check(const NumericColumns& original, const NumericColumns& masked,
                                             std::span<const double> masked_sd, double k) {
  require_aligned(original, masked, "interval disclosure");
  if (!(k >= 0.0)) throw ParameterError("the interval disclosure width k must not be negative");
  const std::size_t p = original.variables();
  SDC_CHECK(masked_sd.size() == p, "one sd per variable");
  IntervalDisclosure result;
  const std::size_t n = original.records();
  result.records = static_cast<std::int64_t>(n);
  result.record_disclosed.assign(n, 1);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      for (std::size_t j = 0; j < p; ++j) {
        const double value = original.columns[j][i];
        const double centre = masked.columns[j][i];
        if (std::isnan(value) || std::isnan(centre)) continue;
        const double half_width = k * masked_sd[j];
        if (!(value >= centre - half_width && value <= centre + half_width)) {
          result.record_disclosed[i] = 0;
          break;
        }
      }
    }
  });
  result.disclosed = std::count(result.record_disclosed.begin(), result.record_disclosed.end(), std::uint8_t{1});
  return result;
}

void interval_disclosure_merge(IntervalDisclosure& into, const IntervalDisclosure& from) {
  into.records += from.records;
  into.disclosed += from.disclosed;
}

IntervalDisclosure interval_disclosure_sd(const NumericColumns& original, const NumericColumns& masked, double k) {
  require_aligned(original, masked, "interval disclosure");
  const auto sds = interval_sd_finalize(interval_sd_local(masked));
  return interval_disclosure_check(original, masked, sds, k);
}

RankIntervalDisclosure interval_disclosure_rank(const NumericColumns& original, const NumericColumns& masked,
                                                double percent) {
  require_aligned(original, masked, "interval disclosure");
  if (!(percent > 0.0 && percent <= 100.0)) {
    throw ParameterError("the rank interval percentage must lie in (0, 100]");
  }
  const std::size_t n = original.records();
  const std::size_t p = original.variables();
  RankIntervalDisclosure result;
  result.records = static_cast<std::int64_t>(n);
  std::vector<std::uint8_t> disclosed(n, 1);
  std::vector<std::size_t> order;
  std::vector<std::size_t> rank(n);
  for (std::size_t j = 0; j < p; ++j) {
    const auto& values = masked.columns[j];
    order.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isnan(values[i])) order.push_back(i);
    }
    // Row ids ascend within a file, so the record index breaks ties as the row id does.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
    const std::size_t present = order.size();
    if (present == 0) continue;
    for (std::size_t r = 0; r < present; ++r) rank[order[r]] = r;
    const auto window = static_cast<std::size_t>(
        std::clamp(std::ceil(percent * static_cast<double>(present) / 200.0), 1.0, static_cast<double>(present)));
    for (std::size_t i = 0; i < n; ++i) {
      const double value = original.columns[j][i];
      if (std::isnan(values[i]) || std::isnan(value)) continue;
      const std::size_t r = rank[i];
      const double low = values[order[r >= window ? r - window : 0]];
      const double high = values[order[std::min(present - 1, r + window)]];
      ++result.values_compared;
      if (value >= low && value <= high) {
        ++result.values_inside;
      } else {
        disclosed[i] = 0;
      }
    }
  }
  result.records_disclosed = std::count(disclosed.begin(), disclosed.end(), std::uint8_t{1});
  return result;
}

}  // namespace sdc::linkage
