#include "io/path_safety.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

PathUse reads(std::string flag, std::filesystem::path path, int stage = 0) {
  return {std::move(flag), std::move(path), PathAccess::kRead, stage};
}
PathUse writes(std::string flag, std::filesystem::path path, int stage = 0) {
  return {std::move(flag), std::move(path), PathAccess::kWrite, stage};
}

TEST(PathClashes, FindAWriteOfAnInputUnderAnotherSpellingOrThroughALink) {
  TempDir dir;
  sdc::testing::write_text(dir / "census.h5", "x");
  std::filesystem::create_symlink(dir / "census.h5", dir / "link.h5");
  std::filesystem::create_directory(dir / "sub");

  const auto clashes =
      path_clashes({reads("--input", dir / "census.h5"), writes("--report", dir / "sub" / ".." / "census.h5"),
                    writes("--log-file", dir / "link.h5")});
  ASSERT_EQ(clashes.size(), 3U);  // report and log are the input, and the same file as each other
  EXPECT_NE(clashes[0].find("--report '" + (dir / "sub" / ".." / "census.h5").string() + "' is the file of --input"),
            std::string::npos)
      << clashes[0];
  EXPECT_NE(clashes[0].find("a run never writes a file it reads"), std::string::npos);
}

TEST(PathClashes, FindTwoWritesOfOneFileNotYetThere) {
  TempDir dir;
  const auto clashes = path_clashes({writes("--output", dir / "out.h5"), writes("--report", dir / "." / "out.h5")});
  ASSERT_EQ(clashes.size(), 1U);
  EXPECT_NE(clashes[0].find("name the same file"), std::string::npos) << clashes[0];
  // In a directory that does not exist yet (a job's output directory), by the resolved path.
  EXPECT_EQ(path_clashes({writes("a", dir / "new" / "x.h5"), writes("b", dir / "new" / "sub" / ".." / "x.h5")}).size(),
            1U);
}

TEST(PathClashes, AllowReadingWhatAnEarlierStageWroteButNotWritingWhatAnEarlierStageRead) {
  TempDir dir;
  EXPECT_TRUE(
      path_clashes({writes("step 1 --output", dir / "a.h5", 1), reads("step 2 --input", dir / "a.h5", 2)}).empty());
  EXPECT_EQ(path_clashes({reads("step 1 --input", dir / "a.h5", 1), writes("step 2 --output", dir / "a.h5", 2)}).size(),
            1U);
  EXPECT_EQ(
      path_clashes({reads("step 2 --input", dir / "a.h5", 2), writes("report", dir / "a.h5", kWholeRunStage)}).size(),
      1U);
}

TEST(PathClashes, LeaveDistinctFilesAndRepeatedReadsAlone) {
  TempDir dir;
  sdc::testing::write_text(dir / "in.h5", "x");
  EXPECT_TRUE(path_clashes({reads("--input", dir / "in.h5"), reads("--external", dir / "in.h5"),
                            writes("--output", dir / "out.h5"), writes("--report", dir / "out.json")})
                  .empty());
}

TEST(CheckPathSafety, ThrowsAUsageErrorListingEveryClash) {
  TempDir dir;
  sdc::testing::write_text(dir / "in.h5", "x");
  try {
    check_path_safety(
        {reads("--input", dir / "in.h5"), writes("--output", dir / "in.h5"), writes("--report", dir / "in.h5")});
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--output"), std::string::npos) << message;
    EXPECT_NE(message.find("--report"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sdc::io
