#include "kernels/core/table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <utility>

#include "kernels/core/error.h"

namespace sdc {
namespace {

constexpr std::array<std::pair<VariableType, std::string_view>, 3> kTypeNames{{
    {VariableType::kCategorical, "categorical"},
    {VariableType::kContinuous, "continuous"},
    {VariableType::kId, "id"},
}};

constexpr std::array<std::pair<VariableRole, std::string_view>, 8> kRoleNames{{
    {VariableRole::kOther, "other"},
    {VariableRole::kIdentifier, "identifier"},
    {VariableRole::kHousehold, "household"},
    {VariableRole::kGeography, "geography"},
    {VariableRole::kKey, "key"},
    {VariableRole::kContinuous, "continuous"},
    {VariableRole::kWeight, "weight"},
    {VariableRole::kSensitive, "sensitive"},
}};

template <typename Table>
std::string join_names(const Table& table) {
  std::string out;
  for (const auto& [value, name] : table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

/// What is wrong with a categorical variable's hierarchy: a parent list of another length, a parent
/// outside the codes, or a code that is its own ancestor.
std::optional<std::string> level_parents_problem(const VariableInfo& info) {
  const auto& parents = info.level_parents;
  if (parents.empty()) return std::nullopt;
  const auto levels = static_cast<std::int64_t>(info.levels.size());
  if (static_cast<std::int64_t>(parents.size()) != levels)
    return "the hierarchy has " + std::to_string(parents.size()) + " parents for " + std::to_string(levels) + " levels";
  for (std::size_t code = 0; code < parents.size(); ++code)
    if (parents[code] < -1 || parents[code] >= levels)
      return "the parent of level '" + info.levels[code] + "' is outside the levels";
  for (std::size_t code = 0; code < parents.size(); ++code) {
    std::int32_t p = parents[code];
    for (std::int64_t steps = 0; p >= 0; ++steps, p = parents[static_cast<std::size_t>(p)])
      if (steps >= levels) return "level '" + info.levels[code] + "' is its own ancestor in the hierarchy";
  }
  return std::nullopt;
}

std::string prefix(const Table& table) { return table.source().empty() ? std::string() : table.source() + ": "; }

std::string row_context(const Table& table, const Column& column, std::size_t index) {
  return prefix(table) + "variable '" + column.name() + "', row id " +
         std::to_string(table.first_row_id() + static_cast<std::int64_t>(index));
}

}  // namespace

std::string_view to_string(VariableType type) {
  for (const auto& [value, name] : kTypeNames)
    if (value == type) return name;
  return "unknown";
}

std::string_view to_string(VariableRole role) {
  for (const auto& [value, name] : kRoleNames)
    if (value == role) return name;
  return "unknown";
}

std::optional<VariableType> parse_variable_type(std::string_view text) {
  for (const auto& [value, name] : kTypeNames)
    if (name == text) return value;
  return std::nullopt;
}

std::optional<VariableRole> parse_variable_role(std::string_view text) {
  for (const auto& [value, name] : kRoleNames)
    if (name == text) return value;
  return std::nullopt;
}

std::string variable_type_names() { return join_names(kTypeNames); }
std::string variable_role_names() { return join_names(kRoleNames); }

bool is_valid_variable_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxVariableNameLength) return false;
  const auto is_letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  if (!is_letter(name.front()) && name.front() != '_') return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return is_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

bool role_admits_type(VariableRole role, VariableType type) {
  switch (role) {
    case VariableRole::kOther:
      return true;
    case VariableRole::kIdentifier:
    case VariableRole::kHousehold:
      return type == VariableType::kId;
    case VariableRole::kGeography:
    case VariableRole::kKey:
      return type == VariableType::kCategorical;
    case VariableRole::kContinuous:
    case VariableRole::kWeight:
      return type == VariableType::kContinuous;
    case VariableRole::kSensitive:
      return type != VariableType::kId;
  }
  return false;
}

// ---- Column -------------------------------------------------------------------------------------

Column::Column(VariableInfo info, Storage data) : info_(std::move(info)), data_(std::move(data)) {}

Column Column::categorical(VariableInfo info, std::vector<std::int32_t> codes) {
  info.type = VariableType::kCategorical;
  return Column(std::move(info), std::move(codes));
}

Column Column::continuous(VariableInfo info, std::vector<double> values) {
  info.type = VariableType::kContinuous;
  info.levels.clear();
  info.level_parents.clear();
  return Column(std::move(info), std::move(values));
}

Column Column::id(VariableInfo info, std::vector<std::int64_t> ids) {
  info.type = VariableType::kId;
  info.levels.clear();
  info.level_parents.clear();
  return Column(std::move(info), std::move(ids));
}

Column Column::of(VariableInfo info, Storage values) {
  switch (values.index()) {
    case 0:
      info.type = VariableType::kCategorical;
      break;
    case 1:
      info.type = VariableType::kContinuous;
      info.levels.clear();
      info.level_parents.clear();
      break;
    default:
      info.type = VariableType::kId;
      info.levels.clear();
      info.level_parents.clear();
      break;
  }
  return Column(std::move(info), std::move(values));
}

std::size_t Column::size() const noexcept {
  return std::visit([](const auto& v) { return v.size(); }, data_);
}

template <typename T>
static std::span<T> typed_span(auto& data, const VariableInfo& info, std::string_view wanted) {
  auto* v = std::get_if<std::vector<std::remove_const_t<T>>>(&data);
  SDC_CHECK(v != nullptr, "variable '" + info.name + "' is " + std::string(to_string(info.type)) + ", accessed as " +
                              std::string(wanted));
  return std::span<T>(*v);
}

std::span<const std::int32_t> Column::codes() const {
  return typed_span<const std::int32_t>(data_, info_, "categorical");
}
std::span<const double> Column::values() const { return typed_span<const double>(data_, info_, "continuous"); }
std::span<const std::int64_t> Column::ids() const { return typed_span<const std::int64_t>(data_, info_, "id"); }
std::span<std::int32_t> Column::mutable_codes() { return typed_span<std::int32_t>(data_, info_, "categorical"); }
std::span<double> Column::mutable_values() { return typed_span<double>(data_, info_, "continuous"); }
std::span<std::int64_t> Column::mutable_ids() { return typed_span<std::int64_t>(data_, info_, "id"); }

std::int64_t Column::missing_count() const {
  switch (info_.type) {
    case VariableType::kCategorical: {
      const auto c = codes();
      return std::count(c.begin(), c.end(), kMissingCode);
    }
    case VariableType::kContinuous: {
      const auto v = values();
      return std::count_if(v.begin(), v.end(), [](double x) { return std::isnan(x); });
    }
    case VariableType::kId:
      return 0;
  }
  return 0;
}

// ---- Table --------------------------------------------------------------------------------------

Table::Table(std::string source, std::int64_t row_count, std::int64_t first_row_id)
    : source_(std::move(source)), row_count_(row_count), first_row_id_(first_row_id) {}

void Table::add_column(Column column) {
  const std::string& name = column.name();
  if (!is_valid_variable_name(name))
    throw InvalidInput(prefix(*this) + "variable name '" + name +
                       "' is not allowed (1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or _)");
  if (find(name) != nullptr) throw InvalidInput(prefix(*this) + "variable '" + name + "' appears twice");
  if (static_cast<std::int64_t>(column.size()) != row_count_)
    throw InvalidInput(prefix(*this) + "variable '" + name + "' has " + std::to_string(column.size()) +
                       " rows, expected " + std::to_string(row_count_) + " like the other variables");
  columns_.push_back(std::move(column));
}

std::vector<std::string> Table::names() const {
  std::vector<std::string> out;
  out.reserve(columns_.size());
  for (const auto& c : columns_) out.push_back(c.name());
  return out;
}

const Column* Table::find(std::string_view name) const {
  for (const auto& c : columns_)
    if (c.name() == name) return &c;
  return nullptr;
}

const Column& Table::require(std::string_view name, std::optional<VariableType> expected) const {
  const Column* column = find(name);
  if (column == nullptr) throw InvalidInput(prefix(*this) + "variable '" + std::string(name) + "' not found");
  if (expected && column->type() != *expected)
    throw InvalidInput(prefix(*this) + "variable '" + std::string(name) + "' is " +
                       std::string(to_string(column->type())) + ", expected " + std::string(to_string(*expected)));
  return *column;
}

Table slice_rows(const Table& table, std::int64_t first_row_id, std::int64_t count) {
  const std::int64_t offset = first_row_id - table.first_row_id();
  SDC_CHECK(offset >= 0 && count >= 0 && offset + count <= table.row_count(), "a slice inside the table");
  Table out(table.source(), count, first_row_id);
  for (const Column& column : table.columns()) {
    Column::Storage rows = std::visit(
        [&](const auto& values) {
          const auto begin = values.begin() + offset;
          return Column::Storage(std::decay_t<decltype(values)>(begin, begin + count));
        },
        column.storage());
    out.add_column(Column::of(column.info(), std::move(rows)));
  }
  return out;
}

// ---- validation ---------------------------------------------------------------------------------

void validate_table(const Table& table) {
  std::set<int> geography_levels;
  for (const Column& column : table.columns()) {
    const VariableInfo& info = column.info();
    if (!role_admits_type(info.role, info.type))
      throw InvalidInput(prefix(table) + "variable '" + info.name + "' has role " + std::string(to_string(info.role)) +
                         ", which does not admit type " + std::string(to_string(info.type)));
    if (info.role == VariableRole::kGeography) {
      if (info.geography_level < 1 || !geography_levels.insert(info.geography_level).second)
        throw InvalidInput(prefix(table) + "variable '" + info.name + "': geography level " +
                           std::to_string(info.geography_level) + " is below 1 or used twice");
    } else if (info.geography_level != 0) {
      throw InvalidInput(prefix(table) + "variable '" + info.name + "' has a geography level but role " +
                         std::string(to_string(info.role)));
    }

    switch (info.type) {
      case VariableType::kCategorical: {
        const auto codes = column.codes();
        const auto level_count = static_cast<std::int64_t>(info.levels.size());
        const auto bad = std::find_if(codes.begin(), codes.end(),
                                      [&](std::int32_t code) { return code < kMissingCode || code >= level_count; });
        if (bad != codes.end())
          throw InvalidInput(row_context(table, column, static_cast<std::size_t>(bad - codes.begin())) +
                             ": code outside its " + std::to_string(level_count) + " levels");
        const std::set<std::string_view> distinct(info.levels.begin(), info.levels.end());
        if (distinct.size() != info.levels.size())
          throw InvalidInput(prefix(table) + "variable '" + info.name + "': level labels are not distinct");
        if (const auto problem = level_parents_problem(info))
          throw InvalidInput(prefix(table) + "variable '" + info.name + "': " + *problem);
        break;
      }
      case VariableType::kContinuous: {
        const auto values = column.values();
        const bool is_weight = info.role == VariableRole::kWeight;
        const auto bad = std::find_if(values.begin(), values.end(), [&](double x) {
          return std::isinf(x) || (is_weight && (std::isnan(x) || x < 0.0));
        });
        if (bad != values.end()) {
          const char* what = std::isinf(*bad)   ? "infinite value"
                             : std::isnan(*bad) ? "missing weight"
                                                : "negative weight";
          throw InvalidInput(row_context(table, column, static_cast<std::size_t>(bad - values.begin())) + ": " + what);
        }
        break;
      }
      case VariableType::kId:
        break;
    }
  }
  if (!geography_levels.empty() && *geography_levels.rbegin() != static_cast<int>(geography_levels.size()))
    throw InvalidInput(prefix(table) + "geography levels must be exactly 1.." +
                       std::to_string(geography_levels.size()) + " (coarsest to finest)");
}

}  // namespace sdc
