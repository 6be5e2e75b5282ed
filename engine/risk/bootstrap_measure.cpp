// `sdc risk --bootstrap B`: bootstrap uncertainty of the class-based risk statistics (global risk,
// expected re-identifications, sample uniques, records below k) from replicates of the records or of
// whole households (docs/methods/bootstrap.md §1-4; docs/risk.md "## Bootstrap").
//
// The replicate statistics come from the distributed composition distributed/compose/replicate_risk.h:
// every record goes to the owner of its class, the owners compute integer partials, every rank merges
// them. Multiplicities are functions of (seed, replicate, unit id), so the results do not depend on the
// number of ranks or threads.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numbers>

#include "distributed/collective_error.h"
#include "distributed/compose/replicate_risk.h"
#include "engine/risk/risk_measure.h"
#include "kernels/bootstrap/replicate_risk.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

enum class Design { kDefault, kPoisson, kMultinomial, kCluster, kStratified };

const char* design_name(Design design) {
  switch (design) {
    case Design::kPoisson:
      return "poisson";
    case Design::kMultinomial:
      return "multinomial";
    case Design::kCluster:
      return "cluster";
    case Design::kStratified:
      return "stratified";
    case Design::kDefault:
      break;
  }
  return "default";
}

/// The first replicate's number: replicates are b = 1..B (bootstrap.md §1), the counter of their draws.
constexpr std::uint64_t kFirstReplicate = 1;

/// A flag of the risk command itself (its value after CLI11's transforms), or `fallback` when absent.
template <typename T>
T command_flag(const CLI::App* app, const std::string& flag, T fallback) {
  const CLI::Option* option = app == nullptr ? nullptr : app->get_option_no_throw(flag);
  if (option == nullptr || option->count() == 0) return fallback;
  return option->as<T>();
}

/// α = 1 - level, rounded to 15 significant digits: 0.95 gives α = 0.05 exactly as a decimal (not
/// 0.050000000000000044), so α/2 is read as 0.025 by the quantile definitions (bootstrap.md §5).
double alpha_of(double confidence) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", 1.0 - confidence);
  double alpha = 0.0;
  std::from_chars(text, text + std::char_traits<char>::length(text), alpha);
  return alpha;
}

/// Uniqueness-based statistics (the kernel's classification), and without weights also ER and the global
/// risk: with r = 1/f, ER is the number of classes, which resampling biases as it biases the uniques.
bool is_naive(BootstrappedStatistic statistic, bool weighted) {
  if (naive_bootstrap_validity(statistic) == BootstrapValidity::kNaive) return true;
  return !weighted && (statistic == BootstrappedStatistic::kExpectedReidentifications ||
                       statistic == BootstrappedStatistic::kGlobalRisk);
}

nlohmann::json summary_json(const ReplicateSummary& s, bool naive) {
  return {{"estimate", s.estimate},
          {"mean", s.mean},
          {"standard_error", number_or_null(s.standard_error)},
          {"bias", s.bias},
          {"percentile", {{"lower", s.percentile.lower}, {"upper", s.percentile.upper}}},
          {"basic", {{"lower", s.basic.lower}, {"upper", s.basic.upper}}},
          {"critical_value", {{"value", number_or_null(s.critical.value)}, {"rank", s.critical.rank}}},
          {"naive", naive}};
}

std::vector<double> as_doubles(const std::vector<std::uint64_t>& values) {
  return std::vector<double>(values.begin(), values.end());
}

class BootstrapMeasure final : public RiskMeasure {
 public:
  void add_options(CLI::App& app, PathFlags&) override {
    app_ = &app;
    auto* bootstrap = app.add_option("--bootstrap", replicates_,
                                     "bootstrap B replicates of the global risk, expected re-identifications, sample "
                                     "uniques and records below k (needs a seed)")
                          ->check(whole_number_in(2, kMaxBootstrapReplicates))
                          ->type_name("B");
    const std::map<std::string, Design> designs{{"poisson", Design::kPoisson},
                                                {"multinomial", Design::kMultinomial},
                                                {"cluster", Design::kCluster},
                                                {"stratified", Design::kStratified}};
    app.add_option("--bootstrap-design", design_,
                   "replicate design: poisson (records, Poisson(1) multiplicities), multinomial (records, classical), "
                   "cluster (whole households, Poisson; needs --household) or stratified (multinomial within the "
                   "strata of --bootstrap-strata; households with --household). Default: cluster with --household, "
                   "else poisson")
        ->transform(CLI::CheckedTransformer(designs, CLI::ignore_case))
        ->type_name("poisson|multinomial|cluster|stratified")
        ->needs(bootstrap);
    app.add_option("--bootstrap-strata", strata_, "categorical strata variable of the stratified design")
        ->type_name("VAR")
        ->needs(bootstrap);
    app.add_option("--confidence", confidence_, "confidence level of the bootstrap intervals, in (0, 1); default 0.95")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              double value = 0.0;
              const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
              if (error != std::errc() || end != text.data() + text.size() || !(value > 0.0 && value < 1.0))
                return "expected a level strictly between 0 and 1, got '" + text + "'";
              return {};
            },
            "LEVEL in (0,1)"))
        ->type_name("LEVEL")
        ->needs(bootstrap);
    app.add_option("--quantile-type", quantile_type_,
                   "Hyndman-Fan quantile type 1..9 of the bootstrap intervals; default 7 (R's)")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              int value = 0;
              const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
              if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > 9)
                return "expected a quantile type, a whole number from 1 to 9, got '" + text + "'";
              return {};
            },
            "1..9"))
        ->type_name("1..9")
        ->needs(bootstrap);
  }

  bool enabled() const override { return replicates_ > 0; }

  nlohmann::json parameters() const override {
    check_flags();
    return {{"bootstrap", replicates_},
            {"bootstrap-design", design_name(design())},
            {"bootstrap-strata", strata_ ? nlohmann::json(*strata_) : nlohmann::json(nullptr)},
            {"confidence", confidence_},
            {"quantile-type", quantile_type_}};
  }

  std::string result_key() const override { return "bootstrap"; }
  std::vector<VariableInfo> added_variables() const override { return {}; }
  std::vector<StepId> draws() const override { return {StepId::kBootstrapReplicate}; }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    if (const std::string flags = flag_problem(); !flags.empty()) problems.push_back(flags);
    if (!strata_) return;
    const auto it =
        std::find_if(available.begin(), available.end(), [&](const VariableInfo& v) { return v.name == *strata_; });
    if (it == available.end())
      problems.push_back("bootstrap-strata: variable '" + *strata_ + "' is not in the step's input");
    else if (it->type != VariableType::kCategorical)
      problems.push_back("bootstrap-strata: variable '" + *strata_ + "' is " + std::string(to_string(it->type)) +
                         ", expected categorical");
  }

  void run(const RiskContext& context, RiskMeasureOutput& output) override {
    check_flags();
    SDC_CHECK(context.seed.has_value(), "the command supplies a seed to a measure that draws");
    const auto& comm = context.comm;
    const Design used = design();
    const bool by_household =
        used == Design::kCluster || (used == Design::kStratified && !context.household_ids.empty());
    const std::size_t n = context.table.row_count() < 0 ? 0 : static_cast<std::size_t>(context.table.row_count());
    const bool weighted = !context.weights.empty();
    if (weighted) check_weights(context);

    ReplicateRiskOptions options;
    options.risk = context.individual_risk_options;
    options.risk.weighted = weighted;
    options.k = context.k_anonymity;

    // Resampling units, one per record, and the design.
    std::vector<std::uint64_t> units(n);
    ReplicateDesign replicate_design = ReplicateDesign::poisson(*context.seed);
    std::int64_t local_units = 0;
    nlohmann::json strata_json = nullptr;
    if (used == Design::kStratified) {
      const auto numbered = stratified_units(context, by_household, units, local_units);
      replicate_design.scheme = ReplicateScheme::kMultinomial;
      replicate_design.stratum_offsets = numbered.offsets;
      strata_json = {{"variable", *strata_}, {"strata", numbered.offsets.size() - 1}};
    } else if (by_household) {
      for (std::size_t i = 0; i < n; ++i) {
        units[i] = static_cast<std::uint64_t>(context.household_ids[i]);
        if (i == 0 || context.household_ids[i] != context.household_ids[i - 1]) ++local_units;
      }
    } else {
      // Records: the global row id, the same whatever the partition.
      const auto first = static_cast<std::uint64_t>(context.table.first_row_id());
      for (std::size_t i = 0; i < n; ++i) units[i] = first + i;
      local_units = static_cast<std::int64_t>(n);
    }
    const std::int64_t total_units = comm.all_reduce_sum(local_units);
    if (used == Design::kMultinomial) {
      replicate_design = ReplicateDesign::multinomial(*context.seed, static_cast<std::uint64_t>(total_units));
    }

    warn_about_design(context, used, output.warnings);
    if (comm.all_reduce_max(has_missing_key(context.keys) ? 1 : 0) != 0) {
      output.warnings.push_back(
          "bootstrap: a missing key value is a category of its own in the replicates (as with "
          "--missing category); with --missing wildcard the estimates are not the step's "
          "wildcard counts");
    }

    const auto risk = distributed::distributed_replicate_risk(
        comm, context.keys, units, context.weights, options, replicate_design, kFirstReplicate,
        kFirstReplicate + static_cast<std::uint64_t>(replicates_));
    units = {};

    const double alpha = alpha_of(confidence_);
    const QuantileOptions quantiles{quantile_type_from_number(quantile_type_), QuantileArithmetic::kExact};
    const auto& full = risk.full_sample;
    const auto& reps = risk.replicates;
    nlohmann::json statistics = nlohmann::json::object();
    statistics["global_risk"] =
        summary_json(summarize_replicates(reps.global_risk, full.global_risk.at(0), alpha, quantiles),
                     is_naive(BootstrappedStatistic::kGlobalRisk, weighted));
    statistics["expected_reidentifications"] = summary_json(
        summarize_replicates(reps.expected_reidentifications, full.expected_reidentifications.at(0), alpha, quantiles),
        is_naive(BootstrappedStatistic::kExpectedReidentifications, weighted));
    statistics["sample_uniques"] =
        summary_json(summarize_replicates(as_doubles(reps.sample_uniques),
                                          static_cast<double>(full.sample_uniques.at(0)), alpha, quantiles),
                     is_naive(BootstrappedStatistic::kSampleUniques, weighted));
    statistics["records_below_k"] =
        summary_json(summarize_replicates(as_doubles(reps.records_below_k),
                                          static_cast<double>(full.records_below_k.at(0)), alpha, quantiles),
                     is_naive(BootstrappedStatistic::kRecordsBelowK, weighted));
    std::vector<std::string> naive;
    for (const auto& [name, summary] : statistics.items())
      if (summary["naive"].get<bool>()) naive.push_back(name);
    if (!naive.empty()) {
      std::string names;
      for (const auto& name : naive) names += (names.empty() ? "" : ", ") + name;
      output.warnings.push_back(
          "bootstrap: naive bootstrap of a uniqueness measure is biased: uniques survive a replicate with probability "
          "0.368; use a parametric bootstrap (reported with \"naive\": true: " +
          names + ")");
    }

    output.results = {{"replicates", replicates_},
                      {"design", design_name(used)},
                      {"resampling_unit", by_household ? "household" : "record"},
                      {"units", total_units},
                      {"strata", strata_json},
                      {"first_replicate", kFirstReplicate},
                      {"confidence", confidence_},
                      {"alpha", alpha},
                      {"quantile_type", quantile_type_},
                      {"k", options.k},
                      {"replicate_records", replicate_records_json(reps.records)},
                      {"statistics", statistics},
                      {"unique_survival", survival_json(full.sample_uniques.at(0), reps.unique_survivors)}};
  }

 private:
  Design design() const {
    if (design_ != Design::kDefault) return design_;
    if (strata_) return Design::kStratified;
    return household_given() ? Design::kCluster : Design::kPoisson;
  }

  bool household_given() const { return command_flag<std::string>(app_, "--household", "") != ""; }

  /// The first problem with the combination of flags, or empty.
  std::string flag_problem() const {
    if (!enabled()) return {};
    const Design used = design();
    if (used == Design::kCluster && !household_given())
      return "--bootstrap-design cluster resamples whole households: give --household VAR";
    if (used == Design::kStratified && !strata_) return "--bootstrap-design stratified needs --bootstrap-strata VAR";
    if (strata_ && used != Design::kStratified)
      return "--bootstrap-strata applies to --bootstrap-design stratified, not " + std::string(design_name(used));
    return {};
  }

  void check_flags() const {
    if (const std::string problem = flag_problem(); !problem.empty()) throw UsageError(problem);
  }

  /// Collective. The plan needs finite positive weights, and at least 1 in native mode (replicate classes
  /// then keep F >= f); the first bad row over all ranks is named on every rank.
  void check_weights(const RiskContext& context) const {
    const bool native = context.mode == Mode::kNative;
    std::optional<distributed::RowProblem> problem;
    for (std::size_t i = 0; i < context.weights.size() && !problem; ++i) {
      const double w = context.weights[i];
      if (std::isfinite(w) && w > 0.0 && !(native && w < 1.0)) continue;
      const std::int64_t row = context.table.first_row_id() + static_cast<std::int64_t>(i);
      problem = {row, context.input_name + ": variable '" + context.weight_name.value_or("weight") + "', row id " +
                          std::to_string(row) +
                          (native ? ": --bootstrap needs weights of at least 1 in native mode (a replicate class "
                                    "could otherwise have F < f); give --mode compat to allow weights in (0, 1)"
                                  : ": --bootstrap needs finite positive weights")};
    }
    distributed::throw_first_row_problem(context.comm, problem);
  }

  /// Collective. Unit numbers within strata (records, or households when `by_household`), in file order.
  distributed::StratifiedUnits stratified_units(const RiskContext& context, bool by_household,
                                                std::vector<std::uint64_t>& units, std::int64_t& local_units) const {
    const Column* found = context.table.find(*strata_);
    if (found == nullptr || found->info().type != VariableType::kCategorical)
      throw InvalidInput(context.input_name + ": --bootstrap-strata: variable '" + *strata_ + "' " +
                         (found == nullptr
                              ? std::string("is not in the file")
                              : "is " + std::string(to_string(found->info().type)) + ", expected categorical"));
    const Column& column = *found;
    const auto codes = column.codes();
    const auto strata = column.info().levels.size();
    const std::size_t n = units.size();
    // Per record, the index of its unit among this rank's units; per unit, its stratum.
    std::vector<std::uint32_t> record_unit(n);
    std::vector<std::int32_t> unit_stratum;
    std::optional<distributed::RowProblem> missing;
    std::optional<distributed::RowProblem> mixed;
    const auto at = [&](std::size_t i) { return context.table.first_row_id() + static_cast<std::int64_t>(i); };
    const auto where = [&](std::size_t i) {
      return context.input_name + ": variable '" + *strata_ + "', row id " + std::to_string(at(i));
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (codes[i] < 0 && !missing) missing = {at(i), where(i) + ": missing stratum (--bootstrap-strata)"};
      const bool new_unit = !by_household || i == 0 || context.household_ids[i] != context.household_ids[i - 1];
      if (new_unit) {
        unit_stratum.push_back(std::max(codes[i], 0));
      } else if (codes[i] != codes[i - 1] && !mixed) {
        mixed = {at(i), where(i) +
                            ": the stratum changes within a household; the stratified design resamples "
                            "whole households within strata (--bootstrap-strata with --household)"};
      }
      record_unit[i] = static_cast<std::uint32_t>(unit_stratum.size() - 1);
    }
    distributed::throw_first_row_problem(context.comm, missing);
    distributed::throw_first_row_problem(context.comm, mixed);
    auto numbered = distributed::number_units_within_strata(context.comm, unit_stratum, strata);
    for (std::size_t i = 0; i < n; ++i) units[i] = numbered.numbers[record_unit[i]];
    local_units = static_cast<std::int64_t>(unit_stratum.size());
    return numbered;
  }

  void warn_about_design(const RiskContext& context, Design used, std::vector<std::string>& warnings) const {
    if (!context.household_ids.empty() && (used == Design::kPoisson || used == Design::kMultinomial))
      warnings.push_back("bootstrap: --bootstrap-design " + std::string(design_name(used)) +
                         " resamples persons independently although --household is given; members of a household "
                         "are alike, so the intervals are too narrow (the cluster design, the default with "
                         "--household, resamples whole households)");
  }

  static bool has_missing_key(const KeyColumns& keys) {
    for (const auto& codes : keys.codes)
      for (std::int32_t code : codes)
        if (code < 0) return true;
    return false;
  }

  /// The replicate sizes n^(b): fixed at n by the multinomial designs, random under Poisson and cluster.
  static nlohmann::json replicate_records_json(const std::vector<std::uint64_t>& records) {
    const auto [low, high] = std::minmax_element(records.begin(), records.end());
    return {{"mean", summarize_replicates(as_doubles(records), 0.0).mean}, {"min", *low}, {"max", *high}};
  }

  nlohmann::json survival_json(std::uint64_t uniques, const std::vector<std::uint64_t>& survivors) const {
    // Per replicate, the fraction of the full sample's uniques that are drawn exactly once (so still
    // unique); its mean over the replicates and that mean's Monte Carlo standard error.
    nlohmann::json out = {{"sample_uniques", uniques}, {"poisson_probability", std::exp(-1.0)}};
    if (uniques == 0) {
      out["mean_rate"] = nullptr;
      out["standard_error"] = nullptr;
      return out;
    }
    std::vector<double> rates(survivors.size());
    for (std::size_t b = 0; b < rates.size(); ++b)
      rates[b] = static_cast<double>(survivors[b]) / static_cast<double>(uniques);
    const ReplicateSummary summary = summarize_replicates(rates, 0.0);
    out["mean_rate"] = summary.mean;
    out["standard_error"] = number_or_null(summary.standard_error / std::sqrt(static_cast<double>(summary.replicates)));
    return out;
  }

  CLI::App* app_ = nullptr;
  std::int64_t replicates_ = 0;
  Design design_ = Design::kDefault;
  std::optional<std::string> strata_;
  double confidence_ = 0.95;
  int quantile_type_ = 7;
};

}  // namespace

std::unique_ptr<RiskMeasure> make_bootstrap_measure() { return std::make_unique<BootstrapMeasure>(); }

}  // namespace sdc::engine
