// `sdc table tabulate|instance`: the flags of the table steps (engine/tables/*_step.h, docs/tables.md).
// `table` groups the steps that make tables; each subcommand is one step.

#include "engine/cli/commands.h"
#include "engine/tables/instance_step.h"
#include "engine/tables/tabulate_step.h"

namespace sdc::engine {
namespace {

class TableCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* table = parent.add_subcommand("table", "frequency and magnitude tables with hierarchies (docs/tables.md)");
    table->require_subcommand(1);
    add_tabulate(*table);
    add_instance(*table);
    return table;
  }

  Step& step() override {
    if (instance_app_ != nullptr && instance_app_->parsed()) return *instance_step_;
    return *tabulate_step_;
  }

 private:
  void add_tabulate(CLI::App& table) {
    auto* app = table.add_subcommand(
        "tabulate",
        "a frequency or magnitude table of the records with every subtotal and total of its dimensions' "
        "hierarchies, the cells' sensitivity and, on request, the table's additivity equations (docs/tables.md)");
    add_input_option(*app, paths_, tabulate_.input);
    app->add_option("--output,-o", tabulate_.output,
                    "the table file: one row per non-empty cell (docs/tables.md; written under a temporary name, "
                    "renamed when complete)")
        ->required()
        ->type_name("FILE");
    paths_.writes("--output", tabulate_.output);
    add_report_option(*app, paths_, tabulate_.report);
    add_variable_list_option(*app, "--geography", tabulate_.geography,
                             "nested geography variables from the coarsest to the finest, one dimension with every "
                             "area under its parent; 'roles': the input's geography variables by level");
    add_variable_list_option(*app, "--dimensions", tabulate_.dimensions,
                             "categorical variables, one dimension each (flat: its levels and their total, unless "
                             "--hierarchy gives one)");
    app->add_option("--hierarchy", tabulate_.hierarchies,
                    "VAR=FILE: the hierarchy of a --dimensions variable, a tau-Argus .hrc file or a code,parent CSV")
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name("VAR=FILE[,VAR=FILE...]");
    paths_.declare("--hierarchy", io::PathAccess::kRead, [this] {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : tabulate_.hierarchies)
        if (const auto equals = entry.find('='); equals != std::string::npos)
          files.emplace_back(entry.substr(equals + 1));
      return files;
    });
    app->add_option("--value", tabulate_.value,
                    "a continuous variable: a magnitude table of its sums, contributors and largest contributions")
        ->type_name("VAR");
    app->add_option("--weight", tabulate_.weight, "sampling weights: weighted counts and sums besides the raw ones")
        ->type_name("VAR");
    app->add_option("--top-contributions", tabulate_.top_contributions,
                    "the largest contributions kept per magnitude cell (default 2; at most 8)")
        ->check(whole_number_in(0, 8))
        ->type_name("K");
    app->add_option("--record-key", tabulate_.record_key,
                    "the records' cell-key-method keys (a continuous variable in [0, 1), `sdc perturb-table keys`): "
                    "each cell gets the sum of its keys")
        ->type_name("VAR");
    app->add_option("--key-decimals", tabulate_.key_decimals,
                    "the record keys are multiples of 10^-D (default 8, as tau-Argus and cellKey write them)")
        ->check(whole_number_in(1, 9))
        ->type_name("D");
    app->add_option("--min-frequency", tabulate_.min_frequency,
                    "minimum frequency rule: a cell of 1 to N-1 records is sensitive")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("N");
    app->add_option("--p-percent", tabulate_.p_percent,
                    "p% rule: a cell is sensitive when its total less its two largest contributions is below P% "
                    "of the largest")
        ->check(CLI::Range(0.0, 100.0))
        ->type_name("P");
    add_repeatable_list_option(*app, "--dominance", tabulate_.dominance,
                               "(n,k) dominance rule: a cell is sensitive when its N largest contributions exceed K% "
                               "of its total (repeat for several rules)")
        ->type_name("N,K");
    app->add_flag("--weighted-rules", tabulate_.weighted_rules,
                  "apply the rules to the weighted table: each contribution counts as often as its weight");
    app->add_option("--max-cells", tabulate_.max_cells,
                    "the largest cell space (the product of the dimensions' codes) the table may have (default 1e9)")
        ->check(whole_number_in(1, std::int64_t{1} << 62))
        ->type_name("N");
    app->add_option("--constraints", tabulate_.constraints,
                    "the additivity matrix A (one row per 'sum of children - parent = 0') in Matrix Market form")
        ->type_name("FILE.mtx");
    paths_.writes("--constraints", tabulate_.constraints);
    app->add_option("--equations", tabulate_.equations,
                    "the cell list and equation list of the table-protection solvers (tau-Argus JJ format), every "
                    "cell of the space included")
        ->type_name("FILE");
    paths_.writes("--equations", tabulate_.equations);
    add_filters_option(*app, tabulate_.filters);
  }

  void add_instance(CLI::App& table) {
    auto* app = table.add_subcommand(
        "instance",
        "a synthetic table-protection instance of a given shape: its additivity matrix in Matrix Market form and, "
        "on request, its cell list and equation list with generated cell values and statuses (docs/tables.md)");
    instance_app_ = app;
    app->add_option("--shape", instance_.shape,
                    "the dimensions separated by 'x': h13, h16 (the named hierarchies of the classic instances), "
                    "c<side> (a side x side cross like h16), f<codes> or a number of codes (13 and 16 are h13 and h16, "
                    "others flat), e.g. 16x16x16")
        ->required()
        ->type_name("SHAPE");
    app->add_option("--output,-o", instance_.output,
                    "the additivity matrix A (one row per 'sum of children - parent = 0') in Matrix Market form "
                    "(written under a temporary name, renamed when complete)")
        ->required()
        ->type_name("FILE.mtx");
    paths_.writes("--output", instance_.output);
    app->add_option("--equations", instance_.equations,
                    "the cell list and equation list of the table-protection solvers (tau-Argus JJ format) with "
                    "generated cell values and statuses; needs a seed")
        ->type_name("FILE");
    paths_.writes("--equations", instance_.equations);
    add_report_option(*app, paths_, instance_.report);
    add_seed_option(*app, paths_, instance_.seed_file);
    app->add_option("--values", instance_.values,
                    "--equations: the leaf cells' values: their Poisson counts (counts, the default) or the sums of "
                    "their contributors' log-normal magnitudes (magnitudes)")
        ->check(CLI::IsMember({"counts", "magnitudes"}))
        ->type_name("counts|magnitudes");
    app->add_option("--mean-count", instance_.mean_count,
                    "--equations: the mean of a non-empty leaf cell's Poisson count of contributors (default 5)")
        ->check(CLI::PositiveNumber & CLI::Range(0.0, 1e6))
        ->type_name("LAMBDA");
    app->add_option("--density", instance_.density,
                    "--equations: the probability that a leaf cell is drawn at all (default 1; 0 to 1)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("D");
    app->add_option("--log-mean", instance_.log_mean,
                    "--values magnitudes: the mean of a contribution's logarithm (default 5)")
        ->check(CLI::Range(-50.0, 50.0))
        ->type_name("MU");
    app->add_option("--log-sd", instance_.log_sd,
                    "--values magnitudes: the standard deviation of a contribution's logarithm (default 1)")
        ->check(CLI::Range(0.0, 10.0))
        ->type_name("SIGMA");
    app->add_option("--min-frequency", instance_.min_frequency,
                    "--equations: minimum frequency rule: a cell of 1 to N-1 contributors is sensitive (default 3)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("N");
    app->add_option("--protection-fraction", instance_.protection_fraction,
                    "--equations: a sensitive cell's lower and upper protection levels as a fraction of its value "
                    "(default 0.1; at least 1, at most the value)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("F");
    app->add_option("--max-cells", instance_.max_cells,
                    "--equations: the most cells the cell list may have; the generator holds about 70 bytes a cell "
                    "(default 2e7)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("N");
    app->add_option("--max-nonzeros", instance_.max_nonzeros,
                    "the most non-zeros A may have; the Matrix Market file takes about 20 bytes each (default 1e8)")
        ->check(whole_number_in(1, std::int64_t{1} << 62))
        ->type_name("N");
  }

  std::unique_ptr<TabulateStep> tabulate_step_ = make_tabulate_step();
  TabulateStepOptions& tabulate_ = tabulate_step_->options;
  CLI::App* instance_app_ = nullptr;
  std::unique_ptr<InstanceStep> instance_step_ = make_instance_step();
  InstanceStepOptions& instance_ = instance_step_->options;
};

}  // namespace

std::unique_ptr<Command> make_table_command() { return std::make_unique<TableCommand>(); }

}  // namespace sdc::engine
