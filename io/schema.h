#pragma once
// Variable schemas: what `sdc import` infers from a CSV file or reads from a YAML schema file
// (docs/schema.md), and what it prints and saves.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/table.h"

namespace sdc::io {

struct VariableSpec {
  std::string name;
  VariableType type = VariableType::kContinuous;
  VariableRole role = VariableRole::kOther;
  int geography_level = 0;
  /// Categorical only: the level labels in code order. Empty = the values found in the data,
  /// ordered numerically when they are all integers, otherwise bytewise.
  std::vector<std::string> levels;
};

struct Schema {
  std::vector<VariableSpec> variables;
  const VariableSpec* find(const std::string& name) const;
};

/// Reads a YAML schema. Throws InvalidInput naming the file, line and key for unknown keys,
/// unknown types or roles, invalid or duplicate names.
Schema load_schema(const std::filesystem::path& path);
std::string schema_to_yaml(const Schema& schema);

}  // namespace sdc::io
