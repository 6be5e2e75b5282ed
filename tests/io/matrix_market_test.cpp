#include "io/matrix_market.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/tables/constraint_matrix.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

std::string matrix_market_text(const CsrView& matrix) {
  std::ostringstream out;
  tables::write_matrix_market(out, matrix);
  return out.str();
}

/// A matrix with `entries` entries spread over rows x columns, in no particular pattern, with values
/// that need all 17 digits to read back.
CsrMatrix scattered_matrix(std::int64_t rows, std::int64_t columns, std::int64_t entries) {
  std::vector<MatrixEntry> list;
  for (std::int64_t i = 0; i < entries; ++i)
    list.push_back({(i * 7919) % rows, (i * 104729 + i / rows) % columns, 1.0 / static_cast<double>(i + 3)});
  return CsrMatrix::from_entries(rows, columns, list);
}

/// write_matrix_market's text with its entry lines in another order: sorted by `multiplier` × their
/// index modulo 2^64 (a bijection for an odd multiplier), after the banner and the size line.
std::string shuffled_text(const std::string& text, std::uint64_t multiplier) {
  std::istringstream in(text);
  std::string banner;
  std::string size;
  std::getline(in, banner);
  std::getline(in, size);
  std::vector<std::pair<std::uint64_t, std::string>> lines;
  for (std::string line; std::getline(in, line);) lines.emplace_back(lines.size() * multiplier, line);
  std::sort(lines.begin(), lines.end());
  std::string shuffled = banner + "\n" + size + "\n";
  for (const auto& line : lines) shuffled += line.second + "\n";
  return shuffled;
}

CsrMatrix read_text(const std::string& text, std::size_t chunk_bytes = kMatrixMarketChunkBytes) {
  std::istringstream in(text);
  return read_matrix_market(in, "text.mtx", chunk_bytes);
}

/// The message of the InvalidInput that reading `text` from a file throws; a test failure (and an
/// empty string) when it throws nothing or another type, or when the message does not name the file
/// and `line`.
std::string refusal(const std::string& text, std::int64_t line, std::size_t chunk_bytes = kMatrixMarketChunkBytes) {
  TempDir dir;
  const auto path = dir / "bad.mtx";
  sdc::testing::write_text(path, text);
  try {
    read_matrix_market(path, chunk_bytes);
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(path.string() + ": line " + std::to_string(line) + ": ", 0), 0U) << message;
    return message;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not InvalidInput: " << e.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr const char* kBanner = "%%MatrixMarket matrix coordinate real general\n";

TEST(MatrixMarket, ReadsBackAConstraintMatrixAsWritten) {
  const std::vector<tables::DimensionEquations> dimensions = {
      {"region", 7, {{0, {1, 2}}, {1, {3, 4}}, {2, {5, 6}}}},
      {"age", 5, {{0, {1, 2, 3, 4}}, {0, {1, 2}}}},
      {"sex", 3, {{0, {1, 2}}}},
  };
  const CsrMatrix matrix = tables::constraint_matrix(dimensions);
  ASSERT_GT(matrix.entry_count(), 100);
  TempDir dir;
  std::ostringstream streamed;
  tables::write_constraint_matrix_market(streamed, dimensions);
  sdc::testing::write_text(dir / "a.mtx", streamed.str());
  EXPECT_EQ(read_matrix_market(dir / "a.mtx"), matrix);
  EXPECT_EQ(read_text(matrix_market_text(matrix.view())), matrix);
}

TEST(MatrixMarket, ReadsValuesBitForBitWhateverTheOrderOfTheLinesAndTheChunkSize) {
  // About 3 MB of text: several parallel slices of a chunk.
  const CsrMatrix matrix = scattered_matrix(5000, 3000, 150000);
  const std::string text = matrix_market_text(matrix.view());
  ASSERT_GT(text.size(), std::size_t{3} << 20);
  EXPECT_EQ(read_text(text), matrix);
  const std::string shuffled = shuffled_text(text, 0x9E3779B97F4A7C15);
  EXPECT_EQ(read_text(shuffled), matrix);
  for (const std::size_t chunk : {std::size_t{64}, std::size_t{1000}, std::size_t{1} << 20})
    EXPECT_EQ(read_text(shuffled, chunk), matrix) << chunk;
}

TEST(MatrixMarket, GivesTheSameMatrixAndErrorOnOneThreadAsOnSeveral) {
  const CsrMatrix matrix = scattered_matrix(2000, 2000, 120000);
  const std::string shuffled = shuffled_text(matrix_market_text(matrix.view()), 0xD1B54A32D192ED03);
  const std::string repeated = shuffled + "1 1 1\n";  // one line too many
  std::vector<CsrMatrix> read;
  std::vector<std::string> errors;
  for (const std::size_t threads : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    read.push_back(read_text(shuffled));
    try {
      read_text(repeated);
    } catch (const InvalidInput& e) {
      errors.emplace_back(e.what());
    }
  }
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_EQ(read[0], matrix);
  EXPECT_EQ(read[1], matrix);
  EXPECT_EQ(read[2], matrix);
  EXPECT_EQ(errors[1], errors[0]);
  EXPECT_EQ(errors[2], errors[0]);
  const std::string extra_line = "line " + std::to_string(matrix.entry_count() + 3) + ": more entry lines than the " +
                                 std::to_string(matrix.entry_count());
  EXPECT_TRUE(contains(errors[0], extra_line)) << errors[0];
}

TEST(MatrixMarket, ReadsPatternAndIntegerFilesAndKeywordsInAnyCase) {
  const CsrMatrix expected = CsrMatrix::from_entries(3, 4, {{0, 1, 1.0}, {2, 0, 1.0}, {2, 3, 1.0}, {1, 2, 1.0}});
  EXPECT_EQ(read_text("%%MatrixMarket matrix coordinate pattern general\n3 4 4\n1 2\n3 1\n3 4\n2 3\n"), expected);
  EXPECT_EQ(read_text("%%matrixmarket MATRIX Coordinate Pattern GENERAL\n3 4 4\n1 2\n3 1\n3 4\n2 3\n"), expected);
  const CsrMatrix integers = CsrMatrix::from_entries(2, 2, {{0, 0, -7.0}, {1, 1, 12.0}});
  EXPECT_EQ(read_text("%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 -7\n2 2 +12\n"), integers);
}

TEST(MatrixMarket, MirrorsTheOffDiagonalEntriesOfASymmetricFile) {
  // Lower triangle, one entry given in the upper triangle, the diagonal once.
  const std::string text =
      "%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 2.5\n3 1 -1\n2 4 0.5\n4 4 1\n4 3 3\n";
  const CsrMatrix expected = CsrMatrix::from_entries(
      4, 4, {{0, 0, 2.5}, {2, 0, -1.0}, {0, 2, -1.0}, {1, 3, 0.5}, {3, 1, 0.5}, {3, 3, 1.0}, {3, 2, 3.0}, {2, 3, 3.0}});
  EXPECT_EQ(read_text(text), expected);
  const CsrMatrix pattern = read_text("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n");
  EXPECT_EQ(pattern, CsrMatrix::from_entries(3, 3, {{1, 0, 1.0}, {0, 1, 1.0}, {2, 2, 1.0}}));
}

TEST(MatrixMarket, SkipsCommentsAndBlankLinesAndTakesCarriageReturnsTabsAndNoFinalLineEnd) {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\r\n% a comment\r\n\r\n  % indented\r\n2\t3 3\r\n"
      "1 1 1.5\r\n\r\n% between\r\n2\t3\t-2e3\r\n1 3 .25";
  EXPECT_EQ(read_text(text), CsrMatrix::from_entries(2, 3, {{0, 0, 1.5}, {1, 2, -2000.0}, {0, 2, 0.25}}));
  EXPECT_EQ(read_text(std::string(kBanner) + "0 0 0\n"), CsrMatrix::from_entries(0, 0, {}));
  EXPECT_EQ(read_text(std::string(kBanner) + "3 2 0\n\n"), CsrMatrix::from_entries(3, 2, {}));
}

TEST(MatrixMarket, RefusesAMissingOrMalformedBannerOnLineOne) {
  EXPECT_TRUE(contains(refusal("", 1), "no Matrix Market banner"));
  EXPECT_TRUE(contains(refusal("2 2 1\n1 1 1\n", 1), "no Matrix Market banner"));
  EXPECT_TRUE(contains(refusal("\n%%MatrixMarket matrix coordinate real general\n", 1), "no Matrix Market banner"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1), "banner is incomplete"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket vector coordinate real general\n", 1), "field 2 (the object)"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix sparse real general\n", 1), "field 3 (the format)"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate double general\n", 1), "field 4 (the value type)"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real diagonal\n", 1), "field 5 (the symmetry)"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real general x\n", 1), "more than 5 fields"));
}

TEST(MatrixMarket, RefusesDenseComplexHermitianAndSkewSymmetricFilesSayingWhich) {
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1),
                       "not sparse coordinate: dense array format is not read"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1),
                       "complex matrices are not read"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1),
                       "hermitian matrices are not read"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real skew-symmetric\n1 1 0\n", 1),
                       "skew-symmetric matrices are not read"));
}

TEST(MatrixMarket, RefusesAMalformedSizeLine) {
  const std::string b = kBanner;
  EXPECT_TRUE(contains(refusal(b + "% c\n2 2\n", 3), "the size line has 2 fields"));
  EXPECT_TRUE(contains(refusal(b + "2 2 1 1\n", 2), "more than 3 fields"));
  EXPECT_TRUE(contains(refusal(b + "2 -2 1\n", 2), "field 2 of the size line (columns) is negative"));
  EXPECT_TRUE(contains(refusal(b + "2.0 2 1\n", 2), "field 1 of the size line (rows) is not a whole number"));
  EXPECT_TRUE(contains(refusal(b + "2 2 1x\n", 2), "field 3 of the size line (entries) is not a whole number"));
  EXPECT_TRUE(contains(refusal(b + "2 99999999999999999999 1\n", 2), "(columns) does not fit in 64 bits"));
  EXPECT_TRUE(contains(refusal(b + "2 3 7\n", 2), "more entries than the matrix has places"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", 2),
                       "a symmetric matrix must be square"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n", 2),
                       "more entries than the matrix has places"));
  EXPECT_TRUE(contains(refusal(b + "% only comments\n\n", 4), "the file ends before the size line"));
}

TEST(MatrixMarket, RefusesAMalformedEntryLineWithoutQuotingIt) {
  const std::string b = std::string(kBanner) + "3 4 3\n1 1 1\n";
  EXPECT_TRUE(contains(refusal(b + "2 3\n3 3 3\n", 4), "fewer fields than the 3 (row, column, value)"));
  EXPECT_TRUE(contains(refusal(b + "2 3 1 5\n3 3 3\n", 4), "more fields than the 3"));
  EXPECT_TRUE(contains(refusal(b + "2 x3 1\n3 3 3\n", 4), "the column index (field 2) is not a whole number"));
  EXPECT_TRUE(contains(refusal(b + "2.5 3 1\n3 3 3\n", 4), "the row index (field 1) is not a whole number"));
  const std::string garbage = refusal(b + "2 3 417.5secret\n3 3 3\n", 4);
  EXPECT_TRUE(contains(garbage, "the value (field 3) is not a number")) << garbage;
  EXPECT_FALSE(contains(garbage, "417")) << garbage;
  EXPECT_TRUE(contains(refusal(b + "2 3 inf\n3 3 3\n", 4), "the value (field 3) is not finite"));
  EXPECT_TRUE(contains(refusal(b + "2 3 nan\n3 3 3\n", 4), "the value (field 3) is not finite"));
  EXPECT_TRUE(contains(refusal(b + "2 3 1e999\n3 3 3\n", 4), "outside the range of a double"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate pattern general\n3 4 2\n1 1\n2 3 1\n", 4),
                       "more fields than the 2 (row, column)"));
  EXPECT_TRUE(contains(refusal("%%MatrixMarket matrix coordinate integer general\n3 4 2\n1 1 2\n2 3 1.5\n", 4),
                       "not a whole number (an integer file)"));
}

TEST(MatrixMarket, RefusesAnIndexOutsideTheMatrixNamingItAndTheSize) {
  const std::string b = std::string(kBanner) + "3 4 2\n% c\n1 1 1\n";
  EXPECT_TRUE(contains(refusal(b + "4 1 1\n", 5), "the row index (field 1) is outside 1 .. 3, the matrix's rows"));
  EXPECT_TRUE(contains(refusal(b + "0 1 1\n", 5), "the row index (field 1) is outside 1 .. 3"));
  EXPECT_TRUE(
      contains(refusal(b + "1 5 1\n", 5), "the column index (field 2) is outside 1 .. 4, the matrix's columns"));
  EXPECT_TRUE(contains(refusal(b + "1 -1 1\n", 5), "the column index (field 2) is outside 1 .. 4"));
  EXPECT_TRUE(contains(refusal(b + "1 99999999999999999999 1\n", 5), "the column index (field 2) is outside"));
}

TEST(MatrixMarket, RefusesARepeatedEntryNamingBothLines) {
  const std::string b = std::string(kBanner) + "3 3 4\n";
  EXPECT_TRUE(contains(refusal(b + "1 1 1\n2 2 1\n% c\n\n1 1 5\n3 3 1\n", 7), "repeats the row and column of line 3"));
  // Out of row order, so the counting sort moves the entries before the repeat shows.
  EXPECT_TRUE(contains(refusal(b + "3 3 1\n2 2 1\n3 1 1\n3 3 2\n", 6), "repeats the row and column of line 3"));
  // Two repeats: the one whose repeating line comes first is reported.
  EXPECT_TRUE(contains(refusal(std::string(kBanner) + "3 3 5\n3 2 1\n1 1 1\n1 1 1\n2 2 1\n3 2 1\n", 5),
                       "repeats the row and column of line 4"));
  // A symmetric file giving an entry in both triangles.
  const std::string both = refusal("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n3 3 1\n1 2 1\n", 5);
  EXPECT_TRUE(contains(both, "repeats the row and column of line 3 (a symmetric file")) << both;
}

TEST(MatrixMarket, RefusesFewerOrMoreEntryLinesThanTheSizeLineGives) {
  const std::string b = std::string(kBanner) + "3 3 3\n";
  EXPECT_TRUE(
      contains(refusal(b + "1 1 1\n2 2 1\n\n", 6), "the file ends after 2 entry lines; the size line (line 2)"));
  EXPECT_TRUE(contains(refusal(b + "1 1 1\n2 2 1\n3 3 1\n% c\n1 2 1\n", 7), "more entry lines than the 3"));
}

TEST(MatrixMarket, ReportsTheFirstProblemInTheFileAcrossChunksAndSlices) {
  const CsrMatrix matrix = scattered_matrix(3000, 3000, 200000);
  ASSERT_GT(matrix.entry_count(), 190000);
  std::string text = matrix_market_text(matrix.view());
  // Line 150000 and line 190000 (both entry lines, in different slices) broken.
  std::vector<std::size_t> line_starts{0};
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_starts.push_back(i + 1);
  text.insert(line_starts[190000 - 1], "x");
  text.insert(line_starts[150000 - 1], "0 ");
  for (const std::size_t chunk : {std::size_t{100}, std::size_t{1} << 16, kMatrixMarketChunkBytes})
    EXPECT_TRUE(contains(refusal(text, 150000, chunk), "more fields than the 3")) << chunk;
  EXPECT_TRUE(contains(refusal(std::string(kBanner) + "1 1 1\n1 1 " + std::string(200, '1') + "\n", 3, 100),
                       "the line is longer than 100 bytes"));
}

TEST(MatrixMarket, RefusesAFileThatCannotBeOpenedAsAnIoError) {
  TempDir dir;
  EXPECT_THROW(read_matrix_market(dir / "missing.mtx"), IoError);
  EXPECT_THROW(read_matrix_market(dir.path()), IoError);
}

}  // namespace
}  // namespace sdc::io
