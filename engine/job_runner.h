#pragma once
// `sdc run job.yaml`: a job is a pipeline of steps, each a method whose flags are the step's keys
// (docs/jobs.md). The whole job is checked before any step runs; then the steps run in order, each
// reading the previous step's output unless it names its input, and one report covers them all.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_context.h"
#include "engine/step.h"
#include "io/path_safety.h"

namespace sdc::engine {

/// A job step's keys parsed into a step of its method.
struct ParsedStep {
  std::shared_ptr<void> owner;        ///< keeps `step` alive
  Step* step = nullptr;               ///< null when `error` is set
  std::vector<io::PathUse> paths;     ///< the files the step's keys name
  std::vector<std::string> repeated;  ///< variables named twice in a list, as messages
  std::string error;
  /// The error is about one key's value (not a missing key or two keys that need each other).
  bool bad_value = false;
  /// The error is a required key that is missing.
  bool missing_flag = false;
};

/// What a job needs of the methods: their names, their keys, and steps parsed from keys. The
/// commands implement it (engine/cli/method_catalog.h): a step's keys are its command's flags.
class MethodCatalog {
 public:
  /// kRepeatedList: a flag given once per list (add_repeatable_list_option); a job's list items are one
  /// flag each.
  enum class FlagKind { kUnknown, kSwitch, kValue, kRepeatedList };
  virtual ~MethodCatalog() = default;
  virtual bool knows(const std::string& method) const = 0;
  /// Every method a job may name, for messages.
  virtual std::string methods() const = 0;
  virtual FlagKind flag(const std::string& method, const std::string& key) const = 0;
  /// Every key of `method`, for messages.
  virtual std::string flags(const std::string& method) const = 0;
  /// `argv` starts with the method's words ("generate", "census"), then its flags.
  virtual ParsedStep parse(const std::string& method, const std::vector<std::string>& argv) const = 0;
};

struct JobOverrides {
  std::optional<std::filesystem::path> input;
  std::optional<std::filesystem::path> output_dir;
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
  bool resume = false;
};

/// A job checked as a whole, ready to run: itself a step (the step of `sdc run`).
class PlannedJob final : public Step {
 public:
  /// Reads and checks the job. Throws InvalidJob listing every problem found (unknown methods and
  /// keys, values of the wrong type, unknown variables, missing files), before anything runs.
  PlannedJob(const std::filesystem::path& job_file, const JobOverrides& overrides,
             std::shared_ptr<const MethodCatalog> catalog);
  ~PlannedJob() override;
  PlannedJob(const PlannedJob&) = delete;
  PlannedJob& operator=(const PlannedJob&) = delete;

  /// Every file the job reads and writes: the job file, its input, seed and report, and each step's
  /// files at the step's stage (a step may read what an earlier one wrote), named by step and flag.
  std::vector<io::PathUse> path_uses() const;

  /// Collective: every rank runs the steps in order; one report covers them all.
  void run(const RunContext& context) override;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

}  // namespace sdc::engine
