#include "io/seed.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "kernels/core/error.h"
#include "tests/support/sdc_process.h"

namespace sdc::io {
namespace {

using sdc::testing::TempDir;

TEST(ParseSeed, ReadsDecimalAndHexWithSurroundingWhitespace) {
  EXPECT_EQ(parse_seed(" 12345\n", "f").value, 12345U);
  EXPECT_EQ(parse_seed("0xff", "f").value, 255U);
  EXPECT_EQ(parse_seed("18446744073709551615", "f").value, 18446744073709551615ULL);
  EXPECT_THROW(parse_seed("18446744073709551616", "f"), InvalidInput);  // 2^64
  EXPECT_THROW(parse_seed("-1", "f"), InvalidInput);
  EXPECT_THROW(parse_seed("12 34", "f"), InvalidInput);
  EXPECT_THROW(parse_seed("", "f"), InvalidInput);
}

TEST(ASeedFingerprint, IsAStableSha256ThatDiffersBetweenSeeds) {
  const Seed a{42};
  EXPECT_EQ(a.fingerprint().size(), 64U);
  EXPECT_EQ(a.fingerprint(), Seed{42}.fingerprint());
  EXPECT_NE(a.fingerprint(), Seed{43}.fingerprint());
  EXPECT_EQ(a.fingerprint().find("42"), std::string::npos);
}

TEST(LoadSeed, ReadsAnOwnerOnlyFile) {
  TempDir dir;
  const auto path = dir / "seed";
  sdc::testing::write_text(path, "987654321\n");
  ::chmod(path.c_str(), 0600);
  EXPECT_EQ(load_seed(path)->value, 987654321U);
}

TEST(LoadSeed, RejectsAFileOthersCanRead) {
  TempDir dir;
  const auto path = dir / "seed";
  sdc::testing::write_text(path, "1\n");
  ::chmod(path.c_str(), 0644);
  try {
    load_seed(path);
    FAIL() << "expected InvalidInput";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("0644"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
  }
}

TEST(LoadSeed, FallsBackToTheEnvironmentAndThenToNone) {
  ::unsetenv(kSeedEnvironmentVariable);
  EXPECT_FALSE(load_seed(std::nullopt).has_value());
  ::setenv(kSeedEnvironmentVariable, "77", 1);
  EXPECT_EQ(load_seed(std::nullopt)->value, 77U);
  ::unsetenv(kSeedEnvironmentVariable);
  EXPECT_THROW(require_seed(std::nullopt, "swap"), UsageError);
}

TEST(WriteNewSeedFile, WritesAnOwnerOnlyFileThatLoadsBack) {
  TempDir dir;
  const auto path = dir / "seed";
  const Seed written = write_new_seed_file(path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600U);
  EXPECT_EQ(load_seed(path)->value, written.value);
  EXPECT_NE(write_new_seed_file(dir / "other").value, written.value);  // 2^-64 chance of a false failure
}

TEST(LoadSeed, MissingFileIsAnIoError) {
  TempDir dir;
  EXPECT_THROW(load_seed(dir / "absent"), IoError);
}

}  // namespace
}  // namespace sdc::io
