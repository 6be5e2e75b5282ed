#include "engine/utility/utility_step.h"

// Information loss of a masked file (docs/utility.md; docs/methods utility.md). Both files are read in
// the same row ranges (engine/compare/masked_input.h); every rank sums its records, the sums are merged
// over the ranks and the p × p algebra runs once on every rank from the same totals
// (distributed/compose/information_loss.h). Categorical variables are compared on dense tables of
// counts summed over the ranks (distributed/compose/categorical_loss.h).

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "distributed/compose/categorical_loss.h"
#include "distributed/compose/information_loss.h"
#include "engine/compare/masked_input.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

nlohmann::json numbers(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double value : values) out.push_back(number_or_null(value));
  return out;
}

nlohmann::json discrepancy_json(const utility::Discrepancy& d) {
  return {{"mean_square", number_or_null(d.mean_square)},       {"mean_absolute", number_or_null(d.mean_absolute)},
          {"mean_variation", number_or_null(d.mean_variation)}, {"entries", d.entries},
          {"zero_entries_skipped", d.zero_entries_skipped},     {"defined", d.defined}};
}

/// A cross-tabulation is printed in the report up to this many categories (missing included).
constexpr std::uint32_t kMaxReportedCategories = 64;

std::string_view name_of(utility::OrdinalDistance distance) {
  return distance == utility::OrdinalDistance::kRank ? "rank" : "printed";
}
std::string_view name_of(utility::RecordLossForm form) {
  return form == utility::RecordLossForm::kText ? "text" : "printed";
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// Throws InvalidInput naming the file, the flag and the variable when `table` lacks `name` or holds it
/// with another type than categorical.
void require_categorical(const Table& table, const std::string& path, const std::string& flag,
                         const std::string& name) {
  const Column* column = table.find(name);
  if (column == nullptr) throw InvalidInput(path + ": " + flag + ": variable '" + name + "' is not in the file");
  if (column->type() != VariableType::kCategorical)
    throw InvalidInput(path + ": " + flag + ": variable '" + name + "' is " + std::string(to_string(column->type())) +
                       ", expected categorical");
}

/// The labels of --table-target-column, split at '/' and kept exact (a label may hold blanks).
std::vector<std::string> target_labels(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find('/', begin);
    out.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

/// The index, in the grid of the table's columns (the last variable fastest), of the column whose
/// categories carry `labels`: a label is matched against the original's levels, then the masked
/// file's. Throws InvalidInput naming the variable and the label that neither file has.
std::size_t target_column_of(const std::vector<std::string>& labels,
                             std::span<const distributed::ComparedCategorical> columns, const Table& original,
                             const Table& masked) {
  std::size_t column = 0;
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const auto& variable = columns[j];
    const auto find = [&](const std::vector<std::string>& levels) {
      return static_cast<std::size_t>(std::find(levels.begin(), levels.end(), labels[j]) - levels.begin());
    };
    const auto& original_levels = original.require(variable.name).info().levels;
    const auto& masked_levels = masked.require(variable.name).info().levels;
    std::size_t category = 0;
    if (const std::size_t code = find(original_levels); code < original_levels.size())
      category = code + 1;
    else if (const std::size_t masked_code = find(masked_levels); masked_code < masked_levels.size())
      category = static_cast<std::size_t>(variable.domain.masked_category[masked_code + 1]);
    else
      throw InvalidInput("--table-target-column: label '" + labels[j] + "' is not a level of variable '" +
                         variable.name + "' in either file");
    column = column * variable.domain.categories + category;
  }
  return column;
}

/// The usage problems of the options that no flag declaration can state.
void check_options(const UtilityStepOptions& options) {
  if (options.variables.empty() && options.categorical.empty() && options.table_columns.empty())
    throw UsageError(
        "nothing to compare: give --variables (continuous), --categorical, or --table-rows with --table-columns");
  if (options.table_rows.empty() != options.table_columns.empty())
    throw UsageError("--table-rows and --table-columns go together: the rows and the cells of one two-way table");
  for (const auto& name : options.ordinal)
    if (!contains(options.categorical, name))
      throw UsageError("--ordinal: variable '" + name + "' is not in --categorical");
  for (const auto& name : options.categorical)
    if (contains(options.variables, name))
      throw UsageError("--categorical: variable '" + name + "' is also in --variables (continuous)");
  for (const auto& name : options.table_columns)
    if (contains(options.table_rows, name))
      throw UsageError("--table-columns: variable '" + name + "' is also in --table-rows");
  if (options.table_target_column) {
    if (options.table_columns.empty())
      throw UsageError("--table-target-column names a column of the table: give --table-rows and --table-columns");
    const std::size_t labels = target_labels(*options.table_target_column).size();
    if (labels != options.table_columns.size())
      throw UsageError("--table-target-column: " + std::to_string(labels) + (labels == 1 ? " label" : " labels") +
                       " for " + std::to_string(options.table_columns.size()) +
                       " --table-columns variables: give one label per variable, in their order, separated by '/'");
  }
}

nlohmann::json reported(std::uint64_t count, std::int64_t min_count) {
  return reported_count(static_cast<std::int64_t>(count), min_count);
}

/// One compared variable's figures for the report.
nlohmann::json variable_json(const distributed::ComparedCategorical& variable,
                             const std::vector<std::string>& masked_levels, bool ordinal,
                             const std::vector<std::uint64_t>& cross_tabulation,
                             const utility::CategoryComparison& compared, std::int64_t min_count) {
  const std::uint32_t k = variable.domain.categories;
  std::vector<std::uint64_t> masked_totals(k, 0);
  for (std::uint32_t row = 0; row < k; ++row)
    for (std::uint32_t column = 0; column < k; ++column) masked_totals[column] += cross_tabulation[row * k + column];
  // A label only the masked file has is printed when enough masked records carry it.
  nlohmann::json masked_only = nlohmann::json::array();
  for (const std::uint32_t code : variable.domain.masked_only_codes) {
    const auto category = static_cast<std::size_t>(variable.domain.masked_category[code + 1]);
    const auto carried = static_cast<std::int64_t>(masked_totals[category]);
    masked_only.push_back(label_may_be_printed(carried, min_count) ? nlohmann::json(masked_levels[code])
                                                                   : nlohmann::json(nullptr));
  }
  nlohmann::json transitions = nullptr;
  if (k <= kMaxReportedCategories) {
    transitions = nlohmann::json::array();
    for (std::uint32_t row = 0; row < k; ++row) {
      nlohmann::json cells = nlohmann::json::array();
      for (std::uint32_t column = 0; column < k; ++column)
        cells.push_back(reported(cross_tabulation[row * k + column], min_count));
      transitions.push_back(std::move(cells));
    }
  }
  return {{"name", variable.name},
          {"scale", ordinal ? "ordinal" : "nominal"},
          {"categories", variable.domain.original_levels},
          {"masked_only_categories", masked_only},
          {"records_changed", reported(compared.records_changed, min_count)},
          {"missing_original", reported(compared.missing_original, min_count)},
          {"missing_masked", reported(compared.missing_masked, min_count)},
          {"mean_distance", number_or_null(compared.mean_distance)},
          {"ebil", number_or_null(compared.ebil)},
          {"information_loss", number_or_null(compared.information_loss)},
          {"transitions", transitions}};
}

nlohmann::json ctbil_json(const distributed::CategoricalTables& tables,
                          const std::vector<distributed::ComparedCategorical>& variables, std::size_t order) {
  nlohmann::json by_table = nlohmann::json::array();
  for (const auto& table : tables.tables) {
    nlohmann::json names = nlohmann::json::array();
    for (const std::size_t v : table.variables) names.push_back(variables[v].name);
    const auto& d = table.comparison.distances;
    by_table.push_back({{"variables", names},
                        {"cells", table.comparison.cells},
                        {"ctbil", table.comparison.absolute_difference},
                        {"hellinger", number_or_null(d.hellinger)},
                        {"total_variation", number_or_null(d.total_variation)},
                        {"original_entropy", number_or_null(d.original_entropy)},
                        {"masked_entropy", number_or_null(d.masked_entropy)},
                        {"entropy_change", number_or_null(d.entropy_change)},
                        {"kullback_leibler", number_or_null(d.kullback_leibler)}});
  }
  return {{"order", order},
          {"tables", tables.ctbil.tables},
          {"cells", tables.ctbil.cells},
          {"value", tables.ctbil.value},
          {"normalised", number_or_null(tables.ctbil.normalised)},
          {"by_table", by_table}};
}

nlohmann::json shlomo_young_json(const utility::ShlomoYoung& m, const std::vector<std::string>& rows,
                                 const std::vector<std::string>& columns, bool target) {
  const auto rows_or_null = [target](std::uint64_t count) { return target ? nlohmann::json(count) : nullptr; };
  return {{"row_variables", rows},
          {"column_variables", columns},
          {"rows", m.rows},
          {"columns", m.columns},
          {"rows_compared", m.rows_compared},
          {"hd", number_or_null(m.hellinger)},
          {"rad", number_or_null(m.relative_absolute)},
          {"rad_zero_cells_skipped", m.zero_cells_skipped},
          {"aad", number_or_null(m.average_absolute)},
          {"av_original", number_or_null(m.average_variance_original)},
          {"av_masked", number_or_null(m.average_variance_masked)},
          {"rav_percent", number_or_null(m.relative_average_variance)},
          {"cramers_v_original", number_or_null(m.cramers_v_original)},
          {"cramers_v_masked", number_or_null(m.cramers_v_masked)},
          {"rcv_percent", number_or_null(m.relative_cramers_v)},
          {"ent_original", number_or_null(m.entropy_original)},
          {"ent_masked", number_or_null(m.entropy_masked)},
          {"entt_percent", number_or_null(m.relative_entropy)},
          {"rank_distorted_columns", m.rank_distorted_columns},
          {"mean_rank_change_percent", number_or_null(m.mean_rank_change)},
          {"small_cells", m.small_cells},
          {"small_cells_unchanged", m.small_cells_unchanged},
          {"small_cells_unchanged_percent", number_or_null(m.small_cells_unchanged_percent)},
          {"rat", number_or_null(m.relative_absolute_total)},
          {"rat_zero_rows_skipped", m.zero_total_rows_skipped},
          {"at", number_or_null(m.absolute_total)},
          {"bv_original", number_or_null(m.between_variance_original)},
          {"bv_masked", number_or_null(m.between_variance_masked)},
          {"bvr", number_or_null(m.between_variance_ratio)},
          {"bv_rows_original", rows_or_null(m.between_variance_rows_original)},
          {"bv_rows_masked", rows_or_null(m.between_variance_rows_masked)},
          {"l2_original", number_or_null(m.likelihood_ratio_original)},
          {"l2_masked", number_or_null(m.likelihood_ratio_masked)},
          {"lr", number_or_null(m.likelihood_ratio)},
          {"wilcoxon",
           {{"cells", m.bias.differences},
            {"w_plus", m.bias.w_plus},
            {"z", number_or_null(m.bias.z)},
            {"p_value", number_or_null(m.bias.p_value)}}}};
}

class UtilityStepImpl final : public UtilityStep {
 public:
  void run(const RunContext& context) override {
    check_options(options);
    const auto comm = distributed::Communicator::world();
    const std::size_t ctbil_order =
        std::min(static_cast<std::size_t>(options.ctbil_order.value_or(2)), options.categorical.size());

    StepFrame frame(context, "utility",
                    {{"variables", options.variables},
                     {"id", options.id ? nlohmann::json(*options.id) : nlohmann::json(nullptr)},
                     {"component-weights", options.component_weights},
                     {"categorical", options.categorical},
                     {"ordinal", options.ordinal},
                     {"ordinal-distance", name_of(options.ordinal_distance)},
                     {"pril-form", name_of(options.pril_form)},
                     {"ctbil-order", ctbil_order},
                     {"table-rows", options.table_rows},
                     {"table-columns", options.table_columns},
                     {"table-target-column", options.table_target_column ? nlohmann::json(*options.table_target_column)
                                                                         : nlohmann::json(nullptr)}},
                    comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    io::Hdf5WriteOptions unused_write_options;
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt, {"", "utility", step.parameters, {}, {}, {}},
                        unused_write_options, clock, OutputRelease::kAnalysis, {{"masked", options.masked}});
    const auto categorical_flags = [&](const Table& table, const std::string& path) {
      for (const auto& name : options.categorical) require_categorical(table, path, "--categorical", name);
      for (const auto& name : options.table_rows) require_categorical(table, path, "--table-rows", name);
      for (const auto& name : options.table_columns) require_categorical(table, path, "--table-columns", name);
    };
    categorical_flags(opened.part.table, options.input.string());
    std::vector<std::string> read = options.variables;
    for (const auto* names : {&options.categorical, &options.table_rows, &options.table_columns})
      for (const auto& name : *names)
        if (!contains(read, name)) read.push_back(name);
    const Table masked_part = read_masked_part(comm, opened.part, options.masked, read, options.id);
    categorical_flags(masked_part, options.masked.string());
    clock.lap("masked");

    step.results = {{"records", opened.part.summary.row_count}};
    if (!options.variables.empty()) compare_continuous(comm, opened.part.table, masked_part, step, clock);
    if (!options.categorical.empty() || !options.table_columns.empty())
      step.results["categorical"] = compare_categorical(comm, opened.part.summary.row_count, opened.part.table,
                                                        masked_part, ctbil_order, context.report_min_count, clock);
    timer.stop();
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
    for (const auto& name : options.categorical)
      expect_variable(available, name, VariableType::kCategorical, "categorical", problems);
    for (const auto& name : options.table_rows)
      expect_variable(available, name, VariableType::kCategorical, "table-rows", problems);
    for (const auto& name : options.table_columns)
      expect_variable(available, name, VariableType::kCategorical, "table-columns", problems);
  }

 private:
  void compare_continuous(const distributed::Communicator& comm, const Table& original_table, const Table& masked_table,
                          StepRecord& step, PhaseClock& clock) const {
    const ContinuousColumns original = continuous_columns(original_table, options.variables);
    const ContinuousColumns masked = continuous_columns(masked_table, options.variables);
    utility::InformationLoss loss;
    try {
      loss = distributed::distributed_information_loss(comm, original.columns, masked.columns,
                                                       {options.component_weights});
    } catch (const ParameterError& error) {
      if (options.component_weights.empty()) throw;
      throw UsageError(std::string("--component-weights: ") + error.what());
    }
    clock.lap("information loss");

    nlohmann::json correlation_variables = nlohmann::json::array();
    for (std::size_t j : loss.correlation_variables) correlation_variables.push_back(options.variables[j]);
    step.results.update({{"records", loss.records},
                         {"variables", options.variables},
                         {"sse", loss.sse},
                         {"sst", loss.sst},
                         {"il_percent", loss.il_percent},
                         {"constant_variables", loss.constant_variables},
                         {"battery",
                          {{"values", discrepancy_json(loss.values)},
                           {"covariances", discrepancy_json(loss.covariances)},
                           {"correlations", discrepancy_json(loss.correlations)},
                           {"component_loadings", discrepancy_json(loss.component_loadings)},
                           {"communalities", discrepancy_json(loss.communalities)},
                           {"score_coefficients", discrepancy_json(loss.score_coefficients)},
                           {"means", discrepancy_json(loss.means)},
                           {"variances", discrepancy_json(loss.variances)}}},
                         {"components",
                          {{"correlation_variables", correlation_variables},
                           {"eigenvalues_original", numbers(loss.eigenvalues_original)},
                           {"eigenvalues_masked", numbers(loss.eigenvalues_masked)},
                           {"eigen_gaps_original", numbers(loss.eigen_gaps_original)},
                           {"eigen_gaps_masked", numbers(loss.eigen_gaps_masked)},
                           {"weights", numbers(loss.component_weights)},
                           {"original_correlation_singular", loss.original_correlation_singular},
                           {"masked_correlation_singular", loss.masked_correlation_singular}}},
                         {"il1", number_or_null(loss.il1)},
                         {"il1s_sum", number_or_null(loss.il1s_sum)},
                         {"il1s_mean", number_or_null(loss.il1s_mean)},
                         {"eigen", number_or_null(loss.eigen)},
                         {"il_correl", number_or_null(loss.il_correl)}});
    if (loss.original_correlation_singular || loss.masked_correlation_singular)
      step.warnings.push_back(std::string("the correlation matrix of the ") +
                              (loss.original_correlation_singular ? "original" : "masked") +
                              " file is singular: F - F' and IL_correl are not defined" +
                              (loss.original_correlation_singular ? ", nor eigen" : ""));
    if (comm.is_coordinator())
      spdlog::info("utility: {} records, {} variables, information loss {:.4f}% (SSE/SST on z-scores)", loss.records,
                   options.variables.size(), loss.il_percent);
  }

  nlohmann::json compare_categorical(const distributed::Communicator& comm, std::int64_t records, const Table& original,
                                     const Table& masked, std::size_t ctbil_order, std::int64_t min_count,
                                     PhaseClock& clock) const {
    if (records == 0) throw InvalidInput(options.input.string() + ": no records to compare");
    const auto compared_of = [&](const std::vector<std::string>& names) {
      std::vector<distributed::ComparedCategorical> out;
      for (const auto& name : names) {
        const Column& o = original.require(name, VariableType::kCategorical);
        const Column& m = masked.require(name, VariableType::kCategorical);
        out.push_back({name, o.codes(), m.codes(), utility::match_categories(o.info().levels, m.info().levels)});
      }
      return out;
    };
    const auto variables = compared_of(options.categorical);
    const auto rows = compared_of(options.table_rows);
    const auto columns = compared_of(options.table_columns);
    for (const auto& variable : variables)
      if (contains(options.ordinal, variable.name) && !variable.domain.masked_only_codes.empty())
        throw InvalidInput(options.masked.string() + ": --ordinal: variable '" + variable.name + "' has " +
                           std::to_string(variable.domain.masked_only_codes.size()) +
                           (variable.domain.masked_only_codes.size() == 1 ? " level" : " levels") +
                           " that the original lacks: an ordinal distance ranks the original's levels only");
    // Every table is sized before any is counted: a refusal costs no pass over the records.
    const auto refuse = [](const std::string& flag, const std::string& hint, const auto& check) {
      try {
        check();
      } catch (const ParameterError& error) {
        throw UsageError(flag + ": " + error.what() + "; " + hint);
      }
    };
    refuse("--categorical", "compare variables of fewer categories",
           [&] { distributed::check_categorical_grids(variables, 0, {}, {}); });
    refuse("--ctbil-order", "give a lower --ctbil-order or fewer --categorical variables",
           [&] { distributed::check_categorical_grids(variables, ctbil_order, {}, {}); });
    refuse("--table-rows/--table-columns", "give fewer variables or variables of fewer categories",
           [&] { distributed::check_categorical_grids({}, 0, rows, columns); });
    utility::ShlomoYoungOptions table_options;
    if (options.table_target_column)
      table_options.target_column =
          target_column_of(target_labels(*options.table_target_column), columns, original, masked);

    nlohmann::json out = {{"ordinal_distance", name_of(options.ordinal_distance)},
                          {"pril_form", name_of(options.pril_form)}};
    nlohmann::json per_variable = nlohmann::json::array();
    for (const auto& variable : variables) {
      const bool ordinal = contains(options.ordinal, variable.name);
      const utility::CategoryComparisonOptions compare_options{
          ordinal ? utility::CategoricalScale::kOrdinal : utility::CategoricalScale::kNominal, options.ordinal_distance,
          options.pril_form, variable.domain.original_levels};
      const auto cross_tabulation = distributed::distributed_cross_tabulation(comm, variable);
      const auto compared = utility::compare_categories(cross_tabulation, variable.domain.categories, compare_options);
      per_variable.push_back(variable_json(variable, masked.require(variable.name).info().levels, ordinal,
                                           cross_tabulation, compared, min_count));
    }
    out["variables"] = per_variable;
    clock.lap("categorical variables");

    out["ctbil"] = nullptr;
    if (!variables.empty()) {
      const auto tables = distributed::distributed_ctbil(comm, variables, ctbil_order);
      out["ctbil"] = ctbil_json(tables, variables, ctbil_order);
      clock.lap("ctbil");
      if (comm.is_coordinator())
        spdlog::info("utility: {} categorical variables, CTBIL {} over {} tables of {} cells (normalised {:.6f})",
                     variables.size(), tables.ctbil.value, tables.ctbil.tables, tables.ctbil.cells,
                     tables.ctbil.normalised);
    }
    out["table"] = nullptr;
    if (!columns.empty()) {
      const auto measures = distributed::distributed_shlomo_young(comm, rows, columns, table_options);
      out["table"] = shlomo_young_json(measures, options.table_rows, options.table_columns,
                                       table_options.target_column.has_value());
      clock.lap("shlomo-young table");
      if (comm.is_coordinator())
        spdlog::info("utility: table of {} x {} cells: HD {:.6f}, AAD {:.6f}, LR {:.6f}", measures.rows,
                     measures.columns, measures.hellinger, measures.average_absolute, measures.likelihood_ratio);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<UtilityStep> make_utility_step() { return std::make_unique<UtilityStepImpl>(); }

}  // namespace sdc::engine
