// `sdc recode`: the flags of the recode step (engine/recoding/recode_step.h, docs/recoding.md).

#include "engine/cli/commands.h"
#include "engine/recoding/hierarchy_keys.h"
#include "engine/recoding/recode_step.h"

namespace sdc::engine {
namespace {

CLI::Option* add_entry_list(CLI::App& app, const std::string& flag, std::vector<std::string>& entries,
                            const std::string& help, const std::string& form) {
  return app.add_option(flag, entries, help)->delimiter(',')->allow_extra_args(false)->type_name(form);
}

class RecodeCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "recode",
        "global recoding: key variables to a level of their generalisation hierarchy, continuous variables into "
        "intervals, top and bottom coding; recoded variables carry their labels and how they were made "
        "(docs/recoding.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_entry_list(*app, "--levels", options_.levels,
                   "VAR=L: recode VAR to level L of its hierarchy (0 keeps the values; the last level is usually "
                   "the root '*')",
                   "VAR=L[,VAR=L...]");
    app->add_option("--hierarchies", options_.hierarchies,
                    "a directory of hierarchy files, one <prefix>_<VAR>.csv (or <VAR>.csv) per variable of --levels: "
                    "one row per value, one column per level (docs/recoding.md)")
        ->type_name("DIR");
    add_entry_list(*app, "--hierarchy", options_.hierarchy,
                   "VAR=FILE: the hierarchy file of a --levels variable, instead of the one in --hierarchies",
                   "VAR=FILE[,VAR=FILE...]");
    paths_.declare("--hierarchy", io::PathAccess::kRead, [this] {
      return declared_hierarchy_files(entry_variables(options_.levels), options_.hierarchies, options_.hierarchy);
    });
    add_entry_list(*app, "--intervals", options_.intervals,
                   "VAR=SPEC: a continuous variable into intervals (a,b], as sdcMicro's globalRecode: breaks:B0/B1/... "
                   "(given breaks), equidistant:N, logarithmic:N (N intervals over the range) or quantiles:N (N "
                   "intervals of about equal counts)",
                   "VAR=SPEC[,VAR=SPEC...]");
    add_entry_list(*app, "--top-code", options_.top_code,
                   "VAR=T:R: values of a continuous variable above T replaced by R (sdcMicro's topBotCoding)",
                   "VAR=T:R[,VAR=T:R...]");
    add_entry_list(*app, "--bottom-code", options_.bottom_code,
                   "VAR=T:R: values of a continuous variable below T replaced by R", "VAR=T:R[,VAR=T:R...]");
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, false);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<RecodeStep> step_ = make_recode_step();
  RecodeStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_recode_command() { return std::make_unique<RecodeCommand>(); }

}  // namespace sdc::engine
