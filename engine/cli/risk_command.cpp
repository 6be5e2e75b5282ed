// `sdc risk`: disclosure risk of categorical key variables (docs/risk.md): sample frequency counts fk,
// their weighted counterparts (Fk in sdcMicro), k-anonymity, Benedetti–Franconi individual risk,
// household risk, global risk with the threshold for a target, and l-diversity of sensitive variables,
// per record and in the report.

#include <spdlog/spdlog.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "distributed/compose/frequency_count.h"
#include "distributed/compose/l_diversity.h"
#include "distributed/compose/risk_merges.h"
#include "distributed/compose/wildcard_frequency.h"
#include "engine/checkpoint.h"
#include "engine/cli/commands.h"
#include "engine/partitioned_table.h"
#include "engine/table_step.h"
#include "engine/report/run_report.h"
#include "engine/risk/risk_measure.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/risk/household_risk.h"
#include "kernels/risk/individual_risk.h"

namespace sdc::engine {
namespace {

enum class MissingKeys { kReject, kCategory, kWildcard };

struct RiskOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> keys;
  std::optional<std::string> weight;
  std::optional<std::string> household;
  std::int64_t k_anonymity = 3;
  MissingKeys missing = MissingKeys::kReject;
  double alpha = 1.0;
  IndividualRiskMethod risk_method = IndividualRiskMethod::kApprox;
  Mode mode = Mode::kNative;
  double qual = 1.0;
  double global_risk_target = 0.01;
  std::vector<std::string> sensitive;
  std::int64_t l_diversity = 2;
  double l_recursion_constant = 2.0;
  std::optional<std::filesystem::path> seed_file;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

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

std::string l_column(const std::string& measure, const std::string& sensitive) { return "l_" + measure + "." + sensitive; }

VariableInfo new_variable(std::string name, VariableType type, std::vector<std::string> levels = {}) {
  VariableInfo variable;
  variable.name = std::move(name);
  variable.type = type;
  variable.levels = std::move(levels);
  return variable;
}

KeyColumns key_columns(const Table& table, const std::vector<std::string>& names) {
  KeyColumns keys;
  for (const auto& name : names) {
    const Column& column = table.require(name, VariableType::kCategorical);
    keys.codes.push_back(column.codes());
    keys.level_counts.push_back(static_cast<std::int32_t>(column.info().levels.size()));
  }
  return keys;
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
    parts[b] = individual_risk(fk.subspan(begin, size),
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

class RiskCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand(
        "risk", "disclosure risk of key variables: fk, fk_weighted (Fk), k-anonymity, individual, household and "
                "global risk, l-diversity");
    add_input_option(*app, paths_, options_.input);
    add_output_option(*app, paths_, options_.output);
    add_report_option(*app, paths_, options_.report);
    add_variable_list_option(*app, "--keys", options_.keys, "categorical key variables (quasi-identifiers)")->required();
    app->add_option("--weight", options_.weight,
                    "sampling weight variable; without it fk_weighted equals fk and the individual risk is 1/fk")
        ->type_name("VAR");
    app->add_option("--household", options_.household,
                    "household id variable: ranks split the file between households (the file must be sorted by it); "
                    "adds the household risk")
        ->type_name("VAR");
    app->add_option("--k-anonymity", options_.k_anonymity, "a record violates k-anonymity when its fk is below K")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("K");
    const std::map<std::string, MissingKeys> missing{
        {"reject", MissingKeys::kReject}, {"category", MissingKeys::kCategory}, {"wildcard", MissingKeys::kWildcard}};
    app->add_option("--missing", options_.missing,
                    "missing key values: reject (an error naming the first one), category (missing is a level of its "
                    "own) or wildcard (sdcMicro: a missing value matches every value, weighted by --alpha)")
        ->transform(CLI::CheckedTransformer(missing, CLI::ignore_case))
        ->type_name("reject|category|wildcard");
    app->add_option("--alpha", options_.alpha,
                    "with --missing wildcard, the weight of a record with missing keys in the classes it matches")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("A");
    const std::map<std::string, IndividualRiskMethod> methods{{"approx", IndividualRiskMethod::kApprox},
                                                              {"exact", IndividualRiskMethod::kExact}};
    app->add_option("--risk-method", options_.risk_method,
                    "individual risk for fk > 2: approx (p/(f-q), sdcMicro's default) or exact (the integral)")
        ->transform(CLI::CheckedTransformer(methods, CLI::ignore_case))
        ->type_name("approx|exact");
    add_mode_option(*app, options_.mode);
    app->add_option("--qual", options_.qual, "final correction factor of the individual risk (sdcMicro qual)")
        ->check(CLI::Range(0.0, 1.0))
        ->type_name("Q");
    app->add_option("--global-risk-target", options_.global_risk_target,
                    "target global risk: the report gives the individual-risk threshold that meets it, and records "
                    "above it are flagged")
        ->check(CLI::Range(std::nextafter(0.0, 1.0), std::nextafter(1.0, 0.0)))
        ->type_name("RHO");
    add_variable_list_option(*app, "--sensitive", options_.sensitive,
                             "categorical sensitive variables: l-diversity of each within the key classes");
    app->add_option("--l-diversity", options_.l_diversity,
                    "the report counts classes whose distinct l-diversity is below L")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("L");
    app->add_option("--l-recursion-constant", options_.l_recursion_constant, "c of recursive (c,l)-diversity")
        ->check(CLI::PositiveNumber)
        ->type_name("C");
    for (auto& measure : measures_) measure->add_options(*app, paths_);
    add_seed_option(*app, paths_, options_.seed_file);
    app->add_option("--filters", options_.filters, "HDF5 filters of the output: none, shuffle, deflate=N or shuffle,deflate=N");
    app->add_flag("--resume", options_.resume,
                  "skip the step when the output exists and was made from the same input, parameters and seed");
    return app;
  }

  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    io::ensure_output_directory_writable(options_.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options_.filters);
    std::vector<std::string> problems;
    check_measure_parameters(problems);
    if (!problems.empty()) throw UsageError(problems.front());
    std::vector<StepId> draws;
    for (const auto& measure : measures_)
      if (measure->enabled())
        for (StepId id : measure->draws()) draws.push_back(id);
    std::optional<io::Seed> seed;
    if (!draws.empty()) {
      seed = io::require_seed(options_.seed_file, "risk");
    }

    RunReport report(context);
    StepRecord& step = report.add_step("risk");
    StepTimer timer(step);
    step.parameters = parameters();
    if (seed) report.set_seed_fingerprint(seed->fingerprint());

    PhaseClock clock("risk", comm.is_coordinator());
    OpenedTable opened = open_table_step(
        comm, context, options_.input, options_.household,
        {"", "risk", step.parameters, draws, seed ? std::optional<std::string>(seed->fingerprint()) : std::nullopt},
        write_options, clock);
    if (auto earlier = resumable_step_results(comm, options_.resume, options_.output, opened.fingerprint)) {
      timer.stop();
      record_resumed_step(step, std::move(*earlier));
      finish_table_step(comm, report, options_.input, opened, options_.output, options_.report);
      return;
    }
    TablePart& part = opened.part;

    const Table& table = part.table;
    const KeyColumns keys = key_columns(table, options_.keys);
    if (options_.weight) check_weights(table, *options_.weight);
    if (options_.missing == MissingKeys::kReject) reject_missing_keys(comm, table, keys);
    const std::span<const double> weights =
        options_.weight ? table.require(*options_.weight).values() : std::span<const double>();

    distributed::DistributedFrequencies frequencies =
        options_.missing == MissingKeys::kWildcard
            ? distributed::distributed_wildcard_frequency_count(comm, keys, weights, options_.alpha, options_.k_anonymity)
            : distributed::distributed_frequency_count(comm, keys, weights, options_.k_anonymity);
    clock.lap("frequency counts");
    // The size of each record's class of equal key tuples (missing equal to missing): fk itself, except
    // with wildcards, where fk also counts the records that match through a missing value.
    std::vector<double> class_sizes;
    if (options_.missing == MissingKeys::kWildcard)
      class_sizes = distributed::distributed_frequency_count(comm, keys, {}, options_.k_anonymity).records.fk;
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
      violates[i] = frequencies.records.fk[i] < static_cast<double>(options_.k_anonymity) ? 1 : 0;

    // Individual risk, its global sum, quantiles and threshold.
    IndividualRiskOptions risk_options;
    risk_options.method = options_.risk_method;
    risk_options.mode = options_.mode == Mode::kCompat ? RiskMode::kCompat : RiskMode::kNative;
    risk_options.qual = options_.qual;
    risk_options.weighted = options_.weight.has_value();
    IndividualRiskResult individual =
        record_individual_risk(frequencies.records.fk, frequencies.records.fk_weighted, risk_options);
    reject_invalid_classes(comm, table, individual, frequencies.records);
    warn_non_integer_classes(comm, individual, step.warnings);
    clock.lap("individual risk");
    const std::vector<double>& risk = individual.risk;
    const GlobalRisk global = distributed::distributed_global_risk(comm, risk);
    nlohmann::json individual_json = global_risk_json(global);
    individual_json["method"] = options_.risk_method == IndividualRiskMethod::kExact ? "exact" : "approx";
    individual_json["qual"] = options_.qual;
    individual_json["quantiles"] = risk_quantiles(comm, risk);
    step.results["individual_risk"] = individual_json;

    const bool risks_are_numbers = comm.all_reduce_sum(static_cast<std::int64_t>(
                                       std::count_if(risk.begin(), risk.end(), [](double r) { return std::isnan(r); }))) == 0;
    std::vector<std::int32_t> above(risk.size(), 0);
    if (risks_are_numbers) {
      const RiskThreshold threshold = distributed::distributed_risk_threshold(comm, risk, options_.global_risk_target);
      std::int64_t records_above = 0;
      if (!threshold.already_safe) {
        for (std::size_t i = 0; i < risk.size(); ++i) above[i] = risk[i] > threshold.threshold ? 1 : 0;
        records_above = std::count(above.begin(), above.end(), 1);
      }
      step.results["risk_threshold"] = {
          {"target", options_.global_risk_target},
          {"threshold", threshold.already_safe ? nlohmann::json(nullptr) : nlohmann::json(threshold.threshold)},
          {"already_safe", threshold.already_safe},
          {"records_above", comm.all_reduce_sum(records_above)}};
    } else {
      step.warnings.push_back("some individual risks are not numbers (compat mode with weights below 1): no risk "
                              "threshold is computed");
    }
    clock.lap("global risk and threshold");

    std::optional<std::vector<double>> household;
    if (options_.household) {
      household = household_risk(table.require(*options_.household, VariableType::kId).ids(), risk, risk_options.mode);
      step.results["household_risk"] = global_risk_json(distributed::distributed_global_risk(comm, *household));
      clock.lap("household risk");
    }

    nlohmann::json l_json = nlohmann::json::object();
    std::vector<Column> l_columns;
    for (const auto& name : options_.sensitive) {
      LDiversityOptions l_options;
      l_options.c = options_.l_recursion_constant;
      l_options.compat = options_.mode == Mode::kCompat;
      const auto l = distributed::distributed_l_diversity(
          comm, keys, table.require(name, VariableType::kCategorical).codes(), l_options, options_.l_diversity);
      l_json[name] = {{"classes", l.classes},
                      {"min_distinct", l.min_distinct},
                      {"min_entropy", l.min_entropy},
                      {"min_recursive", l.min_recursive},
                      {"l", options_.l_diversity},
                      {"classes_distinct_below_l", l.classes_distinct_below},
                      {"records_distinct_below_l", l.records_distinct_below}};
      std::vector<double> distinct(l.records.distinct.begin(), l.records.distinct.end());
      std::vector<double> recursive(l.records.recursive.begin(), l.records.recursive.end());
      l_columns.push_back(Column::continuous(new_variable(l_column("distinct", name), VariableType::kContinuous), std::move(distinct)));
      l_columns.push_back(Column::continuous(new_variable(l_column("entropy", name), VariableType::kContinuous),
                                             std::vector<double>(l.records.entropy)));
      l_columns.push_back(Column::continuous(new_variable(l_column("recursive", name), VariableType::kContinuous), std::move(recursive)));
    }
    if (!options_.sensitive.empty()) {
      step.results["l_diversity"] = l_json;
      clock.lap("l-diversity");
    }

    std::vector<Column> measure_columns;
    const std::span<const std::int64_t> household_ids =
        options_.household ? table.require(*options_.household, VariableType::kId).ids() : std::span<const std::int64_t>();
    const std::string input_name = options_.input.string();
    const RiskContext measure_context{.comm = comm,
                                      .input_name = input_name,
                                      .table = table,
                                      .keys = keys,
                                      .key_names = options_.keys,
                                      .weights = weights,
                                      .household_ids = household_ids,
                                      .frequencies = frequencies.records,
                                      .individual_risk = risk,
                                      .mode = options_.mode,
                                      .seed = seed ? std::optional<std::uint64_t>(seed->value) : std::nullopt,
                                      .individual_risk_options = risk_options,
                                      .k_anonymity = options_.k_anonymity,
                                      .weight_name = options_.weight,
                                      .report_min_count = context.report_min_count};
    for (auto& measure : measures_) {
      if (!measure->enabled()) continue;
      RiskMeasureOutput output;
      measure->run(measure_context, output);
      step.results[measure->result_key()] = std::move(output.results);
      for (Column& column : output.columns) measure_columns.push_back(std::move(column));
      step.warnings.insert(step.warnings.end(), output.warnings.begin(), output.warnings.end());
      clock.lap(measure->result_key().c_str());
    }

    added.push_back(Column::continuous(new_variable(kFk, VariableType::kContinuous), std::move(frequencies.records.fk)));
    added.push_back(Column::continuous(new_variable(kFkWeighted, VariableType::kContinuous),
                                       std::move(frequencies.records.fk_weighted)));
    added.push_back(Column::categorical(new_variable(kViolation, VariableType::kCategorical, {"false", "true"}), std::move(violates)));
    added.push_back(Column::continuous(new_variable(kIndividualRisk, VariableType::kContinuous), std::move(individual.risk)));
    added.push_back(Column::categorical(new_variable(kAboveThreshold, VariableType::kCategorical, {"false", "true"}), std::move(above)));
    if (household) added.push_back(Column::continuous(new_variable(kHouseholdRisk, VariableType::kContinuous), std::move(*household)));
    for (Column& column : l_columns) added.push_back(std::move(column));
    for (Column& column : measure_columns) added.push_back(std::move(column));

    write_options.provenance.step_results = step.results.dump();
    write_table_step_output(comm, options_.input, opened, std::move(added), {}, options_.output, write_options,
                            step.warnings);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("risk: {} records, {} equivalence classes, {} sample uniques, {} records in classes below k={}, "
                   "{:.2f} expected re-identifications",
                   summary.records, summary.classes, summary.sample_uniques, summary.records_below_k, summary.k,
                   global.expected_reidentifications);
    finish_table_step(comm, report, options_.input, opened, options_.output, options_.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    const auto expect = [&](const std::string& name, VariableType type, const char* flag) {
      const auto it = std::find_if(available.begin(), available.end(), [&](const VariableInfo& v) { return v.name == name; });
      if (it == available.end())
        problems.push_back(std::string(flag) + ": variable '" + name + "' is not in the step's input");
      else if (it->type != type)
        problems.push_back(std::string(flag) + ": variable '" + name + "' is " + std::string(to_string(it->type)) +
                           ", expected " + std::string(to_string(type)));
    };
    for (const auto& key : options_.keys) expect(key, VariableType::kCategorical, "keys");
    for (const auto& name : options_.sensitive) expect(name, VariableType::kCategorical, "sensitive");
    if (options_.weight) expect(*options_.weight, VariableType::kContinuous, "weight");
    if (options_.household) expect(*options_.household, VariableType::kId, "household");
    for (const auto& measure : measures_)
      if (measure->enabled()) measure->check_variables(available, problems);
    check_measure_parameters(problems);
  }

  void check_measure_parameters(std::vector<std::string>& problems) const {
    for (const auto& measure : measures_)
      if (measure->enabled()) measure->check_parameters(options_.keys.size(), problems);
  }

  bool needs_seed() const override {
    return std::any_of(measures_.begin(), measures_.end(),
                       [](const auto& measure) { return measure->enabled() && !measure->draws().empty(); });
  }

  std::vector<VariableInfo> added_variables() const override {
    std::vector<VariableInfo> added{new_variable(kFk, VariableType::kContinuous),
                                    new_variable(kFkWeighted, VariableType::kContinuous),
                                    new_variable(kViolation, VariableType::kCategorical, {"false", "true"}),
                                    new_variable(kIndividualRisk, VariableType::kContinuous),
                                    new_variable(kAboveThreshold, VariableType::kCategorical, {"false", "true"})};
    if (options_.household) added.push_back(new_variable(kHouseholdRisk, VariableType::kContinuous));
    for (const auto& name : options_.sensitive)
      for (const char* measure : {"distinct", "entropy", "recursive"})
        added.push_back(new_variable(l_column(measure, name), VariableType::kContinuous));
    for (const auto& measure : measures_)
      if (measure->enabled())
        for (VariableInfo& variable : measure->added_variables()) added.push_back(std::move(variable));
    return added;
  }

 private:
  nlohmann::json parameters() const {
    const auto optional = [](const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    nlohmann::json parameters = {{"keys", options_.keys},
            {"weight", optional(options_.weight)},
            {"household", optional(options_.household)},
            {"k-anonymity", options_.k_anonymity},
            {"missing", options_.missing == MissingKeys::kReject     ? "reject"
                        : options_.missing == MissingKeys::kCategory ? "category"
                                                                     : "wildcard"},
            {"risk-method", options_.risk_method == IndividualRiskMethod::kExact ? "exact" : "approx"},
            {"mode", options_.mode == Mode::kCompat ? "compat" : "native"},
            {"qual", options_.qual},
            {"global-risk-target", options_.global_risk_target},
            {"sensitive", options_.sensitive},
            {"l-diversity", options_.l_diversity},
            {"l-recursion-constant", options_.l_recursion_constant}};
    if (options_.missing == MissingKeys::kWildcard) parameters["alpha"] = options_.alpha;
    for (const auto& measure : measures_)
      if (measure->enabled()) parameters.update(measure->parameters());
    return parameters;
  }

  /// Collective: records and classes below each reported k. A class of s records contributes s records,
  /// so the classes below k are the sum over sizes s of (records of classes of size s below k) / s,
  /// exactly. Records are counted by (the first reported k they are below, their class size), a
  /// table no larger than the distinct class sizes times the reported k, merged over all ranks.
  nlohmann::json k_anonymity_table(const distributed::Communicator& comm, std::span<const double> fk,
                                   std::span<const double> class_size) const {
    const std::vector<std::int64_t> ks = reported_ks(options_.k_anonymity);
    // Small sizes (almost every record below a reported k) are counted densely, the rest in a map.
    constexpr std::int64_t kDenseSizes = 1 << 12;
    std::vector<std::int64_t> dense(ks.size() * kDenseSizes, 0);
    std::map<std::pair<std::size_t, std::int64_t>, std::int64_t> counts;  // (first k index, size) -> records
    for (std::size_t i = 0; i < fk.size(); ++i) {
      if (!(fk[i] < static_cast<double>(ks.back()))) continue;
      const auto first = static_cast<std::size_t>(
          std::upper_bound(ks.begin(), ks.end(), fk[i], [](double f, std::int64_t k) { return f < static_cast<double>(k); }) -
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
    for (const auto& [key, records] : counts) flat.insert(flat.end(), {static_cast<std::int64_t>(key.first), key.second, records});
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

  /// Collective: exact quantiles of all ranks' individual risks (type 7), without gathering them.
  static nlohmann::json risk_quantiles(const distributed::Communicator& comm, std::span<const double> risk) {
    const SampleQuantiles quantiles = distributed::distributed_exact_quantiles(comm, risk, kRiskQuantiles);
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t q = 0; q < quantiles.values.size(); ++q)
      out.push_back({{"p", kRiskQuantiles[q]},
                     {"value", std::isnan(quantiles.values[q]) ? nlohmann::json(nullptr) : nlohmann::json(quantiles.values[q])}});
    return out;
  }

  /// Collective: native mode stops at the first record (over all ranks) whose class the model cannot take.
  void reject_invalid_classes(const distributed::Communicator& comm, const Table& table,
                              const IndividualRiskResult& individual, const RecordFrequencies& records) const {
    const std::int64_t local_row = individual.invalid_class
                                       ? table.first_row_id() + static_cast<std::int64_t>(*individual.invalid_class)
                                       : std::numeric_limits<std::int64_t>::max();
    const std::int64_t first_row = comm.all_reduce_min(local_row);
    if (first_row == std::numeric_limits<std::int64_t>::max()) return;
    // The message names the row, never its class's size: a class of one would reveal a sample unique.
    const bool overflow = individual.invalid_class && local_row == first_row &&
                          !std::isfinite(records.fk_weighted[*individual.invalid_class]);
    const std::string where = options_.input.string() + ": variable '" + options_.weight.value_or("weight") +
                              "', row id " + std::to_string(first_row) + ": ";
    if (overflow)
      throw InvalidInput(where + "the weights of its class add up to more than the largest floating-point number "
                                 "(about 1.8e308); sampling weights are far smaller");
    throw InvalidInput(where + "its class has a weighted count below its sample count (weights below 1), which the "
                               "individual risk model cannot take; give --mode compat to compute it as sdcMicro does");
  }

  /// Collective: native mode warns about classes that get risk 0 by the reference's non-integer quirk.
  static void warn_non_integer_classes(const distributed::Communicator& comm, const IndividualRiskResult& individual,
                                       std::vector<std::string>& warnings) {
    const std::int64_t records = comm.all_reduce_sum(individual.non_integer_zero_classes);
    if (records > 0)
      warnings.push_back(std::to_string(records) +
                         " records have a non-integer fk below 2 other than 1 and get individual risk 0, as in sdcMicro");
  }

  /// Collective: the coordinator writes the report.
  /// Collective: the first missing key value over all ranks is an error naming its variable and row.
  void reject_missing_keys(const distributed::Communicator& comm, const Table& table, const KeyColumns& keys) const {
    const auto missing = first_missing_key(keys);
    const std::int64_t local_row =
        missing ? table.first_row_id() + static_cast<std::int64_t>(missing->record) : std::numeric_limits<std::int64_t>::max();
    const std::int64_t first_row = comm.all_reduce_min(local_row);
    if (first_row == std::numeric_limits<std::int64_t>::max()) return;
    // Every rank stops; the rank holding the row names the variable.
    std::string variable = "a key variable";
    if (missing && local_row == first_row) variable = "'" + options_.keys[missing->key] + "'";
    throw InvalidInput(options_.input.string() + ": variable " + variable + ", row id " + std::to_string(first_row) +
                       ": missing key value (give --missing category to treat missing as a level of its own)");
  }

  RiskOptions options_;
  std::vector<std::unique_ptr<RiskMeasure>> measures_ = make_risk_measures();
};

}  // namespace

std::unique_ptr<Command> make_risk_command() { return std::make_unique<RiskCommand>(); }

}  // namespace sdc::engine
