#include "io/hdf5_table.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "io/chunk_codec.h"
#include "io/content_digest.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

// For sanitizer builds. AWriteThatFailsHalfwayLeavesNothingBehind makes writes fail with a file-size
// limit, which also applies to the in-memory file that hdf5::abandon() hands HDF5 for its close; HDF5
// 1.10 then loses one allocation of its own (8 KB, inside libhdf5). Real failures (a full disk)
// close cleanly. Only allocations made inside HDF5 are exempt.
extern "C" const char* __lsan_default_suppressions() { return "leak:libhdf5_openmpi.so\n"; }

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

VariableInfo info(std::string name, VariableRole role, std::vector<std::string> levels = {}, int geography_level = 0) {
  VariableInfo out;
  out.name = std::move(name);
  out.role = role;
  out.levels = std::move(levels);
  out.geography_level = geography_level;
  return out;
}

/// A census-like table with every type, missing values, UTF-8 labels and two geography levels.
/// Values follow formulas so that any row can be checked without keeping a copy.
Table census_table(std::int64_t rows) {
  const auto n = static_cast<std::size_t>(rows);
  std::vector<std::int64_t> ids(n);
  std::vector<std::int32_t> region(n), district(n), sex(n);
  std::vector<double> income(n), weight(n);
  for (std::size_t i = 0; i < n; ++i) {
    ids[i] = 5'000'000'000LL + static_cast<std::int64_t>(i);
    region[i] = static_cast<std::int32_t>(i % 3);
    district[i] = static_cast<std::int32_t>(i % 6);
    sex[i] = i % 11 == 4 ? kMissingCode : static_cast<std::int32_t>(i % 2);
    income[i] = i % 13 == 5 ? kNan : 1000.0 + 0.37 * static_cast<double>(i * i % 1000);
    weight[i] = 1.0 + static_cast<double>(i % 7) / 8.0;
  }
  Table table("memory", rows);
  table.add_column(Column::id(info("person_id", VariableRole::kIdentifier), std::move(ids)));
  table.add_column(Column::categorical(info("region", VariableRole::kGeography, {"Zürich", "Genève", "Ticino"}, 1),
                                       std::move(region)));
  table.add_column(Column::categorical(
      info("district", VariableRole::kGeography, {"ZH-1", "ZH-2", "GE-1", "GE-2", "TI-1", "TI-2"}, 2),
      std::move(district)));
  table.add_column(Column::categorical(info("sex", VariableRole::kKey, {"female", "male"}), std::move(sex)));
  table.add_column(Column::continuous(info("income", VariableRole::kContinuous), std::move(income)));
  table.add_column(Column::continuous(info("weight", VariableRole::kWeight), std::move(weight)));
  return table;
}

std::vector<VariableInfo> infos_of(const Table& table) {
  std::vector<VariableInfo> infos;
  for (const Column& column : table.columns()) infos.push_back(column.info());
  return infos;
}

Hdf5WriteOptions options_with(Hdf5Filters filters, std::int64_t chunk_rows = kDefaultChunkRows) {
  Hdf5WriteOptions options;
  options.filters = filters;
  options.chunk_rows = chunk_rows;
  options.provenance = Provenance{"sdc-engine test", "sdc test", "abc123", "2024-01-01T00:00:00Z", "", ""};
  return options;
}

void expect_same_info(const VariableInfo& a, const VariableInfo& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.type, b.type) << a.name;
  EXPECT_EQ(a.role, b.role) << a.name;
  EXPECT_EQ(a.geography_level, b.geography_level) << a.name;
  EXPECT_EQ(a.levels, b.levels) << a.name;
}

/// Bitwise equality, so that NaN equals NaN and -0.0 differs from 0.0.
void expect_same_values(const Column& a, const Column& b, std::size_t offset = 0) {
  ASSERT_EQ(a.type(), b.type());
  switch (a.type()) {
    case VariableType::kCategorical:
      for (std::size_t i = 0; i < b.size(); ++i)
        ASSERT_EQ(a.codes()[offset + i], b.codes()[i]) << a.name() << " row " << i;
      break;
    case VariableType::kContinuous:
      for (std::size_t i = 0; i < b.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint64_t>(a.values()[offset + i]), std::bit_cast<std::uint64_t>(b.values()[i]))
            << a.name() << " row " << i;
      break;
    case VariableType::kId:
      for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(a.ids()[offset + i], b.ids()[i]) << a.name() << " row " << i;
      break;
  }
}

/// `expected` rows [first, first + count) equal `actual`.
void expect_rows(const Table& expected, const Table& actual, std::int64_t first) {
  ASSERT_EQ(expected.column_count(), actual.column_count());
  for (std::size_t c = 0; c < expected.column_count(); ++c) {
    expect_same_info(expected.columns()[c].info(), actual.columns()[c].info());
    expect_same_values(expected.columns()[c], actual.columns()[c], static_cast<std::size_t>(first));
  }
}

template <typename Error, typename Body>
std::string error_message(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception type: ") + e.what();
  }
  return "no exception";
}

std::filesystem::path bad_input(const std::string& name) {
  return testing::source_path("tests/data/bad_input/" + name);
}

mode_t file_mode(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0);
  return info.st_mode & 0777;
}

const Hdf5Filters kNone{false, 0};
const Hdf5Filters kDefault{};

// ---- round trips --------------------------------------------------------------------------------

class AHdf5RoundTrip : public ::testing::TestWithParam<Hdf5Filters> {};

TEST_P(AHdf5RoundTrip, KeepsTypesRolesLabelsMissingValuesAndOrder) {
  TempDir dir;
  const Table table = census_table(1000);
  write_table(table, dir / "t.h5", options_with(GetParam(), 64));
  const Table back = read_table(dir / "t.h5");
  EXPECT_EQ(back.row_count(), 1000);
  EXPECT_EQ(back.first_row_id(), 0);
  EXPECT_EQ(back.source(), (dir / "t.h5").string());
  EXPECT_EQ(back.names(), table.names());
  expect_rows(table, back, 0);
  EXPECT_EQ(back.require("sex").missing_count(), table.require("sex").missing_count());
  EXPECT_EQ(back.require("income").missing_count(), table.require("income").missing_count());
}

TEST_P(AHdf5RoundTrip, ReadsRowRangesAcrossChunkBoundariesFromTheOverlappingChunksOnly) {
  TempDir dir;
  const Table table = census_table(100);
  write_table(table, dir / "t.h5", options_with(GetParam(), 7));
  // Inside one chunk, across one boundary, chunk-aligned, ending in the partial last chunk, empty.
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges{{0, 100}, {3, 2},  {5, 4},  {7, 7},  {6, 9},
                                                                  {13, 50}, {98, 2}, {99, 1}, {50, 0}, {100, 0}};
  for (const auto& [first, count] : ranges) {
    SCOPED_TRACE("rows " + std::to_string(first) + " +" + std::to_string(count));
    const Table part = read_table(dir / "t.h5", {{}, first, count, true});
    EXPECT_EQ(part.row_count(), count);
    EXPECT_EQ(part.first_row_id(), first);
    expect_rows(table, part, first);
  }
  const Table tail = read_table(dir / "t.h5", {{"income"}, 95, -1, true});
  EXPECT_EQ(tail.row_count(), 5);
}

INSTANTIATE_TEST_SUITE_P(Filters, AHdf5RoundTrip,
                         ::testing::Values(Hdf5Filters{true, 1}, Hdf5Filters{false, 0}, Hdf5Filters{true, 0},
                                           Hdf5Filters{false, 6}, Hdf5Filters{true, 9}),
                         [](const auto& param) {
                           std::string name = to_string(param.param);
                           for (char& c : name)
                             if (c == ',' || c == '=') c = '_';
                           return name;
                         });

TEST(Hdf5Table, ReadsTheRequestedVariablesInTheRequestedOrder) {
  TempDir dir;
  write_table(census_table(30), dir / "t.h5", options_with(kDefault, 8));
  const Table part = read_table(dir / "t.h5", {{"weight", "person_id", "district"}});
  EXPECT_EQ(part.names(), (std::vector<std::string>{"weight", "person_id", "district"}));
  // A geography level read without the coarser ones still validates.
  EXPECT_EQ(part.require("district").info().geography_level, 2);
}

TEST(Hdf5Table, WritesAndReadsAnEmptyTable) {
  for (const Hdf5Filters& filters : {kDefault, kNone}) {
    TempDir dir;
    const Table table = census_table(0);
    write_table(table, dir / "t.h5", options_with(filters));
    const Table back = read_table(dir / "t.h5");
    EXPECT_EQ(back.row_count(), 0);
    EXPECT_EQ(back.names(), table.names());
    expect_rows(table, back, 0);
    EXPECT_EQ(read_summary(dir / "t.h5").row_count, 0);
  }
}

TEST(Hdf5Table, WritesATableWithoutVariables) {
  TempDir dir;
  write_table(Table("memory", 12), dir / "t.h5", options_with(kDefault));
  const FileSummary summary = read_summary(dir / "t.h5");
  EXPECT_EQ(summary.row_count, 12);
  EXPECT_TRUE(summary.variables.empty());
}

TEST(Hdf5Table, StoresOneHundredThousandLevelLabels) {
  TempDir dir;
  constexpr std::int32_t kLevels = 100'000;
  std::vector<std::string> labels;
  for (std::int32_t i = 0; i < kLevels; ++i) labels.push_back("municipality " + std::to_string(i) + " – ünïcode");
  std::vector<std::int32_t> codes(250'000);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::int32_t>((i * 7919) % kLevels);
  Table table("memory", static_cast<std::int64_t>(codes.size()));
  table.add_column(Column::categorical(info("municipality", VariableRole::kKey, labels), codes));
  write_table(table, dir / "t.h5", options_with(kDefault));
  const Table back = read_table(dir / "t.h5");
  EXPECT_EQ(back.require("municipality").info().levels, labels);
  expect_same_values(table.require("municipality"), back.require("municipality"));
}

TEST(Hdf5Table, ReportsSummaryFiltersChunkingAndProvenance) {
  TempDir dir;
  write_table(census_table(50), dir / "t.h5", options_with(Hdf5Filters{true, 4}, 16));
  const FileSummary summary = read_summary(dir / "t.h5");
  EXPECT_EQ(summary.format_version, kFormatVersion);
  EXPECT_EQ(summary.row_count, 50);
  EXPECT_EQ(summary.chunk_rows, 16);
  EXPECT_TRUE(summary.filters.shuffle);
  EXPECT_EQ(summary.filters.deflate_level, 4);
  EXPECT_EQ(summary.provenance.tool_version, "sdc-engine test");
  EXPECT_EQ(summary.provenance.command, "sdc test");
  EXPECT_EQ(summary.provenance.input_digest, "abc123");
  EXPECT_EQ(summary.provenance.created_utc, "2024-01-01T00:00:00Z");
  ASSERT_EQ(summary.variables.size(), 6U);
  expect_same_info(summary.variables[1], census_table(0).require("region").info());
  // A table shorter than the chunk size is one chunk.
  write_table(census_table(50), dir / "short.h5", options_with(kDefault));
  EXPECT_EQ(read_summary(dir / "short.h5").chunk_rows, 50);
}

TEST(Hdf5Table, StreamsBlocksOfWholeChunksThatTogetherEqualTheWholeRead) {
  TempDir dir;
  const Table table = census_table(1000);
  write_table(table, dir / "t.h5", options_with(kDefault, 64));
  const Hdf5TableReader reader(dir / "t.h5");
  const std::int64_t block = reader.streaming_block_rows("income");
  EXPECT_GT(block, 0);
  EXPECT_EQ(block % 64, 0);
  const std::int64_t small_block = 3 * 64;
  for (std::int64_t first = 0; first < 1000; first += small_block) {
    const Table part = reader.read({{"income", "sex"}, first, std::min<std::int64_t>(small_block, 1000 - first), true});
    expect_same_values(table.require("income"), part.require("income"), static_cast<std::size_t>(first));
    expect_same_values(table.require("sex"), part.require("sex"), static_cast<std::size_t>(first));
  }
  EXPECT_NE(
      error_message<InvalidInput>([&] { reader.streaming_block_rows("nosuch"); }).find("variable 'nosuch' not found"),
      std::string::npos);
}

TEST(Hdf5Table, CompressesWithTheSameResultOnOneThreadAsOnMany) {
  TempDir dir;
  const Table table = census_table(5000);
  write_table(table, dir / "many.h5", options_with(kDefault, 100));
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    write_table(table, dir / "one.h5", options_with(kDefault, 100));
    expect_rows(table, read_table(dir / "many.h5"), 0);
  }
  EXPECT_EQ(testing::read_text(dir / "many.h5"), testing::read_text(dir / "one.h5"));
}

TEST(Hdf5Table, AssemblesOneFileFromChunkAlignedPartsWrittenInAnyOrder) {
  for (const Hdf5Filters& filters : {kDefault, kNone}) {
    TempDir dir;
    const Table table = census_table(1000);
    const Hdf5WriteOptions options = options_with(filters, 64);
    const std::vector<VariableInfo> variables = infos_of(table);
    create_table_file(dir / "parts.h5", variables, 1000, options);
    write_table_rows(dir / "parts.h5", slice_rows(table, 640, 360), options);  // ends in the partial last chunk
    write_table_rows(dir / "parts.h5", slice_rows(table, 0, 320), options);
    write_table_rows(dir / "parts.h5", slice_rows(table, 320, 320), options);
    expect_rows(table, read_table(dir / "parts.h5"), 0);
    write_table(table, dir / "whole.h5", options);
    EXPECT_EQ(content_digest(dir / "parts.h5"), content_digest(dir / "whole.h5")) << to_string(filters);
  }
}

TEST(Hdf5Table, StoresPartsEncodedAheadExactlyAsItWouldEncodeThem) {
  TempDir dir;
  const Table table = census_table(1000);
  const Hdf5WriteOptions options = options_with(kDefault, 64);
  const std::vector<VariableInfo> variables = infos_of(table);
  const std::vector<Table> parts{slice_rows(table, 0, 640), slice_rows(table, 640, 360)};
  std::vector<EncodedRows> encoded;
  for (const Table& part : parts) encoded.push_back(encode_rows(part, 1000, options));
  EXPECT_GT(encoded[0].stored_bytes(), 0U);
  create_table_file(dir / "ahead.h5", variables, 1000, options);
  create_table_file(dir / "in-turn.h5", variables, 1000, options);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    write_table_rows(dir / "ahead.h5", parts[i], options, &encoded[i]);
    write_table_rows(dir / "in-turn.h5", parts[i], options);
  }
  expect_rows(table, read_table(dir / "ahead.h5"), 0);
  EXPECT_EQ(testing::read_text(dir / "ahead.h5"), testing::read_text(dir / "in-turn.h5"));

  // Nothing to encode without filters, and nothing for variables whose stored chunks are copied.
  EXPECT_EQ(encode_rows(parts[0], 1000, options_with(kNone, 64)).stored_bytes(), 0U);
  Hdf5WriteOptions copying = options;
  copying.unchanged = UnchangedVariables{dir / "ahead.h5", read_summary(dir / "ahead.h5").stamp, table.names()};
  EXPECT_EQ(encode_rows(parts[0], 1000, copying).stored_bytes(), 0U);
  // Chunks made for other rows are refused rather than stored in the wrong place.
  EXPECT_NE(error_message<InternalError>([&] {
              write_table_rows(dir / "in-turn.h5", parts[1], options, &encoded[0]);
            }).find("other rows"),
            std::string::npos);
}

TEST(Hdf5Table, RefusesPartsThatWouldShareAChunk) {
  TempDir dir;
  const Table table = census_table(100);
  const Hdf5WriteOptions options = options_with(kDefault, 16);
  const std::vector<VariableInfo> variables = infos_of(table);
  create_table_file(dir / "parts.h5", variables, 100, options);
  EXPECT_NE(error_message<InternalError>([&] {
              write_table_rows(dir / "parts.h5", slice_rows(table, 8, 16), options);
            }).find("not whole chunks"),
            std::string::npos);
  EXPECT_NE(
      error_message<InternalError>([&] { write_table_rows(dir / "parts.h5", slice_rows(table, 16, 20), options); }),
      "no exception");
  EXPECT_NE(error_message<IoError>([&] {
              write_table_rows(dir / "nosuch.h5", slice_rows(table, 0, 16), options);
            }).find((dir / "nosuch.h5").string()),
            std::string::npos);
}

// ---- copying the stored chunks of unchanged variables ---------------------------------------------

/// The table `census_table(rows)` with every value of `name` changed, standing in for values the
/// writer must not look at when it copies that variable's chunks: what reads back tells which path
/// the writer took.
Table with_changed_values(std::int64_t rows, const std::string& name) {
  Table table = census_table(rows);
  for (Column& column : table.mutable_columns())
    if (column.name() == name)
      for (double& value : column.mutable_values()) value = -1.0;
  return table;
}

TEST(Hdf5Table, CopiesTheStoredChunksOfVariablesDeclaredUnchanged) {
  TempDir dir;
  const Table original = census_table(1000);
  write_table(original, dir / "input.h5", options_with(kDefault, 64));
  Hdf5WriteOptions options = options_with(kDefault, 64);
  options.unchanged = UnchangedVariables{dir / "input.h5", read_summary(dir / "input.h5").stamp, {"income", "sex"}};
  write_table(with_changed_values(1000, "income"), dir / "output.h5", options);
  expect_rows(original, read_table(dir / "output.h5"), 0);
  EXPECT_EQ(content_digest(dir / "output.h5"), content_digest(dir / "input.h5"));

  // Parts written by several writers copy their own row ranges.
  const std::vector<VariableInfo> variables = infos_of(original);
  const Table changed = with_changed_values(1000, "income");
  create_table_file(dir / "parts.h5", variables, 1000, options);
  write_table_rows(dir / "parts.h5", slice_rows(changed, 640, 360), options);
  write_table_rows(dir / "parts.h5", slice_rows(changed, 0, 640), options);
  expect_rows(original, read_table(dir / "parts.h5"), 0);
}

// ---- stored digests ------------------------------------------------------------------------------

/// What the content digest hashes for every variable and block of `table`, a whole file.
std::vector<std::vector<std::string>> block_digests_of(const Table& table) {
  return whole_block_digests(table, 0, table.row_count(), table.row_count());
}

void expect_stored_digests(const std::filesystem::path& path, const Table& table, const std::string& what) {
  const auto expected = block_digests_of(table);
  const Hdf5TableReader reader(path);
  for (std::size_t v = 0; v < table.column_count(); ++v) {
    const auto stored = reader.stored_block_digests(table.columns()[v].name(), 0, table.row_count());
    ASSERT_TRUE(stored) << what << ": " << table.columns()[v].name();
    EXPECT_EQ(*stored, expected[v]) << what << ": " << table.columns()[v].name();
  }
}

TEST(Hdf5Table, StoresWithEveryVariableTheDigestsOfItsChunksAndBlocks) {
  TempDir dir;
  const std::int64_t rows = 3 * kDigestBlockRows + 1000;  // a short last chunk and a short last block
  const Table table = census_table(rows);
  const std::int64_t chunk_rows = 2 * kDigestBlockRows;
  for (const Hdf5Filters& filters : {kDefault, kNone, Hdf5Filters{true, 0}}) {
    write_table(table, dir / "t.h5", options_with(filters, chunk_rows));
    expect_stored_digests(dir / "t.h5", table, "one writer, " + to_string(filters));
  }

  // Several writers, with chunks encoded ahead and encoded in turn, store the same digests.
  const Hdf5WriteOptions options = options_with(kDefault, chunk_rows);
  const Table first = slice_rows(table, 0, chunk_rows);
  const Table rest = slice_rows(table, chunk_rows, rows - chunk_rows);
  const EncodedRows encoded = encode_rows(rest, rows, options);
  create_table_file(dir / "parts.h5", infos_of(table), rows, options);
  write_table_rows(dir / "parts.h5", rest, options, &encoded);
  write_table_rows(dir / "parts.h5", first, options);
  expect_stored_digests(dir / "parts.h5", table, "two writers");

  // Chunks that split a block of the content digest get none; the values read as always.
  write_table(table, dir / "odd.h5", options_with(kDefault, 100'000));
  EXPECT_FALSE(Hdf5TableReader(dir / "odd.h5").stored_block_digests("income", 0, rows));
  expect_rows(table, read_table(dir / "odd.h5"), 0);
  EXPECT_EQ(content_digest(dir / "odd.h5"), content_digest(dir / "parts.h5"));
}

TEST(Hdf5Table, GivesNoStoredDigestsForAChunkRewrittenByAnotherTool) {
  TempDir dir;
  const std::int64_t rows = 3 * kDigestBlockRows;
  write_table(census_table(rows), dir / "t.h5", options_with(kDefault, kDigestBlockRows));
  const auto result = testing::run_process(
      {"/usr/bin/python3", "-c",
       "import sys, h5py\nwith h5py.File(sys.argv[1], 'r+') as f: f['variables']['income'][70000] = 1.5",
       (dir / "t.h5").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Hdf5TableReader reader(dir / "t.h5");
  EXPECT_FALSE(reader.stored_block_digests("income", 0, rows)) << "the rewritten chunk is checked";
  EXPECT_FALSE(reader.stored_block_digests("income", 69'000, 2));
  EXPECT_TRUE(reader.stored_block_digests("income", 2 * kDigestBlockRows, 10)) << "only the rows asked for";
  EXPECT_TRUE(reader.stored_block_digests("sex", 0, rows));
}

TEST(Hdf5Table, CopiesVariablesItDoesNotHoldFromTheUnchangedInput) {
  TempDir dir;
  const std::int64_t rows = 2 * kDigestBlockRows + 500;
  const Table table = census_table(rows);
  const Hdf5WriteOptions plain = options_with(kDefault, kDigestBlockRows);
  write_table(table, dir / "input.h5", plain);
  const FileStamp stamp = read_summary(dir / "input.h5").stamp;

  // The table holds person_id and income only; the other variables come from the input, and so do
  // the stored chunks of income, held and unchanged, with their stored digests.
  const Table held = read_table(dir / "input.h5", {{"person_id", "income"}, 0, -1, true});
  Hdf5WriteOptions options = plain;
  options.unchanged = UnchangedVariables{dir / "input.h5", stamp, {"income"}, {}};
  const std::vector<std::string> names = table.names();
  for (std::size_t v = 0; v < names.size(); ++v)
    if (names[v] != "person_id" && names[v] != "income") {
      options.unchanged->names.push_back(names[v]);
      options.unchanged->not_held.push_back({v, table.columns()[v].info()});
    }
  EXPECT_EQ(written_variables(held, options).size(), names.size());
  write_table(held, dir / "output.h5", options);
  expect_rows(table, read_table(dir / "output.h5"), 0);
  EXPECT_EQ(content_digest(dir / "output.h5"), content_digest(dir / "input.h5"));
  expect_stored_digests(dir / "output.h5", table, "copied");

  // Several writers copy their own rows.
  create_table_file(dir / "parts.h5", written_variables(held, options), rows, options);
  write_table_rows(dir / "parts.h5", slice_rows(held, kDigestBlockRows, rows - kDigestBlockRows), options);
  write_table_rows(dir / "parts.h5", slice_rows(held, 0, kDigestBlockRows), options);
  expect_rows(table, read_table(dir / "parts.h5"), 0);
  expect_stored_digests(dir / "parts.h5", table, "copied by two writers");

  // An input changed since it was read cannot give what the table lacks: an error, and no output.
  options.unchanged->stamp.modified_ns += 1;
  const std::string message = error_message<IoError>([&] { write_table(held, dir / "changed.h5", options); });
  EXPECT_NE(message.find("cannot copy variable"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "input.h5").string()), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir / "changed.h5"));
}

TEST(Hdf5Table, EncodesTheValuesWhenTheStoredChunksCannotBeCopied) {
  TempDir dir;
  write_table(census_table(1000), dir / "input.h5", options_with(kDefault, 64));
  const FileStamp stamp = read_summary(dir / "input.h5").stamp;
  const Table changed = with_changed_values(1000, "income");
  const auto written_income = [&](const Hdf5WriteOptions& options) {
    write_table(changed, dir / "output.h5", options);
    return read_table(dir / "output.h5", {{"income"}, 0, -1, true}).require("income").values()[999];
  };
  Hdf5WriteOptions options = options_with(kDefault, 64);
  options.unchanged = UnchangedVariables{dir / "input.h5", stamp, {"sex"}};
  EXPECT_EQ(written_income(options), -1.0) << "a variable not declared unchanged";
  options.unchanged->names = {"income"};
  EXPECT_EQ(written_income(options_with(kDefault, 128)), -1.0) << "no unchanged variables";
  Hdf5WriteOptions other_chunks = options_with(kDefault, 128);
  other_chunks.unchanged = options.unchanged;
  EXPECT_EQ(written_income(other_chunks), -1.0) << "another chunk size";
  Hdf5WriteOptions other_filters = options_with(Hdf5Filters{true, 5}, 64);
  other_filters.unchanged = options.unchanged;
  EXPECT_EQ(written_income(other_filters), -1.0) << "another deflate level";
  Hdf5WriteOptions other_stamp = options;
  other_stamp.unchanged->stamp.modified_ns += 1;
  EXPECT_EQ(written_income(other_stamp), -1.0) << "a file changed since it was read";
  Hdf5WriteOptions missing_file = options;
  missing_file.unchanged->path = dir / "nosuch.h5";
  EXPECT_EQ(written_income(missing_file), -1.0) << "a file that is gone";
  EXPECT_NE(written_income(options), -1.0) << "the copy itself";
}

TEST(Hdf5Table, CopiesChunksEncodedByHdf5ItselfWhenStoredAlike) {
  // valid.h5 (h5py, 8-row chunks) stores region, age_group and weight with shuffle and deflate level
  // 1, as the output does; income with deflate 6 alone, district unfiltered, person_id contiguously.
  TempDir dir;
  const Table input = read_table(bad_input("valid.h5"));
  Table changed = read_table(bad_input("valid.h5"));
  for (Column& column : changed.mutable_columns()) {
    if (column.type() == VariableType::kContinuous)
      for (double& value : column.mutable_values()) value = -1.0;
    if (column.type() == VariableType::kCategorical)
      for (std::int32_t& code : column.mutable_codes()) code = 0;
  }
  Hdf5WriteOptions options = options_with(kDefault, 8);
  options.unchanged =
      UnchangedVariables{bad_input("valid.h5"), read_summary(bad_input("valid.h5")).stamp, changed.names()};
  write_table(changed, dir / "output.h5", options);
  const Table written = read_table(dir / "output.h5");
  EXPECT_EQ(written.require("weight").values()[19], input.require("weight").values()[19]);
  EXPECT_EQ(written.require("region").codes()[4], kMissingCode);
  EXPECT_EQ(written.require("age_group").codes()[9], kMissingCode);
  EXPECT_EQ(written.require("income").values()[19], -1.0);
  EXPECT_EQ(written.require("district").codes()[19], 0);
}

// ---- reproducibility and digests ----------------------------------------------------------------

TEST(Hdf5Table, EqualContentGivesByteIdenticalFiles) {
  TempDir dir;
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  const Table table = census_table(3000);
  for (const Hdf5Filters& filters : {kDefault, kNone}) {
    write_table(table, dir / "a.h5", {filters, 256, make_provenance("sdc import x", "d1"), {}, {}, {}, {}});
    // Object time stamps have a resolution of one second: a second apart they would differ.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    write_table(table, dir / "b.h5", {filters, 256, make_provenance("sdc import x", "d1"), {}, {}, {}, {}});
    const std::string a = testing::read_text(dir / "a.h5");
    EXPECT_GT(a.size(), 1000U);
    EXPECT_TRUE(a == testing::read_text(dir / "b.h5")) << "files differ with filters " << to_string(filters);
  }
  EXPECT_EQ(read_summary(dir / "a.h5").provenance.created_utc, "2023-11-14T22:13:20Z");
  ::unsetenv("SOURCE_DATE_EPOCH");
}

TEST(Hdf5Table, ContentDigestIgnoresChunkingFiltersAndRunDescribingProvenance) {
  TempDir dir;
  const Table table = census_table(500);
  Hdf5WriteOptions first = options_with(kDefault, 7);
  Hdf5WriteOptions second = options_with(kNone, 1000);
  second.provenance.command = "another command line";
  second.provenance.created_utc = "2030-12-31T23:59:59Z";
  write_table(table, dir / "a.h5", first);
  write_table(table, dir / "b.h5", second);
  write_table(table, dir / "c.h5", options_with(Hdf5Filters{false, 9}, 33));
  const std::string digest = content_digest(dir / "a.h5");
  EXPECT_EQ(digest.size(), 64U);
  EXPECT_EQ(digest, content_digest(dir / "b.h5"));
  EXPECT_EQ(digest, content_digest(dir / "c.h5"));
  EXPECT_NE(testing::read_text(dir / "a.h5"), testing::read_text(dir / "b.h5"));
}

TEST(Hdf5Table, ContentDigestChangesWithAValueALabelANameARoleOrTheInput) {
  TempDir dir;
  const Hdf5WriteOptions options = options_with(kDefault, 64);
  write_table(census_table(500), dir / "base.h5", options);
  const std::string base = content_digest(dir / "base.h5");

  Table value = census_table(500);
  value.mutable_columns()[4].mutable_values()[321] += 0.01;
  Table label = census_table(500);
  label.mutable_columns()[3].info().levels[1] = "Male";
  Table name = census_table(500);
  name.mutable_columns()[5].info().name = "weight2";
  Table role = census_table(500);
  role.mutable_columns()[3].info().role = VariableRole::kSensitive;
  Table missing = census_table(500);
  missing.mutable_columns()[1].mutable_codes()[0] = kMissingCode;
  Hdf5WriteOptions other_input = options;
  other_input.provenance.input_digest = "def456";

  write_table(value, dir / "value.h5", options);
  write_table(label, dir / "label.h5", options);
  write_table(name, dir / "name.h5", options);
  write_table(role, dir / "role.h5", options);
  write_table(missing, dir / "missing.h5", options);
  write_table(census_table(500), dir / "input.h5", other_input);
  for (const char* file : {"value.h5", "label.h5", "name.h5", "role.h5", "missing.h5", "input.h5"})
    EXPECT_NE(content_digest(dir / file), base) << file;
}

// ---- permissions and failures -------------------------------------------------------------------

TEST(Hdf5Table, CreatesOwnerOnlyOutputsUnlessAskedOtherwise) {
  TempDir dir;
  write_table(census_table(10), dir / "private.h5", options_with(kDefault));
  EXPECT_EQ(file_mode(dir / "private.h5"), 0600U);
  Hdf5WriteOptions shared = options_with(kDefault);
  shared.permissions = parse_permissions("0640");
  write_table(census_table(10), dir / "shared.h5", shared);
  EXPECT_EQ(file_mode(dir / "shared.h5"), 0640U);
}

TEST(Hdf5Table, AFailedWriteLeavesNothingBehind) {
  TempDir dir;
  const std::string missing_dir =
      error_message<IoError>([&] { write_table(census_table(10), dir / "nosuch" / "t.h5", options_with(kDefault)); });
  EXPECT_NE(missing_dir.find((dir / "nosuch" / "t.h5").string()), std::string::npos) << missing_dir;

  testing::write_text(dir / "file", "x");
  EXPECT_NE(
      error_message<IoError>([&] { write_table(census_table(10), dir / "file" / "t.h5", options_with(kDefault)); }),
      "no exception");

  Table repeated("memory", 2);
  repeated.add_column(Column::categorical(info("sex", VariableRole::kKey, {"f", "f"}), {0, 1}));
  const std::string labels =
      error_message<InvalidInput>([&] { write_table(repeated, dir / "t.h5", options_with(kDefault)); });
  EXPECT_NE(labels.find("variable 'sex'"), std::string::npos) << labels;
  EXPECT_NE(labels.find("not distinct"), std::string::npos) << labels;

  Table nul("memory", 1);
  nul.add_column(Column::categorical(info("sex", VariableRole::kKey, {std::string("a\0b", 3)}), {0}));
  EXPECT_NE(error_message<InvalidInput>([&] { write_table(nul, dir / "t.h5", options_with(kDefault)); }).find("NUL"),
            std::string::npos);

  EXPECT_NE(error_message<UsageError>([&] { write_table(census_table(3), dir / "t.h5", options_with(kDefault, 0)); }),
            "no exception");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"file"});
}

/// Limits the size of files this process writes (as a full disk would), for one scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);  // fail the write() instead of killing us
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = nullptr;
};

TEST(Hdf5Table, AWriteThatFailsHalfwayLeavesNothingBehind) {
  const Table table = census_table(200'000);
  for (const Hdf5Filters& filters : {kNone, kDefault}) {
    TempDir dir;
    std::string message;
    {
      const FileSizeLimit limit(16 * 1024);
      message = error_message<IoError>([&] { write_table(table, dir / "t.h5", options_with(filters, 1000)); });
    }
    EXPECT_NE(message.find((dir / "t.h5").string() + ": cannot write"), std::string::npos) << message;
    EXPECT_NE(message.find("File too large"), std::string::npos) << message;
    EXPECT_TRUE(dir.entries().empty()) << to_string(filters);
  }
}

TEST(Hdf5Table, WritesValuesAsGivenAndValidatesThemOnRead) {
  TempDir dir;
  Table table = census_table(40);
  table.mutable_columns()[5].mutable_values()[17] = -1.0;
  write_table(table, dir / "t.h5", options_with(kDefault, 8));
  const std::string message = error_message<InvalidInput>([&] { read_table(dir / "t.h5"); });
  EXPECT_NE(message.find((dir / "t.h5").string() + ": variable 'weight', row id 17: negative weight"),
            std::string::npos)
      << message;
  // Row ids stay global in a range read; validation can be switched off.
  const std::string ranged = error_message<InvalidInput>([&] { read_table(dir / "t.h5", {{"weight"}, 16, 4, true}); });
  EXPECT_NE(ranged.find("row id 17"), std::string::npos) << ranged;
  EXPECT_EQ(read_table(dir / "t.h5", {{}, 0, -1, false}).require("weight").values()[17], -1.0);
}

TEST(Hdf5Table, NamesTheFileForAMissingVariableOrRowRange) {
  TempDir dir;
  write_table(census_table(10), dir / "t.h5", options_with(kDefault));
  EXPECT_EQ(error_message<InvalidInput>([&] { read_table(dir / "t.h5", {{"nosuch"}}); }),
            (dir / "t.h5").string() + ": variable 'nosuch' not found");
  EXPECT_NE(error_message<InvalidInput>([&] {
              read_table(dir / "t.h5", {{}, 5, 6, true});
            }).find("outside the file's 10 rows"),
            std::string::npos);
  EXPECT_NE(error_message<InvalidInput>([&] { read_table(dir / "t.h5", {{}, -1, 2, true}); }), "no exception");
}

TEST(Hdf5Table, ReportsMissingAndUnreadableInputsAsIoErrors) {
  TempDir dir;
  const auto missing = dir / "nosuch.h5";
  const std::string message = error_message<IoError>([&] { read_table(missing); });
  EXPECT_NE(message.find(missing.string()), std::string::npos) << message;
  EXPECT_NE(error_message<IoError>([&] { read_summary(dir.path()); }).find("directory"), std::string::npos);
  EXPECT_NE(error_message<IoError>([&] { content_digest(missing); }), "no exception");
}

TEST(Hdf5Table, ReportsAnInputWithoutReadPermissionAsAnIoError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  TempDir dir;
  write_table(census_table(3), dir / "locked.h5", options_with(kDefault));
  ::chmod((dir / "locked.h5").c_str(), 0);
  const std::string denied = error_message<IoError>([&] { read_table(dir / "locked.h5"); });
  EXPECT_NE(denied.find("Permission denied"), std::string::npos) << denied;
}

// ---- malformed inputs (tests/data/bad_input, made by make_bad_hdf5.py) -----------------------------

struct BadInput {
  std::string file;
  std::vector<std::string> fragments;  ///< each must appear in the message
};

class ABadHdf5Input : public ::testing::TestWithParam<BadInput> {};

TEST_P(ABadHdf5Input, IsRejectedAsInvalidInputNamingFileVariableAndRow) {
  const auto path = bad_input(GetParam().file);
  const std::string message = error_message<InvalidInput>([&] { read_table(path); });
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0U) << message;
  for (const std::string& fragment : GetParam().fragments)
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Files, ABadHdf5Input,
    ::testing::Values(BadInput{"truncated.h5", {"truncated"}}, BadInput{"not_hdf5.h5", {"not an HDF5 file"}},
                      BadInput{"unequal_length.h5", {"variable 'income'", "columns of unequal length"}},
                      BadInput{"wrong_type.h5", {"variable 'age_group'", "32-bit signed integers", "continuous"}},
                      BadInput{"nan_weight.h5", {"variable 'weight', row id 7: missing weight"}},
                      BadInput{"negative_weight.h5", {"variable 'weight', row id 11: negative weight"}},
                      BadInput{"code_outside_levels.h5",
                               {"variable 'age_group', row id 13: code outside its 3 levels"}},
                      BadInput{"unknown_version.h5", {"format version 2 is not supported"}},
                      BadInput{"damaged_chunk.h5", {"variable 'weight'", "row ids 8..15", "damaged chunk"}}),
    [](const auto& param) {
      std::string name = param.param.file.substr(0, param.param.file.find('.'));
      std::erase(name, '_');
      return name;
    });

TEST(Hdf5Table, ChecksMetadataInTheSummaryAndValuesOnlyOnRead) {
  // Value errors need a full read; metadata errors show in the summary already.
  EXPECT_NO_THROW(read_summary(bad_input("nan_weight.h5")));
  EXPECT_NO_THROW(read_summary(bad_input("code_outside_levels.h5")));
  EXPECT_THROW(read_summary(bad_input("unequal_length.h5")), InvalidInput);
  EXPECT_THROW(read_summary(bad_input("wrong_type.h5")), InvalidInput);
  EXPECT_THROW(read_summary(bad_input("unknown_version.h5")), InvalidInput);
  EXPECT_THROW(content_digest(bad_input("truncated.h5")), InvalidInput);
}

TEST(Hdf5Table, ReadsOnlyTheChunksThatOverlapTheRequestedRows) {
  // Chunk 1 of 'weight' (rows 8..15, chunks of 8 rows) does not decompress; rows outside it read.
  const auto path = bad_input("damaged_chunk.h5");
  EXPECT_EQ(read_table(path, {{"weight"}, 0, 8, true}).require("weight").values()[7], 10.0 + 0.25 * 7);
  EXPECT_EQ(read_table(path, {{"weight"}, 16, 4, true}).require("weight").values()[0], 10.0 + 0.25 * 16);
  EXPECT_NE(error_message<InvalidInput>([&] {
              read_table(path, {{"weight"}, 7, 2, true});
            }).find("damaged chunk"),
            std::string::npos);
}

TEST(Hdf5Table, ReadsATableWrittenByH5pyWithItsOwnFiltersAndLayouts) {
  // valid.h5 mixes contiguous, chunked, deflate-only and shuffle+deflate datasets with a partial last
  // chunk, all encoded by HDF5's own filters (make_bad_hdf5.py).
  const Table table = read_table(bad_input("valid.h5"));
  ASSERT_EQ(table.names(),
            (std::vector<std::string>{"person_id", "region", "district", "age_group", "income", "weight"}));
  EXPECT_EQ(table.row_count(), 20);
  EXPECT_EQ(table.require("region").info().levels, (std::vector<std::string>{"North", "South", "Zürich"}));
  EXPECT_EQ(table.require("district").info().geography_level, 2);
  for (std::size_t i = 0; i < 20; ++i) {
    const double row = static_cast<double>(i);
    EXPECT_EQ(table.require("person_id").ids()[i], 1000 + static_cast<std::int64_t>(i));
    EXPECT_EQ(table.require("region").codes()[i], i == 4 ? -1 : static_cast<std::int32_t>(i % 3));
    EXPECT_EQ(table.require("district").codes()[i], static_cast<std::int32_t>(i % 6));
    EXPECT_EQ(table.require("age_group").codes()[i], i == 2 || i == 9 ? -1 : static_cast<std::int32_t>(i % 3));
    const double income = table.require("income").values()[i];
    if (i == 3 || i == 10 || i == 17)
      EXPECT_TRUE(std::isnan(income));
    else
      EXPECT_EQ(income, 1000.0 + 250.5 * row);
    EXPECT_EQ(table.require("weight").values()[i], 10.0 + 0.25 * row);
  }
  const Table middle = read_table(bad_input("valid.h5"), {{"weight", "person_id"}, 6, 11, true});
  EXPECT_EQ(middle.require("weight").values()[0], 10.0 + 0.25 * 6);
  EXPECT_EQ(middle.require("person_id").ids()[10], 1016);
}

TEST(Hdf5Table, H5pyReadsWhatSdcEngineWrites) {
  TempDir dir;
  const Table table = census_table(1000);
  write_table(table, dir / "t.h5", options_with(kDefault, 64));
  const std::string script = R"(
import json, math, sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    v = f["variables"]
    out = {"format": f.attrs["sdc_format"], "version": int(f.attrs["sdc_format_version"]),
           "rows": int(f.attrs["row_count"]), "order": list(v.keys()),
           "filters": [v["income"].compression, bool(v["income"].shuffle), v["income"].compression_opts],
           "region_levels": [str(x) for x in v["region"].attrs["levels"]],
           "geography_level": int(v["district"].attrs["geography_level"]),
           "role": v["weight"].attrs["role"], "type": v["weight"].attrs["type"],
           "missing_code": int(v["sex"].attrs["missing_code"]),
           "ids": [int(x) for x in v["person_id"][995:1000]],
           "sex": [int(x) for x in v["sex"][:12]],
           "income_nan": [i for i, x in enumerate(v["income"][:]) if math.isnan(x)][:3],
           "income_1": float(v["income"][1]), "weight_sum": float(v["weight"][:].sum())}
print(json.dumps(out))
)";
  const auto result = testing::run_process({"/usr/bin/python3", "-c", script, (dir / "t.h5").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["format"], "sdc-engine table");
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["rows"], 1000);
  // h5py lists by name unless the group tracks creation order, which is the format's column order.
  EXPECT_EQ(json["order"].get<std::vector<std::string>>(), table.names());
  EXPECT_EQ(json["filters"], nlohmann::json::parse(R"(["gzip", true, 1])"));
  EXPECT_EQ(json["region_levels"].get<std::vector<std::string>>(), table.require("region").info().levels);
  EXPECT_EQ(json["geography_level"], 2);
  EXPECT_EQ(json["role"], "weight");
  EXPECT_EQ(json["type"], "continuous");
  EXPECT_EQ(json["missing_code"], -1);
  EXPECT_EQ(json["ids"], nlohmann::json::parse("[5000000995, 5000000996, 5000000997, 5000000998, 5000000999]"));
  const auto codes = table.require("sex").codes();
  EXPECT_EQ(json["sex"].get<std::vector<int>>(), std::vector<int>(codes.begin(), codes.begin() + 12));
  EXPECT_EQ(json["income_nan"], nlohmann::json::parse("[5, 18, 31]"));
  EXPECT_EQ(json["income_1"].get<double>(), table.require("income").values()[1]);
  double sum = 0.0;
  for (double w : table.require("weight").values()) sum += w;
  EXPECT_NEAR(json["weight_sum"].get<double>(), sum, 1e-9 * sum);
}

TEST(Hdf5Table, H5dumpDecodesTheChunksWrittenOutsideHdf5) {
  TempDir dir;
  Table table("memory", 10);
  table.add_column(Column::id(info("person_id", VariableRole::kIdentifier), {7, 6, 5, 4, 3, 2, 1, 0, -1, -2}));
  write_table(table, dir / "t.h5", options_with(kDefault, 4));
  const auto result = testing::run_process({"h5dump", "-d", "/variables/person_id", "-p", (dir / "t.h5").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("SHUFFLE"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("DEFLATE { LEVEL 1 }"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("7, 6, 5, 4, 3, 2, 1, 0, -1, -2"), std::string::npos) << result.out;
}

// ---- filters and the chunk codec ----------------------------------------------------------------

TEST(Hdf5Filters, ParsesTheDocumentedSpellings) {
  EXPECT_EQ(to_string(parse_filters("none")), "none");
  EXPECT_EQ(to_string(parse_filters("default")), "shuffle,deflate=1");
  EXPECT_EQ(to_string(parse_filters("shuffle")), "shuffle");
  EXPECT_EQ(to_string(parse_filters("deflate=9")), "deflate=9");
  EXPECT_EQ(to_string(parse_filters("shuffle,deflate=4")), "shuffle,deflate=4");
  EXPECT_EQ(to_string(parse_filters("deflate=4,shuffle")), "shuffle,deflate=4");
  EXPECT_EQ(to_string(Hdf5Filters{}), "shuffle,deflate=1");
  for (const char* bad : {"", "gzip", "deflate", "deflate=", "deflate=0", "deflate=10", "deflate=1x", "shuffle,shuffle",
                          "none,shuffle", "shuffle,", ",deflate=1"}) {
    const std::string message = error_message<UsageError>([&] { parse_filters(bad); });
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << bad << ": " << message;
  }
}

TEST(ChunkCodec, ShuffleGroupsBytesOfEqualSignificanceAndUnshuffleUndoesIt) {
  const std::vector<std::uint32_t> values{0x04030201U, 0x08070605U, 0x0c0b0a09U};
  std::vector<std::byte> shuffled(12), back(12);
  shuffle_bytes(std::as_bytes(std::span(values)), 4, shuffled);
  EXPECT_EQ(std::to_integer<int>(shuffled[0]), 0x01);
  EXPECT_EQ(std::to_integer<int>(shuffled[1]), 0x05);
  EXPECT_EQ(std::to_integer<int>(shuffled[3]), 0x02);
  EXPECT_EQ(std::to_integer<int>(shuffled[11]), 0x0c);
  unshuffle_bytes(shuffled, 4, back);
  EXPECT_EQ(std::memcmp(back.data(), values.data(), 12), 0);
}

// The shuffle's definition as a byte loop, independent of the codec's vector and scalar paths.
std::vector<std::byte> reference_shuffle(const std::vector<std::byte>& in, std::size_t element_size) {
  std::vector<std::byte> out = in;  // bytes past the last whole element stay where they are
  const std::size_t n = in.size() / element_size;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < element_size; ++j) out[j * n + i] = in[i * element_size + j];
  return out;
}

std::vector<std::byte> reference_unshuffle(const std::vector<std::byte>& in, std::size_t element_size) {
  std::vector<std::byte> out = in;
  const std::size_t n = in.size() / element_size;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < element_size; ++j) out[i * element_size + j] = in[j * n + i];
  return out;
}

std::vector<std::byte> random_bytes(std::size_t size, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(size);
  for (auto& byte : bytes) byte = static_cast<std::byte>(rng() & 0xffU);
  return bytes;
}

/// The offset of the first byte that differs, or the size when none does: a failure names one byte
/// instead of printing a megabyte.
std::size_t first_difference(const std::vector<std::byte>& got, const std::vector<std::byte>& want) {
  if (got.size() != want.size()) return std::min(got.size(), want.size());
  return static_cast<std::size_t>(std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
}

// Lengths below, at and just past one vector block of 16 elements, a ragged length and a full chunk,
// each with no, one and element_size - 1 trailing bytes.
struct ShuffleCase {
  std::size_t element_size;
  std::size_t elements;
  std::size_t trailing_bytes;
};

std::vector<ShuffleCase> shuffle_cases() {
  constexpr std::array<std::size_t, 2> kElementSizes{4, 8};
  constexpr std::array<std::size_t, 8> kElementCounts{0, 1, 15, 16, 17, 31, 1000, 131072};
  std::vector<ShuffleCase> cases;
  for (const std::size_t element_size : kElementSizes)
    for (const std::size_t elements : kElementCounts)
      for (const std::size_t trailing_bytes : {std::size_t{0}, std::size_t{1}, element_size - 1})
        cases.push_back({element_size, elements, trailing_bytes});
  return cases;
}

TEST(ChunkCodec, ShuffleAndUnshuffleMatchTheByteLoopForEveryLength) {
  std::uint32_t seed = 1;
  for (const ShuffleCase& c : shuffle_cases()) {
    SCOPED_TRACE(::testing::Message() << "element_size " << c.element_size << ", " << c.elements << " elements, "
                                      << c.trailing_bytes << " trailing bytes");
    const auto in = random_bytes(c.elements * c.element_size + c.trailing_bytes, seed++);
    std::vector<std::byte> out(in.size(), std::byte{0xee});
    shuffle_bytes(in, c.element_size, out);
    EXPECT_EQ(first_difference(out, reference_shuffle(in, c.element_size)), in.size()) << "shuffle_bytes";
    std::fill(out.begin(), out.end(), std::byte{0xee});
    unshuffle_bytes(in, c.element_size, out);
    EXPECT_EQ(first_difference(out, reference_unshuffle(in, c.element_size)), in.size()) << "unshuffle_bytes";
  }
}

TEST(ChunkCodec, UnshuffleRestoresWhatShuffleMoved) {
  std::uint32_t seed = 1000;
  for (const ShuffleCase& c : shuffle_cases()) {
    SCOPED_TRACE(::testing::Message() << "element_size " << c.element_size << ", " << c.elements << " elements, "
                                      << c.trailing_bytes << " trailing bytes");
    const auto in = random_bytes(c.elements * c.element_size + c.trailing_bytes, seed++);
    std::vector<std::byte> shuffled(in.size()), back(in.size());
    shuffle_bytes(in, c.element_size, shuffled);
    unshuffle_bytes(shuffled, c.element_size, back);
    EXPECT_EQ(first_difference(back, in), in.size()) << "unshuffle_bytes(shuffle_bytes(x))";
    unshuffle_bytes(in, c.element_size, shuffled);
    shuffle_bytes(shuffled, c.element_size, back);
    EXPECT_EQ(first_difference(back, in), in.size()) << "shuffle_bytes(unshuffle_bytes(x))";
  }
}

TEST(ChunkCodec, RoundTripsPadsEdgeChunksAndRejectsDamagedStreams) {
  const ChunkFormat format{8, 8 * 100, true, 1};
  ChunkEncoder encoder(format);
  ChunkDecoder decoder(format);
  std::vector<double> values(60);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 1.5 * static_cast<double>(i);
  std::vector<std::byte> stored;
  encoder.encode(std::as_bytes(std::span(values)), stored);
  std::vector<double> decoded(100, -1.0);
  ASSERT_TRUE(decoder.decode(stored, true, true, std::as_writable_bytes(std::span(decoded))));
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(decoded[i], i < 60 ? values[i] : 0.0) << i;
  stored[stored.size() / 2] ^= std::byte{0x5a};
  stored.resize(stored.size() - 3);
  EXPECT_FALSE(decoder.decode(stored, true, true, std::as_writable_bytes(std::span(decoded))));
  EXPECT_FALSE(decoder.decode(std::vector<std::byte>(10), false, false, std::as_writable_bytes(std::span(decoded))));
}

}  // namespace
}  // namespace sdc::io
