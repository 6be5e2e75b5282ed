#pragma once
// `sdc run job.yaml`: a job is a pipeline of steps, each a command whose flags are the step's keys
// (docs/jobs.md). The whole job is checked before any step runs; then the steps run in order, each
// reading the previous step's output unless it names its input, and one report covers them all.

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "engine/cli/command.h"
#include "io/path_safety.h"

namespace sdc::engine {

struct JobOverrides {
  std::optional<std::filesystem::path> input;
  std::optional<std::filesystem::path> output_dir;
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
  bool resume = false;
};

/// A job checked as a whole, ready to run.
class PlannedJob {
 public:
  /// Reads and checks the job. Throws InvalidJob listing every problem found (unknown methods and
  /// keys, values of the wrong type, unknown variables, missing files), before anything runs.
  PlannedJob(const std::filesystem::path& job_file, const JobOverrides& overrides);
  ~PlannedJob();
  PlannedJob(const PlannedJob&) = delete;
  PlannedJob& operator=(const PlannedJob&) = delete;

  /// Every file the job reads and writes: the job file, its input, seed and report, and each step's
  /// files at the step's stage (a step may read what an earlier one wrote), named by step and flag.
  std::vector<io::PathUse> path_uses() const;

  /// Collective: every rank runs the steps in order; one report covers them all.
  void run(const RunContext& context) const;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

}  // namespace sdc::engine
