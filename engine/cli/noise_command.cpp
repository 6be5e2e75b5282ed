// `sdc noise`: the flags of the noise step (engine/perturbation/noise_step.h, docs/noise.md).

#include "engine/cli/commands.h"
#include "engine/perturbation/noise_step.h"

namespace sdc::engine {
namespace {

class NoiseCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "noise",
        "noise on continuous variables: additive (percent of each sd), correlated (percent of the covariance), "
        "exact (Oganian & Karr: the noise's sample mean and covariance exactly 0 and cΣ), or noise that restores "
        "the covariance a microaggregation took away (restore-covariance, restore-covariance-exact) (docs/noise.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--variables", options_.variables, "continuous variables to mask")->required();
    // Not --method: in a job, `method` names the step.
    app->add_option("--model", options_.model,
                    "the noise model: additive (default), correlated, exact, restore-covariance or "
                    "restore-covariance-exact")
        ->type_name("additive|correlated|exact|restore-covariance|restore-covariance-exact");
    app->add_option("--original", options_.original,
                    "restore-covariance models: the file before masking (the records of --input, in the same "
                    "order); the noise's covariance is Cov(original) - Cov(input), projected onto the positive "
                    "semi-definite matrices")
        ->type_name("FILE");
    paths_.reads("--original", options_.original);
    app->add_option("--noise-percent-sd", options_.noise_percent_sd,
                    "additive: the noise sd in percent of each variable's sd (default 150)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("PCT");
    app->add_option("--noise-percent-cov", options_.noise_percent_cov,
                    "correlated and exact: the noise covariance in percent of the variables' covariance (default 150)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("PCT");
    app->add_flag("--orthogonal", options_.orthogonal,
                  "exact: make the noise uncorrelated with the data, so that cov(x + e) = (1 + c) cov(x) exactly "
                  "(restore-covariance-exact: cov(x + e) = cov(original))");
    app->add_flag("--restore-variance", options_.restore_variance,
                  "correlated and exact: release x̄ + (x' − x̄)/sqrt(1 + c), whose covariance is the original's");
    add_seed_option(*app, paths_, options_.seed_file);
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, true);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<NoiseStep> step_ = make_noise_step();
  NoiseStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_noise_command() { return std::make_unique<NoiseCommand>(); }

}  // namespace sdc::engine
