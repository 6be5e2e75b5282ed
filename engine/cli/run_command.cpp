// `sdc run job.yaml`: runs a job file (docs/jobs.md).

#include "engine/cli/commands.h"
#include "engine/cli/method_catalog.h"
#include "engine/job_runner.h"

namespace sdc::engine {
namespace {

class RunCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* app = parent.add_subcommand("run", "run a job file: a pipeline of steps, checked as a whole before any runs");
    app->add_option("job", job_file_, "the job file (YAML)")->required()->type_name("JOB.yaml");
    app->add_option("--input,-i", overrides_.input, "data input of the first step (overrides the job's 'input')")
        ->type_name("FILE");
    app->add_option("--output-dir", overrides_.output_dir, "directory of the steps' outputs (overrides 'output_dir')")
        ->type_name("DIR");
    app->add_option("--report", overrides_.report, "the job's report (overrides 'report')")->type_name("FILE.json");
    app->add_option("--seed-file", overrides_.seed_file, "seed file (overrides 'seed_file')")->type_name("FILE");
    app->add_flag("--resume", overrides_.resume, "skip steps whose outputs are complete from an earlier run");
    return app;
  }

  /// Plans the job (its checks come first) and names every file it reads and writes.
  std::vector<io::PathUse> path_uses() override { return planned().path_uses(); }

  Step& step() override { return planned(); }

 private:
  PlannedJob& planned() {
    if (!job_) job_ = std::make_unique<PlannedJob>(job_file_, overrides_, make_method_catalog());
    return *job_;
  }

  std::filesystem::path job_file_;
  JobOverrides overrides_;
  std::unique_ptr<PlannedJob> job_;
};

}  // namespace

std::unique_ptr<Command> make_run_command() { return std::make_unique<RunCommand>(); }

}  // namespace sdc::engine
