#include "kernels/risk/wildcard_frequency.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/inlined_vector.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <string>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// Both are functions of the data size only, never of the thread count.
constexpr std::size_t kShardBits = 6;
constexpr std::size_t kShards = std::size_t{1} << kShardBits;
constexpr std::size_t kChunk = std::size_t{1} << 16;

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser: spreads keys over the shards
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

KeyMask all_keys(std::size_t key_count) { return key_count >= 64 ? ~KeyMask{0} : (KeyMask{1} << key_count) - 1; }

/// How a pattern of mask `other` enters the f of a pattern of mask `self` (self != other), per
/// risk.md §1; nullopt when it does not enter.
std::optional<WildcardWeight> weight_of(KeyMask self, KeyMask other, std::size_t key_count) {
  const KeyMask complete = all_keys(key_count);
  if (self == 0) return WildcardWeight::kFull;  // all-missing: f = n
  if (self == complete) {
    // The reference adds all-missing records to complete patterns only when there is one key.
    if (other == 0) return key_count == 1 ? std::optional(WildcardWeight::kAlpha) : std::nullopt;
    return WildcardWeight::kAlpha;
  }
  return other == complete ? WildcardWeight::kFull : WildcardWeight::kAlpha;
}

/// Mixed-radix code of the projection, (code_j + 1) in base (L_j + 1) for j in `on`, 0 elsewhere.
struct PackedCodec {
  using Key = std::uint64_t;
  std::vector<std::uint64_t> radix;

  Key key(std::span<const std::int32_t> pattern, KeyMask on) const {
    Key code = 0;
    for (KeyMask bits = on; bits != 0; bits &= bits - 1) {
      const auto j = static_cast<std::size_t>(std::countr_zero(bits));
      code += static_cast<std::uint64_t>(static_cast<std::int64_t>(pattern[j]) + 1) * radix[j];
    }
    return code;
  }
  static std::uint64_t spread(Key key) { return mix(key); }
};

/// The projected tuple itself, when the tuple space exceeds 64 bits.
struct TupleCodec {
  using Key = absl::InlinedVector<std::int32_t, 8>;

  Key key(std::span<const std::int32_t> pattern, KeyMask on) const {
    Key tuple(pattern.size());
    for (std::size_t j = 0; j < pattern.size(); ++j) tuple[j] = (on >> j) & 1U ? pattern[j] : -1;
    return tuple;
  }
  static std::uint64_t spread(const Key& key) {
    std::uint64_t h = 0x243f6a8885a308d3ULL;
    for (std::int32_t code : key) h = mix(h ^ static_cast<std::uint32_t>(code));
    return h;
  }
};

/// Radix of each key for PackedCodec; empty when the tuple space exceeds 2^64.
std::vector<std::uint64_t> packing_radix(std::span<const std::int32_t> level_counts) {
  std::vector<std::uint64_t> radix(level_counts.size(), 1);
  std::uint64_t space = 1;
  for (std::size_t j = level_counts.size(); j-- > 0;) {
    radix[j] = space;
    if (__builtin_mul_overflow(space, static_cast<std::uint64_t>(level_counts[j]) + 1U, &space)) return {};
  }
  return radix;
}

}  // namespace

struct ProjectionTables::Impl {
  virtual ~Impl() = default;
  virtual void restrict_to(std::uint32_t table, const FrequencyClasses& rows,
                           std::span<const std::uint32_t> indices) = 0;
  virtual void add_sources(std::uint32_t table, const FrequencyClasses& rows,
                           std::span<const std::uint32_t> indices) = 0;
  virtual const ProjectionTotals* find(std::uint32_t table, std::span<const std::int32_t> pattern) const = 0;
};

namespace {

template <typename Codec>
class ShardedTables final : public ProjectionTables::Impl {
  using Key = typename Codec::Key;
  using Map = absl::flat_hash_map<Key, ProjectionTotals>;
  struct Table {
    KeyMask on = 0;
    bool restricted = false;
    std::array<Map, kShards> shards;
  };

 public:
  ShardedTables(const WildcardLattice& lattice, Codec codec)
      : codec_(std::move(codec)), tables_(lattice.tables.size()) {
    for (std::size_t t = 0; t < tables_.size(); ++t) tables_[t].on = lattice.tables[t].on;
  }

  void restrict_to(std::uint32_t t, const FrequencyClasses& rows, std::span<const std::uint32_t> indices) override {
    Table& table = tables_.at(t);
    table.restricted = true;
    for_each_by_shard(table, rows, indices,
                      [](Map& shard, Key& key, std::uint32_t) { shard.try_emplace(std::move(key)); });
  }

  void add_sources(std::uint32_t t, const FrequencyClasses& rows, std::span<const std::uint32_t> indices) override {
    Table& table = tables_.at(t);
    const bool restricted = table.restricted;
    for_each_by_shard(table, rows, indices, [&](Map& shard, Key& key, std::uint32_t row) {
      auto it = restricted ? shard.find(key) : shard.try_emplace(std::move(key)).first;
      if (it == shard.end()) return;
      it->second.count += rows.counts[row];
      it->second.weight.merge(rows.weights[row]);
    });
  }

  const ProjectionTotals* find(std::uint32_t t, std::span<const std::int32_t> pattern) const override {
    const Table& table = tables_[t];
    const Key key = codec_.key(pattern, table.on);
    const Map& shard = table.shards[Codec::spread(key) >> (64 - kShardBits)];
    const auto it = shard.find(key);
    return it == shard.end() ? nullptr : &it->second;
  }

 private:
  /// Groups the rows by the shard of their key (fixed chunks: histograms, a prefix, a scatter), then
  /// fills the shards in parallel, each by one task: no two tasks touch one map.
  template <typename Body>
  void for_each_by_shard(Table& table, const FrequencyClasses& rows, std::span<const std::uint32_t> indices,
                         Body&& body) {
    const std::size_t n = indices.size();
    if (n == 0) return;
    const std::size_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<Key> keys(n);
    std::vector<std::uint8_t> shard_of(n);
    std::vector<std::array<std::uint32_t, kShards>> next(chunks);
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      auto& histogram = next[c];
      histogram.fill(0);
      for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) {
        keys[i] = codec_.key(rows.key(indices[i]), table.on);
        shard_of[i] = static_cast<std::uint8_t>(Codec::spread(keys[i]) >> (64 - kShardBits));
        ++histogram[shard_of[i]];
      }
    });
    std::array<std::uint32_t, kShards + 1> shard_begin{};
    std::uint32_t running = 0;
    for (std::size_t s = 0; s < kShards; ++s) {
      shard_begin[s] = running;
      for (auto& histogram : next) {
        const std::uint32_t count = histogram[s];
        histogram[s] = running;
        running += count;
      }
    }
    shard_begin[kShards] = running;
    std::vector<std::uint32_t> order(n);
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      auto& position = next[c];
      for (std::size_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i)
        order[position[shard_of[i]]++] = static_cast<std::uint32_t>(i);
    });
    tbb::parallel_for(std::size_t{0}, kShards, [&](std::size_t s) {
      Map& shard = table.shards[s];
      if (!table.restricted) shard.reserve(shard.size() + (shard_begin[s + 1] - shard_begin[s]));
      for (std::uint32_t p = shard_begin[s]; p < shard_begin[s + 1]; ++p)
        body(shard, keys[order[p]], indices[order[p]]);
    });
  }

  Codec codec_;
  std::vector<Table> tables_;
};

}  // namespace

KeyMask observed_mask(std::span<const std::int32_t> pattern) {
  KeyMask mask = 0;
  for (std::size_t j = 0; j < pattern.size(); ++j)
    if (pattern[j] != -1) mask |= KeyMask{1} << j;
  return mask;
}

void check_wildcard_alpha(double alpha) {
  if (!(alpha >= 0.0 && alpha <= 1.0))
    throw ParameterError("alpha (the weight of wildcard matches in frequency counts) must lie in [0, 1]");
}

void check_pattern_codes(const FrequencyClasses& patterns, std::span<const std::int32_t> level_counts) {
  const std::size_t m = patterns.key_count;
  if (m > kMaxWildcardKeys)
    throw ParameterError("frequency counts with missing keys as wildcards take at most " +
                         std::to_string(kMaxWildcardKeys) + " key variables, not " + std::to_string(m));
  SDC_CHECK(level_counts.size() == m, "one level count per key");
  for (std::size_t c = 0; c < patterns.class_count(); ++c) {
    const auto key = patterns.key(c);
    for (std::size_t j = 0; j < m; ++j)
      if (key[j] < -1 || key[j] >= level_counts[j])
        throw InvalidInput("key variable " + std::to_string(j + 1) + " has a code outside its " +
                           std::to_string(level_counts[j]) + " levels");
  }
}

std::size_t WildcardLattice::mask_index(KeyMask mask) const {
  const auto it = std::lower_bound(masks.begin(), masks.end(), mask);
  SDC_CHECK(it != masks.end() && *it == mask, "a mask of the lattice");
  return static_cast<std::size_t>(it - masks.begin());
}

std::pair<std::uint32_t, std::uint32_t> WildcardLattice::tables_fed_by(KeyMask mask) const {
  const auto first =
      std::partition_point(tables.begin(), tables.end(), [&](const Table& t) { return t.source < mask; });
  const auto last = std::partition_point(first, tables.end(), [&](const Table& t) { return t.source == mask; });
  return {static_cast<std::uint32_t>(first - tables.begin()), static_cast<std::uint32_t>(last - tables.begin())};
}

WildcardLattice wildcard_lattice(std::span<const KeyMask> masks, std::size_t key_count) {
  SDC_CHECK(key_count <= kMaxWildcardKeys, "at most 64 keys");
  WildcardLattice lattice;
  lattice.key_count = key_count;
  lattice.masks.assign(masks.begin(), masks.end());
  std::sort(lattice.masks.begin(), lattice.masks.end());
  lattice.masks.erase(std::unique(lattice.masks.begin(), lattice.masks.end()), lattice.masks.end());

  const auto table_order = [](const WildcardLattice::Table& a, const WildcardLattice::Table& b) {
    return a.source != b.source ? a.source < b.source : a.on < b.on;
  };
  for (KeyMask self : lattice.masks)
    for (KeyMask other : lattice.masks)
      if (other != self && weight_of(self, other, key_count)) lattice.tables.push_back({other, self & other});
  std::sort(lattice.tables.begin(), lattice.tables.end(), table_order);
  lattice.tables.erase(std::unique(lattice.tables.begin(), lattice.tables.end(),
                                   [](const auto& a, const auto& b) { return a.source == b.source && a.on == b.on; }),
                       lattice.tables.end());

  lattice.lookups.resize(lattice.masks.size());
  for (std::size_t a = 0; a < lattice.masks.size(); ++a) {
    const KeyMask self = lattice.masks[a];
    for (KeyMask other : lattice.masks) {
      if (other == self) continue;
      const auto weight = weight_of(self, other, key_count);
      if (!weight) continue;
      const WildcardLattice::Table wanted{other, self & other};
      const auto it = std::lower_bound(lattice.tables.begin(), lattice.tables.end(), wanted, table_order);
      lattice.lookups[a].push_back({static_cast<std::uint32_t>(it - lattice.tables.begin()), *weight});
    }
  }
  return lattice;
}

void project_pattern(std::span<const std::int32_t> pattern, KeyMask on, std::span<std::int32_t> out) {
  for (std::size_t j = 0; j < pattern.size(); ++j) out[j] = (on >> j) & 1U ? pattern[j] : -1;
}

ProjectionTables::ProjectionTables(const WildcardLattice& lattice, std::span<const std::int32_t> level_counts) {
  SDC_CHECK(level_counts.size() == lattice.key_count, "one level count per key");
  auto radix = packing_radix(level_counts);
  if (!radix.empty() || lattice.key_count == 0)
    impl_ = std::make_unique<ShardedTables<PackedCodec>>(lattice, PackedCodec{std::move(radix)});
  else
    impl_ = std::make_unique<ShardedTables<TupleCodec>>(lattice, TupleCodec{});
}
ProjectionTables::~ProjectionTables() = default;
ProjectionTables::ProjectionTables(ProjectionTables&&) noexcept = default;
ProjectionTables& ProjectionTables::operator=(ProjectionTables&&) noexcept = default;

void ProjectionTables::restrict_to(std::uint32_t table, const FrequencyClasses& rows,
                                   std::span<const std::uint32_t> row_indices) {
  impl_->restrict_to(table, rows, row_indices);
}
void ProjectionTables::add_sources(std::uint32_t table, const FrequencyClasses& rows,
                                   std::span<const std::uint32_t> row_indices) {
  impl_->add_sources(table, rows, row_indices);
}
const ProjectionTotals* ProjectionTables::find(std::uint32_t table, std::span<const std::int32_t> pattern) const {
  return impl_->find(table, pattern);
}

void WildcardSum::add(WildcardWeight weight, std::int64_t count, const ExactSum& total_weight) {
  if (weight == WildcardWeight::kFull) {
    full_count_ += count;
    full_weight_.merge(total_weight);
  } else {
    alpha_count_ += count;
    alpha_weight_.merge(total_weight);
  }
}

double WildcardSum::f(double alpha) const {
  return static_cast<double>(full_count_) + alpha * static_cast<double>(alpha_count_);
}

double WildcardSum::weighted(double alpha) const {
  ExactSum total = full_weight_;
  total.add(alpha * alpha_weight_.value());
  return total.value();
}

PatternFrequencies wildcard_frequency(const FrequencyClasses& patterns, std::span<const std::int32_t> level_counts,
                                      double alpha) {
  check_wildcard_alpha(alpha);
  check_pattern_codes(patterns, level_counts);
  const std::size_t count = patterns.class_count();
  PatternFrequencies out;
  out.f.resize(count);
  out.fk_weighted.resize(count);
  if (count == 0) return out;

  std::vector<KeyMask> mask_of(count);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, kChunk), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) mask_of[p] = observed_mask(patterns.key(p));
  });
  // The distinct masks are few: a set, read only after sorting by wildcard_lattice.
  absl::flat_hash_set<KeyMask> distinct;
  for (std::size_t p = 0; p < count; ++p)
    if (p == 0 || mask_of[p] != mask_of[p - 1]) distinct.insert(mask_of[p]);
  const std::vector<KeyMask> distinct_masks(distinct.begin(), distinct.end());
  const WildcardLattice lattice = wildcard_lattice(distinct_masks, patterns.key_count);
  const std::size_t masks = lattice.masks.size();
  if (masks == 1) {  // one mask: no pattern is compatible with another, f and F are the pattern's own
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1 << 12), [&](const auto& range) {
      for (std::size_t p = range.begin(); p != range.end(); ++p) {
        out.f[p] = static_cast<double>(patterns.counts[p]);
        out.fk_weighted[p] = patterns.weights[p].value();
      }
    });
    return out;
  }

  // Patterns of each mask, in pattern order.
  std::vector<std::uint32_t> mask_index(count);
  std::vector<std::vector<std::uint32_t>> patterns_of(masks);
  for (std::size_t p = 0; p < count; ++p) {
    mask_index[p] = static_cast<std::uint32_t>(masks == 1 ? 0 : lattice.mask_index(mask_of[p]));
    patterns_of[mask_index[p]].push_back(static_cast<std::uint32_t>(p));
  }
  mask_of.clear();
  mask_of.shrink_to_fit();

  ProjectionTables tables(lattice, level_counts);
  std::vector<std::vector<std::uint32_t>> readers(lattice.tables.size());
  for (std::size_t a = 0; a < masks; ++a)
    for (const auto& lookup : lattice.lookups[a]) readers[lookup.table].push_back(static_cast<std::uint32_t>(a));
  for (std::uint32_t t = 0; t < lattice.tables.size(); ++t) {
    const auto& sources = patterns_of[lattice.mask_index(lattice.tables[t].source)];
    std::size_t reading = 0;
    for (std::uint32_t a : readers[t]) reading += patterns_of[a].size();
    if (reading < sources.size())
      for (std::uint32_t a : readers[t]) tables.restrict_to(t, patterns, patterns_of[a]);
    tables.add_sources(t, patterns, sources);
  }

  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1 << 12), [&](const auto& range) {
    for (std::size_t p = range.begin(); p != range.end(); ++p) {
      WildcardSum sum;
      sum.add(WildcardWeight::kFull, patterns.counts[p], patterns.weights[p]);
      for (const auto& lookup : lattice.lookups[mask_index[p]])
        if (const ProjectionTotals* totals = tables.find(lookup.table, patterns.key(p)))
          sum.add(lookup.weight, totals->count, totals->weight);
      out.f[p] = sum.f(alpha);
      out.fk_weighted[p] = sum.weighted(alpha);
    }
  });
  return out;
}

RecordFrequencies wildcard_frequency_assign(std::span<const std::uint32_t> record_pattern,
                                            const PatternFrequencies& frequencies) {
  RecordFrequencies out;
  out.fk.resize(record_pattern.size());
  out.fk_weighted.resize(record_pattern.size());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, record_pattern.size(), 1 << 16), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      out.fk[i] = frequencies.f[record_pattern[i]];
      out.fk_weighted[i] = frequencies.fk_weighted[record_pattern[i]];
    }
  });
  return out;
}

FrequencySummary wildcard_frequency_finalize(std::span<const std::int64_t> pattern_counts, std::span<const double> f,
                                             std::int64_t k) {
  SDC_CHECK(pattern_counts.size() == f.size(), "one f per pattern");
  FrequencySummary summary;
  summary.k = k;
  summary.classes = static_cast<std::int64_t>(pattern_counts.size());
  for (std::size_t p = 0; p < f.size(); ++p) {
    summary.records += pattern_counts[p];
    if (f[p] == 1.0) summary.sample_uniques += pattern_counts[p];
    if (f[p] < static_cast<double>(k)) {
      summary.records_below_k += pattern_counts[p];
      ++summary.classes_below_k;
    }
  }
  return summary;
}

}  // namespace sdc
