#pragma once
// Variable schemas: what `sdc import` infers from a CSV file or reads from a YAML schema file
// (docs/schema.md), and what it prints and saves.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/table.h"

namespace sdc::io {

/// The `format_version` a schema file must declare.
inline constexpr int kSchemaFormatVersion = 1;

struct VariableSpec {
  std::string name;
  VariableType type = VariableType::kContinuous;
  VariableRole role = VariableRole::kOther;
  int geography_level = 0;
  /// Categorical only: the level labels in code order. Empty = the values found in the data,
  /// ordered numerically when they are all integers, otherwise bytewise.
  std::vector<std::string> levels;
  /// Line of the schema file that declares the variable (1-based); 0 when not read from a file.
  int source_line = 0;
};

struct Schema {
  std::vector<VariableSpec> variables;
  /// The file the schema was read from; empty when it was inferred or built in code.
  std::filesystem::path source;
  const VariableSpec* find(const std::string& name) const;
};

/// The one type a role requires (identifier and household: id; geography and key: categorical;
/// weight and continuous: continuous); none for roles that admit several types.
std::optional<VariableType> type_required_by(VariableRole role);

/// Reads a YAML schema. Throws IoError when the file cannot be read, InvalidInput naming the file,
/// line and key for YAML syntax errors, unknown keys, unknown types or roles, invalid or duplicate
/// names, levels on a non-categorical variable and geography levels that are not exactly 1..L.
Schema load_schema(const std::filesystem::path& path);
/// The same from text; `source` names it in messages.
Schema parse_schema(std::string_view yaml, const std::filesystem::path& source);

/// The schema as YAML that load_schema reads back. Without `with_levels`, each categorical variable
/// carries a comment with its level count instead of the labels (labels can be long and, for rare
/// categories, revealing; a schema without levels takes them from the data).
std::string schema_to_yaml(const Schema& schema, bool with_levels = true);

}  // namespace sdc::io
