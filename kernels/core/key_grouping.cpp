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

std::size_t chunk_count(std::size_t records) { return std::max<std::size_t>(1, (records + kChunkRecords - 1) / kChunkRecords); }

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

/// Stable LSD radix sort of record indices by 64-bit code; parallel over fixed chunks per pass.
std::vector<std::uint32_t> sort_records_by_code(const std::vector<std::uint64_t>& codes, int bits) {
  constexpr int kDigitBits = 11;
  constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
  const std::size_t n = codes.size();
  std::vector<std::uint32_t> order(n), scratch(n);
  std::iota(order.begin(), order.end(), 0U);
  const std::size_t chunks = chunk_count(n);
  std::vector<std::array<std::uint32_t, kBuckets>> offsets(chunks);

  for (int shift = 0; shift < bits; shift += kDigitBits) {
    const auto digit = [&](std::uint32_t record) { return (codes[record] >> shift) & (kBuckets - 1); };
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      auto& histogram = offsets[c];
      histogram.fill(0);
      const std::size_t end = std::min(n, (c + 1) * kChunkRecords);
      for (std::size_t i = c * kChunkRecords; i < end; ++i) ++histogram[digit(order[i])];
    });
    std::uint32_t running = 0;
    for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
      for (std::size_t c = 0; c < chunks; ++c) {
        const std::uint32_t count = offsets[c][bucket];
        offsets[c][bucket] = running;
        running += count;
      }
    }
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      auto& next = offsets[c];
      const std::size_t end = std::min(n, (c + 1) * kChunkRecords);
      for (std::size_t i = c * kChunkRecords; i < end; ++i) scratch[next[digit(order[i])]++] = order[i];
    });
    order.swap(scratch);
  }
  return order;
}

std::vector<std::uint32_t> sort_records_by_tuple(const KeyColumns& keys) {
  std::vector<std::uint32_t> order(keys.record_count());
  std::iota(order.begin(), order.end(), 0U);
  tbb::parallel_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    for (const auto& column : keys.codes)
      if (column[a] != column[b]) return column[a] < column[b];
    return a < b;  // ties on the record index keep the sort stable and deterministic
  });
  return order;
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
  if (n == 0) return grouping;

  std::vector<std::uint64_t> radix;
  const int bits = packed_bits(keys, radix);
  std::vector<std::uint32_t> order;
  std::vector<std::uint64_t> codes;
  if (bits > 0) {
    codes.resize(n);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, kChunkRecords), [&](const auto& range) {
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        std::uint64_t code = 0;
        for (std::size_t j = 0; j < m; ++j)
          code += static_cast<std::uint64_t>(static_cast<std::int64_t>(keys.codes[j][i]) + 1) * radix[j];
        codes[i] = code;
      }
    });
    order = sort_records_by_code(codes, bits);
  } else {
    order = sort_records_by_tuple(keys);
  }

  const auto same_class = [&](std::uint32_t a, std::uint32_t b) {
    if (bits > 0) return codes[a] == codes[b];
    for (const auto& column : keys.codes)
      if (column[a] != column[b]) return false;
    return true;
  };
  std::uint32_t current = 0;
  for (std::size_t position = 0; position < n; ++position) {
    const std::uint32_t record = order[position];
    if (position == 0 || !same_class(order[position - 1], record)) {
      if (position != 0) ++current;
      for (std::size_t j = 0; j < m; ++j) grouping.class_keys.push_back(keys.codes[j][record]);
    }
    grouping.record_class[record] = current;
  }
  return grouping;
}

}  // namespace sdc
