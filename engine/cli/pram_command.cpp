// `sdc pram`: the flags of the pram step (engine/perturbation/pram_step.h, docs/pram.md).

#include "engine/cli/commands.h"
#include "engine/perturbation/pram_step.h"

namespace sdc::engine {
namespace {

class PramCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "pram",
        "post-randomisation (PRAM) of categorical variables: each record's category is redrawn from a row of "
        "a transition matrix (docs/pram.md)");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--variables", options_.variables, "categorical variables to PRAM")->required();
    add_variable_list_option(*app, "--strata", options_.strata,
                             "categorical stratum variables: one matrix per combination of their values (a missing "
                             "value is a stratum value of its own)");
    app->add_option("--pd", options_.pd,
                    "reference construction: the lower bound of the diagonal d_k ~ U(pd, 1), one probability for all "
                    "variables or VAR=P per variable (others 0.8)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("P|VAR=P[,VAR=P...]");
    app->add_option("--alpha", options_.alpha,
                    "weight of the invariant matrix R against the identity: the records are drawn from "
                    "alpha R + (1 - alpha) I (reference construction, and families or files with --invariant)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("A");
    app->add_option("--matrix", options_.matrix,
                    "the transition matrix of every variable without --matrix-file, or VAR=SPEC per variable (others "
                    "reference): reference (sdcMicro's pram), nE:P, nB:P:B (band), nF:P (frequency-dependent, 3 or "
                    "more categories) or block:B1/B2/... (block diagonal over consecutive levels; each block 1 (kept), "
                    "nE:P:N, nB:P:B:N or nF:P:N with N its number of levels)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("SPEC|VAR=SPEC[,VAR=SPEC...]");
    app->add_option("--matrix-file", options_.matrix_files,
                    "VAR=FILE: a user transition matrix for VAR (CSV with the category labels; docs/pram.md)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("VAR=FILE[,VAR=FILE...]");
    paths_.declare("--matrix-file", io::PathAccess::kRead, [this] {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : options_.matrix_files)
        if (const auto equals = entry.find('='); equals != std::string::npos)
          files.emplace_back(entry.substr(equals + 1));
      return files;
    });
    app->add_option("--matrix-tolerance", options_.matrix_tolerance,
                    "largest |row sum - 1| of a user matrix (default: K x 2.2e-16 for K categories)")
        ->check(CLI::PositiveNumber)
        ->type_name("T");
    app->add_flag("--invariant", options_.invariant,
                  "make a family or user matrix P invariant (R = P Q from the stratum's counts, blended with --alpha); "
                  "the reference construction always is");
    app->add_option("--risk-threshold", options_.risk_threshold,
                    "tau of the PRAM risk rule: a category with fewer than tau records is rare, and safe when its "
                    "risk is at most count / tau")
        ->check(CLI::PositiveNumber)
        ->type_name("TAU");
    app->add_option("--two-way", options_.two_way,
                    "VAR1:VAR2: report the unbiased estimate of the pair's two-way table from the released file and "
                    "its information loss against the original table (RD, mRD, #Inf); at least one variable PRAMmed, "
                    "the other categorical")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("VAR1:VAR2[,VAR1:VAR2...]");
    app->add_option("--regression-target", options_.regression_target,
                    "a continuous variable y: report, per PRAMmed variable, the means of y per category against "
                    "their estimates from the released file (LRD, mLRD)")
        ->type_name("Y");
    add_seed_option(*app, paths_, options_.seed_file);
    add_filters_option(*app, options_.filters);
    add_resume_flag(*app, paths_, options_.output, options_.resume, true);
    return app;
  }

  Step& step() override { return *step_; }

 private:
  std::unique_ptr<PramStep> step_ = make_pram_step();
  PramStepOptions& options_ = step_->options;
};

}  // namespace

std::unique_ptr<Command> make_pram_command() { return std::make_unique<PramCommand>(); }

}  // namespace sdc::engine
