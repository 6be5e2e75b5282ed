// `sdc run`: a job checked as a whole before any step, steps chained through their outputs, one
// report, and resuming a job killed with SIGKILL in the middle of a step.

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// Persons in households, sorted by household: `rows` records with five keys and a weight.
std::string persons_csv(int rows) {
  std::mt19937 generator(5);  // test data only
  std::ostringstream csv;
  csv << "hid,region,sex,age,marstat,education,weight\n";
  int household = 1;
  for (int row = 0; row < rows; ++row) {
    if (generator() % 3 == 0) ++household;
    csv << household << ',' << generator() % 300 << ',' << 1 + generator() % 2 << ',' << generator() % 100 << ','
        << 1 + generator() % 4 << ',' << generator() % 6 << ',' << 20 + generator() % 200 << ".5\n";
  }
  return csv.str();
}

class AJob : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_ / "persons.csv", persons_csv(3000));
    ASSERT_EQ(run_sdc({"import", (dir_ / "persons.csv").string(), "-o", (dir_ / "persons.h5").string(), "--role",
                       "household=hid", "--role", "weight=weight"})
                  .exit_code,
              0);
  }
  std::filesystem::path job(const std::string& name, const std::string& text) {
    write_text(dir_ / name, text);
    return dir_ / name;
  }
  /// job.yaml with output_dir out/ and `steps` (YAML lines of the steps list).
  std::filesystem::path job_with_steps(const std::string& steps) {
    return job("job.yaml", "version: 1\noutput_dir: " + (dir_ / "out").string() + "\nsteps:\n" + steps);
  }
  TempDir dir_;
};

TEST_F(AJob, ListsEveryProblemTogetherBeforeRunningAnything) {
  const auto path = job("bad.yaml",
                        "version: 1\n"
                        "input: " +
                            (dir_ / "persons.h5").string() +
                            "\n"
                            "output_dir: " +
                            (dir_ / "out").string() +
                            "\n"
                            "seed_file: " +
                            (dir_ / "no-such-seed").string() +
                            "\n"
                            "steps:\n"
                            "  - method: risk\n"
                            "    keys: [sex, age]\n"
                            "  - method: risk\n"
                            "    keys: [sex, nosuch]\n"
                            "    kays: 3\n"
                            "  - method: risk\n"
                            "    keys: [sex]\n"
                            "    k-anonymity: three\n"
                            "  - method: risk\n"
                            "    keys: [fk]\n"
                            "  - method: frobnicate\n");
  const auto result = run_sdc({"run", path.string()});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  for (const char* expected :
       {"6 problems", "seed_file", "no-such-seed", "line 10: step 2 (risk): unknown key 'kays'",
        "step 2 (risk): keys: variable 'nosuch' is not in the step's input",
        "line 13: step 3 (risk): --k-anonymity: expected a whole number from 1 to 1000000000, got 'three'",
        "step 5 (frobnicate): unknown method 'frobnicate'"})
    EXPECT_NE(result.err.find(expected), std::string::npos) << expected << "\n" << result.err;
  // Step 4 reads fk, which step 1 adds (continuous, not categorical): a type problem, not a missing one.
  EXPECT_NE(result.err.find("keys: variable 'fk' is continuous, expected categorical"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "nothing ran";
}

TEST_F(AJob, RejectsUnknownTopLevelKeysAndMissingVersion) {
  const auto path = job("bad.yaml", "inptu: x.h5\nsteps:\n  - method: risk\n    keys: [sex]\n");
  const auto result = run_sdc({"run", path.string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("line 1: unknown key 'inptu'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("'version: 1' is missing"), std::string::npos) << result.err;
}

TEST_F(AJob, ChainsStepsAndWritesOneValidReport) {
  const auto path = job("job.yaml",
                        "version: 1\n"
                        "output_dir: " +
                            (dir_ / "out").string() +
                            "\n"
                            "steps:\n"
                            "  - method: risk\n"
                            "    name: before\n"
                            "    keys: [region, sex, age]\n"
                            "    weight: weight\n"
                            "    household: hid\n"
                            "  - method: risk\n"
                            "    keys: [sex, marstat]\n"
                            "    k-anonymity: 5\n");
  const auto result = run_sdc(
      {"run", path.string(), "--input", (dir_ / "persons.h5").string(), "--report", (dir_ / "job.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "out" / "before.h5"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "out" / "2-risk.h5"));
  EXPECT_EQ(validate_report(dir_ / "job.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir_ / "job.json"));
  ASSERT_EQ(report["steps"].size(), 2U);
  EXPECT_EQ(report["steps"][1]["results"]["k"], 5);
  EXPECT_EQ(report["outputs"].size(), 2U);
  EXPECT_EQ(report["inputs"][0]["path"], (dir_ / "persons.h5").string());
}

TEST_F(AJob, RunsATwoInputStepWithEachInputFromItsOwnSource) {
  // Step 2 reads the original (the job's input) and, as its external file, the released file of
  // step 1: the marketer risk of the original against its PRAMmed release.
  const auto path = job("job.yaml",
                        "version: 1\n"
                        "output_dir: " +
                            (dir_ / "out").string() +
                            "\n"
                            "seed_file: " +
                            (dir_ / "job.seed").string() +
                            "\n"
                            "steps:\n"
                            "  - method: pram\n"
                            "    name: released\n"
                            "    variables: [marstat]\n"
                            "  - method: risk\n"
                            "    name: linkage\n"
                            "    from: {input: input, external: released}\n"
                            "    keys: [sex, marstat]\n");
  ASSERT_EQ(run_sdc({"generate", "seed", "--output", (dir_ / "job.seed").string()}).exit_code, 0);
  const auto result = run_sdc(
      {"run", path.string(), "--input", (dir_ / "persons.h5").string(), "--report", (dir_ / "job.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir_ / "job.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir_ / "job.json"));
  ASSERT_EQ(report["steps"].size(), 2U);
  const auto& marketer = report["steps"][1]["results"]["marketer_risk"];
  EXPECT_EQ(marketer["external_records"], 3000);
  EXPECT_EQ(marketer["records"], 3000);
  // The job read one file; the external of step 2 is step 1's output, not an input of the job.
  ASSERT_EQ(report["inputs"].size(), 1U);
  EXPECT_EQ(report["inputs"][0]["name"], "input");
  EXPECT_EQ(report["inputs"][0]["path"], (dir_ / "persons.h5").string());

  // The same step from the command line names both inputs, and identifies the external by content.
  const auto direct = run_sdc({"risk", "--input", (dir_ / "persons.h5").string(), "--external",
                               (dir_ / "out" / "released.h5").string(), "--keys", "sex,marstat", "--output",
                               (dir_ / "direct.h5").string(), "--report", (dir_ / "direct.json").string()});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  const auto direct_report = nlohmann::json::parse(read_text(dir_ / "direct.json"));
  ASSERT_EQ(direct_report["inputs"].size(), 2U);
  EXPECT_EQ(direct_report["inputs"][1]["name"], "external");
  EXPECT_EQ(direct_report["inputs"][1]["digest"], digest_of(dir_ / "out" / "released.h5"));
  EXPECT_EQ(direct_report["steps"][0]["results"]["marketer_risk"], marketer);
  EXPECT_EQ(digest_of(dir_ / "direct.h5"), digest_of(dir_ / "out" / "linkage.h5"));
}

TEST_F(AJob, RejectsAFromForAnInputTheMethodDoesNotHave) {
  const auto path = job_with_steps(
      "  - method: risk\n"
      "    from: {input: input, masked: input}\n"
      "    keys: [sex]\n");
  const auto result = run_sdc({"run", path.string(), "--input", (dir_ / "persons.h5").string()});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_NE(result.err.find("step 1 (risk): from: the method has no input 'masked'"), std::string::npos) << result.err;
}

TEST_F(AJob, RejectsAReportDirectoryThatDoesNotExistBeforeRunningAnything) {
  const auto path = job("job.yaml",
                        "version: 1\n"
                        "output_dir: " +
                            (dir_ / "out").string() +
                            "\n"
                            "report: " +
                            (dir_ / "nowhere" / "job.json").string() +
                            "\n"
                            "steps:\n"
                            "  - method: risk\n"
                            "    keys: [sex, age]\n");
  const auto result = run_sdc({"run", path.string(), "--input", (dir_ / "persons.h5").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("report: directory '" + (dir_ / "nowhere").string() + "' does not exist"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "nothing runs";
}

TEST_F(AJob, RejectsASuda2SizeAboveTheKeyCountBeforeRunningAnything) {
  const auto path = job_with_steps(
      "  - method: risk\n"
      "    keys: [sex, age]\n"
      "    suda2: true\n"
      "    suda2-max-size: 3\n");
  const auto result = run_sdc({"run", path.string(), "--input", (dir_ / "persons.h5").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("step 1 (risk): --suda2-max-size 3 exceeds the number of key variables (2 in --keys)"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "nothing runs";
}

TEST_F(AJob, NeedsASeedForAStepThatDrawsBeforeRunningAnything) {
  if (std::getenv("SDC_SEED") != nullptr) GTEST_SKIP() << "SDC_SEED is set in this environment";
  const auto path = job_with_steps(
      "  - method: risk\n"
      "    keys: [sex, age]\n"
      "    household: hid\n"
      "    bootstrap: 20\n");
  const auto result = run_sdc({"run", path.string(), "--input", (dir_ / "persons.h5").string()});
  EXPECT_EQ(result.exit_code, 4);
  EXPECT_NE(result.err.find("step 1 (risk): the step draws random numbers and needs a seed"), std::string::npos)
      << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "nothing runs";
}

/// The warnings of step `index` of a job report that name an input variable the step replaced.
std::size_t replaced_variable_warnings(const nlohmann::json& report, std::size_t index) {
  std::size_t count = 0;
  for (const auto& warning : report["steps"][index]["warnings"])
    if (warning.get<std::string>().find("is replaced by this step's") != std::string::npos) ++count;
  return count;
}

TEST_F(AJob, ReadsFromTheJobsInputOrANamedEarlierStep) {
  const auto path = job_with_steps(
      "  - method: risk\n"
      "    name: before\n"
      "    keys: [sex, age]\n"
      "  - method: risk\n"
      "    name: fresh\n"
      "    from: input\n"
      "    keys: [sex, marstat]\n"
      "  - method: risk\n"
      "    name: again\n"
      "    from: before\n"
      "    keys: [sex]\n"
      "  - method: risk\n"
      "    name: chained\n"
      "    keys: [age]\n");
  const auto result = run_sdc(
      {"run", path.string(), "--input", (dir_ / "persons.h5").string(), "--report", (dir_ / "job.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(read_text(dir_ / "job.json"));
  // Only a step reading another risk step's output replaces its columns.
  EXPECT_EQ(replaced_variable_warnings(report, 0), 0U);
  EXPECT_EQ(replaced_variable_warnings(report, 1), 0U) << "from: input reads the job's input";
  EXPECT_GT(replaced_variable_warnings(report, 2), 0U) << "from: before reads that step's output";
  EXPECT_GT(replaced_variable_warnings(report, 3), 0U) << "without from, the previous step's output";
  EXPECT_EQ(report["steps"][1]["results"]["records"], report["steps"][0]["results"]["records"]);
}

TEST_F(AJob, RejectsAFromThatNamesNoEarlierStepBeforeRunningAnything) {
  const auto path = job_with_steps(
      "  - method: risk\n"
      "    name: first\n"
      "    from: later\n"
      "    keys: [sex]\n"
      "  - method: risk\n"
      "    name: later\n"
      "    from: first\n"
      "    input: " +
      (dir_ / "persons.h5").string() +
      "\n"
      "    keys: [sex]\n"
      "  - method: risk\n"
      "    from: nosuch\n"
      "    keys: [sex]\n");
  const auto result = run_sdc({"run", path.string()});
  EXPECT_EQ(result.exit_code, 4);
  for (const char* expected : {"line 6: step 1 (risk): from: no earlier step named 'later' writes an output",
                               "line 10: step 2 (risk): give 'input' or 'from', not both",
                               "line 14: step 3 (risk): from: no earlier step named 'nosuch' writes an output"})
    EXPECT_NE(result.err.find(expected), std::string::npos) << expected << "\n" << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out")) << "nothing runs";

  const auto no_input =
      job("no-input.yaml", "version: 1\nsteps:\n  - method: risk\n    from: input\n    keys: [sex]\n");
  const auto second = run_sdc({"run", no_input.string()});
  EXPECT_EQ(second.exit_code, 4);
  EXPECT_NE(second.err.find("line 4: step 1 (risk): from: input, but the job has no input (give --input)"),
            std::string::npos)
      << second.err;
}

TEST(TheDefaultCensusJob,
     AssessesRiskMasksBySwappingPramAndMicroaggregationAssessesTheReleasedFileAndProtectsAHypercube) {
  TempDir dir;
  ASSERT_EQ(run_sdc({"generate", "seed", "--output", (dir / "seed").string()}).exit_code, 0);
  const auto generated = run_sdc({"generate", "census", "--households", "3000", "--seed-file", (dir / "seed").string(),
                                  "--output", (dir / "census.h5").string()});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const auto result = run_sdc({"run", source_path("jobs/census.yaml").string(), "--input", (dir / "census.h5").string(),
                               "--output-dir", (dir / "out").string(), "--seed-file", (dir / "seed").string(),
                               "--report", (dir / "job.json").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(dir / "job.json"), "");
  const auto report = nlohmann::json::parse(read_text(dir / "job.json"));
  ASSERT_EQ(report["steps"].size(), 14U);
  const std::vector<std::string> methods{"risk",
                                         "recode",
                                         "suppress",
                                         "swap targeted",
                                         "pram",
                                         "risk",
                                         "utility",
                                         "microaggregate",
                                         "linkage",
                                         "utility",
                                         "perturb-table keys",
                                         "table tabulate",
                                         "perturb-table ckm",
                                         "perturb-table adjust"};
  for (std::size_t s = 0; s < methods.size(); ++s) EXPECT_EQ(report["steps"][s]["method"], methods[s]) << s;
  const auto& recoded = report["steps"][1]["results"];
  const auto& suppressed = report["steps"][2]["results"];
  const auto& swapped = report["steps"][3]["results"];
  const auto& pram = report["steps"][4]["results"];
  const auto& before = report["steps"][0]["results"];
  const auto& after = report["steps"][5]["results"];
  const auto& categorical = report["steps"][6]["results"]["categorical"];
  const auto& micro = report["steps"][7]["results"];
  // Ages above 90 are top-coded; local suppression leaves no person below k = 3 on age, education and
  // occupation, and the file the swapping reads carries the suppressions.
  EXPECT_EQ(recoded["variables"][0]["method"], "top-code");
  EXPECT_GT(recoded["variables"][0]["replaced"].get<std::int64_t>(), 0);
  EXPECT_GT(suppressed["violations_before"].get<std::int64_t>(), 0);
  EXPECT_EQ(suppressed["violations_left"], 0);
  EXPECT_EQ(suppressed["impossible"], nullptr);
  EXPECT_GT(suppressed["suppressed"].get<std::int64_t>(), 0);
  const auto suppressed_info = run_sdc({"info", "--json", (dir / "out" / "suppress-keys.h5").string()});
  ASSERT_EQ(suppressed_info.exit_code, 0) << suppressed_info.err;
  std::map<std::string, nlohmann::json> missing_after;
  for (const auto& key : suppressed["keys"]) missing_after[key["name"]] = key["missing_after"];
  ASSERT_EQ(missing_after.size(), 3U);
  const auto suppressed_file = nlohmann::json::parse(suppressed_info.out);
  for (const auto& variable : suppressed_file["variables"]) {
    if (variable["name"] == "age") {
      EXPECT_EQ(variable["recoding"], "top-code above 90 to 90");
    }
    if (missing_after.contains(variable["name"])) {
      EXPECT_EQ(variable["missing"], missing_after[variable["name"]]) << variable["name"];
    }
  }
  // Swapping moves at least the 5 % quota; groups of at least 3 within nuts3 regions; linkage within the
  // regions credits at most 1/3 a record; utility measures the same loss as the microaggregation step.
  EXPECT_GE(swapped["swap_rate"].get<double>(), 0.05);
  EXPECT_GE(micro["smallest_group"].get<int>(), 3);
  EXPECT_EQ(micro["blocks"], 36);
  EXPECT_LE(report["steps"][8]["results"]["fractional_rate"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(report["steps"][9]["results"]["il_percent"], micro["il_percent"]);
  // The categorical loss of the release: swapping moved municipalities, PRAM marital status and
  // citizenship, nothing touched sex or the age group; households swap with households of their size class, so
  // the municipalities' person counts (the one-way lau2 table) move only through the open class of 10
  // or more persons, far less than lau2 x sex.
  std::map<std::string, nlohmann::json> variables;
  for (const auto& variable : categorical["variables"]) variables[variable["name"]] = variable;
  for (const char* moved : {"lau2", "marstat", "citizenship"}) {
    EXPECT_GT(variables[moved]["records_changed"].get<std::int64_t>(), 0) << moved;
    EXPECT_GT(variables[moved]["ebil"].get<double>(), 0.0) << moved;
  }
  for (const char* kept : {"sex", "agegroup"}) EXPECT_EQ(variables[kept]["records_changed"], 0) << kept;
  std::map<std::string, nlohmann::json> tables;
  for (const auto& table : categorical["ctbil"]["by_table"]) {
    std::string name;
    for (const auto& variable : table["variables"]) name += (name.empty() ? "" : "*") + variable.get<std::string>();
    tables[name] = table;
  }
  EXPECT_EQ(tables.size(), 15U);  // 5 one-way and 10 two-way tables
  EXPECT_LT(3 * tables["lau2"]["ctbil"].get<std::int64_t>(), tables["lau2*sex"]["ctbil"].get<std::int64_t>());
  EXPECT_EQ(tables["sex*agegroup"]["ctbil"], 0);
  EXPECT_FALSE(categorical["table"].is_null());
  EXPECT_GT(pram["records_changed"].get<std::int64_t>(), 0);
  for (const char* section : {"individual_risk", "household_risk", "suda2", "loglinear", "bootstrap", "l_diversity"}) {
    EXPECT_TRUE(before.contains(section)) << section;
    EXPECT_TRUE(after.contains(section)) << section;
  }
  // Swapping starts from the census: the released file carries no risk column of the original keys.
  EXPECT_EQ(replaced_variable_warnings(report, 5), 0U);
  const auto info = run_sdc({"info", (dir / "out" / "pram.h5").string()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.find("individual_risk"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("pram_changed"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("trs_swapped"), std::string::npos) << info.out;
  // The microaggregated release carries PRAM's column and the group ids, and no risk column either.
  const auto released = run_sdc({"info", (dir / "out" / "microaggregate.h5").string()});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(released.out.find("individual_risk"), std::string::npos) << released.out;
  EXPECT_NE(released.out.find("pram_changed"), std::string::npos) << released.out;
  EXPECT_NE(released.out.find("group_id"), std::string::npos) << released.out;

  // The hypercube is tabulated from the swapped file with its record keys, not from the PRAMmed release.
  const auto keyed = run_sdc({"info", (dir / "out" / "record-keys.h5").string()});
  ASSERT_EQ(keyed.exit_code, 0) << keyed.err;
  EXPECT_NE(keyed.out.find("trs_swapped"), std::string::npos) << keyed.out;
  EXPECT_NE(keyed.out.find("record_key"), std::string::npos) << keyed.out;
  EXPECT_EQ(keyed.out.find("pram_changed"), std::string::npos) << keyed.out;
  const auto& hypercube = report["steps"][11]["results"];
  const auto& ckm = report["steps"][12]["results"];
  EXPECT_EQ(hypercube["dimensions"].size(), 5U);
  EXPECT_EQ(hypercube["records"], swapped["records"]);
  EXPECT_GT(hypercube["statuses"]["frequency"].get<std::int64_t>(), 0);
  EXPECT_EQ(ckm["cells"], hypercube["cells"]);
  EXPECT_EQ(ckm["ptable"]["max_noise"], 3);
  EXPECT_EQ(ckm["ptable"]["blocked_up_to"], 2);
  EXPECT_EQ(ckm["published_in_blocked_range"], 0);
  // What the report says, read from the protected table itself: no 1 or 2 published, the noise within
  // D = 3, and the small counts the frequency rule marked all changed.
  const auto csv = dir / "hypercube.csv";
  ASSERT_EQ(run_sdc({"export", (dir / "out" / "hypercube-ckm.h5").string(), "-o", csv.string()}).exit_code, 0);
  const auto rows = read_csv_fields(csv);
  const auto counts = csv_numbers(rows, "count");
  const auto published = csv_numbers(rows, "published");
  const auto noise = csv_numbers(rows, "noise");
  ASSERT_EQ(counts.size(), ckm["cells"].get<std::size_t>());
  ASSERT_EQ(published.size(), counts.size());
  ASSERT_EQ(noise.size(), counts.size());
  std::size_t changed = 0;
  for (std::size_t c = 0; c < counts.size(); ++c) {
    EXPECT_EQ(published[c], counts[c] + noise[c]) << "cell " << c;
    EXPECT_LE(std::abs(noise[c]), 3.0) << "cell " << c;
    EXPECT_TRUE(published[c] == 0.0 || published[c] > 2.0) << "cell " << c;
    if (noise[c] != 0.0) ++changed;
  }
  EXPECT_GE(changed, hypercube["statuses"]["frequency"].get<std::size_t>());

  // The adjusted hypercube adds up: every equation of the table's hierarchies holds to 1e-9 of the
  // largest figure, and the perturbed table did not before.
  const auto& additive = report["steps"][13]["results"];
  EXPECT_EQ(additive["cells"], ckm["cells"]);
  EXPECT_EQ(additive["solver"], "block-angular");
  EXPECT_EQ(additive["block_angular"]["blocks"], 8);
  EXPECT_GT(additive["max_constraint_residual_before"].get<double>(), 0.5);
  EXPECT_LE(additive["max_constraint_residual"].get<double>(), 1e-9 * additive["max_abs_perturbed"].get<double>());
  EXPECT_GT(additive["changed_cells"].get<std::int64_t>(), 0);
  const auto additive_csv = dir / "hypercube-additive.csv";
  ASSERT_EQ(
      run_sdc({"export", (dir / "out" / "hypercube-additive.h5").string(), "-o", additive_csv.string()}).exit_code, 0);
  const auto adjusted_rows = read_csv_fields(additive_csv);
  const auto adjusted = csv_numbers(adjusted_rows, "adjusted");
  ASSERT_EQ(adjusted.size(), counts.size());
  double largest_change = 0.0;
  for (std::size_t c = 0; c < counts.size(); ++c)
    largest_change = std::max(largest_change, std::abs(adjusted[c] - published[c]));
  EXPECT_NEAR(largest_change, additive["max_absolute_change"].get<double>(), 1e-6);
}

TEST(AKilledJob, ResumesToTheSameOutputsAsAnUninterruptedRun) {
  TempDir dir;
  write_text(dir / "persons.csv", persons_csv(1500000));
  ASSERT_EQ(run_sdc({"import", (dir / "persons.csv").string(), "-o", (dir / "persons.h5").string(), "--role",
                     "household=hid", "--role", "weight=weight"})
                .exit_code,
            0);
  const auto job_text = [&](const std::string& out) {
    return "version: 1\ninput: " + (dir / "persons.h5").string() + "\noutput_dir: " + (dir / out).string() +
           "\nsteps:\n"
           "  - method: risk\n    name: first\n    keys: [region, sex, age, marstat]\n    weight: weight\n"
           "  - method: risk\n    name: second\n    keys: [region, sex, age, marstat, education]\n    weight: weight\n";
  };
  write_text(dir / "clean.yaml", job_text("clean"));
  write_text(dir / "killed.yaml", job_text("killed"));
  ASSERT_EQ(run_sdc({"run", (dir / "clean.yaml").string()}).exit_code, 0);

  // Kill the job once the first step's output exists: the second step is under way.
  const int pid = start_sdc({"run", (dir / "killed.yaml").string()});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(dir / "killed" / "first.h5") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_for(pid), 128 + SIGKILL);
  ASSERT_TRUE(std::filesystem::exists(dir / "killed" / "first.h5"));
  const bool interrupted = !std::filesystem::exists(dir / "killed" / "second.h5");
  const auto first_written = std::filesystem::last_write_time(dir / "killed" / "first.h5");

  const auto resumed =
      run_sdc({"run", (dir / "killed.yaml").string(), "--resume", "--report", (dir / "r.json").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(std::filesystem::last_write_time(dir / "killed" / "first.h5"), first_written) << "step 1 was skipped";
  EXPECT_EQ(digest_of(dir / "killed" / "first.h5"), digest_of(dir / "clean" / "first.h5"));
  EXPECT_EQ(digest_of(dir / "killed" / "second.h5"), digest_of(dir / "clean" / "second.h5"));
  // The killed run's hidden temporary file is gone too.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "killed"))
    EXPECT_EQ(entry.path().extension(), ".h5") << entry.path();
  const auto report = nlohmann::json::parse(read_text(dir / "r.json"));
  EXPECT_NE(report["steps"][0]["warnings"].dump().find("resumed"), std::string::npos);
  EXPECT_TRUE(interrupted) << "the kill came after the job had finished; the resume was not exercised mid-step";
}

}  // namespace
}  // namespace sdc::testing
