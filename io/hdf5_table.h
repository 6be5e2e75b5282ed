#pragma once
// Reading and writing tables in the sdc-engine HDF5 format (docs/format.md, format version 1).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_output.h"
#include "kernels/core/table.h"

namespace sdc::io {

inline constexpr int kFormatVersion = 1;
inline constexpr std::int64_t kDefaultChunkRows = 1 << 17;
/// HDF5 caps a chunk at 4 GiB; 2^24 rows keep an 8-byte chunk at 128 MiB.
inline constexpr std::int64_t kMaxChunkRows = 1 << 24;

/// The HDF5 filter pipeline of every variable dataset. Default: shuffle + deflate level 1.
struct Hdf5Filters {
  bool shuffle = true;
  int deflate_level = 1;  ///< 0 = no deflate, 1..9 zlib levels
};

/// Parses "none", "default" (= "shuffle,deflate=1"), "shuffle", "deflate=N" or "shuffle,deflate=N" with
/// N in 1..9 (the two parts in either order). Throws UsageError naming the text.
Hdf5Filters parse_filters(std::string_view text);
std::string to_string(const Hdf5Filters& filters);

/// How a file was made. `created_utc` and `command` describe the run rather than the content and
/// are left out of the content digest.
struct Provenance {
  std::string tool_version;
  std::string command;
  std::string input_digest;  ///< content digest of the input the file was made from; empty for none
  std::string created_utc;   ///< ISO 8601; from SOURCE_DATE_EPOCH when that is set
  /// Identity of the step that made the file (docs/checkpoints.md); empty for files not made by a step.
  std::string step_fingerprint;
  /// The step's results as JSON text, so that a resumed run reports what the skipped step found.
  /// Derived from the content, so left out of the content digest.
  std::string step_results;
};

/// Provenance of a file written now by this build of sdc-engine.
Provenance make_provenance(std::string command, std::string input_digest);

/// One version of a file on disk: a file rewritten or replaced since it was read has another stamp.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

/// A variable and its place (0-based) among a file's variables.
struct PlacedVariable {
  std::size_t position = 0;
  VariableInfo info;
};

/// Variables of a table being written that hold, row for row (same row ids), the values of the
/// same-named variables of `path` as it was when read (`stamp`): the input variables a step carries
/// along untouched. The writer copies their stored chunks from `path` instead of encoding the values
/// again, when the two datasets are stored alike (type, extent, chunk size and filter pipeline) and
/// the file still has its stamp; otherwise it encodes the values as usual. The caller vouches that
/// the values are unchanged.
struct UnchangedVariables {
  std::filesystem::path path;
  FileStamp stamp;
  std::vector<std::string> names;
  /// Of `names`, those the table being written does not hold, each with its place among the written
  /// variables (places in increasing order): input variables a step carries without loading them
  /// (docs/format.md, "Stored digests"). The writer copies their stored chunks and stored digests
  /// from `path`; there is nothing to encode instead, so it fails (IoError) when it cannot.
  std::vector<PlacedVariable> not_held = {};
};

/// The default filters of derived variables (Hdf5WriteOptions::derived): shuffle, no deflate.
inline constexpr Hdf5Filters kDerivedFilters{true, 0};

struct Hdf5WriteOptions {
  Hdf5Filters filters;
  std::int64_t chunk_rows = kDefaultChunkRows;  ///< 1..kMaxChunkRows; a table shorter than this is one chunk
  Provenance provenance;
  FilePermissions permissions;
  std::optional<UnchangedVariables> unchanged;
  /// Variables stored with `derived_filters` instead of `filters`: the continuous columns a step
  /// computes and appends (fk, risks), which it can make again from its input. Deflate spends most of a write
  /// on such columns, whose low bytes are nearly random; shuffle alone stores them at memory speed, at
  /// a cost in file size (docs/format.md, "Derived variables").
  std::vector<std::string> derived;
  Hdf5Filters derived_filters = kDerivedFilters;
};

/// The filters `options` gives variable `name`: derived_filters for a derived variable, else filters.
const Hdf5Filters& filters_for(const Hdf5WriteOptions& options, std::string_view name);

/// Writes `table` to `output` atomically (temporary name, renamed when complete). Compression runs
/// on all threads of the current TBB arena. Throws UsageError for options out of range, InvalidInput
/// naming the variable when the table cannot be stored (level labels that repeat or contain a NUL,
/// a role that does not admit the type), IoError naming `output` when the file cannot be written; a
/// failure leaves neither `output` nor a temporary file behind. Values are written as they are:
/// callers that want the data-model checks run validate_table() first.
void write_table(const Table& table, const std::filesystem::path& output, const Hdf5WriteOptions& options);

/// The variables a write of `table` with `options` stores, in file order: the table's, with the
/// unchanged variables it does not hold (UnchangedVariables::not_held) at their places.
std::vector<VariableInfo> written_variables(const Table& table, const Hdf5WriteOptions& options);

/// For writers that produce one file from several processes (engine/partitioned_table.cpp): makes
/// the file at `path` (an existing file is truncated, keeping its mode; usually an AtomicOutput's
/// temporary file) with the attributes and full-length datasets of a table of `row_count` rows, and
/// no values. Fill it with write_table_rows(), one writer at a time, then commit the AtomicOutput.
/// Throws as write_table() does; errors name `path`.
void create_table_file(const std::filesystem::path& path, const std::vector<VariableInfo>& variables,
                       std::int64_t row_count, const Hdf5WriteOptions& options);

/// The compressed chunks of a part's values, made before the part's turn to write: processes that
/// write one file in turn (write_table_rows) then compress at the same time and take turns only to
/// store. Holds every chunk of the part's variables that will be encoded (all but those declared
/// unchanged); at most the part's raw size, usually a fraction of it.
class EncodedRows {
 public:
  struct Impl;  ///< private to io/hdf5_writer.cpp
  explicit EncodedRows(std::unique_ptr<Impl> impl);
  ~EncodedRows();
  EncodedRows(EncodedRows&&) noexcept;
  EncodedRows& operator=(EncodedRows&&) noexcept;
  /// Bytes of compressed chunks held.
  std::size_t stored_bytes() const noexcept;
  const Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Encodes the chunks of `part` (rows of a file of `file_rows` rows, chunk-aligned as
/// write_table_rows() requires) on all threads of the current TBB arena. No HDF5 calls. Empty when
/// the options filter nothing.
EncodedRows encode_rows(const Table& part, std::int64_t file_rows, const Hdf5WriteOptions& options);

/// Writes the values of `part` into a file made by create_table_file() with the same `options`, at
/// rows part.first_row_id() .. + part.row_count(). The range must cover whole chunks (start on a
/// chunk boundary, end on one or at the end of the file), so that no two writers share a chunk;
/// anything else is an InternalError. Chunks found in `encoded` (made by encode_rows() from this part
/// and options) are stored as they are. IoError naming `path` when the file cannot be written.
void write_table_rows(const std::filesystem::path& path, const Table& part, const Hdf5WriteOptions& options,
                      const EncodedRows* encoded = nullptr);

/// Everything in a file but the values.
struct FileSummary {
  std::filesystem::path path;
  int format_version = 0;
  std::int64_t row_count = 0;
  Provenance provenance;
  Hdf5Filters filters;                  ///< of the first variable
  std::int64_t chunk_rows = 0;          ///< of the first variable; 0 when it is not chunked or there is none
  std::vector<VariableInfo> variables;  ///< in file order
  FileStamp stamp;                      ///< of the file when it was opened
};

/// Reads and checks the metadata (format version, row count, each variable's attributes, dtype and
/// length, and the data-model rules on metadata: roles admit their types, geography levels are 1..L,
/// level labels are distinct). Throws IoError when the file cannot be opened, InvalidInput naming
/// the file and variable when it is not an sdc-engine HDF5 file or violates the format.
FileSummary read_summary(const std::filesystem::path& path);

struct Hdf5ReadOptions {
  std::vector<std::string> variables;  ///< empty = all, in file order; otherwise in this order
  std::int64_t first_row = 0;
  std::int64_t row_count = -1;  ///< -1 = to the end
  /// Run validate_table()'s value checks on what was read (codes inside their levels, no infinite
  /// values, weights present and non-negative), one variable at a time so that a subset of the
  /// variables validates like the whole file. Metadata is always checked.
  bool validate = true;
};

/// Reads variables and a row range. The table's first_row_id() is `first_row`. Throws InvalidInput
/// naming the file and variable for a missing variable or malformed data. Only the chunks that
/// overlap the row range are read.
Table read_table(const std::filesystem::path& path, const Hdf5ReadOptions& options = {});

/// An open file for streaming reads: the metadata is read and checked once, then any number of
/// read() calls fetch variables and row ranges (e.g. one variable at a time, in blocks of
/// streaming_block_rows(), to keep memory bounded by a block). Not thread-safe: HDF5 is not.
class Hdf5TableReader {
 public:
  /// Throws as read_summary() does.
  explicit Hdf5TableReader(const std::filesystem::path& path);
  ~Hdf5TableReader();
  Hdf5TableReader(const Hdf5TableReader&) = delete;
  Hdf5TableReader& operator=(const Hdf5TableReader&) = delete;

  const FileSummary& summary() const noexcept;
  /// As read_table() on this file.
  Table read(const Hdf5ReadOptions& options = {}) const;
  /// Rows per block for streaming `variable`: whole chunks of it, about 32 MiB of values. Throws
  /// InvalidInput when the file has no such variable.
  std::int64_t streaming_block_rows(std::string_view variable) const;
  /// Whether a write with `options` stores `variable` as this file does (chunk rows, filters), so that
  /// its stored chunks can be copied as they are. Throws InvalidInput when there is no such variable.
  bool stored_as(std::string_view variable, const Hdf5WriteOptions& options) const;
  /// The content digests of `variable`'s blocks (docs/format.md, "Content digest") as the writer stored
  /// them with it ("Stored digests"), after checking that the stored bytes of the chunks that overlap
  /// rows first_row .. + row_count still hash to what was recorded: the blocks' digests without
  /// decoding a value. nullopt when the file stores none for the variable or a checked chunk changed.
  std::optional<std::vector<std::string>> stored_block_digests(std::string_view variable, std::int64_t first_row,
                                                               std::int64_t row_count) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// SHA-256 (hex) of the file's content: every variable's name, attributes, type and values in file
/// order, and every file attribute except the run-describing provenance (created_utc, command).
/// Independent of chunking, filters and HDF5 library version (serialization: docs/format.md).
/// Streams one block of one variable at a time. Throws as read_summary() does.
std::string content_digest(const std::filesystem::path& path);

}  // namespace sdc::io
