#pragma once
// The `utility` step: the information loss of a masked file against its original, for continuous
// variables (docs/utility.md; docs/methods utility.md §1–2) and for categorical ones (§3, §4, §6):
// direct comparison, EBIL and PRIL per variable, CTBIL over the tables of up to K variables, and the
// Shlomo & Young measures of one two-way table. Its command only declares flags.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"
#include "kernels/utility/categorical_loss.h"

namespace sdc::engine {

/// The largest --ctbil-order a flag accepts (the number of tables is bounded apart:
/// distributed::kMaxCtbilTables).
inline constexpr std::int64_t kMaxCtbilOrder = 64;

/// The options of `sdc utility` (docs/utility.md), one field per flag of engine/cli/utility_command.cpp.
struct UtilityStepOptions {
  std::filesystem::path input;   ///< the original file
  std::filesystem::path masked;  ///< the masked file: the same records in the same order
  std::optional<std::filesystem::path> report;
  std::vector<std::string> variables;  ///< continuous variables compared
  std::optional<std::string> id;       ///< identifier variable checked equal in both files
  std::vector<double> component_weights;

  std::vector<std::string> categorical;  ///< categorical variables compared
  std::vector<std::string> ordinal;      ///< of those, the ordinal ones (ranked in the original's code order)
  utility::OrdinalDistance ordinal_distance = utility::OrdinalDistance::kRank;
  utility::RecordLossForm pril_form = utility::RecordLossForm::kText;
  std::optional<std::int64_t> ctbil_order;         ///< K of CTBIL; default min(2, categorical variables)
  std::vector<std::string> table_rows;             ///< the Shlomo & Young table: its rows' variables
  std::vector<std::string> table_columns;          ///< and its columns' (both or neither)
  std::optional<std::string> table_target_column;  ///< BVR's target cell: LABEL[/LABEL...], one per column variable
};

class UtilityStep : public Step {
 public:
  UtilityStepOptions options;  ///< set by the command's flags (or a job step's keys) before run()
};

std::unique_ptr<UtilityStep> make_utility_step();

}  // namespace sdc::engine
