#include "kernels/tables/layer_split.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/core/error.h"
#include "kernels/tables/additivity_adjustment.h"

namespace sdc::tables {
namespace {

/// The step and the count of dimension `d`'s position in a cell's column number.
std::pair<std::int64_t, std::int64_t> code_step(std::span<const DimensionEquations> dimensions, std::size_t d) {
  std::int64_t inner = 1;
  for (std::size_t e = d + 1; e < dimensions.size(); ++e) inner *= dimensions[e].code_count;
  return {inner, dimensions[d].code_count};
}

/// The code of a dimension of the cell in each matrix column.
struct CodeOfColumn {
  std::span<const std::int64_t> cells;
  std::pair<std::int64_t, std::int64_t> step;  ///< code_step of the dimension
  std::int64_t operator()(std::int64_t column) const {
    return (cells[static_cast<std::size_t>(column)] / step.first) % step.second;
  }
};

/// The cells split by the codes of `split`: the codes in order, a new group when the cells so far
/// reach the next group's share, every group at least one code.
LayerSplit split_by_dimension(std::span<const DimensionEquations> dimensions, std::span<const std::int64_t> cells,
                              std::int32_t blocks, std::size_t split) {
  const auto [inner, codes] = code_step(dimensions, split);
  std::int64_t table_cells = 1;
  for (const DimensionEquations& dimension : dimensions) table_cells *= dimension.code_count;
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
  result.dimension = split;
  result.blocks = blocks;
  result.column_block.resize(cells.size());
  for (std::size_t j = 0; j < cells.size(); ++j)
    result.column_block[j] = group_of_code[static_cast<std::size_t>((cells[j] / inner) % codes)];
  return result;
}

}  // namespace

LayerOrdering layer_ordering(const CsrView& matrix, std::span<const DimensionEquations> dimensions,
                             std::span<const std::int64_t> cells, LayerSplit split) {
  if (static_cast<std::int64_t>(cells.size()) != matrix.columns ||
      static_cast<std::int64_t>(split.column_block.size()) != matrix.columns)
    throw InternalError("table layer split: the matrix does not have one column per listed cell");
  const CodeOfColumn code_of{cells, code_step(dimensions, split.dimension)};
  std::vector<std::int64_t> across_codes;
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const auto columns = matrix.row_columns(row);
    if (std::any_of(columns.begin(), columns.end(),
                    [&](std::int64_t column) { return code_of(column) != code_of(columns.front()); }))
      across_codes.push_back(row);
  }
  LayerOrdering layers;
  layers.dimension = split.dimension;
  layers.ordering = block_angular_ordering(matrix, BlockAngularForm::kPrimal, split.blocks,
                                           std::move(split.column_block), across_codes);
  return layers;
}

double predicted_layer_work(const CsrView& matrix, std::span<const DimensionEquations> dimensions,
                            std::span<const std::int64_t> cells, const LayerOrdering& layers) {
  const BlockAngularOrdering& ordering = layers.ordering;
  const CodeOfColumn code_of{cells, code_step(dimensions, layers.dimension)};
  std::vector<std::int64_t> cells_per_code(static_cast<std::size_t>(code_of.step.second), 0);
  for (std::int64_t column = 0; column < matrix.columns; ++column)
    ++cells_per_code[static_cast<std::size_t>(code_of(column))];
  const auto largest = static_cast<std::int64_t>(std::max_element(cells_per_code.begin(), cells_per_code.end()) -
                                                 cells_per_code.begin());
  std::vector<std::int64_t> slice_rows;
  for (std::int64_t row = 0; row < matrix.rows; ++row) {
    const auto columns = matrix.row_columns(row);
    if (ordering.row_block[static_cast<std::size_t>(row)] == BlockAngularOrdering::kLinking || columns.empty())
      continue;
    if (code_of(columns.front()) == largest) slice_rows.push_back(row);
  }
  FactorPrediction blocks = predict_normal_factor(matrix, slice_rows);
  const double slices =
      static_cast<double>(matrix.columns) / static_cast<double>(cells_per_code[static_cast<std::size_t>(largest)]);
  blocks.flops *= slices;
  blocks.nonzeros *= slices;
  const auto linking_rows = std::span<const std::int64_t>(ordering.row_order)
                                .subspan(static_cast<std::size_t>(matrix.rows - ordering.linking_size));
  return predicted_block_angular_work(blocks, predict_normal_factor(matrix, linking_rows), matrix.entry_count());
}

std::vector<LayerSplit> layer_splits(std::span<const DimensionEquations> dimensions,
                                     std::span<const std::int64_t> cells, std::int32_t blocks) {
  if (blocks < 1) throw ParameterError("table layer split: blocks must be at least 1");
  std::vector<std::size_t> candidates;
  for (std::size_t d = 0; d < dimensions.size(); ++d)
    if (dimensions[d].code_count >= blocks) candidates.push_back(d);
  const auto share = [&](std::size_t d) {
    return static_cast<double>(dimensions[d].equations.size()) / static_cast<double>(dimensions[d].code_count);
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](std::size_t a, std::size_t b) { return share(a) < share(b); });
  std::vector<LayerSplit> splits;
  splits.reserve(candidates.size());
  for (const std::size_t d : candidates) splits.push_back(split_by_dimension(dimensions, cells, blocks, d));
  return splits;
}

std::optional<LayerOrdering> cheapest_layer_ordering(const CsrView& matrix,
                                                     std::span<const DimensionEquations> dimensions,
                                                     std::span<const std::int64_t> cells, std::int32_t blocks) {
  std::vector<LayerSplit> splits = layer_splits(dimensions, cells, blocks);
  if (splits.empty()) return std::nullopt;
  std::vector<LayerOrdering> candidates(splits.size());
  // Each candidate on its own task: building its ordering costs about as much as its analysis.
  tbb::parallel_for(std::size_t{0}, splits.size(), [&](std::size_t i) {
    candidates[i] = layer_ordering(matrix, dimensions, cells, std::move(splits[i]));
    if (splits.size() > 1)
      candidates[i].predicted_work = predicted_layer_work(matrix, dimensions, cells, candidates[i]);
  });
  std::size_t cheapest = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i)
    if (candidates[i].predicted_work < candidates[cheapest].predicted_work) cheapest = i;
  return std::move(candidates[cheapest]);
}

}  // namespace sdc::tables
