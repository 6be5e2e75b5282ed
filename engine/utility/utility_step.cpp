#include "engine/utility/utility_step.h"

// Information loss of a masked file (docs/utility.md; docs/methods utility.md). Both files are read in
// the same row ranges (engine/compare/masked_input.h); every rank sums its records, the sums are merged
// over the ranks and the p × p algebra runs once on every rank from the same totals
// (distributed/compose/information_loss.h).

#include <spdlog/spdlog.h>

#include <cmath>
#include <set>

#include "distributed/compose/information_loss.h"
#include "engine/compare/masked_input.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

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

class UtilityStepImpl final : public UtilityStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();

    StepFrame frame(context, "utility",
                    {{"variables", options.variables},
                     {"id", options.id ? nlohmann::json(*options.id) : nlohmann::json(nullptr)},
                     {"component-weights", options.component_weights}},
                    comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    io::Hdf5WriteOptions unused_write_options;
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt, {"", "utility", step.parameters, {}, {}, {}},
                        unused_write_options, clock, OutputRelease::kAnalysis, {{"masked", options.masked}});
    const Table masked_part = read_masked_part(comm, opened.part, options.masked, options.variables, options.id);
    const ContinuousColumns original = continuous_columns(opened.part.table, options.variables);
    const ContinuousColumns masked = continuous_columns(masked_part, options.variables);
    clock.lap("masked");

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
    step.results = {{"records", loss.records},
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
                    {"il_correl", number_or_null(loss.il_correl)}};
    if (loss.original_correlation_singular || loss.masked_correlation_singular)
      step.warnings.push_back(std::string("the correlation matrix of the ") +
                              (loss.original_correlation_singular ? "original" : "masked") +
                              " file is singular: F - F' and IL_correl are not defined" +
                              (loss.original_correlation_singular ? ", nor eigen" : ""));
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("utility: {} records, {} variables, information loss {:.4f}% (SSE/SST on z-scores)", loss.records,
                   options.variables.size(), loss.il_percent);
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
  }
};

}  // namespace

std::unique_ptr<UtilityStep> make_utility_step() { return std::make_unique<UtilityStepImpl>(); }

}  // namespace sdc::engine
