#include "engine/compare/masked_input.h"

#include <algorithm>

#include "distributed/collective_error.h"
#include "io/hdf5_table.h"
#include "kernels/core/error.h"

namespace sdc::engine {

Table read_companion_part(const distributed::Communicator& comm, const TablePart& part,
                          const std::filesystem::path& companion, const std::vector<std::string>& variables,
                          const std::optional<std::string>& id_variable, const CompanionWording& wording) {
  const io::Hdf5TableReader reader(companion);
  const io::FileSummary& summary = reader.summary();
  const std::string input_path = part.summary.path.string();
  if (summary.row_count != part.summary.row_count)
    throw InvalidInput(companion.string() + ": " + std::to_string(summary.row_count) + " records, " +
                       wording.input_name + " '" + input_path + "' " + std::to_string(part.summary.row_count) + ": " +
                       wording.same_records);
  const auto find = [](const io::FileSummary& file, const std::string& name) -> const VariableInfo* {
    for (const VariableInfo& variable : file.variables)
      if (variable.name == name) return &variable;
    return nullptr;
  };
  if (wording.variable_type) {
    for (const std::string& name : variables) {
      const VariableInfo* variable = find(summary, name);
      if (variable == nullptr)
        throw InvalidInput(companion.string() + ": variable '" + name + "' not found: " + wording.missing_reason);
      if (variable->type != *wording.variable_type)
        throw InvalidInput(companion.string() + ": variable '" + name + "' is " +
                           std::string(to_string(variable->type)) + ", expected " +
                           std::string(to_string(*wording.variable_type)) + ": " + wording.type_reason);
    }
  }
  std::optional<std::string> id = id_variable;
  if (!id) {
    for (const VariableInfo& variable : part.summary.variables) {
      if (variable.role != VariableRole::kIdentifier || variable.type != VariableType::kId) continue;
      const VariableInfo* other = find(summary, variable.name);
      if (other != nullptr && other->type == VariableType::kId) {
        id = variable.name;
        break;
      }
    }
  }
  io::Hdf5ReadOptions options;
  options.variables = variables;
  if (id && std::find(variables.begin(), variables.end(), *id) == variables.end()) options.variables.push_back(*id);
  options.first_row = part.range.first;
  options.row_count = part.range.count;
  // Values the reader refuses may lie in one rank's rows only: every rank throws, none waits.
  std::optional<Table> read;
  distributed::agree_on_error(comm, [&] { read.emplace(reader.read(options)); });
  if (!id) return std::move(*read);

  const auto input_ids = part.table.require(*id, VariableType::kId).ids();
  const auto companion_ids = read->require(*id, VariableType::kId).ids();
  std::optional<distributed::RowProblem> first;
  for (std::size_t i = 0; i < input_ids.size(); ++i) {
    if (input_ids[i] == companion_ids[i]) continue;
    const std::int64_t row = part.range.first + static_cast<std::int64_t>(i);
    first = distributed::RowProblem{row, companion.string() + ": row id " + std::to_string(row) + ": identifier '" +
                                             *id + "' differs from " + wording.input_name + " '" + input_path +
                                             "': " + wording.same_records};
    break;
  }
  distributed::throw_first_row_problem(comm, first);
  return std::move(*read);
}

Table read_masked_part(const distributed::Communicator& comm, const TablePart& original,
                       const std::filesystem::path& masked, const std::vector<std::string>& variables,
                       const std::optional<std::string>& id_variable) {
  return read_companion_part(
      comm, original, masked, variables, id_variable,
      {"the original", "a masked file holds the records of its original, in the same order", std::nullopt, {}, {}});
}

}  // namespace sdc::engine
