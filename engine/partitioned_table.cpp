#include "engine/partitioned_table.h"

#include <algorithm>
#include <numeric>

#include "distributed/row_exchange.h"

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

/// Collective. Moves rows so that rank r holds `target[r]`, a row range that starts on a chunk
/// boundary, so that every rank writes whole chunks. Only the rows outside a rank's target travel
/// (those of one partial chunk at each end, usually); the rest stay where they are.
Table realign_rows(const distributed::Communicator& comm, Table part, const std::vector<distributed::RowRange>& target) {
  const auto& mine = target[static_cast<std::size_t>(comm.rank())];
  const std::int64_t first = part.first_row_id();
  const std::int64_t end = first + part.row_count();
  const std::int64_t keep_begin = std::clamp(mine.first, first, end);
  const std::int64_t keep_end = std::clamp(mine.end(), keep_begin, end);

  // The rows that leave: a small table of the head [first, keep_begin) and the tail [keep_end, end).
  std::vector<std::int64_t> leaving_ids;
  for (std::int64_t row = first; row < keep_begin; ++row) leaving_ids.push_back(row);
  for (std::int64_t row = keep_end; row < end; ++row) leaving_ids.push_back(row);
  Table leaving(part.source(), static_cast<std::int64_t>(leaving_ids.size()), 0);
  for (const Column& column : part.columns()) {
    Column copy = column;
    std::visit(
        [&](auto& values) {
          std::decay_t<decltype(values)> rows;
          rows.reserve(leaving_ids.size());
          for (std::int64_t row : leaving_ids) rows.push_back(values[static_cast<std::size_t>(row - first)]);
          values = std::move(rows);
        },
        copy.mutable_storage());
    leaving.add_column(std::move(copy));
  }
  std::vector<int> destination(leaving_ids.size());
  for (std::size_t i = 0; i < leaving_ids.size(); ++i) {
    const auto it = std::find_if(target.begin(), target.end(), [&](const distributed::RowRange& r) {
      return leaving_ids[i] >= r.first && leaving_ids[i] < r.end();
    });
    destination[i] = static_cast<int>(it - target.begin());
  }
  const distributed::MovedRows arrived = distributed::exchange_rows(comm, leaving, leaving_ids, destination);
  std::size_t before = 0;  // arrivals from lower ranks precede the kept rows
  while (before < arrived.row_ids.size() && arrived.row_ids[before] < keep_begin) ++before;

  Table out(part.source(), mine.count, mine.first);
  for (std::size_t j = 0; j < part.column_count(); ++j) {
    Column& column = part.mutable_columns()[j];
    std::visit(
        [&](auto& values) {
          using Values = std::decay_t<decltype(values)>;
          const auto& incoming = std::get<Values>(arrived.table.columns()[j].storage());
          Values merged;
          merged.reserve(static_cast<std::size_t>(mine.count));
          merged.insert(merged.end(), incoming.begin(), incoming.begin() + static_cast<std::ptrdiff_t>(before));
          merged.insert(merged.end(), values.begin() + (keep_begin - first), values.begin() + (keep_end - first));
          merged.insert(merged.end(), incoming.begin() + static_cast<std::ptrdiff_t>(before), incoming.end());
          values = std::move(merged);  // frees this column's old values before the next is built
        },
        column.mutable_storage());
    out.add_column(std::move(column));
  }
  return out;
}

}  // namespace

void write_partitioned(const distributed::Communicator& comm, Table part, const std::filesystem::path& output,
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
  const bool aligned_already = comm.all_reduce_max(part.first_row_id() == target[static_cast<std::size_t>(comm.rank())].first &&
                                                          part.row_count() == target[static_cast<std::size_t>(comm.rank())].count
                                                      ? 0
                                                      : 1) == 0;
  const Table aligned = aligned_already ? std::move(part) : realign_rows(comm, std::move(part), target);

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
