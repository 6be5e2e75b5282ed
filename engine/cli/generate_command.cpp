// `sdc generate <what>`: things sdc-engine makes from nothing but a seed. Today: `seed`.

#include <spdlog/spdlog.h>

#include "engine/cli/commands.h"
#include "engine/report/run_report.h"
#include "io/seed.h"

namespace sdc::engine {
namespace {

class GenerateCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* generate = parent.add_subcommand("generate", "generate seeds (and, later, synthetic data)");
    generate->require_subcommand(1);
    seed_ = generate->add_subcommand(
        "seed", "write a new random 64-bit seed to an owner-only file (the file is the key to every random draw)");
    add_output_option(*seed_, seed_output_);
    add_report_option(*seed_, report_);
    return generate;
  }

  void run(const RunContext& context) override {
    if (seed_->parsed()) run_seed(context);
  }

 private:
  void run_seed(const RunContext& context) {
    RunReport report(context);
    StepRecord& step = report.add_step("generate seed");
    StepTimer timer(step);
    const io::Seed seed = io::write_new_seed_file(seed_output_);
    timer.stop();
    report.set_seed_fingerprint(seed.fingerprint());
    report.add_output(seed_output_, "seed");
    step.results["seed_fingerprint"] = seed.fingerprint();
    spdlog::info("wrote a new seed to {} (fingerprint {})", seed_output_.string(), seed.fingerprint());
    if (report_) report.write(*report_, context.permissions);
  }

  CLI::App* seed_ = nullptr;
  std::filesystem::path seed_output_;
  std::optional<std::filesystem::path> report_;
};

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace sdc::engine
