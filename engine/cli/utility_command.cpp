// `sdc utility`: the flags of the utility step (engine/utility/utility_step.h, docs/utility.md).

#include <map>
#include <string>

#include "engine/cli/commands.h"
#include "engine/utility/utility_step.h"

namespace sdc::engine {
namespace {

class UtilityCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "utility",
        "information loss of a masked file against its original: for continuous variables SSE/SST on "
        "z-scores, the Domingo-Ferrer & Torra battery, IL1, IL1s, eigen and IL_correl; for categorical ones the "
        "direct comparison, EBIL, PRIL, CTBIL with table distances and the Shlomo & Young measures of a two-way "
        "table (docs/utility.md)");
    add_input_option(*app, paths_, options_.input);
    add_masked_option(*app, paths_, options_.masked);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(
        *app, "--variables", options_.variables,
        "continuous variables to compare (give --variables, --categorical or a table, or several)");
    add_id_option(*app, options_.id);
    app->add_option("--component-weights", options_.component_weights,
                    "w_j of the RF and F rows of the battery, one per principal component (default: the share "
                    "of variance each explains, lambda_j / p)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("W[,W...]");
    add_variable_list_option(*app, "--categorical", options_.categorical,
                             "categorical variables to compare: direct distance, records changed, EBIL and PRIL "
                             "each, CTBIL over their tables of up to --ctbil-order variables");
    add_variable_list_option(*app, "--ordinal", options_.ordinal,
                             "of the --categorical variables, the ordinal ones (ranked in the original's code order)");
    const std::map<std::string, utility::OrdinalDistance> distances{{"rank", utility::OrdinalDistance::kRank},
                                                                    {"printed", utility::OrdinalDistance::kPrinted}};
    app->add_option("--ordinal-distance", options_.ordinal_distance,
                    "distance between ordinal categories: rank (|rank - rank'|/(|D| - 1), default) or printed "
                    "(categories from min to max over |D|, as the source prints it)")
        ->transform(CLI::CheckedTransformer(distances, CLI::ignore_case))
        ->type_name("rank|printed");
    const std::map<std::string, utility::RecordLossForm> forms{{"text", utility::RecordLossForm::kText},
                                                               {"printed", utility::RecordLossForm::kPrinted}};
    app->add_option("--pril-form", options_.pril_form,
                    "per-record loss PRIL: text (-ln P(V = i | V' = j), default) or printed (-ln P(V' = j | V = i))")
        ->transform(CLI::CheckedTransformer(forms, CLI::ignore_case))
        ->type_name("text|printed");
    app->add_option("--ctbil-order", options_.ctbil_order,
                    "K of CTBIL: the tables of every 1 to K of the --categorical variables (default 2; at most "
                    "their number)")
        ->check(whole_number_in(1, kMaxCtbilOrder))
        ->type_name("K");
    add_variable_list_option(*app, "--table-rows", options_.table_rows,
                             "categorical variables whose combinations are the rows of the Shlomo & Young table");
    add_variable_list_option(*app, "--table-columns", options_.table_columns,
                             "categorical variables whose combinations are the cells of each row of that table");
    app->add_option("--table-target-column", options_.table_target_column,
                    "the column of that table whose share of each row BVR compares: one level label per "
                    "--table-columns variable, in their order, separated by '/' (default: no BVR)")
        ->allow_extra_args(false)
        ->type_name("LABEL[/LABEL...]");
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
