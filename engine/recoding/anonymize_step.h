#pragma once
// The `anonymize` step: the full-domain generalisation of least information loss that reaches
// k-anonymity within a suppression limit, then the suppression of what stays below k (docs/recoding.md;
// docs/methods recoding.md §5). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// How the records left below k after recoding are suppressed.
enum class OutlierSuppression : std::uint8_t {
  kRecords,  ///< every key of the record (ARX)
  kCells,    ///< single key values, by the local suppression of `sdc suppress`
};

/// The options of `sdc anonymize` (docs/recoding.md), one field per flag of
/// engine/cli/anonymize_command.cpp.
struct AnonymizeStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> keys;
  std::optional<std::filesystem::path> hierarchies;
  std::vector<std::string> hierarchy;  ///< VAR=FILE
  std::int64_t k = 2;
  double max_suppression_percent = 0.0;
  std::string metric = "loss";
  OutlierSuppression suppression = OutlierSuppression::kRecords;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class AnonymizeStep : public Step {
 public:
  AnonymizeStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<AnonymizeStep> make_anonymize_step();

}  // namespace sdc::engine
