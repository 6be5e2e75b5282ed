#pragma once
// The `linkage` step: re-identification risk of masked continuous variables by distance-based record
// linkage and interval disclosure (docs/linkage.md; docs/methods linkage.md). Its command only
// declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc linkage` (docs/linkage.md), one field per flag of engine/cli/linkage_command.cpp.
struct LinkageStepOptions {
  std::filesystem::path input;   ///< the original file (the intruder's)
  std::filesystem::path masked;  ///< the released file: the same records in the same order
  std::optional<std::filesystem::path> output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;
  std::optional<std::string> id;
  std::string distance = "dbrl1";
  std::int64_t kernel_degree = 2;
  std::string direction = "original-to-masked";
  std::int64_t tile_rows = 256;
  std::string blocking = "none";
  std::vector<double> interval_k{0.05};
  std::optional<double> rank_interval_percent;
  std::string filters = "shuffle,deflate=1";
};

class LinkageStep : public Step {
 public:
  LinkageStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<LinkageStep> make_linkage_step();

}  // namespace sdc::engine
