#pragma once
// Reading and writing one table across the ranks of a job: each rank holds a household-aligned row
// range (distributed/partition.h) of the input, and the output is one file with every rank's rows
// in rank order. Composes io/ (files) and distributed/ (ranks); neither knows the other.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "distributed/partition.h"
#include "io/hdf5_table.h"

namespace sdc::engine {

struct TablePart {
  io::FileSummary summary;  ///< of the whole file
  distributed::RowRange range;
  Table table;  ///< this rank's rows; first_row_id() == range.first
};

/// Collective. Every rank reads its share of `path`. With a household variable, boundaries fall
/// between households and the file must be sorted by it (InvalidInput naming the first bad row id).
TablePart read_partitioned(const distributed::Communicator& comm, const std::filesystem::path& path,
                           const std::optional<std::string>& household_variable);

/// Collective. The content digest (docs/format.md) of the file `part`s were read from, computed from
/// the rows the ranks hold — no second read — with the value `sdc info --digest` gives. Every rank's
/// part must hold all the file's variables in file order; every rank gets the digest.
std::string partitioned_content_digest(const distributed::Communicator& comm, const Table& part,
                                       const io::FileSummary& summary);

/// Collective. Writes every rank's `part` (rows in rank order, equal variables on every rank) as one
/// file, atomically: the output appears only when every rank has written its rows. The part is taken
/// over: ranks move the rows of one partial chunk to their neighbours in place, column by column, so
/// the extra memory is one column of the part, not a copy of it, plus the part's compressed chunks,
/// which every rank makes at the same time before the ranks take turns to store them.
void write_partitioned(const distributed::Communicator& comm, Table part, const std::filesystem::path& output,
                       const io::Hdf5WriteOptions& options);

}  // namespace sdc::engine
