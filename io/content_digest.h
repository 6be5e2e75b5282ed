#pragma once
// The content digest of a table file (docs/format.md, "Content digest"): a SHA-256 over the file's
// metadata and, per variable, the SHA-256 of every block of kDigestBlockRows rows. Blocks make the
// digest computable in parallel — over threads, and over ranks from the rows they already hold — with
// the same value as a sequential pass over the file.

#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5_table.h"
#include "kernels/core/table.h"

namespace sdc::io {

inline constexpr std::int64_t kDigestBlockRows = std::int64_t{1} << 16;

/// Canonical little-endian bytes of rows [begin, begin + count) of a column: int32 codes, int64
/// ids, float64 values with every NaN as 0x7ff8000000000000.
std::string canonical_bytes(const Column& column, std::size_t begin, std::size_t count);

/// SHA-256 (32 raw bytes) of one block's canonical bytes.
std::string block_digest(std::string_view canonical);

/// Raw digests of the blocks that cover the global rows [begin_row, end_row) of `table`, for each
/// variable, computed in parallel: result[v][i] is the digest of block begin_row / kDigestBlockRows + i.
/// begin_row is a multiple of kDigestBlockRows and end_row one too, or the file's end `file_rows`.
/// With `hashed` (one flag per variable), the variables not flagged are skipped (left empty).
std::vector<std::vector<std::string>> whole_block_digests(const Table& table, std::int64_t begin_row,
                                                          std::int64_t end_row, std::int64_t file_rows,
                                                          const std::vector<bool>& hashed = {});

/// The file's digest (hex) from its metadata and `block_digests[v][b]` for every variable and block.
std::string combine_content_digest(const FileSummary& summary,
                                   const std::vector<std::vector<std::string>>& block_digests);

}  // namespace sdc::io
