#include "engine/swapping/data_shuffle_step.h"

// Data shuffling with reverse mapping (docs/swapping.md; docs/methods swapping.md §4): each confidential
// variable's values are redistributed over the records by the ranks of values drawn from their
// conditional distribution given the --given variables (distributed/compose/data_shuffle.h). The
// report gives, per variable, how many records kept their value.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/data_shuffle.h"
#include "engine/checkpoint.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

class DataShuffleStepImpl final : public DataShuffleStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    check_lists();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "swap shuffle");

    StepFrame frame(context, "swap shuffle", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt,
                        {"", "swap shuffle", step.parameters, {StepId::kDataShuffle}, seed.fingerprint(), {}},
                        write_options, clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const ContinuousColumns x = continuous_columns(table, options.variables);
    const ContinuousColumns s = continuous_columns(table, options.given);
    distributed::agree_on_error(comm, [&] {
      require_complete(x.columns, "swap shuffle");
      require_complete(s.columns, "swap shuffle");
    });
    distributed::ShuffledPart shuffled = distributed::shuffle_data(comm, x.columns, s.columns, part.range, seed.value);
    clock.lap("shuffle");

    nlohmann::json variables = nlohmann::json::array();
    for (std::size_t j = 0; j < options.variables.size(); ++j)
      variables.push_back({{"name", options.variables[j]},
                           {"kept_values", reported_count(shuffled.kept[j], context.report_min_count)}});
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"given", options.given},
                    {"variables", std::move(variables)}};

    write_masked_columns(comm, context, options.input, opened, options.variables, std::move(shuffled.released),
                         options.output, write_options, step, clock);
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("swap shuffle: {} records, {} variables shuffled given {}", part.summary.row_count,
                   options.variables.size(), options.given.size());
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
    for (const auto& name : options.given)
      expect_variable(available, name, VariableType::kContinuous, "given", problems);
  }

  bool needs_seed() const override { return true; }

 private:
  void check_lists() const {
    std::set<std::string> seen;
    for (const auto& name : options.variables)
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is given twice");
    for (const auto& name : options.given)
      if (!seen.insert(name).second)
        throw UsageError("--given: variable '" + name + "' is given twice or is also a shuffled variable");
  }

  nlohmann::json parameters() const { return {{"variables", options.variables}, {"given", options.given}}; }
};

}  // namespace

std::unique_ptr<DataShuffleStep> make_data_shuffle_step() { return std::make_unique<DataShuffleStepImpl>(); }

}  // namespace sdc::engine
