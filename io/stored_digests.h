#pragma once
// Private to io/: the stored digests of a table file (docs/format.md, "Stored digests"). Beside each
// variable the writer stores, per chunk, a SHA-256 of the chunk's bytes as stored and the content
// digests (io/content_digest.h) of the blocks the chunk holds. A reader that hashes the stored bytes
// again and finds them unchanged can take the block digests as they are instead of decoding and
// hashing the values: that is how a step carries the variables it does not use from its input to its
// output without loading them.

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/hdf5_handle.h"
#include "kernels/core/table.h"

namespace sdc::io::detail {

inline constexpr const char* kStoredDigestsGroup = "stored_digests";
inline constexpr std::size_t kDigestBytes = 32;

/// Whether a variable of `rows` rows stored in chunks of `chunk_rows` has stored digests: only when
/// every chunk holds whole digest blocks, so that a chunk's digests depend on that chunk alone.
bool has_stored_digests(std::int64_t rows, std::int64_t chunk_rows);

/// Bytes of one chunk's entry: the digest of its stored bytes, then one content digest per block (all
/// zero past the file's last block).
std::size_t digest_entry_bytes(std::int64_t chunk_rows);

/// SHA-256 of a chunk as stored: its filter mask (4 bytes, little-endian), then its bytes.
std::string stored_chunk_digest(std::uint32_t filter_mask, std::span<const std::byte> stored);

/// Fills `entry` (digest_entry_bytes long) for a chunk stored as `stored` with `filter_mask` that holds
/// the rows [begin, begin + count) of `column`; `begin` is a multiple of the digest block.
void fill_digest_entry(std::span<std::byte> entry, std::uint32_t filter_mask, std::span<const std::byte> stored,
                       const Column& column, std::size_t begin, std::size_t count);

/// Makes the stored-digests group of a new file.
hdf5::Group create_stored_digests_group(hid_t file);

/// Makes the (still zero) stored digests of variable `name` in `group`; invalid when the variable gets
/// none (has_stored_digests).
hdf5::Dataset create_stored_digests(hid_t group, const std::string& name, std::int64_t rows, std::int64_t chunk_rows);

/// The stored digests of variable `name` of an open file; invalid when it has none.
hdf5::Dataset open_stored_digests(hid_t file, const std::string& name);

/// Writes the entries of chunks first_chunk, first_chunk + 1, ... (`entries` holds whole entries).
bool write_digest_entries(hid_t digests, std::int64_t first_chunk, std::span<const std::byte> entries);

/// The entries of chunks [first_chunk, first_chunk + count), or nullopt when the dataset is not
/// `chunk_count` entries of digest_entry_bytes(chunk_rows) bytes or cannot be read.
std::optional<std::vector<std::byte>> read_digest_entries(hid_t digests, std::int64_t chunk_count,
                                                          std::int64_t chunk_rows, std::int64_t first_chunk,
                                                          std::int64_t count);

}  // namespace sdc::io::detail
