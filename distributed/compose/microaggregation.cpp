#include "distributed/compose/microaggregation.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <numeric>

#include "distributed/collective_error.h"
#include "distributed/row_exchange.h"
#include "kernels/core/error.h"
#include "kernels/microaggregation/blocking.h"

namespace sdc::distributed {
namespace {

constexpr const char* kGroupColumn = "group_id";

/// The block ids the coordinator computed for the gathered rows, sent back to their home ranks.
std::vector<std::int64_t> scatter_block_ids(const Communicator& comm, std::vector<std::int64_t> block_of_gathered,
                                            std::span<const std::int64_t> gathered_row_ids, const RowRange& home) {
  Table blocks("", static_cast<std::int64_t>(block_of_gathered.size()));
  VariableInfo info;
  info.name = "block";
  info.type = VariableType::kId;
  blocks.add_column(Column::id(std::move(info), std::move(block_of_gathered)));
  const Table returned = return_home(comm, blocks, gathered_row_ids, home);
  const auto ids = returned.columns().front().ids();
  return {ids.begin(), ids.end()};
}

RowRange home_of(std::span<const std::int64_t> row_ids) {
  return row_ids.empty() ? RowRange{0, 0} : RowRange{row_ids.front(), static_cast<std::int64_t>(row_ids.size())};
}

/// Gathers `values` (this rank's rows, ids `row_ids`) on the coordinator in row-id order.
MovedRows gather_on_coordinator(const Communicator& comm, std::vector<std::vector<double>> values,
                                std::span<const std::int64_t> row_ids) {
  const auto rows = static_cast<std::int64_t>(row_ids.size());
  const Table table = numeric_table(std::move(values), rows, row_ids.empty() ? 0 : row_ids.front());
  const std::vector<int> destination(row_ids.size(), 0);
  return exchange_rows(comm, table, row_ids, destination);
}

NumericColumns columns_of(const Table& table, std::span<const std::int64_t> row_ids) {
  NumericColumns view;
  for (const Column& column : table.columns()) {
    view.names.push_back(column.name());
    view.columns.push_back(column.values());
  }
  view.row_ids = row_ids;
  return view;
}

}  // namespace

std::vector<std::int64_t> join_small_blocks(const Communicator& comm, std::span<const std::int64_t> block_of_record,
                                            std::int64_t min_block) {
  std::int64_t largest_id = -1;
  for (std::int64_t block : block_of_record) {
    SDC_CHECK(block >= 0, "a block id is negative");
    largest_id = std::max(largest_id, block);
  }
  largest_id = comm.all_reduce_max(largest_id);
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(largest_id + 1), 0);
  for (std::int64_t block : block_of_record) ++sizes[static_cast<std::size_t>(block)];
  comm.all_reduce_sum(std::span<std::int64_t>(sizes));

  // Every rank walks the same sizes, so every rank renumbers alike. A run of small blocks is carried
  // forward until it holds min_block records; a small tail joins the block before it.
  std::vector<std::int64_t> renumbered(sizes.size(), -1);
  std::int64_t next_id = 0;
  std::int64_t open_records = 0;
  std::vector<std::size_t> open;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    if (sizes[b] == 0) continue;
    open.push_back(b);
    open_records += sizes[b];
    if (open_records >= min_block) {
      for (std::size_t member : open) renumbered[member] = next_id;
      ++next_id;
      open.clear();
      open_records = 0;
    }
  }
  for (std::size_t member : open) renumbered[member] = std::max<std::int64_t>(next_id - 1, 0);
  std::vector<std::int64_t> out(block_of_record.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = renumbered[static_cast<std::size_t>(block_of_record[i])];
  return out;
}

std::vector<std::int64_t> tree_blocks(const Communicator& comm, const NumericColumns& standardised,
                                      std::int64_t block_max, int k, TreeCut cut) {
  std::vector<std::vector<double>> values;
  for (const auto column : standardised.columns) values.emplace_back(column.begin(), column.end());
  MovedRows gathered = gather_on_coordinator(comm, std::move(values), standardised.row_ids);
  std::vector<std::int64_t> block_of_gathered(gathered.row_ids.size(), 0);
  agree_on_error(comm, [&] {
    if (!comm.is_coordinator()) return;
    const NumericColumns all = columns_of(gathered.table, gathered.row_ids);
    const microaggregation::Blocks blocks = cut == TreeCut::kCoordinate
                                                ? microaggregation::kdtree_blocks(all, block_max, k)
                                                : microaggregation::principal_axis_blocks(all, block_max, k);
    std::copy(blocks.block_of_record.begin(), blocks.block_of_record.end(), block_of_gathered.begin());
  });
  return scatter_block_ids(comm, std::move(block_of_gathered), gathered.row_ids, home_of(standardised.row_ids));
}

std::vector<std::int64_t> ordering_blocks(const Communicator& comm, std::span<const double> score,
                                          std::span<const std::int64_t> row_ids, std::int64_t block_max, int k) {
  MovedRows gathered = gather_on_coordinator(comm, {std::vector<double>(score.begin(), score.end())}, row_ids);
  std::vector<std::int64_t> block_of_gathered(gathered.row_ids.size(), 0);
  agree_on_error(comm, [&] {
    if (!comm.is_coordinator()) return;
    const microaggregation::Blocks blocks =
        microaggregation::ordering_blocks(gathered.table.columns().front().values(), gathered.row_ids, block_max, k);
    std::copy(blocks.block_of_record.begin(), blocks.block_of_record.end(), block_of_gathered.begin());
  });
  return scatter_block_ids(comm, std::move(block_of_gathered), gathered.row_ids, home_of(row_ids));
}

MicroaggregatedPart microaggregate_blocks(const Communicator& comm, const Table& part, const RowRange& home,
                                          const std::vector<std::string>& variables,
                                          std::span<const std::int64_t> block_of_record,
                                          const BlockMicroaggregator& method) {
  Table variables_only(part.source(), part.row_count(), part.first_row_id());
  for (const auto& name : variables) variables_only.add_column(part.require(name, VariableType::kContinuous));
  const StratumAssignment assignment = assign_strata(comm, block_of_record);
  const MovedRows moved = shuffle_by_stratum(comm, variables_only, block_of_record, assignment);

  // The moved rows are sorted by (block, row id): each block is one run of rows.
  std::vector<std::size_t> block_starts;
  for (std::size_t i = 0; i < moved.tags.size(); ++i)
    if (i == 0 || moved.tags[i] != moved.tags[i - 1]) block_starts.push_back(i);
  block_starts.push_back(moved.tags.size());
  const std::size_t p = variables.size();
  const std::size_t rows = moved.row_ids.size();
  std::vector<std::vector<double>> masked(p, std::vector<double>(rows));
  std::vector<std::int64_t> group_id(rows);
  std::vector<std::vector<std::int64_t>> block_group_sizes(block_starts.size() - 1);
  std::vector<std::vector<std::int64_t>> block_part_sizes(block_starts.size() - 1);

  // The blocks run without collectives: an error in one (a missing value, a constant variable within
  // a block) is agreed on by every rank before the records travel home.
  agree_on_error(comm, [&] {
    tbb::parallel_for(std::size_t{0}, block_starts.size() - 1, [&](std::size_t b) {
      const std::size_t first = block_starts[b];
      const std::size_t count = block_starts[b + 1] - first;
      NumericColumns block;
      for (std::size_t j = 0; j < p; ++j) {
        block.names.push_back(variables[j]);
        block.columns.push_back(moved.table.columns()[j].values().subspan(first, count));
      }
      block.row_ids = std::span<const std::int64_t>(moved.row_ids).subspan(first, count);
      const BlockMicroaggregation result = method(block);
      SDC_CHECK(result.grouping.group_of_record.size() == count && result.masked.size() == p,
                "a microaggregation method returned a result of another shape");
      const auto groups = static_cast<std::size_t>(result.grouping.group_count);
      std::vector<std::int64_t> first_row(groups, -1);
      std::vector<std::int64_t> sizes(groups, 0);
      for (std::size_t i = 0; i < count; ++i) {
        const auto g = static_cast<std::size_t>(result.grouping.group_of_record[i]);
        if (first_row[g] < 0) first_row[g] = block.row_ids[i];  // row ids ascend within a block
        ++sizes[g];
      }
      for (std::size_t i = 0; i < count; ++i) {
        group_id[first + i] = first_row[static_cast<std::size_t>(result.grouping.group_of_record[i])];
        for (std::size_t j = 0; j < p; ++j) masked[j][first + i] = result.masked[j][i];
      }
      block_group_sizes[b] = std::move(sizes);
      block_part_sizes[b] =
          result.part_sizes.empty() ? std::vector<std::int64_t>{static_cast<std::int64_t>(count)} : result.part_sizes;
    });
  });

  MicroaggregatedPart out;
  std::int64_t local_groups = 0;
  std::int64_t local_parts = 0;
  std::int64_t local_largest = 0;
  std::vector<std::int64_t> histogram;
  for (std::size_t b = 0; b + 1 < block_starts.size(); ++b) {
    for (std::int64_t size : block_part_sizes[b]) {
      ++local_parts;
      local_largest = std::max(local_largest, size);
    }
    for (std::int64_t size : block_group_sizes[b]) {
      ++local_groups;
      if (histogram.size() <= static_cast<std::size_t>(size)) histogram.resize(static_cast<std::size_t>(size) + 1, 0);
      ++histogram[static_cast<std::size_t>(size)];
    }
  }
  out.groups = comm.all_reduce_sum(local_groups);
  out.blocks = comm.all_reduce_sum(local_parts);
  out.shuffled_blocks = static_cast<std::int64_t>(assignment.strata.size());
  out.largest_block = comm.all_reduce_max(local_largest);
  const auto longest = comm.all_reduce_max(static_cast<std::int64_t>(histogram.size()));
  histogram.resize(static_cast<std::size_t>(longest), 0);
  comm.all_reduce_sum(std::span<std::int64_t>(histogram));
  out.group_size_histogram = std::move(histogram);

  Table results = numeric_table(std::move(masked), static_cast<std::int64_t>(rows), 0);
  VariableInfo group_info;
  group_info.name = kGroupColumn;
  group_info.type = VariableType::kId;
  results.add_column(Column::id(std::move(group_info), std::move(group_id)));
  VariableInfo block_info;
  block_info.name = "block";
  block_info.type = VariableType::kId;
  results.add_column(
      Column::id(std::move(block_info), std::vector<std::int64_t>(moved.tags.begin(), moved.tags.end())));
  const Table returned = return_home(comm, results, moved.row_ids, home);
  for (std::size_t j = 0; j < p; ++j) {
    const auto values = returned.columns()[j].values();
    out.masked.emplace_back(values.begin(), values.end());
  }
  const auto groups_home = returned.columns()[p].ids();
  out.group_id.assign(groups_home.begin(), groups_home.end());
  const auto blocks_home = returned.columns()[p + 1].ids();
  out.block_id.assign(blocks_home.begin(), blocks_home.end());
  return out;
}

}  // namespace sdc::distributed
