#include "io/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

std::string error_of(const std::filesystem::path& path) {
  try {
    InputFile file(path, "job file");
  } catch (const IoError& e) {
    return e.what();
  }
  return {};
}

TEST(InputFile, ReadsARegularFile) {
  TempDir dir;
  sdc::testing::write_text(dir / "job.yaml", "version: 1\n");
  EXPECT_EQ(read_input_file(dir / "job.yaml", "job file", 100), "version: 1\n");
  EXPECT_THROW(read_input_file(dir / "job.yaml", "job file", 4), InvalidInput);
}

TEST(InputFile, RefusesAFifoWithoutWaitingForAWriter) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string message = error_of(dir / "fifo");
  EXPECT_NE(message.find((dir / "fifo").string() + ": cannot open job file: it is a FIFO, not a regular file"),
            std::string::npos)
      << message;
}

TEST(InputFile, RefusesADirectoryAndADeviceAndNamesAMissingFile) {
  TempDir dir;
  EXPECT_NE(error_of(dir.path()).find("it is a directory"), std::string::npos);
  EXPECT_NE(error_of("/dev/null").find("it is a character device"), std::string::npos);
  EXPECT_NE(error_of(dir / "missing").find("No such file or directory"), std::string::npos);
}

}  // namespace
}  // namespace sdc::io
