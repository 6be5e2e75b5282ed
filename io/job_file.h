#pragma once
// Job files (docs/jobs.md): a YAML description of a pipeline of steps. This layer reads the YAML
// and checks its structure; what the keys of a step mean is the business of the step's method,
// whose command-line flags they are (engine/job_runner.h).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sdc::io {

inline constexpr int kJobFormatVersion = 1;

/// One key of a step: a scalar, a list of scalars (a comma-separated flag value), or a boolean.
struct JobSetting {
  std::string key;
  std::vector<std::string> values;  ///< one element for a scalar; several for a list
  bool is_list = false;
  std::optional<bool> flag;  ///< set when the YAML value is a boolean
  int line = 0;
};

struct JobStep {
  std::string method;  ///< e.g. "risk" or "generate census"
  std::string name;    ///< defaults to "<index>-<method>"; names the step's default output
  /// Where the step's inputs come from, by input name: `from: pram` is {input: pram}; `from: {input:
  /// input, external: pram}` names a source for each. A source is "input" (the job's input) or the
  /// name of an earlier step (its output). Without an entry for "input": the previous step's output,
  /// else the job's input.
  struct From {
    std::string input;   ///< the input's flag: "input", "external", "masked"
    std::string source;  ///< "input" or a step name
    int line = 0;
  };
  std::vector<From> from;
  std::vector<JobSetting> settings;
  int line = 0;
};

struct JobFile {
  std::filesystem::path path;
  std::optional<std::filesystem::path> input;
  std::optional<std::filesystem::path> output_dir;
  std::optional<std::filesystem::path> report;
  std::optional<std::filesystem::path> seed_file;
  std::optional<int> threads;
  std::vector<JobStep> steps;
};

/// Reads a job file and adds every structural problem to `problems` ("line N: ..."): unknown
/// top-level keys, keys given twice, wrong types, a step without a method, duplicate step names, a
/// nested value that is neither scalar nor list. The job checker adds its own and lists them all at
/// once. Throws InvalidJob when the file is not YAML or not a mapping, IoError when it cannot be read.
JobFile read_job_file(const std::filesystem::path& path, std::vector<std::string>& problems);

/// As read_job_file(), throwing one InvalidJob that lists the problems.
JobFile load_job_file(const std::filesystem::path& path);

}  // namespace sdc::io
