#include "kernels/tables/layer_split.h"

#include <string>

#include "kernels/core/error.h"

namespace sdc::tables {

std::optional<LayerSplit> split_by_layers(std::span<const DimensionEquations> dimensions,
                                          std::span<const std::int64_t> cells, std::int32_t blocks) {
  if (blocks < 1) throw ParameterError("table layer split: blocks must be at least 1");
  std::optional<std::size_t> split;
  double best_share = 0.0;
  for (std::size_t d = 0; d < dimensions.size(); ++d) {
    const std::int64_t codes = dimensions[d].code_count;
    if (codes < blocks) continue;
    const double share = static_cast<double>(dimensions[d].equations.size()) / static_cast<double>(codes);
    if (!split || share < best_share) {
      split = d;
      best_share = share;
    }
  }
  if (!split) return std::nullopt;
  std::int64_t inner = 1;  // the step of the split dimension's position in a cell's column number
  std::int64_t table_cells = 1;
  for (std::size_t d = dimensions.size(); d-- > 0;) {
    if (d > *split) inner *= dimensions[d].code_count;
    table_cells *= dimensions[d].code_count;
  }
  const std::int64_t codes = dimensions[*split].code_count;
  std::vector<std::int64_t> cells_per_code(static_cast<std::size_t>(codes), 0);
  for (const std::int64_t cell : cells) {
    if (cell < 0 || cell >= table_cells)
      throw ParameterError("table layer split: cell " + std::to_string(cell) + " is outside the table's " +
                           std::to_string(table_cells) + " cells");
    ++cells_per_code[static_cast<std::size_t>((cell / inner) % codes)];
  }
  std::vector<std::int32_t> group_of_code(static_cast<std::size_t>(codes), 0);
  const auto total = static_cast<double>(cells.size());
  std::int64_t so_far = 0;
  std::int64_t codes_in_group = 0;
  std::int64_t group = 0;
  for (std::int64_t code = 0; code < codes; ++code) {
    const std::int64_t groups_after = blocks - group - 1;  // each needs a code of its own
    const bool share_reached = static_cast<double>(so_far) >= total * static_cast<double>(group + 1) / blocks;
    if (groups_after > 0 && codes_in_group > 0 && (share_reached || codes - code <= groups_after)) {
      ++group;
      codes_in_group = 0;
    }
    group_of_code[static_cast<std::size_t>(code)] = static_cast<std::int32_t>(group);
    so_far += cells_per_code[static_cast<std::size_t>(code)];
    ++codes_in_group;
  }
  LayerSplit result;
  result.dimension = *split;
  result.column_block.resize(cells.size());
  for (std::size_t j = 0; j < cells.size(); ++j)
    result.column_block[j] = group_of_code[static_cast<std::size_t>((cells[j] / inner) % codes)];
  return result;
}

}  // namespace sdc::tables
