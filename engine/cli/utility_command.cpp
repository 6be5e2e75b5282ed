// `sdc utility`: the flags of the utility step (engine/utility/utility_step.h, docs/utility.md).

#include "engine/cli/commands.h"
#include "engine/utility/utility_step.h"

namespace sdc::engine {
namespace {

class UtilityCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "utility",
        "information loss of a masked file against its original for continuous variables: SSE/SST on "
        "z-scores, the Domingo-Ferrer & Torra battery, IL1, IL1s, eigen and IL_correl (docs/utility.md)");
    add_input_option(*app, paths_, options_.input);
    add_masked_option(*app, paths_, options_.masked);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--variables", options_.variables, "continuous variables to compare")->required();
    add_id_option(*app, options_.id);
    app->add_option("--component-weights", options_.component_weights,
                    "w_j of the RF and F rows of the battery, one per principal component (default: the share "
                    "of variance each explains, lambda_j / p)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("W[,W...]");
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<UtilityStep> step_ = make_utility_step();
  UtilityStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_utility_command() { return std::make_unique<UtilityCommand>(); }

}  // namespace sdc::engine
