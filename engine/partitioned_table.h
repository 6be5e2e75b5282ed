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
  Table table;  ///< this rank's rows of the variables read, in file order; first_row_id() == range.first
  /// The file's other variables, in file order: left unread, they go to the output as stored
  /// (io::UnchangedVariables::not_held).
  std::vector<io::PlacedVariable> carried;
  /// Per variable of the file: the content digests of its blocks as stored with it, checked against
  /// its stored chunks (io::Hdf5TableReader::stored_block_digests) by the ranks; empty when the file
  /// has none or a chunk has changed, and when read without ReadNeeds.
  std::vector<std::vector<std::string>> stored_block_digests;
};

/// What a step reads of its input: the variables it uses, and how its output is written. The stored
/// digests of the input (docs/format.md) stand in for hashing the values when they match the stored
/// chunks; any variable not used is then carried (left unread) when the output stores it as the
/// input does (chunk rows, filters).
struct ReadNeeds {
  std::vector<std::string> used;
  const io::Hdf5WriteOptions* output = nullptr;
};

/// Collective. Every rank reads its share of `path`: every variable, or with `needs` the ones that
/// cannot be carried. With a household variable, boundaries fall between households and the file must
/// be sorted by it (InvalidInput naming the first bad row id). The value checks of io::Hdf5ReadOptions
/// run on the variables read; carried variables are copied as they are stored.
TablePart read_partitioned(const distributed::Communicator& comm, const std::filesystem::path& path,
                           const std::optional<std::string>& household_variable,
                           const std::optional<ReadNeeds>& needs = std::nullopt);

/// Collective. The content digest (docs/format.md) of the file `part`s were read from, computed from
/// the rows the ranks hold — no second read — and the stored block digests of the carried variables,
/// with the value `sdc info --digest` gives. Every rank gets the digest.
std::string partitioned_content_digest(const distributed::Communicator& comm, const TablePart& part);

/// Collective. Writes every rank's `part` (rows in rank order, equal variables on every rank) as one
/// file, atomically: the output appears only when every rank has written its rows. The part is taken
/// over: ranks move the rows of one partial chunk to their neighbours in place, column by column, so
/// the extra memory is one column of the part, not a copy of it, plus the part's compressed chunks,
/// which every rank makes at the same time before the ranks take turns to store them.
void write_partitioned(const distributed::Communicator& comm, Table part, const std::filesystem::path& output,
                       const io::Hdf5WriteOptions& options);

}  // namespace sdc::engine
