#pragma once
// The public reference files of ../shared/data (Tarragona, CASC Census, EIA, the MDAV timing files)
// as numeric columns for kernel tests. Absent shared data gives std::nullopt: the caller skips with
// GTEST_SKIP(), never fails.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/core/numeric_columns.h"

namespace sdc::testing {

inline std::filesystem::path shared_data_path(const std::string& name) {
  return std::filesystem::path(SDC_SHARED_DATA_DIR) / name;
}

/// Reads a plain numeric CSV (header row, comma separator, no quoting, empty field = missing) and
/// keeps the named columns (all when `keep` is empty). Gzipped files are read through `gzip -dc`.
inline std::optional<NumericData> read_reference_csv(const std::string& name,
                                                     const std::vector<std::string>& keep = {}) {
  const auto path = shared_data_path(name);
  if (!std::filesystem::exists(path)) return std::nullopt;
  std::stringstream text;
  if (path.extension() == ".gz") {
    const std::string command = "gzip -dc '" + path.string() + "'";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
    char buffer[1 << 16];
    std::size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
      text.write(buffer, static_cast<std::streamsize>(got));
    ::pclose(pipe);
  } else {
    std::ifstream file(path);
    text << file.rdbuf();
  }
  auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    std::string field;
    std::stringstream stream(line);
    while (std::getline(stream, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    return fields;
  };
  std::string line;
  std::getline(text, line);
  const auto header = split(line);
  std::vector<std::size_t> chosen;
  NumericData data;
  for (std::size_t j = 0; j < header.size(); ++j) {
    bool wanted = keep.empty();
    for (const auto& name_kept : keep) wanted = wanted || name_kept == header[j];
    if (wanted) {
      chosen.push_back(j);
      data.names.push_back(header[j]);
    }
  }
  if (!keep.empty() && chosen.size() != keep.size()) throw std::runtime_error(name + ": a requested column is absent");
  data.columns.resize(chosen.size());
  std::int64_t row = 0;
  while (std::getline(text, line)) {
    if (line.empty()) continue;
    const auto fields = split(line);
    for (std::size_t c = 0; c < chosen.size(); ++c) {
      const auto& field = fields.at(chosen[c]);
      data.columns[c].push_back(field.empty() ? std::numeric_limits<double>::quiet_NaN() : std::stod(field));
    }
    data.row_ids.push_back(row++);
  }
  return data;
}

}  // namespace sdc::testing
