#include "engine/tables/adjust_step.h"

// Additivity after perturbation (docs/tables.md; kernels/tables/additivity_adjustment.h). Every rank
// gathers every row's cell and perturbed figure and builds the same constraint matrix, restricted to
// the table's rows: a cell that is no row of the table file is empty and stays empty (its column is
// fixed at 0), which keeps the structural zeros and the matrix to the non-empty cells. The coordinator
// reorders the matrix into primal block-angular form and sends the ordering to every rank; the ranks
// factor their blocks (distributed/compose/additivity_adjustment.h) and each keeps the adjusted values
// of its own rows, which become the table file's `adjusted` column.
//
// The matrix must describe this table: the original counts satisfy every equation (they are the
// tabulation's exact sums), so a given matrix under which they do not is refused.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "distributed/collective_error.h"
#include "distributed/compose/additivity_adjustment.h"
#include "engine/table_step.h"
#include "engine/tables/table_cells.h"
#include "engine/tables/table_file.h"
#include "io/matrix_market.h"
#include "io/sha256.h"
#include "kernels/core/error.h"
#include "kernels/tables/additivity_adjustment.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/layer_split.h"

namespace sdc::engine {
namespace {

constexpr const char* kMethod = "perturb-table adjust";

/// Every rank's rows, in row order, on every rank.
struct AllRows {
  std::vector<std::int64_t> cells;
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> row_ids;
  std::vector<double> perturbed;
};

/// The constraint matrix over the table's rows (column i = row i of AllRows) and where it came from.
struct RowConstraints {
  CsrMatrix matrix;
  std::int64_t cell_space = 0;
  std::int64_t full_equations = 0;  ///< rows of the whole matrix, before empty ones were dropped
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class AdjustStepImpl final : public AdjustStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    check_flags();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    std::optional<CsrMatrix> given;
    if (options.constraints)
      distributed::agree_on_error(comm, [&] { given = io::read_matrix_market(*options.constraints); });
    StepFrame frame(context, kMethod, parameters(given), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", kMethod, step.parameters, {}, std::nullopt, {}}, write_options, clock);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kAnalysis, OutputKind::kTable))
      return;
    const Table& cells = opened.part.table;
    const std::string source = options.input.string();
    std::vector<TableFileDimension> dimensions;
    TableCells local;
    std::vector<double> local_perturbed;
    distributed::agree_on_error(comm, [&] {
      dimensions = table_file_dimensions(cells, source);
      local = read_table_cells(cells, dimensions);
      local_perturbed = perturbed_values(cells);
    });
    const AllRows all = gather_all_rows(comm, local, local_perturbed);
    clock.lap("gather");

    RowConstraints constraints;
    distributed::agree_on_error(comm, [&] { constraints = row_constraints(dimensions, given, all); });
    given.reset();
    const std::vector<double> weights = cell_weights(all.perturbed);
    clock.lap("constraints");

    tables::AdjustmentOptions adjustment;
    adjustment.tolerance = options.tolerance;
    adjustment.preconditioner_terms = static_cast<std::int32_t>(options.preconditioner_terms);
    tables::AdjustmentResult result;
    tables::BlockAngularOrdering ordering;
    double reorder_seconds = 0.0;
    const CsrView a = constraints.matrix.view();
    if (options.solver == "direct") {
      distributed::agree_on_error(comm, [&] {
        if (comm.is_coordinator()) result = tables::adjust_additivity_direct(a, all.perturbed, weights, adjustment);
      });
      broadcast_result(comm, result);
    } else {
      distributed::agree_on_error(comm, [&] {
        if (!comm.is_coordinator()) return;
        const auto start = std::chrono::steady_clock::now();
        ordering = options.ordering == "table" ? layer_ordering(a, dimensions, all) : reorder(a);
        reorder_seconds = seconds_since(start);
      });
      distributed::broadcast_ordering(comm, ordering);
      clock.lap("reorder");
      distributed::agree_on_error(comm, [&] {
        result = distributed::adjust_additivity_block_angular(comm, a, all.perturbed, weights, ordering, adjustment);
      });
    }
    clock.lap("solve");
    if (comm.is_coordinator()) step.results = summary(dimensions, constraints, all, result, ordering, reorder_seconds);
    step.results = nlohmann::json::parse(comm.broadcast_string(step.results.dump()));
    const double scale = std::max(1.0, step.results["max_abs_perturbed"].get<double>());
    if (result.max_constraint_residual > options.tolerance * scale)
      step.warnings.push_back(
          fmt::format("the adjusted table breaks an equation by {:.3g}, more than --tolerance {} "
                      "times the largest |value| ({:.3g})",
                      result.max_constraint_residual, options.tolerance, scale));

    std::vector<Column> added;
    added.push_back(Column::continuous(cell_variable(cell_columns::kAdjusted), rows_of_this_rank(cells, all, result)));
    write_options.provenance.step_results = step.results.dump();  // for --resume
    write_table_step_output(comm, options.input, opened, std::move(added), {}, options.output, std::move(write_options),
                            step.warnings);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("{}: {} cells, {} equations, {} solver; largest change {:.4g}, equations hold to {:.3g}", kMethod,
                   all.cells.size(), constraints.matrix.rows(), options.solver, result.max_absolute_change,
                   result.max_constraint_residual);
    report.add_output(options.output, OutputKind::kTable);
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  OutputKind input_kind() const override { return OutputKind::kTable; }
  OutputKind output_kind() const override { return OutputKind::kTable; }
  std::vector<VariableInfo> added_variables() const override { return {cell_variable(cell_columns::kAdjusted)}; }

 private:
  void check_flags() const {
    if (options.weights != "uniform" && options.weights != "inverse")
      throw UsageError("--weights: give uniform or inverse, not '" + options.weights + "'");
    if (options.ordering != "table" && options.ordering != "multilevel")
      throw UsageError("--ordering: give table or multilevel, not '" + options.ordering + "'");
    if (options.solver != "block-angular" && options.solver != "direct")
      throw UsageError("--solver: give block-angular or direct, not '" + options.solver + "'");
    if (options.blocks < 2) throw UsageError("--blocks: give a whole number of blocks, at least 2");
    if (!(options.imbalance > 0.0 && options.imbalance < 1.0))
      throw UsageError("--imbalance: give a number between 0 and 1 (exclusive), e.g. 0.05");
    if (!(options.tolerance > 0.0) || !std::isfinite(options.tolerance))
      throw UsageError("--tolerance: give a positive number, e.g. 1e-12");
    if (options.preconditioner_terms < 0) throw UsageError("--preconditioner-terms: give a whole number, at least 0");
    if (options.partition_seed < 0) throw UsageError("--partition-seed: give a whole number, at least 0");
    if (options.variable.empty()) throw UsageError("--variable: give the name of a continuous cell variable");
  }

  nlohmann::json parameters(const std::optional<CsrMatrix>& given) const {
    nlohmann::json constraints = nullptr;
    if (given) {
      // The matrix's content, not its path, identifies the step.
      const CsrView view = given->view();
      io::Sha256 digest;
      digest.update_u64(static_cast<std::uint64_t>(view.rows));
      digest.update_u64(static_cast<std::uint64_t>(view.columns));
      digest.update(std::as_bytes(view.row_offsets));
      digest.update(std::as_bytes(view.column_indices));
      digest.update(std::as_bytes(view.values));
      constraints = digest.hex_digest();
    }
    return {{"variable", options.variable},
            {"weights", options.weights},
            {"solver", options.solver},
            {"blocks", options.blocks},
            {"ordering", options.ordering},
            {"imbalance", options.imbalance},
            {"partition-seed", options.partition_seed},
            {"tolerance", options.tolerance},
            {"preconditioner-terms", options.preconditioner_terms},
            {"constraints-digest", constraints}};
  }

  /// This rank's values of the perturbed figure; InvalidInput naming the file, the variable and the row
  /// id for a missing or non-finite one.
  std::vector<double> perturbed_values(const Table& cells) const {
    const Column& column = cells.require(options.variable, VariableType::kContinuous);
    const std::span<const double> values = column.values();
    for (std::size_t r = 0; r < values.size(); ++r)
      if (!std::isfinite(values[r]))
        throw InvalidInput(
            fmt::format("{}: variable '{}', row id {}: missing or not finite; every cell needs a "
                        "perturbed figure to adjust",
                        options.input.string(), options.variable, cells.first_row_id() + static_cast<std::int64_t>(r)));
    return {values.begin(), values.end()};
  }

  static AllRows gather_all_rows(const distributed::Communicator& comm, const TableCells& local,
                                 const std::vector<double>& perturbed) {
    distributed::ByteWriter writer;
    writer.put_vector(local.cells);
    writer.put_vector(local.counts);
    writer.put_vector(local.row_ids);
    writer.put_vector(perturbed);
    AllRows all;
    for (const std::vector<std::byte>& bytes : comm.all_gather_bytes(writer.bytes())) {
      distributed::ByteReader reader(bytes);
      const auto append = [&reader](auto& into) {
        using Value = typename std::remove_reference_t<decltype(into)>::value_type;
        const std::vector<Value> part = reader.get_vector<Value>();
        into.insert(into.end(), part.begin(), part.end());
      };
      append(all.cells);
      append(all.counts);
      append(all.row_ids);
      append(all.perturbed);
    }
    return all;
  }

  /// The equations restricted to the table's rows. InvalidInput when a given matrix does not have one
  /// column per cell of the table's cell space, or when the table's counts break one of its equations.
  RowConstraints row_constraints(const std::vector<TableFileDimension>& dimensions,
                                 const std::optional<CsrMatrix>& given, const AllRows& all) const {
    std::vector<tables::DimensionEquations> equations;
    std::int64_t cell_space = 1;
    std::string shape;
    for (const TableFileDimension& dimension : dimensions) {
      equations.push_back(tables::equations_of(dimension.hierarchy));
      equations.back().name = dimension.name;
      cell_space *= static_cast<std::int64_t>(dimension.hierarchy.size());
      shape += fmt::format("{}{} ({} codes)", shape.empty() ? "" : " x ", dimension.name, dimension.hierarchy.size());
    }
    CsrMatrix built;
    if (!given) built = tables::constraint_matrix(equations);
    const CsrView full = given ? given->view() : built.view();
    const std::string matrix_name = given ? options.constraints->string() : options.input.string();
    if (full.columns != cell_space)
      throw InvalidInput(
          fmt::format("{}: {} columns, but the table {} has {} cells ({}): the matrix does not "
                      "describe this table",
                      matrix_name, full.columns, options.input.string(), cell_space, shape));
    std::vector<std::int64_t> column_of_cell(static_cast<std::size_t>(cell_space), -1);
    for (std::size_t i = 0; i < all.cells.size(); ++i)
      column_of_cell[static_cast<std::size_t>(all.cells[i])] = static_cast<std::int64_t>(i);

    std::vector<std::int64_t> offsets{0};
    std::vector<std::int64_t> columns;
    std::vector<double> values;
    std::vector<std::pair<std::int64_t, double>> row;
    for (std::int64_t r = 0; r < full.rows; ++r) {
      row.clear();
      const auto row_columns = full.row_columns(r);
      const auto row_values = full.row_values(r);
      double count_sum = 0.0;
      double count_scale = 0.0;
      for (std::size_t e = 0; e < row_columns.size(); ++e) {
        const std::int64_t column = column_of_cell[static_cast<std::size_t>(row_columns[e])];
        if (column < 0) continue;
        const double term = row_values[e] * static_cast<double>(all.counts[static_cast<std::size_t>(column)]);
        count_sum += term;
        count_scale = std::max(count_scale, std::abs(term));
        row.emplace_back(column, row_values[e]);
      }
      if (std::abs(count_sum) > 1e-9 * std::max(1.0, count_scale))
        throw InvalidInput(fmt::format("{}: equation {} (row {} of the matrix) does not hold for the counts of {}: {}",
                                       matrix_name, r + 1, r + 1, options.input.string(),
                                       given ? "the matrix does not describe this table"
                                             : "the table is not additive; adjust the table `sdc table tabulate` "
                                               "wrote after perturbing it"));
      if (row.empty()) continue;
      std::sort(row.begin(), row.end());
      for (const auto& [column, value] : row) {
        columns.push_back(column);
        values.push_back(value);
      }
      offsets.push_back(static_cast<std::int64_t>(columns.size()));
    }
    RowConstraints constraints;
    constraints.cell_space = cell_space;
    constraints.full_equations = full.rows;
    const auto rows = static_cast<std::int64_t>(offsets.size()) - 1;
    constraints.matrix = CsrMatrix(rows, static_cast<std::int64_t>(all.cells.size()), std::move(offsets),
                                   std::move(columns), std::move(values));
    return constraints;
  }

  std::vector<double> cell_weights(const std::vector<double>& perturbed) const {
    std::vector<double> weights(perturbed.size(), 1.0);
    if (options.weights == "inverse")
      for (std::size_t j = 0; j < perturbed.size(); ++j) weights[j] = 1.0 / std::max(1.0, std::abs(perturbed[j]));
    return weights;
  }

  /// The table's own primal block-angular form (kernels/tables/layer_split.h): the cells split by the
  /// codes of the dimension, among those with at least --blocks codes, whose solve is predicted cheapest.
  tables::BlockAngularOrdering layer_ordering(const CsrView& a, const std::vector<TableFileDimension>& dimensions,
                                              const AllRows& all) const {
    std::vector<tables::DimensionEquations> equations;
    equations.reserve(dimensions.size());
    for (const TableFileDimension& dimension : dimensions)
      equations.push_back(tables::equations_of(dimension.hierarchy));
    std::optional<tables::LayerOrdering> layers =
        tables::cheapest_layer_ordering(a, equations, all.cells, static_cast<std::int32_t>(options.blocks));
    if (!layers)
      throw UsageError(
          fmt::format("--blocks {}: no dimension of {} has that many codes to split the table by; give "
                      "fewer blocks or --ordering multilevel",
                      options.blocks, options.input.string()));
    spdlog::info("perturb-table adjust: the cells split by the codes of {} (predicted work {:.3g})",
                 dimensions[layers->dimension].name, layers->predicted_work);
    return std::move(layers->ordering);
  }

  tables::BlockAngularOrdering reorder(const CsrView& a) const {
    tables::ReorderingOptions reordering;
    reordering.blocks = static_cast<std::int32_t>(std::min<std::int64_t>(options.blocks, 1'000'000));
    reordering.form = tables::BlockAngularForm::kPrimal;
    reordering.imbalance = options.imbalance;
    reordering.seed = static_cast<std::uint64_t>(options.partition_seed);
    try {
      tables::check_reordering_options(a, reordering);
    } catch (const ParameterError& error) {
      throw UsageError(fmt::format("--blocks {}, --imbalance {}: {} (the table has {} non-empty cells)", options.blocks,
                                   options.imbalance, error.what(), a.columns));
    }
    return tables::reorder_block_angular(a, reordering);
  }

  /// The direct solver's result, computed on the coordinator, on every rank.
  static void broadcast_result(const distributed::Communicator& comm, tables::AdjustmentResult& result) {
    distributed::ByteWriter writer;
    if (comm.is_coordinator()) {
      writer.put_vector(result.adjusted);
      writer.put(result.max_constraint_residual);
      writer.put(result.weighted_distance);
      writer.put(result.max_absolute_change);
      writer.put(result.refinements);
      writer.put(result.pcg_iterations);
      writer.put(result.factor_seconds);
      writer.put(result.solve_seconds);
    }
    const std::vector<std::byte> bytes = comm.broadcast_bytes(writer.bytes());
    if (comm.is_coordinator()) return;
    distributed::ByteReader reader(bytes);
    result.adjusted = reader.get_vector<double>();
    result.max_constraint_residual = reader.get<double>();
    result.weighted_distance = reader.get<double>();
    result.max_absolute_change = reader.get<double>();
    result.refinements = reader.get<std::int32_t>();
    result.pcg_iterations = reader.get<std::int64_t>();
    result.factor_seconds = reader.get<double>();
    result.solve_seconds = reader.get<double>();
  }

  static std::vector<double> rows_of_this_rank(const Table& cells, const AllRows& all,
                                               const tables::AdjustmentResult& result) {
    const auto first = std::lower_bound(all.row_ids.begin(), all.row_ids.end(), cells.first_row_id());
    const auto offset = static_cast<std::size_t>(first - all.row_ids.begin());
    const auto begin = result.adjusted.begin() + static_cast<std::ptrdiff_t>(offset);
    return {begin, begin + cells.row_count()};
  }

  nlohmann::json summary(const std::vector<TableFileDimension>& dimensions, const RowConstraints& constraints,
                         const AllRows& all, const tables::AdjustmentResult& result,
                         const tables::BlockAngularOrdering& ordering, double reorder_seconds) const {
    const CsrView a = constraints.matrix.view();
    std::vector<double> residual(static_cast<std::size_t>(a.rows));
    multiply(a, all.perturbed, residual);
    double before = 0.0;
    for (const double r : residual) before = std::max(before, std::abs(r));
    double max_abs_perturbed = 0.0;
    double absolute_change = 0.0;
    std::int64_t changed = 0;
    for (std::size_t j = 0; j < all.perturbed.size(); ++j) {
      max_abs_perturbed = std::max(max_abs_perturbed, std::abs(all.perturbed[j]));
      const double change = std::abs(result.adjusted[j] - all.perturbed[j]);
      absolute_change += change;
      if (change > 1e-9 * std::max(1.0, std::abs(all.perturbed[j]))) ++changed;
    }
    nlohmann::json names = nlohmann::json::array();
    for (const TableFileDimension& dimension : dimensions) names.push_back(dimension.name);
    nlohmann::json results{
        {"variable", options.variable},
        {"weights", options.weights},
        {"solver", options.solver},
        {"dimensions", std::move(names)},
        {"cells", static_cast<std::int64_t>(all.cells.size())},
        {"cell_space", constraints.cell_space},
        {"equations", a.rows},
        {"equations_of_the_cell_space", constraints.full_equations},
        {"nonzeros", a.entry_count()},
        {"constraints", options.constraints ? "given" : "hierarchies"},
        {"max_abs_perturbed", max_abs_perturbed},
        {"max_constraint_residual_before", before},
        {"max_constraint_residual", result.max_constraint_residual},
        {"weighted_distance", result.weighted_distance},
        {"max_absolute_change", result.max_absolute_change},
        {"mean_absolute_change", all.cells.empty() ? 0.0 : absolute_change / static_cast<double>(all.cells.size())},
        {"changed_cells", changed},
        {"refinements", result.refinements},
        {"pcg_iterations", result.pcg_iterations},
        {"factor_seconds", result.factor_seconds},
        {"solve_seconds", result.solve_seconds},
        {"block_angular", nullptr}};
    if (options.solver == "block-angular")
      results["block_angular"] = {{"ordering", options.ordering},          {"blocks", ordering.blocks},
                                  {"block_rows", ordering.block_rows},     {"block_columns", ordering.block_columns},
                                  {"linking_rows", ordering.linking_size}, {"imbalance", ordering.imbalance},
                                  {"reorder_seconds", reorder_seconds}};
    return results;
  }
};

}  // namespace

std::unique_ptr<AdjustStep> make_adjust_step() { return std::make_unique<AdjustStepImpl>(); }

}  // namespace sdc::engine
