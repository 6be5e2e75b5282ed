#include "io/schema.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

constexpr std::string_view kTopKeys = "format_version, variables";
constexpr std::string_view kVariableKeys = "name, type, role, geography_level, levels";

// yaml-cpp counts lines from 0; editors and our messages count from 1.
int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

class SchemaReader {
 public:
  explicit SchemaReader(std::filesystem::path source) : source_(std::move(source)) {}

  Schema read(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::ParserException& e) {
      throw InvalidInput(source_.string() + ": line " + std::to_string(e.mark.line + 1) + ", column " +
                         std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
    }
    if (!root.IsMap())
      throw InvalidInput(source_.string() + ": expected a YAML mapping with the keys " + std::string(kTopKeys) +
                         " (docs/schema.md)");

    std::optional<YAML::Node> version;
    std::optional<YAML::Node> variables;
    std::set<std::string> seen;
    for (const auto& entry : root) {
      const std::string key = key_text(entry.first);
      if (!seen.insert(key).second) fail(entry.first, "key '" + key + "' appears twice");
      if (key == "format_version") {
        version = entry.second;
      } else if (key == "variables") {
        variables = entry.second;
      } else {
        fail(entry.first, "unknown key '" + key + "' (allowed: " + std::string(kTopKeys) + ")");
      }
    }
    if (!version)
      throw InvalidInput(source_.string() + ": missing key 'format_version' (this tool reads version " +
                         std::to_string(kSchemaFormatVersion) + ")");
    const int format = integer(*version, "format_version");
    if (format != kSchemaFormatVersion)
      fail(*version, "format_version " + std::to_string(format) + " is not supported (this tool reads version " +
                         std::to_string(kSchemaFormatVersion) + ")");
    if (!variables) throw InvalidInput(source_.string() + ": missing key 'variables' (a list of variables)");
    if (!variables->IsSequence()) fail(*variables, "'variables' must be a list of variables");

    Schema schema;
    schema.source = source_;
    std::map<std::string, int> lines_by_name;
    for (const auto& node : *variables) {
      VariableSpec spec = read_variable(node);
      const auto [it, inserted] = lines_by_name.emplace(spec.name, spec.source_line);
      if (!inserted)
        fail(node, "variable '" + spec.name + "' is declared twice (first on line " + std::to_string(it->second) + ")");
      schema.variables.push_back(std::move(spec));
    }
    check_geography_levels(schema);
    return schema;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    throw InvalidInput(source_.string() + ": line " + std::to_string(line_of(node)) + ": " + what);
  }

  std::string key_text(const YAML::Node& key) const {
    if (!key.IsScalar()) fail(key, "keys must be plain words");
    return key.Scalar();
  }

  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (node.IsNull()) fail(node, "key '" + key + "' has no value");
    if (!node.IsScalar()) fail(node, "key '" + key + "' must have a single value, not a list or mapping");
    return node.Scalar();
  }

  int integer(const YAML::Node& node, const std::string& key) const {
    const std::string text = scalar(node, key);
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) fail(node, "key '" + key + "' must be an integer");
    return value;
  }

  VariableSpec read_variable(const YAML::Node& node) const {
    if (!node.IsMap()) fail(node, "each variable must be a mapping with the keys " + std::string(kVariableKeys));
    VariableSpec spec;
    spec.source_line = line_of(node);
    std::optional<YAML::Node> name, type, role, level, levels;
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = key_text(entry.first);
      if (!seen.insert(key).second) fail(entry.first, "key '" + key + "' appears twice in one variable");
      if (key == "name") {
        name = entry.second;
      } else if (key == "type") {
        type = entry.second;
      } else if (key == "role") {
        role = entry.second;
      } else if (key == "geography_level") {
        level = entry.second;
      } else if (key == "levels") {
        levels = entry.second;
      } else {
        fail(entry.first, "unknown key '" + key + "' (allowed: " + std::string(kVariableKeys) + ")");
      }
    }

    if (!name) fail(node, "a variable has no 'name'");
    spec.name = scalar(*name, "name");
    if (!is_valid_variable_name(spec.name))
      fail(*name, "variable name '" + spec.name +
                      "' is not allowed (1-128 characters from A-Z a-z 0-9 _ . -, starting with a letter or _)");
    const std::string where = "variable '" + spec.name + "': ";

    if (role) {
      const std::string text = scalar(*role, "role");
      const auto parsed = parse_variable_role(text);
      if (!parsed) fail(*role, where + "unknown role '" + text + "' (roles: " + variable_role_names() + ")");
      spec.role = *parsed;
    }
    const auto required = type_required_by(spec.role);
    if (type) {
      const std::string text = scalar(*type, "type");
      const auto parsed = parse_variable_type(text);
      if (!parsed) fail(*type, where + "unknown type '" + text + "' (types: " + variable_type_names() + ")");
      spec.type = *parsed;
      if (!role_admits_type(spec.role, spec.type))
        fail(*type, where + "role " + std::string(to_string(spec.role)) + " does not admit type " + text);
    } else if (required) {
      spec.type = *required;
    } else {
      fail(node, where + "no 'type' (types: " + variable_type_names() + ")");
    }

    if (spec.role == VariableRole::kGeography) {
      if (!level) fail(node, where + "role geography needs a 'geography_level' (1 = coarsest)");
      spec.geography_level = integer(*level, "geography_level");
      if (spec.geography_level < 1) fail(*level, where + "geography_level must be 1 or more (1 = coarsest)");
    } else if (level) {
      fail(*level, where + "'geography_level' is only allowed with role geography");
    }

    if (levels) {
      if (spec.type != VariableType::kCategorical)
        fail(*levels, where + "'levels' are only allowed for categorical variables");
      if (!levels->IsSequence()) fail(*levels, where + "'levels' must be a list of labels");
      std::map<std::string, std::size_t> positions;
      for (const auto& label : *levels) {
        const std::size_t position = spec.levels.size() + 1;
        if (label.IsNull() || (label.IsScalar() && label.Scalar().empty()))
          fail(label, where + "level " + std::to_string(position) +
                          " is empty (an empty CSV field is a missing value, never a level)");
        if (!label.IsScalar()) fail(label, where + "level " + std::to_string(position) + " must be a single label");
        const auto [it, inserted] = positions.emplace(label.Scalar(), position);
        if (!inserted)
          fail(label, where + "level " + std::to_string(position) + " repeats level " + std::to_string(it->second));
        spec.levels.push_back(label.Scalar());
      }
    }
    return spec;
  }

  void check_geography_levels(const Schema& schema) const {
    std::map<int, const VariableSpec*> by_level;
    for (const auto& spec : schema.variables) {
      if (spec.role != VariableRole::kGeography) continue;
      const auto [it, inserted] = by_level.emplace(spec.geography_level, &spec);
      if (!inserted)
        throw InvalidInput(source_.string() + ": line " + std::to_string(spec.source_line) + ": variable '" +
                           spec.name + "': geography_level " + std::to_string(spec.geography_level) +
                           " is also that of '" + it->second->name + "'");
    }
    if (!by_level.empty() && by_level.rbegin()->first != static_cast<int>(by_level.size()))
      throw InvalidInput(source_.string() + ": geography levels must be exactly 1.." + std::to_string(by_level.size()) +
                         " (coarsest to finest), one variable each");
  }

  std::filesystem::path source_;
};

// Double-quoted YAML scalar. Bytes >= 0x80 are copied as they are, so labels in any 8-bit encoding
// read back unchanged; control characters use \x escapes, which YAML maps to the same single byte.
void append_quoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

const VariableSpec* Schema::find(const std::string& name) const {
  for (const auto& spec : variables)
    if (spec.name == name) return &spec;
  return nullptr;
}

std::optional<VariableType> type_required_by(VariableRole role) {
  switch (role) {
    case VariableRole::kIdentifier:
    case VariableRole::kHousehold:
      return VariableType::kId;
    case VariableRole::kGeography:
    case VariableRole::kKey:
      return VariableType::kCategorical;
    case VariableRole::kContinuous:
    case VariableRole::kWeight:
      return VariableType::kContinuous;
    case VariableRole::kOther:
    case VariableRole::kSensitive:
      return std::nullopt;
  }
  return std::nullopt;
}

Schema parse_schema(std::string_view yaml, const std::filesystem::path& source) {
  return SchemaReader(source).read(yaml);
}

Schema load_schema(const std::filesystem::path& path) {
  return parse_schema(read_input_file(path, "schema", kMaxTextInputBytes), path);
}

std::string schema_to_yaml(const Schema& schema, bool with_levels) {
  std::string out =
      "# sdc-engine variable schema (docs/schema.md)\nformat_version: " + std::to_string(kSchemaFormatVersion) +
      "\nvariables:\n";
  for (const auto& spec : schema.variables) {
    out += "  - name: ";
    append_quoted(out, spec.name);
    out += "\n    type: ";
    out += to_string(spec.type);
    out += "\n    role: ";
    out += to_string(spec.role);
    out += '\n';
    if (spec.role == VariableRole::kGeography)
      out += "    geography_level: " + std::to_string(spec.geography_level) + "\n";
    if (spec.type != VariableType::kCategorical) continue;
    if (with_levels) {
      if (spec.levels.empty()) continue;  // no list and an empty list both mean "from the data"
      out += "    levels: [";
      for (std::size_t i = 0; i < spec.levels.size(); ++i) {
        if (i > 0) out += ", ";
        append_quoted(out, spec.levels[i]);
      }
      out += "]\n";
    } else {
      out += "    # " + std::to_string(spec.levels.size()) + (spec.levels.size() == 1 ? " level" : " levels") +
             " in the data\n";
    }
  }
  return out;
}

}  // namespace sdc::io
