#include "io/chunk_codec.h"

#include <libdeflate.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <new>

#include "kernels/core/error.h"

namespace sdc::io {
namespace {

// Fixed element sizes let the compiler unroll the inner loop; the data model only has 4- and 8-byte
// values, the generic loop serves anything else HDF5 might hand us. The fixed loops start at element
// `first` so that they can finish what the vector loops leave over.
template <std::size_t kSize>
void shuffle_fixed(const std::byte* in, std::size_t n, std::size_t first, std::byte* out) {
  for (std::size_t i = first; i < n; ++i)
    for (std::size_t j = 0; j < kSize; ++j) out[j * n + i] = in[i * kSize + j];
}

template <std::size_t kSize>
void unshuffle_fixed(const std::byte* in, std::size_t n, std::size_t first, std::byte* out) {
  for (std::size_t i = first; i < n; ++i)
    for (std::size_t j = 0; j < kSize; ++j) out[i * kSize + j] = in[j * n + i];
}

#if defined(__SSE2__)

// The shuffle is a byte transpose, done 16 elements at a time in kSize registers of 16 bytes. Number
// each byte of such a block by its register (high bits) and its place in the register (low 4 bits).
// interleave_halves pairs register k with register k + kSize/2, which rotates every byte's number
// left by one bit. Byte j of element i starts at number i * kSize + j and must end at j * 16 + i:
// a rotation by 4 bits for the shuffle, by log2(kSize) bits for the unshuffle, so that many rounds.
// SSE2 cannot permute bytes within a register (pshufb is SSSE3); the unpack ladder needs no such step.
constexpr std::size_t kBlockElements = 16;

// Inlined and unrolled by force, as are the loops over a block's registers below: at -O2 GCC would
// otherwise call this and keep the registers in memory, which costs more than the transpose itself.
template <std::size_t kSize>
[[gnu::always_inline]] inline void interleave_halves(__m128i (&rows)[kSize]) {
  constexpr std::size_t kHalf = kSize / 2;
  __m128i interleaved[kSize];
#pragma GCC unroll 8
  for (std::size_t k = 0; k < kHalf; ++k) {
    interleaved[2 * k] = _mm_unpacklo_epi8(rows[k], rows[k + kHalf]);
    interleaved[2 * k + 1] = _mm_unpackhi_epi8(rows[k], rows[k + kHalf]);
  }
  std::copy(std::begin(interleaved), std::end(interleaved), rows);
}

/// Shuffles the whole blocks of 16 elements and returns how many elements that covered.
template <std::size_t kSize>
std::size_t shuffle_blocks(const std::byte* in, std::size_t n, std::byte* out) {
  constexpr int kRounds = std::countr_zero(kBlockElements);
  const std::size_t whole_blocks = n / kBlockElements;
  for (std::size_t block = 0; block < whole_blocks; ++block) {
    const std::byte* source = in + block * kBlockElements * kSize;
    __m128i rows[kSize];  // std::array<__m128i> would drop the vector type's attributes (-Wignored-attributes)
#pragma GCC unroll 8
    for (std::size_t k = 0; k < kSize; ++k)
      rows[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + k * sizeof(__m128i)));
#pragma GCC unroll 8
    for (int round = 0; round < kRounds; ++round) interleave_halves(rows);
#pragma GCC unroll 8
    for (std::size_t j = 0; j < kSize; ++j)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j * n + block * kBlockElements), rows[j]);
  }
  return whole_blocks * kBlockElements;
}

template <std::size_t kSize>
std::size_t unshuffle_blocks(const std::byte* in, std::size_t n, std::byte* out) {
  constexpr int kRounds = std::countr_zero(kSize);
  const std::size_t whole_blocks = n / kBlockElements;
  for (std::size_t block = 0; block < whole_blocks; ++block) {
    __m128i rows[kSize];
#pragma GCC unroll 8
    for (std::size_t j = 0; j < kSize; ++j)
      rows[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j * n + block * kBlockElements));
#pragma GCC unroll 8
    for (int round = 0; round < kRounds; ++round) interleave_halves(rows);
    std::byte* target = out + block * kBlockElements * kSize;
#pragma GCC unroll 8
    for (std::size_t k = 0; k < kSize; ++k)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(target + k * sizeof(__m128i)), rows[k]);
  }
  return whole_blocks * kBlockElements;
}

#endif

template <std::size_t kSize>
void shuffle_sized(const std::byte* in, std::size_t n, std::byte* out) {
  std::size_t first = 0;
#if defined(__SSE2__)
  first = shuffle_blocks<kSize>(in, n, out);
#endif
  shuffle_fixed<kSize>(in, n, first, out);
}

template <std::size_t kSize>
void unshuffle_sized(const std::byte* in, std::size_t n, std::byte* out) {
  std::size_t first = 0;
#if defined(__SSE2__)
  first = unshuffle_blocks<kSize>(in, n, out);
#endif
  unshuffle_fixed<kSize>(in, n, first, out);
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
      shuffle_sized<4>(in.data(), n, out.data());
      break;
    case 8:
      shuffle_sized<8>(in.data(), n, out.data());
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
      unshuffle_sized<4>(in.data(), n, out.data());
      break;
    case 8:
      unshuffle_sized<8>(in.data(), n, out.data());
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
