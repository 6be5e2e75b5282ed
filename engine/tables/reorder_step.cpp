#include "engine/tables/reorder_step.h"

// Block-angular reordering of a sparse matrix (docs/tables.md, "Block-angular reordering"). Reordering
// is shape (c), global on one node (kernels/tables/block_angular.h): the coordinator reads the matrix,
// reorders it on its threads, checks the permuted matrix against the block pattern it reports and
// writes the ordering; the other ranks wait for its outcome. The ordering file lists, for every
// position of the permuted matrix, the original row or column there and its block, so any tool can
// apply it.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <ostream>
#include <string>
#include <utility>

#include "distributed/collective_error.h"
#include "distributed/comm.h"
#include "engine/table_step.h"
#include "io/atomic_output.h"
#include "io/matrix_market.h"
#include "io/sparsity_svg.h"
#include "kernels/core/error.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"

namespace sdc::engine {
namespace {

constexpr const char* kMethod = "reorder";

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// 100 × part / whole truncated to one decimal, as the reordering literature prints it.
double truncated_percent(std::int64_t part, std::int64_t whole) {
  if (whole == 0) return 0.0;
  return std::floor(1000.0 * static_cast<double>(part) / static_cast<double>(whole)) / 10.0;
}

/// The ordering as CSV: `kind,position,index,block` with 1-based positions and indices, and the block
/// 1-based or `linking`; the rows first, then the columns, each in permuted order.
void write_ordering(std::ostream& out, const tables::BlockAngularOrdering& ordering) {
  std::string text = "kind,position,index,block\n";
  const auto write_part = [&](const char* kind, const std::vector<std::int64_t>& order,
                              const std::vector<std::int32_t>& block_of) {
    for (std::size_t position = 0; position < order.size(); ++position) {
      const std::int32_t block = block_of[static_cast<std::size_t>(order[position])];
      text += fmt::format("{},{},{},", kind, position + 1, order[position] + 1);
      text += block == tables::BlockAngularOrdering::kLinking ? std::string("linking") : std::to_string(block + 1);
      text += '\n';
      if (text.size() > (std::size_t{1} << 20)) {
        out << text;
        text.clear();
      }
    }
  };
  write_part("row", ordering.row_order, ordering.row_block);
  write_part("column", ordering.column_order, ordering.column_block);
  out << text;
}

/// The matrix with its rows and columns in the ordering's positions.
CsrMatrix permuted_matrix(const CsrView& matrix, const tables::BlockAngularOrdering& ordering) {
  std::vector<std::int64_t> position_of_column(static_cast<std::size_t>(matrix.columns));
  for (std::size_t p = 0; p < ordering.column_order.size(); ++p)
    position_of_column[static_cast<std::size_t>(ordering.column_order[p])] = static_cast<std::int64_t>(p);
  std::vector<std::int64_t> offsets{0};
  std::vector<std::int64_t> columns;
  std::vector<double> values;
  columns.reserve(static_cast<std::size_t>(matrix.entry_count()));
  values.reserve(static_cast<std::size_t>(matrix.entry_count()));
  std::vector<std::pair<std::int64_t, double>> row;
  for (const std::int64_t original : ordering.row_order) {
    row.clear();
    const auto row_columns = matrix.row_columns(original);
    const auto row_values = matrix.row_values(original);
    for (std::size_t e = 0; e < row_columns.size(); ++e)
      row.emplace_back(position_of_column[static_cast<std::size_t>(row_columns[e])], row_values[e]);
    std::sort(row.begin(), row.end());
    for (const auto& [column, value] : row) {
      columns.push_back(column);
      values.push_back(value);
    }
    offsets.push_back(static_cast<std::int64_t>(columns.size()));
  }
  return {matrix.rows, matrix.columns, std::move(offsets), std::move(columns), std::move(values)};
}

class ReorderStepImpl final : public ReorderStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const tables::ReorderingOptions reordering = reordering_options();
    io::ensure_output_directory_writable(options.output);
    if (options.svg) io::ensure_output_directory_writable(*options.svg);
    if (options.permuted) io::ensure_output_directory_writable(*options.permuted);

    StepFrame frame(context, kMethod, parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;  // the lambda below laps frame.clock: clang captures no bindings
    nlohmann::json results;
    distributed::agree_on_error(comm, [&] {
      if (!comm.is_coordinator()) return;
      auto start = std::chrono::steady_clock::now();
      const CsrMatrix matrix = io::read_matrix_market(options.input);
      const double read_seconds = seconds_since(start);
      frame.clock.lap("read");
      const CsrView a = matrix.view();
      check_options(a, reordering);
      start = std::chrono::steady_clock::now();
      const tables::BlockAngularOrdering ordering = tables::reorder_block_angular(a, reordering);
      const double reorder_seconds = seconds_since(start);
      frame.clock.lap("reorder");
      if (const auto problem = tables::block_pattern_problem(a, ordering))
        throw InternalError(options.input.string() + ": the reordered matrix breaks its block pattern: " + *problem);
      frame.clock.lap("check");
      start = std::chrono::steady_clock::now();
      io::write_stream_atomically(options.output, context.permissions,
                                  [&](std::ostream& out) { write_ordering(out, ordering); });
      if (options.permuted) {
        const CsrMatrix permuted = permuted_matrix(a, ordering);
        io::write_stream_atomically(*options.permuted, context.permissions,
                                    [&](std::ostream& out) { tables::write_matrix_market(out, permuted.view()); });
      }
      if (options.svg)
        io::write_stream_atomically(*options.svg, context.permissions, [&](std::ostream& out) {
          const io::SparsityPanel before{"as given", {}, {}, {}, {}};
          const io::SparsityPanel after{fmt::format("{} block-angular, {} blocks, linking {}", options.form,
                                                    options.blocks, ordering.linking_size),
                                        ordering.row_order, ordering.column_order, ordering.block_rows,
                                        ordering.block_columns};
          io::write_sparsity_svg(out, a, before, after);
        });
      frame.clock.lap("write");
      results = summary(a, ordering, read_seconds, reorder_seconds, seconds_since(start));
    });
    step.results = nlohmann::json::parse(comm.broadcast_string(results.dump()));
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("reorder {}: {} {} blocks, linking {} ({}% of the {}), imbalance {:.3f}, {:.2f} s",
                   options.input.string(), options.form, options.blocks,
                   step.results["linking_size"].get<std::int64_t>(), step.results["linking_percent"].get<double>(),
                   options.form == "dual" ? "columns" : "rows", step.results["imbalance"].get<double>(),
                   step.results["reorder_seconds"].get<double>());
    report.add_output(options.output, OutputKind::kCsv);
    if (options.permuted) report.add_output(*options.permuted, OutputKind::kMatrix);
    if (options.svg) report.add_output(*options.svg, OutputKind::kPlot);
    report.write(comm, options.report);
  }

  OutputKind input_kind() const override { return OutputKind::kMatrix; }
  OutputKind output_kind() const override { return OutputKind::kCsv; }

 private:
  tables::ReorderingOptions reordering_options() const {
    if (options.form != "dual" && options.form != "primal")
      throw UsageError("--form: give dual or primal, not '" + options.form + "'");
    if (options.algorithm != "multilevel" && options.algorithm != "single-level")
      throw UsageError("--algorithm: give multilevel or single-level, not '" + options.algorithm + "'");
    if (options.blocks < 2) throw UsageError("--blocks: give a whole number of blocks, at least 2");
    if (!(options.imbalance > 0.0 && options.imbalance < 1.0))
      throw UsageError("--imbalance: give a number between 0 and 1 (exclusive), e.g. 0.05");
    if (options.partition_seed < 0) throw UsageError("--partition-seed: give a whole number, at least 0");
    if (options.initial_partitions < 1) throw UsageError("--initial-partitions: give a whole number, at least 1");
    if (options.cycles < 0) throw UsageError("--cycles: give a whole number, at least 1 (or 0 for the form's default)");
    tables::ReorderingOptions reordering;
    reordering.blocks = static_cast<std::int32_t>(std::min<std::int64_t>(options.blocks, 1'000'000'000));
    reordering.form = options.form == "dual" ? tables::BlockAngularForm::kDual : tables::BlockAngularForm::kPrimal;
    reordering.algorithm = options.algorithm == "multilevel" ? tables::ReorderingAlgorithm::kMultilevel
                                                             : tables::ReorderingAlgorithm::kSingleLevel;
    reordering.imbalance = options.imbalance;
    reordering.seed = static_cast<std::uint64_t>(options.partition_seed);
    reordering.initial_partitions = static_cast<std::int32_t>(std::min<std::int64_t>(options.initial_partitions, 1024));
    reordering.cycles = static_cast<std::int32_t>(std::min<std::int64_t>(options.cycles, 64));
    return reordering;
  }

  /// The options against the matrix read: more blocks than rows (dual) or columns (primal) is a bad flag.
  void check_options(const CsrView& a, const tables::ReorderingOptions& reordering) const {
    try {
      tables::check_reordering_options(a, reordering);
    } catch (const ParameterError& error) {
      throw UsageError(fmt::format("--blocks {}: {} ({}: {} rows, {} columns)", options.blocks, error.what(),
                                   options.input.string(), a.rows, a.columns));
    }
  }

  nlohmann::json parameters() const {
    return {{"blocks", options.blocks},
            {"form", options.form},
            {"algorithm", options.algorithm},
            {"imbalance", options.imbalance},
            {"partition-seed", options.partition_seed},
            {"initial-partitions", options.initial_partitions},
            {"cycles", options.cycles}};
  }

  nlohmann::json summary(const CsrView& a, const tables::BlockAngularOrdering& ordering, double read_seconds,
                         double reorder_seconds, double write_seconds) const {
    const bool dual = ordering.form == tables::BlockAngularForm::kDual;
    nlohmann::json levels = nlohmann::json::array();
    for (const tables::CoarseningLevel& level : ordering.levels)
      levels.push_back({{"vertices", level.vertices}, {"nets", level.nets}, {"net_cut", level.net_cut}});
    nlohmann::json blocks = nlohmann::json::array();
    for (std::size_t b = 0; b < ordering.block_rows.size(); ++b)
      blocks.push_back({{"rows", ordering.block_rows[b]}, {"columns", ordering.block_columns[b]}});
    return {{"rows", a.rows},
            {"columns", a.columns},
            {"nonzeros", a.entry_count()},
            {"form", options.form},
            {"algorithm", options.algorithm},
            {"blocks", std::move(blocks)},
            {"linking_size", ordering.linking_size},
            {"linking", dual ? "columns" : "rows"},
            // The dual form's l/n; the primal form's l/m, and its l/n as the literature prints it.
            {"linking_percent", truncated_percent(ordering.linking_size, dual ? a.columns : a.rows)},
            {"linking_percent_of_columns", truncated_percent(ordering.linking_size, a.columns)},
            {"linking_percent_of_rows", truncated_percent(ordering.linking_size, a.rows)},
            {"imbalance", ordering.imbalance},
            {"imbalance_limit", options.imbalance},
            {"levels", std::move(levels)},
            {"pattern_checked", true},
            {"read_seconds", read_seconds},
            {"reorder_seconds", reorder_seconds},
            {"write_seconds", write_seconds}};
  }
};

}  // namespace

std::unique_ptr<ReorderStep> make_reorder_step() { return std::make_unique<ReorderStepImpl>(); }

}  // namespace sdc::engine
