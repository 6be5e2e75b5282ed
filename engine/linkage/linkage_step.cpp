#include "engine/linkage/linkage_step.h"

// Record linkage and interval disclosure of a masked file against its original (docs/linkage.md).
// Both files are read in the same row ranges (engine/compare/masked_input.h); the linkage runs across
// the ranks (distributed/compose/linkage.h); with --output, the original's records gain whether each
// was linked, the credit of its link and whether its interval disclosed it.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <map>
#include <set>

#include "distributed/compose/linkage.h"
#include "engine/blocking.h"
#include "engine/compare/masked_input.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

constexpr const char* kLinked = "linked";
constexpr const char* kLinkCredit = "link_credit";
constexpr const char* kIntervalDisclosed = "interval_disclosed";

const std::map<std::string, linkage::LinkageDistance>& distance_names() {
  static const std::map<std::string, linkage::LinkageDistance> names{
      {"dbrl1", linkage::LinkageDistance::kDbrl1},
      {"dbrl1-common", linkage::LinkageDistance::kDbrl1Common},
      {"dbrl2", linkage::LinkageDistance::kDbrl2},
      {"mahalanobis-cov", linkage::LinkageDistance::kMahalanobisCov},
      {"mahalanobis-cov0", linkage::LinkageDistance::kMahalanobisCov0},
      {"kernel", linkage::LinkageDistance::kKernel}};
  return names;
}

VariableInfo flag_variable(const char* name) {
  VariableInfo variable;
  variable.name = name;
  variable.type = VariableType::kCategorical;
  variable.levels = {"false", "true"};
  return variable;
}

VariableInfo credit_variable() {
  VariableInfo variable;
  variable.name = kLinkCredit;
  variable.type = VariableType::kContinuous;
  return variable;
}

class LinkageStepImpl final : public LinkageStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const linkage::LinkageOptions linkage_options = parse();
    if (options.output) io::ensure_output_directory_writable(*options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    StepFrame frame(context, "linkage", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt, {"", "linkage", step.parameters, {}, {}, {}},
                        write_options, clock, OutputRelease::kAnalysis, {{"masked", options.masked}});
    const Table masked_part = read_masked_part(comm, opened.part, options.masked, options.variables, options.id);
    const ContinuousColumns original = continuous_columns(opened.part.table, options.variables);
    const ContinuousColumns masked = continuous_columns(masked_part, options.variables);
    clock.lap("masked");

    const Blocking blocking = parse_blocking(options.blocking, false);
    const std::vector<std::int64_t> blocks = blocking.kind == BlockingKind::kStrata
                                                 ? stratum_of_records(comm, opened.part.table, blocking.strata)
                                                 : std::vector<std::int64_t>{};
    const linkage::LinkageResult linked =
        distributed::distributed_record_linkage(comm, original.columns, masked.columns, linkage_options, blocks);
    clock.lap("record linkage");
    nlohmann::json intervals = nlohmann::json::array();
    std::vector<std::uint8_t> disclosed_at_first_k;
    parse_blocking(options.blocking, false);
    for (double k : options.interval_k) {
      linkage::IntervalDisclosure interval =
          distributed::distributed_interval_disclosure(comm, original.columns, masked.columns, k);
      intervals.push_back({{"k", k}, {"disclosed", interval.disclosed}, {"risk", interval.risk()}});
      if (disclosed_at_first_k.empty()) disclosed_at_first_k = std::move(interval.record_disclosed);
    }
    clock.lap("interval disclosure");
    nlohmann::json rank_based = nullptr;
    if (options.rank_interval_percent) {
      const linkage::RankIntervalDisclosure rank = distributed::distributed_rank_interval_disclosure(
          comm, original.columns, masked.columns, *options.rank_interval_percent);
      rank_based = {{"percent", *options.rank_interval_percent},   {"values_compared", rank.values_compared},
                    {"values_inside", rank.values_inside},         {"value_rate", rank.value_rate()},
                    {"records_disclosed", rank.records_disclosed}, {"record_rate", rank.record_rate()}};
      clock.lap("rank interval disclosure");
    }

    step.results = {{"records", linked.records},
                    {"blocking", options.blocking},
                    {"variables", options.variables},
                    {"distance", options.distance},
                    {"direction", options.direction},
                    {"blocking", options.blocking},
                    {"strict", linked.strict},
                    {"fractional", linked.fractional},
                    {"optimistic", linked.optimistic},
                    {"strict_rate", linked.strict_rate()},
                    {"fractional_rate", linked.fractional_rate()},
                    {"optimistic_rate", linked.optimistic_rate()},
                    {"regularisation_epsilon", linked.regularisation_epsilon},
                    {"interval_disclosure", std::move(intervals)},
                    {"rank_interval_disclosure", std::move(rank_based)}};
    if (linked.regularisation_epsilon > 0.0)
      step.warnings.push_back(fmt::format(
          "the covariance matrix of the Mahalanobis distance is singular or nearly so: {:g} x tr(S)/p was added "
          "to its diagonal",
          linked.regularisation_epsilon));

    if (options.output) {
      std::vector<Column> added;
      std::vector<std::int32_t> linked_codes(linked.linked.begin(), linked.linked.end());
      std::vector<double> credit(linked.linked.size(), 0.0);
      for (std::size_t i = 0; i < credit.size(); ++i)
        if (linked.linked[i] != 0) credit[i] = 1.0 / static_cast<double>(linked.tie_size[i]);
      added.push_back(Column::categorical(flag_variable(kLinked), std::move(linked_codes)));
      added.push_back(Column::continuous(credit_variable(), std::move(credit)));
      added.push_back(
          Column::categorical(flag_variable(kIntervalDisclosed),
                              std::vector<std::int32_t>(disclosed_at_first_k.begin(), disclosed_at_first_k.end())));
      write_table_step_output(comm, options.input, opened, std::move(added), {}, *options.output, write_options,
                              step.warnings);
      clock.lap("write");
    }
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("linkage: {} records, {} linked (fractional {:.2f}, rate {:.4f}), {} distance", linked.records,
                   linked.optimistic, linked.fractional, linked.fractional_rate(), options.distance);
    finish_table_step(comm, report, options.input, opened, options.output.value_or(std::filesystem::path()),
                      options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    try {
      for (const auto& name : parse_blocking(options.blocking, false).strata)
        expect_variable(available, name, VariableType::kCategorical, "blocking", problems);
    } catch (const UsageError& error) {
      problems.push_back(error.what());
    }
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
  }

  std::vector<VariableInfo> added_variables() const override {
    return {flag_variable(kLinked), credit_variable(), flag_variable(kIntervalDisclosed)};
  }

 private:
  linkage::LinkageOptions parse() const {
    linkage::LinkageOptions parsed;
    const auto distance = distance_names().find(options.distance);
    if (distance == distance_names().end()) {
      std::string names;
      for (const auto& [name, kind] : distance_names()) names += (names.empty() ? "" : ", ") + name;
      throw UsageError("--distance: expected one of " + names + ", got '" + options.distance + "'");
    }
    parsed.distance = distance->second;
    parsed.kernel_degree = static_cast<int>(options.kernel_degree);
    parsed.tile_rows = static_cast<std::size_t>(options.tile_rows);
    if (options.direction == "original-to-masked")
      parsed.direction = linkage::LinkageDirection::kOriginalToMasked;
    else if (options.direction == "masked-to-original")
      parsed.direction = linkage::LinkageDirection::kMaskedToOriginal;
    else
      throw UsageError("--direction: expected original-to-masked or masked-to-original, got '" + options.direction +
                       "'");
    parse_blocking(options.blocking, false);
    for (double k : options.interval_k)
      if (!(k >= 0.0) || !std::isfinite(k))
        throw UsageError("--interval-k: expected numbers >= 0, got " + std::to_string(k));
    return parsed;
  }

  nlohmann::json parameters() const {
    return {{"variables", options.variables},
            {"id", options.id ? nlohmann::json(*options.id) : nlohmann::json(nullptr)},
            {"distance", options.distance},
            {"kernel-degree", options.kernel_degree},
            {"direction", options.direction},
            {"blocking", options.blocking},
            {"interval-k", options.interval_k},
            {"rank-interval",
             options.rank_interval_percent ? nlohmann::json(*options.rank_interval_percent) : nlohmann::json(nullptr)}};
  }
};

}  // namespace

std::unique_ptr<LinkageStep> make_linkage_step() { return std::make_unique<LinkageStepImpl>(); }

}  // namespace sdc::engine
