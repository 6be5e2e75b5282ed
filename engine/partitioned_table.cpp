#include "engine/partitioned_table.h"

#include <algorithm>

#include "kernels/core/error.h"

namespace sdc::engine {

TablePart read_partitioned(const distributed::Communicator& comm, const std::filesystem::path& path,
                           const std::optional<std::string>& household_variable) {
  const io::Hdf5TableReader reader(path);
  TablePart part;
  part.summary = reader.summary();
  const std::int64_t rows = part.summary.row_count;

  if (household_variable) {
    const auto info = std::find_if(part.summary.variables.begin(), part.summary.variables.end(),
                                   [&](const VariableInfo& v) { return v.name == *household_variable; });
    if (info == part.summary.variables.end())
      throw InvalidInput(path.string() + ": household variable '" + *household_variable + "' not found");
    if (info->type != VariableType::kId)
      throw InvalidInput(path.string() + ": household variable '" + *household_variable + "' is " +
                         std::string(to_string(info->type)) + ", expected id");
    const auto read_ids = [&](std::int64_t first, std::int64_t count) {
      io::Hdf5ReadOptions options;
      options.variables = {*household_variable};
      options.first_row = first;
      options.row_count = count;
      const Table window = reader.read(options);
      const auto ids = window.columns()[0].ids();
      return std::vector<std::int64_t>(ids.begin(), ids.end());
    };
    part.range = distributed::household_aligned_range(comm, rows, read_ids);
  } else {
    part.range = distributed::even_split(rows, comm.rank(), comm.size());
  }

  io::Hdf5ReadOptions options;
  options.first_row = part.range.first;
  options.row_count = part.range.count;
  part.table = reader.read(options);

  if (household_variable) {
    const auto ids = part.table.require(*household_variable, VariableType::kId).ids();
    const std::int64_t bad = distributed::first_unsorted_row(comm, part.range, ids);
    if (bad >= 0)
      throw InvalidInput(path.string() + ": variable '" + *household_variable + "', row id " + std::to_string(bad) +
                         ": household ids decrease; the input must be sorted by household (sdc import sorts it)");
  }
  return part;
}

}  // namespace sdc::engine

namespace sdc::engine {
namespace {

/// Appends rows [begin, end) of every column of `table` to `out`.
void put_rows(distributed::ByteWriter& out, const Table& table, std::size_t begin, std::size_t end) {
  for (const Column& column : table.columns()) {
    std::visit([&](const auto& values) { out.put_span(std::span(values).subspan(begin, end - begin)); }, column.storage());
  }
}

/// Reads `rows` rows of every column (typed like `like`) from `in` and appends them to `columns`.
void take_rows(distributed::ByteReader& in, const Table& like, std::size_t rows, std::vector<Column::Storage>& columns) {
  for (std::size_t j = 0; j < like.column_count(); ++j) {
    std::visit(
        [&](auto& values) {
          const std::size_t old_size = values.size();
          values.resize(old_size + rows);
          in.get_span(std::span(values).subspan(old_size, rows));
        },
        columns[j]);
  }
}

/// Collective. Moves rows so that rank r holds `target[r]`: a row range that starts on a chunk
/// boundary, so that every rank writes whole chunks. Only the rows near each boundary travel (less
/// than one chunk per rank).
Table realign_rows(const distributed::Communicator& comm, const Table& part, const std::vector<distributed::RowRange>& target) {
  const auto ranks = static_cast<std::size_t>(comm.size());
  const auto me = static_cast<std::size_t>(comm.rank());
  std::vector<std::vector<std::byte>> send(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::int64_t begin = std::max(part.first_row_id(), target[r].first);
    const std::int64_t end = std::min(part.first_row_id() + part.row_count(), target[r].end());
    if (begin >= end) continue;
    distributed::ByteWriter out;
    put_rows(out, part, static_cast<std::size_t>(begin - part.first_row_id()), static_cast<std::size_t>(end - part.first_row_id()));
    send[r] = std::move(out.bytes());
  }
  // What each source sends covers a contiguous piece of my target range; sources come in row order.
  const auto sources = comm.all_gather(distributed::RowRange{part.first_row_id(), part.row_count()});
  const auto received = comm.all_to_all_bytes(send);
  std::vector<Column::Storage> columns;
  for (const Column& column : part.columns()) {
    columns.push_back(std::visit([](const auto& values) { return Column::Storage(std::decay_t<decltype(values)>{}); },
                                 column.storage()));
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::int64_t begin = std::max(sources[r].first, target[me].first);
    const std::int64_t end = std::min(sources[r].end(), target[me].end());
    if (begin >= end) continue;
    distributed::ByteReader in(received[r]);
    take_rows(in, part, static_cast<std::size_t>(end - begin), columns);
    SDC_CHECK(in.done(), "every received row consumed");
  }
  Table out(part.source(), target[me].count, target[me].first);
  for (std::size_t j = 0; j < part.column_count(); ++j) {
    const VariableInfo& info = part.columns()[j].info();
    std::visit(
        [&](auto& values) {
          using Values = std::decay_t<decltype(values)>;
          if constexpr (std::is_same_v<Values, std::vector<std::int32_t>>) out.add_column(Column::categorical(info, std::move(values)));
          else if constexpr (std::is_same_v<Values, std::vector<double>>) out.add_column(Column::continuous(info, std::move(values)));
          else out.add_column(Column::id(info, std::move(values)));
        },
        columns[j]);
  }
  return out;
}

}  // namespace

void write_partitioned(const distributed::Communicator& comm, const Table& part, const std::filesystem::path& output,
                       const io::Hdf5WriteOptions& options) {
  const std::int64_t rows = comm.all_reduce_sum(part.row_count());
  std::vector<VariableInfo> variables;
  for (const Column& column : part.columns()) variables.push_back(column.info());

  if (comm.size() == 1) {
    io::write_table(part, output, options);
    return;
  }
  // Chunk-aligned target ranges: rank r starts at its first row rounded up to a chunk boundary.
  const auto firsts = comm.all_gather(part.first_row_id());
  std::vector<distributed::RowRange> target(firsts.size());
  for (std::size_t r = 0; r < firsts.size(); ++r) {
    const std::int64_t rounded = r == 0 ? 0 : std::min(rows, (firsts[r] + options.chunk_rows - 1) / options.chunk_rows * options.chunk_rows);
    target[r].first = rounded;
  }
  for (std::size_t r = 0; r < firsts.size(); ++r) {
    const std::int64_t end = r + 1 < firsts.size() ? target[r + 1].first : rows;
    target[r].count = std::max<std::int64_t>(0, end - target[r].first);
  }
  const Table aligned = realign_rows(comm, part, target);

  // The coordinator creates the file under its temporary name; ranks then write their rows in turn
  // (the HDF5 library here is built for MPI-IO but direct chunk writes are not collective), and the
  // coordinator renames the file when every rank is done.
  std::optional<io::AtomicOutput> atomic;
  std::string temp_path;
  if (comm.is_coordinator()) {
    atomic.emplace(output, options.permissions);
    temp_path = atomic->temp_path().string();
    io::create_table_file(atomic->temp_path(), variables, rows, options);
  }
  const auto shared = comm.broadcast_bytes(std::as_bytes(std::span(temp_path.data(), temp_path.size())));
  temp_path.assign(reinterpret_cast<const char*>(shared.data()), shared.size());
  for (int turn = 0; turn < comm.size(); ++turn) {
    if (turn == comm.rank() && aligned.row_count() > 0) io::write_table_rows(temp_path, aligned, options);
    comm.barrier();
  }
  if (atomic) atomic->commit();
  comm.barrier();
}

}  // namespace sdc::engine
