// `sdc suppress`: the flags of the suppress step (engine/recoding/suppress_step.h, docs/recoding.md).

#include "engine/cli/commands.h"
#include "engine/recoding/suppress_step.h"

namespace sdc::engine {
namespace {

class SuppressCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "suppress",
        "local suppression to k-anonymity: single key values set missing until every record shares its keys with "
        "at least k - 1 others, missing values matching any value (sdcMicro's localSuppression; docs/recoding.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--keys", options_.keys, "categorical key variables (quasi-identifiers)")
        ->required();
    app->add_option("--k-anonymity", options_.k,
                    "k: the smallest number of records sharing a record's keys (default 2)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("K");
    app->add_option("--alpha", options_.alpha,
                    "weight of a match on a missing value when counting (1: a missing value matches every value)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("A");
    app->add_option("--importance", options_.importance,
                    "VAR=I for every key: 1 is kept longest, ties allowed (default: the keys with fewer levels kept "
                    "longer)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("VAR=I[,VAR=I...]");
    add_mode_option(*app, options_.mode);
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, false);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<SuppressStep> step_ = make_suppress_step();
  SuppressStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_suppress_command() { return std::make_unique<SuppressCommand>(); }

}  // namespace sdc::engine
