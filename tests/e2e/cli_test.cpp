// The command-line grammar, exit codes, seeds, reports and output permissions, as a user sees them.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kIo = 5;

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(TheCommandLine, ListsEveryCommandInItsHelp) {
  const auto result = run_sdc({"--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"import", "export", "info", "generate"})
    EXPECT_NE(result.out.find(command), std::string::npos) << command;
}

TEST(TheCommandLine, HasHelpOnEveryCommand) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"import", "--help"},
                                                                                    {"export", "--help"},
                                                                                    {"info", "--help"},
                                                                                    {"generate", "--help"},
                                                                                    {"generate", "seed", "--help"}}) {
    const auto result = run_sdc(args);
    EXPECT_EQ(result.exit_code, 0) << args[0] << ": " << result.err;
    EXPECT_NE(result.out.find("--"), std::string::npos) << args[0];
  }
}

TEST(TheCommandLine, RejectsAnUnknownFlagWithTheUsageExitCode) {
  TempDir dir;
  const auto result = run_sdc({"generate", "seed", "--output", (dir / "seed").string(), "--no-such-flag"});
  EXPECT_EQ(result.exit_code, kUsage);
  EXPECT_NE(result.err.find("--no-such-flag"), std::string::npos) << result.err;
  EXPECT_TRUE(dir.entries().empty());
  // Also when the command's required flags are missing too: the unknown word is what is named.
  const auto info = run_sdc({"info", "--bogus"});
  EXPECT_EQ(info.exit_code, kUsage);
  EXPECT_NE(info.err.find("unknown option '--bogus' for 'sdc info'"), std::string::npos) << info.err;
}

TEST(TheCommandLine, RejectsAMissingCommandAndAnUnknownOne) {
  EXPECT_EQ(run_sdc({}).exit_code, kUsage);
  const auto unknown = run_sdc({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, kUsage);
  EXPECT_NE(unknown.err.find("frobnicate"), std::string::npos) << unknown.err;
}

TEST(TheCommandLine, RejectsBadGlobalOptionValues) {
  TempDir dir;
  const auto seed = (dir / "seed").string();
  EXPECT_EQ(run_sdc({"--permissions", "0777", "generate", "seed", "-o", seed}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"--log-level", "chatty", "generate", "seed", "-o", seed}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"--threads", "-1", "generate", "seed", "-o", seed}).exit_code, kUsage);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AnUnwritableOutputPath, IsAnIoErrorNamingThePathAndLeavesNothing) {
  TempDir dir;
  const auto target = dir / "missing-dir" / "seed";
  const auto result = run_sdc({"generate", "seed", "--output", target.string()});
  EXPECT_EQ(result.exit_code, kIo);
  EXPECT_NE(result.err.find(target.string()), std::string::npos) << result.err;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(GenerateSeed, WritesAnOwnerOnlySeedAndReportsOnlyItsFingerprint) {
  TempDir dir;
  const auto seed = dir / "seed";
  const auto report = dir / "report.json";
  const auto result = run_sdc({"--threads", "2", "generate", "seed", "-o", seed.string(), "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(mode_of(seed), 0600U);
  EXPECT_EQ(mode_of(report), 0600U);
  EXPECT_EQ(validate_report(report), "");

  const std::string seed_text = read_text(seed);
  const auto seed_value = seed_text.substr(0, seed_text.find('\n'));
  const std::string report_text = read_text(report);
  EXPECT_EQ(report_text.find(seed_value), std::string::npos) << "the report must not contain the seed";
  EXPECT_EQ(result.err.find(seed_value), std::string::npos) << "the log must not contain the seed";

  const auto json = nlohmann::json::parse(report_text);
  EXPECT_EQ(json["threads"], 2);
  EXPECT_EQ(json["seed_fingerprint"].get<std::string>().size(), 64U);
  EXPECT_EQ(json["steps"][0]["results"]["seed_fingerprint"], json["seed_fingerprint"]);
}

TEST(GenerateSeed, GivesADifferentFingerprintForEachSeed) {
  TempDir dir;
  ASSERT_EQ(run_sdc({"generate", "seed", "-o", (dir / "a").string(), "--report", (dir / "a.json").string()}).exit_code,
            0);
  ASSERT_EQ(run_sdc({"generate", "seed", "-o", (dir / "b").string(), "--report", (dir / "b.json").string()}).exit_code,
            0);
  const auto a = nlohmann::json::parse(read_text(dir / "a.json"));
  const auto b = nlohmann::json::parse(read_text(dir / "b.json"));
  EXPECT_NE(a["seed_fingerprint"], b["seed_fingerprint"]);
}

TEST(ThePermissionsOption, AppliesToReportsAndLogs) {
  TempDir dir;
  const auto report = dir / "report.json";
  const auto log = dir / "run.log";
  const auto result = run_sdc({"--permissions", "0640", "--log-file", log.string(), "generate", "seed", "-o",
                               (dir / "seed").string(), "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(mode_of(report), 0640U);
  EXPECT_EQ(mode_of(log), 0640U);
  EXPECT_EQ(mode_of(dir / "seed"), 0600U) << "a seed file stays owner-only whatever --permissions says";
}

TEST(ALogFile, IsOwnerOnlyByDefault) {
  TempDir dir;
  const auto log = dir / "run.log";
  ASSERT_EQ(run_sdc({"--log-file", log.string(), "generate", "seed", "-o", (dir / "seed").string()}).exit_code, 0);
  EXPECT_EQ(mode_of(log), 0600U);
  EXPECT_NE(read_text(log).find("wrote a new seed"), std::string::npos);
}

}  // namespace
}  // namespace sdc::testing
