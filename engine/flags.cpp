#include "engine/flags.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "engine/checkpoint.h"
#include "kernels/core/error.h"

namespace sdc::engine {

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

void add_masked_option(CLI::App& app, PathFlags& paths, std::filesystem::path& masked) {
  app.add_option("--masked", masked, "the masked file: the records of --input, in the same order, after masking")
      ->required()
      ->type_name("FILE");
  paths.reads("--masked", masked);
}

void add_id_option(CLI::App& app, std::optional<std::string>& id) {
  app.add_option("--id", id,
                 "identifier variable that must be equal row by row in both files (default: the input's first "
                 "identifier variable that the masked file holds too)")
      ->type_name("VAR");
}

void add_report_option(CLI::App& app, PathFlags& paths, std::optional<std::filesystem::path>& report) {
  app.add_option("--report", report, "JSON run report (docs/report-schema.json)")->type_name("FILE.json");
  paths.writes("--report", report);
}

void add_filters_option(CLI::App& app, std::string& filters) {
  app.add_option("--filters", filters, "HDF5 filters of the output: none, shuffle, deflate=N or shuffle,deflate=N");
}

void add_resume_flag(CLI::App& app, PathFlags& paths, const std::filesystem::path& output, bool& resume, bool seeded) {
  paths.declare("--output's checkpoint", io::PathAccess::kWrite, [&output] {
    return output.empty() ? std::vector<std::filesystem::path>{}
                          : std::vector<std::filesystem::path>{checkpoint_path(output)};
  });
  app.add_flag("--resume", resume,
               seeded ? "skip the step when the output exists and was made from the same input, parameters and seed"
                      : "skip the step when the output exists and was made from the same input and parameters");
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

std::string join_list(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : separator) + items[i];
  return out;
}

std::vector<std::string> split_list(const std::string& text, char separator) {
  auto trim = [](const std::string& item) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) return std::string();
    return item.substr(first, item.find_last_not_of(" \t") - first + 1);
  };
  std::vector<std::string> items;
  std::size_t begin = 0;
  if (text.empty()) return items;
  for (std::size_t end = text.find(separator); end != std::string::npos; end = text.find(separator, begin)) {
    items.push_back(trim(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  items.push_back(trim(text.substr(begin)));
  return items;
}

constexpr const char* kRepeatableListType = "VAR[,VAR...] (repeatable)";

CLI::Option* add_repeatable_list_option(CLI::App& app, const std::string& flag, std::vector<std::string>& lists,
                                        const std::string& help) {
  return app.add_option(flag, lists, help)->allow_extra_args(false)->type_name(kRepeatableListType);
}

bool is_repeatable_list_option(const CLI::Option& option) { return option.get_type_name() == kRepeatableListType; }

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

std::pair<std::string, std::string> split_variable_entry(const std::string& flag, const std::string& entry,
                                                         const std::string& form) {
  const auto equals = entry.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == entry.size())
    throw UsageError(flag + ": expected " + form + ", got '" + entry + "'");
  return {entry.substr(0, equals), entry.substr(equals + 1)};
}

std::vector<std::string> entry_variables(const std::vector<std::string>& entries) {
  std::vector<std::string> variables;
  for (const auto& entry : entries) variables.push_back(entry.substr(0, entry.find('=')));
  return variables;
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
