#pragma once
// The generalisation hierarchy of one categorical key (docs/methods recoding.md §1): one row per leaf
// value, its value at every level from 0 (the leaf itself) to h (usually the root `*`). Global
// recoding to level l replaces every value by its level-l ancestor; the full-domain lattice search
// picks one level per key.
//
// Shape: built once per key from the rows a reader gives (io/hierarchy_file.h), then read-only.
// Recoding a variable is a lookup table from its codes to the level's codes, built once per level and
// applied record by record (a gather, O(records)); nothing here touches records.
// Memory: the rows' distinct values per level and O(leaves × levels) integers.

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sdc::recoding {

/// A hierarchy as a reader found it: per leaf row, its values at levels 0 .. h, and the file line the
/// row came from (for messages).
struct HierarchyRows {
  std::string source;                          ///< the file, as messages name it
  std::vector<std::vector<std::string>> rows;  ///< rows[r][l]: every row h + 1 values
  std::vector<std::int64_t> lines;             ///< 1-based line of each row in `source`
};

class GeneralizationHierarchy {
 public:
  /// Checks and builds (InvalidInput naming the source, the line(s) and the value):
  /// - at least one row, every row the same number of values (at least 1);
  /// - level-0 values unique;
  /// - levels that nest: a value at level l has one parent at level l + 1 across all rows (a value
  ///   reached from two parents names both lines and both parents).
  static GeneralizationHierarchy build(const HierarchyRows& rows);

  const std::string& source() const noexcept { return source_; }
  /// h: the levels are 0 .. h.
  std::int32_t height() const noexcept { return static_cast<std::int32_t>(labels_.size()) - 1; }
  /// The distinct values of `level`, in the order of their first row.
  std::span<const std::string> labels(std::int32_t level) const;
  /// The leaves (rows) under each value of `level`, in labels() order.
  std::span<const std::int64_t> leaves(std::int32_t level) const;
  /// Each value of `level` (< h) as its parent's index at level + 1.
  std::span<const std::int32_t> parents(std::int32_t level) const;
  /// The index at level 0 of `value`, or −1 when it is no leaf.
  std::int32_t leaf_index(std::string_view value) const;

  /// The recoding of a categorical variable whose codes 0 .. L − 1 carry `labels`: per code, its
  /// ancestor's index among labels(level). InvalidInput naming the variable and the source, with how
  /// many labels are no leaf and the first 20 of them (not only the first); ParameterError for a level
  /// outside 0 .. h.
  std::vector<std::int32_t> recoding(std::span<const std::string> labels, std::string_view variable,
                                     std::int32_t level) const;

 private:
  std::string source_;
  std::vector<std::vector<std::string>> labels_;   // per level
  std::vector<std::vector<std::int64_t>> leaves_;  // per level, per value
  std::vector<std::vector<std::int32_t>> parent_;  // per level below h, per value
  absl::flat_hash_map<std::string, std::int32_t> leaf_index_;
};

}  // namespace sdc::recoding
