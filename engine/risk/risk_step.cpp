#include "engine/risk/risk_step.h"

#include <spdlog/spdlog.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/frequency_count.h"
#include "distributed/compose/l_diversity.h"
#include "distributed/compose/risk_merges.h"
#include "distributed/compose/wildcard_frequency.h"
#include "engine/checkpoint.h"
#include "engine/partitioned_table.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/risk/household_risk.h"
#include "kernels/risk/individual_risk.h"

namespace sdc::engine {
namespace {

constexpr const char* kFk = "fk";
constexpr const char* kFkWeighted = "fk_weighted";
constexpr const char* kViolation = "violates_k_anonymity";
constexpr const char* kIndividualRisk = "individual_risk";
constexpr const char* kHouseholdRisk = "household_risk";
constexpr const char* kAboveThreshold = "exceeds_risk_threshold";

/// The k of the report's violation table: 2, 3 and 5, as sdcMicro prints them, and the user's k.
std::vector<std::int64_t> reported_ks(std::int64_t k) {
  std::set<std::int64_t> ks{2, 3, 5, k};
  return {ks.begin(), ks.end()};
}

/// The probabilities of the report's individual-risk quantiles.
constexpr double kRiskQuantiles[] = {0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0};

std::string l_column(const std::string& measure, const std::string& sensitive) {
  return "l_" + measure + "." + sensitive;
}

VariableInfo new_variable(std::string name, VariableType type, std::vector<std::string> levels = {}) {
  VariableInfo variable;
  variable.name = std::move(name);
  variable.type = type;
  variable.levels = std::move(levels);
  return variable;
}

void check_weights(const Table& table, const std::string& name) {
  const auto values = table.require(name, VariableType::kContinuous).values();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]) || std::isinf(values[i]) || values[i] < 0.0)
      throw InvalidInput(table.source() + ": variable '" + name + "', row id " +
                         std::to_string(table.first_row_id() + static_cast<std::int64_t>(i)) +
                         (std::isnan(values[i])   ? ": missing weight"
                          : std::isinf(values[i]) ? ": infinite weight"
                                                  : ": negative weight"));
  }
}

/// Individual risks of the records, in parallel blocks (the map is element-wise, so blocks change
/// nothing). Records stand for their classes: every record of a class has its f and F.
IndividualRiskResult record_individual_risk(std::span<const double> fk, std::span<const double> fk_weighted,
                                            const IndividualRiskOptions& options) {
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  const std::size_t blocks = (fk.size() + kBlock - 1) / kBlock;
  std::vector<IndividualRiskResult> parts(blocks);
  tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
    const std::size_t begin = b * kBlock;
    const std::size_t size = std::min(kBlock, fk.size() - begin);
    parts[b] =
        individual_risk(fk.subspan(begin, size),
                        options.weighted ? fk_weighted.subspan(begin, size) : std::span<const double>(), options);
  });
  IndividualRiskResult result;
  result.risk.reserve(fk.size());
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t begin = b * kBlock;
    if (parts[b].invalid_class) {
      result.invalid_class = begin + *parts[b].invalid_class;
      result.risk.clear();
      return result;
    }
    if (parts[b].first_non_integer_zero_class && !result.first_non_integer_zero_class)
      result.first_non_integer_zero_class = begin + *parts[b].first_non_integer_zero_class;
    result.non_integer_zero_classes += parts[b].non_integer_zero_classes;
    result.risk.insert(result.risk.end(), parts[b].risk.begin(), parts[b].risk.end());
  }
  return result;
}

nlohmann::json global_risk_json(const GlobalRisk& risk) {
  return {{"expected_reidentifications", risk.expected_reidentifications},
          {"global_risk", risk.risk},
          {"global_risk_percent", risk.percent}};
}

class RiskStepImpl final : public RiskStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    std::vector<std::string> problems;
    check_measure_parameters(problems);
    if (!problems.empty()) throw UsageError(problems.front());
    std::vector<StepId> draws;
    for (const auto& measure : measures)
      if (measure->enabled())
        for (StepId id : measure->draws()) draws.push_back(id);
    std::optional<io::Seed> seed;
    if (!draws.empty()) {
      seed = io::require_seed(options.seed_file, "risk");
    }

    StepFrame frame(context, "risk", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    if (seed) report.set_seed_fingerprint(seed->fingerprint());

    std::vector<NamedInput> other_inputs;
    bool measures_enabled = false;
    for (const auto& measure : measures)
      if (measure->enabled()) {
        measures_enabled = true;
        for (NamedInput& input : measure->inputs()) other_inputs.push_back(std::move(input));
      }
    // The measures see the whole table; without them the step reads only what it uses.
    std::optional<std::vector<std::string>> uses;
    if (!measures_enabled) {
      uses = options.keys;
      uses->insert(uses->end(), options.sensitive.begin(), options.sensitive.end());
      if (options.weight) uses->push_back(*options.weight);
    }
    OpenedTable opened = open_table_step(
        comm, context, options.input, options.household,
        {"", "risk", step.parameters, draws, seed ? std::optional<std::string>(seed->fingerprint()) : std::nullopt, {}},
        write_options, clock, OutputRelease::kAnalysis, other_inputs, uses);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kAnalysis))
      return;
    TablePart& part = opened.part;

    const Table& table = part.table;
    const KeyColumns keys = key_columns(table, options.keys);
    if (options.weight) check_weights(table, *options.weight);
    if (options.missing == MissingKeys::kReject)
      reject_missing_codes(comm, options.input, table, keys, options.keys,
                           "give --missing category to treat missing as a level of its own");
    const std::span<const double> weights =
        options.weight ? table.require(*options.weight).values() : std::span<const double>();

    // The classes of equal key tuples (missing equal to missing), formed once when more than the
    // frequency count uses them: the class sizes beside wildcard counts, and l-diversity.
    const bool wildcard = options.missing == MissingKeys::kWildcard;
    std::optional<KeyGrouping> exact_classes;
    if (wildcard || !options.sensitive.empty()) exact_classes = group_by_keys(keys);
    distributed::DistributedFrequencies frequencies =
        wildcard
            ? distributed::distributed_wildcard_frequency_count(comm, keys, weights, options.alpha, options.k_anonymity)
        : exact_classes ? distributed::distributed_frequency_count(comm, *exact_classes, weights, options.k_anonymity)
                        : distributed::distributed_frequency_count(comm, keys, weights, options.k_anonymity);
    clock.lap("frequency counts");
    // The size of each record's class of equal key tuples: fk itself, except with wildcards, where fk
    // also counts the records that match through a missing value.
    std::vector<double> class_sizes;
    if (wildcard)
      class_sizes = distributed::distributed_frequency_count(comm, *exact_classes, {}, options.k_anonymity).records.fk;
    const FrequencySummary summary = frequencies.summary;
    step.results = {{"records", summary.records},
                    {"equivalence_classes", summary.classes},
                    {"sample_uniques", summary.sample_uniques},
                    {"records_below_k", summary.records_below_k},
                    {"classes_below_k", summary.classes_below_k},
                    {"k", summary.k}};
    step.results["k_anonymity"] =
        k_anonymity_table(comm, frequencies.records.fk, class_sizes.empty() ? frequencies.records.fk : class_sizes);

    std::vector<Column> added;
    std::vector<std::int32_t> violates(frequencies.records.fk.size());
    for (std::size_t i = 0; i < violates.size(); ++i)
      violates[i] = frequencies.records.fk[i] < static_cast<double>(options.k_anonymity) ? 1 : 0;

    // Individual risk, its global sum, quantiles and threshold.
    IndividualRiskOptions risk_options;
    risk_options.method = options.risk_method;
    risk_options.mode = options.mode == Mode::kCompat ? RiskMode::kCompat : RiskMode::kNative;
    risk_options.qual = options.qual;
    risk_options.weighted = options.weight.has_value();
    IndividualRiskResult individual =
        record_individual_risk(frequencies.records.fk, frequencies.records.fk_weighted, risk_options);
    reject_invalid_classes(comm, table, individual, frequencies.records);
    warn_non_integer_classes(comm, individual, step.warnings);
    clock.lap("individual risk");
    const std::vector<double>& risk = individual.risk;
    const GlobalRisk global = distributed::distributed_global_risk(comm, risk);
    nlohmann::json individual_json = global_risk_json(global);
    individual_json["method"] = options.risk_method == IndividualRiskMethod::kExact ? "exact" : "approx";
    individual_json["qual"] = options.qual;

    const bool risks_are_numbers = comm.all_reduce_sum(static_cast<std::int64_t>(std::count_if(
                                       risk.begin(), risk.end(), [](double r) { return std::isnan(r); }))) == 0;
    std::vector<std::int32_t> above(risk.size(), 0);
    if (risks_are_numbers) {
      // One histogram of the distinct risks gives both the threshold and the exact quantiles.
      const distributed::RiskDistribution distribution =
          distributed::distributed_risk_distribution(comm, risk, options.global_risk_target, kRiskQuantiles);
      individual_json["quantiles"] = quantiles_json(distribution.quantiles);
      const RiskThreshold& threshold = distribution.threshold;
      std::int64_t records_above = 0;
      if (!threshold.already_safe) {
        for (std::size_t i = 0; i < risk.size(); ++i) above[i] = risk[i] > threshold.threshold ? 1 : 0;
        records_above = std::count(above.begin(), above.end(), 1);
      }
      step.results["risk_threshold"] = {
          {"target", options.global_risk_target},
          {"threshold", threshold.already_safe ? nlohmann::json(nullptr) : nlohmann::json(threshold.threshold)},
          {"already_safe", threshold.already_safe},
          {"records_above", comm.all_reduce_sum(records_above)}};
    } else {
      individual_json["quantiles"] =
          quantiles_json(distributed::distributed_exact_quantiles(comm, risk, kRiskQuantiles));
      step.warnings.push_back(
          "some individual risks are not numbers (compat mode with weights below 1): no risk "
          "threshold is computed");
    }
    step.results["individual_risk"] = individual_json;
    clock.lap("global risk and threshold");

    std::optional<std::vector<double>> household;
    if (options.household) {
      household = household_risk(table.require(*options.household, VariableType::kId).ids(), risk, risk_options.mode);
      step.results["household_risk"] = global_risk_json(distributed::distributed_global_risk(comm, *household));
      clock.lap("household risk");
    }

    nlohmann::json l_json = nlohmann::json::object();
    std::vector<Column> l_columns;
    for (const auto& name : options.sensitive) {
      LDiversityOptions l_options;
      l_options.c = options.l_recursion_constant;
      l_options.compat = options.mode == Mode::kCompat;
      const auto l = distributed::distributed_l_diversity(comm, *exact_classes,
                                                          table.require(name, VariableType::kCategorical).codes(),
                                                          l_options, options.l_diversity);
      l_json[name] = {{"classes", l.classes},
                      {"min_distinct", l.min_distinct},
                      {"min_entropy", l.min_entropy},
                      {"min_recursive", l.min_recursive},
                      {"l", options.l_diversity},
                      {"classes_distinct_below_l", l.classes_distinct_below},
                      {"records_distinct_below_l", l.records_distinct_below}};
      std::vector<double> distinct(l.records.distinct.begin(), l.records.distinct.end());
      std::vector<double> recursive(l.records.recursive.begin(), l.records.recursive.end());
      l_columns.push_back(
          Column::continuous(new_variable(l_column("distinct", name), VariableType::kContinuous), std::move(distinct)));
      l_columns.push_back(Column::continuous(new_variable(l_column("entropy", name), VariableType::kContinuous),
                                             std::vector<double>(l.records.entropy)));
      l_columns.push_back(Column::continuous(new_variable(l_column("recursive", name), VariableType::kContinuous),
                                             std::move(recursive)));
    }
    if (!options.sensitive.empty()) {
      step.results["l_diversity"] = l_json;
      clock.lap("l-diversity");
    }

    std::vector<Column> measure_columns;
    const std::span<const std::int64_t> household_ids = options.household
                                                            ? table.require(*options.household, VariableType::kId).ids()
                                                            : std::span<const std::int64_t>();
    const std::string input_name = options.input.string();
    const RiskContext measure_context{.comm = comm,
                                      .input_name = input_name,
                                      .table = table,
                                      .keys = keys,
                                      .key_names = options.keys,
                                      .weights = weights,
                                      .household_ids = household_ids,
                                      .frequencies = frequencies.records,
                                      .individual_risk = risk,
                                      .mode = options.mode,
                                      .seed = seed ? std::optional<std::uint64_t>(seed->value) : std::nullopt,
                                      .individual_risk_options = risk_options,
                                      .k_anonymity = options.k_anonymity,
                                      .weight_name = options.weight,
                                      .report_min_count = context.report_min_count};
    for (auto& measure : measures) {
      if (!measure->enabled()) continue;
      RiskMeasureOutput output;
      measure->run(measure_context, output);
      step.results[measure->result_key()] = std::move(output.results);
      for (Column& column : output.columns) measure_columns.push_back(std::move(column));
      step.warnings.insert(step.warnings.end(), output.warnings.begin(), output.warnings.end());
      clock.lap(measure->result_key().c_str());
    }

    added.push_back(
        Column::continuous(new_variable(kFk, VariableType::kContinuous), std::move(frequencies.records.fk)));
    added.push_back(Column::continuous(new_variable(kFkWeighted, VariableType::kContinuous),
                                       std::move(frequencies.records.fk_weighted)));
    added.push_back(Column::categorical(new_variable(kViolation, VariableType::kCategorical, {"false", "true"}),
                                        std::move(violates)));
    added.push_back(
        Column::continuous(new_variable(kIndividualRisk, VariableType::kContinuous), std::move(individual.risk)));
    added.push_back(Column::categorical(new_variable(kAboveThreshold, VariableType::kCategorical, {"false", "true"}),
                                        std::move(above)));
    if (household)
      added.push_back(
          Column::continuous(new_variable(kHouseholdRisk, VariableType::kContinuous), std::move(*household)));
    for (Column& column : l_columns) added.push_back(std::move(column));
    for (Column& column : measure_columns) added.push_back(std::move(column));

    write_options.provenance.step_results = step.results.dump();
    write_table_step_output(comm, options.input, opened, std::move(added), {}, options.output, write_options,
                            step.warnings);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info(
          "risk: {} records, {} equivalence classes, {} sample uniques, {} records in classes below k={}, "
          "{:.2f} expected re-identifications",
          summary.records, summary.classes, summary.sample_uniques, summary.records_below_k, summary.k,
          global.expected_reidentifications);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& key : options.keys) expect_variable(available, key, VariableType::kCategorical, "keys", problems);
    for (const auto& name : options.sensitive)
      expect_variable(available, name, VariableType::kCategorical, "sensitive", problems);
    if (options.weight) expect_variable(available, *options.weight, VariableType::kContinuous, "weight", problems);
    if (options.household) expect_variable(available, *options.household, VariableType::kId, "household", problems);
    for (const auto& measure : measures)
      if (measure->enabled()) measure->check_variables(available, problems);
    check_measure_parameters(problems);
  }

  void check_measure_parameters(std::vector<std::string>& problems) const {
    for (const auto& measure : measures)
      if (measure->enabled()) measure->check_parameters(options.keys.size(), problems);
  }

  bool needs_seed() const override {
    return std::any_of(measures.begin(), measures.end(),
                       [](const auto& measure) { return measure->enabled() && !measure->draws().empty(); });
  }

  std::vector<VariableInfo> added_variables() const override {
    std::vector<VariableInfo> added{new_variable(kFk, VariableType::kContinuous),
                                    new_variable(kFkWeighted, VariableType::kContinuous),
                                    new_variable(kViolation, VariableType::kCategorical, {"false", "true"}),
                                    new_variable(kIndividualRisk, VariableType::kContinuous),
                                    new_variable(kAboveThreshold, VariableType::kCategorical, {"false", "true"})};
    if (options.household) added.push_back(new_variable(kHouseholdRisk, VariableType::kContinuous));
    for (const auto& name : options.sensitive)
      for (const char* measure : {"distinct", "entropy", "recursive"})
        added.push_back(new_variable(l_column(measure, name), VariableType::kContinuous));
    for (const auto& measure : measures)
      if (measure->enabled())
        for (VariableInfo& variable : measure->added_variables()) added.push_back(std::move(variable));
    return added;
  }

 private:
  nlohmann::json parameters() const {
    const auto optional = [](const std::optional<std::string>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    nlohmann::json parameters = {
        {"keys", options.keys},
        {"weight", optional(options.weight)},
        {"household", optional(options.household)},
        {"k-anonymity", options.k_anonymity},
        {"missing", options.missing == MissingKeys::kReject     ? "reject"
                    : options.missing == MissingKeys::kCategory ? "category"
                                                                : "wildcard"},
        {"risk-method", options.risk_method == IndividualRiskMethod::kExact ? "exact" : "approx"},
        {"mode", options.mode == Mode::kCompat ? "compat" : "native"},
        {"qual", options.qual},
        {"global-risk-target", options.global_risk_target},
        {"sensitive", options.sensitive},
        {"l-diversity", options.l_diversity},
        {"l-recursion-constant", options.l_recursion_constant}};
    if (options.missing == MissingKeys::kWildcard) parameters["alpha"] = options.alpha;
    for (const auto& measure : measures)
      if (measure->enabled()) parameters.update(measure->parameters());
    return parameters;
  }

  /// Collective: records and classes below each reported k. A class of s records contributes s records,
  /// so the classes below k are the sum over sizes s of (records of classes of size s below k) / s,
  /// exactly. Records are counted by (the first reported k they are below, their class size), a
  /// table no larger than the distinct class sizes times the reported k, merged over all ranks.
  nlohmann::json k_anonymity_table(const distributed::Communicator& comm, std::span<const double> fk,
                                   std::span<const double> class_size) const {
    const std::vector<std::int64_t> ks = reported_ks(options.k_anonymity);
    // Small sizes (almost every record below a reported k) are counted densely, the rest in a map.
    constexpr std::int64_t kDenseSizes = 1 << 12;
    std::vector<std::int64_t> dense(ks.size() * kDenseSizes, 0);
    std::map<std::pair<std::size_t, std::int64_t>, std::int64_t> counts;  // (first k index, size) -> records
    for (std::size_t i = 0; i < fk.size(); ++i) {
      if (!(fk[i] < static_cast<double>(ks.back()))) continue;
      const auto first = static_cast<std::size_t>(
          std::upper_bound(ks.begin(), ks.end(), fk[i],
                           [](double f, std::int64_t k) { return f < static_cast<double>(k); }) -
          ks.begin());
      const auto size = static_cast<std::int64_t>(class_size[i]);
      if (size < kDenseSizes)
        ++dense[first * kDenseSizes + static_cast<std::size_t>(size)];
      else
        ++counts[{first, size}];
    }
    for (std::size_t j = 0; j < ks.size(); ++j)
      for (std::int64_t size = 1; size < kDenseSizes; ++size)
        if (const std::int64_t records = dense[j * kDenseSizes + static_cast<std::size_t>(size)]; records > 0)
          counts[{j, size}] += records;
    std::vector<std::int64_t> flat;
    for (const auto& [key, records] : counts)
      flat.insert(flat.end(), {static_cast<std::int64_t>(key.first), key.second, records});
    std::map<std::pair<std::size_t, std::int64_t>, std::int64_t> total;
    for (const auto& part : comm.all_gather_bytes(std::as_bytes(std::span<const std::int64_t>(flat)))) {
      std::vector<std::int64_t> values(part.size() / sizeof(std::int64_t));
      if (!part.empty()) std::memcpy(values.data(), part.data(), part.size());
      for (std::size_t v = 0; v + 2 < values.size(); v += 3)
        total[{static_cast<std::size_t>(values[v]), values[v + 1]}] += values[v + 2];
    }
    nlohmann::json table = nlohmann::json::array();
    for (std::size_t j = 0; j < ks.size(); ++j) {
      std::map<std::int64_t, std::int64_t> by_size;  // records below ks[j], by class size
      for (const auto& [key, records] : total)
        if (key.first <= j) by_size[key.second] += records;
      std::int64_t records = 0;
      std::int64_t classes = 0;
      for (const auto& [size, count] : by_size) {
        records += count;
        classes += count / size;
      }
      table.push_back({{"k", ks[j]}, {"records_below_k", records}, {"classes_below_k", classes}});
    }
    return table;
  }

  /// The report's list of individual-risk quantiles, p and value (null for NaN).
  static nlohmann::json quantiles_json(const SampleQuantiles& quantiles) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t q = 0; q < quantiles.values.size(); ++q)
      out.push_back(
          {{"p", kRiskQuantiles[q]},
           {"value", std::isnan(quantiles.values[q]) ? nlohmann::json(nullptr) : nlohmann::json(quantiles.values[q])}});
    return out;
  }

  /// Collective: native mode stops at the first record (over all ranks) whose class the model cannot take.
  void reject_invalid_classes(const distributed::Communicator& comm, const Table& table,
                              const IndividualRiskResult& individual, const RecordFrequencies& records) const {
    std::optional<distributed::RowProblem> problem;
    if (individual.invalid_class) {
      const std::size_t i = *individual.invalid_class;
      const std::int64_t row = table.first_row_id() + static_cast<std::int64_t>(i);
      // The message names the row, never its class's size: a class of one would reveal a sample unique.
      const std::string where = options.input.string() + ": variable '" + options.weight.value_or("weight") +
                                "', row id " + std::to_string(row) + ": ";
      problem = {row, std::isfinite(records.fk_weighted[i])
                          ? where +
                                "its class has a weighted count below its sample count (weights below 1), which "
                                "the individual risk model cannot take; give --mode compat to compute it as "
                                "sdcMicro does"
                          : where +
                                "the weights of its class add up to more than the largest floating-point number "
                                "(about 1.8e308); sampling weights are far smaller"};
    }
    distributed::throw_first_row_problem(comm, problem);
  }

  /// Collective: native mode warns about classes that get risk 0 by the reference's non-integer quirk.
  static void warn_non_integer_classes(const distributed::Communicator& comm, const IndividualRiskResult& individual,
                                       std::vector<std::string>& warnings) {
    const std::int64_t records = comm.all_reduce_sum(individual.non_integer_zero_classes);
    if (records > 0)
      warnings.push_back(
          std::to_string(records) +
          " records have a non-integer fk below 2 other than 1 and get individual risk 0, as in sdcMicro");
  }
};

}  // namespace

std::unique_ptr<RiskStep> make_risk_step() { return std::make_unique<RiskStepImpl>(); }

}  // namespace sdc::engine
