#include "distributed/compose/tabulation.h"

#include <algorithm>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/class_exchange.h"
#include "kernels/core/key_grouping.h"

namespace sdc::distributed {
namespace {

void put_cells(ByteWriter& out, const tables::CellTable& table) {
  out.put_vector(table.cells);
  for (const tables::CellSummary& s : table.summaries) {
    out.put(s.count);
    put_exact_sum(out, s.weighted_count);
    out.put(s.key_sum);
    put_exact_sum(out, s.value);
    put_exact_sum(out, s.weighted_value);
    out.put(s.contributors);
    out.put(s.key_sum_nonzero);
    out.put_vector(s.top);
  }
}

tables::CellTable get_cells(ByteReader& in, std::vector<std::int64_t> sizes) {
  tables::CellTable table;
  table.sizes = std::move(sizes);
  table.cells = in.get_vector<std::uint64_t>();
  table.summaries.resize(table.cells.size());
  for (tables::CellSummary& s : table.summaries) {
    s.count = in.get<std::int64_t>();
    s.weighted_count = get_exact_sum(in);
    s.key_sum = in.get<std::uint64_t>();
    s.value = get_exact_sum(in);
    s.weighted_value = get_exact_sum(in);
    s.contributors = in.get<std::int64_t>();
    s.key_sum_nonzero = in.get<std::uint64_t>();
    s.top = in.get_vector<tables::Contribution>();
  }
  return table;
}

}  // namespace

tables::CellTable distributed_tabulation(const Communicator& comm,
                                         std::span<const tables::TabulationDimension> dimensions,
                                         const tables::TabulationOptions& options) {
  tables::CellTable table;
  agree_on_error(comm, [&] { table = tables::tabulate_leaves(dimensions, options); });

  const int ranks = comm.size();
  for (int step = 1; step < ranks; step *= 2) {
    std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(ranks));
    const int rank = comm.rank();
    const bool sends = rank % (2 * step) == step;
    if (sends) {
      ByteWriter out;
      put_cells(out, table);
      send[static_cast<std::size_t>(rank - step)] = std::move(out.bytes());
      table = tables::CellTable{table.sizes, {}, {}};
    }
    const auto received = comm.all_to_all_bytes(send);
    if (rank % (2 * step) == 0 && rank + step < ranks) {
      ByteReader in(received[static_cast<std::size_t>(rank + step)]);
      tables::merge_cell_tables(table, get_cells(in, table.sizes), options);
    }
  }
  if (comm.is_coordinator()) tables::add_margins(table, dimensions, options);
  return table;
}

std::vector<std::vector<std::int32_t>> distinct_tuples(const Communicator& comm,
                                                       std::span<const std::span<const std::int32_t>> columns) {
  KeyColumns keys;
  for (const auto& column : columns) {
    keys.codes.push_back(column);
    const auto top = std::max_element(column.begin(), column.end());
    keys.level_counts.push_back(top == column.end() ? 1 : *top + 1);
  }
  ByteWriter out;
  if (!columns.empty() && !columns.front().empty()) {
    const KeyGrouping grouping = group_by_keys(keys);
    out.put_vector(grouping.class_keys);
  } else {
    out.put_vector(std::vector<std::int32_t>{});
  }
  std::set<std::vector<std::int32_t>> tuples;
  for (const auto& bytes : comm.all_gather_bytes(out.bytes())) {
    ByteReader in(bytes);
    const auto flat = in.get_vector<std::int32_t>();
    for (std::size_t k = 0; k + columns.size() <= flat.size(); k += columns.size())
      tuples.emplace(flat.begin() + static_cast<std::ptrdiff_t>(k),
                     flat.begin() + static_cast<std::ptrdiff_t>(k + columns.size()));
  }
  return {tuples.begin(), tuples.end()};
}

}  // namespace sdc::distributed
