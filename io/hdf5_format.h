#pragma once
// Private to io/: what the HDF5 table writer and reader share of the sdc-engine HDF5 table format,
// version 1 (docs/format.md): names, stored types, metadata checks and the batching of chunk I/O.
//
// HDF5's filter pipeline runs on the calling thread only and the Debian build is not thread-safe, so
// the compressed paths split the work: the calling thread makes every HDF5 call (H5Dwrite_chunk,
// H5Dread_chunk), TBB threads shuffle and deflate the bytes (io/chunk_codec.h). Batches of chunks are
// double-buffered so that the file I/O of one batch overlaps the compression of the next. With the
// filters off, large hyperslabs go through plain H5Dwrite/H5Dread.

#include <hdf5.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/hdf5_handle.h"
#include "io/hdf5_table.h"
#include "kernels/core/table.h"

// Chunks are handed to HDF5 as the bytes in memory; the file stores little-endian values.
static_assert(std::endian::native == std::endian::little, "the HDF5 chunk writer assumes a little-endian host");

namespace sdc::io::detail {

inline constexpr std::string_view kFormatName = "sdc-engine table";
inline constexpr const char* kVariablesGroup = "variables";
inline constexpr const char* kAttrFormat = "sdc_format";
inline constexpr const char* kAttrFormatVersion = "sdc_format_version";
inline constexpr const char* kAttrRowCount = "row_count";
inline constexpr const char* kAttrToolVersion = "provenance_tool_version";
inline constexpr const char* kAttrCommand = "provenance_command";
inline constexpr const char* kAttrInputDigest = "provenance_input_digest";
inline constexpr const char* kAttrCreatedUtc = "provenance_created_utc";
inline constexpr const char* kAttrStepFingerprint = "provenance_step_fingerprint";
inline constexpr const char* kAttrStepResults = "provenance_step_results";
inline constexpr const char* kAttrType = "type";
inline constexpr const char* kAttrRole = "role";
inline constexpr const char* kAttrLevels = "levels";
inline constexpr const char* kAttrMissingCode = "missing_code";
inline constexpr const char* kAttrGeographyLevel = "geography_level";
inline constexpr const char* kAttrLevelParents = "level_parents";
inline constexpr const char* kAttrRecoding = "recoding";
inline constexpr const char* kAttrHierarchyLevel = "hierarchy_level";

/// Uncompressed bytes per batch of chunks. Two batches are in flight (one in I/O, one in the codec),
/// so the extra memory of a read or write is about 2 x 8 MiB plus two chunks per thread.
inline constexpr std::size_t kBatchBytes = std::size_t{8} << 20;

// ---- types --------------------------------------------------------------------------------------

hid_t stored_type(VariableType type);
hid_t memory_type(VariableType type);
std::size_t element_size(VariableType type);
std::string_view stored_type_name(VariableType type);

/// Describes an HDF5 datatype for messages ("16-bit signed integers", "strings", ...).
std::string describe_dtype(hid_t type);

bool dtype_matches(hid_t type, VariableType expected);

hdf5::Datatype string_type(H5T_cset_t cset);

std::span<const std::byte> column_bytes(const Column& column);

/// Runs validate_table() on the metadata alone (a zero-row table): roles admit their types,
/// geography levels are 1..L, level labels are distinct.
void validate_metadata(const std::vector<VariableInfo>& variables, const std::string& source);

std::optional<FileStamp> stamp_of(const std::filesystem::path& path);

/// Runs `background` as a TBB task while this thread runs `foreground` (the HDF5 calls); returns when
/// both are done. A failure of either is rethrown, after the other has finished with the buffers.
template <typename Foreground, typename Background>
void run_alongside(Foreground&& foreground, Background&& background) {
  tbb::task_group group;
  group.run(std::forward<Background>(background));
  try {
    foreground();
  } catch (...) {
    group.cancel();
    try {
      group.wait();
    } catch (...) {  // the foreground's error is the one to report
    }
    throw;
  }
  group.wait();
}

inline std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

/// Rows per chunk a write with `options` gives a table of `rows` rows: a short table is one chunk,
/// since a whole default chunk would waste space in every variable.
inline std::int64_t effective_chunk_rows(const Hdf5WriteOptions& options, std::int64_t rows) {
  return rows > 0 ? std::min(options.chunk_rows, rows) : options.chunk_rows;
}

}  // namespace sdc::io::detail
