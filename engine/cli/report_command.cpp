// `sdc report RUN.json --output report.html`: a run report as a self-contained HTML page with charts
// (engine/report/html_report.h, docs/report.md).

#include "engine/cli/commands.h"
#include "engine/report/html_report.h"

namespace sdc::engine {
namespace {

class ReportCommand final : public CommandStep {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* report = parent.add_subcommand(
        "report",
        "render a run report (JSON, docs/report-schema.json) as one self-contained HTML page with inline SVG "
        "charts; counts below --report-min-count are shown as '< N' (docs/report.md)");
    add_input_option(*report, paths_, input_);
    add_output_option(*report, paths_, output_);
    return report;
  }

  void run(const RunContext& context) override {
    write_html_report(input_, output_, context.report_min_count, context.permissions);
  }

  OutputKind output_kind() const override { return OutputKind::kPlot; }

 private:
  std::filesystem::path input_;
  std::filesystem::path output_;
};

}  // namespace

std::unique_ptr<Command> make_report_command() { return std::make_unique<ReportCommand>(); }

}  // namespace sdc::engine
