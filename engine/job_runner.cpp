#include "engine/job_runner.h"

#include <spdlog/spdlog.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "distributed/comm.h"
#include "io/hdf5_table.h"
#include "io/job_file.h"
#include "io/seed.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

/// A step ready to run: its command line and where its data flows.
struct StepPlan {
  io::JobStep step;
  std::vector<std::string> argv;  ///< without the program name
  std::optional<std::filesystem::path> output;
};

class JobPlanner {
 public:
  /// `problems`: those found in the job file's structure, listed with the planner's own.
  JobPlanner(io::JobFile job, const JobOverrides& overrides, std::vector<std::string> problems,
             const MethodCatalog& catalog)
      : job_(std::move(job)), overrides_(overrides), problems_(std::move(problems)), catalog_(catalog) {
    if (overrides.input) job_.input = overrides.input;
    // A relative job report inside the job's output directory moves with --output-dir, so that an
    // overridden output directory holds the whole job's results.
    if (overrides.output_dir && !overrides.report && job_.report && job_.report->is_relative()) {
      const auto inside = job_.report->lexically_relative(job_.output_dir.value_or("."));
      if (!inside.empty() && *inside.begin() != "..") job_.report = *overrides.output_dir / inside;
    }
    if (overrides.output_dir) job_.output_dir = overrides.output_dir;
    if (overrides.seed_file) job_.seed_file = overrides.seed_file;
    if (overrides.report) job_.report = overrides.report;
  }

  /// Plans every step; collects every problem instead of stopping at the first.
  std::vector<StepPlan> plan() {
    if (job_.seed_file && !std::filesystem::exists(*job_.seed_file))
      problem(0, "seed_file '" + job_.seed_file->string() + "' does not exist");
    check_report_directory();
    std::optional<std::filesystem::path> current_input = job_.input;
    std::optional<std::vector<VariableInfo>> available = variables_of(current_input, 0);
    const std::optional<std::vector<VariableInfo>> job_input_variables = available;
    struct StepOutput {
      std::filesystem::path path;
      std::optional<std::vector<VariableInfo>> variables;
      OutputKind kind = OutputKind::kData;
    };
    std::map<std::string, StepOutput> outputs_by_step;  // of the steps planned so far

    std::vector<StepPlan> plans;
    for (std::size_t i = 0; i < job_.steps.size(); ++i) {
      const io::JobStep& step = job_.steps[i];
      const std::string where = "step " + std::to_string(i + 1) + " (" + step.method + ")";
      if (step.method.empty()) {  // the job file's own problem
        available.reset();
        continue;
      }
      if (!catalog_.knows(step.method)) {
        problem(step.line, where + ": unknown method '" + step.method + "' (methods: " + catalog_.methods() + ")");
        available.reset();
        continue;
      }
      bool input_unknown = false;                 // a bad 'from' (already a problem) leaves the step without input
      OutputKind input_kind = OutputKind::kData;  // what 'from' feeds the step's input: data, or a table file
      std::vector<std::pair<std::string, std::filesystem::path>> other_sources;  // (input flag, file)
      for (const io::JobStep::From& from : step.from) {
        const bool has_key = std::any_of(step.settings.begin(), step.settings.end(),
                                         [&](const io::JobSetting& setting) { return setting.key == from.input; });
        if (has_key) {
          problem(from.line, where + ": give '" + from.input + "' or 'from', not both");
          continue;
        }
        if (catalog_.flag(step.method, from.input) != MethodCatalog::FlagKind::kValue) {
          problem(from.line, where + ": from: the method has no input '" + from.input + "'");
          continue;
        }
        std::optional<std::filesystem::path> source;
        std::optional<std::vector<VariableInfo>> variables;
        if (from.source == "input") {
          if (!job_.input) problem(from.line, where + ": from: input, but the job has no input (give --input)");
          source = job_.input;
          variables = job_input_variables;
        } else if (const auto it = outputs_by_step.find(from.source); it != outputs_by_step.end()) {
          // A step's input may be a table file (the table steps'); its other inputs are data tables.
          const bool readable =
              it->second.kind == OutputKind::kData || (from.input == "input" && it->second.kind == OutputKind::kTable);
          if (!readable) {
            problem(from.line, where + ": from: step '" + from.source + "' writes a " +
                                   std::string(to_string(it->second.kind)) + " file, not a data table");
            continue;
          }
          if (from.input == "input") input_kind = it->second.kind;
          source = it->second.path;
          variables = it->second.variables;
        } else {
          problem(from.line, where + ": from: no earlier step named '" + from.source + "' writes an output");
          if (from.input == "input") {
            current_input.reset();
            available.reset();
            input_unknown = true;
          }
          continue;
        }
        if (from.input == "input") {
          current_input = source;
          available = variables;
        } else if (source) {
          other_sources.emplace_back(from.input, *source);
        }
      }
      StepPlan plan{step, {}, std::nullopt};
      std::istringstream words(step.method);
      for (std::string word; words >> word;) plan.argv.push_back(word);
      std::vector<std::pair<const io::JobSetting*, std::vector<std::string>>> setting_args;

      bool explicit_input = false;
      bool explicit_output = false;
      for (const io::JobSetting& setting : step.settings) {
        const MethodCatalog::FlagKind kind = catalog_.flag(step.method, setting.key);
        if (kind == MethodCatalog::FlagKind::kUnknown) {
          problem(setting.line,
                  where + ": unknown key '" + setting.key + "' (keys: " + catalog_.flags(step.method) + ")");
          continue;
        }
        explicit_input = explicit_input || setting.key == "input";
        explicit_output = explicit_output || setting.key == "output";
        if (kind == MethodCatalog::FlagKind::kSwitch) {  // true adds it, false leaves it out
          if (!setting.flag || setting.is_list) {
            problem(setting.line, where + ": key '" + setting.key + "' is a switch: give true or false");
            continue;
          }
          if (*setting.flag) plan.argv.push_back("--" + setting.key);
          continue;
        }
        if (kind == MethodCatalog::FlagKind::kRepeatedList) {  // [a, "b,c"]: --key a --key b,c
          std::vector<std::string> args;
          for (const auto& item : setting.values) args.insert(args.end(), {"--" + setting.key, item});
          plan.argv.insert(plan.argv.end(), args.begin(), args.end());
          setting_args.push_back({&setting, std::move(args)});
          continue;
        }
        std::string value;
        for (const auto& item : setting.values) value += (value.empty() ? "" : ",") + item;
        plan.argv.push_back("--" + setting.key);
        plan.argv.push_back(value);
        setting_args.push_back({&setting, {"--" + setting.key, value}});
        if (setting.key == "input") {
          current_input = value;
          available = variables_of(current_input, setting.line);
        }
        if (setting.key == "output") plan.output = value;
      }
      const auto has_flag = [&](const char* key) {
        return catalog_.flag(step.method, key) != MethodCatalog::FlagKind::kUnknown;
      };
      for (const auto& [input, source] : other_sources)
        plan.argv.insert(plan.argv.end(), {"--" + input, source.string()});
      if (has_flag("input") && !explicit_input) {
        if (!current_input) {
          if (!input_unknown) problem(step.line, where + ": no input: give 'input' in the job or in the step");
        } else {
          plan.argv.insert(plan.argv.end(), {"--input", current_input->string()});
        }
      }
      if (has_flag("output") && !explicit_output) {
        plan.output = job_.output_dir.value_or(".") / (step.name + ".h5");
        plan.argv.insert(plan.argv.end(), {"--output", plan.output->string()});
      }
      if (has_flag("report")) plan.argv.insert(plan.argv.end(), {"--report", step.name + ".json"});
      if (has_flag("seed-file") && job_.seed_file)
        plan.argv.insert(plan.argv.end(), {"--seed-file", job_.seed_file->string()});
      if (has_flag("resume") && overrides_.resume) plan.argv.push_back("--resume");

      ParsedStep parsed = catalog_.parse(step.method, plan.argv);
      if (!parsed.error.empty()) {
        report_parse_errors(where, step, setting_args, parsed, input_unknown);
      } else {
        for (const auto& text : parsed.repeated) problem(step.line, where + ": " + text);
        for (io::PathUse use : parsed.paths) {
          if (use.flag == "--report") continue;  // a step's report goes into the job's
          use.flag = where + " " + use.flag;
          use.stage = static_cast<int>(i) + 1;
          path_uses_.push_back(std::move(use));
        }
        if (!explicit_input && !input_unknown && has_flag("input") && parsed.step->input_kind() != input_kind)
          problem(step.line, where + ": the step reads a " + std::string(to_string(parsed.step->input_kind())) +
                                 " file: give 'from' naming an earlier step that writes one");
        if (parsed.step->needs_seed() && !job_.seed_file && std::getenv("SDC_SEED") == nullptr)
          problem(step.line, where +
                                 ": the step draws random numbers and needs a seed: give seed_file in the job, "
                                 "--seed-file to sdc run, or set SDC_SEED");
        if (available) {
          std::vector<std::string> variable_problems;
          parsed.step->check_variables(*available, variable_problems);
          for (const auto& text : variable_problems) problem(step.line, where + ": " + text);
          auto added = parsed.step->added_variables();
          if (!parsed.step->keeps_input_variables()) available->clear();
          for (auto& variable : added) {
            std::erase_if(*available, [&](const VariableInfo& v) { return v.name == variable.name; });
            available->push_back(std::move(variable));
          }
        } else if (!parsed.step->keeps_input_variables()) {
          available = parsed.step->added_variables();
        }
      }
      if (plan.output) {
        const OutputKind kind = parsed.step != nullptr ? parsed.step->output_kind() : OutputKind::kData;
        // What is not a data table cannot be the next step's input: the job's input stays current.
        if (kind == OutputKind::kData) current_input = plan.output;
        planned_outputs_.push_back(*plan.output);
        outputs_by_step[step.name] = StepOutput{*plan.output, available, kind};
      }
      plans.push_back(std::move(plan));
    }
    if (!problems_.empty()) {
      std::string message = job_.path.string() + ": " + std::to_string(problems_.size()) + " problem" +
                            (problems_.size() == 1 ? "" : "s") + " found before running:";
      for (const auto& text : problems_) message += "\n  " + text;
      throw InvalidJob(message);
    }
    return plans;
  }

  const io::JobFile& job() const { return job_; }

  /// A step's flags failed to parse. CLI11 stops at the first bad value; each setting is parsed
  /// again on its own, after the injected flags, so that every bad value is listed with its line.
  void report_parse_errors(const std::string& where, const io::JobStep& step,
                           const std::vector<std::pair<const io::JobSetting*, std::vector<std::string>>>& setting_args,
                           const ParsedStep& parsed, bool input_unknown) {
    bool found = false;
    if (parsed.bad_value) {
      std::vector<std::string> injected;
      std::istringstream words(step.method);
      for (std::string word; words >> word;) injected.push_back(word);
      for (const auto& [setting, args] : setting_args) {
        std::vector<std::string> alone = injected;
        alone.insert(alone.end(), args.begin(), args.end());
        const ParsedStep one = catalog_.parse(step.method, alone);
        if (one.bad_value) {
          problem(setting->line, where + ": " + one.error);
          found = true;
        }
      }
    }
    if (found) return;
    if (parsed.missing_flag && input_unknown && parsed.error.find("--input") != std::string::npos) return;
    int line = step.line;  // the line of the key the message names, when it names one
    for (const io::JobSetting& setting : step.settings)
      if (parsed.error.find("--" + setting.key) != std::string::npos) line = setting.line;
    problem(line, where + ": " + parsed.error);
  }

  /// The files of the job and of every step planned, each step at its own stage.
  std::vector<io::PathUse> path_uses() const {
    std::vector<io::PathUse> uses{{"the job file", job_.path, io::PathAccess::kRead, 0}};
    if (job_.input) uses.push_back({"the job's input", *job_.input, io::PathAccess::kRead, 0});
    if (job_.seed_file) uses.push_back({"seed_file", *job_.seed_file, io::PathAccess::kRead, 0});
    if (job_.report) uses.push_back({"the job's report", *job_.report, io::PathAccess::kWrite, io::kWholeRunStage});
    uses.insert(uses.end(), path_uses_.begin(), path_uses_.end());
    return uses;
  }

 private:
  /// The job's report is written after every step: its directory must exist, or be the output
  /// directory the job creates, before anything runs.
  void check_report_directory() {
    if (!job_.report) return;
    const auto directory = job_.report->parent_path();
    if (directory.empty() || std::filesystem::is_directory(directory)) return;
    if (job_.output_dir && directory.lexically_normal() == job_.output_dir->lexically_normal()) return;
    problem(0, "report: directory '" + directory.string() + "' does not exist");
  }

  void problem(int line, const std::string& text) {
    problems_.push_back(line > 0 ? "line " + std::to_string(line) + ": " + text : text);
  }

  /// The variables of an existing input; none (unchecked) for a file a previous step will write.
  std::optional<std::vector<VariableInfo>> variables_of(const std::optional<std::filesystem::path>& input, int line) {
    if (!input) return std::nullopt;
    for (const auto& planned : planned_outputs_)
      if (planned == *input) return std::nullopt;
    if (!std::filesystem::exists(*input)) {
      problem(line, "input '" + input->string() + "' does not exist");
      return std::nullopt;
    }
    try {
      return io::read_summary(*input).variables;
    } catch (const Error& e) {
      problem(line, e.what());
      return std::nullopt;
    }
  }

  io::JobFile job_;
  JobOverrides overrides_;
  std::vector<std::string> problems_;
  const MethodCatalog& catalog_;
  std::vector<std::filesystem::path> planned_outputs_;
  std::vector<io::PathUse> path_uses_;
};

/// One report for the job: the first step's report extended by the others' steps and outputs.
nlohmann::json merge_reports(const std::vector<nlohmann::json>& reports, const RunContext& context) {
  nlohmann::json job = reports.front();
  job["command"] = context.argv;
  job["steps"] = nlohmann::json::array();
  job["outputs"] = nlohmann::json::array();
  job["inputs"] = nlohmann::json::array();
  std::set<std::string> seen;  // paths written by earlier steps, or listed already
  for (const auto& report : reports) {
    for (const auto& input : report["inputs"])
      if (seen.insert(input["path"].get<std::string>()).second) job["inputs"].push_back(input);
    for (const auto& step : report["steps"]) job["steps"].push_back(step);
    for (const auto& output : report["outputs"]) {
      job["outputs"].push_back(output);
      seen.insert(output["path"].get<std::string>());
    }
    if (job["seed_fingerprint"].is_null()) job["seed_fingerprint"] = report["seed_fingerprint"];
    for (std::size_t r = 0; r < job["peak_memory_bytes"].size(); ++r)
      job["peak_memory_bytes"][r] =
          std::max(job["peak_memory_bytes"][r].get<std::int64_t>(), report["peak_memory_bytes"][r].get<std::int64_t>());
  }
  job["finished_utc"] = reports.back()["finished_utc"];
  return job;
}

}  // namespace

struct PlannedJob::Plan {
  io::JobFile job;
  std::vector<StepPlan> steps;
  std::vector<io::PathUse> path_uses;
  std::shared_ptr<const MethodCatalog> catalog;
};

PlannedJob::PlannedJob(const std::filesystem::path& job_file, const JobOverrides& overrides,
                       std::shared_ptr<const MethodCatalog> catalog) {
  std::vector<std::string> problems;
  io::JobFile file = io::read_job_file(job_file, problems);
  JobPlanner planner(std::move(file), overrides, std::move(problems), *catalog);
  std::vector<StepPlan> steps = planner.plan();
  plan_ = std::make_unique<Plan>(Plan{planner.job(), std::move(steps), planner.path_uses(), std::move(catalog)});
}

PlannedJob::~PlannedJob() = default;

std::vector<io::PathUse> PlannedJob::path_uses() const { return plan_->path_uses; }

void PlannedJob::run(const RunContext& context) {
  const auto comm = distributed::Communicator::world();
  const io::JobFile& job = plan_->job;
  const std::vector<StepPlan>& plans = plan_->steps;
  if (job.output_dir) io::create_output_directories(*job.output_dir, context.permissions);

  std::optional<tbb::global_control> thread_limit;
  RunContext step_context = context;
  if (job.threads && *job.threads > 0 && context.threads != *job.threads) {
    thread_limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(*job.threads));
    step_context.threads = *job.threads;
  }
  std::vector<nlohmann::json> reports;
  std::vector<std::filesystem::path> step_outputs;
  step_context.report_sink = [&](const nlohmann::json& report) { reports.push_back(report); };

  for (std::size_t i = 0; i < plans.size(); ++i) {
    const StepPlan& plan = plans[i];
    if (comm.is_coordinator())
      spdlog::info("job {}: step {}/{} '{}' ({})", job.path.string(), i + 1, plans.size(), plan.step.name,
                   plan.step.method);
    const ParsedStep parsed = plan_->catalog->parse(plan.step.method, plan.argv);
    SDC_CHECK(parsed.error.empty() && parsed.step != nullptr, "a planned step parses again: " + parsed.error);
    step_context.argv = {context.argv.empty() ? "sdc" : context.argv.front()};
    step_context.argv.insert(step_context.argv.end(), plan.argv.begin(), plan.argv.end());
    step_context.paths = parsed.paths;
    parsed.step->run(step_context);
    // A complete step's outputs are checkpoints: a later failure keeps them for --resume.
    for (auto& output : io::committed_outputs()) step_outputs.push_back(std::move(output));
    io::keep_committed_outputs();
  }
  if (comm.is_coordinator() && job.report && !reports.empty()) {
    try {
      io::write_file_atomically(*job.report, merge_reports(reports, context).dump(2) + "\n", context.permissions);
    } catch (...) {
      // Without its report the job is not done: none of its outputs stays behind.
      std::error_code ignored;
      for (const auto& output : step_outputs) std::filesystem::remove(output, ignored);
      throw;
    }
  }
}

}  // namespace sdc::engine
