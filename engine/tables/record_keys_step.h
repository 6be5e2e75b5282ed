#pragma once
// The `perturb-table keys` step: every record's cell-key-method key, a column of the microdata so that
// every table of a release perturbs a cell alike (docs/tables.md, "Record keys"; docs/methods cellkey.md
// §1). Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/step.h"

namespace sdc::engine {

/// The options of `sdc perturb-table keys` (docs/tables.md), one field per flag of
/// engine/cli/perturb_table_command.cpp.
struct RecordKeysStepOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::string variable = "record_key";  ///< the added continuous variable
  std::int64_t key_decimals = 8;        ///< keys are multiples of 10^-D
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

class RecordKeysStep : public Step {
 public:
  RecordKeysStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<RecordKeysStep> make_record_keys_step();

}  // namespace sdc::engine
