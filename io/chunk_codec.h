#pragma once
// The byte-level codec of one HDF5 chunk: HDF5's shuffle filter followed by its deflate filter (zlib
// format), done with libdeflate outside HDF5. HDF5 runs its filter pipeline on the calling thread
// only; encoding and decoding chunks here lets the table writer and reader spread the work over TBB
// threads and hand finished chunks to H5Dwrite_chunk / take raw ones from H5Dread_chunk. The output
// is exactly what HDF5's own filters produce and accept, so h5py and h5dump read the files normally.
// No HDF5 calls: these classes may be used on any thread (one object per thread).

#include <cstddef>
#include <span>
#include <vector>

struct libdeflate_compressor;
struct libdeflate_decompressor;

namespace sdc::io {

/// HDF5's shuffle (H5Z_FILTER_SHUFFLE): byte j of element i moves to out[j * n + i], where n is the
/// number of elements. Grouping the bytes of equal significance is what makes numbers compressible.
void shuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out);
/// The inverse of shuffle_bytes.
void unshuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out);

struct ChunkFormat {
  std::size_t element_size = 0;  ///< bytes per value: 4 or 8
  std::size_t chunk_bytes = 0;   ///< element_size * rows per chunk; every stored chunk decodes to this size
  bool shuffle = false;
  int deflate_level = 0;  ///< 0 = no deflate, 1..9
};

class ChunkEncoder {
 public:
  explicit ChunkEncoder(const ChunkFormat& format);
  ~ChunkEncoder();
  ChunkEncoder(const ChunkEncoder&) = delete;
  ChunkEncoder& operator=(const ChunkEncoder&) = delete;

  /// Encodes one chunk into `stored` (resized; its capacity is reused between calls). `values` may be
  /// shorter than a chunk at the end of a dataset: HDF5 stores whole chunks, so the rest is zero, which
  /// keeps equal content byte-identical.
  void encode(std::span<const std::byte> values, std::vector<std::byte>& stored);

 private:
  ChunkFormat format_;
  libdeflate_compressor* compressor_ = nullptr;
  std::vector<std::byte> padded_;  ///< a short edge chunk, zero-filled to a whole chunk
  std::vector<std::byte> shuffled_;
};

class ChunkDecoder {
 public:
  explicit ChunkDecoder(const ChunkFormat& format);
  ~ChunkDecoder();
  ChunkDecoder(const ChunkDecoder&) = delete;
  ChunkDecoder& operator=(const ChunkDecoder&) = delete;

  /// Decodes one stored chunk into `out` (exactly chunk_bytes). `deflated` and `shuffled` say which of
  /// the format's filters were applied to this chunk (HDF5 may skip an optional filter per chunk and
  /// records that in the chunk's filter mask). Returns false when the bytes are not a valid chunk.
  [[nodiscard]] bool decode(std::span<const std::byte> stored, bool deflated, bool shuffled, std::span<std::byte> out);

 private:
  ChunkFormat format_;
  libdeflate_decompressor* decompressor_ = nullptr;
  std::vector<std::byte> inflated_;
};

}  // namespace sdc::io
