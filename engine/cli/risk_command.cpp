// `sdc risk`: disclosure risk of categorical key variables. Today: sample frequency counts fk, their
// weighted counterparts (Fk in sdcMicro) and k-anonymity, per record and in the report.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "distributed/compose/frequency_count.h"
#include "engine/checkpoint.h"
#include "engine/cli/commands.h"
#include "engine/partitioned_table.h"
#include "engine/report/run_report.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

enum class MissingKeys { kReject, kCategory };

struct RiskOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::filesystem::path> report;
  std::vector<std::string> keys;
  std::optional<std::string> weight;
  std::optional<std::string> household;
  std::int64_t k_anonymity = 3;
  MissingKeys missing = MissingKeys::kReject;
  std::string filters = "shuffle,deflate=1";
  bool resume = false;
};

/// Debug-level timings of a step's phases, from the coordinator.
class PhaseClock {
 public:
  explicit PhaseClock(bool enabled) : enabled_(enabled), last_(std::chrono::steady_clock::now()) {}
  void lap(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    if (enabled_) spdlog::debug("risk: {} took {:.3f} s", phase, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
};

constexpr const char* kFk = "fk";
constexpr const char* kFkWeighted = "fk_weighted";
constexpr const char* kViolation = "violates_k_anonymity";

KeyColumns key_columns(const Table& table, const std::vector<std::string>& names) {
  KeyColumns keys;
  for (const auto& name : names) {
    const Column& column = table.require(name, VariableType::kCategorical);
    keys.codes.push_back(column.codes());
    keys.level_counts.push_back(static_cast<std::int32_t>(column.info().levels.size()));
  }
  return keys;
}

void check_weights(const Table& table, const std::string& name) {
  const auto values = table.require(name, VariableType::kContinuous).values();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]) || values[i] < 0.0)
      throw InvalidInput(table.source() + ": variable '" + name + "', row id " +
                         std::to_string(table.first_row_id() + static_cast<std::int64_t>(i)) +
                         (std::isnan(values[i]) ? ": missing weight" : ": negative weight"));
  }
}

/// The input's variables, less any earlier risk columns (a rerun replaces them), plus the new ones.
Table output_table(Table&& input, distributed::DistributedFrequencies&& frequencies, std::int64_t k, std::vector<std::string>& warnings) {
  Table out(input.source(), input.row_count(), input.first_row_id());
  for (Column& column : input.mutable_columns()) {
    if (column.name() == kFk || column.name() == kFkWeighted || column.name() == kViolation) {
      warnings.push_back("the input's variable '" + column.name() + "' is replaced by this step's");
      continue;
    }
    out.add_column(std::move(column));
  }
  std::vector<std::int32_t> violates(frequencies.records.fk.size());
  for (std::size_t i = 0; i < violates.size(); ++i) violates[i] = frequencies.records.fk[i] < static_cast<double>(k) ? 1 : 0;
  const auto info = [](const char* name, std::vector<std::string> levels = {}) {
    VariableInfo variable;
    variable.name = name;
    variable.levels = std::move(levels);
    return variable;
  };
  out.add_column(Column::continuous(info(kFk), std::move(frequencies.records.fk)));
  out.add_column(Column::continuous(info(kFkWeighted), std::move(frequencies.records.fk_weighted)));
  out.add_column(Column::categorical(info(kViolation, {"false", "true"}), std::move(violates)));
  return out;
}

class RiskCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand("risk", "disclosure risk of key variables: fk, fk_weighted (Fk), k-anonymity");
    add_input_option(*app, options_.input);
    add_output_option(*app, options_.output);
    add_report_option(*app, options_.report);
    add_variable_list_option(*app, "--keys", options_.keys, "categorical key variables (quasi-identifiers)")->required();
    app->add_option("--weight", options_.weight, "sampling weight variable; without it fk_weighted equals fk")
        ->type_name("VAR");
    app->add_option("--household", options_.household,
                    "household id variable: ranks split the file between households (the file must be sorted by it)")
        ->type_name("VAR");
    app->add_option("--k-anonymity", options_.k_anonymity, "a record violates k-anonymity when its fk is below K")
        ->check(whole_number_at_least(1))
        ->type_name("K");
    const std::map<std::string, MissingKeys> missing{{"reject", MissingKeys::kReject}, {"category", MissingKeys::kCategory}};
    app->add_option("--missing", options_.missing,
                    "missing key values: reject (an error naming the first one) or category (missing is a level of its own)")
        ->transform(CLI::CheckedTransformer(missing, CLI::ignore_case))
        ->type_name("reject|category");
    app->add_option("--filters", options_.filters, "HDF5 filters of the output: none, shuffle, deflate=N or shuffle,deflate=N");
    app->add_flag("--resume", options_.resume,
                  "skip the step when the output exists and was made from the same input, parameters and seed");
    return app;
  }

  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    io::ensure_output_is_not_an_input(options_.output, {options_.input});
    io::ensure_output_directory_writable(options_.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options_.filters);

    RunReport report(context);
    StepRecord& step = report.add_step("risk");
    StepTimer timer(step);
    step.parameters = {{"keys", options_.keys},
                       {"weight", options_.weight ? nlohmann::json(*options_.weight) : nlohmann::json(nullptr)},
                       {"household", options_.household ? nlohmann::json(*options_.household) : nlohmann::json(nullptr)},
                       {"k-anonymity", options_.k_anonymity},
                       {"missing", options_.missing == MissingKeys::kReject ? "reject" : "category"}};

    PhaseClock clock(comm.is_coordinator());
    TablePart part = read_partitioned(comm, options_.input, options_.household);
    clock.lap("read");
    // The input's digest identifies the step (checkpoints) and goes into the report and provenance;
    // it is computed from the rows just read.
    const std::string input_digest = partitioned_content_digest(comm, part.table, part.summary);
    clock.lap("input digest");
    const std::string fingerprint = step_fingerprint({input_digest, "risk", step.parameters, {}, std::nullopt});
    write_options.provenance = io::make_provenance(context.command_line(), input_digest);
    write_options.provenance.step_fingerprint = fingerprint;

    std::string earlier_results;
    if (options_.resume && comm.is_coordinator()) {
      if (auto results = completed_step_results(options_.output, fingerprint)) earlier_results = results->dump();
    }
    earlier_results = comm.broadcast_string(earlier_results);
    if (!earlier_results.empty()) {
      timer.stop();
      step.results = nlohmann::json::parse(earlier_results);
      step.warnings.push_back("resumed: the output was complete from an earlier run with the same input, parameters "
                              "and seed; the step was skipped");
      finish(comm, report, part.summary.row_count, input_digest);
      return;
    }

    const KeyColumns keys = key_columns(part.table, options_.keys);
    if (options_.weight) check_weights(part.table, *options_.weight);
    if (options_.missing == MissingKeys::kReject) reject_missing_keys(comm, part.table, keys);
    const std::span<const double> weights =
        options_.weight ? part.table.require(*options_.weight).values() : std::span<const double>();

    distributed::DistributedFrequencies frequencies = distributed::distributed_frequency_count(comm, keys, weights, options_.k_anonymity);
    clock.lap("frequency counts");
    const FrequencySummary summary = frequencies.summary;
    Table out = output_table(std::move(part.table), std::move(frequencies), options_.k_anonymity, step.warnings);
    step.results = {{"records", summary.records},
                    {"equivalence_classes", summary.classes},
                    {"sample_uniques", summary.sample_uniques},
                    {"records_below_k", summary.records_below_k},
                    {"classes_below_k", summary.classes_below_k},
                    {"k", summary.k}};
    write_options.provenance.step_results = step.results.dump();
    write_partitioned(comm, std::move(out), options_.output, write_options);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("risk: {} records, {} equivalence classes, {} sample uniques, {} records in classes below k={}",
                   summary.records, summary.classes, summary.sample_uniques, summary.records_below_k, summary.k);
    finish(comm, report, part.summary.row_count, input_digest);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    const auto expect = [&](const std::string& name, VariableType type, const char* flag) {
      const auto it = std::find_if(available.begin(), available.end(), [&](const VariableInfo& v) { return v.name == name; });
      if (it == available.end())
        problems.push_back(std::string(flag) + ": variable '" + name + "' is not in the step's input");
      else if (it->type != type)
        problems.push_back(std::string(flag) + ": variable '" + name + "' is " + std::string(to_string(it->type)) +
                           ", expected " + std::string(to_string(type)));
    };
    for (const auto& key : options_.keys) expect(key, VariableType::kCategorical, "keys");
    if (options_.weight) expect(*options_.weight, VariableType::kContinuous, "weight");
    if (options_.household) expect(*options_.household, VariableType::kId, "household");
  }

  std::vector<VariableInfo> added_variables() const override {
    std::vector<VariableInfo> added(3);
    added[0].name = kFk;
    added[0].type = VariableType::kContinuous;
    added[1].name = kFkWeighted;
    added[1].type = VariableType::kContinuous;
    added[2].name = kViolation;
    added[2].type = VariableType::kCategorical;
    added[2].levels = {"false", "true"};
    return added;
  }

 private:
  /// Collective: the coordinator writes the report.
  void finish(const distributed::Communicator& comm, RunReport& report, std::int64_t rows, const std::string& input_digest) const {
    report.set_input(options_.input, rows, input_digest);
    report.add_output(options_.output, "data");
    report.write(comm, options_.report);
  }

  /// Collective: the first missing key value over all ranks is an error naming its variable and row.
  void reject_missing_keys(const distributed::Communicator& comm, const Table& table, const KeyColumns& keys) const {
    const auto missing = first_missing_key(keys);
    const std::int64_t local_row =
        missing ? table.first_row_id() + static_cast<std::int64_t>(missing->record) : std::numeric_limits<std::int64_t>::max();
    const std::int64_t first_row = comm.all_reduce_min(local_row);
    if (first_row == std::numeric_limits<std::int64_t>::max()) return;
    // Every rank stops; the rank holding the row names the variable.
    std::string variable = "a key variable";
    if (missing && local_row == first_row) variable = "'" + options_.keys[missing->key] + "'";
    throw InvalidInput(options_.input.string() + ": variable " + variable + ", row id " + std::to_string(first_row) +
                       ": missing key value (give --missing category to treat missing as a level of its own)");
  }

  RiskOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_risk_command() { return std::make_unique<RiskCommand>(); }

}  // namespace sdc::engine
