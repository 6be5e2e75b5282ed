#pragma once
// CSV import into the data model and export from it (docs/csv.md).
// Import accepts plain or gzip-compressed files (by content, not by name); fields may be quoted
// with '"' (RFC 4180, quoted line breaks included); an empty field is a missing value.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_output.h"
#include "io/schema.h"
#include "kernels/core/table.h"

namespace sdc::io {

/// One record of a small CSV file, with the 1-based line it starts on.
struct CsvRecord {
  std::int64_t line = 0;
  std::vector<std::string> fields;  ///< unescaped, as written (no blanks trimmed)
};

/// Reads a small CSV file whole (a matrix, a list of labels), with the tokenizer of imports (RFC 4180
/// quoting): every record but blank lines. Throws IoError as io/input_file.h does, and InvalidInput
/// naming the file and line for malformed CSV.
std::vector<CsvRecord> read_csv_records(const std::filesystem::path& path, std::string_view what, char delimiter = ',');

/// The unit of parallel work in an import. Chunks are cut by data size alone, so results never
/// depend on the number of threads (nor on this size: tests import with tiny chunks).
inline constexpr std::size_t kDefaultCsvChunkBytes = std::size_t{1} << 20;

struct CsvImportOptions {
  std::optional<Schema> schema;  ///< when absent, types are inferred
  /// --role ROLE=VAR[,VAR...]: geography variables are listed coarsest first and get levels 1..L.
  std::map<std::string, VariableRole> roles;
  std::map<std::string, int> geography_levels;
  /// --type VAR=TYPE overrides, applied on top of the schema or the inference.
  std::map<std::string, VariableType> types;
  /// Inference: an integer column with at most this many distinct values is categorical.
  std::int64_t max_categorical_levels = 1000;
  char delimiter = ',';
  /// SHA-256 of the file's bytes (as stored: compressed for a .gz) into CsvImportResult::file_digest.
  bool compute_digest = true;
  std::size_t chunk_bytes = kDefaultCsvChunkBytes;
};

/// Adds one `--role ROLE=VAR[,VAR...]` value to `options`. Throws UsageError for an unknown role, a
/// variable given two roles, or geography given twice (the hierarchy is listed once, coarsest first).
void add_role_assignment(CsvImportOptions& options, std::string_view text);
/// Adds one `--type VAR=TYPE` value. Throws UsageError for an unknown type or a variable typed twice.
void add_type_assignment(CsvImportOptions& options, std::string_view text);
/// `--delimiter`: one character, or `tab` / `\t`. Throws UsageError for characters that cannot
/// separate fields (the quote, line breaks, and characters that occur in numbers or names).
char parse_delimiter(std::string_view text);

struct CsvImportResult {
  Table table;
  Schema schema;                      ///< the schema applied (inferred where no schema was given), levels included
  std::vector<std::string> warnings;  ///< name variables and counts, never values
  std::string file_digest;            ///< SHA-256 (hex) of the file's bytes; empty unless computed
  std::uint64_t file_bytes = 0;       ///< bytes of the file as stored
  std::uint64_t data_bytes = 0;       ///< bytes of CSV text (after decompression)
  bool gzip = false;
};

/// Throws InvalidInput naming the file, line and column (never the value) for malformed CSV, bad
/// numbers, missing ids or weights and values not among a schema's levels; UsageError for options
/// that name no column or contradict each other; IoError when the file cannot be read.
CsvImportResult import_csv(const std::filesystem::path& path, const CsvImportOptions& options);
/// The same for CSV text already in memory; `source` names it in messages.
CsvImportResult import_csv_text(std::string_view text, const std::string& source, const CsvImportOptions& options);

struct CsvExportOptions {
  std::vector<std::string> variables;  ///< empty = all
  bool codes = false;                  ///< write categorical codes instead of level labels
  bool gzip = false;                   ///< compress (also chosen by a .gz output name)
  char delimiter = ',';
  FilePermissions permissions;
};

struct CsvExportResult {
  std::int64_t rows = 0;
  std::size_t variables = 0;
  std::uint64_t text_bytes = 0;  ///< CSV bytes before compression
  std::uint64_t file_bytes = 0;  ///< bytes written to the file
  bool gzip = false;
};

/// Writes the table atomically. Doubles use the shortest form that reads back identically.
CsvExportResult export_csv(const Table& table, const std::filesystem::path& output, const CsvExportOptions& options);
/// The CSV text of a table (no compression), as export_csv writes it.
std::string format_csv(const Table& table, const CsvExportOptions& options);

/// A double as export writes it: integral values below 2^53 in plain digits ("73000000"), all
/// others in the shortest form that reads back to the identical double (std::to_chars).
std::string format_csv_double(double value);

}  // namespace sdc::io
