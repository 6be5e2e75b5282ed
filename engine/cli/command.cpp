#include "engine/cli/command.h"

#include <charconv>
#include <map>

namespace sdc::engine {

std::string RunContext::command_line() const {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    if (arg.find_first_of(" \t\"'") != std::string::npos) {
      out += '\'';
      for (char c : arg) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    } else {
      out += arg;
    }
  }
  return out;
}

void add_input_option(CLI::App& app, std::filesystem::path& input, bool positional) {
  auto* flag = app.add_option(positional ? "input,--input,-i" : "--input,-i", input, "input file")->required();
  flag->type_name("FILE");
}

void add_output_option(CLI::App& app, std::filesystem::path& output) {
  app.add_option("--output,-o", output, "output file (written under a temporary name, renamed when complete)")
      ->required()
      ->type_name("FILE");
}

void add_report_option(CLI::App& app, std::optional<std::filesystem::path>& report) {
  app.add_option("--report", report, "JSON run report (docs/report-schema.json)")->type_name("FILE.json");
}

void add_seed_option(CLI::App& app, std::optional<std::filesystem::path>& seed_file) {
  app.add_option("--seed-file", seed_file,
                 "file holding the seed (owner-only); without it the SDC_SEED environment variable is used")
      ->type_name("FILE");
}

CLI::Option* add_variable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& names,
                                      const std::string& help) {
  // No extra arguments: `--keys a,b data.h5` must leave data.h5 to the positional input.
  return app.add_option(flag, names, help)->delimiter(',')->allow_extra_args(false)->type_name("VAR[,VAR...]");
}

io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters) {
  io::Hdf5WriteOptions options;
  if (filters) options.filters = io::parse_filters(*filters);
  options.permissions = context.permissions;
  return options;
}

CLI::Validator whole_number_at_least(std::int64_t minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || value < minimum)
          return "expected a whole number >= " + std::to_string(minimum) + ", got '" + text + "'";
        return {};
      },
      "INT>=" + std::to_string(minimum));
}

void add_mode_option(CLI::App& app, Mode& mode) {
  const std::map<std::string, Mode> modes{{"native", Mode::kNative}, {"compat", Mode::kCompat}};
  app.add_option("--mode", mode, "native (default) or compat (reproduce the reference implementation)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case))
      ->type_name("native|compat");
}

}  // namespace sdc::engine
