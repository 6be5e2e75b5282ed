// HDF5 inputs as a user meets them: `sdc info` on good and malformed files, and `sdc export` (the
// other reader of HDF5 files) on the same malformed files. Every malformed file must end the run with
// the documented exit code, a message naming the file (and the variable and row id where there is
// one), and no output or temporary file left behind.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kInvalidInput = 3;
constexpr int kIo = 5;

std::filesystem::path bad_input(const std::string& name) { return source_path("tests/data/bad_input/" + name); }

struct BadFile {
  std::string file;
  int exit_code = kInvalidInput;
  std::vector<std::string> fragments;  ///< besides the file's path, each must appear on stderr
};

// Names the case in test listings (CTest shows the parameter) instead of dumping its bytes.
void PrintTo(const BadFile& bad, std::ostream* out) { *out << bad.file; }

std::string test_name(const ::testing::TestParamInfo<BadFile>& param) {
  std::string name = param.param.file.substr(0, param.param.file.find('.'));
  std::erase(name, '_');
  return name;
}

const std::vector<BadFile> kBadFiles{
    {"truncated.h5", kInvalidInput, {"truncated"}},
    {"not_hdf5.h5", kInvalidInput, {"not an HDF5 file"}},
    {"unequal_length.h5", kInvalidInput, {"variable 'income'", "columns of unequal length"}},
    {"wrong_type.h5", kInvalidInput, {"variable 'age_group'", "type attribute says continuous"}},
    {"nan_weight.h5", kInvalidInput, {"variable 'weight', row id 7", "missing weight"}},
    {"negative_weight.h5", kInvalidInput, {"variable 'weight', row id 11", "negative weight"}},
    {"code_outside_levels.h5", kInvalidInput, {"variable 'age_group', row id 13", "outside its 3 levels"}},
    {"unknown_version.h5", kInvalidInput, {"format version 2"}},
    {"damaged_chunk.h5", kInvalidInput, {"variable 'weight'", "row ids 8..15", "damaged chunk"}},
};

void expect_failure(const ProcessResult& result, const BadFile& bad) {
  EXPECT_EQ(result.exit_code, bad.exit_code) << result.err;
  EXPECT_NE(result.err.find("sdc: error: " + bad_input(bad.file).string() + ": "), std::string::npos) << result.err;
  for (const std::string& fragment : bad.fragments)
    EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  // One message, in sdc's words: HDF5's own error stack stays silent.
  EXPECT_EQ(result.err.find("HDF5-DIAG"), std::string::npos) << result.err;
}

class AMalformedHdf5File : public ::testing::TestWithParam<BadFile> {};

TEST_P(AMalformedHdf5File, FailsInfoWithTheDocumentedExitCodeAndMessage) {
  TempDir dir;
  const auto result = run_sdc({"info", bad_input(GetParam().file).string(), "--json"});
  expect_failure(result, GetParam());
}

TEST_P(AMalformedHdf5File, FailsExportAndLeavesNoOutputOrTemporaryFile) {
  TempDir dir;
  const auto output = dir / "out.csv";
  const auto result = run_sdc({"export", bad_input(GetParam().file).string(), "--output", output.string()});
  expect_failure(result, GetParam());
  EXPECT_TRUE(dir.entries().empty());
}

INSTANTIATE_TEST_SUITE_P(BadInput, AMalformedHdf5File, ::testing::ValuesIn(kBadFiles), test_name);

TEST(AMissingVariable, FailsExportNamingFileAndVariableAndLeavesNothing) {
  TempDir dir;
  const auto input = bad_input("valid.h5");
  const auto result =
      run_sdc({"export", input.string(), "--variables", "nosuch", "--output", (dir / "out.csv").string()});
  EXPECT_EQ(result.exit_code, kInvalidInput) << result.err;
  EXPECT_NE(result.err.find(input.string() + ": variable 'nosuch' not found"), std::string::npos) << result.err;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AMissingInput, IsAnIoErrorNamingThePath) {
  TempDir dir;
  const auto missing = (dir / "nosuch.h5").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"info", missing}, {"export", missing, "--output", (dir / "out.csv").string()}}) {
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, kIo) << args[0] << ": " << result.err;
    EXPECT_NE(result.err.find(missing + ": cannot open input"), std::string::npos) << result.err;
    EXPECT_TRUE(dir.entries().empty()) << args[0];
  }
}

TEST(AnUnreadableInput, IsAnIoErrorNamingThePath) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const auto locked = dir / "locked.h5";
  std::filesystem::copy_file(bad_input("valid.h5"), locked);
  ::chmod(locked.c_str(), 0);
  std::vector<std::string> argv{sdc_executable().string(), "info", locked.string()};
  // root reads any file: drop to an unprivileged user for the run.
  if (::geteuid() == 0) argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  const auto result = run_process(argv);
  EXPECT_EQ(result.exit_code, kIo) << result.err;
  EXPECT_NE(result.err.find(locked.string() + ": cannot open input: Permission denied"), std::string::npos)
      << result.err;
}

// ---- sdc info on a good file --------------------------------------------------------------------

TEST(Info, DescribesEveryVariableWithRoleLevelsAndMissingCount) {
  const auto input = bad_input("valid.h5");
  const auto result = run_sdc({"info", input.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const char* expected : {"format version  1", "rows            20", "tool version    make_bad_hdf5.py",
                               "created (UTC)   2024-01-01T00:00:00Z", "variables (6):"})
    EXPECT_NE(result.out.find(expected), std::string::npos) << expected << "\n" << result.out;
  EXPECT_NE(result.out.find(input.string()), std::string::npos) << result.out;
  // name, type, role (geography level), levels, missing
  for (const char* row : {"person_id  id           identifier                -        0",
                          "region     categorical  geography (level 1)       3        1",
                          "district   categorical  geography (level 2)       6        0",
                          "age_group  categorical  key                       3        2",
                          "income     continuous   continuous                -        3",
                          "weight     continuous   weight                    -        0"})
    EXPECT_NE(result.out.find(row), std::string::npos) << row << "\n" << result.out;
  EXPECT_EQ(result.out.find("content digest"), std::string::npos);
}

TEST(Info, PrintsOneJsonObjectForScripts) {
  const auto input = bad_input("valid.h5");
  const auto result = run_sdc({"info", "--input", input.string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["path"], input.string());
  EXPECT_EQ(json["format_version"], 1);
  EXPECT_EQ(json["rows"], 20);
  EXPECT_EQ(json["provenance"]["tool_version"], "make_bad_hdf5.py");
  EXPECT_EQ(json["provenance"]["created_utc"], "2024-01-01T00:00:00Z");
  ASSERT_EQ(json["variables"].size(), 6U);
  const auto& region = json["variables"][1];
  EXPECT_EQ(region["name"], "region");
  EXPECT_EQ(region["type"], "categorical");
  EXPECT_EQ(region["role"], "geography");
  EXPECT_EQ(region["geography_level"], 1);
  EXPECT_EQ(region["levels"], 3);
  EXPECT_EQ(region["missing"], 1);
  EXPECT_TRUE(json["variables"][4]["levels"].is_null());
  EXPECT_EQ(json["variables"][4]["missing"], 3);
  EXPECT_FALSE(json.contains("content_digest"));
}

TEST(Info, AddsAContentDigestThatDependsOnContentOnly) {
  TempDir dir;
  const auto input = bad_input("valid.h5");
  std::filesystem::copy_file(input, dir / "copy.h5");
  const auto first = run_sdc({"info", input.string(), "--digest", "--json"});
  const auto copy = run_sdc({"info", (dir / "copy.h5").string(), "--digest", "--json"});
  const auto other = run_sdc({"info", bad_input("nan_weight.h5").string(), "--digest", "--json"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  const std::string digest = nlohmann::json::parse(first.out)["content_digest"];
  EXPECT_EQ(digest.size(), 64U);
  EXPECT_EQ(digest.find_first_not_of("0123456789abcdef"), std::string::npos) << digest;
  EXPECT_EQ(nlohmann::json::parse(copy.out)["content_digest"], digest);
  EXPECT_EQ(other.exit_code, kInvalidInput);  // info validates before it digests

  const auto text = run_sdc({"info", input.string(), "--digest"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("content digest  " + digest), std::string::npos) << text.out;
}

TEST(Info, NeedsAnInputFile) {
  const auto result = run_sdc({"info"});
  EXPECT_EQ(result.exit_code, 2);
}

}  // namespace
}  // namespace sdc::testing
