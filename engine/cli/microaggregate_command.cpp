// `sdc microaggregate`: the flags of the microaggregation step (engine/microaggregation/microaggregation_step.h,
// docs/microaggregation.md).

#include "engine/cli/commands.h"
#include "engine/microaggregation/microaggregation_step.h"

namespace sdc::engine {
namespace {

class MicroaggregateCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "microaggregate",
        "microaggregation of continuous variables: records are grouped by similarity into groups of at least "
        "--group-size and each value is replaced by its group's mean or median (docs/microaggregation.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--variables", options_.variables, "continuous variables to microaggregate")
        ->required();
    app->add_option("--group-size,-k", options_.group_size, "the least number of records in a group (k, default 3)")
        ->check(whole_number_in(2, kMaxCount))
        ->type_name("K");
    // --algorithm too: in a job, `method` names the step, so a step gives `algorithm: vmdav`.
    app->add_option("--method,--algorithm", options_.method,
                    "mdav (default), vmdav, univariate-optimal (one variable), projection-zscore or projection-pc1")
        ->type_name("METHOD");
    app->add_option("--aggregation", options_.aggregation, "the value of a group: mean (default) or median")
        ->type_name("mean|median");
    add_mode_option(*app, options_.mode);
    app->add_option("--blocking", options_.blocking,
                    "cut the records into blocks microaggregated apart: none (default), strata:VAR[,VAR...] "
                    "(categorical variables; a stratum over --block-max records is cut further by principal axes), "
                    "kdtree (cuts along coordinates), pca-tree (cuts along principal axes) or pc1 (the PC1 order "
                    "cut in chunks); tree and pc1 blocks hold at most --block-max records")
        ->type_name("none|strata:VAR[,VAR]|kdtree|pca-tree|pc1");
    app->add_option("--block-max", options_.block_max,
                    "the most records in a tree or PC1 block, and in a stratum before it is cut (default 10000)")
        ->check(whole_number_in(4, kMaxCount))
        ->type_name("N");
    app->add_option("--gamma", options_.gamma, "V-MDAV's gain factor (default 0.2; 0 never extends a group)")
        ->check(CLI::Range(0.0, 1000.0))
        ->type_name("G");
    app->add_flag("--two-swap", options_.two_swap,
                  "improve the groups by the two-swap local search (exchanges of records between groups that lower "
                  "the SSE; within each block)");
    app->add_option("--two-swap-passes", options_.two_swap_passes,
                    "the most passes of the two-swap search (one exchange per pass; default 100000)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("N");
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, false);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<MicroaggregationStep> step_ = make_microaggregation_step();
  MicroaggregationStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_microaggregate_command() { return std::make_unique<MicroaggregateCommand>(); }

}  // namespace sdc::engine
