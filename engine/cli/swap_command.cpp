// `sdc swap rank|targeted|shuffle|frontier`: the flags of the swapping steps (engine/swapping/*_step.h,
// docs/swapping.md). `swap` groups the swapping methods; each subcommand is one step.

#include "engine/cli/commands.h"
#include "engine/swapping/data_shuffle_step.h"
#include "engine/swapping/karr_sanil_step.h"
#include "engine/swapping/rank_swap_step.h"
#include "engine/swapping/targeted_swap_step.h"

namespace sdc::engine {
namespace {

class SwapCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* swap = parent.add_subcommand("swap", "swapping of values between records (docs/swapping.md)");
    swap->require_subcommand(1);
    auto* rank = swap->add_subcommand(
        "rank",
        "rank swapping of numeric variables: each value is exchanged with one of a nearby rank, after the top and "
        "bottom values are coded to their means (docs/swapping.md)");
    add_input_option(*rank, paths_, rank_.input);
    add_output_option(*rank, paths_, rank_.output);
    add_report_option(*rank, paths_, rank_.report);
    add_variable_list_option(*rank, "--variables", rank_.variables, "continuous variables to swap, each on its own")
        ->required();
    rank->add_option("--top-percent", rank_.top_percent,
                     "the largest values replaced by their mean before swapping, in percent (default 5)")
        ->check(CLI::Range(0.0, 100.0))
        ->type_name("PCT");
    rank->add_option("--bottom-percent", rank_.bottom_percent,
                     "the smallest values replaced by their mean before swapping, in percent (default 5)")
        ->check(CLI::Range(0.0, 100.0))
        ->type_name("PCT");
    rank->add_option("--window-fraction", rank_.window_fraction,
                     "the window of partners as a fraction of the values swapped (the reference's P)")
        ->check(CLI::PositiveNumber)
        ->type_name("P");
    rank->add_option("--window-percent", rank_.window_percent,
                     "the window of partners in percent of the values swapped (0 < PCT <= 100)")
        ->check(CLI::Range(0.0, 100.0))
        ->type_name("PCT");
    rank->add_option("--r0", rank_.r0,
                     "the window from the correlation to keep between original and swapped values (default 0.95)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("R0");
    rank->add_option("--k0", rank_.k0, "the window from the relative change of the mean to allow")
        ->check(CLI::PositiveNumber)
        ->type_name("K0");
    add_mode_option(*rank, rank_.mode);
    rank->add_option("--reference-seed", rank_.reference_seed,
                     "--mode compat: the seed of the reference's taus88 stream (0 to 4294967295)")
        ->check(whole_number_in(0, 4'294'967'295))
        ->type_name("N");
    add_seed_option(*rank, paths_, rank_.seed_file);
    add_filters_option(*rank, rank_.filters);
    add_resume_flag(*rank, paths_, rank_.output, rank_.resume, true);
    add_targeted(*swap);
    add_shuffle(*swap);
    add_frontier(*swap);
    return swap;
  }

  Step& step() override {
    if (targeted_app_ != nullptr && targeted_app_->parsed()) return *targeted_step_;
    if (shuffle_app_ != nullptr && shuffle_app_->parsed()) return *shuffle_step_;
    if (frontier_app_ != nullptr && frontier_app_->parsed()) return *frontier_step_;
    return *rank_step_;
  }

 private:
  void add_targeted(CLI::App& swap) {
    auto* targeted = swap.add_subcommand(
        "targeted",
        "targeted record swapping of households across a geography hierarchy: households at risk within their "
        "area, and a quota of others, exchange their geography with alike households of other areas "
        "(docs/swapping.md)");
    targeted_app_ = targeted;
    add_input_option(*targeted, paths_, targeted_.input);
    add_output_option(*targeted, paths_, targeted_.output);
    add_report_option(*targeted, paths_, targeted_.report);
    targeted
        ->add_option("--household", targeted_.household,
                     "the household id variable (records of a household "
                     "contiguous); households are swapped whole")
        ->required()
        ->type_name("VAR");
    add_variable_list_option(*targeted, "--hierarchy", targeted_.hierarchy,
                             "geography variables from the coarsest to the finest level, each area inside one parent")
        ->required();
    add_variable_list_option(*targeted, "--risk-variables", targeted_.risk_variables,
                             "categorical variables whose counts within each area give the risk")
        ->required();
    targeted
        ->add_option("--k-anonymity", targeted_.k_anonymity,
                     "households with a member in a cell of fewer than K persons must swap (default 3; 0: none)")
        ->check(whole_number_in(0, 1'000'000'000))
        ->type_name("K");
    targeted
        ->add_option("--risk-threshold", targeted_.risk_threshold,
                     "households with a member of risk 1/count above R must swap (instead of --k-anonymity)")
        ->check(CLI::PositiveNumber)
        ->type_name("R");
    targeted
        ->add_option("--swap-fraction", targeted_.swap_fraction,
                     "the share of households to swap at least, spread over the finest areas (default 0.05)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("F");
    add_repeatable_list_option(*targeted, "--similar", targeted_.similar,
                               "a similarity profile: donors must equal the household on these variables; repeat "
                               "for fallbacks, tried in order (none: any donor)");
    add_variable_list_option(*targeted, "--carry-along", targeted_.carry_along,
                             "household-level variables that move with the geography");
    add_seed_option(*targeted, paths_, targeted_.seed_file);
    add_filters_option(*targeted, targeted_.filters);
    add_resume_flag(*targeted, paths_, targeted_.output, targeted_.resume, true);
  }

  void add_shuffle(CLI::App& swap) {
    shuffle_app_ = swap.add_subcommand(
        "shuffle",
        "data shuffling of continuous variables: each variable's own values are redistributed over the records by "
        "the ranks of values drawn from their distribution given --given (reverse mapping) (docs/swapping.md)");
    add_input_option(*shuffle_app_, paths_, shuffle_.input);
    add_output_option(*shuffle_app_, paths_, shuffle_.output);
    add_report_option(*shuffle_app_, paths_, shuffle_.report);
    add_variable_list_option(*shuffle_app_, "--variables", shuffle_.variables,
                             "confidential continuous variables to shuffle")
        ->required();
    add_variable_list_option(*shuffle_app_, "--given", shuffle_.given,
                             "non-confidential continuous variables the shuffled values stay related to");
    add_seed_option(*shuffle_app_, paths_, shuffle_.seed_file);
    add_filters_option(*shuffle_app_, shuffle_.filters);
    add_resume_flag(*shuffle_app_, paths_, shuffle_.output, shuffle_.resume, true);
  }

  void add_frontier(CLI::App& swap) {
    auto* app = swap.add_subcommand(
        "frontier",
        "Karr-Sanil data swapping: candidate releases swap attributes between random pairs of records at several "
        "rates; their disclosure risk and data utility give a frontier, and the best release under --risk-bound "
        "is written (docs/swapping.md)");
    frontier_app_ = app;
    add_input_option(*app, paths_, frontier_.input);
    app->add_option("--output,-o", frontier_.output,
                    "the best release under --risk-bound (written under a temporary name, renamed when complete); "
                    "without it only the frontier is computed")
        ->type_name("FILE");
    paths_.writes("--output", frontier_.output);
    add_report_option(*app, paths_, frontier_.report);
    add_variable_list_option(*app, "--variables", frontier_.variables,
                             "the release's categorical variables: the table whose small cells give the risk and "
                             "whose change gives the utility")
        ->required();
    add_repeatable_list_option(*app, "--swap-attributes", frontier_.swap_attributes,
                               "variables swapped together in one candidate (repeat for more candidates; default: "
                               "each variable of --variables and each pair)");
    app->add_option("--rates", frontier_.rates,
                    "swap rates s: a candidate swaps floor(s n / 2) pairs (default 0.01,0.02,0.05,0.1,0.2)")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("S[,S...]");
    app->add_option("--replicates", frontier_.replicates,
                    "random pairings per candidate, averaged for the frontier (default 5)")
        ->check(whole_number_in(1, 1000))
        ->type_name("R");
    add_variable_list_option(*app, "--within", frontier_.within,
                             "categorical variables both records of a pair must share (no swapping across them)");
    app->add_option("--utility", frontier_.utility,
                    "the data utility of the frontier: minus the Hellinger distance, total variation or absolute "
                    "entropy change of the table, or the log-likelihood change under --loglinear (default hellinger)")
        ->type_name("hellinger|total-variation|entropy|loglinear");
    app->add_option("--loglinear", frontier_.loglinear,
                    "the log-linear model M* (independence, two-way or terms a*b+b*c of --variables), or candidates "
                    "M1;M2;... of which --loglinear-select picks one (default independence;two-way)")
        ->type_name("MODEL[;MODEL...]");
    app->add_option("--loglinear-select", frontier_.loglinear_select,
                    "the criterion choosing M* among several models on the original table (default bic)")
        ->type_name("aic|bic");
    app->add_option("--loglinear-parameters", frontier_.loglinear_parameters,
                    "refit: M* is fitted again to each swapped table (default); original: the original table's fit")
        ->type_name("refit|original");
    app->add_option("--risk-bound", frontier_.risk_bound,
                    "the largest mean disclosure risk of the release written to --output")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("ALPHA");
    app->add_flag("--unchanged-count-as-unswapped", frontier_.unchanged_count_as_unswapped,
                  "records of a pair whose values did not change count as unswapped in the risk");
    app->add_option("--frontier-table", frontier_.frontier_table,
                    "the candidates' mean risk and utility as CSV (default: beside --output, else --report, as "
                    "NAME.frontier.csv)")
        ->type_name("FILE.csv");
    app->add_option("--frontier-plot", frontier_.frontier_plot,
                    "the frontier as an SVG plot (default: beside --output, else --report, as NAME.frontier.svg)")
        ->type_name("FILE.svg");
    paths_.declare("--frontier-table", io::PathAccess::kWrite,
                   [this] { return std::vector<std::filesystem::path>{frontier_files(frontier_).table}; });
    paths_.declare("--frontier-plot", io::PathAccess::kWrite,
                   [this] { return std::vector<std::filesystem::path>{frontier_files(frontier_).plot}; });
    add_seed_option(*app, paths_, frontier_.seed_file);
    add_filters_option(*app, frontier_.filters);
    add_resume_flag(*app, paths_, frontier_.output, frontier_.resume, true);
  }

  CLI::App* targeted_app_ = nullptr;
  CLI::App* shuffle_app_ = nullptr;
  std::unique_ptr<RankSwapStep> rank_step_ = make_rank_swap_step();
  RankSwapStepOptions& rank_ = rank_step_->options;
  std::unique_ptr<TargetedSwapStep> targeted_step_ = make_targeted_swap_step();
  TargetedSwapStepOptions& targeted_ = targeted_step_->options;
  std::unique_ptr<DataShuffleStep> shuffle_step_ = make_data_shuffle_step();
  DataShuffleStepOptions& shuffle_ = shuffle_step_->options;
  CLI::App* frontier_app_ = nullptr;
  std::unique_ptr<KarrSanilStep> frontier_step_ = make_karr_sanil_step();
  KarrSanilStepOptions& frontier_ = frontier_step_->options;
};

}  // namespace

std::unique_ptr<Command> make_swap_command() { return std::make_unique<SwapCommand>(); }

}  // namespace sdc::engine
