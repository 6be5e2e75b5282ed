// `sdc export`: an HDF5 table to CSV, plain or gzip (docs/csv.md).

#include <spdlog/spdlog.h>

#include <chrono>
#include <set>

#include "engine/cli/commands.h"
#include "engine/report/run_report.h"
#include "io/csv.h"
#include "io/hdf5_table.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

class ExportCommand final : public CommandStep {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    app_ = parent.add_subcommand("export",
                                 "export an HDF5 table to CSV (gzip-compressed for an output name ending in .gz)");
    add_input_option(*app_, paths_, input_);
    add_output_option(*app_, paths_, output_);
    add_variable_list_option(*app_, "--variables", variables_, "variables to export, in this order (default: all)")
        ->allow_extra_args(false);
    app_->add_flag("--codes", codes_, "write categorical codes (0..L-1) instead of level labels");
    add_report_option(*app_, paths_, report_);
    app_->add_option("--delimiter", delimiter_, "field delimiter: one character, or 'tab' (default ',')")
        ->type_name("C");
    return app_;
  }

  OutputKind output_kind() const override { return OutputKind::kCsv; }

  void run(const RunContext& context) override {
    io::CsvExportOptions options;
    options.codes = codes_;
    if (delimiter_) options.delimiter = io::parse_delimiter(*delimiter_);
    options.permissions = context.permissions;
    options.gzip = output_.extension() == ".gz";
    std::set<std::string> seen;
    for (const auto& name : variables_)
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is listed twice");
    io::ensure_output_directory_writable(output_);

    RunReport report(context);
    StepRecord& step = report.add_step("export");
    step.parameters = {
        {"input", input_.string()},
        {"output", output_.string()},
        {"variables", variables_},
        {"codes", codes_},
        {"delimiter", std::string(1, options.delimiter)},
    };
    StepTimer timer(step);
    io::Hdf5ReadOptions read_options;
    read_options.variables = variables_;
    const Table table = io::read_table(input_, read_options);
    const std::string digest = io::content_digest(input_);
    const auto write_start = std::chrono::steady_clock::now();
    const io::CsvExportResult written = io::export_csv(table, output_, options);
    const double write_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - write_start).count();
    timer.stop();

    report.add_input("input", input_, table.row_count(), digest);
    report.add_output(output_, OutputKind::kCsv);
    const double megabytes = static_cast<double>(written.text_bytes) / 1e6;
    step.results = {
        {"rows", written.rows},
        {"variables", written.variables},
        {"gzip", written.gzip},
        {"bytes_read", std::filesystem::file_size(input_)},
        {"csv_bytes", written.text_bytes},
        {"bytes_written", written.file_bytes},
        {"write_seconds", write_seconds},
    };
    spdlog::info("export: {} rows x {} variables, {:.1f} MB of CSV{} written in {:.2f} s ({:.0f} MB/s)", written.rows,
                 written.variables, megabytes, written.gzip ? " (gzip)" : "", write_seconds,
                 write_seconds > 0.0 ? megabytes / write_seconds : 0.0);
    report.write(distributed::Communicator::world(), report_);
  }

 private:
  CLI::App* app_ = nullptr;
  std::filesystem::path input_;
  std::filesystem::path output_;
  std::vector<std::string> variables_;
  bool codes_ = false;
  std::optional<std::filesystem::path> report_;
  std::optional<std::string> delimiter_;
};

}  // namespace

std::unique_ptr<Command> make_export_command() { return std::make_unique<ExportCommand>(); }

}  // namespace sdc::engine
