// CSV import: the tokenizer's edge cases, type inference, roles and types, schemas, errors that name
// the place but never the value, gzip input, and results that do not depend on threads or chunks.

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "io/csv.h"
#include "io/csv_tokenizer.h"
#include "io/schema.h"
#include "io/sha256.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;
using sdc::testing::write_text;

CsvImportResult parse(const std::string& text, const CsvImportOptions& options = {}) {
  return import_csv_text(text, "t.csv", options);
}

std::vector<std::int32_t> codes_of(const Table& table, const std::string& name) {
  const auto codes = table.require(name, VariableType::kCategorical).codes();
  return {codes.begin(), codes.end()};
}

std::vector<std::string> levels_of(const Table& table, const std::string& name) {
  return table.require(name).info().levels;
}

std::vector<double> values_of(const Table& table, const std::string& name) {
  const auto values = table.require(name, VariableType::kContinuous).values();
  return {values.begin(), values.end()};
}

VariableType type_of(const Table& table, const std::string& name) { return table.require(name).type(); }

// The message of the error `parse` throws, checked to be of type E.
template <typename E>
std::string error_of(const std::string& text, const CsvImportOptions& options = {}) {
  try {
    parse(text, options);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected error type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return {};
}

void expect_names_place(const std::string& message, const std::string& line, const std::string& column) {
  EXPECT_NE(message.find("t.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("line " + line + ","), std::string::npos) << message;
  EXPECT_NE(message.find(column), std::string::npos) << message;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same_tables(const Table& a, const Table& b) {
  ASSERT_EQ(a.row_count(), b.row_count());
  ASSERT_EQ(a.names(), b.names());
  for (std::size_t j = 0; j < a.column_count(); ++j) {
    const Column& x = a.columns()[j];
    const Column& y = b.columns()[j];
    ASSERT_EQ(x.type(), y.type()) << x.name();
    EXPECT_EQ(x.info().role, y.info().role) << x.name();
    EXPECT_EQ(x.info().geography_level, y.info().geography_level) << x.name();
    EXPECT_EQ(x.info().levels, y.info().levels) << x.name();
    switch (x.type()) {
      case VariableType::kCategorical:
        EXPECT_TRUE(std::equal(x.codes().begin(), x.codes().end(), y.codes().begin())) << x.name();
        break;
      case VariableType::kContinuous:
        EXPECT_TRUE(std::equal(x.values().begin(), x.values().end(), y.values().begin(), same_bits)) << x.name();
        break;
      case VariableType::kId:
        EXPECT_TRUE(std::equal(x.ids().begin(), x.ids().end(), y.ids().begin())) << x.name();
        break;
    }
  }
}

// ---- tokenizer --------------------------------------------------------------------------------

TEST(CsvTokenizer, ReadsQuotedFieldsWithDelimitersAndDoubledQuotes) {
  const auto result = parse("name,n\n\"a,b\",1\n\"say \"\"hi\"\"\",2\n\"\"\"\",3\nplain,4\n");
  const Table& table = result.table;
  ASSERT_EQ(table.row_count(), 4);
  EXPECT_EQ(levels_of(table, "name"), (std::vector<std::string>{"\"", "a,b", "plain", "say \"hi\""}));
  EXPECT_EQ(codes_of(table, "name"), (std::vector<std::int32_t>{1, 3, 0, 2}));
}

TEST(CsvTokenizer, AcceptsCrLfAndAFinalLineWithOrWithoutALineEnd) {
  const Table lf = parse("x,y\n1,a\n2,b\n").table;
  for (const char* text : {"x,y\r\n1,a\r\n2,b\r\n", "x,y\n1,a\n2,b", "x,y\r\n1,a\r\n2,b"}) {
    SCOPED_TRACE(text);
    expect_same_tables(parse(text).table, lf);
  }
}

TEST(CsvTokenizer, TreatsEmptyFieldsQuotedOrNotAsMissing) {
  const Table table = parse("a,b,c\n,1.5,x\n1,,\"\"\n2,2.5,y\n").table;
  EXPECT_EQ(codes_of(table, "a"), (std::vector<std::int32_t>{-1, 0, 1}));
  const auto b = values_of(table, "b");
  EXPECT_DOUBLE_EQ(b[0], 1.5);
  EXPECT_TRUE(std::isnan(b[1]));
  EXPECT_EQ(codes_of(table, "c"), (std::vector<std::int32_t>{0, -1, 1}));
}

TEST(CsvTokenizer, ReadsAHeaderOnlyFileAsAnEmptyTable) {
  for (const char* text : {"a,b\n", "a,b", "a,b\r\n"}) {
    const auto result = parse(text);
    EXPECT_EQ(result.table.row_count(), 0);
    EXPECT_EQ(result.table.names(), (std::vector<std::string>{"a", "b"}));
  }
}

TEST(CsvTokenizer, RejectsAnEmptyFile) {
  const std::string message = error_of<InvalidInput>("");
  EXPECT_NE(message.find("t.csv"), std::string::npos);
  EXPECT_NE(message.find("empty"), std::string::npos);
  EXPECT_NE(error_of<InvalidInput>("\xEF\xBB\xBF").find("empty"), std::string::npos);
}

TEST(CsvTokenizer, SkipsAUtf8ByteOrderMark) {
  EXPECT_EQ(parse("\xEF\xBB\xBFx,y\n1,2\n").table.names(), (std::vector<std::string>{"x", "y"}));
}

TEST(CsvTokenizer, KeepsLineBreaksInsideQuotesAndCountsTheirLines) {
  const Table table = parse("id,note\n1,\"two\nlines\"\n2,\"crlf\r\ninside\"\n").table;
  EXPECT_EQ(levels_of(table, "note"), (std::vector<std::string>{"crlf\r\ninside", "two\nlines"}));
  // Line 6 as an editor counts it: the quoted line breaks take lines 3 and 5.
  const std::string message = error_of<InvalidInput>("id,note\n1,\"two\nlines\"\n2,\"crlf\r\ninside\"\n3\n");
  EXPECT_NE(message.find("line 6:"), std::string::npos) << message;
}

TEST(CsvTokenizer, ReadsOtherDelimiters) {
  CsvImportOptions options;
  options.delimiter = ';';
  const Table semicolon = parse("a;b\n1,5;\"x;y\"\n", options).table;
  EXPECT_EQ(levels_of(semicolon, "a"), (std::vector<std::string>{"1,5"}));
  EXPECT_EQ(levels_of(semicolon, "b"), (std::vector<std::string>{"x;y"}));
  options.delimiter = '\t';
  EXPECT_EQ(parse("a\tb\n1\t2\n", options).table.names(), (std::vector<std::string>{"a", "b"}));
}

TEST(CsvTokenizer, SplitsChunksOnlyAtRecordBoundariesOutsideQuotes) {
  const std::string text = "\"a\nb\",1\n\"\"\"\n\",2\nc,3\n";
  for (std::size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
    const auto starts = csv::split_at_records(text.data(), text.data() + text.size(), chunk);
    for (const char* start : starts) {
      const auto offset = static_cast<std::size_t>(start - text.data());
      EXPECT_TRUE(offset == 0 || offset == 8 || offset == 16 || offset == 20 || offset == text.size())
          << "chunk " << chunk << " starts at " << offset;
    }
  }
}

TEST(CsvTokenizer, CountsBytesExactly) {
  const std::string all(100000, '"');
  EXPECT_EQ(csv::count_byte(all.data(), all.data() + all.size(), '"'), all.size());
  std::string text(50000, 'x');
  for (std::size_t i = 0; i < text.size(); i += 7) text[i] = '"';
  for (std::size_t begin = 0; begin < 20; ++begin)
    EXPECT_EQ(csv::count_byte(text.data() + begin, text.data() + text.size(), '"'),
              static_cast<std::size_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(begin), text.end(), '"')));
}

// ---- syntax errors: place named, value never shown ------------------------------------------------

TEST(CsvErrors, NameTheLineOfARaggedRow) {
  const std::string few = error_of<InvalidInput>("a,b,c\n1,2,3\nSECRET1,SECRET2\n");
  EXPECT_NE(few.find("t.csv: line 3:"), std::string::npos) << few;
  EXPECT_NE(few.find("column 3 'c'"), std::string::npos) << few;
  EXPECT_EQ(few.find("SECRET"), std::string::npos) << few;
  const std::string many = error_of<InvalidInput>("a,b\n1,2\n3,4\nSECRET1,SECRET2,SECRET3\n");
  EXPECT_NE(many.find("line 4:"), std::string::npos) << many;
  EXPECT_NE(many.find("3 fields, expected 2"), std::string::npos) << many;
  EXPECT_EQ(many.find("SECRET"), std::string::npos) << many;
}

TEST(CsvErrors, CallAnEmptyLineInsideTheDataARaggedRow) {
  const std::string message = error_of<InvalidInput>("a,b\n1,2\n\n3,4\n");
  EXPECT_NE(message.find("line 3:"), std::string::npos) << message;
  EXPECT_NE(message.find("empty line"), std::string::npos) << message;
}

TEST(CsvErrors, NameTheOpeningOfAnUnterminatedQuote) {
  const std::string message = error_of<InvalidInput>("a,b\n1,2\n3,\"SECRET never closed\n4,5\n");
  expect_names_place(message, "3", "column 2 'b'");
  EXPECT_NE(message.find("not closed"), std::string::npos) << message;
  EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
}

TEST(CsvErrors, RejectAStrayQuoteAndTextAfterAClosingQuote) {
  const std::string stray = error_of<InvalidInput>("a,b\n1,SEC\"RET\n");
  expect_names_place(stray, "2", "column 2 'b'");
  EXPECT_EQ(stray.find("SEC"), std::string::npos) << stray;
  const std::string after = error_of<InvalidInput>("a,b\n\"SECRET\"x,1\n");
  expect_names_place(after, "2", "column 1 'a'");
  EXPECT_EQ(after.find("SECRET"), std::string::npos) << after;
}

TEST(CsvErrors, RejectALoneCarriageReturn) {
  const std::string message = error_of<InvalidInput>("a,b\n1,2\r3,4\n");
  expect_names_place(message, "2", "column 2 'b'");
}

TEST(CsvErrors, RejectBadAndDuplicateHeaderNames) {
  const std::string duplicate = error_of<InvalidInput>("a,b,a\n1,2,3\n");
  EXPECT_NE(duplicate.find("line 1, column 3"), std::string::npos) << duplicate;
  EXPECT_NE(duplicate.find("column 1"), std::string::npos) << duplicate;
  const std::string invalid = error_of<InvalidInput>("a,2b\n1,2\n");
  EXPECT_NE(invalid.find("line 1, column 2"), std::string::npos) << invalid;
  EXPECT_NE(error_of<InvalidInput>("a,,c\n1,2,3\n").find("line 1, column 2: empty variable name"), std::string::npos);
  EXPECT_NE(error_of<InvalidInput>("\n1\n").find("line 1, column 1"), std::string::npos);
}

TEST(CsvErrors, ReportTheFirstErrorOfTheFileWhateverTheChunks) {
  std::string text = "a,b\n";
  for (int i = 0; i < 500; ++i) text += std::to_string(i) + ",x\n";
  text += "1,2,3\n";  // line 502
  for (int i = 0; i < 500; ++i) text += std::to_string(i) + ",x\n";
  text += "1\n";  // line 1003
  for (const std::size_t chunk : {std::size_t{7}, std::size_t{100}, kDefaultCsvChunkBytes}) {
    CsvImportOptions options;
    options.chunk_bytes = chunk;
    EXPECT_NE(error_of<InvalidInput>(text, options).find("line 502:"), std::string::npos) << chunk;
  }
}

// ---- inference --------------------------------------------------------------------------------

std::string integer_column(int distinct) {
  std::string text = "v\n";
  for (int i = 0; i < distinct; ++i) text += std::to_string(i * 3 - 500) + "\n";
  text += "-500\n";  // a repeat
  return text;
}

TEST(CsvInference, MakesIntegersCategoricalUpToTheLevelLimit) {
  EXPECT_EQ(type_of(parse(integer_column(1000)).table, "v"), VariableType::kCategorical);
  EXPECT_EQ(levels_of(parse(integer_column(1000)).table, "v").size(), 1000U);
  EXPECT_EQ(type_of(parse(integer_column(1001)).table, "v"), VariableType::kContinuous);
  CsvImportOptions options;
  options.max_categorical_levels = 3;
  EXPECT_EQ(type_of(parse("v\n1\n2\n3\n", options).table, "v"), VariableType::kCategorical);
  EXPECT_EQ(type_of(parse("v\n1\n2\n3\n4\n", options).table, "v"), VariableType::kContinuous);
  options.chunk_bytes = 3;  // the distinct counts of many chunks are merged
  EXPECT_EQ(type_of(parse("v\n1\n2\n3\n1\n2\n3\n", options).table, "v"), VariableType::kCategorical);
  EXPECT_EQ(type_of(parse("v\n1\n2\n3\n1\n2\n4\n", options).table, "v"), VariableType::kContinuous);
}

TEST(CsvInference, OrdersIntegerLevelsNumericallyKeepingTheirText) {
  const Table table = parse("v\n10\n-2\n9\n-10\n007\n7\n").table;
  EXPECT_EQ(levels_of(table, "v"), (std::vector<std::string>{"-10", "-2", "007", "7", "9", "10"}));
  EXPECT_EQ(codes_of(table, "v"), (std::vector<std::int32_t>{5, 1, 4, 0, 2, 3}));
}

TEST(CsvInference, MakesDecimalsContinuousWithExactValues) {
  const Table table = parse("x\n0.1\n-2.5\n1e-300\n3\n.5\n").table;
  ASSERT_EQ(type_of(table, "x"), VariableType::kContinuous);
  const auto values = values_of(table, "x");
  EXPECT_TRUE(same_bits(values[0], 0.1));
  EXPECT_TRUE(same_bits(values[1], -2.5));
  EXPECT_TRUE(same_bits(values[2], 1e-300));
  EXPECT_TRUE(same_bits(values[3], 3.0));
  EXPECT_TRUE(same_bits(values[4], 0.5));
}

TEST(CsvInference, MakesTextAndMixedColumnsCategoricalInByteOrder) {
  const Table table = parse("t,m,n\nb,1,nan\nB,x,inf\na,2.5,1\n\xC3\xA9,1,2\n").table;
  EXPECT_EQ(levels_of(table, "t"), (std::vector<std::string>{"B", "a", "b", "\xC3\xA9"}));
  EXPECT_EQ(levels_of(table, "m"), (std::vector<std::string>{"1", "2.5", "x"}));
  // "nan" and "inf" are text, never numbers.
  EXPECT_EQ(type_of(table, "n"), VariableType::kCategorical);
}

TEST(CsvInference, MakesMixedIntegersAndDecimalsContinuous) {
  CsvImportOptions options;
  options.max_categorical_levels = 10;
  EXPECT_EQ(type_of(parse("x\n1\n2\n2.5\n", options).table, "x"), VariableType::kContinuous);
}

TEST(CsvInference, WarnsAboutAColumnWithoutValues) {
  const auto result = parse("a,b\n,1\n,2\n");
  EXPECT_EQ(type_of(result.table, "a"), VariableType::kCategorical);
  EXPECT_TRUE(levels_of(result.table, "a").empty());
  ASSERT_EQ(result.warnings.size(), 1U);
  EXPECT_NE(result.warnings[0].find("'a'"), std::string::npos);
}

TEST(CsvInference, WarnsWhenIntegersCannotBeHeldExactly) {
  CsvImportOptions options;
  options.max_categorical_levels = 1;
  const auto result = parse("big\n9007199254740993\n1\n", options);
  EXPECT_EQ(type_of(result.table, "big"), VariableType::kContinuous);
  ASSERT_EQ(result.warnings.size(), 1U);
  EXPECT_NE(result.warnings[0].find("2^53"), std::string::npos);
  EXPECT_EQ(result.warnings[0].find("9007199254740993"), std::string::npos);
}

TEST(CsvInference, ReturnsTheSchemaItApplied) {
  const auto result = parse("g,x,t\n1,0.5,a\n2,1.5,b\n");
  ASSERT_EQ(result.schema.variables.size(), 3U);
  EXPECT_EQ(result.schema.variables[0].type, VariableType::kCategorical);
  EXPECT_EQ(result.schema.variables[0].levels, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(result.schema.variables[1].type, VariableType::kContinuous);
  EXPECT_EQ(result.schema.variables[2].levels, (std::vector<std::string>{"a", "b"}));
}

// ---- roles and types ----------------------------------------------------------------------------

TEST(CsvRoles, ImplyTheTypesTheDataModelRequires) {
  CsvImportOptions options;
  add_role_assignment(options, "household=hid");
  add_role_assignment(options, "geography=region,district");
  add_role_assignment(options, "weight=w");
  add_role_assignment(options, "key=age");
  std::string text = "region,district,hid,age,w\n";
  for (int i = 0; i < 1500; ++i)
    text += std::to_string(i % 3) + "," + std::to_string(i % 30) + "," + std::to_string(i / 2) + "," +
            std::to_string(i) + ",1\n";
  const Table table = parse(text, options).table;
  EXPECT_EQ(table.require("hid").type(), VariableType::kId);
  EXPECT_EQ(table.require("hid").info().role, VariableRole::kHousehold);
  EXPECT_EQ(table.require("region").info().geography_level, 1);
  EXPECT_EQ(table.require("district").info().geography_level, 2);
  EXPECT_EQ(table.require("w").type(), VariableType::kContinuous);
  // 1500 distinct values, but a key is categorical.
  EXPECT_EQ(table.require("age").type(), VariableType::kCategorical);
  EXPECT_EQ(table.require("age").info().levels.size(), 1500U);
}

TEST(CsvRoles, RejectAConflictingTypeAndUnknownVariables) {
  CsvImportOptions options;
  add_role_assignment(options, "weight=w");
  add_type_assignment(options, "w=categorical");
  EXPECT_NE(error_of<UsageError>("w\n1\n", options).find("--type w=categorical conflicts with --role weight=w"),
            std::string::npos);

  CsvImportOptions unknown;
  add_role_assignment(unknown, "key=nope");
  const std::string message = error_of<UsageError>("a\n1\n", unknown);
  EXPECT_NE(message.find("'nope'"), std::string::npos) << message;
  EXPECT_NE(message.find("t.csv"), std::string::npos) << message;
  CsvImportOptions unknown_type;
  add_type_assignment(unknown_type, "nope=id");
  EXPECT_NE(error_of<UsageError>("a\n1\n", unknown_type).find("--type"), std::string::npos);
}

TEST(CsvRoles, ParseTheirFlagsStrictly) {
  CsvImportOptions options;
  EXPECT_THROW(add_role_assignment(options, "boss=a"), UsageError);
  EXPECT_THROW(add_role_assignment(options, "key"), UsageError);
  EXPECT_THROW(add_role_assignment(options, "key=a,,b"), UsageError);
  add_role_assignment(options, "geography=a,b");
  EXPECT_THROW(add_role_assignment(options, "geography=c"), UsageError);
  EXPECT_THROW(add_role_assignment(options, "key=a"), UsageError);
  EXPECT_THROW(add_type_assignment(options, "x=text"), UsageError);
  add_type_assignment(options, "x=id");
  EXPECT_THROW(add_type_assignment(options, "x=continuous"), UsageError);
  EXPECT_EQ(parse_delimiter("tab"), '\t');
  EXPECT_EQ(parse_delimiter(";"), ';');
  EXPECT_THROW(parse_delimiter("\""), UsageError);
  EXPECT_THROW(parse_delimiter(";;"), UsageError);
  EXPECT_THROW(parse_delimiter("."), UsageError);
}

TEST(CsvTypes, OverrideInferenceAndNameTheFieldOfABadNumber) {
  CsvImportOptions options;
  add_type_assignment(options, "x=continuous");
  add_type_assignment(options, "c=categorical");
  const Table table = parse("x,c\n1,0.5\n2,1.5\n", options).table;
  EXPECT_EQ(type_of(table, "x"), VariableType::kContinuous);
  EXPECT_EQ(type_of(table, "c"), VariableType::kCategorical);
  const std::string message = error_of<InvalidInput>("x,c\n1,a\n2,b\nSECRET,c\n", options);
  expect_names_place(message, "4", "column 1 'x'");
  EXPECT_NE(message.find("not a number"), std::string::npos) << message;
  EXPECT_NE(message.find("--type"), std::string::npos) << message;
  EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
}

TEST(CsvTypes, RejectAMissingOrNonIntegerId) {
  CsvImportOptions options;
  add_type_assignment(options, "id=id");
  EXPECT_EQ(parse("id\n-5\n9223372036854775807\n", options).table.require("id").ids()[1],
            std::numeric_limits<std::int64_t>::max());
  const std::string missing = error_of<InvalidInput>("id,v\n1,a\n,b\n", options);
  expect_names_place(missing, "3", "column 1 'id'");
  EXPECT_NE(missing.find("missing"), std::string::npos);
  const std::string decimal = error_of<InvalidInput>("id,v\n1.5,a\n", options);
  expect_names_place(decimal, "2", "column 1 'id'");
  EXPECT_EQ(decimal.find("1.5"), std::string::npos) << decimal;
}

TEST(CsvTypes, CheckWeights) {
  CsvImportOptions options;
  add_role_assignment(options, "weight=w");
  const std::string negative = error_of<InvalidInput>("w\n1\n-3.5\n", options);
  expect_names_place(negative, "3", "column 1 'w'");
  EXPECT_NE(negative.find("negative weight"), std::string::npos);
  EXPECT_EQ(negative.find("3.5"), std::string::npos) << negative;
  EXPECT_NE(error_of<InvalidInput>("w,a\n1,a\n,b\n", options).find("missing weight"), std::string::npos);
}

// ---- schemas ----------------------------------------------------------------------------------

Schema test_schema() {
  return parse_schema(R"(format_version: 1
variables:
  - name: region
    role: geography
    geography_level: 1
    levels: ["north", "south"]
  - name: age
    type: categorical
  - name: income
    type: continuous
)",
                      "s.yaml");
}

TEST(CsvSchema, AppliesTypesAndTheLevelOrderOfTheSchema) {
  CsvImportOptions options;
  options.schema = test_schema();
  const auto result = parse("region,age,income\nsouth,30,100\nnorth,4,\n,30,2.5\n", options);
  const Table& table = result.table;
  EXPECT_EQ(levels_of(table, "region"), (std::vector<std::string>{"north", "south"}));
  EXPECT_EQ(codes_of(table, "region"), (std::vector<std::int32_t>{1, 0, -1}));
  EXPECT_EQ(table.require("region").info().geography_level, 1);
  EXPECT_EQ(levels_of(table, "age"), (std::vector<std::string>{"4", "30"}));
  EXPECT_EQ(type_of(table, "income"), VariableType::kContinuous);
}

TEST(CsvSchema, RejectsAValueNotAmongItsLevels) {
  CsvImportOptions options;
  options.schema = test_schema();
  const std::string message = error_of<InvalidInput>("region,age,income\nsouth,1,1\nATLANTIS,1,1\n", options);
  expect_names_place(message, "3", "column 1 'region'");
  EXPECT_NE(message.find("s.yaml"), std::string::npos) << message;
  EXPECT_EQ(message.find("ATLANTIS"), std::string::npos) << message;
}

TEST(CsvSchema, NamesVariablesMissingOnEitherSide) {
  CsvImportOptions options;
  options.schema = test_schema();
  const std::string absent = error_of<InvalidInput>("region,age\nnorth,1\n", options);
  EXPECT_NE(absent.find("'income'"), std::string::npos) << absent;
  const std::string extra = error_of<InvalidInput>("region,age,income,extra\nnorth,1,1,1\n", options);
  EXPECT_NE(extra.find("'extra'"), std::string::npos) << extra;
  EXPECT_NE(extra.find("s.yaml"), std::string::npos) << extra;
}

TEST(CsvSchema, YieldsToTheCommandLine) {
  CsvImportOptions options;
  options.schema = test_schema();
  add_type_assignment(options, "income=categorical");
  add_role_assignment(options, "geography=age");
  add_role_assignment(options, "key=region");
  const Table table = parse("region,age,income\nsouth,30,100\n", options).table;
  EXPECT_EQ(type_of(table, "income"), VariableType::kCategorical);
  EXPECT_EQ(table.require("age").info().geography_level, 1);
  EXPECT_EQ(table.require("region").info().role, VariableRole::kKey);
  EXPECT_EQ(levels_of(table, "region"), (std::vector<std::string>{"north", "south"}));

  CsvImportOptions partial;
  partial.schema = test_schema();
  add_role_assignment(partial, "geography=age");  // region is geography in the schema, but not listed
  EXPECT_THROW(parse("region,age,income\nsouth,30,100\n", partial), UsageError);
}

// ---- determinism -------------------------------------------------------------------------------

// A file with every feature: quotes, doubled quotes, quoted line breaks, CRLF, missing values,
// integers, decimals, text and a household id.
std::string mixed_file(std::size_t rows) {
  std::mt19937_64 rng(20240611);
  std::string text = "hid,region,age,income,note,code\r\n";
  for (std::size_t i = 0; i < rows; ++i) {
    text += std::to_string(i / 3) + ",";
    text += std::to_string(rng() % 7) + ",";
    text += (rng() % 20 == 0) ? std::string() : std::to_string(static_cast<int>(rng() % 100) - 5);
    text += ",";
    text += (rng() % 15 == 0) ? std::string() : std::to_string(static_cast<double>(rng() % 1000000) / 64.0);
    text += ",";
    switch (rng() % 5) {
      case 0:
        text += "\"multi\nline " + std::to_string(rng() % 50) + "\"";
        break;
      case 1:
        text += "\"quote \"\" and, comma\"";
        break;
      case 2:
        text += "word" + std::to_string(rng() % 300);
        break;
      case 3:
        break;
      default:
        text += "\"\"";
        break;
    }
    text += "," + std::to_string(rng() % 2000);
    text += (i % 2 == 0) ? "\n" : "\r\n";
  }
  return text;
}

TEST(CsvDeterminism, GivesTheSameTableForAnyThreadCountAndChunkSize) {
  const std::string text = mixed_file(5000);
  CsvImportOptions options;
  options.max_categorical_levels = 1000;
  const Table reference = parse(text, options).table;
  EXPECT_EQ(reference.row_count(), 5000);
  EXPECT_EQ(reference.require("code").type(), VariableType::kContinuous);
  EXPECT_EQ(reference.require("age").type(), VariableType::kCategorical);
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    for (const std::size_t chunk : {std::size_t{17}, std::size_t{1000}, std::size_t{65536}}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", chunk " + std::to_string(chunk));
      options.chunk_bytes = chunk;
      expect_same_tables(parse(text, options).table, reference);
    }
  }
}

// ---- files ------------------------------------------------------------------------------------

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

TEST(CsvFiles, DetectsGzipByContentAndDigestsTheStoredBytes) {
  TempDir dir;
  const std::string text = mixed_file(300);
  write_text(dir / "plain.csv", text);
  write_gzip(dir / "packed.csv", text);  // no .gz in the name: detected by the magic bytes
  const auto plain = import_csv(dir / "plain.csv", {});
  const auto packed = import_csv(dir / "packed.csv", {});
  expect_same_tables(plain.table, packed.table);
  EXPECT_FALSE(plain.gzip);
  EXPECT_TRUE(packed.gzip);
  EXPECT_EQ(plain.file_digest, sha256_hex(text));
  EXPECT_EQ(packed.file_digest, sha256_hex(sdc::testing::read_text(dir / "packed.csv")));
  EXPECT_EQ(packed.data_bytes, text.size());
  EXPECT_LT(packed.file_bytes, text.size());
}

TEST(CsvFiles, ReadsConcatenatedGzipMembers) {
  TempDir dir;
  write_gzip(dir / "a.gz", "x,y\n1,a\n");
  write_gzip(dir / "b.gz", "2,b\n");
  sdc::testing::write_text(dir / "ab.csv.gz",
                           sdc::testing::read_text(dir / "a.gz") + sdc::testing::read_text(dir / "b.gz"));
  EXPECT_EQ(import_csv(dir / "ab.csv.gz", {}).table.row_count(), 2);
}

TEST(CsvFiles, RejectsCorruptAndTruncatedGzip) {
  TempDir dir;
  write_gzip(dir / "full.gz", mixed_file(200));
  const std::string bytes = sdc::testing::read_text(dir / "full.gz");
  write_text(dir / "truncated.csv.gz", bytes.substr(0, bytes.size() / 2));
  std::string corrupt = bytes;
  for (std::size_t i = 20; i < 60; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  write_text(dir / "corrupt.csv.gz", corrupt);
  for (const char* name : {"truncated.csv.gz", "corrupt.csv.gz"}) {
    try {
      import_csv(dir / name, {});
      ADD_FAILURE() << name;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("gzip"), std::string::npos) << e.what();
    }
  }
}

TEST(CsvFiles, ReportsAMissingFileAsAnIoError) {
  TempDir dir;
  try {
    import_csv(dir / "absent.csv", {});
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.csv"), std::string::npos);
  }
  EXPECT_THROW(import_csv(dir.path(), {}), IoError);
}

TEST(CsvFiles, ReadsAnEmptyFileAsInvalidInput) {
  TempDir dir;
  write_text(dir / "empty.csv", "");
  EXPECT_THROW(import_csv(dir / "empty.csv", {}), InvalidInput);
}

}  // namespace
}  // namespace sdc::io
