#pragma once
// Reading and writing tables in the sdc-engine HDF5 format (docs/format.md, format version 1).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_output.h"
#include "kernels/core/table.h"

namespace sdc::io {

inline constexpr int kFormatVersion = 1;
inline constexpr std::int64_t kDefaultChunkRows = 1 << 17;

/// The HDF5 filter pipeline of every variable dataset. Default: shuffle + deflate level 1.
struct Hdf5Filters {
  bool shuffle = true;
  int deflate_level = 1;  ///< 0 = no deflate, 1..9 zlib levels
};

/// Parses "none", "deflate=N", "shuffle,deflate=N" or "shuffle". Throws UsageError naming the text.
Hdf5Filters parse_filters(std::string_view text);
std::string to_string(const Hdf5Filters& filters);

/// How a file was made. `created_utc` and `command` describe the run rather than the content and
/// are left out of the content digest.
struct Provenance {
  std::string tool_version;
  std::string command;
  std::string input_digest;  ///< content digest of the input the file was made from; empty for none
  std::string created_utc;   ///< ISO 8601; from SOURCE_DATE_EPOCH when that is set
};

/// Provenance of a file written now by this build of sdc-engine.
Provenance make_provenance(std::string command, std::string input_digest);

struct Hdf5WriteOptions {
  Hdf5Filters filters;
  std::int64_t chunk_rows = kDefaultChunkRows;
  Provenance provenance;
  FilePermissions permissions;
};

/// Writes `table` to `output` atomically (temporary name, renamed when complete). Compression runs
/// on all threads of the current TBB arena.
void write_table(const Table& table, const std::filesystem::path& output, const Hdf5WriteOptions& options);

/// Everything in a file but the values.
struct FileSummary {
  std::filesystem::path path;
  int format_version = 0;
  std::int64_t row_count = 0;
  Provenance provenance;
  Hdf5Filters filters;  ///< of the first variable
  std::int64_t chunk_rows = 0;
  std::vector<VariableInfo> variables;  ///< in file order
};

/// Reads and checks the metadata (format version, row count, each variable's attributes, dtype and
/// length). Throws IoError when the file cannot be opened, InvalidInput naming the file and variable
/// when it is not an sdc-engine HDF5 file or violates the format.
FileSummary read_summary(const std::filesystem::path& path);

struct Hdf5ReadOptions {
  std::vector<std::string> variables;  ///< empty = all, in file order; otherwise in this order
  std::int64_t first_row = 0;
  std::int64_t row_count = -1;  ///< -1 = to the end
  bool validate = true;         ///< run validate_table() on what was read
};

/// Reads variables and a row range. The table's first_row_id() is `first_row`. Throws InvalidInput
/// naming the file and variable for a missing variable or malformed data.
Table read_table(const std::filesystem::path& path, const Hdf5ReadOptions& options = {});

/// SHA-256 (hex) of the file's content: every variable's name, attributes, type and values in file
/// order, and every file attribute except the run-describing provenance (created_utc, command).
/// Independent of chunking, filters and HDF5 library version.
std::string content_digest(const std::filesystem::path& path);

}  // namespace sdc::io
