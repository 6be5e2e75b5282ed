#include "kernels/recoding/local_suppression.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "kernels/core/error.h"
#include "kernels/core/key_grouping.h"
#include "kernels/risk/frequency_count.h"
#include "kernels/risk/wildcard_frequency.h"

namespace sdc::recoding {
namespace {

/// Key columns over `columns` (any range of spans or vectors of codes), for the frequency kernels.
template <typename Columns>
KeyColumns key_columns(const Columns& columns, std::span<const std::int32_t> level_counts) {
  KeyColumns keys;
  for (const auto& column : columns) keys.codes.emplace_back(column);
  keys.level_counts.assign(level_counts.begin(), level_counts.end());
  return keys;
}

/// f of every record of `keys`, wildcard semantics.
std::vector<double> frequencies(const KeyColumns& keys, double alpha) {
  const LocalFrequencyCount patterns = frequency_count_local(keys, {});
  const PatternFrequencies per_pattern = wildcard_frequency(patterns.classes, keys.level_counts, alpha);
  std::vector<double> f(patterns.record_class.size());
  for (std::size_t r = 0; r < f.size(); ++r) f[r] = per_pattern.f[patterns.record_class[r]];
  return f;
}

std::int64_t below(const std::vector<double>& f, std::int64_t k) {
  return std::count_if(f.begin(), f.end(), [&](double value) { return value < static_cast<double>(k); });
}

}  // namespace

void check_local_suppression_options(std::size_t key_count, const LocalSuppressionOptions& options) {
  if (options.k < 1) throw ParameterError("local suppression: k must be at least 1");
  if (!(options.alpha >= 0.0 && options.alpha <= 1.0))
    throw ParameterError("local suppression: alpha must lie in [0, 1]");
  if (!options.importance.empty()) {
    if (options.importance.size() != key_count)
      throw ParameterError("local suppression: importance needs one value per key (" + std::to_string(key_count) +
                           "), not " + std::to_string(options.importance.size()));
    for (const std::int32_t rank : options.importance)
      if (rank < 1 || static_cast<std::size_t>(rank) > key_count)
        throw ParameterError("local suppression: importance " + std::to_string(rank) + " outside 1.." +
                             std::to_string(key_count));
  }
}

std::vector<std::int32_t> default_importance(std::span<const std::int32_t> level_counts) {
  std::vector<std::size_t> order(level_counts.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return level_counts[a] < level_counts[b]; });
  std::vector<std::int32_t> importance(level_counts.size());
  for (std::size_t rank = 0; rank < order.size(); ++rank) importance[order[rank]] = static_cast<std::int32_t>(rank) + 1;
  return importance;
}

LocalSuppressionResult suppress_to_k_anonymity(std::span<const std::span<std::int32_t>> keys,
                                               std::span<const std::int32_t> level_counts,
                                               const LocalSuppressionOptions& options) {
  const std::size_t m = keys.size();
  check_local_suppression_options(m, options);
  if (level_counts.size() != m) throw InternalError("local suppression: one level count per key is needed");
  const std::size_t n = m == 0 ? 0 : keys.front().size();
  LocalSuppressionResult result;
  result.suppressed.assign(m, 0);
  if (m == 0 || n == 0) return result;

  const std::vector<std::int32_t> importance =
      options.importance.empty() ? default_importance(level_counts) : options.importance;
  std::vector<std::size_t> suppression_order(m);
  std::iota(suppression_order.begin(), suppression_order.end(), std::size_t{0});
  std::stable_sort(suppression_order.begin(), suppression_order.end(),
                   [&](std::size_t a, std::size_t b) { return importance[a] > importance[b]; });

  // The whole data, read in place (the suppressions are written back only at the end).
  const KeyColumns all = key_columns(keys, level_counts);
  result.violators_before = below(frequencies(all, options.alpha), options.k);
  // The working set Y: the first k records of every exact tuple, in record order.
  std::vector<std::size_t> origin;
  {
    const LocalFrequencyCount tuples = frequency_count_local(all, {});
    std::vector<std::int64_t> seen(tuples.classes.class_count(), 0);
    for (std::size_t r = 0; r < n; ++r)
      if (seen[tuples.record_class[r]]++ < options.k) origin.push_back(r);
  }
  const std::size_t y = origin.size();
  std::vector<std::vector<std::int32_t>> columns(m, std::vector<std::int32_t>(y));
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t i = 0; i < y; ++i) columns[j][i] = keys[j][origin[i]];

  std::vector<std::uint8_t> touched(y, 0);
  std::vector<std::int32_t> distance(y);
  for (;;) {
    const std::vector<double> f = frequencies(key_columns(columns, level_counts), options.alpha);
    if (below(f, options.k) == 0 || !result.impossible.empty()) break;
    std::vector<std::size_t> listed;
    for (std::size_t i = 0; i < y; ++i)
      if (f[i] < static_cast<double>(options.k)) listed.push_back(i);
    std::stable_sort(listed.begin(), listed.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
    ++result.passes;
    for (const std::size_t p : listed) {
      std::fill(distance.begin(), distance.end(), 0);
      for (std::size_t j = 0; j < m; ++j) {
        const std::int32_t own = columns[j][p];
        if (own < 0) continue;
        const std::vector<std::int32_t>& column = columns[j];
        for (std::size_t i = 0; i < y; ++i) distance[i] += (column[i] >= 0 && column[i] != own) ? 1 : 0;
      }
      auto nearest = static_cast<std::int32_t>(m);
      for (const std::int32_t d : distance)
        if (d > 0 && d < nearest) nearest = d;
      std::optional<std::size_t> chosen;
      for (const std::size_t j : suppression_order) {
        const std::int32_t own = columns[j][p];
        if (own < 0) continue;
        for (std::size_t i = 0; i < y && !chosen; ++i)
          if (distance[i] == nearest && columns[j][i] >= 0 && columns[j][i] != own) chosen = j;
        if (chosen) break;
      }
      if (!chosen) {
        // Every record agrees with p wherever both are observed.
        if (options.alpha == 1.0) {
          result.impossible = "record " + std::to_string(origin[p] + 1) + " has f = " + std::to_string(f[p]) +
                              " < k, and every record agrees with it on every key both observe (a wildcard "
                              "matches everything with alpha = 1): no suppression can raise its count";
          break;
        }
        for (const std::size_t j : suppression_order)
          if (columns[j][p] >= 0) {
            chosen = j;
            break;
          }
        if (!chosen) {
          result.impossible = "record " + std::to_string(origin[p] + 1) + " has f = " + std::to_string(f[p]) +
                              " < k with every key suppressed already";
          break;
        }
      }
      columns[*chosen][p] = -1;
      ++result.suppressed[*chosen];
      touched[p] = 1;
    }
  }
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t i = 0; i < y; ++i) keys[j][origin[i]] = columns[j][i];
  result.records_touched = std::count(touched.begin(), touched.end(), std::uint8_t{1});
  result.violators_after = below(frequencies(all, options.alpha), options.k);
  return result;
}

}  // namespace sdc::recoding
