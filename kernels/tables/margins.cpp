#include "kernels/tables/margins.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "kernels/core/error.h"

namespace sdc::tables {
namespace {

constexpr std::size_t kGrain = 4096;

/// A cell of the running table: its linear index and its sum so far.
struct CellValue {
  std::int64_t cell = 0;
  std::int64_t value = 0;
};

/// The positions each dimension spans and the step of its position in a linear index.
struct CellSpace {
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t cells = 1;

  std::int32_t position(std::int64_t cell, std::size_t d) const {
    return static_cast<std::int32_t>((cell / strides[d]) % sizes[d]);
  }
};

CellSpace cell_space_of(std::span<const Hierarchy> dimensions) {
  CellSpace space;
  space.sizes.resize(dimensions.size());
  space.strides.resize(dimensions.size());
  for (std::size_t d = dimensions.size(); d-- > 0;) {
    space.sizes[d] = static_cast<std::int64_t>(dimensions[d].size());
    if (space.sizes[d] < 1) throw ParameterError("table margins: dimension " + std::to_string(d) + " has no position");
    space.strides[d] = space.cells;
    if (__builtin_mul_overflow(space.cells, space.sizes[d], &space.cells))
      throw ParameterError("table margins: the cell space exceeds 64-bit integers");
  }
  return space;
}

void check_cell(const CellSpace& space, std::int64_t cell) {
  if (cell < 0 || cell >= space.cells)
    throw ParameterError("table margins: cell " + std::to_string(cell) + " lies outside the cell space of " +
                         std::to_string(space.cells) + " cells");
}

bool leaf_in_every_dimension(std::span<const Hierarchy> dimensions, const CellSpace& space, std::int64_t cell) {
  for (std::size_t d = 0; d < dimensions.size(); ++d)
    if (!dimensions[d].is_leaf(space.position(cell, d))) return false;
  return true;
}

/// Sorts `entries` by cell and adds up the entries of one cell, in place.
void merge_equal_cells(std::vector<CellValue>& entries) {
  tbb::parallel_sort(entries.begin(), entries.end(),
                     [](const CellValue& a, const CellValue& b) { return a.cell < b.cell; });
  std::size_t kept = 0;
  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (kept > 0 && entries[kept - 1].cell == entries[e].cell) {
      if (__builtin_add_overflow(entries[kept - 1].value, entries[e].value, &entries[kept - 1].value))
        throw ParameterError("table margins: a cell's sum exceeds 64-bit integers");
    } else {
      entries[kept++] = entries[e];
    }
  }
  entries.resize(kept);
}

/// One pass: every cell also adds its value to the cells with dimension d's position replaced by each
/// of its ancestors.
std::vector<CellValue> add_dimension_margins(const std::vector<CellValue>& table, const Hierarchy& hierarchy,
                                             const CellSpace& space, std::size_t d) {
  const std::int64_t stride = space.strides[d];
  const auto ancestors = [&](std::int32_t position) {
    std::size_t n = 0;
    for (std::int32_t p = hierarchy.parent[static_cast<std::size_t>(position)]; p >= 0;
         p = hierarchy.parent[static_cast<std::size_t>(p)])
      ++n;
    return n;
  };
  const std::size_t n = table.size();
  std::vector<std::size_t> offsets(n + 1, 0);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, kGrain), [&](const auto& range) {
    for (std::size_t k = range.begin(); k != range.end(); ++k)
      offsets[k + 1] = 1 + ancestors(space.position(table[k].cell, d));
  });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<CellValue> emitted(offsets.back());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, kGrain), [&](const auto& range) {
    for (std::size_t k = range.begin(); k != range.end(); ++k) {
      const CellValue& entry = table[k];
      const std::int32_t position = space.position(entry.cell, d);
      std::size_t e = offsets[k];
      emitted[e++] = entry;
      for (std::int32_t p = hierarchy.parent[static_cast<std::size_t>(position)]; p >= 0;
           p = hierarchy.parent[static_cast<std::size_t>(p)])
        emitted[e++] = {entry.cell + (static_cast<std::int64_t>(p) - position) * stride, entry.value};
    }
  });
  merge_equal_cells(emitted);
  return emitted;
}

}  // namespace

std::vector<std::size_t> find_leaf_cells(std::span<const Hierarchy> dimensions, std::span<const std::int64_t> cells) {
  const CellSpace space = cell_space_of(dimensions);
  std::vector<std::size_t> leaves;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    check_cell(space, cells[i]);
    if (leaf_in_every_dimension(dimensions, space, cells[i])) leaves.push_back(i);
  }
  return leaves;
}

std::vector<std::int64_t> aggregate_margins(std::span<const Hierarchy> dimensions,
                                            std::span<const std::int64_t> leaf_cells,
                                            std::span<const std::int64_t> leaf_values,
                                            std::span<const std::int64_t> cells) {
  if (leaf_cells.size() != leaf_values.size())
    throw ParameterError("table margins: " + std::to_string(leaf_cells.size()) + " leaf cells but " +
                         std::to_string(leaf_values.size()) + " values");
  const CellSpace space = cell_space_of(dimensions);
  std::vector<CellValue> table(leaf_cells.size());
  for (std::size_t k = 0; k < leaf_cells.size(); ++k) {
    check_cell(space, leaf_cells[k]);
    if (!leaf_in_every_dimension(dimensions, space, leaf_cells[k]))
      throw ParameterError("table margins: cell " + std::to_string(leaf_cells[k]) + " is no leaf cell");
    table[k] = {leaf_cells[k], leaf_values[k]};
  }
  tbb::parallel_sort(table.begin(), table.end(),
                     [](const CellValue& a, const CellValue& b) { return a.cell < b.cell; });
  const auto repeated = std::adjacent_find(table.begin(), table.end(),
                                           [](const CellValue& a, const CellValue& b) { return a.cell == b.cell; });
  if (repeated != table.end())
    throw ParameterError("table margins: leaf cell " + std::to_string(repeated->cell) + " is given twice");

  for (std::size_t d = 0; d < dimensions.size(); ++d) table = add_dimension_margins(table, dimensions[d], space, d);

  std::vector<std::int64_t> sums(cells.size(), 0);
  for (std::size_t k = 0; k < cells.size(); ++k) {
    check_cell(space, cells[k]);
    const auto found = std::lower_bound(table.begin(), table.end(), cells[k],
                                        [](const CellValue& entry, std::int64_t cell) { return entry.cell < cell; });
    if (found != table.end() && found->cell == cells[k]) sums[k] = found->value;
  }
  return sums;
}

}  // namespace sdc::tables
