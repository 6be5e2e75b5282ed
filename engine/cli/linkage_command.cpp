// `sdc linkage`: the flags of the linkage step (engine/linkage/linkage_step.h, docs/linkage.md).

#include "engine/cli/commands.h"
#include "engine/linkage/linkage_step.h"

namespace sdc::engine {
namespace {

class LinkageCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "linkage",
        "re-identification risk of masked continuous variables: distance-based record linkage of the original "
        "records against the masked ones, and interval disclosure (docs/linkage.md)");
    add_input_option(*app, paths_, options_.input);
    add_masked_option(*app, paths_, options_.masked);
    app->add_option("--output,-o", options_.output,
                    "write the input with the columns linked, link_credit and interval_disclosed (optional)")
        ->type_name("FILE");
    paths_.writes("--output", options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--variables", options_.variables, "continuous quasi-identifiers to link on")
        ->required();
    add_id_option(*app, options_.id);
    app->add_option("--distance", options_.distance,
                    "dbrl1 (default: each file standardised by its own moments), dbrl1-common, dbrl2, "
                    "mahalanobis-cov, mahalanobis-cov0 or kernel")
        ->type_name("DISTANCE");
    app->add_option("--kernel-degree", options_.kernel_degree, "d of the kernel distance (1 + x.y)^d (default 2)")
        ->check(whole_number_in(1, 16))
        ->type_name("D");
    app->add_option("--direction", options_.direction,
                    "original-to-masked (default: the intruder links original records) or masked-to-original")
        ->type_name("DIRECTION");
    app->add_option("--tile-rows", options_.tile_rows,
                    "records per side of a distance tile (default 256; results do not depend on it)")
        ->check(whole_number_in(1, 65536))
        ->type_name("N");
    app->add_option("--blocking", options_.blocking,
                    "link only within blocks: none (default) or strata:VAR[,VAR...], categorical variables released "
                    "unperturbed (records in different blocks never link)")
        ->type_name("none|strata:VAR[,VAR]");
    app->add_option("--interval-k", options_.interval_k,
                    "k of sd-based interval disclosure, one or more (default 0.05): the interval is the masked "
                    "value +- k sd")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("K[,K...]");
    app->add_option("--rank-interval", options_.rank_interval_percent,
                    "also rank-based interval disclosure with a window of P percent of the records")
        ->check(CLI::Validator(
            [](const std::string& text) {
              double value = 0.0;
              try {
                value = std::stod(text);
              } catch (const std::exception&) {
                return std::string("expected a percentage in (0, 100], got '") + text + "'";
              }
              return value > 0.0 && value <= 100.0 ? std::string()
                                                   : "expected a percentage in (0, 100], got '" + text + "'";
            },
            "PERCENT"))
        ->type_name("P");
    add_filters_option(*app, options_.filters);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<LinkageStep> step_ = make_linkage_step();
  LinkageStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_linkage_command() { return std::make_unique<LinkageCommand>(); }

}  // namespace sdc::engine
