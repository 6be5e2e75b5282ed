#include "engine/compare/masked_input.h"

#include <algorithm>

#include "distributed/collective_error.h"
#include "io/hdf5_table.h"
#include "kernels/core/error.h"

namespace sdc::engine {

Table read_masked_part(const distributed::Communicator& comm, const TablePart& original,
                       const std::filesystem::path& masked, const std::vector<std::string>& variables,
                       const std::optional<std::string>& id_variable) {
  const io::Hdf5TableReader reader(masked);
  const io::FileSummary summary = reader.summary();
  const std::string original_path = original.summary.path.string();
  if (summary.row_count != original.summary.row_count)
    throw InvalidInput(masked.string() + ": " + std::to_string(summary.row_count) + " records, the original '" +
                       original_path + "' " + std::to_string(original.summary.row_count) +
                       ": a masked file holds the records of its original, in the same order");
  const auto holds = [](const io::FileSummary& file, const std::string& name) {
    return std::any_of(file.variables.begin(), file.variables.end(),
                       [&](const VariableInfo& v) { return v.name == name; });
  };
  std::optional<std::string> id = id_variable;
  if (!id) {
    for (const VariableInfo& variable : original.summary.variables)
      if (variable.role == VariableRole::kIdentifier && variable.type == VariableType::kId &&
          holds(summary, variable.name)) {
        id = variable.name;
        break;
      }
  }
  io::Hdf5ReadOptions options;
  options.variables = variables;
  if (id && std::find(variables.begin(), variables.end(), *id) == variables.end()) options.variables.push_back(*id);
  options.first_row = original.range.first;
  options.row_count = original.range.count;
  Table part = reader.read(options);
  if (!id) return part;

  const auto original_ids = original.table.require(*id, VariableType::kId).ids();
  const auto masked_ids = part.require(*id, VariableType::kId).ids();
  std::optional<distributed::RowProblem> first;
  for (std::size_t i = 0; i < original_ids.size(); ++i) {
    if (original_ids[i] == masked_ids[i]) continue;
    const std::int64_t row = original.range.first + static_cast<std::int64_t>(i);
    first = distributed::RowProblem{row, masked.string() + ": row id " + std::to_string(row) + ": identifier '" + *id +
                                             "' differs from the original '" + original_path +
                                             "': a masked file holds the records of its original, in the same order"};
    break;
  }
  distributed::throw_first_row_problem(comm, first);
  return part;
}

}  // namespace sdc::engine
