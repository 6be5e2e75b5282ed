#include "engine/tables/resampling_step.h"

// Resampling protection of a table file (docs/tables.md, "Resampling protection"; docs/methods
// tabular.md §3–§4). The kernels draw a whole table at once (kernels/tables/resampling.h), so the
// ranks gather every row's cell and count on the coordinator (engine/tables/table_cells.h), which
// redraws the leaf cells, adds every margin up from the published leaves (kernels/tables/margins.h)
// and sends each row's published count back to the rank that read it; the ranks then write the table
// file with the published counts beside the original ones.
//
// The kernels see the table's non-empty leaf cells in the order of their linear index, cell i the
// i-th of them: a zero cell stays zero wherever it sits, so leaving the empty leaves out changes no
// law, only which counters a cell draws from, and keeps the memory to the non-empty cells. To keep the
// margins of a dimension, the cells are laid out as one row per leaf code of that dimension (its
// slice, in linear order), padded with zero cells to the widest slice.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "distributed/collective_error.h"
#include "engine/checkpoint.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "engine/tables/table_cells.h"
#include "engine/tables/table_file.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/tables/margins.h"

namespace sdc::engine {
namespace {

/// The dimensions' sizes and the step of each dimension's position in a linear index.
struct CellLayout {
  std::vector<tables::Hierarchy> hierarchies;
  std::vector<std::int64_t> strides;
  std::int64_t space = 1;

  CellLayout(const std::vector<TableFileDimension>& dimensions, const std::string& source) {
    for (const TableFileDimension& dimension : dimensions) hierarchies.push_back(dimension.hierarchy);
    strides.resize(hierarchies.size());
    for (std::size_t d = hierarchies.size(); d-- > 0;) {
      strides[d] = space;
      if (__builtin_mul_overflow(space, static_cast<std::int64_t>(hierarchies[d].size()), &space))
        throw InvalidInput(source + ": the table's cell space (the product of its dimensions' codes) exceeds 2^63");
    }
  }

  std::int32_t position(std::int64_t cell, std::size_t d) const {
    return static_cast<std::int32_t>((cell / strides[d]) % static_cast<std::int64_t>(hierarchies[d].size()));
  }
};

/// The non-empty leaf cells the kernels redraw, in linear order, and the total each one's quality
/// interval refers to: the table's, or its slice's when a dimension's margins are kept.
struct Leaves {
  std::vector<std::int64_t> cells;
  std::vector<std::int64_t> counts;
  std::vector<std::size_t> slice;          ///< per leaf: its slice (0 when only the total is kept)
  std::vector<std::int64_t> slice_totals;  ///< per slice
};

/// What the kernel released for the leaves, with its figures for the report.
struct Released {
  std::vector<std::int64_t> counts;  ///< per leaf
  nlohmann::json figures;
};

class ResamplingStepImpl final : public ResamplingStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    check_flags();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, method_name());

    StepFrame frame(context, method_name(), parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", method_name(), step.parameters, {step_id()}, seed.fingerprint(), {}},
                                         write_options, clock);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kAnalysis, OutputKind::kTable))
      return;
    const Table& cells = opened.part.table;
    const std::string source = options.input.string();
    std::vector<TableFileDimension> dimensions;
    std::optional<std::size_t> preserved;
    TableCells local;
    distributed::agree_on_error(comm, [&] {
      require_frequency_table(cells, source);
      dimensions = table_file_dimensions(cells, source);
      preserved = preserved_dimension(dimensions, source);
      local = read_table_cells(cells, dimensions);
    });
    const TableCells all = gather_table_cells(comm, local);
    clock.lap("gather");

    std::vector<std::int64_t> published;  // per row of `all`, on the coordinator
    nlohmann::json results;
    distributed::agree_on_error(comm, [&] {
      if (!comm.is_coordinator()) return;
      const CellLayout layout(dimensions, source);
      const Leaves leaves = leaf_cells(layout, all, preserved);
      const Released released = redraw(leaves, seed.value);
      published = tables::aggregate_margins(layout.hierarchies, leaves.cells, released.counts, all.cells);
      results = summary(context, dimensions, layout, all, leaves, released, published);
    });
    step.results = nlohmann::json::parse(comm.broadcast_string(results.dump()));
    clock.lap("resample");

    const std::vector<std::int64_t> mine =
        scatter_to_rows(comm, all.row_ids, published, cells.first_row_id(), cells.row_count());
    std::vector<Column> added = published_count_columns(local.counts, mine);
    write_options.provenance.step_results = step.results.dump();  // for --resume
    write_table_step_output(comm, options.input, opened, std::move(added), {}, options.output, std::move(write_options),
                            step.warnings);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("{}: {} leaf cells, {} changed; acceptance rate {:.3g}", method_name(),
                   step.results["leaf_cells"].get<std::int64_t>(), step.results["perturbed_cells"].get<std::int64_t>(),
                   step.results["acceptance_rate"].get<double>());
    report.add_output(options.output, OutputKind::kTable);
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  bool needs_seed() const override { return true; }
  OutputKind input_kind() const override { return OutputKind::kTable; }
  OutputKind output_kind() const override { return OutputKind::kTable; }

  std::vector<VariableInfo> added_variables() const override {
    return {cell_variable(cell_columns::kPublished), cell_variable(cell_columns::kNoise)};
  }

 private:
  bool bootstrap() const { return options.method == ResamplingMethod::kBootstrap; }
  const char* method_name() const { return bootstrap() ? "perturb-table bootstrap" : "perturb-table cell"; }
  StepId step_id() const { return bootstrap() ? StepId::kTableBootstrap : StepId::kTableCellPerturbation; }

  void check_flags() const {
    if (!(options.quality_s > 0.0) || !std::isfinite(options.quality_s))
      throw UsageError("--quality-s: give a positive number, the S of the quality condition");
    if (bootstrap()) {
      if (options.average_m < 1) throw UsageError("--average-m: give a whole number of tables, at least 1");
      if (options.max_attempts < 1) throw UsageError("--max-attempts: give a whole number, at least 1");
      if (options.preserve_margins) throw UsageError("--preserve-margins: the bootstrap keeps only the total");
    } else {
      if (options.average_m != 1) throw UsageError("--average-m: the cell method does not average tables");
      if (options.max_redraws < 1) throw UsageError("--max-redraws: give a whole number, at least 1");
      if (options.preserve_margins && options.preserve_margins->empty())
        throw UsageError("--preserve-margins: give the name of a dimension");
    }
  }

  nlohmann::json parameters() const {
    if (bootstrap())
      return {
          {"quality-s", options.quality_s}, {"average-m", options.average_m}, {"max-attempts", options.max_attempts}};
    return {{"quality-s", options.quality_s},
            {"preserve-margins", options.preserve_margins ? nlohmann::json(*options.preserve_margins) : nullptr},
            {"max-redraws", options.max_redraws}};
  }

  /// Resampling draws records, whose counts a frequency table holds: a weighted or magnitude table's
  /// published figures would be ones the methods do not draw.
  static void require_frequency_table(const Table& cells, const std::string& source) {
    if (cells.find(cell_columns::kWeightedCount) != nullptr)
      throw InvalidInput(source + ": a weighted table ('" + cell_columns::kWeightedCount +
                         "'): resampling redraws counts of records; tabulate without --weight");
    if (cells.find(cell_columns::kValue) != nullptr)
      throw InvalidInput(source + ": a magnitude table ('" + cell_columns::kValue +
                         "'): resampling protects frequency tables; tabulate without --value");
  }

  std::optional<std::size_t> preserved_dimension(const std::vector<TableFileDimension>& dimensions,
                                                 const std::string& source) const {
    if (!options.preserve_margins) return std::nullopt;
    std::string names;
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      if (dimensions[d].name == *options.preserve_margins) return d;
      names += (names.empty() ? "" : ", ") + dimensions[d].name;
    }
    throw UsageError("--preserve-margins: '" + *options.preserve_margins + "' is no dimension of " + source +
                     " (its dimensions: " + names + ")");
  }

  /// The table's non-empty leaf cells; InvalidInput when it has none, or when a row's count is not the
  /// sum of the leaves below it (the margins are recomputed from the leaves: they must add up).
  Leaves leaf_cells(const CellLayout& layout, const TableCells& all, std::optional<std::size_t> preserved) const {
    Leaves leaves;
    for (const std::size_t i : tables::find_leaf_cells(layout.hierarchies, all.cells)) {
      leaves.cells.push_back(all.cells[i]);
      leaves.counts.push_back(all.counts[i]);
    }
    if (leaves.cells.empty())
      throw InvalidInput(options.input.string() +
                         ": the table has no leaf cell (a cell at a leaf of every dimension's hierarchy) to redraw");
    const std::vector<std::int64_t> sums =
        tables::aggregate_margins(layout.hierarchies, leaves.cells, leaves.counts, all.cells);
    for (std::size_t i = 0; i < sums.size(); ++i)
      if (sums[i] != all.counts[i])
        throw InvalidInput(
            fmt::format("{}: variable '{}', row id {}: the count is not the sum of its leaf cells' "
                        "counts; resampling needs the whole additive table `sdc table tabulate` writes",
                        options.input.string(), cell_columns::kCount, all.row_ids[i]));
    leaves.slice.assign(leaves.cells.size(), 0);
    if (!preserved) {
      leaves.slice_totals = {0};
      for (const std::int64_t count : leaves.counts) leaves.slice_totals[0] += count;
      return leaves;
    }
    const tables::Hierarchy& kept = layout.hierarchies[*preserved];
    std::vector<std::size_t> slice_of_position(kept.size(), 0);
    const std::vector<std::int32_t> kept_leaves = kept.leaves();
    for (std::size_t s = 0; s < kept_leaves.size(); ++s)
      slice_of_position[static_cast<std::size_t>(kept_leaves[s])] = s;
    leaves.slice_totals.assign(kept_leaves.size(), 0);
    for (std::size_t k = 0; k < leaves.cells.size(); ++k) {
      leaves.slice[k] = slice_of_position[static_cast<std::size_t>(layout.position(leaves.cells[k], *preserved))];
      leaves.slice_totals[leaves.slice[k]] += leaves.counts[k];
    }
    return leaves;
  }

  /// The kernel's draw for the leaves. Its errors name the kernel's parameters: here they name the flags.
  Released redraw(const Leaves& leaves, std::uint64_t seed) const {
    try {
      return bootstrap() ? redraw_bootstrap(leaves, seed) : redraw_cells(leaves, seed);
    } catch (const ParameterError& error) {
      throw ParameterError(
          fmt::format("{}: {}: {} ({})", method_name(), options.input.string(), error.what(),
                      bootstrap() ? "--quality-s, --average-m, --max-attempts" : "--quality-s, --max-redraws"));
    }
  }

  Released redraw_bootstrap(const Leaves& leaves, std::uint64_t seed) const {
    tables::HeerBootstrapOptions bootstrap_options;
    bootstrap_options.s = options.quality_s;
    bootstrap_options.tables = options.average_m;
    bootstrap_options.seed = seed;
    bootstrap_options.max_attempts = options.max_attempts;
    tables::HeerBootstrapResult result = tables::heer_bootstrap(leaves.counts, bootstrap_options);
    return {std::move(result.released),
            {{"attempts", result.attempts},
             {"draws", nullptr},
             {"acceptance_rate", result.acceptance_rate},
             {"units_removed", nullptr},
             {"units_added", nullptr}}};
  }

  Released redraw_cells(const Leaves& leaves, std::uint64_t seed) const {
    tables::CellPerturbationOptions cell_options;
    cell_options.s = options.quality_s;
    cell_options.seed = seed;
    cell_options.max_redraws = options.max_redraws;
    std::vector<std::int64_t> counts = leaves.counts;
    // Where each leaf sits in the kernel's table: in slice order when a dimension's margins are kept.
    std::vector<std::size_t> at(leaves.cells.size());
    for (std::size_t k = 0; k < at.size(); ++k) at[k] = k;
    if (options.preserve_margins) {
      std::vector<std::size_t> filled(leaves.slice_totals.size(), 0);
      for (const std::size_t s : leaves.slice) ++filled[s];
      const std::size_t width = *std::max_element(filled.begin(), filled.end());
      std::fill(filled.begin(), filled.end(), 0);
      counts.assign(leaves.slice_totals.size() * width, 0);
      for (std::size_t k = 0; k < leaves.cells.size(); ++k) {
        at[k] = leaves.slice[k] * width + filled[leaves.slice[k]]++;
        counts[at[k]] = leaves.counts[k];
      }
      cell_options.dimensions = {static_cast<std::int64_t>(leaves.slice_totals.size()),
                                 static_cast<std::int64_t>(width)};
      cell_options.preserved_dimension = 0;
    }
    const tables::CellPerturbationResult result = tables::perturb_cells(counts, cell_options);
    std::vector<std::int64_t> released(leaves.cells.size());
    for (std::size_t k = 0; k < released.size(); ++k) released[k] = result.released[at[k]];
    return {std::move(released),
            {{"attempts", nullptr},
             {"draws", result.draws},
             {"acceptance_rate", result.acceptance_rate},
             {"units_removed", result.units_removed},
             {"units_added", result.units_added}}};
  }

  /// On the coordinator: the step's results from every row's original and published count.
  nlohmann::json summary(const RunContext& context, const std::vector<TableFileDimension>& dimensions,
                         const CellLayout& layout, const TableCells& all, const Leaves& leaves,
                         const Released& released, const std::vector<std::int64_t>& published) const {
    std::int64_t original_total = 0;
    std::int64_t released_total = 0;
    for (std::size_t k = 0; k < leaves.counts.size(); ++k) {
      original_total += leaves.counts[k];
      released_total += released.counts[k];
    }
    std::int64_t perturbed = 0;
    std::int64_t false_zeros = 0;
    std::int64_t outside = 0;
    for (std::size_t k = 0; k < leaves.counts.size(); ++k) {
      const std::int64_t x = leaves.counts[k];
      const std::int64_t y = released.counts[k];
      if (y != x) ++perturbed;
      if (x > 0 && y == 0) ++false_zeros;
      const tables::QualityInterval interval =
          tables::quality_interval(x, leaves.slice_totals[leaves.slice[k]], options.quality_s);
      if (y < interval.lower || y > interval.upper) ++outside;
    }
    // One-way margins: the cells at a non-total position of one dimension and the total of every other.
    nlohmann::json margins = nlohmann::json::array();
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      std::int64_t margin_cells = 0;
      std::int64_t changed = 0;
      for (std::size_t i = 0; i < all.cells.size(); ++i) {
        bool in_margin = layout.position(all.cells[i], d) != 0;
        for (std::size_t e = 0; e < dimensions.size() && in_margin; ++e)
          if (e != d && layout.position(all.cells[i], e) != 0) in_margin = false;
        if (!in_margin) continue;
        ++margin_cells;
        if (published[i] != all.counts[i]) ++changed;
      }
      margins.push_back({{"dimension", dimensions[d].name},
                         {"preserved", options.preserve_margins == dimensions[d].name},
                         {"cells", margin_cells},
                         {"changed_cells", changed},
                         {"kept", changed == 0}});
    }
    nlohmann::json results{
        {"method", bootstrap() ? "bootstrap" : "cell"},
        {"quality_s", options.quality_s},
        {"average_m", bootstrap() ? options.average_m : 1},
        {"preserve_margins", options.preserve_margins ? nlohmann::json(*options.preserve_margins) : nullptr},
        {"cells", static_cast<std::int64_t>(all.cells.size())},
        {"cell_space", layout.space},
        {"leaf_cells", static_cast<std::int64_t>(leaves.cells.size())},
        {"perturbed_cells", perturbed},
        {"false_zeros", false_zeros},
        {"original_total", reported_count(original_total, context.report_min_count)},
        {"released_total", reported_count(released_total, context.report_min_count)},
        {"total_kept", released_total == original_total},
        {"outside_quality_interval", outside},
        {"margins", std::move(margins)}};
    results.update(released.figures);
    return results;
  }
};

}  // namespace

std::unique_ptr<ResamplingStep> make_resampling_step() { return std::make_unique<ResamplingStepImpl>(); }

}  // namespace sdc::engine
