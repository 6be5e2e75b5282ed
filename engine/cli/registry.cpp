#include "engine/cli/commands.h"

namespace sdc::engine {

std::vector<std::unique_ptr<Command>> make_commands() {
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_import_command());
  commands.push_back(make_export_command());
  commands.push_back(make_info_command());
  commands.push_back(make_generate_command());
  commands.push_back(make_risk_command());
  commands.push_back(make_recode_command());
  commands.push_back(make_suppress_command());
  commands.push_back(make_anonymize_command());
  commands.push_back(make_pram_command());
  commands.push_back(make_swap_command());
  commands.push_back(make_noise_command());
  commands.push_back(make_microaggregate_command());
  commands.push_back(make_linkage_command());
  commands.push_back(make_utility_command());
  commands.push_back(make_table_command());
  commands.push_back(make_perturb_table_command());
  commands.push_back(make_reorder_command());
  commands.push_back(make_report_command());
  commands.push_back(make_run_command());
  return commands;
}

}  // namespace sdc::engine
