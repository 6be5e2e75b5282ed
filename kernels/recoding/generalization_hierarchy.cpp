#include "kernels/recoding/generalization_hierarchy.h"

#include <absl/strings/string_view.h>

#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::recoding {
namespace {

std::string at_line(const HierarchyRows& rows, std::size_t row) {
  return rows.source + ", line " + std::to_string(rows.lines[row]);
}

}  // namespace

GeneralizationHierarchy GeneralizationHierarchy::build(const HierarchyRows& rows) {
  if (rows.lines.size() != rows.rows.size())
    throw InternalError("generalisation hierarchy: one line number per row is needed");
  if (rows.rows.empty()) throw InvalidInput(rows.source + ": the hierarchy has no rows");
  const std::size_t levels = rows.rows.front().size();
  if (levels == 0) throw InvalidInput(at_line(rows, 0) + ": a hierarchy row needs at least one value");
  GeneralizationHierarchy hierarchy;
  hierarchy.source_ = rows.source;
  hierarchy.labels_.resize(levels);
  hierarchy.leaves_.resize(levels);
  hierarchy.parent_.resize(levels - 1);
  // Per level: value → (index, the row that introduced it), to name the line of a conflict.
  std::vector<absl::flat_hash_map<std::string, std::pair<std::int32_t, std::size_t>>> index(levels);
  std::vector<std::int32_t> row_index(levels);
  for (std::size_t r = 0; r < rows.rows.size(); ++r) {
    const std::vector<std::string>& row = rows.rows[r];
    if (row.size() != levels)
      throw InvalidInput(at_line(rows, r) + ": " + std::to_string(row.size()) + " values where the first row has " +
                         std::to_string(levels) + " (every row needs one value per level)");
    for (std::size_t l = 0; l < levels; ++l) {
      const auto [it, added] = index[l].try_emplace(row[l], static_cast<std::int32_t>(hierarchy.labels_[l].size()), r);
      if (added) {
        if (hierarchy.labels_[l].size() >= static_cast<std::size_t>(INT32_MAX))
          throw InvalidInput(rows.source + ": more than 2^31 - 1 values at level " + std::to_string(l));
        hierarchy.labels_[l].push_back(row[l]);
        hierarchy.leaves_[l].push_back(0);
        if (l + 1 < levels) hierarchy.parent_[l].push_back(-1);
      } else if (l == 0) {
        throw InvalidInput(at_line(rows, r) + ": the value '" + row[0] + "' is already a leaf at " +
                           at_line(rows, it->second.second) + " (leaf values must be unique)");
      }
      row_index[l] = it->second.first;
      ++hierarchy.leaves_[l][static_cast<std::size_t>(row_index[l])];
    }
    for (std::size_t l = 0; l + 1 < levels; ++l) {
      std::int32_t& parent = hierarchy.parent_[l][static_cast<std::size_t>(row_index[l])];
      if (parent == -1) {
        parent = row_index[l + 1];
      } else if (parent != row_index[l + 1]) {
        const std::size_t first = index[l].at(row[l]).second;
        throw InvalidInput(at_line(rows, r) + ": the value '" + row[l] + "' at level " + std::to_string(l) +
                           " has the parent '" + row[l + 1] + "' here but '" +
                           hierarchy.labels_[l + 1][static_cast<std::size_t>(parent)] + "' at " + at_line(rows, first) +
                           " (the levels must nest: one parent per value)");
      }
    }
  }
  for (const auto& [value, entry] : index[0]) hierarchy.leaf_index_.emplace(value, entry.first);
  return hierarchy;
}

std::span<const std::string> GeneralizationHierarchy::labels(std::int32_t level) const {
  if (level < 0 || level > height())
    throw ParameterError("generalisation hierarchy: level " + std::to_string(level) + " outside 0.." +
                         std::to_string(height()));
  return labels_[static_cast<std::size_t>(level)];
}

std::span<const std::int64_t> GeneralizationHierarchy::leaves(std::int32_t level) const {
  (void)labels(level);
  return leaves_[static_cast<std::size_t>(level)];
}

std::span<const std::int32_t> GeneralizationHierarchy::parents(std::int32_t level) const {
  if (level < 0 || level >= height())
    throw ParameterError("generalisation hierarchy: no parents of level " + std::to_string(level) +
                         " in a hierarchy of height " + std::to_string(height()));
  return parent_[static_cast<std::size_t>(level)];
}

std::int32_t GeneralizationHierarchy::leaf_index(std::string_view value) const {
  const auto it = leaf_index_.find(absl::string_view(value.data(), value.size()));
  return it == leaf_index_.end() ? -1 : it->second;
}

std::vector<std::int32_t> GeneralizationHierarchy::recoding(std::span<const std::string> labels,
                                                            std::string_view variable, std::int32_t level) const {
  (void)this->labels(level);
  std::vector<std::int32_t> mapped(labels.size());
  std::string missing;
  std::size_t missing_count = 0;
  for (std::size_t code = 0; code < labels.size(); ++code) {
    std::int32_t index = leaf_index(labels[code]);
    if (index < 0) {
      if (missing_count++ < 20) missing += (missing.empty() ? "'" : ", '") + labels[code] + "'";
      continue;
    }
    for (std::int32_t l = 0; l < level; ++l)
      index = parent_[static_cast<std::size_t>(l)][static_cast<std::size_t>(index)];
    mapped[code] = index;
  }
  if (missing_count > 0)
    throw InvalidInput("variable " + std::string(variable) + ": " + std::to_string(missing_count) +
                       " value(s) are no leaf of the hierarchy " + source_ + ": " + missing +
                       (missing_count > 20 ? ", …" : ""));
  return mapped;
}

}  // namespace sdc::recoding
