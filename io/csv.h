#pragma once
// CSV import into the data model and export from it (docs/csv.md).
// Import accepts plain or gzip-compressed files (by content, not by name); fields may be quoted
// with '"' (RFC 4180); an empty field is a missing value.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/atomic_output.h"
#include "io/schema.h"
#include "kernels/core/table.h"

namespace sdc::io {

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
};

struct CsvImportResult {
  Table table;
  Schema schema;  ///< the schema applied (inferred where no schema was given)
};

/// Throws InvalidInput naming the file, line and column for ragged rows, bad numbers, unknown
/// variables in options, levels not in the schema; IoError when the file cannot be read.
CsvImportResult import_csv(const std::filesystem::path& path, const CsvImportOptions& options);

struct CsvExportOptions {
  std::vector<std::string> variables;  ///< empty = all
  bool codes = false;                  ///< write categorical codes instead of level labels
  bool gzip = false;                   ///< compress (also chosen by a .gz output name)
  char delimiter = ',';
  FilePermissions permissions;
};

/// Writes the table atomically. Doubles use the shortest form that reads back identically.
void export_csv(const Table& table, const std::filesystem::path& output, const CsvExportOptions& options);

}  // namespace sdc::io
