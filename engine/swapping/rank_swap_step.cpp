#include "engine/swapping/rank_swap_step.h"

// Rank swapping of numeric variables (docs/swapping.md; docs/methods swapping.md §1). Each variable is
// swapped whole on one rank (distributed/compose/rank_swap.h) and its masked values written in place;
// the report gives, per variable, the values top- and bottom-coded, the pairs swapped and the window
// used. Native draws come from the seed file (Philox, StepId::kRankSwap); compat reproduces sdcMicro's
// rankSwap with its taus88 stream, seeded by --reference-seed.

#include <spdlog/spdlog.h>

#include <cmath>
#include <set>

#include "distributed/compose/rank_swap.h"
#include "engine/checkpoint.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

class RankSwapStepImpl final : public RankSwapStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const swapping::RankSwapOptions swap_options = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const bool native = options.mode == Mode::kNative;
    std::optional<io::Seed> seed;
    if (native) seed = io::require_seed(options.seed_file, "swap rank");

    StepFrame frame(context, "swap rank", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    if (seed) report.set_seed_fingerprint(seed->fingerprint());
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"",
                                          "swap rank",
                                          step.parameters,
                                          native ? std::vector<StepId>{StepId::kRankSwap} : std::vector<StepId>{},
                                          seed ? std::optional<std::string>(seed->fingerprint()) : std::nullopt,
                                          {}},
                                         write_options, clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const ContinuousColumns x = continuous_columns(table, options.variables);
    distributed::RankSwappedPart result =
        distributed::rank_swap_variables(comm, x.columns, part.range, swap_options, seed ? seed->value : 0,
                                         static_cast<std::uint32_t>(options.reference_seed.value_or(0)));
    clock.lap("swap");

    nlohmann::json variables = nlohmann::json::array();
    std::int64_t swapped_values = 0;
    for (std::size_t v = 0; v < options.variables.size(); ++v) {
      const swapping::RankSwapSummary& summary = result.summaries[v];
      swapped_values += 2 * summary.swapped_pairs;
      variables.push_back({{"name", options.variables[v]},
                           {"missing", reported_count(summary.missing, context.report_min_count)},
                           {"top_coded", summary.top_coded},
                           {"bottom_coded", summary.bottom_coded},
                           {"swapped_pairs", reported_count(summary.swapped_pairs, context.report_min_count)},
                           {"window_fraction", summary.window_fraction},
                           {"window_positions", summary.window_positions}});
    }
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"swapped_values", reported_count(swapped_values, context.report_min_count)},
                    {"variables", std::move(variables)}};

    write_masked_columns(comm, context, options.input, opened, options.variables, std::move(result.masked),
                         options.output, write_options, step, clock);
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("swap rank: {} records, {} variables, {} values swapped", part.summary.row_count,
                   options.variables.size(), swapped_values);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
  }

  bool needs_seed() const override { return options.mode == Mode::kNative; }

 private:
  swapping::RankSwapOptions parse() const {
    std::set<std::string> seen;
    for (const auto& name : options.variables)
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is given twice");
    const int windows = static_cast<int>(options.window_fraction.has_value()) +
                        static_cast<int>(options.window_percent.has_value()) +
                        static_cast<int>(options.r0.has_value()) + static_cast<int>(options.k0.has_value());
    if (windows > 1)
      throw UsageError(
          "--window-fraction, --window-percent, --r0 and --k0 each set the window; give at most one (none: --r0 0.95)");
    swapping::RankSwapOptions out;
    out.top_percent = options.top_percent;
    out.bottom_percent = options.bottom_percent;
    out.r0 = options.r0;
    out.k0 = options.k0;
    out.window_fraction = options.window_fraction;
    if (options.window_percent) {
      if (!(*options.window_percent > 0.0))
        throw UsageError("--window-percent: expected a percentage above 0 and at most 100, got " +
                         std::to_string(*options.window_percent));
      out.window_fraction = *options.window_percent / 100.0;
    }
    out.mode = options.mode == Mode::kCompat ? swapping::RankSwapMode::kCompat : swapping::RankSwapMode::kNative;
    if (options.mode == Mode::kCompat && !options.reference_seed)
      throw UsageError("--mode compat draws from the reference's taus88 stream: give its seed with --reference-seed N");
    if (options.mode == Mode::kNative && options.reference_seed)
      throw UsageError("--reference-seed seeds --mode compat only; native draws come from --seed-file");
    return out;
  }

  nlohmann::json parameters() const {
    auto optional = [](const std::optional<double>& value) {
      return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
    };
    return {{"variables", options.variables},
            {"top-percent", options.top_percent},
            {"bottom-percent", options.bottom_percent},
            {"window-fraction", optional(options.window_fraction)},
            {"window-percent", optional(options.window_percent)},
            {"r0", optional(options.r0)},
            {"k0", optional(options.k0)},
            {"mode", options.mode == Mode::kCompat ? "compat" : "native"},
            {"reference-seed", options.reference_seed ? nlohmann::json(*options.reference_seed) : nullptr}};
  }
};

}  // namespace

std::unique_ptr<RankSwapStep> make_rank_swap_step() { return std::make_unique<RankSwapStepImpl>(); }

}  // namespace sdc::engine
