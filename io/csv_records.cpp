#include <algorithm>

#include "io/csv.h"
#include "io/csv_tokenizer.h"
#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {

std::vector<CsvRecord> read_csv_records(const std::filesystem::path& path, std::string_view what, char delimiter) {
  const std::string text = read_input_file(path, what, kMaxTextInputBytes);
  const csv::Tokenizer tokenizer(delimiter);
  std::vector<CsvRecord> records;
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  std::int64_t line = 1;
  std::string field;
  while (p < end) {
    CsvRecord record;
    record.line = line;
    const csv::RecordEnd ended = tokenizer.parse_record(p, end, [&](std::size_t, const csv::FieldView& view) {
      csv::unescape(view, field);
      record.fields.push_back(field);
    });
    if (ended.error != csv::SyntaxError::kNone)
      throw InvalidInput(path.string() + ": line " + std::to_string(line) + ", field " +
                         std::to_string(ended.error_field + 1) +
                         ": malformed CSV (a quote out of place, or an unterminated quoted field)");
    line += static_cast<std::int64_t>(std::count(p, ended.next, '\n'));
    p = ended.next;
    const bool blank = record.fields.size() == 1 && record.fields[0].find_first_not_of(" \t\r") == std::string::npos;
    if (!blank) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace sdc::io
