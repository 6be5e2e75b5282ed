#include "io/matrix_market.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

/// The entry lines of a chunk are parsed in slices of about this size, cut at line ends: the size
/// alone fixes the slices, so what is parsed where never depends on the thread count.
constexpr std::size_t kSliceBytes = std::size_t{1} << 20;
/// Rows of the per-row pass (column order and repeats) handled by one task.
constexpr std::size_t kRowGrain = 4096;
/// Without a file size to bound the entries a size line announces, reserve no more than this at first.
constexpr std::int64_t kStreamReserveEntries = std::int64_t{1} << 20;

/// Products of sizes, which may pass 64 bits (GCC and Clang).
__extension__ using Wide = unsigned __int128;

constexpr const char* kBannerForm = "%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>";

enum class ValueType : std::uint8_t { kReal, kInteger, kPattern };

/// The banner and the size line.
struct Header {
  ValueType type = ValueType::kReal;
  bool symmetric = false;
  std::int64_t rows = 0;
  std::int64_t columns = 0;
  std::int64_t entries = 0;
};

/// Reads up to `size` bytes into `buffer`; returns 0 at the end of the input only.
using ReadBytes = std::function<std::size_t(char* buffer, std::size_t size)>;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// The next blank-separated field of [at, end), advancing `at` past it; empty when there is none.
std::string_view next_field(const char*& at, const char* end) {
  while (at < end && is_blank(*at)) ++at;
  const char* start = at;
  while (at < end && !is_blank(*at)) ++at;
  return {start, static_cast<std::size_t>(at - start)};
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x >= 'A' && x <= 'Z' ? static_cast<char>(x - 'A' + 'a') : x) ==
                  (y >= 'A' && y <= 'Z' ? static_cast<char>(y - 'A' + 'a') : y);
         });
}

/// from_chars takes no leading '+'; the format allows one.
const char* skip_plus(std::string_view field) {
  return field.size() > 1 && field[0] == '+' && field[1] != '-' && field[1] != '+' ? field.data() + 1 : field.data();
}

enum class WholeNumber : std::uint8_t { kOk, kNotWhole, kTooLarge };

WholeNumber parse_whole(std::string_view field, std::int64_t& value) {
  const char* end = field.data() + field.size();
  const auto [stop, error] = std::from_chars(skip_plus(field), end, value);
  if (error == std::errc::result_out_of_range && stop == end) return WholeNumber::kTooLarge;
  return error == std::errc{} && stop == end ? WholeNumber::kOk : WholeNumber::kNotWhole;
}

/// What is wrong with an entry line; the text (entry_problem_text) is made only when it is reported.
enum class EntryProblem : std::uint8_t {
  kNone,
  kTooFewFields,
  kTooManyFields,
  kRowNotWhole,
  kColumnNotWhole,
  kRowOutside,
  kColumnOutside,
  kValueNotNumber,
  kValueOutOfRange,
  kValueNotFinite,
  kValueNotWhole,
};

std::string entry_fields_text(const Header& header) {
  return header.type == ValueType::kPattern ? "2 (row, column) in a pattern file"
                                            : "3 (row, column, value) in a real or integer file";
}

std::string entry_problem_text(EntryProblem problem, const Header& header) {
  switch (problem) {
    case EntryProblem::kTooFewFields:
      return "the entry has fewer fields than the " + entry_fields_text(header);
    case EntryProblem::kTooManyFields:
      return "the entry has more fields than the " + entry_fields_text(header);
    case EntryProblem::kRowNotWhole:
      return "the row index (field 1) is not a whole number";
    case EntryProblem::kColumnNotWhole:
      return "the column index (field 2) is not a whole number";
    case EntryProblem::kRowOutside:
      return "the row index (field 1) is outside 1 .. " + std::to_string(header.rows) + ", the matrix's rows";
    case EntryProblem::kColumnOutside:
      return "the column index (field 2) is outside 1 .. " + std::to_string(header.columns) + ", the matrix's columns";
    case EntryProblem::kValueNotNumber:
      return "the value (field 3) is not a number";
    case EntryProblem::kValueOutOfRange:
      return "the value (field 3) is outside the range of a double";
    case EntryProblem::kValueNotFinite:
      return "the value (field 3) is not finite";
    case EntryProblem::kValueNotWhole:
      return "the value (field 3) is not a whole number (an integer file)";
    case EntryProblem::kNone:
      break;
  }
  return "no problem";
}

/// A run of blank or comment lines among the entries: the entries before it and its lines.
struct SkippedRun {
  std::int64_t entries_before = 0;
  std::int64_t lines = 0;
};

void add_skipped(std::vector<SkippedRun>& runs, std::int64_t entries_before, std::int64_t lines) {
  if (!runs.empty() && runs.back().entries_before == entries_before)
    runs.back().lines += lines;
  else
    runs.push_back({entries_before, lines});
}

/// The line of entry `ordinal`, counted from the first line after the size line (0-based).
std::int64_t entry_line_offset(const std::vector<SkippedRun>& runs, std::int64_t ordinal) {
  std::int64_t line = ordinal;
  for (const SkippedRun& run : runs) {
    if (run.entries_before > ordinal) break;
    line += run.lines;
  }
  return line;
}

/// The entries of one slice of entry lines, 0-based, in file order (a symmetric file's with row >=
/// column), up to its first malformed line.
struct Slice {
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> columns;
  std::vector<double> values;
  std::int64_t lines = 0;  ///< lines parsed, the malformed one excluded
  std::vector<SkippedRun> skipped;
  EntryProblem problem = EntryProblem::kNone;  ///< of the line after the `lines` parsed
};

EntryProblem parse_index(std::string_view field, std::int64_t size, bool row, std::int64_t& index) {
  const WholeNumber parsed = parse_whole(field, index);
  if (parsed == WholeNumber::kNotWhole) return row ? EntryProblem::kRowNotWhole : EntryProblem::kColumnNotWhole;
  // A number too large for 64 bits is outside the matrix too.
  if (parsed == WholeNumber::kTooLarge || index < 1 || index > size)
    return row ? EntryProblem::kRowOutside : EntryProblem::kColumnOutside;
  --index;
  return EntryProblem::kNone;
}

EntryProblem parse_value(std::string_view field, ValueType type, double& value) {
  const char* end = field.data() + field.size();
  if (type == ValueType::kInteger) {
    std::int64_t whole = 0;
    if (parse_whole(field, whole) != WholeNumber::kOk) return EntryProblem::kValueNotWhole;
    value = static_cast<double>(whole);
    return EntryProblem::kNone;
  }
  const auto [stop, error] = std::from_chars(skip_plus(field), end, value);
  if (stop != end || (error != std::errc{} && error != std::errc::result_out_of_range))
    return EntryProblem::kValueNotNumber;
  if (error == std::errc::result_out_of_range) return EntryProblem::kValueOutOfRange;
  if (!std::isfinite(value)) return EntryProblem::kValueNotFinite;
  return EntryProblem::kNone;
}

/// The common entry line, parsed without classifying what may be wrong with it: blanks, a row and a
/// column of at most 18 digits inside the matrix, then a plain number (or nothing, in a pattern file),
/// then blanks. False for anything else, which parse_slice then parses field by field.
bool parse_plain_entry(const char* at, const char* end, const Header& header, std::int64_t& row, std::int64_t& column,
                       double& value) {
  const auto skip_blanks = [&] {
    while (at < end && is_blank(*at)) ++at;
  };
  const auto index = [&](std::int64_t size, std::int64_t& result) {
    const char* start = at;
    std::int64_t number = 0;
    while (at < end && static_cast<unsigned char>(*at - '0') < 10 && at - start < 18)
      number = number * 10 + (*at++ - '0');
    result = number - 1;
    return at > start && number >= 1 && number <= size && (at == end || is_blank(*at));
  };
  skip_blanks();
  if (!index(header.rows, row)) return false;
  skip_blanks();
  if (!index(header.columns, column)) return false;
  skip_blanks();
  if (header.type == ValueType::kPattern) {
    value = 1.0;
    return at == end;
  }
  const char* start = at;
  while (at < end && !is_blank(*at)) ++at;
  const char* stop = at;
  skip_blanks();
  if (at != end || start == stop) return false;
  // Whole numbers of up to 15 digits are exact in a double: the value from_chars would give.
  const char* digits = *start == '-' ? start + 1 : start;
  if (stop > digits && stop - digits <= 15) {
    std::int64_t whole = 0;
    const char* d = digits;
    while (d < stop && static_cast<unsigned char>(*d - '0') < 10) whole = whole * 10 + (*d++ - '0');
    if (d == stop) {
      value = *start == '-' ? -static_cast<double>(whole) : static_cast<double>(whole);  // "-0" is -0.0
      return true;
    }
  }
  if (header.type == ValueType::kInteger) return false;
  const auto [parsed, error] = std::from_chars(start, stop, value);
  return parsed == stop && error == std::errc{} && std::isfinite(value);
}

/// Parses the complete lines [begin, end) (the last ends with '\n') into `slice`.
void parse_slice(const char* begin, const char* end, const Header& header, Slice& slice) {
  slice.rows.clear();
  slice.columns.clear();
  slice.values.clear();
  slice.skipped.clear();
  slice.lines = 0;
  slice.problem = EntryProblem::kNone;
  const auto expected = static_cast<std::size_t>(end - begin) / 12 + 1;
  slice.rows.reserve(expected);
  slice.columns.reserve(expected);
  slice.values.reserve(expected);
  const bool pattern = header.type == ValueType::kPattern;
  for (const char* line = begin; line < end; ++slice.lines) {
    const auto* line_end = static_cast<const char*>(std::memchr(line, '\n', static_cast<std::size_t>(end - line)));
    const char* at = line;
    line = line_end + 1;
    std::int64_t row = 0;
    std::int64_t column = 0;
    double value = 1.0;
    if (!parse_plain_entry(at, line_end, header, row, column, value)) {
      // Field by field, to tell a blank or comment line from an entry and what is wrong with one.
      const std::string_view row_field = next_field(at, line_end);
      if (row_field.empty() || row_field.front() == '%') {
        add_skipped(slice.skipped, static_cast<std::int64_t>(slice.rows.size()), 1);
        continue;
      }
      const std::string_view column_field = next_field(at, line_end);
      const std::string_view value_field = pattern ? std::string_view{} : next_field(at, line_end);
      if (column_field.empty() || (!pattern && value_field.empty())) {
        slice.problem = EntryProblem::kTooFewFields;
        return;
      }
      if (!next_field(at, line_end).empty()) {
        slice.problem = EntryProblem::kTooManyFields;
        return;
      }
      slice.problem = parse_index(row_field, header.rows, true, row);
      if (slice.problem == EntryProblem::kNone)
        slice.problem = parse_index(column_field, header.columns, false, column);
      if (slice.problem == EntryProblem::kNone && !pattern)
        slice.problem = parse_value(value_field, header.type, value);
      if (slice.problem != EntryProblem::kNone) return;
    }
    // A symmetric file's entries are kept in the lower triangle until the mirrors are added, so an
    // entry given in both triangles shows as a repeat.
    if (header.symmetric && column > row) std::swap(row, column);
    slice.rows.push_back(row);
    slice.columns.push_back(column);
    slice.values.push_back(value);
  }
}

/// A repeated entry found by the per-row pass: the ordinals (file order) of the first entry at its
/// place and of the first that repeats it.
struct Repeat {
  std::int64_t first = 0;
  std::int64_t second = 0;
};

/// American flag sort: moves each entry (key, column, value) of the buckets' ranges [next[b], end[b])
/// into the range of its bucket, bucket_of(key), in place. Every entry is moved once, along chains
/// that write at the buckets' cursors only: few cache lines are live, unlike a permutation's chains.
template <typename BucketOf>
void flag_sort(std::span<std::int64_t> keys, std::span<std::int64_t> columns, std::span<double> values,
               std::vector<std::int64_t>& next, const std::vector<std::int64_t>& end, const BucketOf& bucket_of) {
  for (std::size_t b = 0; b < next.size(); ++b) {
    while (next[b] < end[b]) {
      const auto at = static_cast<std::size_t>(next[b]);
      std::int64_t key = keys[at];
      std::size_t target = bucket_of(key);
      if (target != b) {
        std::int64_t column = columns[at];
        double value = values[at];
        while (target != b) {
          const auto to = static_cast<std::size_t>(next[target]++);
          std::swap(key, keys[to]);
          std::swap(column, columns[to]);
          std::swap(value, values[to]);
          target = bucket_of(key);
        }
        keys[at] = key;
        columns[at] = column;
        values[at] = value;
      }
      ++next[b];
    }
  }
}

class MatrixMarketReader {
 public:
  MatrixMarketReader(std::string name, ReadBytes read, std::optional<std::size_t> input_bytes)
      : name_(std::move(name)), read_(std::move(read)), input_bytes_(input_bytes) {}

  CsrMatrix read(std::size_t capacity) {
    SDC_CHECK(capacity >= 1, "Matrix Market reader: the chunk size must be at least 1 byte");
    // One byte more than a chunk, for the line end a file without a final one is given.
    const std::unique_ptr<char[]> buffer(new char[capacity + 1]);
    std::size_t filled = 0;
    bool at_end = false;
    while (true) {
      while (!at_end && filled < capacity) {
        const std::size_t count = read_(buffer.get() + filled, capacity - filled);
        if (count == 0) at_end = true;
        filled += count;
      }
      if (at_end && filled > 0 && buffer[filled - 1] != '\n') buffer[filled++] = '\n';
      const std::size_t last_line_end = std::string_view(buffer.get(), filled).rfind('\n');
      if (last_line_end == std::string_view::npos) {
        if (at_end) break;
        fail(lines_ + 1, "the line is longer than " + std::to_string(capacity) + " bytes");
      }
      const std::size_t complete = last_line_end + 1;
      lines(buffer.get(), buffer.get() + complete);
      std::memmove(buffer.get(), buffer.get() + complete, filled - complete);
      filled -= complete;
      if (at_end && filled == 0) break;
    }
    finish_input();
    return header_.symmetric ? with_mirrors(lower_triangle()) : lower_triangle();
  }

 private:
  enum class Phase : std::uint8_t { kBanner, kSize, kEntries };

  [[noreturn]] void fail(std::int64_t line, const std::string& what) const {
    throw InvalidInput(name_ + ": line " + std::to_string(line) + ": " + what);
  }

  /// The complete lines [begin, end): the header ones one by one, the entry lines in parallel slices.
  void lines(const char* begin, const char* end) {
    while (phase_ != Phase::kEntries && begin < end) {
      const auto* line_end = static_cast<const char*>(std::memchr(begin, '\n', static_cast<std::size_t>(end - begin)));
      header_line(begin, line_end);
      ++lines_;
      begin = line_end + 1;
    }
    if (begin < end) entry_lines(begin, end);
  }

  void header_line(const char* at, const char* end) {
    if (phase_ == Phase::kBanner) {
      banner(at, end);
      phase_ = Phase::kSize;
      return;
    }
    const char* probe = at;
    const std::string_view first = next_field(probe, end);
    if (first.empty() || first.front() == '%') return;  // a blank or comment line
    size_line(at, end);
    phase_ = Phase::kEntries;
  }

  void banner(const char* at, const char* end) {
    const std::string_view start = next_field(at, end);
    if (!equals_ignoring_case(start, "%%MatrixMarket"))
      fail(1, std::string("no Matrix Market banner: the file must begin with '") + kBannerForm + "'");
    const std::string_view object = next_field(at, end);
    const std::string_view format = next_field(at, end);
    const std::string_view type = next_field(at, end);
    const std::string_view symmetry = next_field(at, end);
    const auto incomplete = [&] {
      fail(1, std::string("the banner is incomplete: it must read '") + kBannerForm + "'");
    };
    if (object.empty()) incomplete();
    if (!equals_ignoring_case(object, "matrix")) fail(1, "the banner's field 2 (the object) is not 'matrix'");
    if (format.empty()) incomplete();
    if (equals_ignoring_case(format, "array")) fail(1, "not sparse coordinate: dense array format is not read");
    if (!equals_ignoring_case(format, "coordinate")) fail(1, "the banner's field 3 (the format) is not 'coordinate'");
    if (type.empty()) incomplete();
    if (equals_ignoring_case(type, "real"))
      header_.type = ValueType::kReal;
    else if (equals_ignoring_case(type, "integer"))
      header_.type = ValueType::kInteger;
    else if (equals_ignoring_case(type, "pattern"))
      header_.type = ValueType::kPattern;
    else if (equals_ignoring_case(type, "complex"))
      fail(1, "complex matrices are not read (the banner's field 4); give real, integer or pattern values");
    else
      fail(1, "the banner's field 4 (the value type) is not real, integer or pattern");
    if (symmetry.empty()) incomplete();
    if (equals_ignoring_case(symmetry, "general"))
      header_.symmetric = false;
    else if (equals_ignoring_case(symmetry, "symmetric"))
      header_.symmetric = true;
    else if (equals_ignoring_case(symmetry, "hermitian"))
      fail(1, "hermitian matrices are not read (the banner's field 5); give a general or symmetric matrix");
    else if (equals_ignoring_case(symmetry, "skew-symmetric"))
      fail(1, "skew-symmetric matrices are not read (the banner's field 5); give a general or symmetric matrix");
    else
      fail(1, "the banner's field 5 (the symmetry) is not general or symmetric");
    if (!next_field(at, end).empty()) fail(1, "the banner has more than 5 fields");
  }

  void size_line(const char* at, const char* end) {
    const std::int64_t line = lines_ + 1;
    size_line_ = line;
    const char* const names[] = {"rows", "columns", "entries"};
    std::int64_t sizes[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
      const std::string_view field = next_field(at, end);
      if (field.empty())
        fail(line, "the size line has " + std::to_string(i) + " fields; it needs 3 (rows, columns, entries)");
      const std::string where = "field " + std::to_string(i + 1) + " of the size line (" + names[i] + ")";
      switch (parse_whole(field, sizes[i])) {
        case WholeNumber::kNotWhole:
          fail(line, where + " is not a whole number");
        case WholeNumber::kTooLarge:
          fail(line, where + " does not fit in 64 bits");
        case WholeNumber::kOk:
          break;
      }
      if (sizes[i] < 0) fail(line, where + " is negative");
    }
    if (!next_field(at, end).empty()) fail(line, "the size line has more than 3 fields (rows, columns, entries)");
    header_.rows = sizes[0];
    header_.columns = sizes[1];
    header_.entries = sizes[2];
    if (header_.symmetric && header_.rows != header_.columns)
      fail(line, "a symmetric matrix must be square; the size line gives different numbers of rows and columns");
    // Places of the matrix (the lower triangle of a symmetric one), in 128 bits: no overflow.
    const auto rows = static_cast<Wide>(header_.rows);
    const Wide places = header_.symmetric ? rows * (rows + 1) / 2 : rows * static_cast<Wide>(header_.columns);
    if (static_cast<Wide>(header_.entries) > places)
      fail(line, std::string("the size line gives more entries than the matrix has places (") +
                     (header_.symmetric ? "the lower triangle of rows x rows" : "rows x columns") + ")");
    try {
      offsets_.assign(static_cast<std::size_t>(header_.rows) + 1, 0);
    } catch (const std::bad_alloc&) {
      fail(line, "field 1 of the size line (rows) is too large: its row offsets do not fit in memory");
    } catch (const std::length_error&) {
      fail(line, "field 1 of the size line (rows) is too large: its row offsets do not fit in memory");
    }
    // Reserve what the size line gives, but no more than the rest of the input can hold (a pattern
    // entry takes at least 4 bytes, "1 1\n"; others 6), so that a false size line fails on its lines.
    std::int64_t reserve = header_.entries;
    if (input_bytes_)
      reserve = std::min<std::int64_t>(
          reserve, static_cast<std::int64_t>(*input_bytes_ / (header_.type == ValueType::kPattern ? 4 : 6)) + 1);
    else
      reserve = std::min(reserve, kStreamReserveEntries);
    rows_.reserve(static_cast<std::size_t>(reserve));
    columns_.reserve(static_cast<std::size_t>(reserve));
    values_.reserve(static_cast<std::size_t>(reserve));
  }

  void entry_lines(const char* begin, const char* end) {
    std::vector<std::pair<const char*, const char*>> bounds;
    for (const char* start = begin; start < end;) {
      const char* stop = end;
      if (static_cast<std::size_t>(end - start) > kSliceBytes) {
        const char* cut = start + kSliceBytes;
        stop = static_cast<const char*>(std::memchr(cut, '\n', static_cast<std::size_t>(end - cut))) + 1;
      }
      bounds.emplace_back(start, stop);
      start = stop;
    }
    if (slices_.size() < bounds.size()) slices_.resize(bounds.size());
    tbb::parallel_for(std::size_t{0}, bounds.size(),
                      [&](std::size_t s) { parse_slice(bounds[s].first, bounds[s].second, header_, slices_[s]); });
    // Taken in file order: the first problem in the file is the one reported.
    for (std::size_t s = 0; s < bounds.size(); ++s) take(slices_[s]);
  }

  void take(const Slice& slice) {
    const auto have = static_cast<std::int64_t>(rows_.size());
    const auto count = static_cast<std::int64_t>(slice.rows.size());
    if (count > header_.entries - have)
      fail(lines_ + 1 + entry_line_offset(slice.skipped, header_.entries - have),
           "more entry lines than the " + std::to_string(header_.entries) + " the size line (line " +
               std::to_string(size_line_) + ") gives");
    rows_.insert(rows_.end(), slice.rows.begin(), slice.rows.end());
    columns_.insert(columns_.end(), slice.columns.begin(), slice.columns.end());
    values_.insert(values_.end(), slice.values.begin(), slice.values.end());
    for (const SkippedRun& run : slice.skipped) add_skipped(skipped_, have + run.entries_before, run.lines);
    if (slice.problem != EntryProblem::kNone)
      fail(lines_ + 1 + slice.lines, entry_problem_text(slice.problem, header_));
    lines_ += slice.lines;
  }

  void finish_input() const {
    if (phase_ == Phase::kBanner)
      fail(1, std::string("no Matrix Market banner: the file is empty; it must begin with '") + kBannerForm + "'");
    if (phase_ == Phase::kSize) fail(lines_ + 1, "the file ends before the size line (rows, columns, entries)");
    const auto have = static_cast<std::int64_t>(rows_.size());
    if (have < header_.entries)
      fail(lines_ + 1, "the file ends after " + std::to_string(have) + " entry lines; the size line (line " +
                           std::to_string(size_line_) + ") gives " + std::to_string(header_.entries));
  }

  std::int64_t line_of_entry(std::int64_t ordinal) const {
    return size_line_ + 1 + entry_line_offset(skipped_, ordinal);
  }

  /// The entries as given (in the lower triangle for a symmetric file) in CSR form: sorted by row in
  /// place, then each row's columns sorted, refusing a repeated entry.
  CsrMatrix lower_triangle() {
    for (const std::int64_t row : rows_) ++offsets_[static_cast<std::size_t>(row) + 1];
    for (std::size_t r = 0; r < static_cast<std::size_t>(header_.rows); ++r) offsets_[r + 1] += offsets_[r];
    // Each entry's key holds its row above its ordinal, so that the ordinal (the line) survives the
    // sort, which need not be stable.
    const auto ordinal_bits = static_cast<int>(std::bit_width(rows_.size()));
    if (static_cast<int>(std::bit_width(static_cast<std::uint64_t>(header_.rows))) + ordinal_bits > 63)
      fail(size_line_, "the matrix is too large to sort: its rows and entries need more than 63 bits together");
    for (std::size_t i = 0; i < rows_.size(); ++i) rows_[i] = (rows_[i] << ordinal_bits) | static_cast<std::int64_t>(i);
    sort_by_row(ordinal_bits);

    std::mutex repeats_mutex;
    std::vector<Repeat> repeats;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, static_cast<std::size_t>(header_.rows), kRowGrain),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        std::vector<Repeat> found;
                        sort_rows(range.begin(), range.end(), ordinal_bits, found);
                        if (found.empty()) return;
                        const std::lock_guard lock(repeats_mutex);
                        repeats.insert(repeats.end(), found.begin(), found.end());
                      });
    if (!repeats.empty()) {
      // The repeat whose repeating line comes first in the file, whichever task found it.
      const Repeat first = *std::min_element(repeats.begin(), repeats.end(),
                                             [](const Repeat& a, const Repeat& b) { return a.second < b.second; });
      fail(line_of_entry(first.second),
           "the entry repeats the row and column of line " + std::to_string(line_of_entry(first.first)) +
               (header_.symmetric ? " (a symmetric file gives each entry once, in one triangle)" : ""));
    }
    std::vector<std::int64_t>().swap(rows_);
    return {header_.rows, header_.columns, std::move(offsets_), std::move(columns_), std::move(values_)};
  }

  /// Moves the entries to their rows' ranges (offsets_) in two flag-sort passes: by the row's top bits
  /// into at most 2^kTopBucketBits ranges, then each range by the row itself, in parallel (the
  /// ranges are disjoint and each is sorted alone, so the result does not depend on the threads).
  void sort_by_row(int ordinal_bits) {
    constexpr int kTopBucketBits = 9;
    const std::int64_t rows = header_.rows;
    if (rows <= 1) return;
    const std::span<std::int64_t> keys(rows_);
    const std::span<std::int64_t> columns(columns_);
    const std::span<double> values(values_);
    const int shift =
        std::max(0, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(rows - 1))) - kTopBucketBits);
    const auto buckets = static_cast<std::size_t>(((rows - 1) >> shift) + 1);
    const auto row_start = [&](std::int64_t row) { return offsets_[static_cast<std::size_t>(std::min(row, rows))]; };
    std::vector<std::int64_t> next(buckets);
    std::vector<std::int64_t> end(buckets);
    for (std::size_t b = 0; b < buckets; ++b) {
      next[b] = row_start(static_cast<std::int64_t>(b) << shift);
      end[b] = row_start((static_cast<std::int64_t>(b) + 1) << shift);
    }
    flag_sort(keys, columns, values, next, end,
              [&](std::int64_t key) { return static_cast<std::size_t>((key >> ordinal_bits) >> shift); });
    if (shift == 0) return;
    tbb::parallel_for(std::size_t{0}, buckets, [&](std::size_t b) {
      const auto first_row = static_cast<std::int64_t>(b) << shift;
      const std::int64_t last_row = std::min(rows, (static_cast<std::int64_t>(b) + 1) << shift);
      std::vector<std::int64_t> row_next(offsets_.begin() + first_row, offsets_.begin() + last_row);
      const std::vector<std::int64_t> row_end(offsets_.begin() + first_row + 1, offsets_.begin() + last_row + 1);
      flag_sort(keys, columns, values, row_next, row_end,
                [&](std::int64_t key) { return static_cast<std::size_t>((key >> ordinal_bits) - first_row); });
    });
  }

  /// Sorts the columns of rows [first, last) that are out of order; records in `found` each row's
  /// earliest repeat by file order (the ordinals are the keys' low `ordinal_bits`).
  void sort_rows(std::size_t first, std::size_t last, int ordinal_bits, std::vector<Repeat>& found) {
    const std::int64_t ordinal_mask = (std::int64_t{1} << ordinal_bits) - 1;
    const auto ordinal_at = [&](std::size_t position) { return rows_[position] & ordinal_mask; };
    std::vector<std::pair<std::int64_t, std::size_t>> order;  // (column, position)
    std::vector<double> values;
    for (std::size_t r = first; r < last; ++r) {
      const auto begin = static_cast<std::size_t>(offsets_[r]);
      const auto end = static_cast<std::size_t>(offsets_[r + 1]);
      bool increasing = true;
      for (std::size_t e = begin + 1; e < end && increasing; ++e) increasing = columns_[e - 1] < columns_[e];
      if (increasing) continue;
      order.clear();
      for (std::size_t e = begin; e < end; ++e) order.emplace_back(columns_[e], e);
      std::sort(order.begin(), order.end());
      // A place given more than once: its first two lines in file order are the repeat to report.
      std::optional<Repeat> earliest;
      for (std::size_t k = 0; k < order.size();) {
        std::size_t group_end = k + 1;
        while (group_end < order.size() && order[group_end].first == order[k].first) ++group_end;
        if (group_end - k > 1) {
          std::vector<std::int64_t> ordinals;
          for (std::size_t g = k; g < group_end; ++g) ordinals.push_back(ordinal_at(order[g].second));
          std::partial_sort(ordinals.begin(), ordinals.begin() + 2, ordinals.end());
          if (!earliest || ordinals[1] < earliest->second) earliest = Repeat{ordinals[0], ordinals[1]};
        }
        k = group_end;
      }
      if (earliest) {
        found.push_back(*earliest);
        continue;  // the matrix is refused: no need to sort the row
      }
      values.assign(values_.begin() + static_cast<std::ptrdiff_t>(begin),
                    values_.begin() + static_cast<std::ptrdiff_t>(end));
      for (std::size_t k = 0; k < order.size(); ++k) {
        columns_[begin + k] = order[k].first;
        values_[begin + k] = values[order[k].second - begin];
      }
    }
  }

  /// The symmetric matrix from its lower triangle: row r is the triangle's row r (columns <= r), then
  /// the triangle's column r below the diagonal (columns > r), both already in column order.
  CsrMatrix with_mirrors(const CsrMatrix& lower) const {
    const CsrView triangle = lower.view();
    const auto rows = static_cast<std::size_t>(triangle.rows);
    std::vector<std::int64_t> offsets(rows + 1, 0);
    for (std::size_t r = 0; r < rows; ++r) {
      offsets[r + 1] += triangle.row_offsets[r + 1] - triangle.row_offsets[r];
      for (const std::int64_t column : triangle.row_columns(static_cast<std::int64_t>(r)))
        if (column != static_cast<std::int64_t>(r)) ++offsets[static_cast<std::size_t>(column) + 1];
    }
    for (std::size_t r = 0; r < rows; ++r) offsets[r + 1] += offsets[r];
    std::vector<std::int64_t> columns(static_cast<std::size_t>(offsets[rows]));
    std::vector<double> values(columns.size());
    std::vector<std::int64_t> mirror_cursor(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const auto given = triangle.row_columns(static_cast<std::int64_t>(r));
      const auto given_values = triangle.row_values(static_cast<std::int64_t>(r));
      const auto at = static_cast<std::size_t>(offsets[r]);
      std::copy(given.begin(), given.end(), columns.begin() + static_cast<std::ptrdiff_t>(at));
      std::copy(given_values.begin(), given_values.end(), values.begin() + static_cast<std::ptrdiff_t>(at));
      mirror_cursor[r] = offsets[r] + static_cast<std::int64_t>(given.size());
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const auto given = triangle.row_columns(static_cast<std::int64_t>(r));
      const auto given_values = triangle.row_values(static_cast<std::int64_t>(r));
      for (std::size_t e = 0; e < given.size(); ++e) {
        if (given[e] == static_cast<std::int64_t>(r)) continue;
        const auto at = static_cast<std::size_t>(mirror_cursor[static_cast<std::size_t>(given[e])]++);
        columns[at] = static_cast<std::int64_t>(r);
        values[at] = given_values[e];
      }
    }
    return {triangle.rows, triangle.columns, std::move(offsets), std::move(columns), std::move(values)};
  }

  std::string name_;
  ReadBytes read_;
  std::optional<std::size_t> input_bytes_;
  Phase phase_ = Phase::kBanner;
  Header header_;
  std::int64_t lines_ = 0;  ///< lines taken so far
  std::int64_t size_line_ = 0;
  std::vector<std::int64_t> offsets_;
  std::vector<std::int64_t> rows_;  ///< per entry in file order: its row, then its sort key
  std::vector<std::int64_t> columns_;
  std::vector<double> values_;
  std::vector<SkippedRun> skipped_;
  std::vector<Slice> slices_;
};

}  // namespace

CsrMatrix read_matrix_market(const std::filesystem::path& path, std::size_t chunk_bytes) {
  InputFile file(path, "matrix");
  const std::string name = path.string();
  const ReadBytes read = [&](char* buffer, std::size_t size) -> std::size_t {
    while (true) {
      const ssize_t count = ::read(file.descriptor(), buffer, size);
      if (count >= 0) return static_cast<std::size_t>(count);
      if (errno == EINTR) continue;
      const int error = errno;
      throw IoError(name + ": cannot read matrix: " + std::strerror(error));
    }
  };
  return MatrixMarketReader(name, read, file.size()).read(chunk_bytes);
}

CsrMatrix read_matrix_market(std::istream& in, const std::string& name, std::size_t chunk_bytes) {
  const ReadBytes read = [&](char* buffer, std::size_t size) -> std::size_t {
    in.read(buffer, static_cast<std::streamsize>(size));
    if (in.bad()) throw IoError(name + ": cannot read matrix");
    return static_cast<std::size_t>(in.gcount());
  };
  return MatrixMarketReader(name, read, std::nullopt).read(chunk_bytes);
}

}  // namespace sdc::io
