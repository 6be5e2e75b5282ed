// CSV import (docs/csv.md). The input is cut into chunks at record boundaries (by size alone, never
// by thread count) and parsed twice in parallel:
//   pass 1  tokenizes, checks the field count of every record, counts each chunk's rows and, for
//           columns whose type is not given, gathers what inference needs: all integer? all numeric?
//           how many distinct integers (up to the limit + 1)?
//   pass 2  writes typed values at each chunk's row offset; categorical text goes through per-thread
//           dictionaries whose codes are remapped afterwards to the sorted global levels.
// Everything merged across threads is order-independent (flags, sums, capped set sizes, sorted
// labels), so the table is the same for any number of threads.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "io/csv.h"
#include "io/csv_tokenizer.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

using csv::FieldView;
using csv::SyntaxError;

// Integers beyond 2^53 cannot all be held exactly by a double.
constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

// ---- values -------------------------------------------------------------------------------------

bool parse_integer(const FieldView& field, std::int64_t& value) {
  const auto [end, ec] = std::from_chars(field.begin, field.end, value);
  return ec == std::errc() && end == field.end;
}

// Decimal numbers only: std::from_chars would also take "inf" and "nan", which are text here.
bool parse_number(const FieldView& field, double& value) {
  if (field.empty()) return false;
  char first = *field.begin;
  if (first == '-') {
    if (field.size() < 2) return false;
    first = field.begin[1];
  }
  if ((first < '0' || first > '9') && first != '.') return false;
  const auto [end, ec] = std::from_chars(field.begin, field.end, value);
  return ec == std::errc() && end == field.end;
}

std::optional<std::int64_t> integer_label(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Text of a header name for a message: printable ASCII only, bounded.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 64)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (text.size() > 64) out += "...";
  return out;
}

// A canonical decimal integer: no sign but '-', no leading zeros, not "-0", at most 18 digits. Its
// text is exactly what std::to_chars writes for its value, so such labels can be keyed by value.
bool parse_canonical_integer(const FieldView& field, std::int64_t& value) {
  const char* p = field.begin;
  const bool negative = p < field.end && *p == '-';
  if (negative) ++p;
  const auto digits = static_cast<std::size_t>(field.end - p);
  if (digits == 0 || digits > 18 || (*p == '0' && (digits > 1 || negative))) return false;
  std::int64_t result = 0;
  for (; p < field.end; ++p) {
    const auto digit = static_cast<unsigned>(*p - '0');
    if (digit > 9) return false;
    result = result * 10 + static_cast<std::int64_t>(digit);
  }
  value = negative ? -result : result;
  return true;
}

// ---- plans: what each column becomes ------------------------------------------------------------

enum class Kind : std::uint8_t { kInfer, kCategorical, kContinuous, kId };

struct ColumnPlan {
  std::string name;
  Kind kind = Kind::kInfer;
  VariableRole role = VariableRole::kOther;
  int geography_level = 0;
  bool fixed_levels = false;        // levels come from the schema
  std::vector<std::string> levels;  // when fixed_levels
  std::string type_reason;          // "by the schema", "by --type", "by its role weight": for messages
};

Kind kind_of(VariableType type) {
  switch (type) {
    case VariableType::kCategorical:
      return Kind::kCategorical;
    case VariableType::kContinuous:
      return Kind::kContinuous;
    case VariableType::kId:
      return Kind::kId;
  }
  return Kind::kInfer;
}

VariableType type_of(Kind kind) {
  switch (kind) {
    case Kind::kContinuous:
      return VariableType::kContinuous;
    case Kind::kId:
      return VariableType::kId;
    case Kind::kCategorical:
    case Kind::kInfer:
      break;
  }
  return VariableType::kCategorical;
}

std::string join_limited(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 10;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) out += (i == 0 ? "'" : ", '") + names[i] + "'";
  if (names.size() > kShown) out += " and " + std::to_string(names.size() - kShown) + " more";
  return out;
}

std::vector<ColumnPlan> plan_columns(const std::vector<std::string>& names, const std::string& source,
                                     const CsvImportOptions& options) {
  std::vector<ColumnPlan> plans(names.size());
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) {
    plans[i].name = names[i];
    index.emplace(names[i], i);
  }
  const auto require_column = [&](const char* flag, const std::string& name) -> ColumnPlan& {
    const auto it = index.find(name);
    if (it == index.end())
      throw UsageError(std::string(flag) + ": variable '" + name + "' is not a column of " + source +
                       " (line 1 names its columns)");
    return plans[it->second];
  };
  for (const auto& [name, role] : options.roles) require_column("--role", name);
  for (const auto& [name, type] : options.types) require_column("--type", name);

  if (options.schema) {
    const Schema& schema = *options.schema;
    const std::string schema_name = schema.source.empty() ? std::string("the schema") : schema.source.string();
    std::vector<std::string> not_in_csv;
    std::vector<std::string> not_in_schema;
    for (const auto& spec : schema.variables)
      if (index.find(spec.name) == index.end()) not_in_csv.push_back(spec.name);
    for (const auto& name : names)
      if (schema.find(name) == nullptr) not_in_schema.push_back(name);
    if (!not_in_csv.empty())
      throw InvalidInput(source + ": line 1: the header lacks " + std::to_string(not_in_csv.size()) +
                         " variable(s) of " + schema_name + ": " + join_limited(not_in_csv));
    if (!not_in_schema.empty())
      throw InvalidInput(source + ": line 1: " + std::to_string(not_in_schema.size()) + " column(s) are not in " +
                         schema_name + ": " + join_limited(not_in_schema));
    for (auto& plan : plans) {
      const VariableSpec& spec = *schema.find(plan.name);
      plan.kind = kind_of(spec.type);
      plan.role = spec.role;
      plan.geography_level = spec.geography_level;
      plan.fixed_levels = spec.type == VariableType::kCategorical && !spec.levels.empty();
      plan.levels = spec.levels;
      plan.type_reason = "by " + schema_name;
    }
  }

  for (const auto& [name, type] : options.types) {
    ColumnPlan& plan = require_column("--type", name);
    if (kind_of(type) != plan.kind || type != VariableType::kCategorical) {
      plan.fixed_levels = false;
      plan.levels.clear();
    }
    plan.kind = kind_of(type);
    plan.type_reason = "by --type";
    if (!role_admits_type(plan.role, type) && options.roles.find(name) == options.roles.end())
      throw UsageError("--type " + name + "=" + std::string(to_string(type)) + ": its role " +
                       std::string(to_string(plan.role)) + " does not admit that type");
  }

  bool geography_given = false;
  for (const auto& [name, role] : options.roles) geography_given = geography_given || role == VariableRole::kGeography;
  if (geography_given) {
    for (const auto& plan : plans)
      if (plan.role == VariableRole::kGeography && options.roles.find(plan.name) == options.roles.end())
        throw UsageError("--role geography: variable '" + plan.name +
                         "' is geography in the schema but not in the list; list the whole hierarchy, coarsest first");
  }
  for (const auto& [name, role] : options.roles) {
    ColumnPlan& plan = require_column("--role", name);
    plan.role = role;
    plan.geography_level = 0;
    if (role == VariableRole::kGeography) {
      const auto level = options.geography_levels.find(name);
      plan.geography_level = level == options.geography_levels.end() ? 0 : level->second;
    }
    const auto explicit_type = options.types.find(name);
    const std::string role_text(to_string(role));
    if (const auto required = type_required_by(role)) {
      if (explicit_type != options.types.end() && explicit_type->second != *required)
        throw UsageError("--type " + name + "=" + std::string(to_string(explicit_type->second)) +
                         " conflicts with --role " + role_text + "=" + name + ": role " + role_text + " needs type " +
                         std::string(to_string(*required)));
      if (plan.kind != kind_of(*required)) {
        plan.fixed_levels = false;
        plan.levels.clear();
        plan.kind = kind_of(*required);
        plan.type_reason = "by its role " + role_text;
      }
    } else if (plan.kind != Kind::kInfer && !role_admits_type(role, type_of(plan.kind))) {
      throw UsageError("--role " + role_text + "=" + name + ": role " + role_text + " does not admit type " +
                       std::string(to_string(type_of(plan.kind))) + " (given " + plan.type_reason + ")");
    }
  }

  std::set<int> levels;
  for (const auto& plan : plans)
    if (plan.role == VariableRole::kGeography &&
        (plan.geography_level < 1 || !levels.insert(plan.geography_level).second))
      throw UsageError("variable '" + plan.name + "': geography level " + std::to_string(plan.geography_level) +
                       " is below 1 or used twice; list the hierarchy once with --role geography=A,B,...");
  if (!levels.empty() && *levels.rbegin() != static_cast<int>(levels.size()))
    throw UsageError("the geography levels must be exactly 1.." + std::to_string(levels.size()) +
                     "; list the whole hierarchy, coarsest first, with --role geography=A,B,...");
  return plans;
}

// ---- failures -----------------------------------------------------------------------------------

enum class Failure : std::uint8_t {
  kNone,
  kSyntax,
  kTooFewFields,
  kTooManyFields,
  kBadNumber,
  kMissingId,
  kNotInLevels,
  kMissingWeight,
  kNegativeWeight,
};

// The first failure of a chunk. Chunks are parsed in file order within themselves, so the failure
// of the lowest failing chunk is the first of the file (among failures its pass looks for).
struct ChunkFailure {
  Failure kind = Failure::kNone;
  SyntaxError syntax = SyntaxError::kNone;
  const char* at = nullptr;  // field (or record) at fault
  std::size_t column = 0;
  std::size_t fields = 0;  // for field-count failures
  explicit operator bool() const noexcept { return kind != Failure::kNone; }
};

// ---- pass 1: inference --------------------------------------------------------------------------

// The distinct integers of a column, counted up to a cap: small non-negative values in a bitmap,
// others in a hash set. Whether a capped union exceeds the cap does not depend on the merge order.
class DistinctIntegers {
 public:
  static constexpr std::int64_t kBitmapValues = 1 << 16;

  std::size_t size() const noexcept { return bitmap_count_ + others_.size(); }

  void insert(std::int64_t value, std::size_t cap) {
    if (size() > cap) return;
    if (value >= 0 && value < kBitmapValues) {
      const auto index = static_cast<std::size_t>(value);
      if (bitmap_.empty()) bitmap_.assign(static_cast<std::size_t>(kBitmapValues) / 64, 0);
      const std::uint64_t bit = std::uint64_t{1} << (index % 64);
      std::uint64_t& word = bitmap_[index / 64];
      if ((word & bit) == 0) {
        word |= bit;
        ++bitmap_count_;
      }
    } else {
      others_.insert(value);
    }
  }

  void merge(const DistinctIntegers& other, std::size_t cap) {
    for (std::size_t w = 0; w < other.bitmap_.size(); ++w)
      for (std::uint64_t word = other.bitmap_[w]; word != 0; word &= word - 1)
        insert(static_cast<std::int64_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(word))), cap);
    for (const std::int64_t value : other.others_) insert(value, cap);
  }

  void clear() {
    bitmap_ = {};
    bitmap_count_ = 0;
    others_ = {};
  }

 private:
  std::vector<std::uint64_t> bitmap_;
  std::size_t bitmap_count_ = 0;
  absl::flat_hash_set<std::int64_t> others_;
};

struct Inference {
  std::int64_t values = 0;  // non-empty fields
  bool integer = true;
  bool numeric = true;
  bool beyond_exact = false;  // an integer with |v| > 2^53
  bool has_last = false;
  std::int64_t last = 0;
  DistinctIntegers distinct;  // capped at limit + 1 values

  void observe(const FieldView& field, std::size_t limit) {
    if (field.empty()) return;
    ++values;
    if (!numeric) return;
    if (field.escaped) {
      numeric = integer = false;
      return;
    }
    if (integer) {
      std::int64_t value = 0;
      if (parse_canonical_integer(field, value) || parse_integer(field, value)) {
        if (!has_last || value != last) {  // sorted and grouped columns repeat values
          has_last = true;
          last = value;
          distinct.insert(value, limit);
        }
        if (value > kMaxExactInteger || value < -kMaxExactInteger) beyond_exact = true;
        return;
      }
      integer = false;
      distinct.clear();
    }
    double number = 0.0;
    if (!parse_number(field, number)) numeric = false;
  }

  void merge(const Inference& other, std::size_t limit) {
    values += other.values;
    integer = integer && other.integer;
    numeric = numeric && other.numeric;
    beyond_exact = beyond_exact || other.beyond_exact;
    if (!integer) {
      distinct.clear();
      return;
    }
    distinct.merge(other.distinct, limit);
  }
};

// ---- pass 2: per-thread state -------------------------------------------------------------------

// A label of at most 15 bytes packed with its length into two words: hashed and compared without
// touching memory again (most census labels are short: codes, bands, country or grid-cell names).
struct ShortText {
  std::uint64_t low = 0;
  std::uint64_t high = 0;  // bytes 8..14, and the length in the top byte
  bool operator==(const ShortText&) const = default;
  template <typename H>
  friend H AbslHashValue(H state, const ShortText& text) {
    return H::combine(std::move(state), text.low, text.high);
  }
};

// Fails for 16 bytes or more. Reads 16 bytes from the label's start when that stays below
// `readable_end` (the field lies in a larger buffer), else copies.
inline bool pack_short_text(std::string_view text, const char* readable_end, ShortText& key) {
  const std::size_t size = text.size();
  if (size > 15) return false;
  std::uint64_t words[2] = {0, 0};
  // The masks keep the label's bytes only where they are the low-order bytes of each word.
  const bool over_read =
      std::endian::native == std::endian::little && readable_end != nullptr && readable_end - text.data() >= 16;
  if (over_read) {
    std::memcpy(words, text.data(), 16);
    const auto mask = [](std::size_t bytes) {
      return bytes >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * bytes)) - 1;
    };
    words[0] &= mask(size);
    words[1] &= size > 8 ? mask(size - 8) : 0;
  } else {
    std::memcpy(words, text.data(), size);
  }
  key.low = words[0];
  key.high = words[1] | (static_cast<std::uint64_t>(size) << 56);
  return true;
}

// Labels of one categorical column met by one thread, with thread-local codes in order of first
// appearance. Canonical integers (most census codes) are keyed by value, small ones through a
// direct table; other labels by text, viewed in the input or in `owned` (unescaped fields).
struct Dictionary {
  static constexpr std::int64_t kSmallIntegers = 1 << 16;

  struct Label {
    bool is_integer = false;
    std::int64_t integer = 0;
    std::string_view text;
  };

  std::vector<std::int32_t> small;  // value -> code, -1 where absent
  absl::flat_hash_map<std::int64_t, std::int32_t> integers;
  absl::flat_hash_map<ShortText, std::int32_t> shorts;
  absl::flat_hash_map<std::string_view, std::int32_t> texts;  // labels of 16 bytes or more
  std::vector<Label> labels;
  std::deque<std::string> owned;
  ShortText last_short;  // grouped and sorted columns repeat labels
  std::int32_t last_short_code = -1;

  std::int32_t add(Label label) {
    labels.push_back(label);
    return static_cast<std::int32_t>(labels.size() - 1);
  }

  std::int32_t integer_code(std::int64_t value) {
    if (value >= 0 && value < kSmallIntegers) {
      const auto index = static_cast<std::size_t>(value);
      if (index >= small.size()) small.resize(index + 1, -1);
      if (small[index] < 0) small[index] = add({true, value, {}});
      return small[index];
    }
    const auto [it, inserted] = integers.try_emplace(value, 0);
    if (inserted) it->second = add({true, value, {}});
    return it->second;
  }

  std::int32_t text_code(std::string_view text, bool needs_copy, const char* readable_end) {
    ShortText key;
    if (pack_short_text(text, readable_end, key)) {
      if (last_short_code >= 0 && key == last_short) return last_short_code;
      const auto [it, inserted] = shorts.try_emplace(key, 0);
      if (inserted) {
        if (needs_copy) text = owned.emplace_back(text);
        it->second = add({false, 0, text});
      }
      last_short = key;
      last_short_code = it->second;
      return last_short_code;
    }
    auto it = texts.find(text);
    if (it == texts.end()) {
      if (needs_copy) text = owned.emplace_back(text);
      it = texts.emplace(text, add({false, 0, text})).first;
    }
    return it->second;
  }
};

struct ThreadState {
  std::vector<Dictionary> dictionaries;  // one per categorical column whose levels come from the data
  std::string scratch;
};

struct ChunkState {
  std::int64_t rows = 0;
  std::int64_t first_row = 0;
  ChunkFailure failure;
  ThreadState* state = nullptr;  // pass 2: whose dictionaries hold this chunk's codes
};

// How pass 2 writes one column.
struct ColumnSink {
  Kind kind = Kind::kCategorical;
  bool weight = false;
  int dictionary = -1;  // index into ThreadState::dictionaries; -1 for fixed levels
  const absl::flat_hash_map<std::string_view, std::int32_t>* fixed = nullptr;
  std::int32_t* codes = nullptr;
  double* values = nullptr;
  std::int64_t* ids = nullptr;
};

class Importer {
 public:
  Importer(csv::InputBytes input, std::string source, const CsvImportOptions& options)
      : input_(std::move(input)), source_(std::move(source)), options_(options), tokenizer_(options.delimiter) {}

  CsvImportResult run();

 private:
  [[noreturn]] void fail_at(const char* at, std::size_t column, const std::string& what) const;
  [[noreturn]] void fail_chunk(const ChunkFailure& failure) const;
  std::string column_text(std::size_t column) const;
  std::int64_t line_of(const char* at) const;
  std::string syntax_message(SyntaxError error) const;

  void read_header();
  void scan(std::size_t limit);
  void decide_types(std::size_t limit, std::vector<std::string>& warnings);
  void write_values();
  std::vector<std::vector<std::string>> finish_dictionaries();

  csv::InputBytes input_;
  std::string source_;
  const CsvImportOptions& options_;
  csv::Tokenizer tokenizer_;
  const char* text_begin_ = nullptr;
  const char* data_begin_ = nullptr;
  const char* data_end_ = nullptr;
  std::vector<std::string> names_;
  std::vector<ColumnPlan> plans_;
  std::vector<const char*> starts_;
  std::vector<ChunkState> chunks_;
  std::int64_t rows_ = 0;

  std::vector<int> infer_slot_;  // per column: index into the inference vector, or -1
  std::vector<Inference> inference_;
  std::vector<int> dictionary_slot_;  // per column: index into ThreadState::dictionaries, or -1
  std::vector<absl::flat_hash_map<std::string_view, std::int32_t>> fixed_levels_;  // per column
  std::vector<std::vector<std::int32_t>> codes_;
  std::vector<std::vector<double>> values_;
  std::vector<std::vector<std::int64_t>> ids_;
  tbb::enumerable_thread_specific<ThreadState> thread_states_;
};

std::int64_t Importer::line_of(const char* at) const {
  return 1 + static_cast<std::int64_t>(csv::count_byte(text_begin_, at, '\n'));
}

std::string Importer::column_text(std::size_t column) const {
  std::string out = "column " + std::to_string(column + 1);
  if (column < names_.size()) out += " '" + names_[column] + "'";
  return out;
}

void Importer::fail_at(const char* at, std::size_t column, const std::string& what) const {
  throw InvalidInput(source_ + ": line " + std::to_string(line_of(at)) + ", " + column_text(column) + ": " + what);
}

std::string Importer::syntax_message(SyntaxError error) const {
  switch (error) {
    case SyntaxError::kStrayQuote:
      return "a quote inside an unquoted field (a field holding quotes must be quoted as a whole, with its quotes "
             "doubled)";
    case SyntaxError::kUnterminatedQuote:
      return "quoted field is not closed before the end of the file";
    case SyntaxError::kAfterClosingQuote:
      return "unexpected character after the closing quote of a quoted field (quotes inside a quoted field must be "
             "doubled)";
    case SyntaxError::kLoneCarriageReturn:
      return "carriage return not followed by a line feed (lines must end with LF or CRLF)";
    case SyntaxError::kNone:
      break;
  }
  return "malformed field";
}

void Importer::fail_chunk(const ChunkFailure& failure) const {
  const std::size_t expected = names_.size();
  switch (failure.kind) {
    case Failure::kSyntax:
      fail_at(failure.at, failure.column, syntax_message(failure.syntax));
    case Failure::kTooFewFields: {
      const std::size_t missing = expected - failure.fields;
      const bool empty_line =
          failure.fields == 1 && failure.at < data_end_ && (*failure.at == '\n' || *failure.at == '\r');
      throw InvalidInput(
          source_ + ": line " + std::to_string(line_of(failure.at)) + ": " +
          (empty_line ? std::string("an empty line")
                      : std::to_string(failure.fields) + (failure.fields == 1 ? " field" : " fields")) +
          ", expected " + std::to_string(expected) + " fields as in the header; " + column_text(failure.fields) +
          (missing == 1 ? std::string(" is missing")
                        : " and the " + std::to_string(missing - 1) + " column(s) after it are missing"));
    }
    case Failure::kTooManyFields:
      throw InvalidInput(source_ + ": line " + std::to_string(line_of(failure.at)) + ": " +
                         std::to_string(failure.fields) + " fields, expected " + std::to_string(expected) +
                         " as in the header; fields follow the last " + column_text(expected - 1) +
                         " (an unquoted delimiter in a value?)");
    case Failure::kBadNumber: {
      const ColumnPlan& plan = plans_[failure.column];
      const bool id = plan.kind == Kind::kId;
      fail_at(failure.at, failure.column,
              std::string(id ? "not an integer" : "not a number") + " (the column is " + (id ? "an id" : "continuous") +
                  (plan.type_reason.empty() ? std::string() : " " + plan.type_reason) + ")");
    }
    case Failure::kMissingId:
      fail_at(failure.at, failure.column, "missing value in an id column (ids are never missing)");
    case Failure::kNotInLevels: {
      const ColumnPlan& plan = plans_[failure.column];
      fail_at(failure.at, failure.column,
              "value not among the " + std::to_string(plan.levels.size()) + " levels given " + plan.type_reason);
    }
    case Failure::kMissingWeight:
      fail_at(failure.at, failure.column, "missing weight (weights are never missing)");
    case Failure::kNegativeWeight:
      fail_at(failure.at, failure.column, "negative weight");
    case Failure::kNone:
      break;
  }
  throw InternalError(source_ + ": CSV import failed without a reason");
}

void Importer::read_header() {
  const std::string_view text = input_.text();
  text_begin_ = text.data();
  data_end_ = text.data() + text.size();
  const char* p = text_begin_;
  // A UTF-8 byte order mark (spreadsheet exports) is not part of the first name.
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") p += 3;
  if (p == data_end_)
    throw InvalidInput(source_ + ": the file is empty; a CSV file starts with a header line naming the variables");

  std::string scratch;
  const csv::RecordEnd header = tokenizer_.parse_record(p, data_end_, [&](std::size_t, const FieldView& field) {
    if (field.escaped) {
      csv::unescape(field, scratch);
      names_.push_back(scratch);
    } else {
      names_.emplace_back(field.view());
    }
  });
  if (header.error != SyntaxError::kNone) fail_at(header.error_at, header.error_field, syntax_message(header.error));
  data_begin_ = header.next;

  std::map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::string& name = names_[i];
    const std::string where = source_ + ": line 1, column " + std::to_string(i + 1) + ": ";
    if (name.empty())
      throw InvalidInput(where + "empty variable name" + (names_.size() == 1 ? " (the first line is empty)" : ""));
    if (!is_valid_variable_name(name))
      throw InvalidInput(where + "variable name '" + printable(name) +
                         "' is not allowed (1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or _)");
    const auto [it, inserted] = seen.emplace(name, i);
    if (!inserted)
      throw InvalidInput(where + "variable '" + name + "' appears twice (also column " +
                         std::to_string(it->second + 1) + ")");
  }
}

// Pass 1: record structure, row counts and the facts inference needs.
void Importer::scan(std::size_t limit) {
  const std::size_t columns = names_.size();
  infer_slot_.assign(columns, -1);
  int inferred = 0;
  for (std::size_t i = 0; i < columns; ++i)
    if (plans_[i].kind == Kind::kInfer) infer_slot_[i] = inferred++;

  tbb::enumerable_thread_specific<std::vector<Inference>> partial(static_cast<std::size_t>(inferred));
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, chunks_.size()), [&](const tbb::blocked_range<std::size_t>& range) {
        std::vector<Inference>& stats = partial.local();
        for (std::size_t c = range.begin(); c != range.end(); ++c) {
          ChunkState& chunk = chunks_[c];
          const char* p = starts_[c];
          const char* const end = starts_[c + 1];
          while (p < end) {
            const csv::RecordEnd record = tokenizer_.parse_record(p, end, [&](std::size_t i, const FieldView& field) {
              if (i < columns && infer_slot_[i] >= 0)
                stats[static_cast<std::size_t>(infer_slot_[i])].observe(field, limit);
            });
            if (record.error != SyntaxError::kNone) {
              chunk.failure = {Failure::kSyntax, record.error, record.error_at, record.error_field, 0};
              break;
            }
            if (record.fields != columns) {
              chunk.failure = {record.fields < columns ? Failure::kTooFewFields : Failure::kTooManyFields,
                               SyntaxError::kNone, p, 0, record.fields};
              break;
            }
            ++chunk.rows;
            p = record.next;
          }
        }
      });
  for (const auto& chunk : chunks_)
    if (chunk.failure) fail_chunk(chunk.failure);

  inference_.assign(static_cast<std::size_t>(inferred), Inference{});
  for (const auto& stats : partial)
    for (std::size_t i = 0; i < stats.size(); ++i) inference_[i].merge(stats[i], limit);

  for (auto& chunk : chunks_) {
    chunk.first_row = rows_;
    rows_ += chunk.rows;
  }
}

void Importer::decide_types(std::size_t limit, std::vector<std::string>& warnings) {
  std::size_t empty_columns = 0;
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    ColumnPlan& plan = plans_[i];
    if (plan.kind != Kind::kInfer) continue;
    const Inference& facts = inference_[static_cast<std::size_t>(infer_slot_[i])];
    if (facts.values == 0) {
      plan.kind = Kind::kCategorical;
      ++empty_columns;
      if (rows_ > 0)
        warnings.push_back("variable '" + plan.name +
                           "' has no values (every field is empty); imported as categorical with no levels");
    } else if (facts.integer && facts.distinct.size() <= limit) {
      plan.kind = Kind::kCategorical;
    } else if (facts.numeric) {
      plan.kind = Kind::kContinuous;
      if (facts.integer && facts.beyond_exact)
        warnings.push_back("variable '" + plan.name +
                           "' holds integers beyond 2^53, which continuous values cannot hold exactly; import it "
                           "with --type " +
                           plan.name + "=id or =categorical to keep every digit");
    } else {
      plan.kind = Kind::kCategorical;
    }
    plan.type_reason = "as inferred";
  }
  if (rows_ == 0 && empty_columns > 0)
    warnings.push_back("the file has a header but no records; " + std::to_string(empty_columns) +
                       " variable(s) without a schema or --type were imported as categorical");
}

// Pass 2: typed values at each chunk's row offset.
void Importer::write_values() {
  const std::size_t columns = plans_.size();
  const auto rows = static_cast<std::size_t>(rows_);
  codes_.resize(columns);
  values_.resize(columns);
  ids_.resize(columns);
  dictionary_slot_.assign(columns, -1);
  fixed_levels_.resize(columns);
  int dictionaries = 0;
  for (std::size_t i = 0; i < columns; ++i) {
    const ColumnPlan& plan = plans_[i];
    if (plan.kind != Kind::kCategorical) continue;
    if (plan.fixed_levels) {
      for (std::size_t level = 0; level < plan.levels.size(); ++level)
        fixed_levels_[i].emplace(plan.levels[level], static_cast<std::int32_t>(level));
    } else {
      dictionary_slot_[i] = dictionaries++;
    }
  }
  // One task per column, so that the zero-filling page faults are spread over the threads.
  tbb::parallel_for(std::size_t{0}, columns, [&](std::size_t i) {
    switch (plans_[i].kind) {
      case Kind::kCategorical:
        codes_[i].assign(rows, kMissingCode);
        break;
      case Kind::kContinuous:
        values_[i].assign(rows, 0.0);
        break;
      case Kind::kId:
        ids_[i].assign(rows, 0);
        break;
      case Kind::kInfer:
        break;
    }
  });

  std::vector<ColumnSink> sinks(columns);
  for (std::size_t i = 0; i < columns; ++i) {
    ColumnSink& sink = sinks[i];
    sink.kind = plans_[i].kind;
    sink.weight = plans_[i].role == VariableRole::kWeight;
    sink.dictionary = dictionary_slot_[i];
    sink.fixed = &fixed_levels_[i];
    sink.codes = codes_[i].data();
    sink.values = values_[i].data();
    sink.ids = ids_[i].data();
  }

  const auto dictionary_count = static_cast<std::size_t>(dictionaries);
  thread_states_ = tbb::enumerable_thread_specific<ThreadState>([dictionary_count] {
    ThreadState state;
    state.dictionaries.resize(dictionary_count);
    return state;
  });

  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, chunks_.size()), [&](const tbb::blocked_range<std::size_t>& range) {
        ThreadState& state = thread_states_.local();
        for (std::size_t c = range.begin(); c != range.end(); ++c) {
          ChunkState& chunk = chunks_[c];
          chunk.state = &state;
          ChunkFailure& failure = chunk.failure;
          auto row = static_cast<std::size_t>(chunk.first_row);
          const char* p = starts_[c];
          const char* const end = starts_[c + 1];
          const auto write = [&](std::size_t i, const FieldView& field) {
            if (failure) return;
            const ColumnSink& sink = sinks[i];
            const auto fail = [&](Failure kind) { failure = {kind, SyntaxError::kNone, field.begin, i, 0}; };
            switch (sink.kind) {
              case Kind::kCategorical: {
                if (field.empty()) return;  // already kMissingCode
                if (sink.dictionary >= 0) {
                  Dictionary& dictionary = state.dictionaries[static_cast<std::size_t>(sink.dictionary)];
                  std::int64_t integer = 0;
                  if (field.escaped) {
                    csv::unescape(field, state.scratch);
                    sink.codes[row] = dictionary.text_code(state.scratch, true, nullptr);
                  } else if (parse_canonical_integer(field, integer)) {
                    sink.codes[row] = dictionary.integer_code(integer);
                  } else {
                    sink.codes[row] = dictionary.text_code(field.view(), false, data_end_);
                  }
                } else {
                  std::string_view label = field.view();
                  if (field.escaped) {
                    csv::unescape(field, state.scratch);
                    label = state.scratch;
                  }
                  const auto it = sink.fixed->find(label);
                  if (it == sink.fixed->end()) return fail(Failure::kNotInLevels);
                  sink.codes[row] = it->second;
                }
                return;
              }
              case Kind::kContinuous: {
                if (field.empty()) {
                  if (sink.weight) return fail(Failure::kMissingWeight);
                  sink.values[row] = std::numeric_limits<double>::quiet_NaN();
                  return;
                }
                double value = 0.0;
                if (field.escaped || !parse_number(field, value)) return fail(Failure::kBadNumber);
                if (sink.weight && value < 0.0) return fail(Failure::kNegativeWeight);
                sink.values[row] = value;
                return;
              }
              case Kind::kId: {
                if (field.empty()) return fail(Failure::kMissingId);
                std::int64_t value = 0;
                if (field.escaped || !parse_integer(field, value)) return fail(Failure::kBadNumber);
                sink.ids[row] = value;
                return;
              }
              case Kind::kInfer:
                return;
            }
          };
          while (p < end && !failure) {
            p = tokenizer_.parse_record(p, end, write).next;
            ++row;
          }
        }
      });
  for (const auto& chunk : chunks_)
    if (chunk.failure) fail_chunk(chunk.failure);
}

// Sorts each dictionary column's labels (numerically when all are integers, else bytewise) and
// rewrites the thread-local codes as codes of the sorted levels.
std::vector<std::vector<std::string>> Importer::finish_dictionaries() {
  const std::size_t columns = plans_.size();
  std::vector<ThreadState*> states;
  for (auto& state : thread_states_) states.push_back(&state);
  std::vector<std::vector<std::string>> levels(columns);
  // remaps[state][column]: thread-local code -> level code
  std::vector<std::vector<std::vector<std::int32_t>>> remaps(states.size(),
                                                             std::vector<std::vector<std::int32_t>>(columns));

  tbb::parallel_for(std::size_t{0}, columns, [&](std::size_t i) {
    if (dictionary_slot_[i] < 0) return;
    const auto slot = static_cast<std::size_t>(dictionary_slot_[i]);
    // The distinct labels of all threads, as text; `local` maps each thread's codes into them.
    std::deque<std::string> storage;  // stable addresses for the views below
    absl::flat_hash_map<std::string_view, std::int32_t> index_of;
    std::vector<std::string_view> labels;
    std::vector<std::vector<std::int32_t>> local(states.size());
    char digits[24];
    for (std::size_t s = 0; s < states.size(); ++s) {
      for (const Dictionary::Label& label : states[s]->dictionaries[slot].labels) {
        const std::string_view text =
            label.is_integer
                ? std::string_view(digits,
                                   static_cast<std::size_t>(
                                       std::to_chars(digits, digits + sizeof digits, label.integer).ptr - digits))
                : label.text;
        auto it = index_of.find(text);
        if (it == index_of.end()) {
          const std::string& kept = storage.emplace_back(text);
          it = index_of.emplace(kept, static_cast<std::int32_t>(labels.size())).first;
          labels.push_back(kept);
        }
        local[s].push_back(it->second);
      }
    }

    std::vector<std::int64_t> numbers;
    numbers.reserve(labels.size());
    for (const std::string_view label : labels) {
      const auto number = integer_label(label);
      if (!number) break;
      numbers.push_back(*number);
    }
    std::vector<std::int32_t> order(labels.size());
    std::iota(order.begin(), order.end(), 0);
    const auto at = [](std::int32_t k) { return static_cast<std::size_t>(k); };
    if (numbers.size() == labels.size()) {
      // "7" and "07" are different labels of the same number: ties go bytewise.
      std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
        return numbers[at(a)] != numbers[at(b)] ? numbers[at(a)] < numbers[at(b)] : labels[at(a)] < labels[at(b)];
      });
    } else {
      std::sort(order.begin(), order.end(),
                [&](std::int32_t a, std::int32_t b) { return labels[at(a)] < labels[at(b)]; });
    }
    std::vector<std::int32_t> level_of(labels.size());
    levels[i].reserve(labels.size());
    for (std::size_t code = 0; code < order.size(); ++code) {
      levels[i].emplace_back(labels[at(order[code])]);
      level_of[at(order[code])] = static_cast<std::int32_t>(code);
    }
    for (std::size_t s = 0; s < states.size(); ++s) {
      auto& remap = remaps[s][i];
      remap.reserve(local[s].size());
      for (const std::int32_t index : local[s]) remap.push_back(level_of[at(index)]);
    }
  });

  std::map<const ThreadState*, std::size_t> state_index;
  for (std::size_t s = 0; s < states.size(); ++s) state_index[states[s]] = s;
  tbb::parallel_for(std::size_t{0}, chunks_.size(), [&](std::size_t c) {
    const ChunkState& chunk = chunks_[c];
    if (chunk.rows == 0 || chunk.state == nullptr) return;
    const auto& chunk_remaps = remaps[state_index.at(chunk.state)];
    const auto first = static_cast<std::size_t>(chunk.first_row);
    const auto last = first + static_cast<std::size_t>(chunk.rows);
    for (std::size_t i = 0; i < columns; ++i) {
      if (dictionary_slot_[i] < 0) continue;
      const auto& remap = chunk_remaps[i];
      std::int32_t* codes = codes_[i].data();
      for (std::size_t row = first; row < last; ++row)
        if (codes[row] >= 0) codes[row] = remap[static_cast<std::size_t>(codes[row])];
    }
  });
  return levels;
}

CsvImportResult Importer::run() {
  if (options_.max_categorical_levels < 0)
    throw UsageError("--max-categorical-levels must be 0 or more, not " +
                     std::to_string(options_.max_categorical_levels));
  const std::size_t limit = static_cast<std::size_t>(
      std::min<std::int64_t>(options_.max_categorical_levels, std::numeric_limits<std::int32_t>::max()));
  parse_delimiter(std::string_view(&options_.delimiter, 1));

  CsvImportResult result;
  // The digest of a plain file is a sequential pass; it runs beside the parallel parse.
  tbb::task_group hashing;
  if (input_.digest_pending()) hashing.run([this] { input_.compute_digest(); });
  std::vector<std::vector<std::string>> levels;
  try {
    read_header();
    plans_ = plan_columns(names_, source_, options_);
    starts_ = csv::split_at_records(data_begin_, data_end_, options_.chunk_bytes);
    chunks_.assign(starts_.size() - 1, ChunkState{});
    scan(limit);
    decide_types(limit, result.warnings);
    write_values();
    levels = finish_dictionaries();
  } catch (...) {
    hashing.wait();
    throw;
  }
  hashing.wait();

  Table table(source_, rows_);
  for (std::size_t i = 0; i < plans_.size(); ++i) {
    ColumnPlan& plan = plans_[i];
    VariableInfo info;
    info.name = plan.name;
    info.role = plan.role;
    info.geography_level = plan.role == VariableRole::kGeography ? plan.geography_level : 0;
    VariableSpec spec;
    spec.name = plan.name;
    spec.type = type_of(plan.kind);
    spec.role = plan.role;
    spec.geography_level = info.geography_level;
    if (options_.schema)
      if (const VariableSpec* given = options_.schema->find(plan.name)) spec.source_line = given->source_line;
    switch (plan.kind) {
      case Kind::kCategorical:
        info.levels = plan.fixed_levels ? std::move(plan.levels) : std::move(levels[i]);
        spec.levels = info.levels;
        table.add_column(Column::categorical(std::move(info), std::move(codes_[i])));
        break;
      case Kind::kContinuous:
        table.add_column(Column::continuous(std::move(info), std::move(values_[i])));
        break;
      case Kind::kId:
        table.add_column(Column::id(std::move(info), std::move(ids_[i])));
        break;
      case Kind::kInfer:
        throw InternalError(source_ + ": variable '" + plan.name + "' has no type after inference");
    }
    result.schema.variables.push_back(std::move(spec));
  }
  validate_table(table);

  result.table = std::move(table);
  result.file_digest = input_.digest();
  result.file_bytes = input_.file_bytes();
  result.data_bytes = input_.text().size();
  result.gzip = input_.gzip();
  return result;
}

std::pair<std::string, std::string> split_assignment(std::string_view flag, std::string_view text,
                                                     std::string_view form) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError(std::string(flag) + " '" + std::string(text) + "': expected " + std::string(form));
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

}  // namespace

void add_role_assignment(CsvImportOptions& options, std::string_view text) {
  const auto [role_text, list] = split_assignment("--role", text, "ROLE=VAR[,VAR...]");
  const auto role = parse_variable_role(role_text);
  if (!role)
    throw UsageError("--role '" + std::string(text) + "': unknown role '" + role_text +
                     "' (roles: " + variable_role_names() + ")");
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t comma = std::min(list.find(',', begin), list.size());
    names.push_back(list.substr(begin, comma - begin));
    begin = comma + 1;
  }
  if (*role == VariableRole::kGeography) {
    for (const auto& [name, other] : options.roles)
      if (other == VariableRole::kGeography)
        throw UsageError("--role geography is given twice; list the whole hierarchy once, coarsest first");
  }
  // Checked in full before anything is added, so a rejected flag leaves the options as they were.
  std::set<std::string> listed;
  for (const auto& name : names) {
    if (name.empty()) throw UsageError("--role '" + std::string(text) + "': an empty variable name");
    if (options.roles.count(name) != 0 || !listed.insert(name).second)
      throw UsageError("--role: variable '" + name + "' is given two roles (a variable has one role)");
  }
  int level = 0;
  for (const auto& name : names) {
    options.roles.emplace(name, *role);
    if (*role == VariableRole::kGeography) options.geography_levels[name] = ++level;
  }
}

void add_type_assignment(CsvImportOptions& options, std::string_view text) {
  const auto [name, type_text] = split_assignment("--type", text, "VAR=TYPE");
  const auto type = parse_variable_type(type_text);
  if (!type)
    throw UsageError("--type '" + std::string(text) + "': unknown type '" + type_text +
                     "' (types: " + variable_type_names() + ")");
  if (!options.types.emplace(name, *type).second) throw UsageError("--type: variable '" + name + "' is typed twice");
}

char parse_delimiter(std::string_view text) {
  if (text == "tab" || text == "\\t") return '\t';
  const auto bad = [&](const std::string& why) { return UsageError("--delimiter '" + printable(text) + "': " + why); };
  if (text.size() != 1) throw bad("expected one character (or 'tab')");
  const char c = text.front();
  const bool letter_or_digit = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  if (c == '"' || c == '\n' || c == '\r') throw bad("the quote and line breaks cannot separate fields");
  if (letter_or_digit || c == '.' || c == '-' || c == '+' || c == '_')
    throw bad("letters, digits and . - + _ occur in numbers and names and cannot separate fields");
  return c;
}

CsvImportResult import_csv(const std::filesystem::path& path, const CsvImportOptions& options) {
  return Importer(csv::InputBytes::read_file(path, options.compute_digest), path.string(), options).run();
}

CsvImportResult import_csv_text(std::string_view text, const std::string& source, const CsvImportOptions& options) {
  return Importer(csv::InputBytes::borrow(text), source, options).run();
}

}  // namespace sdc::io
