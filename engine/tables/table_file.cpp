#include "engine/tables/table_file.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/core/error.h"

namespace sdc::engine {
namespace {

/// Level labels must be distinct; nested geography may repeat a label on two levels: those get the
/// variable's name in front ("district:11").
std::vector<std::string> distinct_labels(const TableDimension& dimension) {
  const tables::Hierarchy& h = dimension.hierarchy;
  std::vector<std::string> labels = h.codes;
  std::vector<std::string> sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) return labels;
  for (std::size_t p = 1; p < labels.size(); ++p) {
    const auto level = static_cast<std::size_t>(h.depth[p] - 1);
    const std::string& variable =
        level < dimension.variables.size() ? dimension.variables[level] : dimension.variables.back();
    labels[p] = variable + ":" + labels[p];
  }
  return labels;
}

}  // namespace

VariableInfo cell_variable(const std::string& name) {
  VariableInfo info;
  info.name = name;
  info.type = VariableType::kContinuous;
  info.role = VariableRole::kOther;
  return info;
}

std::vector<Column> published_count_columns(std::span<const std::int64_t> counts,
                                            std::span<const std::int64_t> published) {
  SDC_CHECK(counts.size() == published.size(), "a published count per cell");
  std::vector<double> published_column(counts.size());
  std::vector<double> noise_column(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) {
    published_column[r] = static_cast<double>(published[r]);
    noise_column[r] = static_cast<double>(published[r] - counts[r]);
  }
  std::vector<Column> columns;
  columns.push_back(Column::continuous(cell_variable(cell_columns::kPublished), std::move(published_column)));
  columns.push_back(Column::continuous(cell_variable(cell_columns::kNoise), std::move(noise_column)));
  return columns;
}

std::vector<std::string> sensitivity_labels() { return {"safe", "empty", "frequency", "p-percent", "dominance"}; }

std::string sensitivity_label(tables::SensitivityStatus status) {
  return sensitivity_labels().at(static_cast<std::size_t>(status));
}

void write_table_file(const TableFileContents& contents, const std::filesystem::path& output,
                      const io::Hdf5WriteOptions& options) {
  const TableLayout& layout = *contents.layout;
  const tables::CellTable& cells = *contents.cells;
  const tables::TabulationOptions& figures = contents.options;
  const auto rows = static_cast<std::int64_t>(cells.cell_count());
  const std::size_t n = cells.cell_count();
  Table table(output.string(), rows, 0);

  std::vector<std::vector<std::int32_t>> positions(layout.dimensions.size(), std::vector<std::int32_t>(n));
  for (std::size_t c = 0; c < n; ++c) {
    const auto p = tables::cell_positions(cells.cells[c], cells.sizes);
    for (std::size_t d = 0; d < p.size(); ++d) positions[d][c] = p[d];
  }
  for (std::size_t d = 0; d < layout.dimensions.size(); ++d) {
    const TableDimension& dimension = layout.dimensions[d];
    VariableInfo info;
    info.name = dimension.name;
    info.role = VariableRole::kKey;
    info.levels = distinct_labels(dimension);
    info.level_parents = dimension.hierarchy.parent;
    table.add_column(Column::categorical(std::move(info), std::move(positions[d])));
  }
  const auto add = [&](const std::string& name, auto&& value_of) {
    if (table.find(name) != nullptr)
      throw InvalidInput(output.string() + ": a dimension is named '" + name +
                         "', the name of a cell variable of table files: rename the variable");
    std::vector<double> values(n);
    for (std::size_t c = 0; c < n; ++c) values[c] = value_of(cells.summaries[c]);
    table.add_column(Column::continuous(cell_variable(name), std::move(values)));
  };
  using Summary = tables::CellSummary;
  add(cell_columns::kCount, [](const Summary& s) { return static_cast<double>(s.count); });
  const bool weighted = !figures.weights.empty();
  if (weighted) add(cell_columns::kWeightedCount, [](const Summary& s) { return s.weighted_count.value(); });
  if (!figures.values.empty()) {
    add(cell_columns::kValue, [](const Summary& s) { return s.value.value(); });
    if (weighted) add(cell_columns::kWeightedValue, [](const Summary& s) { return s.weighted_value.value(); });
    add(cell_columns::kContributors, [](const Summary& s) { return static_cast<double>(s.contributors); });
    for (int k = 0; k < figures.top_count; ++k) {
      const auto j = static_cast<std::size_t>(k);
      add(cell_columns::kTopPrefix + std::to_string(k + 1),
          [j](const Summary& s) { return j < s.top.size() ? s.top[j].value : 0.0; });
      if (weighted)
        add(cell_columns::kTopWeightPrefix + std::to_string(k + 1),
            [j](const Summary& s) { return j < s.top.size() ? s.top[j].weight : 0.0; });
    }
  }
  if (!figures.record_keys.empty()) {
    add(cell_columns::kCellKey, [](const Summary& s) { return static_cast<double>(s.key_sum); });
    if (!figures.values.empty())
      add(cell_columns::kCellKeyNonzero, [](const Summary& s) { return static_cast<double>(s.key_sum_nonzero); });
    const auto modulus = static_cast<double>(figures.key_modulus);
    add(cell_columns::kKeyModulus, [modulus](const Summary&) { return modulus; });
  }
  if (contents.statuses != nullptr) {
    VariableInfo info;
    info.name = cell_columns::kStatus;
    info.role = VariableRole::kOther;
    info.levels = sensitivity_labels();
    std::vector<std::int32_t> codes(n);
    for (std::size_t c = 0; c < n; ++c) codes[c] = static_cast<std::int32_t>((*contents.statuses)[c]);
    table.add_column(Column::categorical(std::move(info), std::move(codes)));
  }
  validate_table(table);
  io::write_table(table, output, options);
}

std::vector<TableFileDimension> table_file_dimensions(const Table& table, const std::string& source) {
  std::vector<TableFileDimension> dimensions;
  for (const Column& column : table.columns()) {
    const VariableInfo& info = column.info();
    if (info.type != VariableType::kCategorical || info.role != VariableRole::kKey) continue;
    std::vector<std::string> codes;
    std::vector<std::int32_t> parent_index;
    if (info.levels.empty() || (!info.level_parents.empty() && info.level_parents.front() != -1))
      throw InvalidInput(source + ": dimension '" + info.name + "' does not start with its total");
    for (std::size_t code = 1; code < info.levels.size(); ++code) {
      codes.push_back(info.levels[code]);
      const std::int32_t parent = info.level_parents.empty() ? 0 : info.level_parents[code];
      if (parent < 0)
        throw InvalidInput(source + ": dimension '" + info.name + "' has a second top code '" + info.levels[code] +
                           "'");
      parent_index.push_back(parent - 1);
    }
    TableFileDimension dimension{info.name, tables::hierarchy_from_tree(info.name, codes, parent_index)};
    if (dimension.hierarchy.codes.size() != info.levels.size() ||
        !std::equal(dimension.hierarchy.codes.begin() + 1, dimension.hierarchy.codes.end(), info.levels.begin() + 1))
      throw InvalidInput(source + ": the codes of dimension '" + info.name +
                         "' are not in hierarchy order (each code before its descendants)");
    dimensions.push_back(std::move(dimension));
  }
  if (dimensions.empty() || table.find(cell_columns::kCount) == nullptr)
    throw InvalidInput(source + ": not a table file (docs/tables.md): it needs key variables as dimensions and a '" +
                       cell_columns::kCount + "' variable");
  return dimensions;
}

}  // namespace sdc::engine
