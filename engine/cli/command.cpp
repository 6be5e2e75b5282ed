#include "engine/cli/command.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace sdc::engine {

namespace {

std::string quoted_command_line(const std::vector<std::string>& argv) {
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

}  // namespace

std::string RunContext::command_line() const { return quoted_command_line(argv); }

std::string RunContext::release_safe_command_line() const {
  std::vector<std::string> safe = argv;
  if (!safe.empty()) safe.front() = std::filesystem::path(safe.front()).filename().string();
  std::vector<io::PathUse> longest_first = paths;  // a directory's path is a prefix of its files'
  std::sort(longest_first.begin(), longest_first.end(),
            [](const io::PathUse& a, const io::PathUse& b) { return a.path.native().size() > b.path.native().size(); });
  for (const io::PathUse& use : longest_first) {
    const std::string full = use.path.string();
    const std::string base = use.path.filename().string();
    if (full.empty() || full == base) continue;
    for (std::string& arg : safe)
      for (auto at = arg.find(full); at != std::string::npos; at = arg.find(full, at + base.size()))
        arg.replace(at, full.size(), base);
  }
  return quoted_command_line(safe);
}

void PathFlags::declare(std::string flag, io::PathAccess access, Values values) {
  declared_.push_back({std::move(flag), access, std::move(values)});
}

void PathFlags::reads(std::string flag, const std::filesystem::path& value) {
  declare(std::move(flag), io::PathAccess::kRead, [&value] { return std::vector<std::filesystem::path>{value}; });
}

void PathFlags::reads(std::string flag, const std::optional<std::filesystem::path>& value) {
  declare(std::move(flag), io::PathAccess::kRead, [&value] {
    return value ? std::vector<std::filesystem::path>{*value} : std::vector<std::filesystem::path>{};
  });
}

void PathFlags::writes(std::string flag, const std::filesystem::path& value) {
  declare(std::move(flag), io::PathAccess::kWrite, [&value] { return std::vector<std::filesystem::path>{value}; });
}

void PathFlags::writes(std::string flag, const std::optional<std::filesystem::path>& value) {
  declare(std::move(flag), io::PathAccess::kWrite, [&value] {
    return value ? std::vector<std::filesystem::path>{*value} : std::vector<std::filesystem::path>{};
  });
}

std::vector<io::PathUse> PathFlags::uses() const {
  std::vector<io::PathUse> uses;
  for (const Declared& declared : declared_)
    for (auto& path : declared.values())
      if (!path.empty()) uses.push_back({declared.flag, std::move(path), declared.access});
  return uses;
}

void add_input_option(CLI::App& app, PathFlags& paths, std::filesystem::path& input, bool positional) {
  auto* flag = app.add_option(positional ? "input,--input,-i" : "--input,-i", input, "input file")->required();
  flag->type_name("FILE");
  paths.reads("--input", input);
}

void add_output_option(CLI::App& app, PathFlags& paths, std::filesystem::path& output) {
  app.add_option("--output,-o", output, "output file (written under a temporary name, renamed when complete)")
      ->required()
      ->type_name("FILE");
  paths.writes("--output", output);
}

void add_report_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& report) {
  app.add_option("--report", report, "JSON run report (docs/report-schema.json)")->type_name("FILE.json");
  paths.writes("--report", report);
}

void add_seed_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& seed_file) {
  app.add_option("--seed-file", seed_file,
                 "file holding the seed (owner-only); without it the SDC_SEED environment variable is used")
      ->type_name("FILE");
  paths.reads("--seed-file", seed_file);
}

namespace {
constexpr const char* kVariableListType = "VAR[,VAR...]";
}  // namespace

CLI::Option* add_variable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& names,
                                      const std::string& help) {
  // No extra arguments: `--keys a,b data.h5` must leave data.h5 to the positional input.
  return app.add_option(flag, names, help)->delimiter(',')->allow_extra_args(false)->type_name(kVariableListType);
}

std::vector<std::string> repeated_list_items(const CLI::App& app) {
  std::vector<std::string> problems;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_type_name() != kVariableListType) continue;
    std::set<std::string> seen;
    for (const std::string& name : option->results())
      if (!seen.insert(name).second)
        problems.push_back("--" + option->get_lnames().front() + ": variable '" + name + "' is given twice");
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* candidate) { return candidate->parsed(); })) {
    auto more = repeated_list_items(*sub);
    problems.insert(problems.end(), more.begin(), more.end());
  }
  return problems;
}

io::Hdf5WriteOptions data_output_options(const RunContext& context, const std::optional<std::string>& filters) {
  io::Hdf5WriteOptions options;
  if (filters) options.filters = io::parse_filters(*filters);
  options.permissions = context.permissions;
  return options;
}

CLI::Validator whole_number_in(std::int64_t minimum, std::int64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc() && end == text.data() + text.size() && value >= minimum && value <= maximum) return {};
        return "expected a whole number from " + std::to_string(minimum) + " to " + std::to_string(maximum) +
               ", got '" + text + "'";
      },
      "INT in [" + std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
}

void add_mode_option(CLI::App& app, Mode& mode) {
  const std::map<std::string, Mode> modes{{"native", Mode::kNative}, {"compat", Mode::kCompat}};
  app.add_option("--mode", mode, "native (default) or compat (reproduce the reference implementation)")
      ->transform(CLI::CheckedTransformer(modes, CLI::ignore_case))
      ->type_name("native|compat");
}

}  // namespace sdc::engine
