#include "io/csv_tokenizer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_group.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <span>
#include <utility>

#include "io/input_file.h"
#include "io/sha256.h"
#include "kernels/core/error.h"

namespace sdc::io::csv {
namespace {

constexpr std::size_t kDigestPiece = std::size_t{4} << 20;
// zlib counts in 32-bit unsigned ints; feed and drain it in pieces well below that.
constexpr std::size_t kZlibPiece = std::size_t{1} << 30;

std::string errno_text(int error) { return std::strerror(error); }

std::string hash_bytes(const char* data, std::size_t size) {
  Sha256 sha;
  for (std::size_t offset = 0; offset < size; offset += kDigestPiece) {
    const std::size_t piece = std::min(kDigestPiece, size - offset);
    sha.update(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data + offset), piece));
  }
  return sha.hex_digest();
}

struct Inflated {
  char* data = nullptr;
  std::size_t size = 0;
};

// Decompresses a whole gzip file, members one after another (concatenated members are valid gzip,
// and `sdc export` writes them). The output buffer starts at the size the trailer announces.
Inflated inflate_gzip(const std::filesystem::path& path, const unsigned char* in, std::size_t in_size) {
  const auto corrupt = [&](const std::string& what) {
    return InvalidInput(path.string() + ": not a valid gzip file: " + what);
  };
  std::size_t capacity = std::size_t{64} << 10;
  if (in_size >= 4) {
    const std::size_t announced = std::size_t{in[in_size - 4]} | (std::size_t{in[in_size - 3]} << 8) |
                                  (std::size_t{in[in_size - 2]} << 16) | (std::size_t{in[in_size - 1]} << 24);
    capacity = std::max({capacity, announced + 1, in_size * 2});
  }
  Inflated out;
  out.data = static_cast<char*>(std::malloc(capacity));
  if (out.data == nullptr) throw std::bad_alloc();
  const auto grow = [&]() {
    const std::size_t wanted = capacity + capacity / 2;
    auto* bigger = static_cast<char*>(std::realloc(out.data, wanted));
    if (bigger == nullptr) {
      std::free(out.data);
      throw std::bad_alloc();
    }
    out.data = bigger;
    capacity = wanted;
  };

  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    std::free(out.data);
    throw InternalError("zlib: inflateInit2 failed");
  }
  std::size_t consumed = 0;  // input handed to zlib so far
  try {
    for (;;) {
      if (stream.avail_in == 0 && consumed < in_size) {
        const std::size_t piece = std::min(kZlibPiece, in_size - consumed);
        stream.next_in = const_cast<unsigned char*>(in + consumed);  // zlib's API is not const-correct
        stream.avail_in = static_cast<uInt>(piece);
        consumed += piece;
      }
      if (out.size == capacity) grow();
      const std::size_t room = std::min(kZlibPiece, capacity - out.size);
      stream.next_out = reinterpret_cast<unsigned char*>(out.data + out.size);
      stream.avail_out = static_cast<uInt>(room);
      const int rc = inflate(&stream, Z_NO_FLUSH);
      out.size += room - stream.avail_out;
      if (rc == Z_STREAM_END) {
        if (stream.avail_in == 0 && consumed < in_size) {
          const std::size_t piece = std::min(kZlibPiece, in_size - consumed);
          stream.next_in = const_cast<unsigned char*>(in + consumed);
          stream.avail_in = static_cast<uInt>(piece);
          consumed += piece;
        }
        if (stream.avail_in == 0) break;
        if (stream.avail_in < 2 || stream.next_in[0] != 0x1f || stream.next_in[1] != 0x8b)
          throw corrupt("unexpected bytes after the end of the compressed data");
        inflateReset(&stream);
        continue;
      }
      if (rc == Z_BUF_ERROR) {
        if (stream.avail_in == 0 && consumed == in_size) throw corrupt("the file is truncated");
        continue;
      }
      if (rc != Z_OK) throw corrupt(stream.msg != nullptr ? stream.msg : "zlib error " + std::to_string(rc));
    }
  } catch (...) {
    inflateEnd(&stream);
    std::free(out.data);
    throw;
  }
  inflateEnd(&stream);
  return out;
}

// The state right after a nominal cut is known; the first line feed outside quotes ends the record
// that straddles the cut.
const char* first_record_start(const char* p, const char* end, bool in_quotes) {
  for (; p < end; ++p) {
    const char c = *p;
    if (c == '"') {
      in_quotes = !in_quotes;
    } else if (c == '\n' && !in_quotes) {
      return p + 1;
    }
  }
  return end;
}

}  // namespace

// ---- InputBytes ---------------------------------------------------------------------------------

InputBytes InputBytes::read_file(const std::filesystem::path& path, bool digest) {
  InputFile file(path, "input");
  const struct stat& info = file.status();

  InputBytes input;
  input.file_bytes_ = static_cast<std::uint64_t>(info.st_size);
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) {
    if (digest) input.digest_ = hash_bytes(nullptr, 0);
    return input;
  }
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.descriptor(), 0);
  if (mapping == MAP_FAILED) {
    const int error = errno;
    throw IoError(path.string() + ": cannot map input into memory: " + errno_text(error));
  }
  input.mapping_ = mapping;
  input.mapping_size_ = size;
  // Read-ahead for the whole file: the parallel passes touch it out of order.
  ::madvise(mapping, size, MADV_WILLNEED);
  const auto* bytes = static_cast<const unsigned char*>(mapping);

  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    // zlib is sequential; the digest of the compressed bytes runs beside it.
    tbb::task_group hashing;
    if (digest) hashing.run([&] { input.digest_ = hash_bytes(static_cast<const char*>(mapping), size); });
    Inflated inflated;
    try {
      inflated = inflate_gzip(path, bytes, size);
    } catch (...) {
      hashing.wait();
      throw;
    }
    hashing.wait();
    input.heap_ = inflated.data;
    input.data_ = inflated.data;
    input.size_ = inflated.size;
    input.gzip_ = true;
    ::munmap(input.mapping_, input.mapping_size_);
    input.mapping_ = nullptr;
    input.mapping_size_ = 0;
  } else {
    input.data_ = static_cast<const char*>(mapping);
    input.size_ = size;
    input.digest_pending_ = digest;
  }
  return input;
}

void InputBytes::compute_digest() {
  digest_ = hash_bytes(data_, size_);
  digest_pending_ = false;
}

InputBytes InputBytes::borrow(std::string_view text) {
  InputBytes input;
  input.data_ = text.data();
  input.size_ = text.size();
  input.file_bytes_ = text.size();
  return input;
}

InputBytes::InputBytes(InputBytes&& other) noexcept { *this = std::move(other); }

InputBytes& InputBytes::operator=(InputBytes&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_size_ = std::exchange(other.mapping_size_, 0);
    heap_ = std::exchange(other.heap_, nullptr);
    gzip_ = other.gzip_;
    file_bytes_ = other.file_bytes_;
    digest_ = std::move(other.digest_);
    digest_pending_ = std::exchange(other.digest_pending_, false);
  }
  return *this;
}

InputBytes::~InputBytes() { release(); }

void InputBytes::release() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_size_);
  std::free(heap_);
  mapping_ = nullptr;
  heap_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

// ---- tokenizer ----------------------------------------------------------------------------------

Tokenizer::Tokenizer(char delimiter) : delimiter_(delimiter) {
  for (const char c : {delimiter, '"', '\r', '\n'}) stops_[static_cast<unsigned char>(c)] = true;
}

void unescape(const FieldView& field, std::string& out) {
  out.clear();
  for (const char* p = field.begin; p < field.end; ++p) {
    out += *p;
    if (*p == '"') ++p;  // the second quote of a doubled pair
  }
}

std::size_t count_byte(const char* begin, const char* end, char byte) noexcept {
  constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  const std::uint64_t pattern = kOnes * static_cast<unsigned char>(byte);
  std::size_t count = 0;
  const char* p = begin;
  while (end - p >= 8) {
    // Up to 255 words add their per-byte 0/1 flags in byte lanes before the lanes are summed.
    std::uint64_t lanes = 0;
    for (int words = 0; words < 255 && end - p >= 8; ++words, p += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, p, sizeof word);
      word ^= pattern;  // bytes equal to `byte` are now zero
      // High bit of each byte set exactly when that byte is zero.
      const std::uint64_t zero = ~(((word & kLow7) + kLow7) | word | kLow7);
      lanes += zero >> 7;
    }
    // Pairs of byte lanes into 16-bit lanes (each at most 510), then their sum (at most 2040).
    const std::uint64_t pairs = (lanes & 0x00FF00FF00FF00FFULL) + ((lanes >> 8) & 0x00FF00FF00FF00FFULL);
    count += static_cast<std::size_t>((pairs * 0x0001000100010001ULL) >> 48);
  }
  for (; p < end; ++p) count += (*p == byte) ? 1 : 0;
  return count;
}

std::vector<const char*> split_at_records(const char* begin, const char* end, std::size_t chunk_bytes) {
  const auto size = static_cast<std::size_t>(end - begin);
  chunk_bytes = std::max<std::size_t>(chunk_bytes, 1);
  const std::size_t chunks = std::max<std::size_t>(1, (size + chunk_bytes - 1) / chunk_bytes);
  std::vector<const char*> nominal(chunks + 1);
  for (std::size_t i = 0; i < chunks; ++i) nominal[i] = begin + i * chunk_bytes;
  nominal[chunks] = end;

  // Quote parity of each chunk, then the quote state at each cut.
  std::vector<unsigned char> odd(chunks);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, chunks), [&](const tbb::blocked_range<std::size_t>& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i)
      odd[i] = static_cast<unsigned char>(count_byte(nominal[i], nominal[i + 1], '"') & 1U);
  });
  std::vector<unsigned char> in_quotes(chunks, 0);
  for (std::size_t i = 1; i < chunks; ++i) in_quotes[i] = static_cast<unsigned char>(in_quotes[i - 1] ^ odd[i - 1]);

  std::vector<const char*> starts(chunks + 1);
  starts[0] = begin;
  starts[chunks] = end;
  tbb::parallel_for(tbb::blocked_range<std::size_t>(1, std::max<std::size_t>(chunks, 1)),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      for (std::size_t i = range.begin(); i != range.end(); ++i)
                        starts[i] = first_record_start(nominal[i], end, in_quotes[i] != 0);
                    });
  for (std::size_t i = 1; i <= chunks; ++i) starts[i] = std::max(starts[i], starts[i - 1]);
  return starts;
}

}  // namespace sdc::io::csv
