#include "kernels/recoding/interval_recoding.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::recoding {
namespace {

/// A break as the reference prints it: 8 significant digits (R's format, as printf's %.8g).
std::string printed(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.8g", x);
  return text;
}

void check_increasing(const std::vector<double>& breaks, const char* what) {
  if (breaks.size() < 2) throw ParameterError(std::string(what) + ": at least 2 breaks are needed");
  for (std::size_t i = 0; i < breaks.size(); ++i) {
    if (!std::isfinite(breaks[i]))
      throw ParameterError(std::string(what) + ": break " + std::to_string(i + 1) + " is not finite");
    if (i > 0 && !(breaks[i - 1] < breaks[i]))
      throw ParameterError(std::string(what) + ": break " + std::to_string(i + 1) + " (" + printed(breaks[i]) +
                           ") is not above break " + std::to_string(i) + " (" + printed(breaks[i - 1]) + ")");
  }
}

}  // namespace

std::vector<std::string> IntervalBreaks::labels() const {
  std::vector<std::string> result;
  result.reserve(breaks.size() - 1);
  for (std::size_t i = 1; i < breaks.size(); ++i)
    result.push_back((i == 1 && first_closed ? "[" : "(") + printed(breaks[i - 1]) + "," + printed(breaks[i]) + "]");
  return result;
}

IntervalBreaks explicit_breaks(std::vector<double> breaks) {
  check_increasing(breaks, "interval recoding");
  IntervalBreaks result;
  result.breaks = std::move(breaks);
  return result;
}

IntervalBreaks equidistant_breaks(double min, double max, std::int32_t count, bool logarithmic) {
  if (count < 1) throw ParameterError("interval recoding: the number of intervals must be at least 1");
  if (!(min <= max)) throw ParameterError("interval recoding: no values to take the breaks from");
  IntervalBreaks result;
  if (count == 1) {
    result.breaks = {min - 1.0, max + 1.0};
    return result;
  }
  if (logarithmic && !(min > 0.0))
    throw ParameterError("interval recoding: logarithmic breaks need values above 0 (the smallest is " + printed(min) +
                         ")");
  const double low = logarithmic ? std::log(min) - 1.0 : min - 1.0;
  const double high = logarithmic ? std::log(max) + 1.0 : max + 1.0;
  // R's seq(low, high, length.out = count + 1): low + i·by, by = (high − low) / count, the last point high.
  const double by = (high - low) / count;
  std::vector<double> points(static_cast<std::size_t>(count) + 1);
  for (std::int32_t i = 0; i <= count; ++i) points[static_cast<std::size_t>(i)] = i == count ? high : low + i * by;
  if (logarithmic)
    for (double& point : points) point = std::exp(point);
  std::vector<double> rounded(points.size());
  std::transform(points.begin(), points.end(), rounded.begin(), [](double x) { return std::nearbyint(x); });
  result.breaks =
      std::adjacent_find(rounded.begin(), rounded.end()) == rounded.end() ? std::move(rounded) : std::move(points);
  result.first_closed = true;
  check_increasing(result.breaks, "interval recoding");
  return result;
}

IntervalBreaks quantile_breaks(std::span<const double> quantiles) {
  if (quantiles.size() < 2) throw ParameterError("interval recoding: at least 2 quantiles are needed");
  IntervalBreaks result;
  for (const double q : quantiles) {
    if (std::isnan(q)) throw ParameterError("interval recoding: a quantile break is missing (no values?)");
    if (!result.breaks.empty() && q <= result.breaks.back()) {
      ++result.merged_repeats;
      continue;
    }
    result.breaks.push_back(q);
  }
  if (result.breaks.size() < 2)
    throw ParameterError("interval recoding: every quantile is the same value; no interval is left");
  result.first_closed = true;
  return result;
}

std::vector<std::int32_t> interval_codes(std::span<const double> values, const IntervalBreaks& breaks) {
  std::vector<std::int32_t> codes(values.size());
  const std::vector<double>& b = breaks.breaks;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, values.size(), 1 << 14), [&](const auto& range) {
    for (std::size_t r = range.begin(); r != range.end(); ++r) {
      const double x = values[r];
      std::int32_t code = -1;
      if (!std::isnan(x) && x <= b.back() && (x > b.front() || (breaks.first_closed && x == b.front()))) {
        // The first break not below x closes x's interval (b_{i−1}, b_i].
        const auto upper = std::lower_bound(b.begin() + 1, b.end(), x);
        code = static_cast<std::int32_t>(upper - b.begin()) - 1;
      }
      codes[r] = code;
    }
  });
  return codes;
}

std::int64_t code_tail(std::span<double> values, TailSide side, double threshold, double replacement) {
  if (!std::isfinite(threshold) || !std::isfinite(replacement))
    throw ParameterError("top and bottom coding: the threshold and the replacement must be finite");
  std::int64_t replaced = 0;
  for (double& x : values) {
    // NaN compares false both ways: missing values stay as they are.
    if (side == TailSide::kTop ? x > threshold : x < threshold) {
      x = replacement;
      ++replaced;
    }
  }
  return replaced;
}

}  // namespace sdc::recoding
