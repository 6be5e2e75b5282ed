#include "engine/recoding/suppress_step.h"

// Local suppression to k-anonymity (docs/recoding.md; docs/methods recoding.md §4): the key columns
// suppressed in place (engine/recoding/key_suppression.h), re-checked by the risk kernel, and written
// with the other variables copied from the input.

#include <spdlog/spdlog.h>

#include <charconv>
#include <set>

#include "engine/checkpoint.h"
#include "engine/flags.h"
#include "engine/recoding/key_suppression.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

class SuppressStepImpl final : public SuppressStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const recoding::LocalSuppressionOptions suppression_options = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    StepFrame frame(context, "suppress", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "suppress", step.parameters, {}, std::nullopt, {}}, write_options, clock,
                                         OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    Table& table = opened.part.table;

    const KeySuppression suppression = suppress_keys(comm, table, options.keys, suppression_options);
    clock.lap("suppress");
    if (!suppression.result.impossible.empty())
      step.warnings.push_back("k-anonymity not reached: " + suppression.result.impossible);
    step.results = suppression_results(suppression, options.keys, context.report_min_count);
    step.results["records"] = reported_count(opened.part.summary.row_count, context.report_min_count);

    write_table_step_output(comm, options.input, opened, {}, options.keys, options.output, write_options,
                            step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("suppress: {} records, {} records with key values suppressed in {} passes, {} below k left",
                   opened.part.summary.row_count, suppression.result.records_touched, suppression.result.passes,
                   suppression.violations_left);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.keys)
      expect_variable(available, name, VariableType::kCategorical, "keys", problems);
  }

 private:
  recoding::LocalSuppressionOptions parse() const {
    recoding::LocalSuppressionOptions out;
    out.k = options.k;
    out.alpha = options.alpha;
    out.search =
        options.mode == Mode::kCompat ? recoding::CandidateSearch::kRecordScan : recoding::CandidateSearch::kIndexed;
    if (!options.importance.empty()) {
      std::vector<std::int32_t> importance(options.keys.size(), 0);
      for (const auto& entry : options.importance) {
        const auto [variable, text] = split_variable_entry("--importance", entry, "VAR=I with VAR one of --keys");
        const auto key = std::find(options.keys.begin(), options.keys.end(), variable);
        if (key == options.keys.end())
          throw UsageError("--importance: expected VAR=I with VAR one of --keys, got '" + entry + "'");
        std::int32_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < 1 ||
            value > static_cast<std::int32_t>(options.keys.size()))
          throw UsageError("--importance: expected a whole number from 1 to " + std::to_string(options.keys.size()) +
                           " in '" + entry + "'");
        auto& slot = importance[static_cast<std::size_t>(key - options.keys.begin())];
        if (slot != 0) throw UsageError("--importance: variable '" + variable + "' is given twice");
        slot = value;
      }
      for (std::size_t j = 0; j < options.keys.size(); ++j)
        if (importance[j] == 0)
          throw UsageError("--importance: give every key an importance; '" + options.keys[j] + "' has none");
      out.importance = std::move(importance);
    }
    recoding::check_local_suppression_options(options.keys.size(), out);
    return out;
  }

  nlohmann::json parameters() const {
    return {{"keys", options.keys},
            {"k-anonymity", options.k},
            {"alpha", options.alpha},
            {"importance", options.importance}};
  }
};

}  // namespace

std::unique_ptr<SuppressStep> make_suppress_step() { return std::make_unique<SuppressStepImpl>(); }

}  // namespace sdc::engine
