#include "io/job_file.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/input_file.h"
#include "kernels/core/error.h"

namespace sdc::io {
namespace {

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

class Problems {
 public:
  explicit Problems(std::vector<std::string>& lines) : lines_(lines) {}
  void add(int line, const std::string& what) { lines_.push_back("line " + std::to_string(line) + ": " + what); }
  bool empty() const { return lines_.empty(); }

 private:
  std::vector<std::string>& lines_;
};

[[noreturn]] void raise_problems(const std::filesystem::path& path, const std::vector<std::string>& lines) {
  std::string message = path.string() + ": " + std::to_string(lines.size()) + " problem" +
                        (lines.size() == 1 ? "" : "s") + " in the job file:";
  for (const auto& line : lines) message += "\n  " + line;
  throw InvalidJob(message);
}

/// YAML mappings keep a repeated key as two entries; a job names each key once.
class SeenKeys {
 public:
  /// False (and a problem naming both lines) when `key` was seen before in this mapping.
  bool first(const std::string& key, int line, const std::string& where, Problems& problems) {
    const auto [it, inserted] = lines_.emplace(key, line);
    if (!inserted)
      problems.add(line, where + "key '" + key + "' is given twice (first on line " + std::to_string(it->second) + ")");
    return inserted;
  }

 private:
  std::map<std::string, int> lines_;
};

std::optional<std::string> scalar(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  return node.Scalar();
}

std::optional<bool> boolean(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() == "!") return std::nullopt;  // a quoted "true" stays a string
  bool value = false;
  if (YAML::convert<bool>::decode(node, value)) return value;
  return std::nullopt;
}

JobStep read_step(const YAML::Node& node, std::size_t index, Problems& problems) {
  JobStep step;
  step.line = line_of(node);
  if (!node.IsMap()) {
    problems.add(step.line, "step " + std::to_string(index + 1) + " is not a mapping of keys to values");
    return step;
  }
  SeenKeys seen;
  for (const auto& entry : node) {
    const std::string key = entry.first.as<std::string>();
    const YAML::Node& value = entry.second;
    const int line = line_of(entry.first);
    if (!seen.first(key, line, "step " + std::to_string(index + 1) + ": ", problems)) continue;
    if (key == "method" || key == "name") {
      const auto text = scalar(value);
      if (!text || text->empty()) {
        problems.add(line, "step " + std::to_string(index + 1) + ": '" + key + "' must be a non-empty text");
        continue;
      }
      (key == "method" ? step.method : step.name) = *text;
      continue;
    }
    if (key == "from") {
      const std::string where = "step " + std::to_string(index + 1) + ": 'from'";
      if (const auto text = scalar(value); text && !text->empty()) {
        step.from.push_back({"input", *text, line});
      } else if (value.IsMap() && value.size() > 0) {
        SeenKeys seen_inputs;
        for (const auto& source : value) {
          const std::string input = source.first.as<std::string>();
          const int source_line = line_of(source.first);
          if (!seen_inputs.first(input, source_line, where + ": ", problems)) continue;
          const auto named = scalar(source.second);
          if (!named || named->empty()) {
            problems.add(source_line,
                         where + ", input '" + input + "': the source must be 'input' or the name of an earlier step");
            continue;
          }
          step.from.push_back({input, *named, source_line});
        }
      } else {
        problems.add(line,
                     where + " must be 'input', the name of an earlier step, or a mapping of input names to those");
      }
      continue;
    }
    JobSetting setting{key, {}, false, std::nullopt, line};
    if (value.IsSequence()) {
      setting.is_list = true;
      for (const auto& item : value) {
        const auto text = scalar(item);
        if (!text) {
          problems.add(line_of(item),
                       "step " + std::to_string(index + 1) + ", key '" + key + "': list items must be scalars");
          continue;
        }
        setting.values.push_back(*text);
      }
    } else if (value.IsScalar()) {
      setting.flag = boolean(value);
      setting.values.push_back(value.Scalar());
    } else {
      problems.add(line,
                   "step " + std::to_string(index + 1) + ", key '" + key + "': expected a value or a list of values");
      continue;
    }
    step.settings.push_back(std::move(setting));
  }
  if (step.method.empty()) problems.add(step.line, "step " + std::to_string(index + 1) + " has no 'method'");
  if (step.name.empty()) {
    std::string method = step.method;
    for (char& c : method)
      if (c == ' ') c = '-';
    step.name = std::to_string(index + 1) + "-" + method;
  }
  return step;
}

}  // namespace

JobFile read_job_file(const std::filesystem::path& path, std::vector<std::string>& found) {
  const std::string content = read_input_file(path, "job file", kMaxTextInputBytes);
  YAML::Node root;
  try {
    root = YAML::Load(content);
  } catch (const YAML::Exception& e) {
    throw InvalidJob(path.string() + ": line " + std::to_string(e.mark.line + 1) + ": not valid YAML (" + e.msg + ")");
  }
  JobFile job;
  job.path = path;
  if (!root.IsMap()) raise_problems(path, {"line 1: a job file is a mapping with 'version' and 'steps'"});
  const std::size_t known = found.size();
  Problems problems(found);

  bool has_version = false;
  SeenKeys seen;
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    const YAML::Node& value = entry.second;
    const int line = line_of(entry.first);
    if (!seen.first(key, line, "", problems)) continue;
    const auto path_value = [&](std::optional<std::filesystem::path>& out) {
      if (const auto text = scalar(value); text && !text->empty())
        out = *text;
      else
        problems.add(line, "'" + key + "' must be a path");
    };
    if (key == "version") {
      has_version = true;
      int version = 0;
      if (!YAML::convert<int>::decode(value, version) || version != kJobFormatVersion)
        problems.add(line, "'version' must be " + std::to_string(kJobFormatVersion));
    } else if (key == "input") {
      path_value(job.input);
    } else if (key == "output_dir") {
      path_value(job.output_dir);
    } else if (key == "report") {
      path_value(job.report);
    } else if (key == "seed_file") {
      path_value(job.seed_file);
    } else if (key == "threads") {
      int threads = 0;
      if (YAML::convert<int>::decode(value, threads) && threads >= 0)
        job.threads = threads;
      else
        problems.add(line, "'threads' must be a whole number >= 0");
    } else if (key == "steps") {
      if (!value.IsSequence() || value.size() == 0) {
        problems.add(line, "'steps' must be a non-empty list of steps");
        continue;
      }
      for (std::size_t i = 0; i < value.size(); ++i) job.steps.push_back(read_step(value[i], i, problems));
    } else {
      problems.add(line,
                   "unknown key '" + key + "' (known: version, input, output_dir, report, seed_file, threads, steps)");
    }
  }
  if (!has_version) problems.add(1, "'version: " + std::to_string(kJobFormatVersion) + "' is missing");
  if (job.steps.empty() && found.size() == known) problems.add(1, "'steps' is missing");
  std::set<std::string> names;
  for (const auto& step : job.steps)
    if (!names.insert(step.name).second) problems.add(step.line, "two steps are named '" + step.name + "'");
  return job;
}

JobFile load_job_file(const std::filesystem::path& path) {
  std::vector<std::string> problems;
  JobFile job = read_job_file(path, problems);
  if (!problems.empty()) raise_problems(path, problems);
  return job;
}

}  // namespace sdc::io
