#pragma once
// One factory per subcommand; registry.cpp lists them in the order `sdc --help` shows them.

#include <memory>

#include "engine/cli/command.h"

namespace sdc::engine {

std::unique_ptr<Command> make_import_command();
std::unique_ptr<Command> make_export_command();
std::unique_ptr<Command> make_info_command();
std::unique_ptr<Command> make_generate_command();
std::unique_ptr<Command> make_risk_command();
std::unique_ptr<Command> make_recode_command();
std::unique_ptr<Command> make_suppress_command();
std::unique_ptr<Command> make_anonymize_command();
std::unique_ptr<Command> make_pram_command();
std::unique_ptr<Command> make_swap_command();
std::unique_ptr<Command> make_noise_command();
std::unique_ptr<Command> make_microaggregate_command();
std::unique_ptr<Command> make_linkage_command();
std::unique_ptr<Command> make_utility_command();
std::unique_ptr<Command> make_table_command();
std::unique_ptr<Command> make_perturb_table_command();
std::unique_ptr<Command> make_reorder_command();
std::unique_ptr<Command> make_report_command();
std::unique_ptr<Command> make_run_command();

}  // namespace sdc::engine
