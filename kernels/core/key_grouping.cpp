#include "kernels/core/key_grouping.h"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "kernels/core/error.h"

namespace sdc {
namespace {

// Chunks are a function of the data size only, never of the thread count (docs/rng.md).
constexpr std::size_t kChunkRecords = 1 << 16;

std::size_t chunk_count(std::size_t records) {
  return std::max<std::size_t>(1, (records + kChunkRecords - 1) / kChunkRecords);
}

template <typename Body>
void for_each_chunk(std::size_t records, Body&& body) {
  tbb::parallel_for(std::size_t{0}, chunk_count(records),
                    [&](std::size_t c) { body(c, c * kChunkRecords, std::min(records, (c + 1) * kChunkRecords)); });
}

/// Mixed-radix packing of a tuple into 64 bits, order-preserving: (code_j + 1) in base (L_j + 1),
/// first key most significant. Returns the number of bits used, or 0 when the tuple space exceeds 2^64.
int packed_bits(const KeyColumns& keys, std::vector<std::uint64_t>& radix) {
  radix.assign(keys.key_count(), 1);
  std::uint64_t space = 1;
  for (std::size_t j = keys.key_count(); j-- > 0;) {
    radix[j] = space;
    if (__builtin_mul_overflow(space, static_cast<std::uint64_t>(keys.level_counts[j]) + 1U, &space)) return 0;
  }
  int bits = 1;
  while (bits < 64 && (std::uint64_t{1} << bits) < space) ++bits;
  return bits;
}

struct CodedRecord {
  std::uint64_t code;
  std::uint32_t record;
};

/// Stable LSD radix sort by code, moving code and record together so every pass reads sequentially.
/// Parallel over fixed chunks: per-chunk histograms, a prefix over (bucket, chunk), a scatter.
void radix_sort(std::vector<CodedRecord>& items, int bits) {
  constexpr int kDigitBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
  const std::size_t n = items.size();
  std::vector<CodedRecord> scratch(n);
  std::vector<std::array<std::uint32_t, kBuckets>> offsets(chunk_count(n));
  for (int shift = 0; shift < bits; shift += kDigitBits) {
    const auto digit = [shift](const CodedRecord& item) { return (item.code >> shift) & (kBuckets - 1); };
    for_each_chunk(n, [&](std::size_t c, std::size_t begin, std::size_t end) {
      auto& histogram = offsets[c];
      histogram.fill(0);
      for (std::size_t i = begin; i < end; ++i) ++histogram[digit(items[i])];
    });
    std::uint32_t running = 0;
    for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
      for (auto& histogram : offsets) {
        const std::uint32_t count = histogram[bucket];
        histogram[bucket] = running;
        running += count;
      }
    }
    for_each_chunk(n, [&](std::size_t c, std::size_t begin, std::size_t end) {
      auto& next = offsets[c];
      for (std::size_t i = begin; i < end; ++i) scratch[next[digit(items[i])]++] = items[i];
    });
    items.swap(scratch);
  }
}

/// Numbers the classes of a sorted sequence in parallel: `starts_class(p)` says whether position p
/// begins a new class. Fills class_offsets and record_class.
template <typename StartsClass>
void number_classes(KeyGrouping& grouping, StartsClass&& starts_class) {
  const std::size_t n = grouping.sorted_records.size();
  std::vector<std::uint32_t> starts_before(chunk_count(n) + 1, 0);
  for_each_chunk(n, [&](std::size_t c, std::size_t begin, std::size_t end) {
    std::uint32_t count = 0;
    for (std::size_t p = begin; p < end; ++p) count += starts_class(p) ? 1U : 0U;
    starts_before[c + 1] = count;
  });
  std::partial_sum(starts_before.begin(), starts_before.end(), starts_before.begin());
  const std::uint32_t classes = starts_before.back();
  grouping.class_offsets.resize(static_cast<std::size_t>(classes) + 1);
  grouping.class_offsets[classes] = static_cast<std::uint32_t>(n);
  for_each_chunk(n, [&](std::size_t c, std::size_t begin, std::size_t end) {
    std::uint32_t current = starts_before[c];  // classes begun before this chunk
    for (std::size_t p = begin; p < end; ++p) {
      if (starts_class(p)) grouping.class_offsets[current++] = static_cast<std::uint32_t>(p);
      grouping.record_class[grouping.sorted_records[p]] = current - 1;
    }
  });
}

}  // namespace

int compare_key_tuples(std::span<const std::int32_t> a, std::span<const std::int32_t> b) {
  for (std::size_t j = 0; j < a.size(); ++j)
    if (a[j] != b[j]) return a[j] < b[j] ? -1 : 1;
  return 0;
}

KeyGrouping group_by_keys(const KeyColumns& keys) {
  const std::size_t n = keys.record_count();
  const std::size_t m = keys.key_count();
  SDC_CHECK(keys.level_counts.size() == m, "one level count per key");
  for (const auto& column : keys.codes) SDC_CHECK(column.size() == n, "key columns of equal length");
  SDC_CHECK(n < (std::size_t{1} << 32), "at most 2^32-1 records per block");

  KeyGrouping grouping;
  grouping.key_count = m;
  grouping.record_class.resize(n);
  grouping.sorted_records.resize(n);
  if (n == 0) {
    grouping.class_offsets = {0};
    return grouping;
  }

  std::vector<std::uint64_t> radix;
  const int bits = packed_bits(keys, radix);
  if (bits > 0) {
    std::vector<CodedRecord> items(n);
    for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        std::uint64_t code = 0;
        for (std::size_t j = 0; j < m; ++j)
          code += static_cast<std::uint64_t>(static_cast<std::int64_t>(keys.codes[j][i]) + 1) * radix[j];
        items[i] = {code, static_cast<std::uint32_t>(i)};
      }
    });
    radix_sort(items, bits);
    for_each_chunk(n, [&](std::size_t, std::size_t begin, std::size_t end) {
      for (std::size_t p = begin; p < end; ++p) grouping.sorted_records[p] = items[p].record;
    });
    number_classes(grouping, [&](std::size_t p) { return p == 0 || items[p].code != items[p - 1].code; });
    // Each class's tuple is decoded from its packed code: no gather from the key columns.
    grouping.class_keys.resize(grouping.class_count() * m);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, grouping.class_count(), kChunkRecords),
                      [&](const auto& range) {
                        for (std::size_t c = range.begin(); c != range.end(); ++c) {
                          std::uint64_t code = items[grouping.class_offsets[c]].code;
                          for (std::size_t j = 0; j < m; ++j) {
                            grouping.class_keys[c * m + j] = static_cast<std::int32_t>(code / radix[j]) - 1;
                            code %= radix[j];
                          }
                        }
                      });
  } else {
    std::iota(grouping.sorted_records.begin(), grouping.sorted_records.end(), 0U);
    tbb::parallel_sort(grouping.sorted_records.begin(), grouping.sorted_records.end(),
                       [&](std::uint32_t a, std::uint32_t b) {
                         for (const auto& column : keys.codes)
                           if (column[a] != column[b]) return column[a] < column[b];
                         return a < b;  // ties on the record index keep the order deterministic
                       });
    const auto& order = grouping.sorted_records;
    number_classes(grouping, [&](std::size_t p) {
      if (p == 0) return true;
      for (const auto& column : keys.codes)
        if (column[order[p]] != column[order[p - 1]]) return true;
      return false;
    });
    grouping.class_keys.resize(grouping.class_count() * m);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, grouping.class_count(), kChunkRecords),
                      [&](const auto& range) {
                        for (std::size_t c = range.begin(); c != range.end(); ++c)
                          for (std::size_t j = 0; j < m; ++j)
                            grouping.class_keys[c * m + j] = keys.codes[j][order[grouping.class_offsets[c]]];
                      });
  }
  return grouping;
}

}  // namespace sdc
