#include "engine/perturbation/noise_step.h"

// Noise on continuous variables (docs/noise.md; docs/methods perturbation.md §2). The moments of the
// variables and of the records' normal draws are merged over all ranks, every rank builds the same
// map from them, and each record's noise follows from its values, its row id and the map
// (distributed/compose/noise.h). The report gives the constant c, each variable's mean and sd before
// and after and those of the noise, and how far the noise's covariance lies from its target.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/noise.h"
#include "engine/checkpoint.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

class NoiseStepImpl final : public NoiseStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const perturbation::NoiseOptions noise_options = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "noise");

    StepFrame frame(context, "noise", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "noise", step.parameters, {StepId::kNoise}, seed.fingerprint(), {}},
                                         write_options, clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const ContinuousColumns x = continuous_columns(table, options.variables);
    distributed::agree_on_error(comm, [&] { require_complete(x.columns, "noise"); });
    distributed::NoisedPart noised = distributed::add_noise(comm, x.columns, noise_options, seed.value);
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
    // How far the noise's covariance lies from its target (cΣ, or diag(σ_j² pct²) for additive),
    // relative to the target's largest entry.
    Eigen::MatrixXd target = map.c * before.covariance;
    if (noise_options.method == perturbation::NoiseMethod::kAdditive)
      target = (map.transform.transpose() * map.transform).eval();
    const double scale = target.cwiseAbs().maxCoeff();
    const double deviation = (noise.covariance - target).cwiseAbs().maxCoeff();
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"model", options.model},
                    {"c", noise_options.method == perturbation::NoiseMethod::kAdditive ? nlohmann::json(nullptr)
                                                                                       : nlohmann::json(map.c)},
                    {"noise_covariance_relative_deviation", scale > 0.0 ? deviation / scale : deviation},
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
    else
      throw UsageError("--model: expected additive, correlated or exact, got '" + options.model + "'");
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
      throw UsageError("--orthogonal makes exact noise uncorrelated with the data: give --model exact");
    if (options.restore_variance && additive)
      throw UsageError("--restore-variance rescales by 1/sqrt(1 + c): give --model correlated or exact");
    out.orthogonal = options.orthogonal;
    out.restore_variance = options.restore_variance;
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
