#include "engine/swapping/karr_sanil_step.h"

// Karr–Sanil data swapping on a risk–utility frontier (docs/swapping.md; docs/methods swapping.md §3):
// every candidate release (an attribute set A, a swap rate s, a replicate) is evaluated on the table
// over the release's attributes (distributed/compose/karr_sanil.h); the candidates' mean (DR, DU) over
// the replicates give the frontier, written as a table and a plot, and the best release under
// --risk-bound is applied to the records when an output is asked for.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "distributed/compose/karr_sanil.h"
#include "engine/checkpoint.h"
#include "engine/flags.h"
#include "engine/loglinear_model.h"
#include "engine/report/run_report.h"
#include "engine/report/scatter_plot.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/atomic_output.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

constexpr std::int64_t kMaxReplicates = 1000;
constexpr const char* kDefaultModels = "independence;two-way";
constexpr std::array<const char*, 4> kUtilities{"hellinger", "total-variation", "entropy", "loglinear"};

std::filesystem::path beside(const std::filesystem::path& file, const char* suffix) {
  std::filesystem::path out = file;
  out.replace_extension();
  out += suffix;
  return out;
}

/// One candidate attribute set and rate, by name, with its replicates' figures and their means.
struct CandidateSummary {
  std::vector<std::string> attributes;
  double rate = 0.0;
  double risk = 0.0;     ///< mean DR
  double utility = 0.0;  ///< mean DU of the chosen measure
  double hellinger = 0.0;
  double total_variation = 0.0;
  double entropy_change = 0.0;
  double loglinear_utility = 0.0;
  bool on_frontier = false;
};

class KarrSanilStepImpl final : public KarrSanilStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const Parsed parsed = parse();
    const bool release = !options.output.empty();
    if (release) io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "swap frontier");

    StepFrame frame(context, "swap frontier", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt,
                        {"", "swap frontier", step.parameters, {StepId::kKarrSanilSelection}, seed.fingerprint(), {}},
                        write_options, clock, OutputRelease::kMasked);
    if (release && finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                                       options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const KeyColumns attributes = key_columns(table, options.variables);
    const KeyColumns strata = key_columns(table, options.within);
    distributed::FrontierSettings settings = parsed.settings;
    settings.seed = seed.value;
    for (std::size_t m = 0; m < settings.models.size(); ++m) {
      LogLinearModelSpec spec;
      spec.level_counts = attributes.level_counts;
      spec.generators = settings.models[m];
      try {
        check_loglinear_model_cost("--loglinear", canonical_model(spec), options.variables);
      } catch (const ParameterError& error) {
        throw UsageError("--loglinear: model '" + trimmed_model(parsed.models[m]) + "': " + error.what());
      }
    }
    const distributed::FrontierEvaluation evaluation =
        distributed::evaluate_frontier(comm, attributes, strata, part.range.first, settings);
    clock.lap("candidates");

    std::vector<CandidateSummary> candidates = summarise(evaluation, settings);
    std::vector<swapping::RiskUtilityPoint> points;
    for (const auto& candidate : candidates) points.push_back({candidate.risk, candidate.utility});
    const std::vector<std::size_t> frontier = swapping::undominated_points(points);
    for (std::size_t c : frontier) candidates[c].on_frontier = true;
    std::optional<std::size_t> chosen;
    if (options.risk_bound) chosen = swapping::best_under_risk_bound(points, *options.risk_bound);
    if (release && !chosen) {
      double smallest = std::numeric_limits<double>::infinity();
      for (const auto& candidate : candidates) smallest = std::min(smallest, candidate.risk);
      throw ParameterError(fmt::format(
          "swap frontier: no candidate release has a mean disclosure risk at most --risk-bound {} (the smallest is "
          "{:.6g}): give a larger bound, smaller --rates or more --swap-attributes",
          *options.risk_bound, smallest));
    }
    // The release applied: of the chosen candidate's replicates within the bound, the one of largest
    // utility (the first on ties); one exists because their mean is within it.
    std::optional<std::uint32_t> chosen_replicate;
    if (chosen) {
      for (std::uint32_t b = 0; b < settings.replicates; ++b) {
        const auto& e = evaluation.evaluations[*chosen][b];
        if (!(e.disclosure_risk <= *options.risk_bound)) continue;
        if (!chosen_replicate || utility_of(e) > utility_of(evaluation.evaluations[*chosen][*chosen_replicate]))
          chosen_replicate = b;
      }
    }

    step.results =
        results(context, evaluation, settings, parsed.models, candidates, frontier, chosen, chosen_replicate);
    const FrontierFiles files = frontier_files(options);
    if (comm.is_coordinator()) {
      io::write_file_atomically(files.table, frontier_table(candidates, settings), context.permissions);
      io::write_file_atomically(files.plot, frontier_plot(evaluation, candidates, frontier, chosen),
                                context.permissions);
    }
    report.add_output(files.table, OutputKind::kTable);
    report.add_output(files.plot, OutputKind::kPlot);
    clock.lap("frontier");

    if (release) {
      std::vector<std::span<std::int32_t>> columns;
      for (const auto& name : options.variables) columns.push_back(mutable_column(table, name).mutable_codes());
      const std::int64_t changed =
          distributed::apply_release(comm, evaluation, settings, *chosen, *chosen_replicate, part.range.first, columns);
      std::vector<std::string> changed_names;
      for (std::size_t j : settings.candidates[*chosen].swap_attributes) changed_names.push_back(options.variables[j]);
      step.results["chosen"]["records_changed"] =
          reported_count(comm.all_reduce_sum(changed), context.report_min_count);
      write_table_step_output(comm, options.input, opened, {}, changed_names, options.output, write_options,
                              step.warnings);
      if (comm.is_coordinator())
        write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
      clock.lap("write");
      report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    }
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("swap frontier: {} candidates x {} replicates, {} on the frontier{}", candidates.size(),
                   settings.replicates, frontier.size(),
                   chosen ? fmt::format(", released swap of {} at rate {}",
                                        join_list(candidates[*chosen].attributes, "+"), candidates[*chosen].rate)
                          : std::string());
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kCategorical, "variables", problems);
    for (const auto& name : options.within)
      expect_variable(available, name, VariableType::kCategorical, "within", problems);
  }

  bool needs_seed() const override { return true; }

 private:
  struct Parsed {
    distributed::FrontierSettings settings;
    std::vector<std::string> models;  ///< as given, for messages
  };

  double utility_of(const swapping::ReleaseEvaluation& e) const {
    if (options.utility == "hellinger") return -e.distances.hellinger;
    if (options.utility == "total-variation") return -e.distances.total_variation;
    if (options.utility == "entropy") return -std::fabs(e.distances.entropy_change);
    return e.loglinear_utility;
  }

  Parsed parse() const {
    Parsed parsed;
    if (options.variables.empty()) throw UsageError("--variables: give the release's categorical variables");
    std::set<std::string> seen;
    for (const auto& name : options.variables)
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is given twice");
    const auto index_of = [&](const std::string& name) {
      const auto it = std::find(options.variables.begin(), options.variables.end(), name);
      if (it == options.variables.end())
        throw UsageError("--swap-attributes: '" + name + "' is not one of --variables (" +
                         join_list(options.variables, ",") + ")");
      return static_cast<std::size_t>(it - options.variables.begin());
    };
    std::vector<std::vector<std::size_t>> sets;
    if (options.swap_attributes.empty()) {
      const std::size_t m = options.variables.size();
      for (std::size_t a = 0; a < m; ++a) sets.push_back({a});
      for (std::size_t a = 0; a < m; ++a)
        for (std::size_t b = a + 1; b < m; ++b) sets.push_back({a, b});
    }
    for (const auto& entry : options.swap_attributes) {
      std::vector<std::size_t> set;
      for (const auto& name : split_list(entry, ',')) {
        if (name.empty()) throw UsageError("--swap-attributes: '" + entry + "' has an empty name");
        set.push_back(index_of(name));
      }
      std::sort(set.begin(), set.end());
      if (std::adjacent_find(set.begin(), set.end()) != set.end())
        throw UsageError("--swap-attributes: '" + entry + "' names a variable twice");
      if (std::find(sets.begin(), sets.end(), set) != sets.end())
        throw UsageError("--swap-attributes: '" + entry + "' is given twice");
      sets.push_back(std::move(set));
    }
    for (const auto& name : options.within) {
      const auto it = std::find(options.variables.begin(), options.variables.end(), name);
      if (it == options.variables.end()) continue;
      const auto j = static_cast<std::size_t>(it - options.variables.begin());
      for (const auto& set : sets)
        if (std::find(set.begin(), set.end(), j) != set.end())
          throw UsageError("--within: variable '" + name +
                           "' is also swapped: pairs that must agree on it would swap nothing");
    }
    if (options.rates.empty()) throw UsageError("--rates: give at least one swap rate");
    std::set<double> rates;
    for (double rate : options.rates) {
      if (!(rate > 0.0 && rate <= 1.0)) throw UsageError(fmt::format("--rates: {} is outside (0, 1]", rate));
      if (!rates.insert(rate).second) throw UsageError(fmt::format("--rates: {} is given twice", rate));
    }
    if (options.replicates < 1 || options.replicates > kMaxReplicates)
      throw UsageError("--replicates: give 1 to " + std::to_string(kMaxReplicates));
    if (std::find(kUtilities.begin(), kUtilities.end(), options.utility) == kUtilities.end())
      throw UsageError("--utility: '" + options.utility + "' is not hellinger, total-variation, entropy or loglinear");
    if (options.loglinear_select != "aic" && options.loglinear_select != "bic")
      throw UsageError("--loglinear-select: '" + options.loglinear_select + "' is not aic or bic");
    if (options.loglinear_parameters != "refit" && options.loglinear_parameters != "original")
      throw UsageError("--loglinear-parameters: '" + options.loglinear_parameters + "' is not refit or original");
    if (options.risk_bound && !(*options.risk_bound >= 0.0 && *options.risk_bound <= 1.0))
      throw UsageError("--risk-bound: give a share in [0, 1]");
    if (!options.output.empty() && !options.risk_bound)
      throw UsageError("--output: the release written is the best one under --risk-bound: give --risk-bound");
    if (options.resume && options.output.empty()) throw UsageError("--resume needs --output");
    const FrontierFiles files = frontier_files(options);
    if (files.table.empty() || files.plot.empty())
      throw UsageError(
          "swap frontier writes its frontier as a table and a plot: give --output or --report to write them "
          "beside, or --frontier-table and --frontier-plot");

    for (const auto& set : sets)
      for (double rate : options.rates) parsed.settings.candidates.push_back({set, rate});
    parsed.settings.replicates = static_cast<std::uint32_t>(options.replicates);
    parsed.settings.release.unchanged_count_as_unswapped = options.unchanged_count_as_unswapped;
    parsed.settings.select_by_bic = options.loglinear_select == "bic";
    parsed.settings.refit = options.loglinear_parameters == "refit";
    if (options.loglinear || options.utility == "loglinear") {
      for (const auto& model : split_list(options.loglinear.value_or(kDefaultModels), ';')) {
        if (trimmed_model(model).empty()) throw UsageError("--loglinear: an empty model");
        parsed.models.push_back(model);
        parsed.settings.models.push_back(parse_loglinear_model("--loglinear", model, options.variables, "--variables"));
      }
    }
    return parsed;
  }

  nlohmann::json parameters() const {
    return {{"variables", options.variables},
            {"swap-attributes", options.swap_attributes},
            {"rates", options.rates},
            {"replicates", options.replicates},
            {"within", options.within},
            {"utility", options.utility},
            {"loglinear", options.loglinear ? nlohmann::json(*options.loglinear) : nlohmann::json(nullptr)},
            {"loglinear-select", options.loglinear_select},
            {"loglinear-parameters", options.loglinear_parameters},
            {"risk-bound", options.risk_bound ? nlohmann::json(*options.risk_bound) : nlohmann::json(nullptr)},
            {"unchanged-count-as-unswapped", options.unchanged_count_as_unswapped}};
  }

  std::vector<CandidateSummary> summarise(const distributed::FrontierEvaluation& evaluation,
                                          const distributed::FrontierSettings& settings) const {
    std::vector<CandidateSummary> out;
    const auto replicates = static_cast<double>(settings.replicates);
    for (std::size_t c = 0; c < settings.candidates.size(); ++c) {
      CandidateSummary summary;
      for (std::size_t j : settings.candidates[c].swap_attributes) summary.attributes.push_back(options.variables[j]);
      summary.rate = settings.candidates[c].rate;
      // Means of a few replicates in replicate order: the same sums on every rank.
      for (const auto& e : evaluation.evaluations[c]) {
        summary.risk += e.disclosure_risk;
        summary.utility += utility_of(e);
        summary.hellinger += e.distances.hellinger;
        summary.total_variation += e.distances.total_variation;
        summary.entropy_change += e.distances.entropy_change;
        summary.loglinear_utility += e.loglinear_utility;
      }
      summary.risk /= replicates;
      summary.utility /= replicates;
      summary.hellinger /= replicates;
      summary.total_variation /= replicates;
      summary.entropy_change /= replicates;
      summary.loglinear_utility /= replicates;
      out.push_back(std::move(summary));
    }
    return out;
  }

  nlohmann::json results(const RunContext& context, const distributed::FrontierEvaluation& evaluation,
                         const distributed::FrontierSettings& settings, const std::vector<std::string>& models,
                         const std::vector<CandidateSummary>& candidates, const std::vector<std::size_t>& frontier,
                         std::optional<std::size_t> chosen, std::optional<std::uint32_t> chosen_replicate) const {
    const std::int64_t min_count = context.report_min_count;
    nlohmann::json loglinear = nullptr;
    if (evaluation.baseline) {
      loglinear = {{"model", loglinear_model_formula(evaluation.baseline->model, options.variables)},
                   {"parameters", options.loglinear_parameters},
                   {"original_log_likelihood", number_or_null(evaluation.baseline->log_likelihood)}};
      if (evaluation.model_selection) {
        loglinear["selected_by"] = options.loglinear_select;
        nlohmann::json scores = nlohmann::json::array();
        for (std::size_t m = 0; m < evaluation.model_selection->candidates.size(); ++m) {
          const LogLinearScore& score = evaluation.model_selection->candidates[m];
          scores.push_back({{"model", trimmed_model(models[m])},
                            {"parameters", score.parameters},
                            {"aic", number_or_null(score.aic)},
                            {"bic", number_or_null(score.bic)}});
        }
        loglinear["candidates"] = std::move(scores);
      }
    }
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const CandidateSummary& s = candidates[c];
      nlohmann::json replicates = nlohmann::json::array();
      for (std::uint32_t b = 0; b < settings.replicates; ++b) {
        const swapping::ReleaseEvaluation& e = evaluation.evaluations[c][b];
        replicates.push_back({{"replicate", b},
                              {"pairs", e.pairs},
                              {"records_changed", reported_count(e.changed_records, min_count)},
                              {"unswapped_in_small_cells", reported_count(e.unswapped_in_small_cells, min_count)},
                              {"disclosure_risk", number_or_null(e.disclosure_risk)},
                              {"utility", number_or_null(utility_of(e))},
                              {"hellinger", number_or_null(e.distances.hellinger)},
                              {"total_variation", number_or_null(e.distances.total_variation)},
                              {"entropy_change", number_or_null(e.distances.entropy_change)},
                              {"loglinear_utility", number_or_null(e.loglinear_utility)}});
      }
      list.push_back({{"candidate", c},
                      {"swap_attributes", s.attributes},
                      {"rate", s.rate},
                      {"pairs_wanted", evaluation.pairs_wanted[c]},
                      {"disclosure_risk", number_or_null(s.risk)},
                      {"utility", number_or_null(s.utility)},
                      {"hellinger", number_or_null(s.hellinger)},
                      {"total_variation", number_or_null(s.total_variation)},
                      {"entropy_change", number_or_null(s.entropy_change)},
                      {"loglinear_utility", number_or_null(s.loglinear_utility)},
                      {"on_frontier", s.on_frontier},
                      {"replicates", std::move(replicates)}});
    }
    nlohmann::json chosen_json = nullptr;
    if (chosen && chosen_replicate) {
      const swapping::ReleaseEvaluation& e = evaluation.evaluations[*chosen][*chosen_replicate];
      chosen_json = {{"candidate", *chosen},
                     {"swap_attributes", candidates[*chosen].attributes},
                     {"rate", candidates[*chosen].rate},
                     {"replicate", *chosen_replicate},
                     {"disclosure_risk", number_or_null(e.disclosure_risk)},
                     {"utility", number_or_null(utility_of(e))}};
    }
    const FrontierFiles files = frontier_files(options);
    return {{"records", reported_count(evaluation.table.total, min_count)},
            {"variables", options.variables},
            {"cells", static_cast<std::int64_t>(evaluation.table.cell_count())},
            {"original_disclosure_risk", evaluation.original_risk},
            {"utility", options.utility},
            {"replicates", settings.replicates},
            {"risk_bound", options.risk_bound ? nlohmann::json(*options.risk_bound) : nlohmann::json(nullptr)},
            {"loglinear", std::move(loglinear)},
            {"candidates", std::move(list)},
            {"frontier", frontier},
            {"chosen", std::move(chosen_json)},
            {"frontier_table", files.table.filename().string()},
            {"frontier_plot", files.plot.filename().string()}};
  }

  std::string frontier_table(const std::vector<CandidateSummary>& candidates,
                             const distributed::FrontierSettings& settings) const {
    std::string csv =
        "candidate,swap_attributes,rate,replicates,disclosure_risk,utility,hellinger,total_variation,entropy_change,"
        "loglinear_utility,on_frontier\n";
    const auto number = [](double x) { return std::isfinite(x) ? fmt::format("{}", x) : std::string(); };
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const CandidateSummary& s = candidates[c];
      csv += fmt::format("{},\"{}\",{},{},{},{},{},{},{},{},{}\n", c, join_list(s.attributes, "+"), s.rate,
                         settings.replicates, number(s.risk), number(s.utility), number(s.hellinger),
                         number(s.total_variation), number(s.entropy_change), number(s.loglinear_utility),
                         s.on_frontier ? "true" : "false");
    }
    return csv;
  }

  std::string frontier_plot(const distributed::FrontierEvaluation& evaluation,
                            const std::vector<CandidateSummary>& candidates, const std::vector<std::size_t>& frontier,
                            std::optional<std::size_t> chosen) const {
    ScatterPlot plot;
    plot.title = "Karr-Sanil risk-utility frontier";
    plot.x_label = "disclosure risk DR (unswapped records in cells of 1 or 2)";
    plot.y_label = options.utility == "loglinear" ? "data utility DU (log-likelihood change)"
                                                  : "data utility DU = -" + options.utility;
    PlotSeries replicates{"replicates", {}, "#c7c7c7", 2.0};
    for (std::size_t c = 0; c < candidates.size(); ++c)
      for (const auto& e : evaluation.evaluations[c]) replicates.points.push_back({e.disclosure_risk, utility_of(e)});
    PlotSeries means{"candidates (means)", {}, "#1f77b4", 3.5};
    for (const auto& s : candidates) means.points.push_back({s.risk, s.utility});
    PlotSeries line{"frontier", {}, "#d62728", 4.0, true};
    for (std::size_t c : frontier) line.points.push_back({candidates[c].risk, candidates[c].utility});
    plot.series = {replicates, means, line};
    if (chosen)
      plot.series.push_back(
          {"released", {{candidates[*chosen].risk, candidates[*chosen].utility}}, "#2ca02c", 8.0, false, true});
    if (options.risk_bound) {
      plot.vertical_line = *options.risk_bound;
      plot.vertical_line_label = fmt::format("risk bound {}", *options.risk_bound);
    }
    return render_svg(plot);
  }
};

}  // namespace

FrontierFiles frontier_files(const KarrSanilStepOptions& options) {
  FrontierFiles files;
  const std::filesystem::path base = !options.output.empty() ? options.output
                                     : options.report        ? *options.report
                                                             : std::filesystem::path();
  if (!base.empty()) {
    files.table = beside(base, ".frontier.csv");
    files.plot = beside(base, ".frontier.svg");
  }
  if (options.frontier_table) files.table = *options.frontier_table;
  if (options.frontier_plot) files.plot = *options.frontier_plot;
  return files;
}

std::unique_ptr<KarrSanilStep> make_karr_sanil_step() { return std::make_unique<KarrSanilStepImpl>(); }

}  // namespace sdc::engine
