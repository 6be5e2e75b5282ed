// `sdc import` and `sdc export` as a user runs them: malformed inputs (one file each in
// tests/data/bad_input) fail with exit code 3, a message naming the file, line and column but never
// the value, and nothing left behind; reference files survive import -> export byte for byte;
// schemas are printed, saved and reused; reports validate; threads do not change the result.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kInvalidInput = 3;
constexpr int kIo = 5;

std::string bad_input(const std::string& name) { return source_path("tests/data/bad_input/" + name).string(); }

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

void expect_lacks(const std::string& text, const std::string& part) {
  EXPECT_EQ(text.find(part), std::string::npos) << "'" << part << "' must not appear in: " << text;
}

// The CSV text of a file, decompressed when it is gzip.
std::string csv_text(const std::filesystem::path& path) {
  if (path.extension() != ".gz") return read_text(path);
  const auto result = run_process({"gzip", "-dc", path.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

std::string sha256_of(const std::filesystem::path& path) {
  const auto result = run_process({"sha256sum", path.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out.substr(0, 64);
}

// `sdc info FILE --digest --json`, or empty when `sdc info` cannot give it.
std::string content_digest(const std::filesystem::path& h5) {
  const auto result = run_sdc({"info", h5.string(), "--digest", "--json"});
  if (result.exit_code != 0) return {};
  return nlohmann::json::parse(result.out).value("content_digest", std::string());
}

void expect_valid_report(const std::filesystem::path& report) {
  ASSERT_TRUE(std::filesystem::exists(report)) << report;
  EXPECT_EQ(mode_of(report), 0600U);
  EXPECT_EQ(validate_report(report), "");
}

// ---- malformed inputs -----------------------------------------------------------------------------

struct BadCase {
  std::string file;
  std::vector<std::string> extra_args;
  std::string line;    // "line N"
  std::string column;  // column number and name
  std::string secret;  // the offending value, which must never be shown
};

// Names the case in test listings (CTest shows the parameter) instead of dumping its bytes.
void PrintTo(const BadCase& bad, std::ostream* out) { *out << bad.file; }

class ABadCsv : public ::testing::TestWithParam<BadCase> {};

TEST_P(ABadCsv, FailsNamingTheLineAndColumnButNotTheValueAndLeavesNothing) {
  const BadCase& bad = GetParam();
  TempDir dir;
  std::vector<std::string> args{"import",        bad_input(bad.file),
                                "--output",      (dir / "out.h5").string(),
                                "--report",      (dir / "report.json").string(),
                                "--save-schema", (dir / "schema.yaml").string()};
  args.insert(args.end(), bad.extra_args.begin(), bad.extra_args.end());
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, kInvalidInput) << result.err;
  expect_contains(result.err, bad_input(bad.file));
  expect_contains(result.err, bad.line);
  expect_contains(result.err, bad.column);
  expect_lacks(result.err, bad.secret);
  expect_lacks(result.out, bad.secret);
  EXPECT_TRUE(dir.entries().empty()) << "left behind: " << dir.entries().front();
}

INSTANTIATE_TEST_SUITE_P(
    BadInputFiles, ABadCsv,
    ::testing::Values(BadCase{"ragged_row.csv", {}, "line 4:", "column 4 'income'", "918273"},
                      BadCase{
                          "bad_number.csv", {"--type", "income=continuous"}, "line 3,", "column 3 'income'", "12x45"},
                      BadCase{"unterminated_quote.csv", {}, "line 3,", "column 2 'name'", "Jones-Unclosed"},
                      BadCase{"duplicate_header.csv", {}, "line 1,", "column 4", "7215"},
                      BadCase{"level_not_in_schema.csv",
                              {"--schema", bad_input("level_not_in_schema.yaml")},
                              "line 3,",
                              "column 2 'region'",
                              "Atlantis"}),
    [](const ::testing::TestParamInfo<BadCase>& test) {
      std::string name = test.param.file.substr(0, test.param.file.find('.'));
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(ASchemaWithAnUnknownKey, FailsNamingTheFileLineAndKey) {
  TempDir dir;
  write_text(dir / "data.csv", "hid,region,income\n1,north,100\n");
  const auto schema = bad_input("schema_unknown_key.yaml");
  const auto result =
      run_sdc({"import", (dir / "data.csv").string(), "--schema", schema, "--output", (dir / "out.h5").string()});
  EXPECT_EQ(result.exit_code, kInvalidInput) << result.err;
  expect_contains(result.err, schema + ": line 8");
  expect_contains(result.err, "'colour'");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"data.csv"}));
}

TEST(AnImport, RefusesAnUnwritableOutputWithTheIoExitCode) {
  TempDir dir;
  write_text(dir / "data.csv", "a,b\n1,2\n");
  const auto result = run_sdc({"import", (dir / "data.csv").string(), "--output", "/nonexistent-dir/x.h5"});
  EXPECT_EQ(result.exit_code, kIo) << result.err;
  expect_contains(result.err, "/nonexistent-dir/x.h5");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"data.csv"}));
}

TEST(AnImport, ReportsAMissingInputAsAnIoError) {
  TempDir dir;
  const auto result = run_sdc({"import", (dir / "absent.csv").string(), "--output", (dir / "out.h5").string()});
  EXPECT_EQ(result.exit_code, kIo) << result.err;
  expect_contains(result.err, (dir / "absent.csv").string());
  EXPECT_TRUE(dir.entries().empty());
}

TEST(AnImport, RejectsFlagMistakesWithTheUsageExitCode) {
  TempDir dir;
  const auto csv = (dir / "data.csv").string();
  write_text(csv, "a,b\n1,2\n");
  const auto out = (dir / "out.h5").string();
  const auto unknown = run_sdc({"import", csv, "-o", out, "--role", "key=nope"});
  EXPECT_EQ(unknown.exit_code, kUsage);
  expect_contains(unknown.err, "'nope'");
  EXPECT_EQ(run_sdc({"import", csv, "-o", out, "--role", "boss=a"}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"import", csv, "-o", out, "--type", "a=text"}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"import", csv, "-o", out, "--role", "weight=a", "--type", "a=id"}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"import", csv, "-o", out, "--delimiter", "\""}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"import", csv, "-o", out, "--filters", "gzip"}).exit_code, kUsage);
  EXPECT_EQ(run_sdc({"import", csv, "-o", csv}).exit_code, kUsage) << "the output must not replace the input";
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"data.csv"}));
}

// ---- round trips --------------------------------------------------------------------------------

TEST(ImportThenExport, GivesBackTheReferenceFilesByteForByte) {
  for (const char* name : {"testdata.csv", "francdat.csv", "CASCrefmicrodata.csv", "census_trs_100k.csv.gz"}) {
    const auto input = shared_data(name);
    if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
    SCOPED_TRACE(name);
    TempDir dir;
    const auto h5 = dir / "data.h5";
    const auto imported = run_sdc({"import", input.string(), "--output", h5.string()});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    const auto csv = dir / "back.csv";
    const auto exported = run_sdc({"export", h5.string(), "--output", csv.string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_TRUE(read_text(csv) == csv_text(input)) << "exported CSV differs from " << input;
    EXPECT_EQ(mode_of(h5), 0600U);
    EXPECT_EQ(mode_of(csv), 0600U);
  }
}

TEST(ImportThenExport, KeepsTheCensusThroughGzipOnBothSidesWithRoles) {
  const auto input = shared_data("census_trs_100k.csv.gz");
  if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
  TempDir dir;
  const auto h5 = dir / "census.h5";
  const auto imported =
      run_sdc({"import", input.string(), "-o", h5.string(), "--role", "geography=NUTS1,NUTS2,NUTS3,LAU2", "--role",
               "household=HID", "--role", "key=SEX,AGE.H,EDU", "--report", (dir / "import.json").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const auto gz = dir / "back.csv.gz";
  ASSERT_EQ(run_sdc({"export", h5.string(), "-o", gz.string()}).exit_code, 0);
  EXPECT_EQ(read_text(gz).substr(0, 2), "\x1f\x8b") << "a .gz output is gzip";
  EXPECT_TRUE(csv_text(gz) == csv_text(input));
  const auto report = nlohmann::json::parse(read_text(dir / "import.json"));
  const auto& results = report["steps"][0]["results"];
  EXPECT_EQ(results["rows"], 303214);
  EXPECT_EQ(results["variables"], 23);
  EXPECT_EQ(results["id"], 1);
  EXPECT_EQ(results["gzip"], true);
}

TEST(ImportThenExport, WritesCodesOrChosenVariables) {
  TempDir dir;
  const auto csv = dir / "data.csv";
  write_text(csv, "region,hid,income,note\nsouth,1,10.5,\"a,b\"\nnorth,1,,x\nsouth,2,3,\n");
  const auto h5 = dir / "data.h5";
  ASSERT_EQ(run_sdc({"import", csv.string(), "-o", h5.string(), "--role", "household=hid"}).exit_code, 0);
  const auto codes = dir / "codes.csv";
  ASSERT_EQ(run_sdc({"export", h5.string(), "-o", codes.string(), "--codes"}).exit_code, 0);
  EXPECT_EQ(read_text(codes), "region,hid,income,note\n1,1,10.5,0\n0,1,,1\n1,2,3,\n");
  const auto some = dir / "some.csv";
  const auto result = run_sdc({"export", "--variables", "note,region", h5.string(), "-o", some.string(), "--delimiter",
                               ";", "--report", (dir / "export.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(read_text(some), "note;region\na,b;south\nx;north\n;south\n");
  expect_valid_report(dir / "export.json");
  const auto report = nlohmann::json::parse(read_text(dir / "export.json"));
  EXPECT_EQ(report["steps"][0]["method"], "export");
  EXPECT_EQ(report["steps"][0]["results"]["variables"], 2);
  EXPECT_EQ(report["outputs"][0]["kind"], "csv");
  const std::string digest = content_digest(h5);
  if (!digest.empty()) {
    EXPECT_EQ(report["inputs"][0]["digest"], digest);
  }
  EXPECT_EQ(run_sdc({"export", h5.string(), "-o", (dir / "x.csv").string(), "--variables", "nope"}).exit_code,
            kInvalidInput);
  EXPECT_EQ(run_sdc({"export", h5.string(), "-o", h5.string()}).exit_code, kUsage);
}

// ---- schemas and reports ------------------------------------------------------------------------

TEST(AnImport, PrintsTheInferredSchemaSavesItAndReadsItBack) {
  TempDir dir;
  const auto csv = dir / "people.csv";
  write_text(csv, "age,income,town\n34,2100.5,Springfield\n31,,Shelbyville\n34,99.25,Springfield\n");
  const auto saved = dir / "people.yaml";
  const auto first = run_sdc({"import", csv.string(), "-o", (dir / "a.h5").string(), "--save-schema", saved.string()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  expect_contains(first.out, "format_version: 1");
  expect_contains(first.out, "name: \"income\"");
  expect_contains(first.out, "type: continuous");
  expect_contains(first.out, "# 2 levels in the data");
  expect_lacks(first.out, "Springfield");  // the printed schema shows level counts, not labels
  expect_lacks(first.err, "Springfield");  // nor does the log
  EXPECT_EQ(mode_of(saved), 0600U);
  expect_contains(read_text(saved), "levels: [\"Shelbyville\", \"Springfield\"]");

  const auto second = run_sdc({"import", csv.string(), "-o", (dir / "b.h5").string(), "--schema", saved.string()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_TRUE(second.out.empty()) << "a given schema is not printed again";
  ASSERT_EQ(run_sdc({"export", (dir / "a.h5").string(), "-o", (dir / "a.csv").string()}).exit_code, 0);
  ASSERT_EQ(run_sdc({"export", (dir / "b.h5").string(), "-o", (dir / "b.csv").string()}).exit_code, 0);
  EXPECT_EQ(read_text(dir / "a.csv"), read_text(csv));
  EXPECT_EQ(read_text(dir / "b.csv"), read_text(csv));
}

TEST(AnImport, WritesAValidReportWithTheFileDigest) {
  TempDir dir;
  const auto csv = source_path("tests/data/households.csv");
  const auto report_path = dir / "import.json";
  const auto result =
      run_sdc({"import", csv.string(), "-o", (dir / "h.h5").string(), "--role", "geography=nuts1,nuts2,nuts3", "--role",
               "household=hid", "--role", "weight=weight", "--role", "key=sex,age,marstat,education", "--role",
               "continuous=income", "--report", report_path.string(), "--save-schema", (dir / "h.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_valid_report(report_path);
  const auto report = nlohmann::json::parse(read_text(report_path));
  EXPECT_EQ(report["inputs"][0]["digest"], sha256_of(csv));
  EXPECT_EQ(report["inputs"][0]["path"], csv.string());
  const auto& step = report["steps"][0];
  EXPECT_EQ(step["method"], "import");
  EXPECT_EQ(step["parameters"]["role"].size(), 5U);
  EXPECT_EQ(step["results"]["variables"], 10);
  EXPECT_EQ(step["results"]["id"], 1);
  EXPECT_EQ(step["results"]["continuous"], 2);
  EXPECT_EQ(step["results"]["categorical"], 7);
  EXPECT_EQ(step["results"]["bytes_read"], std::filesystem::file_size(csv));
  ASSERT_EQ(report["outputs"].size(), 2U);
  EXPECT_EQ(report["outputs"][0]["kind"], "data");
  EXPECT_EQ(report["outputs"][1]["kind"], "schema");
  expect_contains(result.err, "import:");  // the one-line summary
}

// ---- determinism ----------------------------------------------------------------------------------

TEST(AnImport, GivesTheSameFileForOneAndTwoThreads) {
  const auto input = shared_data("census_trs_100k.csv.gz");
  if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
  TempDir dir;
  for (const char* threads : {"1", "2"}) {
    const auto result = run_sdc(
        {"--threads", threads, "import", input.string(), "-o", (dir / (std::string("t") + threads + ".h5")).string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    ASSERT_EQ(run_sdc({"export", (dir / (std::string("t") + threads + ".h5")).string(), "-o",
                       (dir / (std::string("t") + threads + ".csv")).string()})
                  .exit_code,
              0);
  }
  EXPECT_TRUE(read_text(dir / "t1.csv") == read_text(dir / "t2.csv"));
  const std::string one = content_digest(dir / "t1.h5");
  if (one.empty()) GTEST_SKIP() << "sdc info --digest is not available yet";
  EXPECT_EQ(one, content_digest(dir / "t2.h5"));
}

}  // namespace
}  // namespace sdc::testing
