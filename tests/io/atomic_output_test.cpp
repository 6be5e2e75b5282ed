#include "io/atomic_output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0);
  return info.st_mode & 07777;
}

TEST(ParsePermissions, AcceptsOctalModesThatKeepTheOwnersReadAndWrite) {
  EXPECT_EQ(parse_permissions("600").mode, 0600U);
  EXPECT_EQ(parse_permissions("0640").mode, 0640U);
  EXPECT_EQ(to_string(parse_permissions("644")), "0644");
  EXPECT_THROW(parse_permissions("0400"), UsageError);  // owner could not rewrite it
  EXPECT_THROW(parse_permissions("0700"), UsageError);  // execute bit
  EXPECT_THROW(parse_permissions("rw"), UsageError);
  EXPECT_THROW(parse_permissions(""), UsageError);
}

TEST(AnAtomicOutput, AppearsUnderItsFinalNameOnlyOnCommit) {
  TempDir dir;
  const auto final_path = dir / "out.bin";
  {
    AtomicOutput output(final_path, FilePermissions{});
    std::ofstream(output.temp_path()) << "content";
    EXPECT_FALSE(std::filesystem::exists(final_path));
    output.commit();
  }
  EXPECT_EQ(sdc::testing::read_text(final_path), "content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(AnAtomicOutput, LeavesNothingWhenNotCommitted) {
  TempDir dir;
  {
    AtomicOutput output(dir / "out.bin", FilePermissions{});
    std::ofstream(output.temp_path()) << "half";
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AnAtomicOutput, IsOwnerOnlyByDefaultWhateverTheUmask) {
  TempDir dir;
  const mode_t old_umask = ::umask(0);
  write_file_atomically(dir / "default", "x", FilePermissions{});
  write_file_atomically(dir / "shared", "x", parse_permissions("0640"));
  ::umask(0077);
  write_file_atomically(dir / "asked", "x", parse_permissions("0644"));
  ::umask(old_umask);
  EXPECT_EQ(mode_of(dir / "default"), 0600U);
  EXPECT_EQ(mode_of(dir / "shared"), 0640U);
  EXPECT_EQ(mode_of(dir / "asked"), 0644U);
}

TEST(AnAtomicOutput, ReplacesAnExistingFileWhole) {
  TempDir dir;
  write_file_atomically(dir / "f", "old content", FilePermissions{});
  write_file_atomically(dir / "f", "new", FilePermissions{});
  EXPECT_EQ(sdc::testing::read_text(dir / "f"), "new");
}

TEST(AnAtomicOutput, NamesThePathWhenTheDirectoryIsMissing) {
  TempDir dir;
  try {
    AtomicOutput output(dir / "no-such-dir" / "out.h5", FilePermissions{});
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-dir/out.h5"), std::string::npos) << e.what();
  }
}

TEST(CommittedOutputs, AreRemovedWhenTheRunFailsUnlessKept) {
  TempDir dir;
  keep_committed_outputs();
  write_file_atomically(dir / "kept.json", "{}", FilePermissions{});
  keep_committed_outputs();
  create_output_directories(dir / "made", FilePermissions{});
  write_file_atomically(dir / "made" / "data.h5", "x", FilePermissions{});
  write_file_atomically(dir / "report.json", "{}", FilePermissions{});
  EXPECT_EQ(committed_outputs(), (std::vector<std::filesystem::path>{dir / "made" / "data.h5", dir / "report.json"}));
  remove_committed_outputs();
  EXPECT_TRUE(std::filesystem::exists(dir / "kept.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "report.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "made")) << "a directory the run made, empty again, goes too";
  EXPECT_TRUE(committed_outputs().empty());
}

TEST(CreateOutputDirectories, GivesEachNewDirectoryThePermissionsWithSearchBits) {
  TempDir dir;
  const mode_t old_mask = ::umask(077);  // the umask does not decide the mode
  create_output_directories(dir / "a" / "b", FilePermissions{0640});
  ::umask(old_mask);
  EXPECT_EQ(mode_of(dir / "a"), 0750U);
  EXPECT_EQ(mode_of(dir / "a" / "b"), 0750U);
  keep_committed_outputs();
}

}  // namespace
}  // namespace sdc::io
