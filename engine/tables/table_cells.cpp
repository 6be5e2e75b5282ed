#include "engine/tables/table_cells.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

/// Counts are exact in the doubles that store them below 2^53.
constexpr double kMaxExactCount = 9007199254740992.0;

template <typename T>
std::vector<T> scatter_values(const distributed::Communicator& comm, std::span<const std::int64_t> row_ids,
                              std::span<const T> values, std::int64_t first_row_id, std::int64_t row_count) {
  const auto ranges = comm.all_gather(std::array<std::int64_t, 2>{first_row_id, row_count});
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(comm.size()));
  if (comm.is_coordinator()) {
    SDC_CHECK(row_ids.size() == values.size(), "a value per row");
    // The ranks holding rows, by their first row: a row goes to the last of them starting at or before it.
    std::vector<std::pair<std::int64_t, std::size_t>> holders;
    for (std::size_t r = 0; r < ranges.size(); ++r)
      if (ranges[r][1] > 0) holders.emplace_back(ranges[r][0], r);
    std::vector<std::vector<std::int64_t>> ids(ranges.size());
    std::vector<std::vector<T>> parts(ranges.size());
    for (std::size_t i = 0; i < row_ids.size(); ++i) {
      const auto after = std::upper_bound(holders.begin(), holders.end(), std::pair{row_ids[i], ranges.size()});
      SDC_CHECK(after != holders.begin(), "every row is held by a rank");
      const std::size_t rank = std::prev(after)->second;
      SDC_CHECK(row_ids[i] < ranges[rank][0] + ranges[rank][1], "every row is held by a rank");
      ids[rank].push_back(row_ids[i]);
      parts[rank].push_back(values[i]);
    }
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      distributed::ByteWriter writer;
      writer.put_vector(ids[r]);
      writer.put_vector(parts[r]);
      send[r] = std::move(writer.bytes());
    }
  }
  const auto received = comm.all_to_all_bytes(send);
  distributed::ByteReader reader(received.front());
  const auto ids = reader.get_vector<std::int64_t>();
  const auto mine = reader.get_vector<T>();
  SDC_CHECK(reader.done() && static_cast<std::int64_t>(ids.size()) == row_count, "a value for every row of the rank");
  std::vector<T> out(static_cast<std::size_t>(row_count));
  std::vector<bool> seen(out.size(), false);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t offset = ids[i] - first_row_id;
    SDC_CHECK(offset >= 0 && offset < row_count && !seen[static_cast<std::size_t>(offset)],
              "each row of the rank receives one value");
    seen[static_cast<std::size_t>(offset)] = true;
    out[static_cast<std::size_t>(offset)] = mine[i];
  }
  return out;
}

template <typename T>
std::vector<T> gather_values(const distributed::Communicator& comm, std::span<const T> values) {
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(comm.size()));
  distributed::ByteWriter writer;
  writer.put(static_cast<std::uint64_t>(values.size()));
  writer.put_span(values);
  send.front() = std::move(writer.bytes());
  const auto received = comm.all_to_all_bytes(send);
  std::vector<T> all;
  if (!comm.is_coordinator()) return all;
  for (const auto& bytes : received) {
    distributed::ByteReader reader(bytes);
    const auto part = reader.get_vector<T>();
    all.insert(all.end(), part.begin(), part.end());
    SDC_CHECK(reader.done(), "gathered row values: the whole message read");
  }
  return all;
}

}  // namespace

TableCells read_table_cells(const Table& table, const std::vector<TableFileDimension>& dimensions) {
  const auto rows = static_cast<std::size_t>(table.row_count());
  const auto row_id = [&](std::size_t row) { return table.first_row_id() + static_cast<std::int64_t>(row); };
  TableCells out;
  out.cells.assign(rows, 0);
  for (const TableFileDimension& dimension : dimensions) {
    const auto codes = table.require(dimension.name, VariableType::kCategorical).codes();
    const auto size = static_cast<std::int64_t>(dimension.hierarchy.size());
    for (std::size_t r = 0; r < rows; ++r) {
      if (codes[r] < 0 || codes[r] >= size)
        throw InvalidInput(fmt::format("{}: variable '{}', row id {}: a cell needs a code of the dimension",
                                       table.source(), dimension.name, row_id(r)));
      out.cells[r] = out.cells[r] * size + codes[r];
    }
  }
  out.counts = whole_cell_values(table, cell_columns::kCount);
  out.row_ids.resize(rows);
  for (std::size_t r = 0; r < rows; ++r) out.row_ids[r] = row_id(r);
  return out;
}

std::vector<std::int64_t> whole_cell_values(const Table& table, const std::string& variable) {
  const auto values = table.require(variable, VariableType::kContinuous).values();
  std::vector<std::int64_t> out(values.size());
  for (std::size_t r = 0; r < values.size(); ++r) {
    const double value = values[r];
    if (!(value >= 0.0 && value < kMaxExactCount) || value != std::floor(value))
      throw InvalidInput(fmt::format("{}: variable '{}', row id {}: not a whole number from 0 to 2^53", table.source(),
                                     variable, table.first_row_id() + static_cast<std::int64_t>(r)));
    out[r] = static_cast<std::int64_t>(value);
  }
  return out;
}

TableCells gather_table_cells(const distributed::Communicator& comm, const TableCells& local) {
  std::vector<std::vector<std::byte>> send(static_cast<std::size_t>(comm.size()));
  distributed::ByteWriter writer;
  writer.put_vector(local.cells);
  writer.put_vector(local.counts);
  writer.put_vector(local.row_ids);
  send.front() = std::move(writer.bytes());
  const auto received = comm.all_to_all_bytes(send);
  TableCells all;
  if (!comm.is_coordinator()) return all;
  // Ranks hold consecutive row ranges in rank order: appending by source keeps the rows in order.
  for (const auto& bytes : received) {
    distributed::ByteReader reader(bytes);
    for (std::vector<std::int64_t>* field : {&all.cells, &all.counts, &all.row_ids}) {
      const auto part = reader.get_vector<std::int64_t>();
      field->insert(field->end(), part.begin(), part.end());
    }
    SDC_CHECK(reader.done(), "gathered table cells: the whole message read");
  }
  return all;
}

std::vector<std::int64_t> gather_row_values(const distributed::Communicator& comm,
                                            std::span<const std::int64_t> values) {
  return gather_values(comm, values);
}

std::vector<double> gather_row_values(const distributed::Communicator& comm, std::span<const double> values) {
  return gather_values(comm, values);
}

std::vector<std::int64_t> scatter_to_rows(const distributed::Communicator& comm, std::span<const std::int64_t> row_ids,
                                          std::span<const std::int64_t> values, std::int64_t first_row_id,
                                          std::int64_t row_count) {
  return scatter_values(comm, row_ids, values, first_row_id, row_count);
}

std::vector<double> scatter_to_rows(const distributed::Communicator& comm, std::span<const std::int64_t> row_ids,
                                    std::span<const double> values, std::int64_t first_row_id, std::int64_t row_count) {
  return scatter_values(comm, row_ids, values, first_row_id, row_count);
}

}  // namespace sdc::engine
