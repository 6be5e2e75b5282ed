#pragma once
// `sdc run job.yaml`: a job is a pipeline of steps, each a command whose flags are the step's keys
// (docs/jobs.md). The whole job is checked before any step runs; then the steps run in order, each
// reading the previous step's output unless it names its input, and one report covers them all.

#include <filesystem>
#include <optional>

#include "engine/cli/command.h"

namespace sdc::engine {

struct JobOverrides {
  std::optional<std::filesystem::path> input;
  std::optional<std::filesystem::path> output_dir;
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
  bool resume = false;
};

/// Collective: every rank runs the job. Throws InvalidJob listing every problem found before any
/// step runs (unknown methods and keys, values of the wrong type, unknown variables, missing files).
void run_job(const std::filesystem::path& job_file, const JobOverrides& overrides, const RunContext& context);

}  // namespace sdc::engine
