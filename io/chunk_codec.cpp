#include "io/chunk_codec.h"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

// Fixed element sizes let the compiler unroll the inner loop; the data model only has 4- and 8-byte
// values, the generic loop serves anything else HDF5 might hand us.
template <std::size_t kSize>
void shuffle_fixed(const std::byte* in, std::size_t n, std::byte* out) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < kSize; ++j) out[j * n + i] = in[i * kSize + j];
}

template <std::size_t kSize>
void unshuffle_fixed(const std::byte* in, std::size_t n, std::byte* out) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < kSize; ++j) out[i * kSize + j] = in[j * n + i];
}

void shuffle_generic(const std::byte* in, std::size_t n, std::size_t size, std::byte* out) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < size; ++j) out[j * n + i] = in[i * size + j];
}

void unshuffle_generic(const std::byte* in, std::size_t n, std::size_t size, std::byte* out) {
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < size; ++j) out[i * size + j] = in[j * n + i];
}

void check_format(const ChunkFormat& format) {
  SDC_CHECK(format.element_size > 0 && format.chunk_bytes % format.element_size == 0,
            "chunk size is not a whole number of elements");
  SDC_CHECK(format.deflate_level >= 0 && format.deflate_level <= 9, "deflate level outside 0..9");
}

}  // namespace

void shuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out) {
  SDC_CHECK(in.size() == out.size() && element_size > 0, "shuffle_bytes: buffer sizes differ");
  const std::size_t n = in.size() / element_size;
  switch (element_size) {
    case 4:
      shuffle_fixed<4>(in.data(), n, out.data());
      break;
    case 8:
      shuffle_fixed<8>(in.data(), n, out.data());
      break;
    default:
      shuffle_generic(in.data(), n, element_size, out.data());
      break;
  }
  // Like HDF5's filter, bytes past the last whole element stay where they are.
  const std::size_t tail = n * element_size;
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(tail), in.end(), out.begin() + static_cast<std::ptrdiff_t>(tail));
}

void unshuffle_bytes(std::span<const std::byte> in, std::size_t element_size, std::span<std::byte> out) {
  SDC_CHECK(in.size() == out.size() && element_size > 0, "unshuffle_bytes: buffer sizes differ");
  const std::size_t n = in.size() / element_size;
  switch (element_size) {
    case 4:
      unshuffle_fixed<4>(in.data(), n, out.data());
      break;
    case 8:
      unshuffle_fixed<8>(in.data(), n, out.data());
      break;
    default:
      unshuffle_generic(in.data(), n, element_size, out.data());
      break;
  }
  const std::size_t tail = n * element_size;
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(tail), in.end(), out.begin() + static_cast<std::ptrdiff_t>(tail));
}

// ---- encoder ------------------------------------------------------------------------------------

ChunkEncoder::ChunkEncoder(const ChunkFormat& format) : format_(format) {
  check_format(format_);
  if (format_.deflate_level > 0) {
    compressor_ = libdeflate_alloc_compressor(format_.deflate_level);
    if (compressor_ == nullptr) throw std::bad_alloc();
  }
}

ChunkEncoder::~ChunkEncoder() { libdeflate_free_compressor(compressor_); }

void ChunkEncoder::encode(std::span<const std::byte> values, std::vector<std::byte>& stored) {
  SDC_CHECK(values.size() <= format_.chunk_bytes, "chunk holds more values than the chunk size");
  std::span<const std::byte> chunk = values;
  if (values.size() < format_.chunk_bytes) {
    padded_.assign(format_.chunk_bytes, std::byte{0});
    std::copy(values.begin(), values.end(), padded_.begin());
    chunk = padded_;
  }
  if (format_.shuffle) {
    shuffled_.resize(format_.chunk_bytes);
    shuffle_bytes(chunk, format_.element_size, shuffled_);
    chunk = shuffled_;
  }
  if (compressor_ == nullptr) {
    stored.assign(chunk.begin(), chunk.end());
    return;
  }
  stored.resize(libdeflate_zlib_compress_bound(compressor_, chunk.size()));
  const std::size_t size =
      libdeflate_zlib_compress(compressor_, chunk.data(), chunk.size(), stored.data(), stored.size());
  SDC_CHECK(size > 0, "libdeflate could not compress a chunk into its own bound");
  stored.resize(size);
}

// ---- decoder ------------------------------------------------------------------------------------

ChunkDecoder::ChunkDecoder(const ChunkFormat& format) : format_(format) {
  check_format(format_);
  decompressor_ = libdeflate_alloc_decompressor();
  if (decompressor_ == nullptr) throw std::bad_alloc();
}

ChunkDecoder::~ChunkDecoder() { libdeflate_free_decompressor(decompressor_); }

bool ChunkDecoder::decode(std::span<const std::byte> stored, bool deflated, bool shuffled, std::span<std::byte> out) {
  SDC_CHECK(out.size() == format_.chunk_bytes, "decode target is not one chunk");
  std::span<const std::byte> plain = stored;
  if (deflated) {
    // Without a shuffle the inflated bytes are the values: inflate straight into the target.
    std::span<std::byte> target = out;
    if (shuffled) {
      inflated_.resize(format_.chunk_bytes);
      target = inflated_;
    }
    std::size_t produced = 0;
    const auto result = libdeflate_zlib_decompress(decompressor_, stored.data(), stored.size(), target.data(),
                                                   target.size(), &produced);
    if (result != LIBDEFLATE_SUCCESS || produced != target.size()) return false;
    if (!shuffled) return true;
    plain = target;
  }
  if (plain.size() != out.size()) return false;
  if (shuffled) {
    unshuffle_bytes(plain, format_.element_size, out);
  } else if (plain.data() != out.data()) {
    std::memcpy(out.data(), plain.data(), plain.size());
  }
  return true;
}

}  // namespace sdc::io
