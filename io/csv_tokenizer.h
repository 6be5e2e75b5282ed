#pragma once
// Private to io/: the CSV input bytes (a read-only mapping or a decompressed buffer), the record
// tokenizer and the search for record boundaries that lets chunks be parsed in parallel.
// The grammar is RFC 4180 with a configurable delimiter (docs/csv.md).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace sdc::io::csv {

/// The bytes of a CSV input, owned: a private read-only mapping of a plain file, or the
/// decompressed content of a gzip file. The input file itself is never written.
class InputBytes {
 public:
  /// Reads `path`; gzip is detected by its magic bytes. With `digest`, the SHA-256 of the file as
  /// stored is wanted: for gzip it is computed here, on a second thread while the data inflate; for
  /// a plain file it is left to compute_digest(), so that the caller can overlap it with parsing.
  /// Throws IoError (cannot open or read) or InvalidInput (corrupt gzip data).
  static InputBytes read_file(const std::filesystem::path& path, bool digest);
  /// Borrows `text` (which must outlive the object).
  static InputBytes borrow(std::string_view text);

  InputBytes(InputBytes&& other) noexcept;
  InputBytes& operator=(InputBytes&& other) noexcept;
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;
  ~InputBytes();

  std::string_view text() const noexcept { return {data_, size_}; }
  bool gzip() const noexcept { return gzip_; }
  std::uint64_t file_bytes() const noexcept { return file_bytes_; }
  const std::string& digest() const noexcept { return digest_; }
  /// Whether a wanted digest is still to be computed by compute_digest().
  bool digest_pending() const noexcept { return digest_pending_; }
  /// SHA-256 of the mapped file, streamed; touches nothing but the digest, so it may run beside
  /// readers of text().
  void compute_digest();

 private:
  InputBytes() = default;
  void release() noexcept;

  const char* data_ = nullptr;
  std::size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap on release
  std::size_t mapping_size_ = 0;
  char* heap_ = nullptr;  // free on release
  bool gzip_ = false;
  std::uint64_t file_bytes_ = 0;
  std::string digest_;
  bool digest_pending_ = false;
};

enum class SyntaxError : std::uint8_t {
  kNone,
  kStrayQuote,          ///< '"' inside an unquoted field
  kUnterminatedQuote,   ///< a quoted field runs to the end of the input
  kAfterClosingQuote,   ///< a closing quote followed by something other than a delimiter or line end
  kLoneCarriageReturn,  ///< CR not followed by LF outside quotes
};

/// One field. `begin..end` is the content without enclosing quotes; when `escaped`, it still holds
/// doubled quotes and must go through unescape().
struct FieldView {
  const char* begin;
  const char* end;
  bool escaped;
  std::size_t size() const noexcept { return static_cast<std::size_t>(end - begin); }
  bool empty() const noexcept { return begin == end; }
  std::string_view view() const noexcept { return {begin, size()}; }
};

/// Replaces each doubled quote by one.
void unescape(const FieldView& field, std::string& out);

struct RecordEnd {
  const char* next = nullptr;  ///< first byte of the next record
  std::size_t fields = 0;
  SyntaxError error = SyntaxError::kNone;
  const char* error_at = nullptr;  ///< first byte of the field at fault
  std::size_t error_field = 0;     ///< 0-based index of that field
};

class Tokenizer {
 public:
  explicit Tokenizer(char delimiter);
  char delimiter() const noexcept { return delimiter_; }

  /// Parses the record starting at `p` (< `end`), calling `on_field(index, FieldView)` for each of
  /// its fields in order. A record ends at LF, CRLF or `end`.
  template <typename OnField>
  RecordEnd parse_record(const char* p, const char* end, OnField&& on_field) const;

 private:
  char delimiter_;
  std::array<bool, 256> stops_{};  // delimiter, '"', CR, LF: where an unquoted field may end
};

/// Splits `[begin, end)` into `chunk_count` consecutive ranges that start at record boundaries, for
/// an input that starts at a record boundary. Boundaries respect quotes: the quote state at each
/// nominal cut comes from the parity of the quotes before it, so a line break inside a quoted field
/// is never taken for a record end (for input with syntax errors, the ranges up to the first error
/// are still exact). Returns chunk_count + 1 pointers, non-decreasing, first `begin`, last `end`.
std::vector<const char*> split_at_records(const char* begin, const char* end, std::size_t chunk_bytes);

/// Number of bytes equal to `byte` in `[begin, end)`.
std::size_t count_byte(const char* begin, const char* end, char byte) noexcept;

// ---- implementation ---------------------------------------------------------------------------

template <typename OnField>
RecordEnd Tokenizer::parse_record(const char* p, const char* end, OnField&& on_field) const {
  RecordEnd result;
  std::size_t index = 0;
  for (;;) {
    const char* const field_start = p;
    if (p < end && *p == '"') {
      const char* q = p + 1;
      bool escaped = false;
      const char* close = nullptr;
      for (;;) {
        close = static_cast<const char*>(std::memchr(q, '"', static_cast<std::size_t>(end - q)));
        if (close == nullptr) {
          result.error = SyntaxError::kUnterminatedQuote;
          result.error_at = field_start;
          result.error_field = index;
          result.fields = index;
          return result;
        }
        if (close + 1 < end && close[1] == '"') {
          escaped = true;
          q = close + 2;
          continue;
        }
        break;
      }
      on_field(index++, FieldView{p + 1, close, escaped});
      p = close + 1;
      if (p == end) break;
      const char c = *p;
      if (c == delimiter_) {
        ++p;
        continue;
      }
      if (c == '\n') {
        ++p;
        break;
      }
      if (c == '\r' && (p + 1 == end || p[1] == '\n')) {
        p += (p + 1 == end) ? 1 : 2;
        break;
      }
      result.error = SyntaxError::kAfterClosingQuote;
      result.error_at = field_start;
      result.error_field = index - 1;
      result.fields = index;
      return result;
    }

    const char* q = p;
    while (q < end && !stops_[static_cast<unsigned char>(*q)]) ++q;
    if (q < end && *q == '"') {
      result.error = SyntaxError::kStrayQuote;
      result.error_at = field_start;
      result.error_field = index;
      result.fields = index;
      return result;
    }
    on_field(index++, FieldView{p, q, false});
    if (q == end) {
      p = q;
      break;
    }
    const char c = *q;
    if (c == delimiter_) {
      p = q + 1;
      continue;
    }
    if (c == '\n') {
      p = q + 1;
      break;
    }
    // c == '\r'
    if (q + 1 == end || q[1] == '\n') {
      p = q + ((q + 1 == end) ? 1 : 2);
      break;
    }
    result.error = SyntaxError::kLoneCarriageReturn;
    result.error_at = field_start;
    result.error_field = index - 1;
    result.fields = index;
    return result;
  }
  result.next = p;
  result.fields = index;
  return result;
}

}  // namespace sdc::io::csv
