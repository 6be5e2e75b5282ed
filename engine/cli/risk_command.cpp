// `sdc risk`: the flags of the risk step (engine/risk/risk_step.h, docs/risk.md).

#include <cmath>
#include <map>

#include "engine/cli/commands.h"
#include "engine/risk/risk_step.h"

namespace sdc::engine {
namespace {

class RiskCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "risk",
        "disclosure risk of key variables: fk, fk_weighted (Fk), k-anonymity, individual, household and "
        "global risk, l-diversity");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--keys", options_.keys, "categorical key variables (quasi-identifiers)")
        ->required();
    app->add_option("--weight", options_.weight,
                    "sampling weight variable; without it fk_weighted equals fk and the individual risk is 1/fk")
        ->type_name("VAR");
    app->add_option("--household", options_.household,
                    "household id variable: ranks split the file between households (the file must be sorted by it); "
                    "adds the household risk")
        ->type_name("VAR");
    app->add_option("--k-anonymity", options_.k_anonymity, "a record violates k-anonymity when its fk is below K")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("K");
    const std::map<std::string, MissingKeys> missing{
        {"reject", MissingKeys::kReject}, {"category", MissingKeys::kCategory}, {"wildcard", MissingKeys::kWildcard}};
    app->add_option("--missing", options_.missing,
                    "missing key values: reject (an error naming the first one), category (missing is a level of its "
                    "own) or wildcard (sdcMicro: a missing value matches every value, weighted by --alpha)")
        ->transform(CLI::CheckedTransformer(missing, CLI::ignore_case))
        ->type_name("reject|category|wildcard");
    app->add_option("--alpha", options_.alpha,
                    "with --missing wildcard, the weight of a record with missing keys in the classes it matches")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("A");
    const std::map<std::string, IndividualRiskMethod> methods{{"approx", IndividualRiskMethod::kApprox},
                                                              {"exact", IndividualRiskMethod::kExact}};
    app->add_option("--risk-method", options_.risk_method,
                    "individual risk for fk > 2: approx (p/(f-q), sdcMicro's default) or exact (the integral)")
        ->transform(CLI::CheckedTransformer(methods, CLI::ignore_case))
        ->type_name("approx|exact");
    add_mode_option(*app, options_.mode);
    app->add_option("--qual", options_.qual, "final correction factor of the individual risk (sdcMicro qual)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("Q");
    app->add_option("--global-risk-target", options_.global_risk_target,
                    "target global risk: the report gives the individual-risk threshold that meets it, and records "
                    "above it are flagged")
        ->check(CLI::Range(std::nextafter(0.0, 1.0), std::nextafter(1.0, 0.0)))
        ->type_name("RHO");
    add_variable_list_option(*app, "--sensitive", options_.sensitive,
                             "categorical sensitive variables: l-diversity of each within the key classes");
    app->add_option("--l-diversity", options_.l_diversity,
                    "the report counts classes whose distinct l-diversity is below L")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("L");
    app->add_option("--l-recursion-constant", options_.l_recursion_constant, "c of recursive (c,l)-diversity")
        ->check(CLI::PositiveNumber)
        ->type_name("C");
    for (auto& measure : measures_) measure->add_options(*app, paths_);
    add_seed_option(*app, paths_, options_.seed_file);
    add_filters_option(*app, options_.filters);
    app->add_flag("--resume", options_.resume,
                  "skip the step when the output exists and was made from the same input, parameters and seed");
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<RiskStep> step_ = make_risk_step();
  RiskStepOptions& options_ = step_->options;
  std::vector<std::unique_ptr<RiskMeasure>>& measures_ = step_->measures;
};

}  // namespace

std::unique_ptr<Command> make_risk_command() { return std::make_unique<RiskCommand>(); }

}  // namespace sdc::engine
