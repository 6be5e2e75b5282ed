#pragma once
// The frame of the steps that read one table and write one (`sdc risk`, `sdc pram`): the input read
// across the ranks and identified by its content digest, the step's fingerprint and the output's
// provenance, resuming a completed step, and the report's input and output. The methods fill in what
// lies between.

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/comm.h"
#include "engine/checkpoint.h"
#include "engine/partitioned_table.h"
#include "engine/report/run_report.h"
#include "engine/run_context.h"
#include "io/hdf5_table.h"
#include "kernels/core/key_grouping.h"
#include "kernels/core/numeric_columns.h"

namespace sdc::engine {

/// Write options of a step's data output: its --filters (default when absent) and the run's
/// --permissions.
io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters);

/// Debug-level timings of a step's phases, logged by the coordinator as "<method>: <phase> took <s> s"
/// (the bench/scripts read these lines).
class PhaseClock {
 public:
  PhaseClock(std::string method, bool enabled);
  void lap(std::string_view phase);

 private:
  std::string method_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_;
};

/// Continuous variables of a table as the continuous kernels take them, with their global row ids.
struct ContinuousColumns {
  ContinuousColumns() = default;
  ContinuousColumns(ContinuousColumns&&) = default;  // the vector's storage moves with it: the views stay valid
  ContinuousColumns(const ContinuousColumns&) = delete;
  ContinuousColumns& operator=(const ContinuousColumns&) = delete;

  std::vector<std::int64_t> row_ids;
  NumericColumns columns;  ///< views into the table and into row_ids; keep both alive
};

/// Throws InvalidInput naming the table and the variable when one is absent or not continuous.
ContinuousColumns continuous_columns(const Table& table, const std::vector<std::string>& variables);

/// Categorical variables of a table as the key kernels take them (views into the table). Throws
/// InvalidInput naming the table and the variable when one is absent or not categorical.
KeyColumns key_columns(const Table& table, const std::vector<std::string>& names);

/// The column `name` of `table`, to be changed in place. InvalidInput naming the table when absent.
Column& mutable_column(Table& table, const std::string& name);

/// Collective: the first missing code of `keys` (named `names`) over all ranks is an error naming the
/// input, the variable and the row id, followed by `hint`.
void reject_missing_codes(const distributed::Communicator& comm, const std::filesystem::path& input, const Table& table,
                          const KeyColumns& keys, const std::vector<std::string>& names, const std::string& hint);

/// What every step's run opens with: its report holding one step record with the step's parameters,
/// the step's wall-time timer and the debug clock of its phases. Unpack it where the step starts:
///   StepFrame frame(context, "pram", parameters(), comm.is_coordinator());
///   auto& [report, step, timer, clock] = frame;
/// Neither copied nor moved: the timer holds the record.
struct StepFrame {
  StepFrame(const RunContext& context, const std::string& method, nlohmann::json parameters, bool coordinator);
  StepFrame(const StepFrame&) = delete;
  StepFrame& operator=(const StepFrame&) = delete;

  RunReport report;
  StepRecord& step;
  StepTimer timer;
  PhaseClock clock;
};

/// A step's input, read and identified.
/// An input a step reads besides its table ("external", "masked"), by the name of its flag.
struct NamedInput {
  std::string name;
  std::filesystem::path path;
};

/// An input as the report and the fingerprint know it.
struct IdentifiedInput {
  std::string name;
  std::filesystem::path path;
  std::int64_t rows = 0;
  std::string digest;  ///< content digest (docs/format.md)
};

struct OpenedTable {
  TablePart part;
  std::string input_digest;  ///< content digest of the input (docs/format.md)
  std::vector<IdentifiedInput> other_inputs;
  std::string fingerprint;  ///< the step's identity (docs/checkpoints.md)
};

/// Whether a step's data output is meant for release (a masked file) or for the analyst only.
enum class OutputRelease {
  kAnalysis,  ///< provenance holds the command line and the step's results (for --resume)
  /// Provenance holds only what discloses nothing: tool version, the command line with base names
  /// of files, the input's content digest and the step fingerprint. The results go to the output's
  /// checkpoint (engine/checkpoint.h) and the report.
  kMasked,
};

/// Collective. Reads `input` across the ranks (read_partitioned, split between households when
/// `household` is given), computes its content digest from the rows read and the content digests of
/// `other_inputs` (sdc tables the step reads itself), completes `identity` with them into the step's
/// fingerprint, and sets the provenance of `write_options`. Laps "read" and "input digest" on `clock`.
/// A step that names the variables it `uses` leaves the others unread where it can (ReadNeeds):
/// write_table_step_output() then copies them from the input's stored chunks.
OpenedTable open_table_step(const distributed::Communicator& comm, const RunContext& context,
                            const std::filesystem::path& input, const std::optional<std::string>& household,
                            StepIdentity identity, io::Hdf5WriteOptions& write_options, PhaseClock& clock,
                            OutputRelease release = OutputRelease::kAnalysis,
                            const std::vector<NamedInput>& other_inputs = {},
                            const std::optional<std::vector<std::string>>& uses = std::nullopt);

/// Collective. With `resume` and a complete earlier run of this step at `output` (the same
/// fingerprint): records the earlier results in `step`, the output as `output_kind` (and a masked
/// output's checkpoint) in `report`, writes the report, and returns true: the step is done. Otherwise
/// returns false.
bool finish_resumed_step(const distributed::Communicator& comm, bool resume, RunReport& report, StepRecord& step,
                         StepTimer& timer, const std::filesystem::path& input, const OpenedTable& opened,
                         const std::filesystem::path& output, const std::optional<std::filesystem::path>& report_path,
                         OutputRelease release, OutputKind output_kind = OutputKind::kData);

/// Collective. Writes the step's output (write_partitioned): the input's variables in their order, with
/// the values of `changed` ones (modified in place by the step) as they are now, less any that `added`
/// replaces (a rerun replaces its own columns; a warning says so), then `added`. Every other input
/// variable is declared unchanged, so its stored chunks are copied from the input.
void write_table_step_output(const distributed::Communicator& comm, const std::filesystem::path& input,
                             OpenedTable& opened, std::vector<Column> added, const std::vector<std::string>& changed,
                             const std::filesystem::path& output, io::Hdf5WriteOptions write_options,
                             std::vector<std::string>& warnings);

/// Collective. The end of a step that masks continuous variables in place (swap rank, swap shuffle,
/// noise): `masked[j]` (this rank's records) replaces variable `variables[j]`, the output is written
/// (write_table_step_output) with the checkpoint of `step`'s results beside it, and "write" is lapped.
void write_masked_columns(const distributed::Communicator& comm, const RunContext& context,
                          const std::filesystem::path& input, OpenedTable& opened,
                          const std::vector<std::string>& variables, std::vector<std::vector<double>> masked,
                          const std::filesystem::path& output, io::Hdf5WriteOptions write_options, StepRecord& step,
                          PhaseClock& clock);

/// Collective. Records the step's inputs and its data output (none when `output` is empty: a step
/// that writes only its report) in `report` and writes the report (to `report_path`, or to the job's
/// report when the step runs in a job).
void finish_table_step(const distributed::Communicator& comm, RunReport& report, const std::filesystem::path& input,
                       const OpenedTable& opened, const std::filesystem::path& output,
                       const std::optional<std::filesystem::path>& report_path);

}  // namespace sdc::engine
