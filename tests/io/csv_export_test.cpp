// CSV export: quoting, shortest doubles, missing values, codes, variable selection, atomic and
// owner-only files, gzip, and import -> export giving back the very bytes of the reference files.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <zlib.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "io/csv.h"
#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::read_text;
using sdc::testing::shared_data;
using sdc::testing::TempDir;

Table sample_table() {
  Table table("sample", 4);
  VariableInfo label;
  label.name = "label";
  label.levels = {"plain", "a,b", "say \"hi\"", "two\nlines", "cr\rhere", " spaced "};
  table.add_column(Column::categorical(label, {1, 2, -1, 3}));
  VariableInfo value;
  value.name = "value";
  table.add_column(Column::continuous(value, {0.1, std::numeric_limits<double>::quiet_NaN(), -73000000.0, 1e21}));
  VariableInfo id;
  id.name = "id";
  table.add_column(Column::id(id, {-1, 0, 9223372036854775807, 42}));
  VariableInfo more;
  more.name = "more";
  more.levels = {"x", " spaced "};
  table.add_column(Column::categorical(more, {0, 1, 0, -1}));
  return table;
}

TEST(CsvExport, QuotesOnlyFieldsThatNeedIt) {
  EXPECT_EQ(format_csv(sample_table(), {}),
            "label,value,id,more\n"
            "\"a,b\",0.1,-1,x\n"
            "\"say \"\"hi\"\"\",,0, spaced \n"
            ",-73000000,9223372036854775807,x\n"
            "\"two\nlines\",1e+21,42,\n");
}

TEST(CsvExport, QuotesForTheDelimiterInUse) {
  CsvExportOptions options;
  options.delimiter = ';';
  options.variables = {"label", "id"};
  EXPECT_EQ(format_csv(sample_table(), options),
            "label;id\na,b;-1\n\"say \"\"hi\"\"\";0\n;9223372036854775807\n\"two\nlines\";42\n");
}

TEST(CsvExport, WritesCodesWhenAsked) {
  CsvExportOptions options;
  options.codes = true;
  options.variables = {"more", "label"};
  EXPECT_EQ(format_csv(sample_table(), options), "more,label\n0,1\n1,2\n0,\n,3\n");
}

TEST(CsvExport, RejectsUnknownAndRepeatedVariables) {
  CsvExportOptions options;
  options.variables = {"label", "nope"};
  EXPECT_THROW(format_csv(sample_table(), options), InvalidInput);
  options.variables = {"label", "label"};
  EXPECT_THROW(format_csv(sample_table(), options), UsageError);
}

TEST(CsvExport, WritesDoublesInTheShortestFormThatReadsBack) {
  EXPECT_EQ(format_csv_double(0.1), "0.1");
  EXPECT_EQ(format_csv_double(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(format_csv_double(2.0 / 3.0), "0.6666666666666666");
  EXPECT_EQ(format_csv_double(100.0 / 6.0), "16.666666666666668");
  EXPECT_EQ(format_csv_double(116258.5), "116258.5");
  EXPECT_EQ(format_csv_double(1e-300), "1e-300");
  EXPECT_EQ(format_csv_double(5e-324), "5e-324");
  EXPECT_EQ(format_csv_double(0.0001), "1e-04");
  // Integral values in plain digits, as the reference files write them.
  EXPECT_EQ(format_csv_double(73000000.0), "73000000");
  EXPECT_EQ(format_csv_double(100000.0), "100000");
  EXPECT_EQ(format_csv_double(0.0), "0");
  EXPECT_EQ(format_csv_double(-0.0), "-0");
  EXPECT_EQ(format_csv_double(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(format_csv_double(1e300), "1e+300");
  EXPECT_EQ(format_csv_double(std::numeric_limits<double>::max()), "1.7976931348623157e+308");

  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    std::uint64_t bits = rng();
    double value = 0.0;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) continue;
    if (i % 2 == 0) value = std::ldexp(static_cast<double>(rng() % 100000000), static_cast<int>(rng() % 40) - 20);
    const std::string text = format_csv_double(value);
    double back = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), back);
    ASSERT_TRUE(ec == std::errc() && end == text.data() + text.size()) << text;
    ASSERT_EQ(std::memcmp(&back, &value, sizeof value), 0) << text;
  }
}

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

std::string gunzip(const std::filesystem::path& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr);
  std::string out;
  char buffer[65536];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
  gzclose(file);
  return out;
}

TEST(CsvExport, WritesAnOwnerOnlyFileAtomically) {
  TempDir dir;
  const auto result = export_csv(sample_table(), dir / "out.csv", {});
  EXPECT_EQ(read_text(dir / "out.csv"), format_csv(sample_table(), {}));
  EXPECT_EQ(mode_of(dir / "out.csv"), 0600U);
  EXPECT_EQ(result.rows, 4);
  EXPECT_EQ(result.variables, 4U);
  EXPECT_EQ(result.file_bytes, result.text_bytes);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"out.csv"}));
  CsvExportOptions options;
  options.permissions = FilePermissions{0640};
  export_csv(sample_table(), dir / "shared.csv", options);
  EXPECT_EQ(mode_of(dir / "shared.csv"), 0640U);
}

TEST(CsvExport, FailsOnAMissingDirectoryLeavingNothing) {
  TempDir dir;
  try {
    export_csv(sample_table(), dir / "missing" / "out.csv", {});
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "missing" / "out.csv").string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

// Many rows, so that export formats and compresses several blocks.
Table big_table(std::int64_t rows) {
  std::string text = "a,b,c\n";
  std::mt19937_64 rng(3);
  for (std::int64_t i = 0; i < rows; ++i)
    text += std::to_string(rng() % 10) + "," + std::to_string(static_cast<double>(rng() % 1000000) / 8.0) + ",t" +
            std::to_string(rng() % 50) + "\n";
  return import_csv_text(text, "big.csv", {}).table;
}

TEST(CsvExport, CompressesForAGzName) {
  TempDir dir;
  const Table table = big_table(40000);
  const auto result = export_csv(table, dir / "out.csv.gz", {});
  EXPECT_TRUE(result.gzip);
  EXPECT_LT(result.file_bytes, result.text_bytes);
  const std::string text = gunzip(dir / "out.csv.gz");
  EXPECT_EQ(text, format_csv(table, {}));
  EXPECT_EQ(import_csv(dir / "out.csv.gz", {}).table.row_count(), 40000);
}

TEST(CsvExport, WritesTheSameBytesForAnyThreadCount) {
  TempDir dir;
  const Table table = big_table(50000);
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 1);
    export_csv(table, dir / "one.csv.gz", {});
  }
  {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
    export_csv(table, dir / "two.csv.gz", {});
  }
  EXPECT_EQ(read_text(dir / "one.csv.gz"), read_text(dir / "two.csv.gz"));
}

TEST(CsvRoundTrip, GivesBackTrickyTextByteForByte) {
  const std::string text =
      "g,x,t,n\n"
      "1,0.1,\"a,b\",-5\n"
      "2,,\"say \"\"hi\"\"\",007\n"
      ",-2.5e-07,\"two\nlines\",\n"
      "10,1e+21,plain,7\n"
      "2,123456789012,,7\n";
  CsvImportOptions options;
  options.chunk_bytes = 5;
  EXPECT_EQ(format_csv(import_csv_text(text, "t.csv", options).table, {}), text);
}

// The reference files follow the rules in ../shared/data/README.md: import then export must give
// back every byte.
TEST(CsvRoundTrip, GivesBackTheReferenceFilesByteForByte) {
  for (const char* name : {"testdata.csv", "francdat.csv", "CASCrefmicrodata.csv", "census_trs_100k.csv.gz",
                           "free1.csv", "Tarragona.csv", "EIA.csv", "adult.csv.gz"}) {
    const auto path = shared_data(name);
    if (path.empty()) GTEST_SKIP() << "../shared/data is absent";
    SCOPED_TRACE(name);
    const auto imported = import_csv(path, {});
    const std::string original = imported.gzip ? gunzip(path) : read_text(path);
    EXPECT_EQ(format_csv(imported.table, {}), original);
  }
}

}  // namespace
}  // namespace sdc::io
