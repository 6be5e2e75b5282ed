// CSV export (docs/csv.md). Rows are formatted in fixed blocks, in parallel, and written in order;
// with gzip each block becomes one gzip member (concatenated members are one valid gzip file), so
// compression is parallel too. Block sizes are constants, so the bytes never depend on the threads.

#include <fcntl.h>
#include <tbb/parallel_for.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

#include "io/csv.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

constexpr std::size_t kBlockRows = 16384;                // rows per formatted block (and per gzip member)
constexpr std::size_t kBatchBlocks = 32;                 // blocks formatted in parallel before they are written
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

bool needs_quotes(std::string_view text, char delimiter) {
  return std::any_of(text.begin(), text.end(),
                     [&](char c) { return c == delimiter || c == '"' || c == '\r' || c == '\n'; });
}

// RFC 4180: a field holding the delimiter, a quote or a line break is quoted, its quotes doubled.
void append_field(std::string& out, std::string_view text, char delimiter) {
  if (!needs_quotes(text, delimiter)) {
    out += text;
    return;
  }
  out += '"';
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

template <typename Integer>
void append_integer(std::string& out, Integer value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

void append_double(std::string& out, double value) {
  char buffer[40];
  char* end = nullptr;
  if (value == std::trunc(value) && std::fabs(value) < kMaxExactInteger) {
    // Integral values in plain digits, as the reference files write them ("73000000", not "7.3e+07");
    // both forms read back to the same double, this one also reads as an integer.
    if (value == 0.0 && std::signbit(value)) {
      out += "-0";
      return;
    }
    end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<std::int64_t>(value)).ptr;
  } else {
    end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  }
  out.append(buffer, end);
}

class Formatter {
 public:
  Formatter(const Table& table, const CsvExportOptions& options)
      : delimiter_(options.delimiter), codes_(options.codes) {
    parse_delimiter(std::string_view(&delimiter_, 1));
    if (options.variables.empty()) {
      for (const Column& column : table.columns()) columns_.push_back(&column);
    } else {
      std::set<std::string> seen;
      for (const auto& name : options.variables) {
        if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is listed twice");
        columns_.push_back(&table.require(name));
      }
    }
    if (columns_.empty()) throw UsageError(table.source() + ": no variables to export");
    for (const Column* column : columns_) {
      Source source;
      source.type = column->type();
      switch (source.type) {
        case VariableType::kCategorical:
          source.codes = column->codes().data();
          break;
        case VariableType::kContinuous:
          source.values = column->values().data();
          break;
        case VariableType::kId:
          source.ids = column->ids().data();
          break;
      }
      sources_.push_back(source);
    }
    labels_.resize(columns_.size());
    for (std::size_t j = 0; j < columns_.size(); ++j) {
      if (columns_[j]->type() != VariableType::kCategorical || codes_) continue;
      for (const auto& label : columns_[j]->info().levels) {
        std::string field;
        append_field(field, label, delimiter_);
        labels_[j].push_back(std::move(field));
      }
    }
  }

  std::string header() const {
    std::string out;
    for (std::size_t j = 0; j < columns_.size(); ++j) {
      if (j > 0) out += delimiter_;
      append_field(out, columns_[j]->name(), delimiter_);
    }
    out += '\n';
    return out;
  }

  void rows(std::size_t first, std::size_t last, std::string& out) const {
    for (std::size_t row = first; row < last; ++row) {
      for (std::size_t j = 0; j < sources_.size(); ++j) {
        if (j > 0) out += delimiter_;
        const Source& source = sources_[j];
        switch (source.type) {
          case VariableType::kCategorical: {
            const std::int32_t code = source.codes[row];
            if (code == kMissingCode) break;
            if (codes_) {
              append_integer(out, code);
            } else {
              const auto& labels = labels_[j];
              SDC_CHECK(
                  code >= 0 && static_cast<std::size_t>(code) < labels.size(),
                  "variable '" + columns_[j]->name() + "': code outside its levels (the table was not validated)");
              out += labels[static_cast<std::size_t>(code)];
            }
            break;
          }
          case VariableType::kContinuous: {
            const double value = source.values[row];
            if (!std::isnan(value)) append_double(out, value);
            break;
          }
          case VariableType::kId:
            append_integer(out, source.ids[row]);
            break;
        }
      }
      out += '\n';
    }
  }

  std::size_t column_count() const noexcept { return columns_.size(); }

 private:
  // The values of one column as raw pointers, looked up once rather than per cell.
  struct Source {
    VariableType type = VariableType::kCategorical;
    const std::int32_t* codes = nullptr;
    const double* values = nullptr;
    const std::int64_t* ids = nullptr;
  };

  char delimiter_;
  bool codes_;
  std::vector<const Column*> columns_;
  std::vector<Source> sources_;
  std::vector<std::vector<std::string>> labels_;  // quoted where needed, by code
};

// One complete gzip member holding `text`.
std::string gzip_member(const std::string& text, const std::filesystem::path& output) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw InternalError(output.string() + ": zlib: deflateInit2 failed");
  std::string out(deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
  stream.next_in = reinterpret_cast<unsigned char*>(const_cast<char*>(text.data()));  // zlib is not const-correct
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<unsigned char*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  const auto written = static_cast<std::size_t>(stream.total_out);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) throw InternalError(output.string() + ": zlib: deflate did not finish a block");
  out.resize(written);
  return out;
}

class OutputFile {
 public:
  OutputFile(const std::filesystem::path& temp, std::filesystem::path final_path) : final_(std::move(final_path)) {
    fd_ = ::open(temp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) {
      const int error = errno;
      throw IoError(final_.string() + ": cannot write output: " + std::strerror(error));
    }
  }
  ~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        const int error = errno;
        throw IoError(final_.string() + ": cannot write output: " + std::strerror(error));
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
      written_ += static_cast<std::uint64_t>(n);
    }
  }

  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int error = errno;
      throw IoError(final_.string() + ": cannot write output: " + std::strerror(error));
    }
  }

  std::uint64_t written() const noexcept { return written_; }

 private:
  std::filesystem::path final_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
};

}  // namespace

std::string format_csv_double(double value) {
  std::string out;
  append_double(out, value);
  return out;
}

std::string format_csv(const Table& table, const CsvExportOptions& options) {
  const Formatter formatter(table, options);
  std::string out = formatter.header();
  formatter.rows(0, static_cast<std::size_t>(table.row_count()), out);
  return out;
}

CsvExportResult export_csv(const Table& table, const std::filesystem::path& output, const CsvExportOptions& options) {
  const Formatter formatter(table, options);
  CsvExportResult result;
  result.rows = table.row_count();
  result.variables = formatter.column_count();
  result.gzip = options.gzip || output.extension() == ".gz";

  AtomicOutput atomic(output, options.permissions);
  OutputFile file(atomic.temp_path(), output);
  const auto rows = static_cast<std::size_t>(table.row_count());
  const std::size_t blocks = std::max<std::size_t>(1, (rows + kBlockRows - 1) / kBlockRows);
  std::vector<std::string> batch;
  for (std::size_t first_block = 0; first_block < blocks; first_block += kBatchBlocks) {
    const std::size_t count = std::min(kBatchBlocks, blocks - first_block);
    batch.assign(count, std::string());
    tbb::parallel_for(std::size_t{0}, count, [&](std::size_t b) {
      const std::size_t block = first_block + b;
      std::string text = block == 0 ? formatter.header() : std::string();
      const std::size_t first = block * kBlockRows;
      formatter.rows(first, std::min(rows, first + kBlockRows), text);
      batch[b] = std::move(text);
    });
    for (auto& text : batch) result.text_bytes += text.size();
    if (result.gzip) {
      tbb::parallel_for(std::size_t{0}, count, [&](std::size_t b) { batch[b] = gzip_member(batch[b], output); });
    }
    for (const auto& bytes : batch) file.write(bytes);
  }
  file.close();
  result.file_bytes = file.written();
  atomic.commit();
  return result;
}

}  // namespace sdc::io
