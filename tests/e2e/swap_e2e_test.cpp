// `sdc swap rank` as a user runs it: sdcMicro's rankSwap oracle of docs/methods swapping.md §5 read back
// with `sdc export`, native mode keeping every variable's values and giving the same file twice, the
// step in a job, and every refusal with its exit code, a message naming what is wrong and no output.
// `sdc swap targeted` on the shared census-like file: the risky households per level against a count
// written here, the TRS invariants of the method file on the released file, and its refusals.
// `sdc swap shuffle`: every variable keeps its values, the relation to the given variable survives.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {
namespace {

/// x = 1…20 and y = 10, 20, …, 200 as continuous variables, and a categorical one.
std::filesystem::path twenty_records(const TempDir& dir) {
  std::string csv = "x,y,group\n";
  for (int i = 1; i <= 20; ++i)
    csv += std::to_string(i) + "," + std::to_string(10 * i) + "," + (i % 2 ? "a" : "b") + "\n";
  write_text(dir / "twenty.csv", csv);
  const auto h5 = dir / "twenty.h5";
  const auto imported = run_sdc({"import", (dir / "twenty.csv").string(), "-o", h5.string(), "--type", "x=continuous",
                                 "--type", "y=continuous", "--type", "group=categorical"});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  return h5;
}

/// `h5` as CSV fields, all variables or only `variables` ("a,b").
std::vector<std::vector<std::string>> exported(const TempDir& dir, const std::filesystem::path& h5,
                                               const std::string& variables = "") {
  const auto csv = dir / (h5.stem().string() + ".csv");
  std::vector<std::string> args{"export", h5.string(), "-o", csv.string()};
  if (!variables.empty()) args.insert(args.end(), {"--variables", variables});
  const auto result = run_sdc(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return read_csv_fields(csv);
}

nlohmann::json step_results(const std::filesystem::path& report) {
  return nlohmann::json::parse(read_text(report))["steps"][0]["results"];
}

TEST(ARankSwap, ReproducesTheReferenceOnTwoVariablesSharingItsTaus88Stream) {
  TempDir dir;
  const auto input = twenty_records(dir);
  const auto report = dir / "swap.json";
  const auto result = run_sdc({"swap", "rank", input.string(), "-o", (dir / "swapped.h5").string(), "--variables",
                               "x,y", "--top-percent", "0", "--bottom-percent", "0", "--window-fraction", "0.2",
                               "--mode", "compat", "--reference-seed", "1", "--report", report.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto rows = exported(dir, dir / "swapped.h5");
  EXPECT_EQ(csv_numbers(rows, "x"),
            (std::vector<double>{3, 5, 1, 6, 2, 4, 8, 7, 12, 13, 14, 9, 10, 11, 18, 19, 20, 15, 16, 17}));
  EXPECT_EQ(csv_numbers(rows, "y"), (std::vector<double>{20, 10,  50,  70,  30,  90,  40,  110, 60,  120,
                                                         80, 100, 140, 130, 170, 190, 150, 200, 160, 180}));
  const auto results = step_results(report);
  EXPECT_EQ(results["variables"][0]["top_coded"], 0);
  EXPECT_EQ(results["variables"][0]["window_fraction"], 0.2);
  EXPECT_EQ(results["swapped_values"], 40);
}

TEST(ARankSwap, KeepsEveryVariablesValuesAndGivesTheSameFileTwiceInNativeMode) {
  TempDir dir;
  std::mt19937_64 engine(7);
  std::uniform_int_distribution<int> value(0, 500);
  std::string csv = "income,rent\n";
  for (int i = 0; i < 500; ++i) csv += std::to_string(value(engine)) + "," + std::to_string(value(engine)) + "\n";
  write_text(dir / "survey.csv", csv);
  const auto input = dir / "survey.h5";
  ASSERT_EQ(run_sdc({"import", (dir / "survey.csv").string(), "-o", input.string(), "--type", "income=continuous",
                     "--type", "rent=continuous"})
                .exit_code,
            0);
  const std::map<std::string, std::string> seed{{"SDC_SEED", "20261126"}};
  std::vector<std::string> digests;
  for (const std::string name : {"first", "second"}) {
    const auto output = dir / (name + ".h5");
    const auto report = dir / (name + ".json");
    const auto result =
        run_sdc({"swap", "rank", input.string(), "-o", output.string(), "--variables", "income,rent", "--top-percent",
                 "0", "--bottom-percent", "0", "--window-percent", "5", "--report", report.string()},
                seed);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(validate_report(report), "");
    EXPECT_GT(step_results(report)["swapped_values"].get<int>(), 400);
    const auto info = run_sdc({"info", output.string(), "--digest", "--json"});
    ASSERT_EQ(info.exit_code, 0) << info.err;
    digests.push_back(nlohmann::json::parse(info.out)["content_digest"].get<std::string>());
  }
  EXPECT_EQ(digests[0], digests[1]);
  const auto before = read_csv_fields(dir / "survey.csv");
  const auto after = exported(dir, dir / "first.h5");
  for (const std::string variable : {"income", "rent"}) {
    auto original = csv_numbers(before, variable);
    auto swapped = csv_numbers(after, variable);
    EXPECT_NE(original, swapped) << variable;
    std::sort(original.begin(), original.end());
    std::sort(swapped.begin(), swapped.end());
    EXPECT_EQ(original, swapped) << variable << ": without top and bottom coding the values are only moved";
  }
}

TEST(ARankSwap, RunsAsAJobStep) {
  TempDir dir;
  const auto input = twenty_records(dir);
  write_text(dir / "job.yaml",
             "version: 1\n"
             "input: " +
                 input.string() +
                 "\n"
                 "output_dir: " +
                 (dir / "out").string() +
                 "\n"
                 "steps:\n"
                 "  - method: swap rank\n"
                 "    variables: [x, y]\n"
                 "    top-percent: 0\n"
                 "    bottom-percent: 0\n"
                 "    window-fraction: 0.2\n"
                 "    mode: compat\n"
                 "    reference-seed: 1\n");
  const auto result = run_sdc({"run", (dir / "job.yaml").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::filesystem::path> outputs;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out"))
    if (entry.path().extension() == ".h5") outputs.push_back(entry.path());
  ASSERT_EQ(outputs.size(), 1U);
  EXPECT_EQ(csv_numbers(exported(dir, outputs[0]), "x"),
            (std::vector<double>{3, 5, 1, 6, 2, 4, 8, 7, 12, 13, 14, 9, 10, 11, 18, 19, 20, 15, 16, 17}));
}

TEST(ARankSwap, RefusesBadFlagsAndDataNamingThemAndWritesNothing) {
  TempDir dir;
  const auto input = twenty_records(dir);
  const auto output = dir / "swapped.h5";
  struct Case {
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"--variables", "group", "--mode", "compat", "--reference-seed", "1"}, 3, "group"},
      {{"--variables", "x", "--r0", "0.9", "--k0", "1", "--mode", "compat", "--reference-seed", "1"},
       2,
       "give at most one"},
      {{"--variables", "x", "--mode", "compat"}, 2, "--reference-seed"},
      {{"--variables", "x", "--window-percent", "0", "--mode", "compat", "--reference-seed", "1"},
       2,
       "--window-percent"},
      {{"--variables", "x,x", "--mode", "compat", "--reference-seed", "1"}, 2, "given twice"},
      {{"--variables", "x", "--top-percent", "101", "--mode", "compat", "--reference-seed", "1"}, 2, "--top-percent"},
      {{"--variables", "x", "--reference-seed", "1"}, 2, "--reference-seed"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"swap", "rank", input.string(), "-o", output.string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    const std::string what = c.flags[1] + " " + c.flags[2];
    EXPECT_EQ(result.exit_code, c.exit_code) << what << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << what << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << what;
  }
}

// ---- targeted record swapping ----

const std::vector<std::string> kHierarchy{"NUTS1", "NUTS2", "NUTS3", "LAU2"};
/// The census file's variables but AGE.M, whose labels hold commas that read_csv_fields does not unquote.
const std::string kCensusColumns =
    "NUTS1,NUTS2,NUTS3,LAU2,L001000,HID,Size,SEX,AGE.H,TPH.H,HST,EDU,SIE,INCOME_Q,COC.ISO3N,COC.L,COC.M,COC.H,"
    "POB.ISO3N,POB.L,POB.M,POB.H";

/// The census-like file of ../shared imported with its roles, or empty when ../shared is absent.
std::filesystem::path imported_census(const TempDir& dir) {
  const auto csv = shared_data("census_trs_100k.csv.gz");
  if (csv.empty()) return {};
  const auto h5 = dir / "census.h5";
  const auto result = run_sdc({"import", csv.string(), "-o", h5.string(), "--role", "geography=NUTS1,NUTS2,NUTS3,LAU2",
                               "--role", "household=HID"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

std::vector<std::string> census_swap_args(const std::filesystem::path& input, const std::filesystem::path& output,
                                          const std::filesystem::path& report) {
  return {"swap",
          "targeted",
          input.string(),
          "-o",
          output.string(),
          "--household",
          "HID",
          "--hierarchy",
          "NUTS1,NUTS2,NUTS3,LAU2",
          "--risk-variables",
          "SEX,AGE.H,EDU",
          "--k-anonymity",
          "3",
          "--similar",
          "Size",
          "--swap-fraction",
          "0.05",
          "--report",
          report.string()};
}

TEST(ATargetedSwap, FindsTheCensusFilesRiskyHouseholdsPerLevelAsAnIndependentCount) {
  TempDir dir;
  const auto input = imported_census(dir);
  if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
  const auto report = dir / "swap.json";
  const auto result = run_sdc(census_swap_args(input, dir / "swapped.h5", report), {{"SDC_SEED", "20261126"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto levels = step_results(report)["levels"];
  ASSERT_EQ(levels.size(), 4U);

  // Persons per cell of (SEX, AGE.H, EDU, NUTS1..level); a household is risky at a level when one of its
  // members is in a cell of fewer than 3 persons (risk 1/count above 1/3), and must swap at the first
  // such level.
  const auto rows = exported(dir, input, kCensusColumns);
  const auto hid = csv_column(rows, "HID");
  std::vector<std::vector<std::string>> key_columns;
  for (const std::string name : {"SEX", "AGE.H", "EDU"}) key_columns.push_back(csv_column(rows, name));
  for (const auto& name : kHierarchy) key_columns.push_back(csv_column(rows, name));
  std::map<std::string, int> first_level;  // household → first risky level (4 = none)
  for (std::size_t h = 0; h < 4; ++h) {
    std::map<std::vector<std::string>, int> counts;
    auto cell = [&](std::size_t r) {
      std::vector<std::string> key;
      for (std::size_t k = 0; k < 4 + h; ++k) key.push_back(key_columns[k][r]);
      return key;
    };
    for (std::size_t r = 0; r < hid.size(); ++r) ++counts[cell(r)];
    std::set<std::string> risky;
    for (std::size_t r = 0; r < hid.size(); ++r)
      if (counts[cell(r)] < 3) risky.insert(hid[r]);
    EXPECT_EQ(levels[h]["risky_households"], static_cast<int>(risky.size())) << kHierarchy[h];
    for (const auto& household : hid) first_level.emplace(household, 4);
    for (const auto& household : risky) first_level[household] = std::min(first_level[household], static_cast<int>(h));
  }
  for (int h = 0; h < 4; ++h) {
    const auto must =
        std::count_if(first_level.begin(), first_level.end(), [h](const auto& e) { return e.second == h; });
    EXPECT_EQ(levels[static_cast<std::size_t>(h)]["must_swap_households"], must)
        << kHierarchy[static_cast<std::size_t>(h)];
  }
  std::printf("census_trs_100k: risky households per level %s %s %s %s\n", levels[0]["risky_households"].dump().c_str(),
              levels[1]["risky_households"].dump().c_str(), levels[2]["risky_households"].dump().c_str(),
              levels[3]["risky_households"].dump().c_str());
}

TEST(ATargetedSwap, KeepsHouseholdsWholeAndTheirCountsPerAreaAndMovesOnlyTheGeography) {
  TempDir dir;
  const auto input = imported_census(dir);
  if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
  const auto output = dir / "swapped.h5";
  const auto report = dir / "swap.json";
  const auto result = run_sdc(census_swap_args(input, output, report), {{"SDC_SEED", "7"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto results = step_results(report);
  const auto before = exported(dir, input, kCensusColumns);
  const auto after = exported(dir, output, kCensusColumns + ",trs_swapped");
  ASSERT_EQ(before.size(), after.size());
  const auto header = before.front();
  ASSERT_EQ(after.front().back(), "trs_swapped");
  const auto hid = csv_column(after, "HID");
  const auto flag = csv_column(after, "trs_swapped");

  // Every variable but the geography is untouched; members share one geography and one flag.
  std::map<std::string, std::pair<std::string, std::string>> household_place;  // hid → (geography, flag)
  std::set<std::string> swapped;
  std::map<std::string, std::string> place_before;
  for (std::size_t r = 1; r < after.size(); ++r) {
    std::string place;
    std::string original;
    for (std::size_t c = 0; c < header.size(); ++c) {
      const bool geography = std::find(kHierarchy.begin(), kHierarchy.end(), header[c]) != kHierarchy.end();
      if (geography) {
        place += after[r][c] + "/";
        original += before[r][c] + "/";
      } else {
        ASSERT_EQ(after[r][c], before[r][c]) << header[c] << ", row " << r;
      }
    }
    const auto [it, fresh] = household_place.emplace(hid[r - 1], std::make_pair(place, flag[r - 1]));
    if (!fresh) {
      ASSERT_EQ(it->second, std::make_pair(place, flag[r - 1])) << "household " << hid[r - 1];
    }
    place_before.emplace(hid[r - 1], original);
    if (flag[r - 1] == "true") swapped.insert(hid[r - 1]);
    if (flag[r - 1] == "false") {
      ASSERT_EQ(place, original) << "household " << hid[r - 1] << " is not flagged";
    }
  }
  EXPECT_EQ(static_cast<int>(swapped.size()), results["swapped_households"].get<int>());
  EXPECT_GE(results["swapped_households"].get<int>(), 5000) << "at least the 5 % quota";

  // Households per area at every level, and persons per (area, Size): pairs exchange places and agree
  // on Size.
  const auto size = csv_column(after, "Size");
  for (std::size_t h = 0; h < kHierarchy.size(); ++h) {
    std::map<std::string, int> households_before;
    std::map<std::string, int> households_after;
    for (const auto& [household, place] : household_place) {
      auto prefix = [h](const std::string& text) {
        std::size_t end = 0;
        for (std::size_t k = 0; k <= h; ++k) end = text.find('/', end) + 1;
        return text.substr(0, end);
      };
      ++households_before[prefix(place_before[household])];
      ++households_after[prefix(place.first)];
    }
    EXPECT_EQ(households_before, households_after) << kHierarchy[h];
  }
  std::map<std::pair<std::string, std::string>, int> persons_before;
  std::map<std::pair<std::string, std::string>, int> persons_after;
  for (std::size_t r = 0; r < hid.size(); ++r) {
    ++persons_before[{place_before[hid[r]], size[r]}];
    ++persons_after[{household_place[hid[r]].first, size[r]}];
  }
  EXPECT_EQ(persons_before, persons_after);
}

TEST(ATargetedSwap, GivesTheSameFileForTheSameSeedAndRunsAsAJobStep) {
  TempDir dir;
  const auto input = imported_census(dir);
  if (input.empty()) GTEST_SKIP() << "../shared/data is absent";
  const auto direct = dir / "direct.h5";
  ASSERT_EQ(run_sdc(census_swap_args(input, direct, dir / "direct.json"), {{"SDC_SEED", "11"}}).exit_code, 0);
  write_text(dir / "job.yaml",
             "version: 1\n"
             "input: " +
                 input.string() + "\n" + "output_dir: " + (dir / "out").string() + "\n" +
                 "steps:\n"
                 "  - method: swap targeted\n"
                 "    name: trs\n"
                 "    household: HID\n"
                 "    hierarchy: [NUTS1, NUTS2, NUTS3, LAU2]\n"
                 "    risk-variables: [SEX, AGE.H, EDU]\n"
                 "    k-anonymity: 3\n"
                 "    similar: [Size]\n"
                 "    swap-fraction: 0.05\n");
  const auto job = run_sdc({"run", (dir / "job.yaml").string()}, {{"SDC_SEED", "11"}});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  auto digest = [](const std::filesystem::path& h5) {
    const auto info = run_sdc({"info", h5.string(), "--digest", "--json"});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    return nlohmann::json::parse(info.out)["content_digest"].get<std::string>();
  };
  EXPECT_EQ(digest(dir / "out" / "trs.h5"), digest(direct));
  const auto other = dir / "other.h5";
  ASSERT_EQ(run_sdc(census_swap_args(input, other, dir / "other.json"), {{"SDC_SEED", "12"}}).exit_code, 0);
  EXPECT_NE(digest(other), digest(direct));
}

/// Six households in two regions of two districts each (the method file's example, with a size).
std::filesystem::path six_households(const TempDir& dir, const std::string& rows) {
  write_text(dir / "six.csv", "hid,region,district,g,size,income\n" + rows);
  const auto h5 = dir / "six.h5";
  const auto result = run_sdc({"import", (dir / "six.csv").string(), "-o", h5.string(), "--role", "household=hid",
                               "--type", "income=continuous"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return h5;
}

const std::string kSixHouseholds =
    "1,A,A1,1,2,10\n1,A,A1,2,2,10\n2,A,A1,1,1,20\n3,A,A2,2,2,30\n3,A,A2,2,2,30\n4,B,B1,1,1,40\n5,B,B1,3,1,50\n"
    "6,B,B2,1,2,60\n6,B,B2,2,2,60\n";

TEST(ATargetedSwap, RefusesBadFlagsAndDataNamingThemAndWritesNothing) {
  TempDir dir;
  struct Case {
    std::string label;
    std::string rows;
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  };
  const std::vector<std::string> base{"--household", "hid", "--hierarchy", "region,district", "--risk-variables", "g"};
  const std::vector<Case> cases{
      {"a district in two regions",
       kSixHouseholds + "7,B,A2,1,1,70\n",
       {},
       3,
       "the district area of row ids 3 and 9 lies in two region areas"},
      {"members disagreeing on the district",
       "1,A,A1,1,2,10\n1,A,A2,2,2,10\n2,B,B1,1,1,20\n",
       {},
       3,
       "row ids 0 and 1: members of one household (variable 'hid') disagree on 'district'"},
      {"members disagreeing on a carry-along",
       "1,A,A1,1,2,10\n1,A,A1,2,2,11\n2,B,B1,1,1,20\n",
       {"--carry-along", "income"},
       3,
       "disagree on 'income'"},
      {"a missing similarity variable", kSixHouseholds, {"--similar", "rooms"}, 3, "rooms"},
      {"a missing carry-along variable", kSixHouseholds, {"--carry-along", "tenure"}, 3, "tenure"},
      {"a swap fraction above 1", kSixHouseholds, {"--swap-fraction", "1.5"}, 2, "--swap-fraction"},
      {"a swap fraction below 0", kSixHouseholds, {"--swap-fraction", "-0.1"}, 2, "--swap-fraction"},
      {"the household id in the hierarchy", kSixHouseholds, {"--carry-along", "hid"}, 2, "household variable"},
      {"an empty profile", kSixHouseholds, {"--similar", "size,"}, 2, "--similar"},
  };
  for (const Case& c : cases) {
    const auto input = six_households(dir, c.rows);
    const auto output = dir / "swapped.h5";
    std::vector<std::string> args{"swap", "targeted", input.string(), "-o", output.string()};
    args.insert(args.end(), base.begin(), base.end());
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto result = run_sdc(args, {{"SDC_SEED", "1"}});
    EXPECT_EQ(result.exit_code, c.exit_code) << c.label << ": " << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << c.label << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(output)) << c.label;
  }
}

TEST(ATargetedSwap, SwapsTheMethodFilesSixHouseholdsAcrossRegionsWithTheirCarryAlong) {
  TempDir dir;
  const auto input = six_households(dir, kSixHouseholds);
  const auto output = dir / "swapped.h5";
  const auto report = dir / "swap.json";
  const auto result = run_sdc({"--report-min-count",
                               "1",
                               "swap",
                               "targeted",
                               input.string(),
                               "-o",
                               output.string(),
                               "--household",
                               "hid",
                               "--hierarchy",
                               "region,district",
                               "--risk-variables",
                               "g",
                               "--k-anonymity",
                               "2",
                               "--carry-along",
                               "income",
                               "--swap-fraction",
                               "0",
                               "--report",
                               report.string()},
                              {{"SDC_SEED", "3"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto results = step_results(report);
  // k = 2: H5 and H6 must swap at the region level, H1 and H4 at the district level.
  EXPECT_EQ(results["levels"][0]["must_swap_households"], 2);
  EXPECT_EQ(results["levels"][1]["must_swap_households"], 2);
  const auto rows = exported(dir, output);
  const auto hid = csv_column(rows, "hid");
  const auto region = csv_column(rows, "region");
  const auto income = csv_column(rows, "income");
  const auto flag = csv_column(rows, "trs_swapped");
  // Income travels with the place: a swapped household takes its partner's income, and every income
  // differs.
  for (std::size_t r = 0; r < hid.size(); ++r) {
    if (flag[r] == "false") continue;
    EXPECT_TRUE(income[r] != std::to_string(std::stoi(hid[r]) * 10)) << "household " << hid[r] << " moved";
  }
  // H5 and H6 (regions' uniques) end outside region B or were reported without a donor.
  for (std::size_t r = 0; r < hid.size(); ++r) {
    if (hid[r] == "5" || hid[r] == "6") {
      EXPECT_TRUE(region[r] == "A" || results["households_without_donor"] != 0) << "household " << hid[r];
    }
  }
}

// ---- data shuffling ----

/// Spearman's rank correlation (distinct values).
double rank_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (std::size_t k = 0; k < order.size(); ++k) r[order[k]] = static_cast<double>(k);
    return r;
  };
  const auto rx = ranks(x);
  const auto ry = ranks(y);
  const double n = static_cast<double>(x.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += (rx[i] - (n - 1) / 2) * (ry[i] - (n - 1) / 2);
  return sum / (n * (n * n - 1) / 12);
}

TEST(ADataShuffle, KeepsEveryVariablesValuesAndTheirRankRelationToTheGivenVariable) {
  TempDir dir;
  std::mt19937_64 engine(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::string csv = "income,wealth,age\n";
  for (int i = 0; i < 2000; ++i) {
    const double age = normal(engine);
    const double income = 0.7 * age + 0.714 * normal(engine);
    const double wealth = 0.5 * income + 0.866 * normal(engine);
    csv += std::to_string(income) + "," + std::to_string(wealth) + "," + std::to_string(age) + "\n";
  }
  write_text(dir / "survey.csv", csv);
  const auto input = dir / "survey.h5";
  ASSERT_EQ(run_sdc({"import", (dir / "survey.csv").string(), "-o", input.string(), "--type", "income=continuous",
                     "--type", "wealth=continuous", "--type", "age=continuous"})
                .exit_code,
            0);
  const auto report = dir / "shuffle.json";
  const auto result = run_sdc({"swap", "shuffle", input.string(), "-o", (dir / "shuffled.h5").string(), "--variables",
                               "income,wealth", "--given", "age", "--report", report.string()},
                              {{"SDC_SEED", "20261126"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(validate_report(report), "");
  const auto before = exported(dir, input);
  const auto after = exported(dir, dir / "shuffled.h5");
  const auto age = csv_numbers(before, "age");
  EXPECT_EQ(csv_numbers(after, "age"), age) << "the given variable is released as it is";
  for (const std::string variable : {"income", "wealth"}) {
    auto original = csv_numbers(before, variable);
    auto shuffled = csv_numbers(after, variable);
    const double kept = rank_correlation(original, age);
    const double released = rank_correlation(shuffled, age);
    std::printf("%s: Spearman with age %.4f before, %.4f after; with itself %.4f\n", variable.c_str(), kept, released,
                rank_correlation(original, shuffled));
    EXPECT_NEAR(released, kept, 0.06) << variable;
    EXPECT_LT(rank_correlation(original, shuffled), 0.9) << variable << ": values moved between records";
    std::sort(original.begin(), original.end());
    std::sort(shuffled.begin(), shuffled.end());
    EXPECT_EQ(original, shuffled) << variable << ": the same values, redistributed";
  }
  const auto results = step_results(report);
  EXPECT_EQ(results["variables"][0]["name"], "income");
}

}  // namespace
}  // namespace sdc::testing
