#include "engine/checkpoint.h"

#include "io/hdf5_table.h"
#include "io/input_file.h"
#include "io/sha256.h"
#include "kernels/core/error.h"

namespace sdc::engine {

std::string step_fingerprint(const StepIdentity& identity) {
  io::Sha256 hash;
  hash.update_field("sdc-engine step fingerprint v1");
  hash.update_field(identity.input_digest);
  hash.update_field(identity.method);
  hash.update_field(identity.parameters.dump());  // object keys are sorted: a canonical text
  hash.update_u64(identity.draws.size());
  for (StepId step : identity.draws) hash.update_u64(static_cast<std::uint64_t>(step));
  hash.update_field(identity.seed_fingerprint.value_or(""));
  // Appended only when there are some, so that the fingerprint of a one-input step stays as it was.
  if (!identity.other_inputs.empty()) {
    hash.update_field("other inputs");
    hash.update_u64(identity.other_inputs.size());
    for (const auto& [name, digest] : identity.other_inputs) {
      hash.update_field(name);
      hash.update_field(digest);
    }
  }
  return hash.hex_digest();
}

std::filesystem::path checkpoint_path(const std::filesystem::path& output) {
  std::filesystem::path path = output;
  path += ".checkpoint.json";
  return path;
}

void write_checkpoint(const std::filesystem::path& output, const std::string& fingerprint,
                      const nlohmann::json& results, io::FilePermissions permissions) {
  const nlohmann::json checkpoint = {{"step_fingerprint", fingerprint}, {"results", results}};
  io::write_file_atomically(checkpoint_path(output), checkpoint.dump(2) + "\n", permissions);
}

std::optional<nlohmann::json> completed_step_results(const std::filesystem::path& output,
                                                     const std::string& fingerprint) {
  std::error_code ec;
  if (!std::filesystem::exists(output, ec)) return std::nullopt;
  try {
    const io::FileSummary summary = io::read_summary(output);
    if (summary.provenance.step_fingerprint != fingerprint) return std::nullopt;
    if (!summary.provenance.step_results.empty()) return nlohmann::json::parse(summary.provenance.step_results);
    const nlohmann::json checkpoint =
        nlohmann::json::parse(io::read_input_file(checkpoint_path(output), "checkpoint", io::kMaxTextInputBytes));
    if (checkpoint.value("step_fingerprint", "") != fingerprint || !checkpoint.contains("results")) return std::nullopt;
    return checkpoint["results"];
  } catch (const Error&) {
    return std::nullopt;  // an unreadable or foreign file is simply rewritten
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<nlohmann::json> resumable_step_results(const distributed::Communicator& comm, bool resume,
                                                     const std::filesystem::path& output,
                                                     const std::string& fingerprint) {
  if (!resume) return std::nullopt;
  std::string found;
  if (comm.is_coordinator()) {
    if (auto results = completed_step_results(output, fingerprint)) found = results->dump();
  }
  found = comm.broadcast_string(found);
  if (found.empty()) return std::nullopt;
  return nlohmann::json::parse(found);
}

void record_resumed_step(StepRecord& step, nlohmann::json results) {
  step.results = std::move(results);
  step.warnings.push_back(
      "resumed: the output was complete from an earlier run with the same input, parameters "
      "and seed; the step was skipped");
}

}  // namespace sdc::engine
