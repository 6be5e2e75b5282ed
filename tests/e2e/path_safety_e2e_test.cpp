// No command can destroy an input: every path a run writes is compared with every path it reads and
// with the others it writes, by the file it names, before anything runs (io/path_safety.h); inputs
// are opened as regular files only; logs are never written through a link; arguments are strict;
// and a failed run leaves nothing behind. Each test is one adversarial case of docs/exit-codes.md.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kInvalidInput = 3;
constexpr int kInvalidJob = 4;
constexpr int kIoError = 5;

/// Persons in households, sorted by household: keys, a weight and a PRAM variable.
std::string persons_csv(int rows) {
  std::ostringstream csv;
  csv << "hid,region,sex,age,marstat,weight\n";
  for (int row = 0; row < rows; ++row)
    csv << 1 + row / 3 << ',' << row % 7 << ',' << 1 + row % 2 << ',' << (row * 37) % 90 << ',' << 1 + (row * 11) % 4
        << ',' << 10 + row % 13 << ".5\n";
  return csv.str();
}

std::string bad_input(const std::string& name) { return source_path("tests/data/bad_input/" + name).string(); }

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

class PathSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_ / "persons.csv", persons_csv(600));
    ASSERT_EQ(
        run_sdc({"import", csv_.string(), "-o", census_.string(), "--role", "household=hid", "--role", "weight=weight"})
            .exit_code,
        0);
    ASSERT_EQ(run_sdc({"generate", "seed", "--output", seed_.string()}).exit_code, 0);
    census_bytes_ = read_text(census_);
    seed_bytes_ = read_text(seed_);
  }

  /// The run failed with `code`, its message holds every one of `expected`, and the inputs are as
  /// they were.
  void expect_refused(const ProcessResult& result, int code, std::initializer_list<std::string> expected) {
    EXPECT_EQ(result.exit_code, code) << result.err;
    for (const auto& text : expected) EXPECT_NE(result.err.find(text), std::string::npos) << text << "\n" << result.err;
    EXPECT_EQ(read_text(census_), census_bytes_) << "the census changed";
    EXPECT_EQ(read_text(seed_), seed_bytes_) << "the seed changed";
  }

  std::vector<std::string> risk(const std::vector<std::string>& more) {
    std::vector<std::string> args{"risk", "--input", census_.string(), "--output", out_.string(), "--keys", "sex,age"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  /// sdc risk with keys sex and age and the weight of a bad-input CSV (sex,age,weight), imported first.
  ProcessResult weighted_risk(const std::string& csv) {
    const auto imported = dir_ / "weighted.h5";
    const auto result = run_sdc({"import", bad_input(csv), "-o", imported.string(), "--role", "weight=weight"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return run_sdc(
        {"risk", "--input", imported.string(), "--output", out_.string(), "--keys", "sex,age", "--weight", "weight"});
  }

  TempDir dir_;
  std::filesystem::path csv_ = dir_ / "persons.csv";
  std::filesystem::path census_ = dir_ / "census.h5";
  std::filesystem::path seed_ = dir_ / "census.seed";
  std::filesystem::path out_ = dir_ / "out.h5";
  std::string census_bytes_;
  std::string seed_bytes_;
};

// ---- 1. a report never overwrites what the run reads or writes ---------------------------------

TEST_F(PathSafety, RefusesAReportThatIsTheInput) {
  expect_refused(run_sdc(risk({"--report", census_.string()})), kUsage,
                 {"--report '" + census_.string() + "' is the file of --input", "a run never writes a file it reads"});
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(PathSafety, RefusesAReportThatIsTheInputUnderAnotherSpellingOrThroughALink) {
  std::filesystem::create_symlink(census_, dir_ / "link.json");
  expect_refused(run_sdc(risk({"--report", (dir_ / "link.json").string()})), kUsage, {"--report", "--input"});
  std::filesystem::create_directory(dir_ / "sub");
  expect_refused(run_sdc(risk({"--report", (dir_ / "sub" / ".." / "census.h5").string()})), kUsage, {"--report"});
}

TEST_F(PathSafety, RefusesAReportThatIsTheSeedFile) {
  expect_refused(run_sdc(risk({"--bootstrap", "10", "--seed-file", seed_.string(), "--report", seed_.string()})),
                 kUsage, {"--report '" + seed_.string() + "' is the file of --seed-file"});
}

TEST_F(PathSafety, RefusesAReportThatIsTheDataOutput) {
  expect_refused(run_sdc(risk({"--report", out_.string()})), kUsage,
                 {"--output '" + out_.string() + "' and --report '" + out_.string() + "' name the same file"});
}

TEST_F(PathSafety, RefusesAReportThatIsTheCsvOfAnImport) {
  const std::string before = read_text(csv_);
  const auto result = run_sdc({"import", csv_.string(), "-o", (dir_ / "again.h5").string(), "--report", csv_.string()});
  expect_refused(result, kUsage, {"--report", "is the file of --input"});
  EXPECT_EQ(read_text(csv_), before);
}

TEST_F(PathSafety, RefusesAReportThatIsAPramMatrixFile) {
  write_text(dir_ / "m.csv",
             "marstat,1,2,3,4\n1,0.7,0.1,0.1,0.1\n2,0.1,0.7,0.1,0.1\n3,0.1,0.1,0.7,0.1\n4,0.1,0.1,0.1,0.7\n");
  const std::string before = read_text(dir_ / "m.csv");
  const auto result = run_sdc({"pram", "-i", census_.string(), "-o", out_.string(), "--variables", "marstat",
                               "--matrix-file", "marstat=" + (dir_ / "m.csv").string(), "--seed-file", seed_.string(),
                               "--report", (dir_ / "m.csv").string()});
  expect_refused(result, kUsage, {"--report", "is the file of --matrix-file"});
  EXPECT_EQ(read_text(dir_ / "m.csv"), before);
}

TEST_F(PathSafety, RefusesAJobReportThatIsTheJobFileOrAStepsOutput) {
  write_text(dir_ / "job.yaml", "version: 1\ninput: " + census_.string() + "\noutput_dir: " + (dir_ / "out").string() +
                                    "\nsteps:\n  - method: risk\n    name: risk\n    keys: [sex, age]\n");
  const std::string job_text = read_text(dir_ / "job.yaml");
  expect_refused(run_sdc({"run", (dir_ / "job.yaml").string(), "--report", (dir_ / "job.yaml").string()}), kUsage,
                 {"the job's report", "is the file of the job file"});
  EXPECT_EQ(read_text(dir_ / "job.yaml"), job_text);
  expect_refused(run_sdc({"run", (dir_ / "job.yaml").string(), "--report", (dir_ / "out" / "risk.h5").string()}),
                 kUsage, {"step 1 (risk) --output", "the job's report", "name the same file"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "a job that fails its checks creates no directory";
}

// ---- 2. an output never overwrites the external file -------------------------------------------

TEST_F(PathSafety, RefusesAnOutputThatIsTheExternalFile) {
  ASSERT_EQ(std::filesystem::copy_file(census_, dir_ / "external.h5"), true);
  const std::string before = read_text(dir_ / "external.h5");
  const auto result = run_sdc({"risk", "--input", census_.string(), "--output", (dir_ / "external.h5").string(),
                               "--keys", "sex,age", "--external", (dir_ / "external.h5").string()});
  expect_refused(result, kUsage, {"--output '" + (dir_ / "external.h5").string() + "' is the file of --external"});
  EXPECT_EQ(read_text(dir_ / "external.h5"), before);
}

// ---- 3. logs: never an input, never through a link ------------------------------------------------

TEST_F(PathSafety, RefusesALogFileThatIsAnInput) {
  expect_refused(run_sdc({"--log-file", census_.string(), "risk", "--input", census_.string(), "--output",
                          out_.string(), "--keys", "sex,age"}),
                 kUsage, {"--log-file '" + census_.string() + "' is the file of --input"});
}

TEST_F(PathSafety, RefusesALogFileThatIsALinkAndLeavesItsTargetAlone) {
  write_text(dir_ / "target.txt", "precious\n");
  ::chmod((dir_ / "target.txt").c_str(), 0644);
  std::filesystem::create_symlink(dir_ / "target.txt", dir_ / "run.log");
  const auto result = run_sdc({"--log-file", (dir_ / "run.log").string(), "info", census_.string()});
  expect_refused(result, kUsage, {"--log-file '" + (dir_ / "run.log").string() + "' is a symbolic link"});
  EXPECT_EQ(read_text(dir_ / "target.txt"), "precious\n");
  EXPECT_EQ(mode_of(dir_ / "target.txt"), 0644U);
}

TEST_F(PathSafety, RefusesALogFileThatIsNotAnEarlierLogButAppendsToOne) {
  write_text(dir_ / "notes.txt", "my notes\n");
  expect_refused(run_sdc({"--log-file", (dir_ / "notes.txt").string(), "info", census_.string()}), kUsage,
                 {"already exists and is not a log of sdc"});
  EXPECT_EQ(read_text(dir_ / "notes.txt"), "my notes\n");

  std::vector<std::string> logged{"--log-file", (dir_ / "run.log").string()};
  for (const auto& arg : risk({})) logged.push_back(arg);
  ASSERT_EQ(run_sdc(logged).exit_code, 0);
  const std::string first = read_text(dir_ / "run.log");
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(mode_of(dir_ / "run.log"), 0600U);
  ASSERT_EQ(run_sdc(logged).exit_code, 0);
  EXPECT_GT(read_text(dir_ / "run.log").size(), first.size());
}

// ---- 5. duplicate variables and duplicate YAML keys ----------------------------------------------

TEST_F(PathSafety, RefusesAVariableGivenTwiceInAList) {
  expect_refused(
      run_sdc({"risk", "--input", census_.string(), "--output", out_.string(), "--keys", "sex,age,age", "--suda2"}),
      kUsage, {"--keys: variable 'age' is given twice"});
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(PathSafety, RefusesAKeyGivenTwiceInAJobWithBothLines) {
  expect_refused(run_sdc({"run", bad_input("job_key_given_twice.yaml"), "--input", census_.string(), "--output-dir",
                          (dir_ / "out").string()}),
                 kInvalidJob, {"line 6: step 1: key 'keys' is given twice (first on line 5)"});
}

// ---- 6. a FIFO in place of any input -------------------------------------------------------------

TEST_F(PathSafety, RefusesAFifoInPlaceOfEveryKindOfInputWithoutWaiting) {
  const auto fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto timed = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"timeout", "60", sdc_executable().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
  };
  const std::string not_regular = fifo.string() + ": cannot open";
  // data
  expect_refused(timed({"info", fifo.string()}), kIoError, {not_regular, "it is a FIFO"});
  // CSV
  expect_refused(timed({"import", fifo.string(), "-o", (dir_ / "x.h5").string()}), kIoError,
                 {not_regular, "it is a FIFO"});
  // schema
  expect_refused(timed({"import", csv_.string(), "-o", (dir_ / "x.h5").string(), "--schema", fifo.string()}), kIoError,
                 {not_regular + " schema", "it is a FIFO"});
  // job
  expect_refused(timed({"run", fifo.string()}), kIoError, {not_regular + " job file", "it is a FIFO"});
  // seed
  const auto seeded = timed(
      {"pram", "-i", census_.string(), "-o", out_.string(), "--variables", "marstat", "--seed-file", fifo.string()});
  expect_refused(seeded, kInvalidInput, {fifo.string() + ": seed file is not a regular file"});
}

// ---- 7. a failed report write leaves no data output -----------------------------------------------

TEST_F(PathSafety, FailsBeforeAnyWorkWhenTheReportCannotBeWrittenAndLeavesNoDataOutput) {
  std::filesystem::create_directory(dir_ / "report.json");  // the report cannot become a file
  const auto result = run_sdc(risk({"--report", (dir_ / "report.json").string()}));
  expect_refused(result, kIoError, {"report.json", "it is a directory"});
  EXPECT_FALSE(std::filesystem::exists(out_)) << "the data output stayed behind";

  const auto missing = run_sdc(risk({"--report", (dir_ / "no-such-dir" / "report.json").string()}));
  expect_refused(missing, kIoError, {"no-such-dir"});
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(PathSafety, FailsBeforeAnyStepWhenTheJobReportCannotBeWrittenAndLeavesNoStepOutput) {
  std::filesystem::create_directories(dir_ / "out" / "report.json");
  write_text(dir_ / "job.yaml", "version: 1\ninput: " + census_.string() + "\noutput_dir: " + (dir_ / "out").string() +
                                    "\nreport: " + (dir_ / "out" / "report.json").string() +
                                    "\nsteps:\n  - method: risk\n    name: risk\n    keys: [sex, age]\n");
  expect_refused(run_sdc({"run", (dir_ / "job.yaml").string()}), kIoError, {"report.json"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out" / "risk.h5"));
}

// ---- 8. distinct step outputs; a seed is never replaced silently ----------------------------------

TEST_F(PathSafety, RefusesTwoJobStepsWithTheSameOutput) {
  write_text(dir_ / "job.yaml", "version: 1\ninput: " + census_.string() +
                                    "\nsteps:\n  - method: risk\n    keys: [sex]\n"
                                    "    output: " +
                                    out_.string() +
                                    "\n  - method: risk\n    from: input\n    keys: [age]\n"
                                    "    output: " +
                                    out_.string() + "\n");
  expect_refused(run_sdc({"run", (dir_ / "job.yaml").string()}), kUsage,
                 {"step 1 (risk) --output '" + out_.string() + "' and step 2 (risk) --output", "name the same file"});
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(PathSafety, RefusesToReplaceASeedUnlessForced) {
  expect_refused(run_sdc({"generate", "seed", "--output", seed_.string()}), kUsage,
                 {"--output '" + seed_.string() + "' already exists", "give --force to replace it"});
  ASSERT_EQ(run_sdc({"generate", "seed", "--output", seed_.string(), "--force"}).exit_code, 0);
  EXPECT_NE(read_text(seed_), seed_bytes_);
}

// ---- 9. the smaller cases ---------------------------------------------------------------------------

TEST_F(PathSafety, BoundsEveryCountFlagWithAMessageAPersonWouldWrite) {
  expect_refused(run_sdc(risk({"--bootstrap", "99999999999", "--seed-file", seed_.string()})), kUsage,
                 {"--bootstrap: expected a whole number from 2 to 100000, got '99999999999'"});
  const auto threads = run_sdc({"--threads", "-1", "info", census_.string()});
  expect_refused(threads, kUsage, {"expected a whole number from 0 to 1024, got '-1'"});
  EXPECT_LT(threads.err.size(), 400U) << threads.err;
}

TEST_F(PathSafety, NamesTheFromAtFaultNotAMissingInput) {
  const auto result = run_sdc({"run", bad_input("job_from_no_step.yaml"), "--input", census_.string(), "--output-dir",
                               (dir_ / "out").string()});
  expect_refused(result, kInvalidJob, {"1 problem", "from: no earlier step named 'nosuch'"});
  EXPECT_EQ(result.err.find("--input is required"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("no input"), std::string::npos) << result.err;
}

TEST_F(PathSafety, ListsEveryProblemOfAJobAtOnceTopLevelAndEveryBadValue) {
  const auto result = run_sdc({"run", bad_input("job_many_problems.yaml"), "--input", census_.string(), "--output-dir",
                               (dir_ / "out").string()});
  expect_refused(result, kInvalidJob,
                 {"4 problems", "line 2: 'version' must be 1", "line 3: unknown key 'frobnicate'",
                  "line 7: step 1 (risk): --k-anonymity", "line 8: step 1 (risk): --l-diversity"});
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "a job that fails its checks creates no directory";
}

TEST_F(PathSafety, CreatesTheOutputDirectoryOwnerOnly) {
  write_text(dir_ / "job.yaml",
             "version: 1\ninput: " + census_.string() + "\nsteps:\n  - method: risk\n    keys: [sex]\n");
  ASSERT_EQ(run_sdc({"run", (dir_ / "job.yaml").string(), "--output-dir", (dir_ / "a" / "b").string()}).exit_code, 0);
  EXPECT_EQ(mode_of(dir_ / "a"), 0700U);
  EXPECT_EQ(mode_of(dir_ / "a" / "b"), 0700U);
  ASSERT_EQ(
      run_sdc({"--permissions", "0640", "run", (dir_ / "job.yaml").string(), "--output-dir", (dir_ / "c").string()})
          .exit_code,
      0);
  EXPECT_EQ(mode_of(dir_ / "c"), 0750U);
}

TEST_F(PathSafety, RefusesSoftAndExternalLinksInAnHdf5TableNamingTheLink) {
  expect_refused(run_sdc({"info", bad_input("soft_link.h5")}), kInvalidInput,
                 {"/variables/linked is a soft link", "links are not followed"});
  expect_refused(run_sdc({"info", bad_input("external_link.h5")}), kInvalidInput,
                 {"/variables/linked is an external link"});
}

TEST_F(PathSafety, SaysWhenWeightsAddUpBeyondTheLargestNumber) {
  const auto result = weighted_risk("weights_overflow.csv");
  expect_refused(result, kInvalidInput, {"add up to more than the largest floating-point number"});
  EXPECT_EQ(result.err.find("weights below 1"), std::string::npos) << result.err;
}

TEST_F(PathSafety, NamesARowNotItsClassSizeWhenWeightsAreBelowOne) {
  // Every record is a sample unique with weight 0.5.
  const auto result = weighted_risk("weights_below_one.csv");
  expect_refused(result, kInvalidInput, {"row id 0", "weights below 1"});
  EXPECT_EQ(result.err.find("fk ="), std::string::npos) << result.err;
}

}  // namespace
}  // namespace sdc::testing
