#include "engine/perturbation/noise_step.h"

// Noise on continuous variables (docs/noise.md; docs/methods perturbation.md §2–3). The moments of the
// variables and of the records' normal draws are merged over all ranks, every rank builds the same
// map from them, and each record's noise follows from its values, its row id and the map
// (distributed/compose/noise.h). The report gives the constant c, each variable's mean and sd before
// and after and those of the noise, and how far the noise's covariance lies from its target. The
// restore-covariance models read the file before masking (--original) in the input's row ranges, as
// the comparison steps read a masked file (engine/compare/masked_input.h), and report the projection
// of their target and how far the released covariance lies from the original's.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/noise.h"
#include "engine/checkpoint.h"
#include "engine/compare/masked_input.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

/// A clipped mass above this (in units of the original's variances) is more than rounding: the
/// difference of the covariances was not positive semi-definite, and the report warns.
constexpr double kClippedMassWarning = 1e-9;

/// The largest |a_jk − b_jk| / sqrt(b_jj b_kk): unit-free, so that a variable of small scale counts as
/// much as one of large scale (an entry whose variances are 0 counts its absolute difference).
double largest_scaled_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double largest = 0.0;
  for (Eigen::Index j = 0; j < b.rows(); ++j) {
    for (Eigen::Index k = 0; k < b.cols(); ++k) {
      const double scale = std::sqrt(b(j, j) * b(k, k));
      const double difference = std::abs(a(j, k) - b(j, k));
      largest = std::max(largest, scale > 0.0 ? difference / scale : difference);
    }
  }
  return largest;
}

nlohmann::json numbers(const Eigen::VectorXd& values) {
  nlohmann::json out = nlohmann::json::array();
  for (Eigen::Index k = 0; k < values.size(); ++k) out.push_back(values(k));
  return out;
}

class NoiseStepImpl final : public NoiseStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const perturbation::NoiseOptions noise_options = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "noise");

    const bool restoring = perturbation::restores_covariance(noise_options.method);

    StepFrame frame(context, "noise", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    // The original is an input like the comparison steps' `masked`: its content digest enters the
    // fingerprint, so that --resume runs the step again when the original changes.
    std::vector<NamedInput> other_inputs;
    if (restoring) other_inputs.push_back({"original", *options.original});
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "noise", step.parameters, {StepId::kNoise}, seed.fingerprint(), {}},
                                         write_options, clock, OutputRelease::kMasked, other_inputs);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const ContinuousColumns x = continuous_columns(table, options.variables);
    distributed::agree_on_error(comm, [&] { require_complete(x.columns, "noise"); });
    std::optional<Table> original_part;
    std::optional<ContinuousColumns> original;
    if (restoring) {
      original_part =
          read_companion_part(comm, part, *options.original, options.variables, std::nullopt,
                              {"the input", "--original holds the records of --input before masking, in the same order",
                               VariableType::kContinuous, "--original must hold every variable of --variables",
                               "the noise restores the covariance of continuous variables"});
      original.emplace(continuous_columns(*original_part, options.variables));
      distributed::agree_on_error(comm, [&] { require_complete(original->columns, "noise"); });
      clock.lap("original");
    }
    distributed::NoisedPart noised =
        restoring ? distributed::add_noise(comm, x.columns, original->columns, noise_options, seed.value)
                  : distributed::add_noise(comm, x.columns, noise_options, seed.value);
    original.reset();  // the views first, then the values they point into
    original_part.reset();
    clock.lap("noise");

    const auto& map = noised.map;
    nlohmann::json variables = nlohmann::json::array();
    const auto& before = noised.original;
    const auto& after = noised.released_moments;
    const auto& noise = noised.noise;
    for (std::size_t j = 0; j < options.variables.size(); ++j) {
      const auto k = static_cast<Eigen::Index>(j);
      variables.push_back({{"name", options.variables[j]},
                           {"mean", before.mean(k)},
                           {"sd", std::sqrt(before.covariance(k, k))},
                           {"released_mean", after.mean(k)},
                           {"released_sd", std::sqrt(after.covariance(k, k))},
                           {"noise_mean", noise.mean(k)},
                           {"noise_sd", std::sqrt(noise.covariance(k, k))}});
    }
    // How far the noise's covariance lies from its target (cΣ, diag(σ_j² pct²) for additive, D₊ for
    // the restore-covariance models), relative to the target's largest entry.
    Eigen::MatrixXd target = map.c * before.covariance;
    if (noise_options.method == perturbation::NoiseMethod::kAdditive)
      target = (map.transform.transpose() * map.transform).eval();
    if (restoring) target = noised.restore->target;
    const double scale = target.cwiseAbs().maxCoeff();
    const double deviation = (noise.covariance - target).cwiseAbs().maxCoeff();
    nlohmann::json restore = nullptr;
    if (restoring) {
      const perturbation::RestoreTarget& gap = *noised.restore;
      const Eigen::MatrixXd& covariance = noised.reference->covariance;
      nlohmann::json original_sd = nlohmann::json::array();
      for (Eigen::Index k = 0; k < covariance.rows(); ++k) original_sd.push_back(std::sqrt(covariance(k, k)));
      restore = {{"original_sd", std::move(original_sd)},
                 {"difference_eigenvalues", numbers(gap.eigenvalues)},
                 {"clipped_eigenvalues", gap.clipped},
                 {"clipped_mass", gap.clipped_mass},
                 {"released_covariance_relative_deviation", largest_scaled_difference(after.covariance, covariance)}};
      if (gap.clipped_mass > kClippedMassWarning)
        step.warnings.push_back(
            "Cov(original) - Cov(input) is not positive semi-definite: " + std::to_string(gap.clipped) +
            " eigenvalue(s) clipped at 0 (mass " + std::to_string(gap.clipped_mass) +
            " in units of the original's variances); the released covariance misses the "
            "original's by the clipped part (restore_covariance."
            "released_covariance_relative_deviation)");
    }
    const bool has_c = noise_options.method != perturbation::NoiseMethod::kAdditive && !restoring;
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"model", options.model},
                    {"c", has_c ? nlohmann::json(map.c) : nlohmann::json(nullptr)},
                    {"noise_covariance_relative_deviation", scale > 0.0 ? deviation / scale : deviation},
                    {"restore_covariance", std::move(restore)},
                    {"variables", std::move(variables)}};
    for (const auto& warning : map.warnings) step.warnings.push_back(warning);

    write_masked_columns(comm, context, options.input, opened, options.variables, std::move(noised.released),
                         options.output, write_options, step, clock);
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("noise: {} records, {} variables, {} noise", part.summary.row_count, options.variables.size(),
                   options.model);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
  }

  bool needs_seed() const override { return true; }

 private:
  perturbation::NoiseOptions parse() const {
    std::set<std::string> seen;
    for (const auto& name : options.variables)
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is given twice");
    perturbation::NoiseOptions out;
    if (options.model == "additive")
      out.method = perturbation::NoiseMethod::kAdditive;
    else if (options.model == "correlated")
      out.method = perturbation::NoiseMethod::kCorrelated;
    else if (options.model == "exact")
      out.method = perturbation::NoiseMethod::kExact;
    else if (options.model == "restore-covariance")
      out.method = perturbation::NoiseMethod::kRestoreCovariance;
    else if (options.model == "restore-covariance-exact")
      out.method = perturbation::NoiseMethod::kRestoreCovarianceExact;
    else
      throw UsageError(
          "--model: expected additive, correlated, exact, restore-covariance or restore-covariance-exact, got '" +
          options.model + "'");
    if (perturbation::restores_covariance(out.method)) return parse_restore(out);
    if (options.original)
      throw UsageError(
          "--original is the file before masking whose covariance the noise restores: give --model "
          "restore-covariance or restore-covariance-exact");
    const bool additive = out.method == perturbation::NoiseMethod::kAdditive;
    // The units differ by method (the reference's single `noise` means either): each has its own flag.
    if (additive && options.noise_percent_cov)
      throw UsageError("--noise-percent-cov sets correlated or exact noise; additive noise takes --noise-percent-sd");
    if (!additive && options.noise_percent_sd)
      throw UsageError("--noise-percent-sd sets additive noise; " + options.model +
                       " noise takes --noise-percent-cov (percent of the covariance)");
    out.percent = additive ? options.noise_percent_sd.value_or(150.0) : options.noise_percent_cov.value_or(150.0);
    if (!(out.percent >= 0.0) || !std::isfinite(out.percent))
      throw UsageError("the noise percent must be 0 or more, got " + std::to_string(out.percent));
    if (options.orthogonal && out.method != perturbation::NoiseMethod::kExact)
      throw UsageError(
          "--orthogonal makes exact noise uncorrelated with the data: give --model exact or "
          "restore-covariance-exact");
    if (options.restore_variance && additive)
      throw UsageError("--restore-variance rescales by 1/sqrt(1 + c): give --model correlated or exact");
    out.orthogonal = options.orthogonal;
    out.restore_variance = options.restore_variance;
    return out;
  }

  /// The restore-covariance models: the noise's covariance comes from --original, not from a percent.
  perturbation::NoiseOptions parse_restore(perturbation::NoiseOptions out) const {
    const std::string model = "--model " + options.model;
    if (!options.original)
      throw UsageError(model + " restores the covariance of the file before masking: give it as --original FILE");
    if (options.noise_percent_sd || options.noise_percent_cov)
      throw UsageError(model + " takes its noise covariance from --original (Cov(original) - Cov(input)): leave out " +
                       (options.noise_percent_sd ? "--noise-percent-sd" : "--noise-percent-cov"));
    if (options.restore_variance)
      throw UsageError("--restore-variance rescales correlated and exact noise; " + model +
                       " restores the original's covariance itself");
    if (options.orthogonal && out.method != perturbation::NoiseMethod::kRestoreCovarianceExact)
      throw UsageError(
          "--orthogonal makes exact noise uncorrelated with the data: give --model exact or "
          "restore-covariance-exact");
    out.orthogonal = options.orthogonal;
    return out;
  }

  nlohmann::json parameters() const {
    auto optional = [](const std::optional<double>& value) {
      return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
    };
    return {{"variables", options.variables},
            {"model", options.model},
            {"noise-percent-sd", optional(options.noise_percent_sd)},
            {"noise-percent-cov", optional(options.noise_percent_cov)},
            {"orthogonal", options.orthogonal},
            {"restore-variance", options.restore_variance}};
  }
};

}  // namespace

std::unique_ptr<NoiseStep> make_noise_step() { return std::make_unique<NoiseStepImpl>(); }

}  // namespace sdc::engine
