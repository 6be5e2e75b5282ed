#pragma once
// Checkpointable steps (docs/checkpoints.md). A step's result is a function of its input's content,
// its method and parameters, the StepIds it draws with and the seed; the fingerprint of those is
// stored in the step's output, so a later run with --resume skips a step whose output is complete
// and was made from the same things.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distributed/comm.h"
#include "engine/report/run_report.h"
#include "io/atomic_output.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {

struct StepIdentity {
  std::string input_digest;   ///< content digest of the step's input (named "input")
  std::string method;         ///< e.g. "risk"
  nlohmann::json parameters;  ///< the method's parameters (not paths, threads or filters)
  std::vector<StepId> draws;  ///< the StepIds the step draws with; empty for deterministic steps
  std::optional<std::string> seed_fingerprint;
  /// The step's other inputs by name ("external", "masked") and content digest: their content, not
  /// their paths, identifies the step.
  std::vector<std::pair<std::string, std::string>> other_inputs;
};

/// SHA-256 (hex) over the identity in a fixed serialization (parameters as canonical JSON).
std::string step_fingerprint(const StepIdentity& identity);

/// Where a masked output's step results are kept: beside it, never inside the file meant for release
/// (they hold counts of the original data): `<output>.checkpoint.json`, owner-only like the report.
std::filesystem::path checkpoint_path(const std::filesystem::path& output);

/// Writes the checkpoint of a masked `output` (checkpoint_path) atomically: its step's fingerprint and
/// results.
void write_checkpoint(const std::filesystem::path& output, const std::string& fingerprint,
                      const nlohmann::json& results, io::FilePermissions permissions);

/// The results recorded by a completed earlier run of this step, when `output` exists, is a readable
/// sdc-engine file and carries `fingerprint`, with its results in the file or, for a masked output,
/// in its checkpoint (carrying the same fingerprint); otherwise none (the step must run).
std::optional<nlohmann::json> completed_step_results(const std::filesystem::path& output,
                                                     const std::string& fingerprint);

/// Collective. With `resume`, the coordinator looks for the results of a completed earlier run
/// (completed_step_results) and every rank receives what it found; without `resume`, none.
std::optional<nlohmann::json> resumable_step_results(const distributed::Communicator& comm, bool resume,
                                                     const std::filesystem::path& output,
                                                     const std::string& fingerprint);

/// Records in `step` that it was skipped and reports the earlier run's `results`.
void record_resumed_step(StepRecord& step, nlohmann::json results);

}  // namespace sdc::engine
