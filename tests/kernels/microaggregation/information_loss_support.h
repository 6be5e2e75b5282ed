#pragma once
// Information loss as the method notes publish it (docs/methods/microaggregation.md §1): SSE and SST
// of the z-scores, both standardised with the moments of the original file.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/core/numeric_columns.h"
#include "kernels/microaggregation/grouping.h"

namespace sdc::microaggregation::testing {

struct Loss {
  double sse = 0.0;
  double sst = 0.0;
  double il() const { return 100.0 * sse / sst; }
};

inline NumericData owning(const std::vector<std::vector<double>>& columns, const NumericColumns& like) {
  NumericData data;
  data.names = like.names;
  data.columns = columns;
  data.row_ids.assign(like.row_ids.begin(), like.row_ids.end());
  return data;
}

/// SSE between the original and masked values, SST of the original, on z-scores with `moments`.
inline Loss information_loss(const NumericColumns& original, const std::vector<std::vector<double>>& masked,
                             const Moments& moments) {
  const NumericData z = standardise(original, moments);
  const NumericData masked_data = owning(masked, original);
  const NumericData z_masked = standardise(masked_data.view(), moments);
  ExactSum sse;
  for (std::size_t j = 0; j < z.columns.size(); ++j) {
    for (std::size_t i = 0; i < z.columns[j].size(); ++i) {
      if (std::isnan(z.columns[j][i])) continue;
      const double deviation = z.columns[j][i] - z_masked.columns[j][i];
      sse.add(deviation * deviation);
    }
  }
  return {sse.value(), total_sum_of_squares(z.view())};
}

/// The first `rows` records of `data` (the subset rule of §1).
inline NumericData first_rows(const NumericData& data, std::size_t rows) {
  NumericData subset;
  subset.names = data.names;
  for (const auto& column : data.columns)
    subset.columns.emplace_back(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(rows));
  subset.row_ids.assign(data.row_ids.begin(), data.row_ids.begin() + static_cast<std::ptrdiff_t>(rows));
  return subset;
}

/// One variable of `data` as a data set of its own.
inline NumericData single_variable(const NumericData& data, std::size_t j) {
  NumericData one;
  one.names = {data.names[j]};
  one.columns = {data.columns[j]};
  one.row_ids = data.row_ids;
  return one;
}

/// Columns given in the tests by value, with row ids 0 … n − 1.
inline NumericData columns_of(const std::vector<std::vector<double>>& columns) {
  NumericData data;
  for (std::size_t j = 0; j < columns.size(); ++j) data.names.push_back("v" + std::to_string(j));
  data.columns = columns;
  for (std::size_t i = 0; i < columns.front().size(); ++i) data.row_ids.push_back(static_cast<std::int64_t>(i));
  return data;
}

/// `value` rounded to `digits` decimals, for comparing with printed figures.
inline double rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace sdc::microaggregation::testing
