#pragma once
// Test support for the `sdc risk` end-to-end tests: the francdat oracle as an input file, and a run
// read back as its output's CSV rows and its report's results.

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/sdc_process.h"

namespace sdc::testing {

/// Writes risk.md oracle "E francdat" with its household ids (1,1,2,2,2,3,4,4) to `dir`/f.csv and
/// imports it into `dir`/f.h5: household hid, keys Key1..Key4, weight w. A fatal test failure when the
/// import fails (in SetUp, the test body then does not run).
void import_francdat_with_households(const TempDir& dir);

/// Runs sdc with `args`, which write `output` and `report`: expects exit code 0 and a valid report,
/// exports `output` to the same path with extension .csv, and returns that CSV's rows (read_csv_fields)
/// and the results of the report's first step.
std::pair<std::vector<std::vector<std::string>>, nlohmann::json> run_and_read_back(
    const std::vector<std::string>& args, const std::filesystem::path& output, const std::filesystem::path& report,
    const std::map<std::string, std::string>& environment = {});

}  // namespace sdc::testing
