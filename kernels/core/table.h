#pragma once
// The data model: a column-oriented table of named variables, each with a role and a type.
// Specified in docs/data-model.md; the HDF5 layout that stores it is docs/format.md.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sdc {

/// How a variable's values are stored.
enum class VariableType : std::uint8_t {
  kCategorical,  ///< int32 codes 0..L-1 indexing the level labels; kMissingCode when missing
  kContinuous,   ///< float64; quiet NaN when missing
  kId,           ///< int64 identifier; never missing
};

/// What a variable means to the methods. One role per variable.
enum class VariableRole : std::uint8_t {
  kOther,       ///< carried along, used by no method unless named on the command line
  kIdentifier,  ///< a record identifier (person id)
  kHousehold,   ///< household id; records of a household are contiguous (sorted input)
  kGeography,   ///< geography at level 1 (coarsest) .. L (finest)
  kKey,         ///< quasi-identifier (key variable) for risk measures
  kContinuous,  ///< continuous variable for masking (numVars in sdcMicro)
  kWeight,      ///< sampling weight: finite and non-negative
  kSensitive,   ///< sensitive variable (l-diversity)
};

inline constexpr std::int32_t kMissingCode = -1;
inline constexpr std::size_t kMaxVariableNameLength = 128;

std::string_view to_string(VariableType type);
std::string_view to_string(VariableRole role);
std::optional<VariableType> parse_variable_type(std::string_view text);
std::optional<VariableRole> parse_variable_role(std::string_view text);
/// "categorical, continuous, id" — for messages listing the accepted values.
std::string variable_type_names();
std::string variable_role_names();

/// Names are case-sensitive, 1..128 characters from [A-Za-z0-9_.-], starting with a letter or '_'.
bool is_valid_variable_name(std::string_view name);

/// The types a role admits (a weight is continuous, a household id is an id, ...).
bool role_admits_type(VariableRole role, VariableType type);

struct VariableInfo {
  std::string name;
  VariableType type = VariableType::kContinuous;
  VariableRole role = VariableRole::kOther;
  int geography_level = 0;          ///< 1..L when role is kGeography, else 0
  std::vector<std::string> levels;  ///< labels of the codes 0..L-1; categorical only
  /// A hierarchy of the codes (a table's dimension, docs/tables.md): the parent code of each code, -1
  /// for a top code. Empty when the codes are flat, as in every file of records.
  std::vector<std::int32_t> level_parents;
  /// How global recoding made the codes (docs/recoding.md): "hierarchy <file> level <l>" or
  /// "intervals <rule>"; empty when the variable was not recoded. Categorical only.
  std::string recoding;
  /// The level of the labels in the hierarchy that recoded the variable (0 = its leaves), or -1.
  std::int32_t hierarchy_level = -1;
};

/// One variable with its values. Owns its storage.
class Column {
 public:
  using Storage = std::variant<std::vector<std::int32_t>, std::vector<double>, std::vector<std::int64_t>>;

  static Column categorical(VariableInfo info, std::vector<std::int32_t> codes);
  static Column continuous(VariableInfo info, std::vector<double> values);
  static Column id(VariableInfo info, std::vector<std::int64_t> ids);
  /// The column whose type follows from the storage (int32 codes, float64 values, int64 ids).
  static Column of(VariableInfo info, Storage values);

  const VariableInfo& info() const noexcept { return info_; }
  VariableInfo& info() noexcept { return info_; }
  const std::string& name() const noexcept { return info_.name; }
  VariableType type() const noexcept { return info_.type; }
  std::size_t size() const noexcept;

  std::span<const std::int32_t> codes() const;
  std::span<const double> values() const;
  std::span<const std::int64_t> ids() const;
  std::span<std::int32_t> mutable_codes();
  std::span<double> mutable_values();
  std::span<std::int64_t> mutable_ids();
  const Storage& storage() const noexcept { return data_; }
  /// For code that moves whole value vectors (row exchanges between ranks); keep the length equal to
  /// the table's row count.
  Storage& mutable_storage() noexcept { return data_; }

  /// Number of missing values (categorical kMissingCode, continuous NaN; ids are never missing).
  std::int64_t missing_count() const;

 private:
  Column(VariableInfo info, Storage data);
  VariableInfo info_;
  Storage data_;
};

/// A set of equally long columns: a whole file or one rank's row range of it.
class Table {
 public:
  /// `source` names the table in messages (usually the file path).
  explicit Table(std::string source = {}, std::int64_t row_count = 0, std::int64_t first_row_id = 0);

  const std::string& source() const noexcept { return source_; }
  std::int64_t row_count() const noexcept { return row_count_; }
  /// Global row id of the first row: a row's id is its position in the file, 0-based.
  std::int64_t first_row_id() const noexcept { return first_row_id_; }

  /// Throws InvalidInput for a bad or duplicate name or a length different from row_count().
  void add_column(Column column);
  std::span<const Column> columns() const noexcept { return columns_; }
  std::span<Column> mutable_columns() noexcept { return columns_; }
  std::size_t column_count() const noexcept { return columns_.size(); }
  std::vector<std::string> names() const;

  const Column* find(std::string_view name) const;
  /// Throws InvalidInput naming the source and the variable when it is absent or of another type.
  const Column& require(std::string_view name, std::optional<VariableType> expected = std::nullopt) const;

 private:
  std::string source_;
  std::int64_t row_count_ = 0;
  std::int64_t first_row_id_ = 0;
  std::vector<Column> columns_;
};

/// Rows [first_row_id, first_row_id + count) of `table` (global row ids) as a table of their own.
Table slice_rows(const Table& table, std::int64_t first_row_id, std::int64_t count);

/// Checks every data-model invariant (docs/data-model.md) and throws InvalidInput naming the source,
/// the variable and the row id of the first violation: codes outside their levels, infinite
/// continuous values, missing, infinite or negative weights, roles on types they do not admit,
/// geography levels that are not exactly 1..L.
void validate_table(const Table& table);

}  // namespace sdc
