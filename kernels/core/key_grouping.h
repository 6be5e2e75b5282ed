#pragma once
// Grouping records by a tuple of categorical key codes: the equivalence classes of every risk measure.
// Shape: local step of a mergeable kernel. The classes come out sorted by key tuple (lexicographic
// over the key codes in the order given, missing code -1 first), never in hash order, so everything
// built on them is deterministic.

#include <cstdint>
#include <span>
#include <vector>

namespace sdc {

/// Key columns of one block of records: codes[j][i] is key j of record i.
struct KeyColumns {
  std::vector<std::span<const std::int32_t>> codes;
  std::vector<std::int32_t> level_counts;  ///< L_j: codes of key j lie in -1..L_j-1
  std::size_t record_count() const { return codes.empty() ? 0 : codes.front().size(); }
  std::size_t key_count() const { return codes.size(); }
};

struct KeyGrouping {
  std::size_t key_count = 0;
  std::vector<std::int32_t> class_keys;     ///< class c's tuple: [c*key_count, (c+1)*key_count)
  std::vector<std::uint32_t> record_class;  ///< class of each record
  /// Records in class order (ties by record index): class c holds
  /// sorted_records[class_offsets[c] .. class_offsets[c+1]).
  std::vector<std::uint32_t> sorted_records;
  std::vector<std::uint32_t> class_offsets;

  std::size_t class_count() const { return class_offsets.empty() ? 0 : class_offsets.size() - 1; }
  std::uint32_t class_size(std::size_t c) const { return class_offsets[c + 1] - class_offsets[c]; }
  std::span<const std::int32_t> key(std::size_t c) const {
    return std::span<const std::int32_t>(class_keys).subspan(c * key_count, key_count);
  }
};

/// Lexicographic comparison of two key tuples of equal length: <0, 0, >0.
int compare_key_tuples(std::span<const std::int32_t> a, std::span<const std::int32_t> b);

/// Groups the records. Runs on the threads of the current TBB arena; the result does not depend on
/// their number. When the key space fits in 64 bits (the product of L_j + 1), a parallel LSD radix
/// sort of packed codes; otherwise a parallel comparison sort. Needs about 32 bytes per record of
/// scratch beyond the result (12 bytes per record plus 4 + 4 x keys per class).
KeyGrouping group_by_keys(const KeyColumns& keys);

}  // namespace sdc
