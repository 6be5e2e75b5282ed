// `sdc perturb-table keys|ckm|bootstrap|cell|simulate|adjust`: the flags of the steps that protect tables
// (engine/tables/*_step.h, docs/tables.md). `perturb-table` groups them; each subcommand is one step.

#include <cmath>
#include <string>

#include "engine/cli/commands.h"
#include "engine/tables/adjust_step.h"
#include "engine/tables/cell_key_step.h"
#include "engine/tables/disclosure_simulation_step.h"
#include "engine/tables/record_keys_step.h"
#include "engine/tables/resampling_step.h"

namespace sdc::engine {
namespace {

class PerturbTableCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* perturb = parent.add_subcommand("perturb-table",
                                          "protection of tables: the cell key method and resampling (docs/tables.md)");
    perturb->require_subcommand(1);
    add_keys(*perturb);
    add_ckm(*perturb);
    add_resampling(*perturb);
    add_simulate(*perturb);
    add_adjust(*perturb);
    return perturb;
  }

  Step& step() override {
    if (bootstrap_app_ != nullptr && bootstrap_app_->parsed()) return *bootstrap_step_;
    if (cell_app_ != nullptr && cell_app_->parsed()) return *cell_step_;
    if (simulate_app_ != nullptr && simulate_app_->parsed()) return *simulate_step_;
    if (keys_app_ != nullptr && keys_app_->parsed()) return *keys_step_;
    if (adjust_app_ != nullptr && adjust_app_->parsed()) return *adjust_step_;
    return *ckm_step_;
  }

 private:
  void add_keys(CLI::App& perturb) {
    auto* app = perturb.add_subcommand(
        "keys",
        "the records' cell-key-method keys, added as a variable so that every table of the release perturbs a "
        "cell alike (docs/tables.md)");
    keys_app_ = app;
    add_input_option(*app, paths_, keys_.input);
    add_output_option(*app, paths_, keys_.output);
    add_report_option(*app, paths_, keys_.report);
    app->add_option("--variable", keys_.variable, "the name of the added key variable (default record_key)")
        ->type_name("VAR");
    app->add_option("--key-decimals", keys_.key_decimals,
                    "the keys are multiples of 10^-D in [0, 1) (default 8, as tau-Argus and cellKey write them)")
        ->check(whole_number_in(1, 9))
        ->type_name("D");
    add_seed_option(*app, paths_, keys_.seed_file);
    add_filters_option(*app, keys_.filters);
    add_resume_flag(*app, paths_, keys_.output, keys_.resume, true);
  }

  void add_ckm(CLI::App& perturb) {
    auto* app = perturb.add_subcommand(
        "ckm",
        "the cell key method: each cell's published count (and value) from its count and cell key alone, through "
        "a p-table (docs/tables.md)");
    add_input_option(*app, paths_, ckm_.input);
    add_output_option(*app, paths_, ckm_.output);
    add_report_option(*app, paths_, ckm_.report);
    app->add_option("--ptable", ckm_.ptable,
                    "a frequency p-table file (tau-Argus i;j;p;v;p_int_ub or SAS i;j;p;v;p_int_lb;p_int_ub) instead "
                    "of one built from --max-noise and --variance")
        ->type_name("FILE");
    paths_.reads("--ptable", ckm_.ptable);
    app->add_option("--max-noise", ckm_.max_noise, "D: the largest noise of a count, 1 to 100 (default 2)")
        ->check(whole_number_in(1, 100))
        ->type_name("D");
    app->add_option("--variance", ckm_.variance, "V: the variance of the noise, > 0 (default 1)")
        ->check(CLI::PositiveNumber)
        ->type_name("V");
    app->add_option("--js", ckm_.js, "no published count from 1 to JS: small counts are protected (default 0)")
        ->check(whole_number_in(0, 100))
        ->type_name("JS");
    app->add_option("--pstay", ckm_.pstay,
                    "lower bounds on the probability that a count stays unchanged: one, or one per row of the table")
        ->delimiter(',')
        ->type_name("P[,P...]");
    app->add_option("--mono", ckm_.mono,
                    "probabilities not decreasing up to noise 0: true or false, or one per row (default true)")
        ->type_name("BOOL[,BOOL...]");
    app->add_option("--optim", ckm_.optim, "1: the variance at most V; 4: exactly V (default 1)")
        ->check(CLI::IsMember({1, 4}))
        ->type_name("1|4");
    app->add_option("--lookup", ckm_.lookup,
                    "the lookup rule: tau-argus (cell key below the bound) or sas (at most the bound)")
        ->check(CLI::IsMember({"tau-argus", "sas"}))
        ->type_name("RULE");
    app->add_option("--write-ptable", ckm_.write_ptable, "the p-table used, in the tau-Argus file format")
        ->type_name("FILE");
    paths_.writes("--write-ptable", ckm_.write_ptable);
    app->add_option("--flex", ckm_.flex,
                    "magnitude tables: the flex function's p_S, p_L and flex point, and optionally its exponent q "
                    "(default 3)")
        ->delimiter(',')
        ->type_name("PS,PL,F[,Q]");
    app->add_option("--epsilon", ckm_.epsilon,
                    "magnitude tables: the weights of the largest contributions, 1 first and not increasing, at "
                    "most 6 (default 1)")
        ->delimiter(',')
        ->type_name("E[,E...]");
    app->add_option("--mu-c", ckm_.mu_c, "magnitude tables: the extra noise of sensitive cells (default 0)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("MU");
    app->add_option("--magnitude-keys", ckm_.magnitude_keys,
                    "magnitude tables: the cell key of the non-zero contributors (nonzero, the default) or of all")
        ->check(CLI::IsMember({"nonzero", "all"}))
        ->type_name("WHICH");
    app->add_flag("--scramble-first-key", ckm_.scramble_first_key,
                  "magnitude tables: scramble the key of the largest contribution too (tau-Argus)");
    add_filters_option(*app, ckm_.filters);
    add_resume_flag(*app, paths_, ckm_.output, ckm_.resume, false);
  }

  /// `bootstrap` and `cell`: one step class, one instance per subcommand.
  void add_resampling(CLI::App& perturb) {
    bootstrap_.method = ResamplingMethod::kBootstrap;
    cell_.method = ResamplingMethod::kCell;
    auto* bootstrap = perturb.add_subcommand(
        "bootstrap",
        "Heer's bootstrap table: the leaf cells redrawn as the rounded average of M bootstrap tables, regenerated "
        "until every cell meets the quality condition S; margins added up from them; needs a seed (docs/tables.md)");
    bootstrap_app_ = bootstrap;
    add_resampling_flags(*bootstrap, bootstrap_);
    bootstrap
        ->add_option("--average-m", bootstrap_.average_m,
                     "release the rounded average of M bootstrap tables, 1 to 1000 (default 1; an odd M has no "
                     "rounding ties)")
        ->check(whole_number_in(1, kMaxAveragedTables))
        ->type_name("M");
    bootstrap
        ->add_option("--max-attempts", bootstrap_.max_attempts,
                     "averaged tables generated before giving up, 1 to 1000000 (default 10000)")
        ->check(whole_number_in(1, kMaxResamplingAttempts))
        ->type_name("N");

    auto* cell = perturb.add_subcommand(
        "cell",
        "cell-oriented binomial perturbation with compensation: each leaf cell redrawn until it meets the quality "
        "condition S, then units moved so that the total (or one dimension's margins) stays exact; margins added up "
        "from the leaves; needs a seed (docs/tables.md)");
    cell_app_ = cell;
    add_resampling_flags(*cell, cell_);
    cell->add_option("--preserve-margins", cell_.preserve_margins,
                     "a dimension of the table whose margins stay exact (each of its codes' cells compensated on "
                     "their own); default: only the overall total")
        ->type_name("DIM");
    cell->add_option("--max-redraws", cell_.max_redraws,
                     "binomial draws of one cell before giving up, 1 to 1000000 (default 10000)")
        ->check(whole_number_in(1, kMaxResamplingAttempts))
        ->type_name("N");
  }

  /// S of the quality condition: a finite positive number.
  static CLI::Validator quality_s_value() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
          double value = 0.0;
          try {
            std::size_t used = 0;
            value = std::stod(text, &used);
            if (used == text.size() && value > 0.0 && std::isfinite(value)) return {};
          } catch (const std::exception&) {
          }
          return "expected a positive number, got '" + text + "'";
        },
        "S > 0");
  }

  void add_resampling_flags(CLI::App& app, ResamplingStepOptions& options) {
    add_input_option(app, paths_, options.input);
    add_output_option(app, paths_, options.output);
    add_report_option(app, paths_, options.report);
    app.add_option("--quality-s", options.quality_s,
                   "S of the quality condition: a cell of count x > 0 is released within x +- S*sqrt(x(1 - x/n)) "
                   "(default 2)")
        ->check(quality_s_value())
        ->type_name("S");
    add_seed_option(app, paths_, options.seed_file);
    add_filters_option(app, options.filters);
    add_resume_flag(app, paths_, options.output, options.resume, true);
  }

  void add_simulate(CLI::App& perturb) {
    auto* app = perturb.add_subcommand(
        "simulate",
        "the exact-disclosure study of resampling: P(X = k | X' = k) for released counts k = 1, 2, 3 by Monte Carlo "
        "under the seed paper's prior and large-n limit, beside the analytic values, for every (S, M) pair; report "
        "only; needs a seed (docs/tables.md)");
    simulate_app_ = app;
    app->add_option("--method,--resampling", simulate_.method,
                    "bootstrap (Heer's, the default) or cell (no averaging: M = 1); in a job, the key resampling "
                    "(a job step's method key names the step's method)")
        ->check(CLI::IsMember({"bootstrap", "cell"}))
        ->type_name("bootstrap|cell");
    app->add_option("--quality-s", simulate_.quality_s, "values of S (default 3,2,1.5, the seed paper's Table 1)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(quality_s_value())
        ->type_name("S[,S...]");
    app->add_option("--average-m", simulate_.average_m,
                    "values of M, 1 to 1000 (default 1,3,5 for the bootstrap as in Table 1; 1 for cell)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->check(whole_number_in(1, kMaxAveragedTables))
        ->type_name("M[,M...]");
    app->add_option("--draws", simulate_.draws, "trials per (S, M) pair, 1 to 100000000 (default 1000000)")
        ->check(whole_number_in(1, kMaxSimulationDraws))
        ->type_name("N");
    add_report_option(*app, paths_, simulate_.report);
    add_seed_option(*app, paths_, simulate_.seed_file);
  }

  void add_adjust(CLI::App& perturb) {
    auto* app = perturb.add_subcommand(
        "adjust",
        "a perturbed table made additive again: the weighted least-squares closest figures that satisfy every "
        "equation of the table, solved block by block after reordering the equations into block-angular form "
        "(docs/tables.md)");
    adjust_app_ = app;
    add_input_option(*app, paths_, adjust_.input);
    add_output_option(*app, paths_, adjust_.output);
    add_report_option(*app, paths_, adjust_.report);
    app->add_option("--constraints", adjust_.constraints,
                    "the table's additivity equations in Matrix Market form, one column per cell of its cell space "
                    "(`sdc table tabulate --constraints`); default: the equations of the table's hierarchies")
        ->type_name("FILE.mtx");
    paths_.reads("--constraints", adjust_.constraints);
    app->add_option("--variable", adjust_.variable,
                    "the perturbed cell figure to adjust (default published; published_value for magnitudes)")
        ->type_name("VAR");
    app->add_option("--weights", adjust_.weights,
                    "the cost of changing a cell: inverse (1/max(1,|x|), relative changes; the default) or uniform")
        ->check(CLI::IsMember({"inverse", "uniform"}))
        ->type_name("inverse|uniform");
    app->add_option("--solver", adjust_.solver,
                    "block-angular (the default: blocks factored in parallel, a Schur complement for the linking "
                    "equations) or direct (one sparse Cholesky of the whole system, on the coordinator)")
        ->check(CLI::IsMember({"block-angular", "direct"}))
        ->type_name("SOLVER");
    app->add_option("--blocks", adjust_.blocks, "block-angular: the number of diagonal blocks, at least 2 (default 8)")
        ->check(whole_number_in(2, 1'000'000))
        ->type_name("K");
    app->add_option("--ordering", adjust_.ordering,
                    "block-angular: table (the cells split by the codes of the dimension whose solve is predicted "
                    "cheapest; the default) or multilevel (the equations reordered by multilevel bisection, as sdc "
                    "reorder --form primal does)")
        ->check(CLI::IsMember({"table", "multilevel"}))
        ->type_name("table|multilevel");
    app->add_option("--imbalance", adjust_.imbalance,
                    "--ordering multilevel: the most a block may exceed the mean block size, as a fraction (default "
                    "0.05)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("EPS");
    app->add_option("--partition-seed", adjust_.partition_seed,
                    "--ordering multilevel: the seed of the reordering's random choices (default 1)")
        ->check(whole_number_in(0, kMaxCount))
        ->type_name("N");
    app->add_option("--tolerance", adjust_.tolerance,
                    "the equations hold to this times the largest |figure| (default 1e-12)")
        ->check(CLI::PositiveNumber)
        ->type_name("TOL");
    app->add_option("--preconditioner-terms", adjust_.preconditioner_terms,
                    "block-angular: terms of the power-series preconditioner of the linking system (default 0)")
        ->check(whole_number_in(0, 20))
        ->type_name("H");
    add_filters_option(*app, adjust_.filters);
    add_resume_flag(*app, paths_, adjust_.output, adjust_.resume, false);
  }

  CLI::App* keys_app_ = nullptr;
  std::unique_ptr<RecordKeysStep> keys_step_ = make_record_keys_step();
  RecordKeysStepOptions& keys_ = keys_step_->options;
  std::unique_ptr<CellKeyStep> ckm_step_ = make_cell_key_step();
  CellKeyStepOptions& ckm_ = ckm_step_->options;
  CLI::App* bootstrap_app_ = nullptr;
  std::unique_ptr<ResamplingStep> bootstrap_step_ = make_resampling_step();
  ResamplingStepOptions& bootstrap_ = bootstrap_step_->options;
  CLI::App* cell_app_ = nullptr;
  std::unique_ptr<ResamplingStep> cell_step_ = make_resampling_step();
  ResamplingStepOptions& cell_ = cell_step_->options;
  CLI::App* simulate_app_ = nullptr;
  std::unique_ptr<DisclosureSimulationStep> simulate_step_ = make_disclosure_simulation_step();
  DisclosureSimulationStepOptions& simulate_ = simulate_step_->options;
  CLI::App* adjust_app_ = nullptr;
  std::unique_ptr<AdjustStep> adjust_step_ = make_adjust_step();
  AdjustStepOptions& adjust_ = adjust_step_->options;
};

}  // namespace

std::unique_ptr<Command> make_perturb_table_command() { return std::make_unique<PerturbTableCommand>(); }

}  // namespace sdc::engine
