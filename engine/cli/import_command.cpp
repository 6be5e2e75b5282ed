// `sdc import`: a CSV file (plain or gzip) to the HDF5 format, with an inferred or given schema
// (docs/csv.md, docs/schema.md).

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <limits>

#include "engine/cli/commands.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "io/csv.h"
#include "io/hdf5_table.h"
#include "io/schema.h"
#include "kernels/core/error.h"
#include "kernels/core/row_order.h"

namespace sdc::engine {
namespace {

/// Records of a household must be contiguous for household-aligned partitions (docs/distributed.md):
/// with a household variable, rows are stably sorted by it. Returns whether any row moved.
bool sort_by_household(Table& table, std::vector<std::string>& warnings) {
  for (const Column& column : table.columns()) {
    if (column.info().role != VariableRole::kHousehold) continue;
    const auto order = stable_sort_order(column.ids());
    if (!order) return false;
    reorder_rows(table, *order);
    warnings.push_back("rows were sorted by the household variable '" + column.name() +
                       "' (stable: a household's records keep their order); row ids refer to the sorted file");
    return true;
  }
  return false;
}

void write_whole_file(const std::filesystem::path& path, const std::filesystem::path& final_path,
                      const std::string& content) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    const int error = errno;
    throw IoError(final_path.string() + ": cannot write: " + std::strerror(error));
  }
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) throw IoError(final_path.string() + ": cannot write (disk full?)");
}

class ImportCommand final : public CommandStep {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    app_ = parent.add_subcommand(
        "import", "import a CSV file (plain or gzip) into the HDF5 format, with an inferred or given schema");
    add_input_option(*app_, paths_, input_);
    add_output_option(*app_, paths_, output_);
    app_->add_option("--schema", schema_,
                     "YAML schema of the variables (docs/schema.md); without it, types are inferred")
        ->type_name("FILE.yaml");
    paths_.reads("--schema", schema_);
    app_->add_option("--role", roles_,
                     "give variables a role: identifier, household, geography (listed coarsest first: levels 1..L), "
                     "key, continuous, weight, sensitive, other; repeatable")
        ->allow_extra_args(false)
        ->type_name("ROLE=VAR[,VAR...]");
    app_->add_option("--type", types_, "set a variable's type: categorical, continuous or id; repeatable")
        ->allow_extra_args(false)
        ->type_name("VAR=TYPE");
    app_->add_option("--save-schema", save_schema_, "write the schema applied, with its levels, to FILE.yaml")
        ->type_name("FILE.yaml");
    paths_.writes("--save-schema", save_schema_);
    app_->add_option("--filters", filters_,
                     "HDF5 filters: none, shuffle, deflate=N (1..9) or shuffle,deflate=N (default shuffle,deflate=1)")
        ->type_name("SPEC");
    app_->add_option("--chunk-rows", chunk_rows_, "rows per HDF5 chunk")
        ->check(whole_number_in(1, io::kMaxChunkRows))
        ->type_name("N");
    add_report_option(*app_, paths_, report_);
    app_->add_option("--max-categorical-levels", max_levels_,
                     "inference: an integer column with at most N distinct values is categorical (default 1000)")
        ->check(whole_number_in(0, std::numeric_limits<std::int32_t>::max()))
        ->type_name("N");
    app_->add_option("--delimiter", delimiter_, "field delimiter: one character, or 'tab' (default ',')")
        ->type_name("C");
    return app_;
  }

  void run(const RunContext& context) override {
    // Everything the command line can get wrong is checked before the file is read.
    io::CsvImportOptions options;
    for (const auto& text : roles_) io::add_role_assignment(options, text);
    for (const auto& text : types_) io::add_type_assignment(options, text);
    options.max_categorical_levels = max_levels_;
    if (delimiter_) options.delimiter = io::parse_delimiter(*delimiter_);
    io::Hdf5WriteOptions write_options = data_output_options(context, filters_);
    write_options.chunk_rows = chunk_rows_;
    io::ensure_output_directory_writable(output_);
    if (save_schema_) io::ensure_output_directory_writable(*save_schema_);
    if (schema_) options.schema = io::load_schema(*schema_);

    RunReport report(context);
    StepRecord& step = report.add_step("import");
    step.parameters = {
        {"input", input_.string()},
        {"output", output_.string()},
        {"schema", schema_ ? nlohmann::json(schema_->string()) : nlohmann::json(nullptr)},
        {"role", roles_},
        {"type", types_},
        {"save-schema", save_schema_ ? nlohmann::json(save_schema_->string()) : nlohmann::json(nullptr)},
        {"filters", io::to_string(write_options.filters)},
        {"chunk-rows", chunk_rows_},
        {"max-categorical-levels", max_levels_},
        {"delimiter", std::string(1, options.delimiter)},
    };
    StepTimer timer(step);

    const auto parse_start = std::chrono::steady_clock::now();
    io::CsvImportResult imported = io::import_csv(input_, options);
    const double parse_seconds = seconds_since(parse_start);
    const bool reordered = sort_by_household(imported.table, imported.warnings);
    if (!schema_) std::cout << io::schema_to_yaml(imported.schema, false) << std::flush;

    // The schema file is committed only once the data file is, so a failed run leaves neither.
    std::optional<io::AtomicOutput> schema_output;
    if (save_schema_) {
      schema_output.emplace(*save_schema_, context.permissions);
      write_whole_file(schema_output->temp_path(), *save_schema_, io::schema_to_yaml(imported.schema, true));
    }
    const auto write_start = std::chrono::steady_clock::now();
    write_options.provenance = io::make_provenance(context.command_line(), imported.file_digest);
    io::write_table(imported.table, output_, write_options);
    const double write_seconds = seconds_since(write_start);
    if (schema_output) schema_output->commit();
    timer.stop();

    const io::Schema& applied = imported.schema;
    std::array<std::int64_t, 3> counts{};  // by VariableType
    for (const auto& spec : applied.variables) ++counts[static_cast<std::size_t>(spec.type)];
    const Table& table = imported.table;
    const double megabytes = static_cast<double>(imported.data_bytes) / 1e6;
    const double rate = parse_seconds > 0.0 ? megabytes / parse_seconds : 0.0;

    report.add_input("input", input_, table.row_count(), imported.file_digest);
    report.add_output(output_, OutputKind::kData);
    if (save_schema_) report.add_output(*save_schema_, OutputKind::kSchema);
    step.results = {
        {"rows", table.row_count()},
        {"variables", table.column_count()},
        {"categorical", counts[static_cast<std::size_t>(VariableType::kCategorical)]},
        {"continuous", counts[static_cast<std::size_t>(VariableType::kContinuous)]},
        {"id", counts[static_cast<std::size_t>(VariableType::kId)]},
        {"gzip", imported.gzip},
        {"sorted_by_household", reordered},
        {"bytes_read", imported.file_bytes},
        {"csv_bytes", imported.data_bytes},
        {"parse_seconds", parse_seconds},
        {"write_seconds", write_seconds},
        {"parse_megabytes_per_second", rate},
    };
    step.warnings = imported.warnings;
    for (const auto& warning : imported.warnings) spdlog::warn("{}: {}", input_.string(), warning);
    spdlog::info(
        "import: {} rows x {} variables ({} categorical, {} continuous, {} id) from {:.1f} MB of CSV{} in {:.2f} s "
        "({:.0f} MB/s); HDF5 written in {:.2f} s",
        table.row_count(), table.column_count(), counts[static_cast<std::size_t>(VariableType::kCategorical)],
        counts[static_cast<std::size_t>(VariableType::kContinuous)],
        counts[static_cast<std::size_t>(VariableType::kId)], megabytes, imported.gzip ? " (gzip)" : "", parse_seconds,
        rate, write_seconds);
    report.write(distributed::Communicator::world(), report_);
  }

 private:
  CLI::App* app_ = nullptr;
  std::filesystem::path input_;
  std::filesystem::path output_;
  std::optional<std::filesystem::path> schema_;
  std::vector<std::string> roles_;
  std::vector<std::string> types_;
  std::optional<std::filesystem::path> save_schema_;
  std::optional<std::string> filters_;
  std::int64_t chunk_rows_ = io::kDefaultChunkRows;
  std::optional<std::filesystem::path> report_;
  std::int64_t max_levels_ = 1000;
  std::optional<std::string> delimiter_;
};

}  // namespace

std::unique_ptr<Command> make_import_command() { return std::make_unique<ImportCommand>(); }

}  // namespace sdc::engine
