// `sdc risk --nb-smoothing`: the Rinott–Shlomo negative-binomial smoothing risk of the sample uniques
// (docs/risk.md "NB smoothing", docs/methods risk.md §8). The kernel is kernels/risk/nb_smoothing.h,
// the composition over ranks distributed/compose/nb_smoothing.h; this file owns the options, their
// checks and the report.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/nb_smoothing.h"
#include "engine/risk/risk_measure.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

constexpr const char* kRiskColumn = "nb_risk";
constexpr const char* kExpectedInverseColumn = "nb_expected_inverse";

/// The sup-norm ball (2c+1)^v is enumerated to build a neighbourhood: beyond this many cells the
/// enumeration and the per-fit cost (|M| p² per Newton iteration) are out of proportion.
constexpr double kMaxNeighbourhoodCells = 1e6;

VariableInfo continuous_variable(const char* name) {
  VariableInfo variable;
  variable.name = name;
  variable.type = VariableType::kContinuous;
  return variable;
}

/// Accepts a number in (0, 1], with a message that says so.
CLI::Validator sampling_fraction_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0.0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !(value > 0.0 && value <= 1.0))
          return "expected a number in (0, 1], got '" + text + "'";
        return {};
      },
      "0<PI<=1");
}

const char* out_of_range_name(OutOfRangeCells policy) {
  return policy == OutOfRangeCells::kIncludeAsZero ? "zero" : "exclude";
}

class NbSmoothingMeasure final : public RiskMeasure {
 public:
  void add_options(CLI::App& app, PathFlags&) override {
    auto* enable =
        app.add_flag("--nb-smoothing", enabled_,
                     "Rinott-Shlomo negative-binomial smoothing risk of the sample uniques (columns nb_risk and "
                     "nb_expected_inverse); needs --ordinal-keys and --weight or --nb-sampling-fraction");
    add_variable_list_option(app, "--ordinal-keys", ordinal_keys_,
                             "with --nb-smoothing: the keys whose level order is their natural order (e.g. age); the "
                             "neighbourhood of a unique varies them and holds the other keys fixed")
        ->needs(enable);
    app.add_option("--nb-radius", radius_,
                   "with --nb-smoothing: c, the largest code distance on any ordinal key (default 2)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("C")
        ->needs(enable);
    app.add_option("--nb-l1-radius", l1_radius_,
                   "with --nb-smoothing: d, the largest sum of code distances over the ordinal keys (default: none)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("D")
        ->needs(enable);
    app.add_option(
           "--nb-degree", degree_,
           "with --nb-smoothing: t, the degree of the local log-mean polynomial in each ordinal key (default 2)")
        ->check(whole_number_in(1, kMaxCount))
        ->type_name("T")
        ->needs(enable);
    const std::map<std::string, OutOfRangeCells> policies{{"zero", OutOfRangeCells::kIncludeAsZero},
                                                          {"exclude", OutOfRangeCells::kExclude}};
    app.add_option(
           "--nb-out-of-range", out_of_range_,
           "with --nb-smoothing: neighbours beyond an ordinal key's levels count as cells with f = 0 (zero, the "
           "paper's choice) or are left out (exclude)")
        ->transform(CLI::CheckedTransformer(policies, CLI::ignore_case))
        ->type_name("zero|exclude")
        ->needs(enable);
    app.add_option("--nb-sampling-fraction", sampling_fraction_,
                   "with --nb-smoothing: the sampling fraction pi of every sample unique (default: 1/F, the inverse of "
                   "its weight)")
        ->check(sampling_fraction_check())
        ->type_name("PI")
        ->needs(enable);
  }

  bool enabled() const override { return enabled_; }

  nlohmann::json parameters() const override {
    return {
        {"nb-smoothing", true},
        {"ordinal-keys", ordinal_keys_},
        {"nb-radius", radius_},
        {"nb-l1-radius", l1_radius_ ? nlohmann::json(*l1_radius_) : nlohmann::json(nullptr)},
        {"nb-degree", degree_},
        {"nb-out-of-range", out_of_range_name(out_of_range_)},
        {"nb-sampling-fraction", sampling_fraction_ ? nlohmann::json(*sampling_fraction_) : nlohmann::json(nullptr)}};
  }

  std::string result_key() const override { return "nb_smoothing"; }

  std::vector<VariableInfo> added_variables() const override {
    return {continuous_variable(kRiskColumn), continuous_variable(kExpectedInverseColumn)};
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : ordinal_keys_) {
      const auto it =
          std::find_if(available.begin(), available.end(), [&](const VariableInfo& v) { return v.name == name; });
      if (it == available.end())
        problems.push_back("ordinal-keys: variable '" + name + "' is not in the step's input");
      else if (it->type != VariableType::kCategorical)
        problems.push_back("ordinal-keys: variable '" + name + "' is " + std::string(to_string(it->type)) +
                           ", expected categorical");
    }
  }

  void run(const RiskContext& context, RiskMeasureOutput& output) override {
    // Option checks: every rank sees the same options and throws the same error.
    const std::vector<std::size_t> ordinal = ordinal_positions(context.key_names);
    // A rank without records has no weights either: whether the step has weights is agreed.
    const bool weighted = context.comm.all_reduce_max(context.weights.empty() ? 0 : 1) == 1;
    if (!weighted && !sampling_fraction_)
      throw UsageError(
          "--nb-smoothing needs the sampling fraction of the sample uniques: give --weight (pi = 1/F) or "
          "--nb-sampling-fraction PI");
    if (degree_ > 2 * radius_)
      throw InvalidJob("--nb-degree " + std::to_string(degree_) + " exceeds 2 x --nb-radius (" +
                       std::to_string(2 * radius_) + "): an ordinal key takes only " + std::to_string(2 * radius_ + 1) +
                       " offsets in a neighbourhood, so higher powers add no information");
    const double sup_ball = std::pow(2.0 * static_cast<double>(radius_) + 1.0, static_cast<double>(ordinal.size()));
    if (sup_ball > kMaxNeighbourhoodCells)
      throw InvalidJob("--nb-radius " + std::to_string(radius_) + " with " + std::to_string(ordinal.size()) +
                       " ordinal keys spans " + std::to_string(static_cast<std::int64_t>(sup_ball)) +
                       " cells, more than the 1000000 a neighbourhood may have: use a smaller --nb-radius or fewer "
                       "--ordinal-keys");
    reject_missing_ordinal_codes(context, ordinal);

    distributed::NbSmoothingInput input;
    std::vector<std::string> fixed_names;
    for (std::size_t j = 0; j < context.key_names.size(); ++j) {
      if (std::find(ordinal.begin(), ordinal.end(), j) != ordinal.end()) continue;
      input.keys.codes.push_back(context.keys.codes[j]);
      input.keys.level_counts.push_back(context.keys.level_counts[j]);
      fixed_names.push_back(context.key_names[j]);
    }
    input.fixed_key_count = fixed_names.size();
    for (std::size_t j : ordinal) {
      input.keys.codes.push_back(context.keys.codes[j]);
      input.keys.level_counts.push_back(context.keys.level_counts[j]);
      input.ordinal_key_names.push_back(context.key_names[j]);
    }
    input.weighted = weighted;
    input.weights = context.weights;
    input.weight_name = weight_name(context);
    input.sampling_fraction = sampling_fraction_;
    input.options.sup_radius = static_cast<std::int32_t>(radius_);
    // A d beyond v·c cuts nothing from the sup-norm ball.
    if (l1_radius_)
      input.options.l1_radius = static_cast<std::int32_t>(
          std::min<std::int64_t>(*l1_radius_, static_cast<std::int64_t>(ordinal.size()) * radius_));
    input.options.polynomial_degree = static_cast<std::int32_t>(degree_);
    input.options.out_of_range = out_of_range_;
    if (fixed_names.empty() && context.comm.is_coordinator() && context.comm.size() > 1)
      spdlog::info(
          "risk: NB smoothing without fixed keys: the ranks split the codes of '{}' and exchange a halo of "
          "width {}",
          context.key_names[ordinal.front()], radius_);

    distributed::DistributedNbSmoothing result = distributed::distributed_nb_smoothing(context.comm, input);

    const NbSmoothingTotals& totals = result.totals;
    output.results = {
        {"ordinal_keys", ordinal_keys_},
        {"fixed_keys", fixed_names},
        {"c", radius_},
        {"d", l1_radius_ ? nlohmann::json(*l1_radius_) : nlohmann::json(nullptr)},
        {"t", degree_},
        {"out_of_range", out_of_range_name(out_of_range_)},
        {"sampling_fraction", sampling_fraction_ ? nlohmann::json(*sampling_fraction_) : nlohmann::json(nullptr)},
        {"neighbourhood_size", result.neighbourhood_size},
        {"sample_uniques", totals.sample_uniques},
        {"tau1", totals.tau1},
        {"tau2", totals.tau2},
        {"fits_not_converged", totals.not_converged},
        {"mean_iterations", totals.sample_uniques > 0
                                ? static_cast<double>(result.iterations) / static_cast<double>(totals.sample_uniques)
                                : 0.0}};
    if (totals.not_converged > 0)
      output.warnings.push_back("NB smoothing: " + std::to_string(totals.not_converged) +
                                " local fits stopped at the iteration limit; their last iterate is used");
    output.columns.push_back(
        Column::continuous(continuous_variable(kRiskColumn), std::move(result.unique_probability)));
    output.columns.push_back(
        Column::continuous(continuous_variable(kExpectedInverseColumn), std::move(result.expected_inverse)));
  }

 private:
  /// Positions of the ordinal keys among the keys, in --ordinal-keys order.
  std::vector<std::size_t> ordinal_positions(const std::vector<std::string>& key_names) const {
    if (ordinal_keys_.empty())
      throw UsageError("--nb-smoothing needs --ordinal-keys: the keys whose level order is their natural order");
    std::vector<std::size_t> positions;
    std::set<std::string> seen;
    for (const auto& name : ordinal_keys_) {
      if (!seen.insert(name).second) throw UsageError("--ordinal-keys: variable '" + name + "' is given twice");
      const auto it = std::find(key_names.begin(), key_names.end(), name);
      if (it == key_names.end()) throw UsageError("--ordinal-keys: variable '" + name + "' is not one of the --keys");
      positions.push_back(static_cast<std::size_t>(it - key_names.begin()));
    }
    return positions;
  }

  /// Collective: a missing value in an ordinal key has no place on its scale; the first one over all
  /// ranks is an error naming its variable and row id.
  static void reject_missing_ordinal_codes(const RiskContext& context, const std::vector<std::size_t>& ordinal) {
    std::optional<distributed::RowProblem> problem;
    for (std::size_t j : ordinal) {
      const auto codes = context.keys.codes[j];
      const auto it = std::find_if(codes.begin(), codes.end(), [](std::int32_t code) { return code < 0; });
      if (it == codes.end()) continue;
      const std::int64_t row = context.table.first_row_id() + (it - codes.begin());
      if (!problem || row < problem->row)
        problem = {row, context.input_name + ": variable '" + context.key_names[j] + "', row id " +
                            std::to_string(row) +
                            ": missing value in an ordinal key of --nb-smoothing (ordinal keys must be complete)"};
    }
    distributed::throw_first_row_problem(context.comm, problem);
  }

  /// A view that outlives the step: the option's own string, or a literal.
  static std::string_view weight_name(const RiskContext& context) {
    return context.weight_name ? std::string_view(*context.weight_name) : std::string_view("weight");
  }

  bool enabled_ = false;
  std::vector<std::string> ordinal_keys_;
  std::int64_t radius_ = 2;
  std::optional<std::int64_t> l1_radius_;
  std::int64_t degree_ = 2;
  OutOfRangeCells out_of_range_ = OutOfRangeCells::kIncludeAsZero;
  std::optional<double> sampling_fraction_;
};

}  // namespace

std::unique_ptr<RiskMeasure> make_nb_smoothing_measure() { return std::make_unique<NbSmoothingMeasure>(); }

}  // namespace sdc::engine
