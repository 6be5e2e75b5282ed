#include "kernels/risk/frequency_count.h"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "kernels/core/error.h"

namespace sdc {

namespace {

/// The counts and exact weight sums of the classes of `grouping`.
void count_classes(const KeyGrouping& grouping, std::span<const double> weights, FrequencyClasses& classes) {
  SDC_CHECK(weights.empty() || weights.size() == grouping.record_class.size(), "one weight per record");
  const std::size_t count = grouping.class_count();
  classes.key_count = grouping.key_count;
  classes.counts.resize(count);
  classes.weights.resize(count);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1 << 14), [&](const auto& range) {
    for (std::size_t c = range.begin(); c != range.end(); ++c) {
      classes.counts[c] = grouping.class_size(c);
      ExactSum& sum = classes.weights[c];
      for (std::uint32_t p = grouping.class_offsets[c]; p < grouping.class_offsets[c + 1]; ++p)
        sum.add(weights.empty() ? 1.0 : weights[grouping.sorted_records[p]]);
    }
  });
}

}  // namespace

LocalFrequencyCount frequency_count_local(const KeyColumns& keys, std::span<const double> weights) {
  KeyGrouping grouping = group_by_keys(keys);
  LocalFrequencyCount local;
  count_classes(grouping, weights, local.classes);
  local.classes.class_keys = std::move(grouping.class_keys);
  local.record_class = std::move(grouping.record_class);
  return local;
}

LocalFrequencyCount frequency_count_local(const KeyGrouping& grouping, std::span<const double> weights) {
  LocalFrequencyCount local;
  count_classes(grouping, weights, local.classes);
  local.classes.class_keys = grouping.class_keys;
  local.record_class = grouping.record_class;
  return local;
}

namespace {

FrequencyClasses frequency_count_merged(const FrequencyClasses& a, const FrequencyClasses& b) {
  if (a.class_count() == 0) return b;
  if (b.class_count() == 0) return a;
  SDC_CHECK(a.key_count == b.key_count, "merging class lists of different keys");
  FrequencyClasses out;
  out.key_count = a.key_count;
  out.counts.reserve(a.class_count() + b.class_count());
  const auto take = [&](const FrequencyClasses& from, std::size_t c) {
    const auto key = from.key(c);
    out.class_keys.insert(out.class_keys.end(), key.begin(), key.end());
    out.counts.push_back(from.counts[c]);
    out.weights.push_back(from.weights[c]);
  };
  std::size_t i = 0, j = 0;
  while (i < a.class_count() || j < b.class_count()) {
    const int order = i == a.class_count() ? 1 : j == b.class_count() ? -1 : compare_key_tuples(a.key(i), b.key(j));
    if (order < 0) {
      take(a, i++);
    } else if (order > 0) {
      take(b, j++);
    } else {
      take(a, i++);
      out.counts.back() += b.counts[j];
      out.weights.back().merge(b.weights[j]);
      ++j;
    }
  }
  return out;
}

}  // namespace

void frequency_count_merge(FrequencyClasses& into, const FrequencyClasses& from) {
  into = frequency_count_merged(into, from);
}

RecordFrequencies frequency_count_assign(std::span<const std::uint32_t> record_class,
                                         std::span<const std::int64_t> class_counts,
                                         std::span<const double> class_weights) {
  RecordFrequencies out;
  out.fk.resize(record_class.size());
  out.fk_weighted.resize(record_class.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, record_class.size(), 1 << 16), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      out.fk[i] = static_cast<double>(class_counts[record_class[i]]);
      out.fk_weighted[i] = class_weights[record_class[i]];
    }
  });
  return out;
}

FrequencySummary frequency_count_finalize(std::span<const std::int64_t> class_counts, std::int64_t k) {
  FrequencySummary summary;
  summary.k = k;
  summary.classes = static_cast<std::int64_t>(class_counts.size());
  for (std::int64_t f : class_counts) {
    summary.records += f;
    if (f == 1) ++summary.sample_uniques;
    if (f < k) {
      summary.records_below_k += f;
      ++summary.classes_below_k;
    }
  }
  return summary;
}

std::optional<MissingKey> first_missing_key(const KeyColumns& keys) {
  std::optional<MissingKey> first;
  for (std::size_t j = 0; j < keys.key_count(); ++j) {
    const auto& column = keys.codes[j];
    const auto it = std::find(column.begin(), column.end(), -1);
    if (it == column.end()) continue;
    const auto record = static_cast<std::size_t>(it - column.begin());
    if (!first || record < first->record) first = MissingKey{j, record};
  }
  return first;
}

}  // namespace sdc
