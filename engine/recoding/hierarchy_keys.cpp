#include "engine/recoding/hierarchy_keys.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "distributed/collective_error.h"
#include "distributed/compose/recoding.h"
#include "engine/flags.h"
#include "io/hierarchy_file.h"
#include "io/sha256.h"
#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

constexpr std::size_t kListedUnknownValues = 20;

std::optional<std::filesystem::path> file_in_directory(const std::filesystem::path& directory,
                                                       const std::string& variable) {
  std::optional<std::filesystem::path> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = "_" + variable + ".csv";
    const bool matches = name == variable + ".csv" || (name.size() > suffix.size() && name.ends_with(suffix));
    if (!matches || !entry.is_regular_file()) continue;
    if (found)
      throw UsageError("--hierarchies: two hierarchy files for variable '" + variable + "' in " + directory.string() +
                       ": " + found->filename().string() + " and " + name);
    found = entry.path();
  }
  if (error) throw UsageError("--hierarchies: cannot list " + directory.string() + ": " + error.message());
  return found;
}

}  // namespace

std::string shortest_decimal(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof(text), value);
  return error == std::errc() ? std::string(text, end) : std::string();
}

std::map<std::string, std::filesystem::path> hierarchy_files(const std::vector<std::string>& variables,
                                                             const std::optional<std::filesystem::path>& directory,
                                                             const std::vector<std::string>& entries) {
  std::map<std::string, std::filesystem::path> files;
  for (const std::string& entry : entries) {
    const auto [variable, file] = split_variable_entry("--hierarchy", entry, "VAR=FILE");
    if (std::find(variables.begin(), variables.end(), variable) == variables.end())
      throw UsageError("--hierarchy: variable '" + variable + "' is not one of the variables recoded (" + [&] {
        std::string list;
        for (const auto& name : variables) list += (list.empty() ? "" : ",") + name;
        return list;
      }() + ")");
    if (!files.emplace(variable, file).second)
      throw UsageError("--hierarchy: variable '" + variable + "' is given twice");
  }
  for (const std::string& variable : variables) {
    if (files.contains(variable)) continue;
    std::optional<std::filesystem::path> file;
    if (directory) file = file_in_directory(*directory, variable);
    if (!file)
      throw UsageError("no hierarchy for variable '" + variable + "': give --hierarchy " + variable +
                       "=FILE, or --hierarchies DIR with a file <prefix>_" + variable + ".csv" +
                       (directory ? " (none in " + directory->string() + ")" : std::string()));
    files.emplace(variable, *file);
  }
  return files;
}

std::vector<std::filesystem::path> declared_hierarchy_files(const std::vector<std::string>& variables,
                                                            const std::optional<std::filesystem::path>& directory,
                                                            const std::vector<std::string>& entries) {
  std::vector<std::filesystem::path> paths;
  try {
    for (const auto& [variable, file] : hierarchy_files(variables, directory, entries)) paths.push_back(file);
  } catch (const UsageError&) {
    // The step names the problem when it runs; a declaration only lists what it can resolve.
  }
  return paths;
}

std::vector<std::int32_t> leaves_of(const distributed::Communicator& comm, const std::filesystem::path& input,
                                    const Table& table, const Column& column,
                                    const recoding::GeneralizationHierarchy& hierarchy) {
  const std::string where = input.string() + ": variable '" + column.name() + "'";
  const std::string file = std::filesystem::path(hierarchy.source()).filename().string();
  std::vector<std::int32_t> leaves(static_cast<std::size_t>(table.row_count()), kMissingCode);
  if (column.type() == VariableType::kCategorical) {
    const auto& labels = column.info().levels;
    const auto counts =
        distributed::distributed_code_counts(comm, column.codes(), static_cast<std::int32_t>(labels.size()));
    std::vector<std::int32_t> leaf_of_code(labels.size(), kMissingCode);
    std::vector<std::string> unknown;
    for (std::size_t code = 0; code < labels.size(); ++code) {
      leaf_of_code[code] = hierarchy.leaf_index(labels[code]);
      if (leaf_of_code[code] < 0 && counts[code] > 0) unknown.push_back(labels[code]);
    }
    if (!unknown.empty()) {
      std::string listed;
      for (std::size_t i = 0; i < std::min(unknown.size(), kListedUnknownValues); ++i)
        listed += (i == 0 ? "'" : ", '") + unknown[i] + "'";
      throw InvalidInput(where + ": " + std::to_string(unknown.size()) + " value(s) in the data are no leaf of " +
                         "the hierarchy " + file + ": " + listed +
                         (unknown.size() > kListedUnknownValues ? ", ..." : ""));
    }
    const auto codes = column.codes();
    for (std::size_t r = 0; r < leaves.size(); ++r)
      if (codes[r] >= 0) leaves[r] = leaf_of_code[static_cast<std::size_t>(codes[r])];
    return leaves;
  }
  if (column.type() != VariableType::kContinuous)
    throw InvalidInput(where + " is an id; a hierarchy recodes categorical and continuous variables");
  std::optional<distributed::RowProblem> problem;
  const auto values = column.values();
  for (std::size_t r = 0; r < leaves.size() && !problem; ++r) {
    if (std::isnan(values[r])) continue;
    const std::string text = shortest_decimal(values[r]);
    leaves[r] = hierarchy.leaf_index(text);
    if (leaves[r] < 0) {
      const std::int64_t row = table.first_row_id() + static_cast<std::int64_t>(r);
      problem = distributed::RowProblem{
          row, where + ", row " + std::to_string(row) + ": value " + text + " is no leaf of the hierarchy " + file};
    }
  }
  distributed::throw_first_row_problem(comm, problem);
  return leaves;
}

void recode_to_level(Column& column, std::span<const std::int32_t> leaves,
                     const recoding::GeneralizationHierarchy& hierarchy, std::int32_t level) {
  const std::vector<std::int32_t> ancestor = hierarchy.recoding(hierarchy.labels(0), column.name(), level);
  std::vector<std::int32_t> codes(leaves.size(), kMissingCode);
  for (std::size_t r = 0; r < leaves.size(); ++r)
    if (leaves[r] >= 0) codes[r] = ancestor[static_cast<std::size_t>(leaves[r])];

  VariableInfo info = column.info();
  info.type = VariableType::kCategorical;
  if (!role_admits_type(info.role, VariableType::kCategorical)) info.role = VariableRole::kKey;
  const auto labels = hierarchy.labels(level);
  info.levels.assign(labels.begin(), labels.end());
  info.level_parents.clear();
  info.recoding =
      "hierarchy " + std::filesystem::path(hierarchy.source()).filename().string() + " level " + std::to_string(level);
  info.hierarchy_level = level;
  column = Column::categorical(std::move(info), std::move(codes));
}

nlohmann::json hierarchy_digests(const std::map<std::string, recoding::GeneralizationHierarchy>& hierarchies) {
  nlohmann::json digests = nlohmann::json::object();
  for (const auto& [variable, hierarchy] : hierarchies) {
    std::string text;
    for (std::int32_t level = 0; level <= hierarchy.height(); ++level) {
      for (const std::string& label : hierarchy.labels(level)) text += std::to_string(label.size()) + ":" + label;
      text += "|";
      if (level < hierarchy.height())
        for (const std::int32_t parent : hierarchy.parents(level)) text += std::to_string(parent) + ",";
      text += "\n";
    }
    digests[variable] = io::sha256_hex(text);
  }
  return digests;
}

std::map<std::string, recoding::GeneralizationHierarchy> load_hierarchies(
    const distributed::Communicator& comm, const std::map<std::string, std::filesystem::path>& files) {
  std::map<std::string, recoding::GeneralizationHierarchy> hierarchies;
  distributed::agree_on_error(comm, [&] {
    for (const auto& [variable, file] : files) hierarchies.emplace(variable, io::load_hierarchy(file));
  });
  return hierarchies;
}

}  // namespace sdc::engine
