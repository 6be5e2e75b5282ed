#include "engine/tables/tabulate_step.h"

// A table from microdata (docs/tables.md): the dimensions' hierarchies are resolved on every rank
// (geography from the nesting seen in the data, others from their levels or a hierarchy file), the
// cells are tabulated across the ranks (distributed/compose/tabulation.h), and the coordinator adds
// each cell's sensitivity and writes the table file, and on request the additivity equations.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "distributed/collective_error.h"
#include "distributed/compose/tabulation.h"
#include "engine/flags.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "engine/tables/table_file.h"
#include "io/atomic_output.h"
#include "io/input_file.h"
#include "io/sha256.h"
#include "kernels/core/error.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/hierarchy.h"
#include "kernels/tables/sensitivity.h"

namespace sdc::engine {
namespace {

constexpr std::int64_t kMaxKeyDecimals = 9;

struct HierarchyFile {
  std::string variable;
  std::filesystem::path path;
};

std::uint64_t power_of_ten(std::int64_t decimals) {
  std::uint64_t m = 1;
  for (std::int64_t i = 0; i < decimals; ++i) m *= 10;
  return m;
}

class TabulateStepImpl final : public TabulateStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const Parsed parsed = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    StepFrame frame(context, "table tabulate", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    nlohmann::json identity = step.parameters;
    for (const HierarchyFile& file : parsed.hierarchy_files)
      identity["hierarchy-sha256"][file.variable] =
          io::sha256_hex(io::read_input_file(file.path, "--hierarchy", io::kMaxTextInputBytes));
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "table tabulate", identity, {}, std::nullopt, {}}, write_options, clock);
    const Table& records = opened.part.table;

    TableLayout layout = resolve_layout(comm, records, parsed);
    std::vector<tables::TabulationDimension> dimensions;
    for (const TableDimension& dimension : layout.dimensions)
      dimensions.push_back({dimension.codes, dimension.position_of_code, dimension.hierarchy.parent});
    check_cell_space(layout);

    tables::TabulationOptions tabulation;
    tabulation.first_row_id = records.first_row_id();
    tabulation.top_count = options.value ? static_cast<int>(options.top_contributions) : 0;
    tabulation.key_modulus = power_of_ten(options.key_decimals);
    if (options.weight) tabulation.weights = records.require(*options.weight, VariableType::kContinuous).values();
    std::vector<std::uint64_t> keys;
    if (options.value) {
      tabulation.values = records.require(*options.value, VariableType::kContinuous).values();
      check_values(comm, records, tabulation.values, parsed.rules_forbid_negative);
    }
    std::int64_t keys_read_as_zero = 0;
    if (options.record_key) {
      keys = record_keys(comm, records, tabulation.key_modulus, keys_read_as_zero);
      tabulation.record_keys = keys;
    }
    clock.lap("hierarchies");
    tables::CellTable cells = distributed::distributed_tabulation(comm, dimensions, tabulation);
    clock.lap("tabulate");

    nlohmann::json results;
    distributed::agree_on_error(comm, [&] {
      if (!comm.is_coordinator()) return;
      std::vector<tables::SensitivityStatus> statuses = sensitivity(cells, parsed.rules);
      TableFileContents contents{&layout, &cells, statuses.empty() ? nullptr : &statuses, tabulation};
      write_table_file(contents, options.output, write_options);
      if (options.constraints || options.equations) write_equations(layout, cells, statuses, context);
      results = summary(context, layout, cells, statuses, keys_read_as_zero);
    });
    clock.lap("write");
    step.results = nlohmann::json::parse(comm.broadcast_string(results.dump()));
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("table tabulate: {} non-empty cells of {} ({} dimensions)", cells.cell_count(),
                   step.results["cell_space"].get<std::int64_t>(), layout.dimensions.size());
    report.add_output(options.output, OutputKind::kTable);
    if (options.constraints) report.add_output(*options.constraints, OutputKind::kMatrix);
    if (options.equations) report.add_output(*options.equations, OutputKind::kMatrix);
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    if (!(options.geography.size() == 1 && options.geography.front() == "roles"))
      for (const auto& name : options.geography)
        expect_variable(available, name, VariableType::kCategorical, "geography", problems);
    for (const auto& name : options.dimensions)
      expect_variable(available, name, VariableType::kCategorical, "dimensions", problems);
    if (options.value) expect_variable(available, *options.value, VariableType::kContinuous, "value", problems);
    if (options.weight) expect_variable(available, *options.weight, VariableType::kContinuous, "weight", problems);
    if (options.record_key)
      expect_variable(available, *options.record_key, VariableType::kContinuous, "record-key", problems);
  }

  OutputKind output_kind() const override { return OutputKind::kTable; }
  bool keeps_input_variables() const override { return false; }

  /// The table file's variables as far as the flags tell them (a geography of "roles" is named by the
  /// input's finest geography variable, known only when the step runs).
  std::vector<VariableInfo> added_variables() const override {
    std::vector<VariableInfo> out;
    const auto add = [&](std::string name, VariableType type, VariableRole role) {
      VariableInfo info;
      info.name = std::move(name);
      info.type = type;
      info.role = role;
      out.push_back(std::move(info));
    };
    if (!options.geography.empty() && !(options.geography.size() == 1 && options.geography.front() == "roles"))
      add(options.geography.back(), VariableType::kCategorical, VariableRole::kKey);
    for (const auto& name : options.dimensions) add(name, VariableType::kCategorical, VariableRole::kKey);
    add(cell_columns::kCount, VariableType::kContinuous, VariableRole::kOther);
    if (options.weight) add(cell_columns::kWeightedCount, VariableType::kContinuous, VariableRole::kOther);
    if (options.value) add(cell_columns::kValue, VariableType::kContinuous, VariableRole::kOther);
    if (options.record_key) {
      add(cell_columns::kCellKey, VariableType::kContinuous, VariableRole::kOther);
      add(cell_columns::kKeyModulus, VariableType::kContinuous, VariableRole::kOther);
    }
    return out;
  }

 private:
  struct Parsed {
    std::vector<HierarchyFile> hierarchy_files;
    tables::SensitivityRules rules;
    bool rules_forbid_negative = false;
  };

  Parsed parse() const {
    Parsed parsed;
    if (options.geography.empty() && options.dimensions.empty())
      throw UsageError("give the table's dimensions: --geography and/or --dimensions");
    std::set<std::string> seen;
    for (const auto& name : options.geography)
      if (!seen.insert(name).second) throw UsageError("--geography: variable '" + name + "' is given twice");
    for (const auto& name : options.dimensions)
      if (!seen.insert(name).second)
        throw UsageError("--dimensions: variable '" + name + "' is given twice or also in --geography");
    for (const auto& entry : options.hierarchies) {
      const auto equals = entry.find('=');
      if (equals == std::string::npos || equals == 0 || equals + 1 == entry.size())
        throw UsageError("--hierarchy: '" + entry + "' is not VAR=FILE");
      HierarchyFile file{entry.substr(0, equals), entry.substr(equals + 1)};
      if (std::find(options.dimensions.begin(), options.dimensions.end(), file.variable) == options.dimensions.end())
        throw UsageError("--hierarchy: variable '" + file.variable + "' is not one of --dimensions");
      for (const auto& other : parsed.hierarchy_files)
        if (other.variable == file.variable)
          throw UsageError("--hierarchy: variable '" + file.variable + "' has two hierarchy files");
      parsed.hierarchy_files.push_back(std::move(file));
    }
    if (options.top_contributions < 0 || options.top_contributions > tables::kMaxTopContributions)
      throw UsageError(fmt::format("--top-contributions: give 0 to {}", tables::kMaxTopContributions));
    if (options.key_decimals < 1 || options.key_decimals > kMaxKeyDecimals)
      throw UsageError(fmt::format("--key-decimals: give 1 to {}", kMaxKeyDecimals));
    if (options.max_cells < 1) throw UsageError("--max-cells: give a positive number");

    tables::SensitivityRules& rules = parsed.rules;
    rules.weighted = options.weighted_rules;
    if (options.min_frequency) rules.minimum_frequency = *options.min_frequency;
    if (options.p_percent) rules.p_percent = *options.p_percent;
    for (const auto& entry : options.dominance) {
      const auto items = split_list(entry, ',');
      double n = 0.0;
      double k = 0.0;
      if (items.size() != 2 || !parse_number(items[0], n) || !parse_number(items[1], k) || n != std::floor(n))
        throw UsageError("--dominance: '" + entry + "' is not N,K (a whole number of contributors and a percentage)");
      rules.dominance.push_back({static_cast<int>(n), k});
    }
    const bool magnitude_rules = options.p_percent || !options.dominance.empty();
    if (magnitude_rules && !options.value)
      throw UsageError("--p-percent and --dominance apply to magnitude tables: give --value");
    if (options.weighted_rules && !options.weight) throw UsageError("--weighted-rules needs --weight");
    try {
      tables::check_sensitivity_rules(rules, options.value ? static_cast<int>(options.top_contributions) : 0);
    } catch (const ParameterError& error) {
      throw UsageError(error.what());
    }
    parsed.rules_forbid_negative = magnitude_rules;
    return parsed;
  }

  static bool parse_number(const std::string& text, double& out) {
    try {
      std::size_t used = 0;
      out = std::stod(text, &used);
      return used == text.size() && std::isfinite(out);
    } catch (const std::exception&) {
      return false;
    }
  }

  nlohmann::json parameters() const {
    const auto optional = [](const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); };
    return {{"geography", options.geography},
            {"dimensions", options.dimensions},
            {"hierarchy", options.hierarchies.empty() ? nlohmann::json::array() : nlohmann::json(options.hierarchies)},
            {"value", optional(options.value)},
            {"weight", optional(options.weight)},
            {"top-contributions", options.top_contributions},
            {"record-key", optional(options.record_key)},
            {"key-decimals", options.key_decimals},
            {"min-frequency", optional(options.min_frequency)},
            {"p-percent", optional(options.p_percent)},
            {"dominance", options.dominance},
            {"weighted-rules", options.weighted_rules},
            {"max-cells", options.max_cells}};
  }

  /// Collective: the dimensions' hierarchies and where each record's code sits in them.
  TableLayout resolve_layout(const distributed::Communicator& comm, const Table& records, const Parsed& parsed) const {
    TableLayout layout;
    std::vector<std::string> geography = options.geography;
    if (geography.size() == 1 && geography.front() == "roles") {
      std::vector<const Column*> levels;
      for (const Column& column : records.columns())
        if (column.info().role == VariableRole::kGeography) levels.push_back(&column);
      if (levels.empty())
        throw InvalidInput(options.input.string() + ": --geography roles: the input has no geography variable");
      std::sort(levels.begin(), levels.end(),
                [](const Column* a, const Column* b) { return a->info().geography_level < b->info().geography_level; });
      geography.clear();
      for (const Column* column : levels) geography.push_back(column->name());
    }
    std::vector<std::string> all = geography;
    all.insert(all.end(), options.dimensions.begin(), options.dimensions.end());
    const KeyColumns codes = key_columns(records, all);
    reject_missing_codes(comm, options.input, records, codes, all,
                         "a table counts every record in one cell: recode or drop missing values first");
    if (!geography.empty()) {
      const std::span<const std::span<const std::int32_t>> columns(codes.codes.data(), geography.size());
      const auto tuples = distributed::distinct_tuples(comm, columns);
      std::vector<std::int32_t> flat;
      for (const auto& tuple : tuples) flat.insert(flat.end(), tuple.begin(), tuple.end());
      std::vector<std::vector<std::string>> labels;
      for (const auto& name : geography) labels.push_back(records.require(name).info().levels);
      tables::GeographyHierarchy built =
          tables::geography_hierarchy(geography.back(), geography, labels, flat, options.input.string());
      layout.dimensions.push_back({geography.back(), geography, std::move(built.hierarchy),
                                   std::move(built.finest_position), codes.codes[geography.size() - 1]});
    }
    for (std::size_t j = 0; j < options.dimensions.size(); ++j) {
      const std::string& name = options.dimensions[j];
      const std::vector<std::string>& levels = records.require(name).info().levels;
      TableDimension dimension{name, {name}, {}, {}, codes.codes[geography.size() + j]};
      const auto file = std::find_if(parsed.hierarchy_files.begin(), parsed.hierarchy_files.end(),
                                     [&](const HierarchyFile& f) { return f.variable == name; });
      if (file != parsed.hierarchy_files.end()) {
        const std::string text = io::read_input_file(file->path, "--hierarchy", io::kMaxTextInputBytes);
        const std::string source = file->path.string();
        dimension.hierarchy = file->path.extension() == ".hrc" ? tables::parse_hrc(text, source, name)
                                                               : tables::parse_parent_csv(text, source, name);
        dimension.position_of_code = tables::match_leaves(dimension.hierarchy, levels, source, name);
      } else {
        dimension.hierarchy = tables::flat_hierarchy(name, levels);
        dimension.position_of_code.resize(levels.size());
        for (std::size_t code = 0; code < levels.size(); ++code)
          dimension.position_of_code[code] = static_cast<std::int32_t>(code + 1);
      }
      layout.dimensions.push_back(std::move(dimension));
    }
    return layout;
  }

  void check_cell_space(const TableLayout& layout) const {
    std::vector<std::int64_t> sizes;
    long double product = 1.0L;
    std::string shape;
    for (const TableDimension& dimension : layout.dimensions) {
      sizes.push_back(static_cast<std::int64_t>(dimension.hierarchy.size()));
      product *= static_cast<long double>(dimension.hierarchy.size());
      shape += fmt::format("{}{} ({} codes)", shape.empty() ? "" : " x ", dimension.name, dimension.hierarchy.size());
    }
    if (!tables::cell_space_within(sizes, static_cast<std::uint64_t>(options.max_cells)))
      throw ParameterError(fmt::format(
          "table tabulate: the table would have {:.4g} cells ({}), more than --max-cells {}: drop a dimension, "
          "use a coarser hierarchy or raise --max-cells",
          static_cast<double>(product), shape, options.max_cells));
  }

  /// Collective: a magnitude variable must be known (not missing) for every record, and non-negative
  /// where a rule needs it.
  void check_values(const distributed::Communicator& comm, const Table& records, std::span<const double> values,
                    bool forbid_negative) const {
    std::optional<distributed::RowProblem> problem;
    for (std::size_t i = 0; i < values.size() && !problem; ++i) {
      const std::int64_t row = records.first_row_id() + static_cast<std::int64_t>(i);
      if (std::isnan(values[i]))
        problem = distributed::RowProblem{
            row, fmt::format("{}: variable '{}', row id {}: a missing value cannot contribute to a magnitude cell",
                             options.input.string(), *options.value, row)};
      else if (forbid_negative && values[i] < 0.0)
        problem = distributed::RowProblem{
            row, fmt::format("{}: variable '{}', row id {}: a negative contribution, which the p% and dominance "
                             "rules do not allow",
                             options.input.string(), *options.value, row)};
    }
    distributed::throw_first_row_problem(comm, problem);
  }

  /// Collective: the record keys as integers in units of 10^-D; a key of exactly 1 counts as 0.
  std::vector<std::uint64_t> record_keys(const distributed::Communicator& comm, const Table& records,
                                         std::uint64_t modulus, std::int64_t& read_as_zero) const {
    const auto values = records.require(*options.record_key, VariableType::kContinuous).values();
    std::vector<std::uint64_t> keys(values.size());
    std::optional<distributed::RowProblem> problem;
    std::int64_t ones = 0;
    const auto scale = static_cast<double>(modulus);
    for (std::size_t i = 0; i < values.size() && !problem; ++i) {
      const double u = values[i];
      const double scaled = u * scale;
      const double rounded = std::nearbyint(scaled);
      if (!(u >= 0.0 && u <= 1.0) || std::fabs(scaled - rounded) > 1e-6 * std::max(1.0, scaled)) {
        const std::int64_t row = records.first_row_id() + static_cast<std::int64_t>(i);
        problem = distributed::RowProblem{
            row, fmt::format("{}: variable '{}', row id {}: a record key must be a multiple of 1e-{} in [0, 1] "
                             "(see --key-decimals)",
                             options.input.string(), *options.record_key, row, options.key_decimals)};
        break;
      }
      auto k = static_cast<std::uint64_t>(rounded);
      if (k == modulus) {
        k = 0;
        ++ones;
      }
      keys[i] = k;
    }
    distributed::throw_first_row_problem(comm, problem);
    read_as_zero = comm.all_reduce_sum(ones);
    return keys;
  }

  /// Every cell's status, or none when no rule is given. A frequency table's rules read the records
  /// of a cell, a magnitude table's also its largest contributions.
  std::vector<tables::SensitivityStatus> sensitivity(const tables::CellTable& cells,
                                                     const tables::SensitivityRules& rules) const {
    if (!rules.minimum_frequency && !rules.p_percent && rules.dominance.empty()) return {};
    std::vector<tables::SensitivityCell> inputs(cells.cell_count());
    for (std::size_t c = 0; c < cells.cell_count(); ++c) {
      const tables::CellSummary& s = cells.summaries[c];
      // A magnitude cell's contributors are its records of non-zero value, the ones its top contributions
      // list; a record of value 0 adds nothing to protect.
      inputs[c].contributors = options.value ? s.contributors : s.count;
      inputs[c].weighted_count = rules.weighted ? s.weighted_count.value() : static_cast<double>(s.count);
      inputs[c].total = rules.weighted ? s.weighted_value.value() : s.value.value();
      inputs[c].top = s.top;
    }
    std::vector<tables::CellSensitivity> classified;
    try {
      classified =
          tables::classify_cells(inputs, rules, options.value ? static_cast<int>(options.top_contributions) : 0);
    } catch (const InvalidInput& error) {
      throw InvalidInput(options.input.string() + ": variable '" + options.value.value_or("") + "': " + error.what());
    }
    std::vector<tables::SensitivityStatus> statuses(classified.size());
    for (std::size_t c = 0; c < classified.size(); ++c) statuses[c] = classified[c].status;
    return statuses;
  }

  void write_equations(const TableLayout& layout, const tables::CellTable& cells,
                       const std::vector<tables::SensitivityStatus>& statuses, const RunContext& context) const {
    std::vector<tables::DimensionEquations> equations;
    for (const TableDimension& dimension : layout.dimensions)
      equations.push_back(tables::equations_of(dimension.hierarchy));
    if (options.constraints) {
      io::write_stream_atomically(*options.constraints, context.permissions,
                                  [&](std::ostream& out) { tables::write_constraint_matrix_market(out, equations); });
    }
    if (options.equations) {
      // The cell list holds every cell of the space, empty ones as zeros.
      std::int64_t space = 1;
      for (const TableDimension& dimension : layout.dimensions)
        space *= static_cast<std::int64_t>(dimension.hierarchy.size());
      const auto n = static_cast<std::size_t>(space);
      std::vector<double> values(n, 0.0);
      std::vector<double> weights(n, 0.0);
      std::vector<tables::CellStatus> status(n, tables::CellStatus::kZero);
      std::vector<double> lower(n, 0.0);
      std::vector<double> upper(n, 0.0);
      std::vector<double> none(n, 0.0);
      for (std::size_t c = 0; c < cells.cell_count(); ++c) {
        const auto k = static_cast<std::size_t>(cells.cells[c]);
        const tables::CellSummary& s = cells.summaries[c];
        values[k] = options.value ? s.value.value() : static_cast<double>(s.count);
        weights[k] = values[k];
        upper[k] = values[k] > 0.0 ? 2.0 * values[k] : 0.0;
        status[k] = values[k] == 0.0                                         ? tables::CellStatus::kZero
                    : !statuses.empty() && tables::is_sensitive(statuses[c]) ? tables::CellStatus::kSensitive
                                                                             : tables::CellStatus::kSafe;
      }
      tables::CellListView view{values, weights, status, lower, upper, none, none, none};
      io::write_stream_atomically(*options.equations, context.permissions,
                                  [&](std::ostream& out) { tables::write_cell_equation_list(out, equations, view); });
    }
  }

  nlohmann::json summary(const RunContext& context, const TableLayout& layout, const tables::CellTable& cells,
                         const std::vector<tables::SensitivityStatus>& statuses, std::int64_t keys_read_as_zero) const {
    nlohmann::json dimensions = nlohmann::json::array();
    std::int64_t space = 1;
    for (const TableDimension& dimension : layout.dimensions) {
      const auto& h = dimension.hierarchy;
      std::int32_t depth = 0;
      for (std::int32_t d : h.depth) depth = std::max(depth, d);
      dimensions.push_back({{"name", dimension.name},
                            {"variables", dimension.variables},
                            {"codes", h.size()},
                            {"leaves", h.leaves().size()},
                            {"depth", depth}});
      space *= static_cast<std::int64_t>(h.size());
    }
    std::int64_t records = 0;
    if (cells.cell_count() > 0) records = cells.summaries.front().count;  // the grand total comes first
    nlohmann::json sensitive = nullptr;
    if (!statuses.empty()) {
      std::map<std::string, std::int64_t> counts;
      for (tables::SensitivityStatus status : statuses) ++counts[sensitivity_label(status)];
      sensitive = counts;
    }
    const auto& key_column = options.record_key;
    return {{"records", reported_count(records, context.report_min_count)},
            {"kind", options.value ? "magnitude" : "frequency"},
            {"dimensions", std::move(dimensions)},
            {"cell_space", space},
            {"cells", static_cast<std::int64_t>(cells.cell_count())},
            {"empty_cells", space - static_cast<std::int64_t>(cells.cell_count())},
            {"top_contributions", options.value ? options.top_contributions : 0},
            {"record_keys", key_column ? nlohmann::json{{"variable", *key_column},
                                                        {"modulus", power_of_ten(options.key_decimals)},
                                                        {"keys_of_one_read_as_zero", keys_read_as_zero}}
                                       : nlohmann::json(nullptr)},
            {"statuses", std::move(sensitive)}};
  }
};

}  // namespace

std::unique_ptr<TabulateStep> make_tabulate_step() { return std::make_unique<TabulateStepImpl>(); }

}  // namespace sdc::engine
