#pragma once
// The `risk` step (docs/risk.md): sample frequency counts fk, their weighted counterparts (Fk in
// sdcMicro), k-anonymity, Benedetti–Franconi individual risk, household risk, global risk with the
// threshold for a target, l-diversity of sensitive variables, and the measures of
// engine/risk/risk_measure.h, per record and in the report. Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/risk/risk_measure.h"
#include "engine/step.h"
#include "kernels/risk/individual_risk.h"

namespace sdc::engine {

enum class MissingKeys { kReject, kCategory, kWildcard };

/// The options of `sdc risk` (docs/risk.md), one field per flag of engine/cli/risk_command.cpp.
struct RiskStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> keys;
  std::optional<std::string> weight;
  std::optional<std::string> household;
  std::int64_t k_anonymity = 3;
  MissingKeys missing = MissingKeys::kReject;
  double alpha = 1.0;
  IndividualRiskMethod risk_method = IndividualRiskMethod::kApprox;
  Mode mode = Mode::kNative;
  double qual = 1.0;
  double global_risk_target = 0.01;
  std::vector<std::string> sensitive;
  std::int64_t l_diversity = 2;
  double l_recursion_constant = 2.0;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class RiskStep : public Step {
 public:
  RiskStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
  /// Every measure of the step; each declares its own flags and runs when they enable it.
  std::vector<std::unique_ptr<RiskMeasure>> measures = make_risk_measures();
};

std::unique_ptr<RiskStep> make_risk_step();

}  // namespace sdc::engine
