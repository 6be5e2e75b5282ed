#pragma once
// The `swap frontier` step: Karr–Sanil data swapping on a risk–utility frontier (docs/swapping.md;
// docs/methods swapping.md §3). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc swap frontier` (docs/swapping.md), one field per flag of engine/cli/swap_command.cpp.
struct KarrSanilStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;  ///< the chosen release; empty: the frontier only
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;        ///< the release's attributes: DR's and DU's table
  std::vector<std::string> swap_attributes;  ///< one entry per candidate attribute set ("a" or "a,b")
  std::vector<double> rates{0.01, 0.02, 0.05, 0.10, 0.20};
  std::int64_t replicates = 5;
  std::vector<std::string> within;  ///< pairs agree on these variables
  std::string utility = "hellinger";
  std::optional<std::string> loglinear;  ///< M*, or candidates separated by ';' chosen by --loglinear-select
  std::string loglinear_select = "bic";
  std::string loglinear_parameters = "refit";
  std::optional<double> risk_bound;
  bool unchanged_count_as_unswapped = false;
  std::optional<std::filesystem::path> frontier_table;
  std::optional<std::filesystem::path> frontier_plot;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

/// Where the frontier's table and plot go: the flags, else beside the output, else beside the report
/// (`x.h5` or `x.json` -> `x.frontier.csv`, `x.frontier.svg`); empty when none of them is given.
struct FrontierFiles {
  std::filesystem::path table;
  std::filesystem::path plot;
};
FrontierFiles frontier_files(const KarrSanilStepOptions& options);

class KarrSanilStep : public Step {
 public:
  KarrSanilStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<KarrSanilStep> make_karr_sanil_step();

}  // namespace sdc::engine
