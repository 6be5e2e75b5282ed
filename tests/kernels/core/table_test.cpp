#include "kernels/core/table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/core/error.h"

namespace sdc {
namespace {

VariableInfo info(std::string name, VariableRole role = VariableRole::kOther, std::vector<std::string> levels = {}) {
  VariableInfo v;
  v.name = std::move(name);
  v.role = role;
  v.levels = std::move(levels);
  return v;
}

template <typename F>
std::string invalid_input_message(F&& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    EXPECT_EQ(e.code(), ExitCode::kInvalidInput);
    return e.what();
  }
  ADD_FAILURE() << "expected InvalidInput";
  return {};
}

TEST(VariableName, AllowsLettersDigitsUnderscoreDotAndDash) {
  EXPECT_TRUE(is_valid_variable_name("AGE.M"));
  EXPECT_TRUE(is_valid_variable_name("marital-status"));
  EXPECT_TRUE(is_valid_variable_name("_x9"));
  EXPECT_FALSE(is_valid_variable_name(""));
  EXPECT_FALSE(is_valid_variable_name("9lives"));
  EXPECT_FALSE(is_valid_variable_name("a b"));
  EXPECT_FALSE(is_valid_variable_name("a/b"));
  EXPECT_FALSE(is_valid_variable_name(std::string(129, 'a')));
  EXPECT_TRUE(is_valid_variable_name(std::string(128, 'a')));
}

TEST(VariableRoleAndType, RoundTripThroughTheirNames) {
  for (auto role : {VariableRole::kOther, VariableRole::kIdentifier, VariableRole::kHousehold, VariableRole::kGeography,
                    VariableRole::kKey, VariableRole::kContinuous, VariableRole::kWeight, VariableRole::kSensitive})
    EXPECT_EQ(parse_variable_role(to_string(role)), role);
  for (auto type : {VariableType::kCategorical, VariableType::kContinuous, VariableType::kId})
    EXPECT_EQ(parse_variable_type(to_string(type)), type);
  EXPECT_FALSE(parse_variable_role("Weight").has_value());  // names are case-sensitive
}

TEST(ATable, RejectsColumnsOfUnequalLength) {
  Table table("census.h5", 3);
  table.add_column(Column::continuous(info("income"), {1, 2, 3}));
  const auto message = invalid_input_message([&] { table.add_column(Column::continuous(info("savings"), {1, 2})); });
  EXPECT_NE(message.find("census.h5"), std::string::npos);
  EXPECT_NE(message.find("'savings'"), std::string::npos);
}

TEST(ATable, RejectsDuplicateAndInvalidNames) {
  Table table("t.h5", 1);
  table.add_column(Column::continuous(info("x"), {1}));
  EXPECT_NE(invalid_input_message([&] { table.add_column(Column::continuous(info("x"), {1})); }).find("twice"),
            std::string::npos);
  EXPECT_NE(invalid_input_message([&] { table.add_column(Column::continuous(info("a b"), {1})); }).find("'a b'"),
            std::string::npos);
}

TEST(ATable, RequireNamesTheMissingVariableAndTheWrongType) {
  Table table("t.h5", 1);
  table.add_column(Column::categorical(info("sex", VariableRole::kKey, {"1", "2"}), {0}));
  EXPECT_NE(invalid_input_message([&] { table.require("age"); }).find("'age' not found"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] {
              table.require("sex", VariableType::kContinuous);
            }).find("is categorical, expected continuous"),
            std::string::npos);
}

TEST(ValidateTable, NamesTheRowOfACodeOutsideItsLevels) {
  Table table("t.h5", 4, 100);
  table.add_column(Column::categorical(info("sex", VariableRole::kKey, {"1", "2"}), {0, 1, kMissingCode, 2}));
  const auto message = invalid_input_message([&] { validate_table(table); });
  EXPECT_NE(message.find("variable 'sex', row id 103"), std::string::npos) << message;
}

TEST(ValidateTable, RejectsMissingAndNegativeWeights) {
  Table nan_weight("t.h5", 2);
  nan_weight.add_column(Column::continuous(info("w", VariableRole::kWeight), {1.0, std::nan("")}));
  EXPECT_NE(invalid_input_message([&] { validate_table(nan_weight); }).find("row id 1: missing weight"),
            std::string::npos);
  Table negative("t.h5", 2);
  negative.add_column(Column::continuous(info("w", VariableRole::kWeight), {-1.0, 1.0}));
  EXPECT_NE(invalid_input_message([&] { validate_table(negative); }).find("row id 0: negative weight"),
            std::string::npos);
}

TEST(ValidateTable, AcceptsMissingValuesOutsideWeights) {
  Table table("t.h5", 2);
  table.add_column(Column::continuous(info("income", VariableRole::kContinuous), {std::nan(""), 1.0}));
  table.add_column(Column::categorical(info("sex", VariableRole::kKey, {"m", "f"}), {kMissingCode, 1}));
  EXPECT_NO_THROW(validate_table(table));
  EXPECT_EQ(table.columns()[0].missing_count(), 1);
  EXPECT_EQ(table.columns()[1].missing_count(), 1);
}

TEST(ValidateTable, RejectsInfiniteValuesAndRolesOnTheWrongType) {
  Table inf("t.h5", 1);
  inf.add_column(Column::continuous(info("x"), {std::numeric_limits<double>::infinity()}));
  EXPECT_NE(invalid_input_message([&] { validate_table(inf); }).find("infinite"), std::string::npos);
  Table role("t.h5", 1);
  role.add_column(Column::continuous(info("hid", VariableRole::kHousehold), {1.0}));
  EXPECT_NE(invalid_input_message([&] { validate_table(role); }).find("does not admit"), std::string::npos);
}

TEST(ValidateTable, RequiresGeographyLevelsOneToL) {
  Table table("t.h5", 1);
  auto nuts1 = info("nuts1", VariableRole::kGeography, {"a"});
  nuts1.geography_level = 1;
  auto lau2 = info("lau2", VariableRole::kGeography, {"a"});
  lau2.geography_level = 3;
  table.add_column(Column::categorical(nuts1, {0}));
  table.add_column(Column::categorical(lau2, {0}));
  EXPECT_NE(invalid_input_message([&] { validate_table(table); }).find("1..2"), std::string::npos);
}

}  // namespace
}  // namespace sdc
