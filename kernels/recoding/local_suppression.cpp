#include "kernels/recoding/local_suppression.h"

#include <absl/container/flat_hash_map.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
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

/// The nearest rows of a listed record (recoding.md §4, "Native, same result"): the smallest positive
/// distance, counting the keys both observe and on which they differ, and in bit j whether some row at
/// that distance is observed and different on key j. No row at a positive distance: distance 0, no bit.
struct Nearest {
  std::int32_t distance = 0;
  std::uint64_t differing = 0;
};

Nearest merge(const Nearest& a, const Nearest& b) {
  if (a.distance == 0) return b;
  if (b.distance == 0 || a.distance < b.distance) return a;
  if (b.distance < a.distance) return b;
  return {a.distance, a.differing | b.differing};
}

/// Distinct key tuples with their multiplicities: the rows a listed record is compared with, each
/// tuple once (the distance and the differing keys depend on the tuple alone), indexed by their values
/// so that the rows near a record are found without comparing it with every tuple.
class PatternIndex {
 public:
  PatternIndex(std::span<const std::int32_t> level_counts)
      : m_(level_counts.size()), key_(m_ * sizeof(std::int32_t), '\0'), with_value_(m_), missing_(m_) {
    for (std::size_t j = 0; j < m_; ++j) with_value_[j].resize(static_cast<std::size_t>(level_counts[j]));
  }

  /// Adds one row of `tuple`; returns the tuple's index.
  std::size_t add(std::span<const std::int32_t> tuple) {
    std::memcpy(key_.data(), tuple.data(), key_.size());
    const auto [it, added] = index_.try_emplace(key_, counts_.size());
    if (added) {
      const auto t = static_cast<std::uint32_t>(counts_.size());
      tuples_.insert(tuples_.end(), tuple.begin(), tuple.end());
      counts_.push_back(0);
      seen_.push_back(0);
      for (std::size_t j = 0; j < m_; ++j)
        (tuple[j] < 0 ? missing_[j] : with_value_[j][static_cast<std::size_t>(tuple[j])]).push_back(t);
    }
    ++counts_[it->second];
    return it->second;
  }
  /// Removes one row of `tuple`, which is present (its tuple stays indexed, with no row).
  void remove(std::span<const std::int32_t> tuple) {
    std::memcpy(key_.data(), tuple.data(), key_.size());
    --counts_[index_.at(key_)];
  }
  std::size_t size() const { return counts_.size(); }
  std::span<const std::int32_t> tuple(std::size_t t) const { return {tuples_.data() + t * m_, m_}; }

  /// The nearest of the rows present to `own`, over those at a distance of at most `limit` (every row
  /// when `limit` reaches the keys `own` observes). Not thread-safe (it marks the tuples it visits).
  Nearest nearest_within(std::span<const std::int32_t> own, std::int32_t limit) {
    // A row within `limit` differs on at most `limit` of own's observed keys, so it agrees with own
    // (or misses the value) on at least one of any limit + 1 of them: the most selective ones.
    std::vector<std::pair<std::size_t, std::size_t>> keys;  // (rows to visit, key)
    for (std::size_t j = 0; j < m_; ++j)
      if (own[j] >= 0)
        keys.emplace_back(with_value_[j][static_cast<std::size_t>(own[j])].size() + missing_[j].size(), j);
    Nearest best;
    if (static_cast<std::size_t>(limit) >= keys.size()) {
      for (std::size_t t = 0; t < counts_.size(); ++t) best = closer(best, own, t);
      return best;
    }
    std::partial_sort(keys.begin(), keys.begin() + limit + 1, keys.end());
    ++stamp_;
    for (std::size_t i = 0; i <= static_cast<std::size_t>(limit); ++i) {
      const std::size_t j = keys[i].second;
      for (const auto* list : {&with_value_[j][static_cast<std::size_t>(own[j])], &missing_[j]})
        for (const std::uint32_t t : *list) {
          if (seen_[t] == stamp_) continue;
          seen_[t] = stamp_;
          best = closer(best, own, t);
        }
    }
    if (best.distance > limit) return {};
    return best;
  }

  /// The nearest of the rows present to `own`: the smallest limit that finds one.
  Nearest nearest(std::span<const std::int32_t> own) {
    const auto observed =
        static_cast<std::int32_t>(std::count_if(own.begin(), own.end(), [](std::int32_t code) { return code >= 0; }));
    for (std::int32_t limit = 1; limit < observed; ++limit) {
      const Nearest found = nearest_within(own, limit);
      if (found.distance > 0) return found;
    }
    return nearest_within(own, observed);
  }

 private:
  Nearest closer(const Nearest& best, std::span<const std::int32_t> own, std::size_t t) const {
    if (counts_[t] == 0) return best;
    const std::int32_t* other = tuples_.data() + t * m_;
    std::int32_t distance = 0;
    std::uint64_t differing = 0;
    for (std::size_t j = 0; j < m_; ++j)
      if (own[j] >= 0 && other[j] >= 0 && other[j] != own[j]) {
        ++distance;
        differing |= std::uint64_t{1} << j;
      }
    return distance > 0 ? merge(best, {distance, differing}) : best;
  }

  std::size_t m_;
  std::string key_;
  absl::flat_hash_map<std::string, std::size_t> index_;
  std::vector<std::int32_t> tuples_;
  std::vector<std::int64_t> counts_;
  std::vector<std::vector<std::vector<std::uint32_t>>> with_value_;  // [key][value]: tuples
  std::vector<std::vector<std::uint32_t>> missing_;                  // [key]: tuples missing it
  std::vector<std::uint64_t> seen_;
  std::uint64_t stamp_ = 0;
};

/// How a pass finds each listed record's nearest rows: the rows of the working set, in their current
/// state (one column of codes per key).
class NearestSearch {
 public:
  virtual ~NearestSearch() = default;
  /// The nearest rows of listed row p, which is in its state before this pass.
  virtual Nearest nearest(std::size_t p) = 0;
  /// Listed row p, whose tuple is `tuple`, loses the value of key `key` (before the columns change).
  virtual void suppress(std::size_t p, std::span<const std::int32_t> tuple, std::size_t key) = 0;
};

/// The reference's search: p against every row of the working set.
class RecordScan final : public NearestSearch {
 public:
  explicit RecordScan(const std::vector<std::vector<std::int32_t>>& columns)
      : columns_(columns), distance_(columns.front().size()), differing_(columns.front().size()) {}

  Nearest nearest(std::size_t p) override {
    std::fill(distance_.begin(), distance_.end(), 0);
    std::fill(differing_.begin(), differing_.end(), 0);
    for (std::size_t j = 0; j < columns_.size(); ++j) {
      const std::int32_t own = columns_[j][p];
      if (own < 0) continue;
      const std::vector<std::int32_t>& column = columns_[j];
      for (std::size_t i = 0; i < column.size(); ++i)
        if (column[i] >= 0 && column[i] != own) {
          ++distance_[i];
          differing_[i] |= std::uint64_t{1} << j;
        }
    }
    Nearest best;
    for (std::size_t i = 0; i < distance_.size(); ++i)
      if (distance_[i] > 0) best = merge(best, {distance_[i], differing_[i]});
    return best;
  }
  void suppress(std::size_t, std::span<const std::int32_t>, std::size_t) override {}

 private:
  const std::vector<std::vector<std::int32_t>>& columns_;
  std::vector<std::int32_t> distance_;
  std::vector<std::uint64_t> differing_;
};

/// The native search (recoding.md §4, "Native, same result"). Phase A, when the pass starts: each
/// distinct listed tuple against the rows not listed, which the pass never changes, in parallel (a
/// listed row keeps its tuple until its own turn). Phase B, at each turn: the listed rows in their
/// current state, within the distance phase A found.
class IndexedSearch final : public NearestSearch {
 public:
  IndexedSearch(const std::vector<std::vector<std::int32_t>>& columns, std::span<const std::int32_t> level_counts,
                std::span<const std::size_t> listed, std::span<const std::uint8_t> is_listed)
      : m_(columns.size()), tuple_of_listed_(is_listed.size(), 0), current_(level_counts) {
    PatternIndex unlisted(level_counts);
    std::vector<std::int32_t> listed_tuples;  // each distinct listed tuple once
    absl::flat_hash_map<std::string, std::size_t> listed_index;
    std::string key(m_ * sizeof(std::int32_t), '\0');
    std::vector<std::int32_t> tuple(m_);
    for (std::size_t i = 0; i < is_listed.size(); ++i) {
      for (std::size_t j = 0; j < m_; ++j) tuple[j] = columns[j][i];
      if (is_listed[i] == 0) {
        unlisted.add(tuple);
        continue;
      }
      std::memcpy(key.data(), tuple.data(), key.size());
      const auto [it, added] = listed_index.try_emplace(key, listed_index.size());
      if (added) listed_tuples.insert(listed_tuples.end(), tuple.begin(), tuple.end());
      tuple_of_listed_[i] = it->second;
    }
    // Each thread searches a copy of the index (the search marks the tuples it visits).
    fixed_part_.resize(listed_index.size());
    tbb::enumerable_thread_specific<PatternIndex> searchers(unlisted);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, fixed_part_.size()), [&](const auto& range) {
      PatternIndex& searcher = searchers.local();
      for (std::size_t t = range.begin(); t != range.end(); ++t)
        fixed_part_[t] = searcher.nearest(std::span<const std::int32_t>(listed_tuples).subspan(t * m_, m_));
    });
    for (const std::size_t p : listed) {
      for (std::size_t j = 0; j < m_; ++j) tuple[j] = columns[j][p];
      current_.add(tuple);
    }
    columns_ = &columns;
    tuple_.resize(m_);
  }

  Nearest nearest(std::size_t p) override {
    for (std::size_t j = 0; j < m_; ++j) tuple_[j] = (*columns_)[j][p];
    const Nearest& fixed = fixed_part_[tuple_of_listed_[p]];
    return merge(fixed,
                 fixed.distance > 0 ? current_.nearest_within(tuple_, fixed.distance) : current_.nearest(tuple_));
  }

  void suppress(std::size_t, std::span<const std::int32_t> tuple, std::size_t key) override {
    current_.remove(tuple);
    tuple_.assign(tuple.begin(), tuple.end());
    tuple_[key] = -1;
    current_.add(tuple_);
  }

 private:
  std::size_t m_;
  const std::vector<std::vector<std::int32_t>>* columns_ = nullptr;
  std::vector<std::size_t> tuple_of_listed_;
  std::vector<Nearest> fixed_part_;
  PatternIndex current_;
  std::vector<std::int32_t> tuple_;  // a turn's scratch
};

}  // namespace

void check_local_suppression_options(std::size_t key_count, const LocalSuppressionOptions& options) {
  if (options.k < 1) throw ParameterError("local suppression: k must be at least 1");
  if (key_count > kMaxSuppressionKeys)
    throw ParameterError("local suppression: at most " + std::to_string(kMaxSuppressionKeys) + " keys, not " +
                         std::to_string(key_count));
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
  for (;;) {
    const std::vector<double> f = frequencies(key_columns(columns, level_counts), options.alpha);
    if (below(f, options.k) == 0 || !result.impossible.empty()) break;
    std::vector<std::size_t> listed;
    std::vector<std::uint8_t> is_listed(y, 0);
    for (std::size_t i = 0; i < y; ++i)
      if (f[i] < static_cast<double>(options.k)) {
        listed.push_back(i);
        is_listed[i] = 1;
      }
    std::stable_sort(listed.begin(), listed.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
    ++result.passes;

    std::unique_ptr<NearestSearch> search;
    if (options.search == CandidateSearch::kIndexed)
      search = std::make_unique<IndexedSearch>(columns, level_counts, listed, is_listed);
    else
      search = std::make_unique<RecordScan>(columns);
    std::vector<std::int32_t> tuple(m);
    for (const std::size_t p : listed) {
      const Nearest nearest = search->nearest(p);
      std::optional<std::size_t> chosen;
      for (const std::size_t j : suppression_order)
        if ((nearest.differing >> j & 1U) != 0) {
          chosen = j;
          break;
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
      for (std::size_t j = 0; j < m; ++j) tuple[j] = columns[j][p];
      search->suppress(p, tuple, *chosen);
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
