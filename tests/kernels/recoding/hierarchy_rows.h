#pragma once
// Hierarchies written out in tests: the rows as a reader would give them, and the age hierarchy of
// recoding.md §8's lattice oracle.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/recoding/generalization_hierarchy.h"

namespace sdc::recoding::fixtures {

/// `rows` as read from `source`, the first on line `first_line`.
inline HierarchyRows hierarchy_rows(std::string source, std::vector<std::vector<std::string>> rows,
                                    std::int64_t first_line) {
  HierarchyRows result;
  result.source = std::move(source);
  result.rows = std::move(rows);
  for (std::size_t r = 0; r < result.rows.size(); ++r)
    result.lines.push_back(static_cast<std::int64_t>(r) + first_line);
  return result;
}

/// Age of the lattice oracle: value → 5-year band → 10-year band → *, 8 leaves.
inline std::vector<std::vector<std::string>> oracle_age_rows() {
  return {{"21", "20-24", "20-29", "*"}, {"22", "20-24", "20-29", "*"}, {"26", "25-29", "20-29", "*"},
          {"27", "25-29", "20-29", "*"}, {"31", "30-34", "30-39", "*"}, {"33", "30-34", "30-39", "*"},
          {"36", "35-39", "30-39", "*"}, {"38", "35-39", "30-39", "*"}};
}

}  // namespace sdc::recoding::fixtures
