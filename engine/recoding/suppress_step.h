#pragma once
// The `suppress` step: local suppression of key values to k-anonymity, sdcMicro's algorithm
// (docs/recoding.md; docs/methods recoding.md §4). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc suppress` (docs/recoding.md), one field per flag of engine/cli/suppress_command.cpp.
struct SuppressStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> keys;
  std::int64_t k = 2;
  double alpha = 1.0;
  std::vector<std::string> importance;  ///< VAR=I for every key, or empty
  Mode mode = Mode::kNative;            ///< compat: the reference's scan of every record
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class SuppressStep : public Step {
 public:
  SuppressStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<SuppressStep> make_suppress_step();

}  // namespace sdc::engine
