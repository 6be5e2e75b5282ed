#include "engine/tables/record_keys_step.h"

// Record keys (docs/tables.md, "Record keys"; docs/methods cellkey.md §1): each record's key is a
// function of the seed and its global row id alone (kernels/tables/cell_key.h native_record_key), so
// it is the same for any number of ranks and threads, and stored with the records: a cell of any
// table of the release then sums the same keys and gets the same noise.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/checkpoint.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/tables/cell_key.h"

namespace sdc::engine {
namespace {

class RecordKeysStepImpl final : public RecordKeysStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const std::uint64_t modulus = key_modulus();
    if (options.variable.empty()) throw UsageError("--variable: give the name of the key variable");
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "perturb-table keys");

    StepFrame frame(context, "perturb-table keys", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened = open_table_step(
        comm, context, options.input, std::nullopt,
        {"", "perturb-table keys", step.parameters, {StepId::kCellKeyRecordKey}, seed.fingerprint(), {}}, write_options,
        clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    const Table& records = opened.part.table;

    std::vector<std::uint64_t> keys(static_cast<std::size_t>(records.row_count()));
    tables::native_record_keys(seed.value, records.first_row_id(), keys, {modulus});
    std::vector<double> values(keys.size());
    const auto scale = static_cast<double>(modulus);
    for (std::size_t i = 0; i < keys.size(); ++i) values[i] = static_cast<double>(keys[i]) / scale;
    clock.lap("keys");

    std::vector<Column> added;
    added.push_back(Column::continuous(key_variable(), std::move(values)));
    step.results = {{"records", reported_count(opened.part.summary.row_count, context.report_min_count)},
                    {"variable", options.variable},
                    {"key_decimals", options.key_decimals},
                    {"modulus", modulus}};
    write_table_step_output(comm, options.input, opened, std::move(added), {}, options.output, std::move(write_options),
                            step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("perturb-table keys: {} records keyed in '{}'", opened.part.summary.row_count, options.variable);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  std::vector<VariableInfo> added_variables() const override { return {key_variable()}; }

  bool needs_seed() const override { return true; }

 private:
  VariableInfo key_variable() const {
    VariableInfo info;
    info.name = options.variable;
    info.type = VariableType::kContinuous;
    info.role = VariableRole::kOther;
    return info;
  }

  std::uint64_t key_modulus() const {
    if (options.key_decimals < 1 || options.key_decimals > 9) throw UsageError("--key-decimals: give 1 to 9");
    return tables::compat_key_modulus(static_cast<int>(options.key_decimals));
  }

  nlohmann::json parameters() const { return {{"variable", options.variable}, {"key-decimals", options.key_decimals}}; }
};

}  // namespace

std::unique_ptr<RecordKeysStep> make_record_keys_step() { return std::make_unique<RecordKeysStepImpl>(); }

}  // namespace sdc::engine
