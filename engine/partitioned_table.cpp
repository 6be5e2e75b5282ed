#include "engine/partitioned_table.h"

#include <algorithm>
#include <numeric>

#include "distributed/row_exchange.h"
#include "io/content_digest.h"

#include <map>

#include "kernels/core/error.h"

namespace sdc::engine {

namespace {

/// Collective. The stored block digests of every variable of `reader`'s file (TablePart::
/// stored_block_digests): each rank checks the chunks of its rows `range`, and a variable keeps its
/// digests only when every rank found them matching.
std::vector<std::vector<std::string>> checked_stored_digests(const distributed::Communicator& comm,
                                                             const io::Hdf5TableReader& reader,
                                                             const distributed::RowRange& range) {
  std::vector<std::vector<std::string>> digests;
  for (const VariableInfo& info : reader.summary().variables) {
    auto blocks = reader.stored_block_digests(info.name, range.first, range.count);
    digests.push_back(comm.all_reduce_max(blocks ? 0 : 1) == 0 ? std::move(*blocks) : std::vector<std::string>());
  }
  return digests;
}

}  // namespace

TablePart read_partitioned(const distributed::Communicator& comm, const std::filesystem::path& path,
                           const std::optional<std::string>& household_variable,
                           const std::optional<ReadNeeds>& needs) {
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
  if (needs) {
    part.stored_block_digests = checked_stored_digests(comm, reader, part.range);
    const auto used = [&](const std::string& name) {
      return name == household_variable || std::find(needs->used.begin(), needs->used.end(), name) != needs->used.end();
    };
    for (std::size_t v = 0; v < part.summary.variables.size(); ++v) {
      const VariableInfo& info = part.summary.variables[v];
      if (!used(info.name) && !part.stored_block_digests[v].empty() && reader.stored_as(info.name, *needs->output))
        part.carried.push_back({v, info});
      else
        options.variables.push_back(info.name);
    }
    if (part.carried.empty()) options.variables.clear();  // all of them, as without needs
  }
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
Table realign_rows(const distributed::Communicator& comm, Table part,
                   const std::vector<distributed::RowRange>& target) {
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
    Column::Storage rows = std::visit(
        [&](const auto& values) {
          std::decay_t<decltype(values)> picked;
          picked.reserve(leaving_ids.size());
          for (std::int64_t row : leaving_ids) picked.push_back(values[static_cast<std::size_t>(row - first)]);
          return Column::Storage(std::move(picked));
        },
        column.storage());
    leaving.add_column(Column::of(column.info(), std::move(rows)));
  }
  std::vector<int> destination(leaving_ids.size());
  for (std::size_t i = 0; i < leaving_ids.size(); ++i) {
    // Targets are contiguous and in rank order: the destination is the first target ending after the row.
    const auto it = std::partition_point(target.begin(), target.end(),
                                         [&](const distributed::RowRange& r) { return r.end() <= leaving_ids[i]; });
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

std::string partitioned_content_digest(const distributed::Communicator& comm, const TablePart& table_part) {
  constexpr std::int64_t kBlock = io::kDigestBlockRows;
  const Table& part = table_part.table;
  const io::FileSummary& summary = table_part.summary;
  const std::int64_t total = summary.row_count;
  const std::int64_t first = part.first_row_id();
  const std::int64_t end = first + part.row_count();
  SDC_CHECK(part.column_count() + table_part.carried.size() == summary.variables.size(),
            "every variable of the file is held or carried");
  const auto& stored = table_part.stored_block_digests;
  // position[j]: the place among the file's variables of the part's column j; hashed[j]: whether its
  // values are hashed here, for want of stored digests.
  std::vector<std::size_t> position;
  std::vector<bool> hashed;
  for (std::size_t v = 0, c = 0; v < summary.variables.size(); ++v) {
    if (c < table_part.carried.size() && table_part.carried[c].position == v) {
      ++c;
      continue;
    }
    position.push_back(v);
    hashed.push_back(stored.empty() || stored[v].empty());
  }
  const auto ranges = comm.all_gather(distributed::RowRange{first, part.row_count()});
  const auto owner_of_row = [&](std::int64_t row) {
    for (std::size_t r = 0; r < ranges.size(); ++r)
      if (row >= ranges[r].first && row < ranges[r].end()) return r;
    SDC_CHECK(false, "every row has a rank");
    return std::size_t{0};
  };

  // Whole blocks are hashed where they are; pieces of blocks split between ranks go to the rank
  // holding the block's first row, which hashes the reassembled block.
  distributed::ByteWriter coordinator_part;  // (variable, block, digest) triples for the coordinator
  const auto report = [&](std::size_t v, std::int64_t block, const std::string& digest) {
    coordinator_part.put(static_cast<std::uint64_t>(v));
    coordinator_part.put(block);
    coordinator_part.put_span(std::span(digest.data(), digest.size()));
  };
  std::vector<distributed::ByteWriter> pieces(ranges.size());
  std::int64_t whole_begin = -1, whole_end = -1;
  for (std::int64_t block = first / kBlock; block * kBlock < end; ++block) {
    const std::int64_t block_begin = block * kBlock;
    const std::int64_t block_end = std::min(block_begin + kBlock, total);
    const std::int64_t lo = std::max(first, block_begin);
    const std::int64_t hi = std::min(end, block_end);
    if (lo == block_begin && hi == block_end) {
      if (whole_begin < 0) whole_begin = block_begin;
      whole_end = block_end;
      continue;
    }
    auto& out = pieces[owner_of_row(block_begin)];
    out.put(block);
    out.put(lo);
    out.put(hi);
    for (std::size_t j = 0; j < part.column_count(); ++j) {
      if (!hashed[j]) continue;
      const std::string bytes = io::canonical_bytes(part.columns()[j], static_cast<std::size_t>(lo - first),
                                                    static_cast<std::size_t>(hi - lo));
      out.put_span(std::span(bytes.data(), bytes.size()));
    }
  }
  if (whole_begin >= 0) {
    const auto digests = io::whole_block_digests(part, whole_begin, whole_end, total, hashed);
    for (std::size_t j = 0; j < digests.size(); ++j)
      for (std::size_t i = 0; i < digests[j].size(); ++i)
        report(position[j], whole_begin / kBlock + static_cast<std::int64_t>(i), digests[j][i]);
  }

  std::vector<std::vector<std::byte>> send(ranges.size());
  for (std::size_t r = 0; r < ranges.size(); ++r) send[r] = std::move(pieces[r].bytes());
  const auto received = comm.all_to_all_bytes(send);
  // Pieces arrive by source rank, which is row order: appending reassembles each block.
  std::map<std::int64_t, std::vector<std::string>> split_blocks;  // block -> bytes per variable
  for (const auto& bytes : received) {
    distributed::ByteReader in(bytes);
    while (!in.done()) {
      const auto block = in.get<std::int64_t>();
      const auto lo = in.get<std::int64_t>();
      const auto hi = in.get<std::int64_t>();
      auto& buffers = split_blocks[block];
      buffers.resize(part.column_count());
      for (std::size_t j = 0; j < part.column_count(); ++j) {
        if (!hashed[j]) continue;
        const std::size_t size = static_cast<std::size_t>(hi - lo) *
                                 (summary.variables[position[j]].type == VariableType::kCategorical ? 4 : 8);
        const std::size_t old = buffers[j].size();
        buffers[j].resize(old + size);
        in.get_span(std::span(buffers[j].data() + old, size));
      }
    }
  }
  for (const auto& [block, buffers] : split_blocks)
    for (std::size_t j = 0; j < buffers.size(); ++j)
      if (hashed[j]) report(position[j], block, io::block_digest(buffers[j]));

  std::vector<std::vector<std::byte>> to_coordinator(ranges.size());
  to_coordinator[0] = std::move(coordinator_part.bytes());
  const auto gathered = comm.all_to_all_bytes(to_coordinator);
  std::string digest;
  if (comm.is_coordinator()) {
    const auto blocks = static_cast<std::size_t>((total + kBlock - 1) / kBlock);
    std::vector<std::vector<std::string>> digests(summary.variables.size(), std::vector<std::string>(blocks));
    for (std::size_t v = 0; v < stored.size(); ++v)
      if (!stored[v].empty()) digests[v] = stored[v];
    for (const auto& bytes : gathered) {
      distributed::ByteReader in(bytes);
      while (!in.done()) {
        const auto v = static_cast<std::size_t>(in.get<std::uint64_t>());
        const auto block = static_cast<std::size_t>(in.get<std::int64_t>());
        std::string value(32, '\0');
        in.get_span(std::span(value.data(), value.size()));
        digests[v][block] = std::move(value);
      }
    }
    digest = io::combine_content_digest(summary, digests);
  }
  return comm.broadcast_string(digest);
}

void write_partitioned(const distributed::Communicator& comm, Table part, const std::filesystem::path& output,
                       const io::Hdf5WriteOptions& options) {
  const std::int64_t rows = comm.all_reduce_sum(part.row_count());
  const std::vector<VariableInfo> variables = io::written_variables(part, options);

  if (comm.size() == 1) {
    io::write_table(part, output, options);
    return;
  }
  // Chunk-aligned target ranges: rank r starts at its first row rounded up to a chunk boundary.
  const auto firsts = comm.all_gather(part.first_row_id());
  std::vector<distributed::RowRange> target(firsts.size());
  for (std::size_t r = 0; r < firsts.size(); ++r) {
    const std::int64_t rounded =
        r == 0 ? 0 : std::min(rows, (firsts[r] + options.chunk_rows - 1) / options.chunk_rows * options.chunk_rows);
    target[r].first = rounded;
  }
  for (std::size_t r = 0; r < firsts.size(); ++r) {
    const std::int64_t end = r + 1 < firsts.size() ? target[r + 1].first : rows;
    target[r].count = std::max<std::int64_t>(0, end - target[r].first);
  }
  const bool aligned_already =
      comm.all_reduce_max(part.first_row_id() == target[static_cast<std::size_t>(comm.rank())].first &&
                                  part.row_count() == target[static_cast<std::size_t>(comm.rank())].count
                              ? 0
                              : 1) == 0;
  const Table aligned = aligned_already ? std::move(part) : realign_rows(comm, std::move(part), target);

  // The coordinator creates the file under its temporary name; ranks then write their rows in turn
  // (the HDF5 library here is built for MPI-IO but direct chunk writes are not collective), and the
  // coordinator renames the file when every rank is done. Every rank compresses its rows first, all at
  // once, so that the turns only store bytes.
  const io::EncodedRows encoded = io::encode_rows(aligned, rows, options);
  std::optional<io::AtomicOutput> atomic;
  std::string temp_path;
  if (comm.is_coordinator()) {
    atomic.emplace(output, options.permissions);
    temp_path = atomic->temp_path().string();
    io::create_table_file(atomic->temp_path(), variables, rows, options);
  }
  temp_path = comm.broadcast_string(temp_path);
  for (int turn = 0; turn < comm.size(); ++turn) {
    if (turn == comm.rank() && aligned.row_count() > 0) io::write_table_rows(temp_path, aligned, options, &encoded);
    comm.barrier();
  }
  if (atomic) atomic->commit();
  comm.barrier();
}

}  // namespace sdc::engine
