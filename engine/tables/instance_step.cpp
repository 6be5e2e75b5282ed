#include "engine/tables/instance_step.h"

// A synthetic table-protection instance (docs/tables.md, "Synthetic instances"): the shape gives the
// dimensions' equation lists, and with them the closed-form sizes of A, checked against the limits on
// every rank before anything is written. The coordinator streams A to the Matrix Market file; the cell
// list needs the generated cells, so only --equations generates them (and needs a seed). A is a
// function of the shape alone and may be far larger than any cell list held in memory.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "distributed/collective_error.h"
#include "distributed/comm.h"
#include "engine/table_step.h"
#include "io/atomic_output.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/instance_generator.h"

namespace sdc::engine {
namespace {

class InstanceStepImpl final : public InstanceStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const std::vector<tables::DimensionEquations> dimensions = parse_shape();
    const tables::TableShapeSizes sizes = shape_sizes(dimensions);
    const tables::InstanceOptions instance_options = generator_options();
    check_limits(sizes);
    std::optional<io::Seed> seed;
    if (options.equations) seed = io::require_seed(options.seed_file, "table instance");
    io::ensure_output_directory_writable(options.output);
    if (options.equations) io::ensure_output_directory_writable(*options.equations);

    StepFrame frame(context, "table instance", parameters(), comm.is_coordinator());
    nlohmann::json results;
    distributed::agree_on_error(comm, [&] {
      if (!comm.is_coordinator()) return;
      io::write_stream_atomically(options.output, context.permissions,
                                  [&](std::ostream& out) { tables::write_constraint_matrix_market(out, dimensions); });
      frame.clock.lap("constraint matrix");
      nlohmann::json statuses = nullptr;
      if (options.equations) {
        const tables::Instance instance = tables::generate_instance(dimensions, instance_options, seed->value);
        frame.clock.lap("generate");
        io::write_stream_atomically(*options.equations, context.permissions, [&](std::ostream& out) {
          tables::write_cell_equation_list(out, instance.dimensions, instance.cells());
        });
        frame.clock.lap("cell and equation list");
        statuses = status_counts(instance);
      }
      results = summary(dimensions, sizes, std::move(statuses));
    });
    frame.step.results = nlohmann::json::parse(comm.broadcast_string(results.dump()));
    frame.timer.stop();
    if (comm.is_coordinator())
      spdlog::info("table instance {}: {} cells, {} equations, {} non-zeros", options.shape, sizes.cells,
                   sizes.equations, sizes.nonzeros);
    if (seed) frame.report.set_seed_fingerprint(seed->fingerprint());
    frame.report.add_output(options.output, OutputKind::kMatrix);
    if (options.equations) frame.report.add_output(*options.equations, OutputKind::kMatrix);
    frame.report.write(comm, options.report);
  }

  bool needs_seed() const override { return options.equations.has_value(); }
  OutputKind output_kind() const override { return OutputKind::kMatrix; }

 private:
  std::vector<tables::DimensionEquations> parse_shape() const {
    try {
      return tables::shape_dimensions(options.shape);
    } catch (const ParameterError& error) {
      throw UsageError(fmt::format("--shape {}: {}", options.shape, error.what()));
    }
  }

  tables::TableShapeSizes shape_sizes(const std::vector<tables::DimensionEquations>& dimensions) const {
    try {
      return tables::constraint_sizes(dimensions);
    } catch (const ParameterError& error) {
      throw UsageError(fmt::format("--shape {}: {}", options.shape, error.what()));
    }
  }

  /// The generator's options from the flags, its defaults where a flag is absent. The flags describe
  /// the cell list, so they are refused without --equations rather than silently ignored.
  tables::InstanceOptions generator_options() const {
    const bool cell_list_flag = options.values || options.mean_count || options.density || options.log_mean ||
                                options.log_sd || options.min_frequency || options.protection_fraction;
    if (cell_list_flag && !options.equations)
      throw UsageError(
          "--values, --mean-count, --density, --log-mean, --log-sd, --min-frequency and --protection-fraction "
          "describe the cells of the cell list: give --equations");
    tables::InstanceOptions generator;
    const bool magnitudes = options.values.value_or("counts") == "magnitudes";
    if ((options.log_mean || options.log_sd) && !magnitudes)
      throw UsageError("--log-mean and --log-sd describe magnitude contributions: give --values magnitudes");
    generator.leaf_values = magnitudes ? tables::LeafValues::kMagnitudes : tables::LeafValues::kCounts;
    generator.mean_count = options.mean_count.value_or(generator.mean_count);
    generator.density = options.density.value_or(generator.density);
    generator.log_mean = options.log_mean.value_or(generator.log_mean);
    generator.log_sd = options.log_sd.value_or(generator.log_sd);
    generator.frequency_threshold = options.min_frequency.value_or(generator.frequency_threshold);
    generator.protection_fraction = options.protection_fraction.value_or(generator.protection_fraction);
    generator.max_cells = options.max_cells;
    return generator;
  }

  void check_limits(const tables::TableShapeSizes& sizes) const {
    if (sizes.nonzeros > options.max_nonzeros)
      throw UsageError(fmt::format(
          "--shape {}: A would have {} non-zeros ({} equations over {} cells), more than --max-nonzeros {}: "
          "choose a smaller shape or raise --max-nonzeros",
          options.shape, sizes.nonzeros, sizes.equations, sizes.cells, options.max_nonzeros));
    if (options.equations && sizes.cells > options.max_cells)
      throw UsageError(
          fmt::format("--shape {}: the cell list would hold {} cells, more than --max-cells {} (about 70 bytes each in "
                      "memory): choose a smaller shape, raise --max-cells or leave out --equations",
                      options.shape, sizes.cells, options.max_cells));
  }

  nlohmann::json parameters() const {
    const auto optional = [](const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); };
    return {{"shape", options.shape},
            {"values", optional(options.values)},
            {"mean-count", optional(options.mean_count)},
            {"density", optional(options.density)},
            {"log-mean", optional(options.log_mean)},
            {"log-sd", optional(options.log_sd)},
            {"min-frequency", optional(options.min_frequency)},
            {"protection-fraction", optional(options.protection_fraction)},
            {"max-cells", options.max_cells},
            {"max-nonzeros", options.max_nonzeros}};
  }

  static nlohmann::json status_counts(const tables::Instance& instance) {
    std::int64_t safe = 0;
    std::int64_t sensitive = 0;
    std::int64_t zero = 0;
    for (const tables::CellStatus status : instance.statuses) {
      if (status == tables::CellStatus::kSensitive)
        ++sensitive;
      else if (status == tables::CellStatus::kZero)
        ++zero;
      else
        ++safe;
    }
    return {{"safe", safe}, {"sensitive", sensitive}, {"zero", zero}};
  }

  nlohmann::json summary(const std::vector<tables::DimensionEquations>& dimensions,
                         const tables::TableShapeSizes& sizes, nlohmann::json statuses) const {
    nlohmann::json per_dimension = nlohmann::json::array();
    for (const tables::DimensionEquations& dimension : dimensions) {
      std::vector<bool> is_parent(static_cast<std::size_t>(dimension.code_count), false);
      std::int64_t child_entries = 0;
      for (const tables::Equation& equation : dimension.equations) {
        is_parent[static_cast<std::size_t>(equation.parent)] = true;
        child_entries += static_cast<std::int64_t>(equation.children.size());
      }
      per_dimension.push_back({{"name", dimension.name},
                               {"codes", dimension.code_count},
                               {"leaves", std::count(is_parent.begin(), is_parent.end(), false)},
                               {"equations", dimension.equations.size()},
                               {"child_entries", child_entries}});
    }
    return {{"shape", options.shape},     {"dimensions", std::move(per_dimension)},
            {"cells", sizes.cells},       {"equations", sizes.equations},
            {"nonzeros", sizes.nonzeros}, {"statuses", std::move(statuses)}};
  }
};

}  // namespace

std::unique_ptr<InstanceStep> make_instance_step() { return std::make_unique<InstanceStepImpl>(); }

}  // namespace sdc::engine
