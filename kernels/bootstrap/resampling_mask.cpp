#include "kernels/bootstrap/resampling_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/bootstrap/replicates.h"
#include "kernels/core/error.h"

namespace sdc {

std::vector<double> resampling_mask(std::span<const double> values, std::span<const std::int64_t> row_ids,
                                    const ResamplingMaskOptions& options) {
  SDC_CHECK(values.size() == row_ids.size(), "one row id per value");
  if (options.samples == 0) throw ParameterError("resampling mask: the number of samples must be at least 1");
  std::vector<double> masked(values.begin(), values.end());

  // Positions of the non-missing values in ascending order, ties by row id.
  std::vector<std::size_t> order;
  order.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isnan(values[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return values[a] < values[b] || (values[a] == values[b] && row_ids[a] < row_ids[b]);
  });
  const std::size_t n = order.size();
  if (n == 0) return masked;

  std::vector<std::uint64_t> positions(n);
  std::iota(positions.begin(), positions.end(), std::uint64_t{0});
  ReplicateDesign design = ReplicateDesign::multinomial(options.seed, n);
  design.step = StepId::kResamplingMask;
  std::vector<std::uint32_t> counts(n);
  std::vector<double> sums(n, 0.0);
  for (std::uint64_t sample = 1; sample <= options.samples; ++sample) {
    fill_multiplicities(design, sample, sample + 1, positions, counts);
    // The j-th order statistic of the sample is x_(i) for the first i whose running count reaches j.
    std::size_t j = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::uint32_t c = 0; c < counts[i]; ++c) sums[j++] += values[order[i]];
    SDC_CHECK(j == n, "a multinomial sample draws n values");
  }
  for (std::size_t j = 0; j < n; ++j) masked[order[j]] = sums[j] / static_cast<double>(options.samples);
  return masked;
}

}  // namespace sdc
