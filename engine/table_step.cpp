#include "engine/table_step.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "distributed/collective_error.h"
#include "kernels/core/error.h"
#include "kernels/risk/frequency_count.h"

namespace sdc::engine {

io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters) {
  io::Hdf5WriteOptions options;
  if (filters) options.filters = io::parse_filters(*filters);
  options.permissions = context.permissions;
  options.derived_filters = context.derived_filters;
  return options;
}

ContinuousColumns continuous_columns(const Table& table, const std::vector<std::string>& variables) {
  ContinuousColumns out;
  out.row_ids.resize(static_cast<std::size_t>(table.row_count()));
  for (std::size_t i = 0; i < out.row_ids.size(); ++i)
    out.row_ids[i] = table.first_row_id() + static_cast<std::int64_t>(i);
  for (const auto& name : variables) {
    out.columns.names.push_back(name);
    out.columns.columns.push_back(table.require(name, VariableType::kContinuous).values());
  }
  out.columns.row_ids = out.row_ids;
  return out;
}

Column& mutable_column(Table& table, const std::string& name) {
  for (Column& column : table.mutable_columns())
    if (column.name() == name) return column;
  throw InvalidInput(table.source() + ": no variable '" + name + "'");
}

KeyColumns key_columns(const Table& table, const std::vector<std::string>& names) {
  KeyColumns keys;
  for (const auto& name : names) {
    const Column& column = table.require(name, VariableType::kCategorical);
    keys.codes.push_back(column.codes());
    keys.level_counts.push_back(static_cast<std::int32_t>(column.info().levels.size()));
  }
  return keys;
}

void reject_missing_codes(const distributed::Communicator& comm, const std::filesystem::path& input, const Table& table,
                          const KeyColumns& keys, const std::vector<std::string>& names, const std::string& hint) {
  std::optional<distributed::RowProblem> problem;
  if (const auto missing = first_missing_key(keys)) {
    const std::int64_t row = table.first_row_id() + static_cast<std::int64_t>(missing->record);
    problem = {row, input.string() + ": variable '" + names[missing->key] + "', row id " + std::to_string(row) +
                        ": missing key value (" + hint + ")"};
  }
  distributed::throw_first_row_problem(comm, problem);
}

StepFrame::StepFrame(const RunContext& context, const std::string& method, nlohmann::json parameters, bool coordinator)
    : report(context), step(report.add_step(method)), timer(step), clock(method, coordinator) {
  step.parameters = std::move(parameters);
}

PhaseClock::PhaseClock(std::string method, bool enabled)
    : method_(std::move(method)), enabled_(enabled), last_(std::chrono::steady_clock::now()) {}

void PhaseClock::lap(std::string_view phase) {
  const auto now = std::chrono::steady_clock::now();
  if (enabled_)
    spdlog::debug("{}: {} took {:.3f} s", method_, phase, std::chrono::duration<double>(now - last_).count());
  last_ = now;
}

OpenedTable open_table_step(const distributed::Communicator& comm, const RunContext& context,
                            const std::filesystem::path& input, const std::optional<std::string>& household,
                            StepIdentity identity, io::Hdf5WriteOptions& write_options, PhaseClock& clock,
                            OutputRelease release, const std::vector<NamedInput>& other_inputs,
                            const std::optional<std::vector<std::string>>& uses) {
  OpenedTable opened;
  opened.part = read_partitioned(comm, input, household,
                                 uses ? std::optional<ReadNeeds>(ReadNeeds{*uses, &write_options}) : std::nullopt);
  if (!opened.part.carried.empty() && comm.is_coordinator())
    spdlog::debug("{}: {} of {} variables carried unread", identity.method, opened.part.carried.size(),
                  opened.part.summary.variables.size());
  clock.lap("read");
  // The digest comes from the rows just read: no second pass over the file.
  opened.input_digest = partitioned_content_digest(comm, opened.part);
  for (const NamedInput& other : other_inputs) {
    // One pass over the file on the coordinator; the others learn rows and digest from it.
    std::string identified;
    distributed::agree_on_error(comm, [&] {
      if (comm.is_coordinator())
        identified = std::to_string(io::read_summary(other.path).row_count) + " " + io::content_digest(other.path);
    });
    identified = comm.broadcast_string(identified);
    const auto space = identified.find(' ');
    opened.other_inputs.push_back(
        {other.name, other.path, std::stoll(identified.substr(0, space)), identified.substr(space + 1)});
    identity.other_inputs.emplace_back(other.name, opened.other_inputs.back().digest);
  }
  clock.lap("input digest");
  identity.input_digest = opened.input_digest;
  opened.fingerprint = step_fingerprint(identity);
  write_options.provenance = io::make_provenance(
      release == OutputRelease::kMasked ? context.release_safe_command_line() : context.command_line(),
      opened.input_digest);
  write_options.provenance.step_fingerprint = opened.fingerprint;
  return opened;
}

void write_table_step_output(const distributed::Communicator& comm, const std::filesystem::path& input,
                             OpenedTable& opened, std::vector<Column> added, const std::vector<std::string>& changed,
                             const std::filesystem::path& output, io::Hdf5WriteOptions write_options,
                             std::vector<std::string>& warnings) {
  const auto named = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<std::string> added_names;
  for (const Column& column : added) added_names.push_back(column.name());
  Table& table = opened.part.table;
  Table out(table.source(), table.row_count(), table.first_row_id());
  std::vector<std::string> carried;
  for (Column& column : table.mutable_columns()) {
    if (named(added_names, column.name())) {
      warnings.push_back("the input's variable '" + column.name() + "' is replaced by this step's");
      continue;
    }
    if (!named(changed, column.name())) carried.push_back(column.name());
    out.add_column(std::move(column));
  }
  for (Column& column : added) out.add_column(std::move(column));
  // The variables left unread keep their places among the input's variables, less those replaced.
  std::vector<io::PlacedVariable> not_held;
  std::size_t place = 0;
  auto next_carried = opened.part.carried.begin();
  for (std::size_t v = 0; v < opened.part.summary.variables.size(); ++v) {
    const VariableInfo& info = opened.part.summary.variables[v];
    const bool is_carried = next_carried != opened.part.carried.end() && next_carried->position == v;
    if (is_carried) ++next_carried;
    if (named(added_names, info.name)) {
      if (is_carried) warnings.push_back("the input's variable '" + info.name + "' is replaced by this step's");
      continue;
    }
    if (is_carried) {
      not_held.push_back({place, info});
      carried.push_back(info.name);
    }
    ++place;
  }
  write_options.unchanged =
      io::UnchangedVariables{input, opened.part.summary.stamp, std::move(carried), std::move(not_held)};
  // Continuous columns only: flags and codes compress fast and well, fk and risks neither.
  for (const Column& column : out.columns())
    if (named(added_names, column.name()) && column.type() == VariableType::kContinuous)
      write_options.derived.push_back(column.name());
  write_partitioned(comm, std::move(out), output, write_options);
}

bool finish_resumed_step(const distributed::Communicator& comm, bool resume, RunReport& report, StepRecord& step,
                         StepTimer& timer, const std::filesystem::path& input, const OpenedTable& opened,
                         const std::filesystem::path& output, const std::optional<std::filesystem::path>& report_path,
                         OutputRelease release, OutputKind output_kind) {
  auto earlier = resumable_step_results(comm, resume, output, opened.fingerprint);
  if (!earlier) return false;
  timer.stop();
  record_resumed_step(step, std::move(*earlier));
  if (release == OutputRelease::kMasked) report.add_output(checkpoint_path(output), OutputKind::kCheckpoint);
  if (output_kind != OutputKind::kData) report.add_output(output, output_kind);
  finish_table_step(comm, report, input, opened, output_kind == OutputKind::kData ? output : std::filesystem::path{},
                    report_path);
  return true;
}

void finish_table_step(const distributed::Communicator& comm, RunReport& report, const std::filesystem::path& input,
                       const OpenedTable& opened, const std::filesystem::path& output,
                       const std::optional<std::filesystem::path>& report_path) {
  report.add_input("input", input, opened.part.summary.row_count, opened.input_digest);
  for (const IdentifiedInput& other : opened.other_inputs)
    report.add_input(other.name, other.path, other.rows, other.digest);
  if (!output.empty()) report.add_output(output, OutputKind::kData);
  report.write(comm, report_path);
}

void write_masked_columns(const distributed::Communicator& comm, const RunContext& context,
                          const std::filesystem::path& input, OpenedTable& opened,
                          const std::vector<std::string>& variables, std::vector<std::vector<double>> masked,
                          const std::filesystem::path& output, io::Hdf5WriteOptions write_options, StepRecord& step,
                          PhaseClock& clock) {
  for (Column& column : opened.part.table.mutable_columns()) {
    const auto it = std::find(variables.begin(), variables.end(), column.name());
    if (it == variables.end()) continue;
    column.mutable_storage() = std::move(masked[static_cast<std::size_t>(it - variables.begin())]);
  }
  write_table_step_output(comm, input, opened, {}, variables, output, std::move(write_options), step.warnings);
  if (comm.is_coordinator()) write_checkpoint(output, opened.fingerprint, step.results, context.permissions);
  clock.lap("write");
}

}  // namespace sdc::engine
