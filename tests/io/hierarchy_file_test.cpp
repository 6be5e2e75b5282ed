#include "io/hierarchy_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using testing::shared_data;
using testing::TempDir;

std::filesystem::path write(const TempDir& dir, const std::string& name, const std::string& text) {
  const auto path = dir.path() / name;
  std::ofstream(path) << text;
  return path;
}

std::string message_of(const std::filesystem::path& path) {
  try {
    (void)load_hierarchy(path);
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return "";
}

TEST(AHierarchyFile, ReadsTheHeaderDialectAndArxsOwn) {
  const TempDir dir;
  const auto header = write(dir, "sex.csv", "level_0,level_1\nMale,*\nFemale,*\n");
  const recoding::HierarchyRows rows = read_hierarchy_file(header);
  ASSERT_EQ(rows.rows.size(), 2U);
  EXPECT_EQ(rows.rows[1], (std::vector<std::string>{"Female", "*"}));
  EXPECT_EQ(rows.lines, (std::vector<std::int64_t>{2, 3}));

  // ARX: no header, ';' between values, commas inside them; blank lines skipped; CRLF line ends.
  const auto arx = write(dir, "arx.csv", "1,5;low;*\r\n\r\n7;high;*\r\n");
  const recoding::GeneralizationHierarchy hierarchy = load_hierarchy(arx);
  EXPECT_EQ(hierarchy.height(), 2);
  EXPECT_EQ(hierarchy.leaf_index("1,5"), 0);
  EXPECT_EQ(hierarchy.leaf_index("7"), 1);
  EXPECT_EQ(hierarchy.source(), arx.string());
}

TEST(AHierarchyFile, NamesTheFileAndLineOfEveryFault) {
  const TempDir dir;
  std::string message = message_of(write(dir, "ragged.csv", "level_0,level_1,level_2\na,x,*\nb,x\n"));
  EXPECT_NE(message.find("ragged.csv, line 3: 2 values where the header names 3"), std::string::npos) << message;
  message = message_of(write(dir, "header.csv", "level_0,level_2\na,*\n"));
  EXPECT_NE(message.find("header.csv, line 1: header field 2 is 'level_2', expected 'level_1'"), std::string::npos)
      << message;
  message = message_of(write(dir, "short.csv", "level_0,level_1,level_2\na,*\n"));
  EXPECT_NE(message.find("short.csv, line 2: 2 values where the header names 3"), std::string::npos) << message;
  message = message_of(write(dir, "empty_value.csv", "a;;*\n"));
  EXPECT_NE(message.find("empty_value.csv, line 1: the value at level 1 is empty"), std::string::npos) << message;
  message = message_of(write(dir, "no_rows.csv", "level_0,level_1\n"));
  EXPECT_NE(message.find("no_rows.csv: the hierarchy has no rows"), std::string::npos) << message;
  message = message_of(write(dir, "crossed.csv", "a;x;*\nb;y;*\nc;x;T\n"));
  EXPECT_NE(message.find("crossed.csv, line 3: the value 'x' at level 1 has the parent 'T' here but '*' at "),
            std::string::npos)
      << message;
  message = message_of(write(dir, "quote.csv", "a;\"x;*\n"));
  EXPECT_NE(message.find("quote.csv: line 1"), std::string::npos) << message;
  EXPECT_THROW((void)load_hierarchy(dir.path() / "absent.csv"), IoError);
}

// The nine ARX hierarchies of the shared adult file: every value of the data is a leaf, and the
// heights are those of ARX's k-anonymity tests (recoding.md §8: 12 960 nodes for the nine keys).
TEST(AHierarchyFile, ReadsTheSharedAdultHierarchies) {
  std::int64_t nodes = 1;
  for (const char* name : {"sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                           "occupation", "salary-class"}) {
    const auto path = shared_data(std::string("adult_hierarchy_") + name + ".csv");
    if (path.empty()) GTEST_SKIP() << "../shared/data is absent";
    SCOPED_TRACE(name);
    const recoding::GeneralizationHierarchy hierarchy = load_hierarchy(path);
    EXPECT_EQ(hierarchy.labels(hierarchy.height()).size(), 1U);  // one root
    nodes *= hierarchy.height() + 1;
  }
  EXPECT_EQ(nodes, 12960);
}

}  // namespace
}  // namespace sdc::io
