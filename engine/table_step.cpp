#include "engine/table_step.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace sdc::engine {

PhaseClock::PhaseClock(std::string method, bool enabled)
    : method_(std::move(method)), enabled_(enabled), last_(std::chrono::steady_clock::now()) {}

void PhaseClock::lap(std::string_view phase) {
  const auto now = std::chrono::steady_clock::now();
  if (enabled_) spdlog::debug("{}: {} took {:.3f} s", method_, phase, std::chrono::duration<double>(now - last_).count());
  last_ = now;
}

OpenedTable open_table_step(const distributed::Communicator& comm, const RunContext& context,
                            const std::filesystem::path& input, const std::optional<std::string>& household,
                            StepIdentity identity, io::Hdf5WriteOptions& write_options, PhaseClock& clock) {
  OpenedTable opened;
  opened.part = read_partitioned(comm, input, household);
  clock.lap("read");
  // The digest comes from the rows just read: no second pass over the file.
  opened.input_digest = partitioned_content_digest(comm, opened.part.table, opened.part.summary);
  clock.lap("input digest");
  identity.input_digest = opened.input_digest;
  opened.fingerprint = step_fingerprint(identity);
  write_options.provenance = io::make_provenance(context.command_line(), opened.input_digest);
  write_options.provenance.step_fingerprint = opened.fingerprint;
  return opened;
}

void finish_table_step(const distributed::Communicator& comm, RunReport& report, const std::filesystem::path& input,
                       const OpenedTable& opened, const std::filesystem::path& output,
                       const std::optional<std::filesystem::path>& report_path) {
  report.set_input(input, opened.part.summary.row_count, opened.input_digest);
  report.add_output(output, "data");
  report.write(comm, report_path);
}

}  // namespace sdc::engine
