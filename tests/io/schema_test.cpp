// YAML schemas: a valid file, every rejection naming the file, line and key, and the YAML written
// for --save-schema reading back unchanged.

#include "io/schema.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_schema(yaml, "people.yaml");
  } catch (const InvalidInput& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected error type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return {};
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

constexpr const char* kValid = R"(# persons
format_version: 1
variables:
  - name: NUTS1
    role: geography
    geography_level: 1
  - name: NUTS2
    type: categorical
    role: geography
    geography_level: 2
  - name: HID
    role: household
  - name: sex
    type: categorical
    role: key
    levels: [1, "2", female]
  - name: income
    type: continuous
    role: sensitive
  - name: w
    role: weight
  - name: note
    type: categorical
)";

TEST(ASchema, ReadsAValidFile) {
  const Schema schema = parse_schema(kValid, "people.yaml");
  ASSERT_EQ(schema.variables.size(), 7U);
  EXPECT_EQ(schema.source, "people.yaml");
  const VariableSpec& nuts1 = schema.variables[0];
  EXPECT_EQ(nuts1.type, VariableType::kCategorical);  // implied by the role
  EXPECT_EQ(nuts1.geography_level, 1);
  EXPECT_EQ(nuts1.source_line, 4);
  EXPECT_EQ(schema.find("NUTS2")->geography_level, 2);
  EXPECT_EQ(schema.find("HID")->type, VariableType::kId);
  EXPECT_EQ(schema.find("sex")->levels, (std::vector<std::string>{"1", "2", "female"}));
  EXPECT_EQ(schema.find("income")->role, VariableRole::kSensitive);
  EXPECT_EQ(schema.find("w")->type, VariableType::kContinuous);
  EXPECT_TRUE(schema.find("note")->levels.empty());
  EXPECT_EQ(schema.find("absent"), nullptr);
}

TEST(ASchema, NamesTheLineAndKeyOfAnUnknownKey) {
  const std::string top = error_of("format_version: 1\nvariables: []\ncomment: hi\n");
  expect_contains(top, "people.yaml: line 3");
  expect_contains(top, "'comment'");
  const std::string inner = error_of("format_version: 1\nvariables:\n  - name: a\n    type: id\n    unit: euro\n");
  expect_contains(inner, "people.yaml: line 5");
  expect_contains(inner, "unknown key 'unit'");
}

TEST(ASchema, RejectsUnknownTypesAndRoles) {
  const std::string type = error_of("format_version: 1\nvariables:\n  - name: a\n    type: text\n");
  expect_contains(type, "line 4");
  expect_contains(type, "unknown type 'text'");
  expect_contains(type, "categorical, continuous, id");
  const std::string role = error_of("format_version: 1\nvariables:\n  - name: a\n    type: id\n    role: boss\n");
  expect_contains(role, "line 5");
  expect_contains(role, "unknown role 'boss'");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n"), "no 'type'");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    type: id\n    role: weight\n"),
                  "does not admit");
}

TEST(ASchema, RejectsDuplicateAndInvalidNames) {
  const std::string duplicate = error_of(
      "format_version: 1\nvariables:\n  - name: a\n    type: id\n  - name: b\n    type: id\n  - name: a\n    type: "
      "id\n");
  expect_contains(duplicate, "line 7");
  expect_contains(duplicate, "'a' is declared twice (first on line 3)");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: 1a\n    type: id\n"), "line 3");
  expect_contains(error_of("format_version: 1\nvariables:\n  - type: id\n"), "no 'name'");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    name: b\n    type: id\n"), "twice");
  expect_contains(error_of("format_version: 1\nformat_version: 1\nvariables: []\n"), "line 2");
}

TEST(ASchema, ChecksLevelsAndGeography) {
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    type: continuous\n    levels: [1]\n"),
                  "only allowed for categorical");
  expect_contains(
      error_of("format_version: 1\nvariables:\n  - name: a\n    type: categorical\n    levels: [x, y, x]\n"),
      "level 3 repeats level 1");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    type: categorical\n    levels: [x, ~]\n"),
                  "level 2 is empty");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    type: categorical\n    levels: [x, '']\n"),
                  "level 2 is empty");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    role: geography\n"), "geography_level");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    type: id\n    geography_level: 1\n"),
                  "only allowed with role geography");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    role: geography\n    geography_level: 2\n"),
                  "exactly 1..1");
  expect_contains(error_of("format_version: 1\nvariables:\n  - name: a\n    role: geography\n    geography_level: 1\n"
                           "  - name: b\n    role: geography\n    geography_level: 1\n"),
                  "also that of 'a'");
}

TEST(ASchema, RequiresItsFormatVersionAndValidYaml) {
  expect_contains(error_of("variables: []\n"), "format_version");
  expect_contains(error_of("format_version: 2\nvariables: []\n"), "not supported");
  expect_contains(error_of("format_version: one\nvariables: []\n"), "integer");
  expect_contains(error_of("format_version: 1\n"), "'variables'");
  expect_contains(error_of("format_version: 1\nvariables: [\n  {name: a\n"), "not valid YAML");
  expect_contains(error_of("- a\n- b\n"), "mapping");
}

TEST(ASchema, ReportsAnUnreadableFileAsAnIoError) {
  sdc::testing::TempDir dir;
  EXPECT_THROW(load_schema(dir / "absent.yaml"), IoError);
  sdc::testing::write_text(dir / "s.yaml", "format_version: 1\nvariables:\n  - name: a\n    typ: id\n");
  try {
    load_schema(dir / "s.yaml");
    ADD_FAILURE();
  } catch (const InvalidInput& e) {
    expect_contains(e.what(), (dir / "s.yaml").string() + ": line 4");
    expect_contains(e.what(), "'typ'");
  }
}

TEST(ASchema, WritesYamlThatReadsBackUnchanged) {
  Schema schema = parse_schema(kValid, "people.yaml");
  // Labels YAML would otherwise read as something else, or that need escapes.
  schema.variables[6].levels = {"null",       "~",
                                "true",       "1.0",
                                "say \"hi\"", "back\\slash",
                                "tab\there",  "line\nbreak",
                                "caf\xE9",    "\xC3\xA9t\xC3\xA9",
                                " padded ",   "# not a comment",
                                "a: b"};
  const Schema back = parse_schema(schema_to_yaml(schema), "back.yaml");
  ASSERT_EQ(back.variables.size(), schema.variables.size());
  for (std::size_t i = 0; i < schema.variables.size(); ++i) {
    const auto& a = schema.variables[i];
    const auto& b = back.variables[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << a.name;
    EXPECT_EQ(a.role, b.role) << a.name;
    EXPECT_EQ(a.geography_level, b.geography_level) << a.name;
    EXPECT_EQ(a.levels, b.levels) << a.name;
  }
}

TEST(ASchema, WritesLevelCountsInsteadOfLabelsWhenAsked) {
  const Schema schema = parse_schema(kValid, "people.yaml");
  const std::string yaml = schema_to_yaml(schema, false);
  expect_contains(yaml, "# 3 levels in the data");
  EXPECT_EQ(yaml.find("female"), std::string::npos);
  const Schema back = parse_schema(yaml, "back.yaml");
  EXPECT_TRUE(back.find("sex")->levels.empty());
  EXPECT_EQ(back.find("sex")->type, VariableType::kCategorical);
}

}  // namespace
}  // namespace sdc::io
