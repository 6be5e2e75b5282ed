#include "engine/recoding/anonymize_step.h"

// Full-domain generalisation to k-anonymity (docs/recoding.md; docs/methods recoding.md §5–6). The
// records' key values are matched to their hierarchies' leaves; the key patterns of all ranks, merged
// in rank order, are the same on every rank (distributed/compose/recoding.h), so every rank searches
// the same lattice and finds the same node. The keys are recoded to that node, and the records still in
// classes below k are suppressed: all their keys (ARX) or single values by local suppression. The
// risk kernel then counts what is left below k.

#include <spdlog/spdlog.h>

#include <map>

#include "distributed/collective_error.h"
#include "distributed/compose/frequency_count.h"
#include "distributed/compose/recoding.h"
#include "distributed/compose/wildcard_frequency.h"
#include "engine/checkpoint.h"
#include "engine/recoding/hierarchy_keys.h"
#include "engine/recoding/key_suppression.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"
#include "kernels/recoding/lattice.h"

namespace sdc::engine {
namespace {

const std::map<std::string, recoding::LossMetric>& metric_names() {
  static const std::map<std::string, recoding::LossMetric> names{
      {"entropy", recoding::LossMetric::kEntropy},
      {"discernibility", recoding::LossMetric::kDiscernibility},
      {"loss", recoding::LossMetric::kLoss},
      {"precision", recoding::LossMetric::kPrecision},
      {"suppressed", recoding::LossMetric::kSuppressed}};
  return names;
}

nlohmann::json node_levels(const std::vector<std::string>& keys, std::span<const std::int32_t> levels) {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t j = 0; j < keys.size(); ++j) out[keys[j]] = levels[j];
  return out;
}

nlohmann::json metrics_json(const recoding::NodeMetrics& metrics, std::int64_t min_count) {
  return {{"outliers", reported_count(metrics.outliers, min_count)},
          {"classes", metrics.classes},
          {"released_classes", metrics.released_classes},
          {"smallest_released_class", metrics.smallest_released},
          {"height", metrics.height},
          {"entropy", metrics.entropy},
          {"discernibility", metrics.discernibility},
          {"discernibility_star", metrics.discernibility_star},
          {"loss", metrics.loss_mean},
          {"loss_arx", metrics.loss_arx},
          {"precision_loss", metrics.precision_loss},
          {"aecs", metrics.aecs}};
}

class AnonymizeStepImpl final : public AnonymizeStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const recoding::LatticeSearchOptions search_options = parse();
    const auto files = hierarchy_files(options.keys, options.hierarchies, options.hierarchy);
    const auto hierarchies = load_hierarchies(comm, files);
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    nlohmann::json parameters = this->parameters();
    parameters["hierarchy-digests"] = hierarchy_digests(hierarchies);
    StepFrame frame(context, "anonymize", std::move(parameters), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "anonymize", step.parameters, {}, std::nullopt, {}}, write_options, clock,
                                         OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    Table& table = opened.part.table;
    const std::int64_t min_count = context.report_min_count;

    std::vector<std::vector<std::int32_t>> leaves;
    std::vector<const recoding::GeneralizationHierarchy*> key_hierarchies;
    for (const auto& key : options.keys) {
      key_hierarchies.push_back(&hierarchies.at(key));
      leaves.push_back(leaves_of(comm, options.input, table, table.require(key), hierarchies.at(key)));
    }
    std::vector<std::span<const std::int32_t>> leaf_columns(leaves.begin(), leaves.end());
    const recoding::LeafPatterns patterns = distributed::distributed_leaf_patterns(comm, leaf_columns);
    clock.lap("patterns");
    recoding::LatticeSearchResult search;
    distributed::agree_on_error(comm,
                                [&] { search = recoding::search_lattice(patterns, key_hierarchies, search_options); });
    clock.lap("search");
    if (!search.found)
      throw InvalidInput(options.input.string() + ": no generalisation of the keys reaches k = " +
                         std::to_string(options.k) + " within " + std::to_string(options.max_suppression_percent) +
                         " % suppression (there are fewer records than k)");

    for (std::size_t j = 0; j < options.keys.size(); ++j)
      recode_to_level(mutable_column(table, options.keys[j]), leaves[j], *key_hierarchies[j], search.optimum[j]);
    leaves.clear();

    nlohmann::json suppression;
    std::int64_t violations_left = 0;
    if (options.suppression == OutlierSuppression::kRecords) {
      const std::int64_t suppressed = suppress_outlier_records(comm, table);
      SDC_CHECK(suppressed == search.metrics.outliers, "the records suppressed are the chosen node's outliers");
      const KeyColumns keys = key_columns(table, options.keys);
      violations_left =
          distributed::distributed_wildcard_frequency_count(comm, keys, {}, 1.0, options.k).summary.records_below_k;
      suppression = {{"method", "records"},
                     {"records_suppressed", reported_count(suppressed, min_count)},
                     {"violations_left", reported_count(violations_left, min_count)}};
    } else {
      recoding::LocalSuppressionOptions local;
      local.k = options.k;
      const KeySuppression cells = suppress_keys(comm, table, options.keys, local);
      violations_left = cells.violations_left;
      suppression = suppression_results(cells, options.keys, min_count);
      suppression["method"] = "cells";
      if (!cells.result.impossible.empty())
        step.warnings.push_back("k-anonymity not reached: " + cells.result.impossible);
    }
    clock.lap("suppress");

    nlohmann::json frontier = nlohmann::json::array();
    for (const recoding::FrontierNode& node : search.frontier)
      frontier.push_back({{"levels", node_levels(options.keys, node.levels)},
                          {"loss", node.loss},
                          {"outliers", reported_count(node.outliers, min_count)},
                          {"height", node.height}});
    nlohmann::json chosen = metrics_json(search.metrics, min_count);
    chosen["levels"] = node_levels(options.keys, search.optimum);
    chosen["objective"] = search.metrics.loss(search_options.metric);
    step.results = {{"records", reported_count(opened.part.summary.row_count, min_count)},
                    {"patterns", static_cast<std::int64_t>(patterns.pattern_count())},
                    {"lattice",
                     {{"nodes", search.nodes},
                      {"checked", search.checked_nodes},
                      {"anonymous", search.anonymous_nodes},
                      {"minimal_anonymous", search.minimal_nodes}}},
                    {"chosen", std::move(chosen)},
                    {"frontier", std::move(frontier)},
                    {"suppression", std::move(suppression)}};

    write_table_step_output(comm, options.input, opened, {}, options.keys, options.output, write_options,
                            step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator()) {
      std::string levels;
      for (std::size_t j = 0; j < options.keys.size(); ++j)
        levels += (j == 0 ? "" : ",") + options.keys[j] + "=" + std::to_string(search.optimum[j]);
      spdlog::info(
          "anonymize: {} records, {} patterns, {} of {} nodes checked, chosen {} ({} {}), {} records below "
          "k left",
          opened.part.summary.row_count, patterns.pattern_count(), search.checked_nodes, search.nodes, levels,
          options.metric, search.metrics.loss(search_options.metric), violations_left);
    }
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.keys) expect_variable(available, name, std::nullopt, "keys", problems);
  }

  std::vector<VariableInfo> added_variables() const override {
    std::vector<VariableInfo> recoded;
    for (const auto& name : options.keys)
      recoded.push_back({name, VariableType::kCategorical, VariableRole::kKey, 0, {}, {}, {}, -1});
    return recoded;
  }

 private:
  recoding::LatticeSearchOptions parse() const {
    if (!(options.max_suppression_percent >= 0.0 && options.max_suppression_percent <= 100.0))
      throw ParameterError("--max-suppression-percent: expected a percentage from 0 to 100, got " +
                           std::to_string(options.max_suppression_percent));
    const auto metric = metric_names().find(options.metric);
    if (metric == metric_names().end())
      throw UsageError("--metric: unknown metric '" + options.metric +
                       "'; expected entropy, discernibility, loss, precision or suppressed");
    recoding::LatticeSearchOptions out;
    out.k = options.k;
    out.suppression_limit = options.max_suppression_percent / 100.0;
    out.metric = metric->second;
    return out;
  }

  /// Collective. Sets every key of the records in classes below k (missing a value of its own, as the
  /// lattice counted them) missing; returns how many records over all ranks.
  std::int64_t suppress_outlier_records(const distributed::Communicator& comm, Table& table) const {
    const KeyColumns keys = key_columns(table, options.keys);
    const distributed::DistributedFrequencies frequencies =
        distributed::distributed_frequency_count(comm, keys, {}, options.k);
    std::vector<std::span<std::int32_t>> columns;
    for (const auto& name : options.keys) columns.push_back(mutable_column(table, name).mutable_codes());
    std::int64_t suppressed = 0;
    for (std::size_t r = 0; r < frequencies.records.fk.size(); ++r) {
      if (frequencies.records.fk[r] >= static_cast<double>(options.k)) continue;
      ++suppressed;
      for (auto& column : columns) column[r] = kMissingCode;
    }
    return comm.all_reduce_sum(suppressed);
  }

  nlohmann::json parameters() const {
    return {{"keys", options.keys},
            {"hierarchy", options.hierarchy},
            {"k-anonymity", options.k},
            {"max-suppression-percent", options.max_suppression_percent},
            {"metric", options.metric},
            {"suppression", options.suppression == OutlierSuppression::kRecords ? "records" : "cells"}};
  }
};

}  // namespace

std::unique_ptr<AnonymizeStep> make_anonymize_step() { return std::make_unique<AnonymizeStepImpl>(); }

}  // namespace sdc::engine
