// `sdc risk --loglinear MODEL`: the log-linear model risk τ1, τ2 of Skinner and Holmes (docs/risk.md
// "Log-linear model risk", docs/methods risk.md §7) through kernels/risk/loglinear.h.
//
// Distributed plan: the keys are renumbered to their observed levels (one all-reduce of level counts);
// every model's observed margins are local counts plus one all-reduce of int64 tables; every rank fits
// the same model from the same margins (same bits). The risk sums run only over sample uniques, which
// are single records, so every rank takes its own records with f = 1 as classes; everything else the
// likelihood and sdcMicro's K' need comes from the histogram of class sizes, which is exact in integers.
// The parametric bootstrap splits the replicates over the ranks (each replicate is a pure function of
// the seed, its number and the fit) and gathers their τ values.

#include <spdlog/spdlog.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "distributed/collective_error.h"
#include "distributed/compose/frequency_count.h"
#include "distributed/compose/loglinear.h"
#include "distributed/compose/risk_merges.h"
#include "engine/flags.h"
#include "engine/loglinear_model.h"
#include "engine/risk/risk_measure.h"
#include "kernels/bootstrap/replicates.h"
#include "kernels/core/error.h"
#include "kernels/risk/loglinear.h"

namespace sdc::engine {
namespace {

using distributed::ClassSizeCount;

constexpr const char* kRiskColumn = "loglinear_risk";
constexpr const char* kInverseColumn = "loglinear_expected_inverse";
constexpr const char* kDefaultCandidates = "independence;two-way";

/// The parametric bootstrap draws every grid cell in every replicate: refused beyond B × cells.
constexpr std::uint64_t kBootstrapCellLimit = std::uint64_t{1} << 32;

VariableInfo continuous_variable(const std::string& name) {
  VariableInfo variable;
  variable.name = name;
  variable.type = VariableType::kContinuous;
  return variable;
}

nlohmann::json generator_names(const LogLinearModelSpec& spec, const std::vector<std::string>& key_names) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& generator : spec.generators) {
    nlohmann::json names = nlohmann::json::array();
    for (std::size_t j : generator) names.push_back(key_names[j]);
    out.push_back(names);
  }
  return out;
}

/// μ of every record: Π_g u_g(k_g), the factors multiplied in generator order as the kernel does
/// (the models here have no structural zeros).
std::vector<double> record_means(const LogLinearModelSpec& spec, const LogLinearFit& fit, const KeyColumns& keys) {
  struct Layout {
    std::vector<std::size_t> keys;
    std::vector<std::uint64_t> strides;
  };
  std::vector<Layout> layouts;
  for (const auto& generator : spec.generators) {
    Layout layout{generator, std::vector<std::uint64_t>(generator.size())};
    std::uint64_t stride = 1;
    for (std::size_t p = generator.size(); p-- > 0;) {
      layout.strides[p] = stride;
      stride *= static_cast<std::uint64_t>(spec.level_counts[generator[p]]);
    }
    layouts.push_back(std::move(layout));
  }
  std::vector<double> mu(keys.record_count());
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, mu.size(), 4096), [&](const auto& range) {
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      double value = 1.0;
      for (std::size_t g = 0; g < layouts.size(); ++g) {
        std::uint64_t index = 0;
        for (std::size_t p = 0; p < layouts[g].keys.size(); ++p)
          index += static_cast<std::uint64_t>(keys.codes[layouts[g].keys[p]][i]) * layouts[g].strides[p];
        value *= fit.factors[g][index];
      }
      mu[i] = value;
    }
  });
  return mu;
}

/// One fitted candidate and its score over all ranks.
struct FittedModel {
  LogLinearModelSpec spec;
  LogLinearFit fit;
  LogLinearScore score;
  std::vector<double> mu;  ///< of this rank's records
};

class LogLinearMeasure final : public RiskMeasure {
 public:
  void add_options(CLI::App& app, PathFlags&) override {
    app.add_option("--loglinear", model_,
                   "log-linear model risk tau1, tau2 of the sample uniques (Skinner-Holmes): independence, two-way "
                   "or generators of key names such as sex*age+age*marstat")
        ->type_name("MODEL");
    const std::map<std::string, std::string> criteria{{"aic", "aic"}, {"bic", "bic"}};
    app.add_option("--loglinear-select", select_,
                   "choose the log-linear model among --loglinear-candidates by the smallest AIC or BIC")
        ->transform(CLI::CheckedTransformer(criteria, CLI::ignore_case))
        ->type_name("aic|bic");
    app.add_option("--loglinear-candidates", candidates_,
                   "candidate models for --loglinear-select, separated by ';' (default independence;two-way)")
        ->type_name("M1;M2;...");
    app.add_option("--loglinear-sampling-fraction", sampling_fraction_,
                   "native mode: one sampling fraction PI for every cell (default: per sample unique f/F = 1/weight, "
                   "which needs --weight)")
        ->check(CLI::Range(std::nextafter(0.0, 1.0), 1.0))
        ->type_name("PI");
    app.add_option("--loglinear-bound", bound_,
                   "compat mode: sdcMicro modRisk's bound, cells with f above B are left out")
        ->check(CLI::Range(1.0, std::numeric_limits<double>::max()))
        ->type_name("B");
    app.add_option("--loglinear-bootstrap", bootstrap_,
                   "parametric bootstrap of tau1 and tau2 with B replicates (f* drawn from the fitted model and "
                   "refitted); needs --loglinear-sampling-fraction and a seed")
        ->check(whole_number_in(1, kMaxBootstrapReplicates))
        ->type_name("B");
    app.add_option("--loglinear-confidence", confidence_, "confidence level of the bootstrap intervals (default 0.95)")
        ->check(CLI::Range(std::nextafter(0.0, 1.0), std::nextafter(1.0, 0.0)))
        ->type_name("LEVEL");
  }

  bool enabled() const override {
    return model_ || select_ || candidates_ || sampling_fraction_ || bound_ || bootstrap_ || confidence_;
  }

  nlohmann::json parameters() const override {
    check_options();
    const auto optional_number = [](const std::optional<double>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    nlohmann::json parameters = {{"loglinear", model_ ? nlohmann::json(*model_) : nlohmann::json(nullptr)},
                                 {"loglinear-sampling-fraction", optional_number(sampling_fraction_)},
                                 {"loglinear-bound", optional_number(bound_)}};
    if (select_) {
      parameters["loglinear-select"] = *select_;
      parameters["loglinear-candidates"] = candidates_.value_or(kDefaultCandidates);
    }
    if (bootstrap_) {
      parameters["loglinear-bootstrap"] = *bootstrap_;
      parameters["loglinear-confidence"] = confidence_.value_or(0.95);
    }
    return parameters;
  }

  std::string result_key() const override { return "loglinear"; }

  std::vector<VariableInfo> added_variables() const override {
    return {continuous_variable(kRiskColumn), continuous_variable(kInverseColumn)};
  }

  void check_variables(const std::vector<VariableInfo>& /*available*/,
                       std::vector<std::string>& problems) const override {
    try {
      check_options();
    } catch (const UsageError& error) {
      problems.push_back(error.what());
    }
  }

  std::vector<StepId> draws() const override {
    // Only when the bootstrap can run, so that an inconsistent command line is told its own problem first.
    if (bootstrap_ && sampling_fraction_ && (model_ || select_)) return {StepId::kBootstrapParametric};
    return {};
  }

  void run(const RiskContext& context, RiskMeasureOutput& output) override;

 private:
  /// Problems with the flags alone (the same on every rank): UsageError naming the flag.
  void check_options() const {
    if (model_ && (select_ || candidates_))
      throw UsageError(
          "--loglinear MODEL and --loglinear-select/--loglinear-candidates exclude each other: give one model "
          "or the candidates to choose from");
    if (candidates_ && !select_) throw UsageError("--loglinear-candidates needs --loglinear-select aic|bic");
    if (!model_ && !select_)
      throw UsageError("the --loglinear-... options need --loglinear MODEL (or --loglinear-select aic|bic)");
    if (confidence_ && !bootstrap_) throw UsageError("--loglinear-confidence needs --loglinear-bootstrap B");
    if (bootstrap_ && !sampling_fraction_)
      throw UsageError(
          "--loglinear-bootstrap needs --loglinear-sampling-fraction: the uniques of a replicate fall in "
          "cells the sample did not observe, which have no weights");
  }

  /// Problems that need the step's mode and weights (the same on every rank).
  void check_context(const RiskContext& context) const {
    const bool compat = context.mode == Mode::kCompat;
    if (compat && sampling_fraction_)
      throw UsageError(
          "--loglinear-sampling-fraction is for native mode; compat mode takes sdcMicro's inclusion "
          "probabilities sum(1/w) from --weight");
    if (compat && bootstrap_)
      throw UsageError("--loglinear-bootstrap is for native mode (sdcMicro has no bootstrap of modRisk)");
    if (!compat && bound_) throw UsageError("--loglinear-bound is sdcMicro's bound: give it with --mode compat");
    if (!compat && !sampling_fraction_ && context.weights.empty())
      throw UsageError(
          "--loglinear needs --weight (per-unique sampling fraction 1/weight) or --loglinear-sampling-fraction PI");
  }

  FittedModel fit_model(const RiskContext& context, const std::string& flag, const std::string& model,
                        const KeyColumns& observed, const std::vector<ClassSizeCount>& sizes, std::int64_t n) const;

  std::optional<std::string> model_;
  std::optional<std::string> select_;
  std::optional<std::string> candidates_;
  std::optional<double> sampling_fraction_;
  std::optional<double> bound_;
  std::optional<std::int64_t> bootstrap_;
  std::optional<double> confidence_;
};

/// Collective: the first global row id for which `bad(i)` holds on some rank, thrown on every rank.
template <typename Bad>
void reject_first_row(const RiskContext& context, std::size_t records, Bad bad, const std::string& what) {
  std::optional<distributed::RowProblem> problem;
  for (std::size_t i = 0; i < records && !problem; ++i) {
    if (!bad(i)) continue;
    const std::int64_t row = context.table.first_row_id() + static_cast<std::int64_t>(i);
    problem = {row, context.input_name + ": --weight, row id " + std::to_string(row) + ": " + what};
  }
  distributed::throw_first_row_problem(context.comm, problem);
}

FittedModel LogLinearMeasure::fit_model(const RiskContext& context, const std::string& flag, const std::string& model,
                                        const KeyColumns& observed, const std::vector<ClassSizeCount>& sizes,
                                        std::int64_t n) const {
  LogLinearModelSpec raw;
  raw.level_counts = observed.level_counts;
  raw.generators = parse_loglinear_model(flag, model, context.key_names, "--keys");
  FittedModel out;
  try {
    out.spec = canonical_model(raw);
  } catch (const ParameterError& error) {
    throw UsageError(flag + ": model '" + trimmed_model(model) + "': " + error.what());
  }
  const LogLinearFitOptions options;
  check_loglinear_model_cost(flag, out.spec, context.key_names);
  const MarginCounts margins = distributed::distributed_loglinear_margins(context.comm, out.spec, observed);
  out.fit = fit_loglinear(out.spec, margins, options);
  out.mu = record_means(out.spec, out.fit, observed);

  // Likelihood over the classes: Σ_k f log μ − log f! = Σ_records log μ − Σ_sizes classes · log s!.
  LogLikelihoodPartial loglik;
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  const std::size_t blocks = (out.mu.size() + kBlock - 1) / kBlock;
  std::vector<LogLikelihoodPartial> parts(blocks);
  tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
    const std::size_t end = std::min(out.mu.size(), (b + 1) * kBlock);
    for (std::size_t i = b * kBlock; i < end; ++i) {
      if (out.mu[i] > 0.0)
        parts[b].class_term.add(std::log(out.mu[i]));
      else
        ++parts[b].impossible_classes;
    }
  });
  for (const auto& part : parts) loglinear_loglik_merge(loglik, part);
  loglik.class_term = distributed::all_reduce_exact_sum(context.comm, loglik.class_term);
  loglik.impossible_classes = context.comm.all_reduce_sum(loglik.impossible_classes);
  ExactSum saturated;
  for (const auto& [size, classes] : sizes) {
    const auto s = static_cast<double>(size);
    const auto c = static_cast<double>(classes);
    loglik.class_term.add(-c * std::lgamma(s + 1.0));
    saturated.add(c * (s * std::log(s) - std::lgamma(s + 1.0)));
  }
  out.score = score_loglinear_model(out.spec, out.fit, loglik, saturated, n);
  return out;
}

nlohmann::json score_json(const FittedModel& model, const std::vector<std::string>& key_names) {
  const auto grid = static_cast<std::int64_t>(loglinear_grid_size(model.spec));
  return {{"model", loglinear_model_formula(model.spec, key_names)},
          {"log_likelihood", number_or_null(model.score.log_likelihood)},
          {"deviance", number_or_null(model.score.deviance)},
          {"parameters", model.score.parameters},
          {"df", grid - model.score.parameters},
          {"aic", number_or_null(model.score.aic)},
          {"bic", number_or_null(model.score.bic)},
          {"sweeps", model.score.sweeps},
          {"converged", model.score.converged}};
}

nlohmann::json summary_json(const ReplicateSummary& summary) {
  return {{"estimate", number_or_null(summary.estimate)},
          {"mean", number_or_null(summary.mean)},
          {"standard_error", number_or_null(summary.standard_error)},
          {"bias", number_or_null(summary.bias)},
          {"percentile_lower", number_or_null(summary.percentile.lower)},
          {"percentile_upper", number_or_null(summary.percentile.upper)},
          {"basic_lower", number_or_null(summary.basic.lower)},
          {"basic_upper", number_or_null(summary.basic.upper)},
          {"nan_replicates", summary.nan_replicates}};
}

void LogLinearMeasure::run(const RiskContext& context, RiskMeasureOutput& output) {
  check_options();
  check_context(context);
  const auto& comm = context.comm;
  const bool compat = context.mode == Mode::kCompat;
  const std::size_t records = context.keys.record_count();
  const std::int64_t n = comm.all_reduce_sum(static_cast<std::int64_t>(records));
  if (n == 0) throw InvalidInput(context.input_name + ": --loglinear: the input has no records");

  // Weights the chosen convention cannot take, agreed over all ranks before anything else.
  if (compat && !context.weights.empty())
    reject_first_row(
        context, records, [&](std::size_t i) { return !(context.weights[i] > 0.0); },
        "a zero weight has no inclusion probability 1/w (compat log-linear risk)");

  // Keys on their observed levels (missing, when some rank has it, a level of its own).
  const distributed::ObservedKeys observed_keys = distributed::distributed_observed_keys(comm, context.keys);
  const KeyColumns observed = observed_keys.columns();

  // Class sizes of exact key tuples. The command's fk is that unless keys are missing (with wildcards
  // fk also counts compatible records), so with missing keys, and in compat mode for Σ 1/w, recount.
  std::vector<double> counted_sizes;
  std::vector<double> inverse_weight_sum;  // compat: π̃ of the record's class
  if (compat) {
    std::vector<double> inverse(records, 1.0);
    for (std::size_t i = 0; i < context.weights.size(); ++i) inverse[i] = 1.0 / context.weights[i];
    auto counted = distributed::distributed_frequency_count(comm, context.keys, inverse, 1);
    counted_sizes = std::move(counted.records.fk);
    inverse_weight_sum = std::move(counted.records.fk_weighted);
  } else if (observed_keys.has_missing) {
    counted_sizes = distributed::distributed_frequency_count(comm, context.keys, {}, 1).records.fk;
  }
  const std::span<const double> class_size = compat || observed_keys.has_missing
                                                 ? std::span<const double>(counted_sizes)
                                                 : std::span<const double>(context.frequencies.fk);
  if (!compat && !sampling_fraction_)
    reject_first_row(
        context, records, [&](std::size_t i) { return class_size[i] == 1.0 && !(context.weights[i] >= 1.0); },
        "a sample unique with weight below 1 has no sampling fraction f/F = 1/w in (0, 1] (give "
        "--loglinear-sampling-fraction PI)");
  const std::vector<ClassSizeCount> sizes = distributed::distributed_class_sizes(comm, class_size);

  // The model: the one given, or the best candidate.
  FittedModel chosen;
  nlohmann::json candidates_json;
  if (model_) {
    chosen = fit_model(context, "--loglinear", *model_, observed, sizes, n);
  } else {
    std::vector<FittedModel> fitted;
    std::vector<LogLinearScore> scores;
    for (const std::string& candidate : split_list(candidates_.value_or(kDefaultCandidates), ';')) {
      if (candidate.empty()) throw UsageError("--loglinear-candidates: an empty model between ';'");
      fitted.push_back(fit_model(context, "--loglinear-candidates", candidate, observed, sizes, n));
      scores.push_back(fitted.back().score);
    }
    const LogLinearSelection selection = choose_loglinear_model(scores);
    const std::size_t best = *select_ == "aic" ? selection.best_by_aic : selection.best_by_bic;
    candidates_json = nlohmann::json::array();
    for (std::size_t c = 0; c < fitted.size(); ++c) {
      nlohmann::json entry = score_json(fitted[c], context.key_names);
      entry["chosen"] = c == best;
      candidates_json.push_back(entry);
      if (c != best) fitted[c].mu = {};
    }
    chosen = std::move(fitted[best]);
  }
  const std::vector<double>& mu = chosen.mu;
  if (!chosen.fit.converged)
    output.warnings.push_back("the log-linear fit of " + loglinear_model_formula(chosen.spec, context.key_names) +
                              " did not converge in " + std::to_string(chosen.fit.sweeps) +
                              " sweeps (largest relative margin change " +
                              std::to_string(chosen.fit.max_relative_change) + ")");

  // Risk of the sample uniques: this rank's records with f = 1 are whole classes.
  const std::size_t m = context.keys.key_count();
  std::vector<std::int32_t> unique_keys;
  std::vector<std::int64_t> unique_counts;
  std::vector<double> unique_weights;
  std::vector<double> unique_inverse;
  std::vector<double> risk(records, 0.0);
  std::vector<double> expected_inverse(records, 0.0);
  for (std::size_t i = 0; i < records; ++i) {
    if (class_size[i] != 1.0) continue;
    for (std::size_t j = 0; j < m; ++j) unique_keys.push_back(observed.codes[j][i]);
    unique_counts.push_back(1);
    if (compat) {
      unique_inverse.push_back(inverse_weight_sum[i]);
      const double v = (1.0 - inverse_weight_sum[i]) * mu[i];
      risk[i] = std::exp(-v);
      expected_inverse[i] = v == 0.0 ? 1.0 : -std::expm1(-v) / v;
    } else {
      const double pi = sampling_fraction_ ? *sampling_fraction_ : 1.0 / context.weights[i];
      if (!sampling_fraction_) unique_weights.push_back(context.weights[i]);
      const UniqueRisk unique = loglinear_unique_risk(mu[i], pi);
      risk[i] = unique.reidentification;
      expected_inverse[i] = unique.expected_inverse;
    }
  }
  LogLinearRiskOptions risk_options;
  risk_options.mode = compat ? RiskMode::kCompat : RiskMode::kNative;
  risk_options.sampling_fraction = sampling_fraction_;
  if (bound_) risk_options.bound = *bound_;
  const LogLinearClasses uniques{m, unique_keys, unique_counts, unique_weights, unique_inverse};
  LogLinearRiskPartial partial = loglinear_risk_local(chosen.spec, chosen.fit, uniques, risk_options);
  partial.tau1 = distributed::all_reduce_exact_sum(comm, partial.tau1);
  partial.tau2 = distributed::all_reduce_exact_sum(comm, partial.tau2);
  partial.sample_uniques = comm.all_reduce_sum(partial.sample_uniques);
  partial.kept_classes = comm.all_reduce_sum(partial.kept_classes);
  std::int64_t unit_inclusion = partial.unit_inclusion ? 1 : 0;
  if (compat) {
    // sdcMicro's K' and its NaN rule also take the kept classes with 1 < f <= bound, from their records.
    std::vector<std::uint8_t> kept(records, 0);
    for (std::size_t i = 0; i < records; ++i) {
      if (class_size[i] > 1.0 && class_size[i] <= risk_options.bound && mu[i] != 0.0) {
        kept[i] = 1;
        if (inverse_weight_sum[i] == 1.0) unit_inclusion = 1;
      }
    }
    for (const auto& [size, classes] : distributed::distributed_class_sizes(comm, class_size, kept))
      partial.kept_classes += classes;
    unit_inclusion = comm.all_reduce_max(unit_inclusion);
  }
  partial.unit_inclusion = unit_inclusion != 0;
  const LogLinearRisk total = loglinear_risk_finalize(partial, risk_options);

  nlohmann::json results = {{"model", loglinear_model_formula(chosen.spec, context.key_names)},
                            {"generators", generator_names(chosen.spec, context.key_names)},
                            {"mode", compat ? "compat" : "native"},
                            {"grid_cells", static_cast<std::int64_t>(loglinear_grid_size(chosen.spec))},
                            {"parameters", chosen.score.parameters},
                            {"sweeps", chosen.fit.sweeps},
                            {"converged", chosen.fit.converged},
                            {"log_likelihood", number_or_null(chosen.score.log_likelihood)},
                            {"sample_uniques", total.sample_uniques}};
  if (compat) {
    results["gr1"] = number_or_null(total.tau1);
    results["gr2"] = number_or_null(total.tau2);
    results["kept_classes"] = total.kept_classes;
  } else {
    results["tau1"] = total.tau1;
    results["tau2"] = total.tau2;
    results["sampling_fraction"] =
        sampling_fraction_ ? nlohmann::json(*sampling_fraction_) : nlohmann::json("per-unique 1/weight");
  }
  if (select_) {
    results["selected_by"] = *select_;
    results["candidates"] = candidates_json;
  }

  if (bootstrap_) {
    const auto replicates = static_cast<std::uint64_t>(*bootstrap_);
    const std::uint64_t grid = loglinear_grid_size(chosen.spec);
    if (grid > kBootstrapCellLimit / replicates)
      throw UsageError("--loglinear-bootstrap: " + std::to_string(replicates) + " replicates of a grid of " +
                       std::to_string(grid) + " cells draw more than 2^32 = " + std::to_string(kBootstrapCellLimit) +
                       " cells in all; give fewer replicates, fewer keys or keys with fewer levels");
    // Replicate b (1..B) runs on rank (b - 1) mod ranks; the values meet in replicate order.
    distributed::ByteWriter mine;
    for (std::uint64_t b = 1 + static_cast<std::uint64_t>(comm.rank()); b <= replicates;
         b += static_cast<std::uint64_t>(comm.size())) {
      const TauReplicate replicate = tau_replicate(chosen.spec, chosen.fit, b, *context.seed, *sampling_fraction_);
      mine.put(b);
      mine.put(replicate.tau1);
      mine.put(replicate.tau2);
      mine.put(static_cast<std::int64_t>(replicate.converged ? 1 : 0));
    }
    std::vector<double> tau1(replicates, 0.0);
    std::vector<double> tau2(replicates, 0.0);
    std::int64_t not_converged = 0;
    for (const auto& part : comm.all_gather_bytes(mine.bytes())) {
      distributed::ByteReader in(part);
      while (!in.done()) {
        const auto b = in.get<std::uint64_t>();
        tau1[b - 1] = in.get<double>();
        tau2[b - 1] = in.get<double>();
        not_converged += in.get<std::int64_t>() == 0 ? 1 : 0;
      }
    }
    const double confidence = confidence_.value_or(0.95);
    const ReplicateSummary s1 = summarize_replicates(tau1, total.tau1, 1.0 - confidence);
    const ReplicateSummary s2 = summarize_replicates(tau2, total.tau2, 1.0 - confidence);
    results["bootstrap"] = {{"replicates", replicates},
                            {"design", "parametric"},
                            {"quantile_type", static_cast<int>(s1.quantile_type)},
                            {"confidence", confidence},
                            {"refits_not_converged", not_converged},
                            {"tau1", summary_json(s1)},
                            {"tau2", summary_json(s2)}};
    if (not_converged > 0)
      output.warnings.push_back(std::to_string(not_converged) +
                                " bootstrap refits of the log-linear model did not converge");
  }

  output.results = std::move(results);
  output.columns.push_back(Column::continuous(continuous_variable(kRiskColumn), std::move(risk)));
  output.columns.push_back(Column::continuous(continuous_variable(kInverseColumn), std::move(expected_inverse)));
}

}  // namespace

std::unique_ptr<RiskMeasure> make_loglinear_measure() { return std::make_unique<LogLinearMeasure>(); }

}  // namespace sdc::engine
