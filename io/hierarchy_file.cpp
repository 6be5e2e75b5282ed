#include "io/hierarchy_file.h"

#include <string>
#include <utility>
#include <vector>

#include "io/csv.h"
#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

constexpr std::string_view kWhat = "hierarchy file";

std::string at_line(const std::filesystem::path& path, std::int64_t line) {
  return path.string() + ", line " + std::to_string(line);
}

}  // namespace

recoding::HierarchyRows read_hierarchy_file(const std::filesystem::path& path) {
  // The header dialect starts with the field level_0; anything else is ARX's. The file is small: reading
  // it twice is cheaper than a second tokenizer.
  const std::string start = read_input_file(path, kWhat, kMaxTextInputBytes).substr(0, 8);
  const bool header = start == "level_0," || start.starts_with("level_0\n") || start.starts_with("level_0\r");
  std::vector<CsvRecord> records = read_csv_records(path, kWhat, header ? ',' : ';');
  recoding::HierarchyRows rows;
  rows.source = path.string();
  std::size_t first = 0;
  if (header) {
    const CsvRecord& names = records.front();
    for (std::size_t l = 0; l < names.fields.size(); ++l)
      if (names.fields[l] != "level_" + std::to_string(l))
        throw InvalidInput(at_line(path, names.line) + ": header field " + std::to_string(l + 1) + " is '" +
                           names.fields[l] + "', expected 'level_" + std::to_string(l) + "'");
    first = 1;
  }
  if (records.size() == first) throw InvalidInput(path.string() + ": the hierarchy has no rows");
  const std::size_t levels = records[first].fields.size();
  if (header && levels != records.front().fields.size())
    throw InvalidInput(at_line(path, records[first].line) + ": " + std::to_string(levels) +
                       " values where the header names " + std::to_string(records.front().fields.size()) + " levels");
  rows.rows.reserve(records.size() - first);
  rows.lines.reserve(records.size() - first);
  for (std::size_t r = first; r < records.size(); ++r) {
    CsvRecord& record = records[r];
    if (record.fields.size() != levels)
      throw InvalidInput(at_line(path, record.line) + ": " + std::to_string(record.fields.size()) + " values where " +
                         (header ? "the header names " : "the first row has ") + std::to_string(levels) +
                         " (a hierarchy needs one value per level in every row)");
    for (std::size_t l = 0; l < levels; ++l)
      if (record.fields[l].empty())
        throw InvalidInput(at_line(path, record.line) + ": the value at level " + std::to_string(l) + " is empty");
    rows.rows.push_back(std::move(record.fields));
    rows.lines.push_back(record.line);
  }
  return rows;
}

recoding::GeneralizationHierarchy load_hierarchy(const std::filesystem::path& path) {
  return recoding::GeneralizationHierarchy::build(read_hierarchy_file(path));
}

}  // namespace sdc::io
