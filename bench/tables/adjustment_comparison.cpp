// The additivity adjustment of a perturbed table, block-angular against the direct sparse Cholesky
// (kernels/tables/additivity_adjustment.h): a generated table of the given shape, its counts perturbed
// by noise in [−D, D] keyed by the cell, the primal block-angular reordering timed, the block-angular
// solve timed for each thread count, the direct (CHOLMOD) solve timed once, and the largest difference
// between the solutions. Prints one line per run and, with --json, writes them.
//
//   sdc_adjustment_comparison --shape 100x100x100 --blocks 8 --threads 1,2 [--direct] [--analyse-direct]
//       [--split-dimension D] [--json out.json]

#include <tbb/global_control.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"
#include "kernels/tables/additivity_adjustment.h"
#include "kernels/tables/block_angular.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/instance_generator.h"
#include "kernels/tables/layer_split.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Peak resident memory of the process so far, in MiB (VmHWM of /proc/self/status).
double peak_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0.0;
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double largest = 1.0;
  for (const double value : b) largest = std::max(largest, std::abs(value));
  double difference = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) difference = std::max(difference, std::abs(a[j] - b[j]));
  return difference / largest;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"additivity adjustment: block-angular against direct sparse Cholesky"};
  std::string shape = "60x60x60";
  std::int32_t blocks = 8;
  std::vector<int> thread_counts{1, 2};
  bool direct = false;
  std::int64_t max_noise = 2;
  std::string json_path;
  std::string ordering_name = "table";
  app.add_option("--ordering", ordering_name,
                 "table: the cells split by the codes of one dimension (kernels/tables/layer_split.h); multilevel: "
                 "primal reordering");
  int split_dimension = 0;
  app.add_option("--split-dimension", split_dimension,
                 "table ordering: split by this dimension (1-based) instead of the predicted cheapest");
  app.add_option("--shape", shape, "table shape (kernels/tables/instance_generator.h)");
  app.add_option("--blocks", blocks, "k of the primal block-angular form");
  app.add_option("--threads", thread_counts, "thread counts of the block-angular solve")->delimiter(',');
  app.add_flag("--direct", direct, "also solve with CHOLMOD on the unreordered system");
  bool analyse_direct = false;
  app.add_flag("--analyse-direct", analyse_direct,
               "print what CHOLMOD's symbolic analysis predicts for the unreordered system's factor (for tables "
               "too large to factor)");
  app.add_option("--max-noise", max_noise, "the counts' noise is uniform in [-D, D]");
  app.add_option("--json", json_path, "write the runs as JSON");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is printed, also into a pipe

  const std::vector<sdc::tables::DimensionEquations> dimensions = sdc::tables::shape_dimensions(shape);
  sdc::tables::InstanceOptions instance_options;
  instance_options.max_cells = 100'000'000;
  auto start = Clock::now();
  const sdc::tables::Instance instance = sdc::tables::generate_instance(dimensions, instance_options, 2026);
  const sdc::CsrMatrix matrix = sdc::tables::constraint_matrix(dimensions, 200'000'000);
  const sdc::CsrView a = matrix.view();
  const double build_seconds = seconds_since(start);
  const sdc::RecordRng rng(2026, sdc::StepId::kKnownAnswerTest);
  std::vector<double> perturbed(instance.values.size());
  std::vector<double> weights(instance.values.size());
  for (std::size_t j = 0; j < perturbed.size(); ++j) {
    const double u = rng.uniform({j, 0, 0, 0});
    const auto noise =
        static_cast<double>(static_cast<std::int64_t>(u * static_cast<double>(2 * max_noise + 1)) - max_noise);
    perturbed[j] = std::max(0.0, instance.values[j] + noise);
    weights[j] = 1.0 / std::max(1.0, perturbed[j]);
  }
  std::printf("shape %s: %lld cells, %lld equations, %lld non-zeros (built in %.2f s)\n", shape.c_str(),
              static_cast<long long>(a.columns), static_cast<long long>(a.rows),
              static_cast<long long>(a.entry_count()), build_seconds);

  nlohmann::json runs = nlohmann::json::array();
  sdc::tables::ReorderingOptions reordering;
  reordering.blocks = blocks;
  reordering.form = sdc::tables::BlockAngularForm::kPrimal;
  reordering.seed = 1;
  start = Clock::now();
  const sdc::tables::BlockAngularOrdering ordering = [&] {
    if (ordering_name == "multilevel") return sdc::tables::reorder_block_angular(a, reordering);
    // The table's own layers, as `perturb-table adjust --ordering table` splits a full table: the
    // split predicted cheapest, or the --split-dimension one.
    std::vector<std::int64_t> cells(static_cast<std::size_t>(a.columns));
    std::iota(cells.begin(), cells.end(), std::int64_t{0});
    std::optional<sdc::tables::LayerOrdering> layers;
    if (split_dimension == 0) {
      layers = sdc::tables::cheapest_layer_ordering(a, dimensions, cells, blocks);
    } else {
      for (sdc::tables::LayerSplit& split : sdc::tables::layer_splits(dimensions, cells, blocks))
        if (split.dimension + 1 == static_cast<std::size_t>(split_dimension)) {
          layers = sdc::tables::layer_ordering(a, dimensions, cells, std::move(split));
          layers->predicted_work = sdc::tables::predicted_layer_work(a, dimensions, cells, *layers);
        }
    }
    if (!layers) throw sdc::UsageError("--blocks, --split-dimension: no dimension of the shape to split by");
    std::printf("split by dimension %zu, predicted work %.3g\n", layers->dimension + 1, layers->predicted_work);
    return std::move(layers->ordering);
  }();
  const double reorder_seconds = seconds_since(start);
  std::printf("primal %s ordering, k = %d: %lld linking rows, imbalance %.4f, %.2f s\n", ordering_name.c_str(), blocks,
              static_cast<long long>(ordering.linking_size), ordering.imbalance, reorder_seconds);

  std::vector<std::int32_t> owned(static_cast<std::size_t>(blocks));
  for (std::int32_t b = 0; b < blocks; ++b) owned[static_cast<std::size_t>(b)] = b;
  sdc::tables::LocalBlockExchange exchange;
  const sdc::tables::AdjustmentOptions options;
  std::vector<double> block_solution;
  for (const int threads : thread_counts) {
    const tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(threads));
    start = Clock::now();
    const sdc::tables::AdjustmentResult result =
        sdc::tables::adjust_additivity_block_angular(a, perturbed, weights, ordering, owned, exchange, options);
    const double seconds = seconds_since(start);
    std::printf(
        "block-angular, %d thread(s): %.2f s (factor %.2f, solve %.2f), %lld PCG iterations, %d "
        "refinements, max |Ax| %.3g, peak %.0f MiB\n",
        threads, seconds, result.factor_seconds, result.solve_seconds, static_cast<long long>(result.pcg_iterations),
        result.refinements, result.max_constraint_residual, peak_mib());
    runs.push_back({{"solver", "block-angular"},
                    {"threads", threads},
                    {"seconds", seconds},
                    {"factor_seconds", result.factor_seconds},
                    {"solve_seconds", result.solve_seconds},
                    {"pcg_iterations", result.pcg_iterations},
                    {"max_constraint_residual", result.max_constraint_residual},
                    {"reorder_seconds", reorder_seconds},
                    {"linking_rows", ordering.linking_size}});
    block_solution = result.adjusted;
  }
  if (analyse_direct) {
    start = Clock::now();
    std::vector<std::int64_t> all_rows(static_cast<std::size_t>(a.rows));
    std::iota(all_rows.begin(), all_rows.end(), std::int64_t{0});
    const sdc::tables::FactorPrediction factor = sdc::tables::predict_normal_factor(a, all_rows);
    const double seconds = seconds_since(start);
    std::printf("direct (CHOLMOD) analysis: %.3g flops, %.3g factor non-zeros (%.1f GB of values), %.2f s\n",
                factor.flops, factor.nonzeros, 8e-9 * factor.nonzeros, seconds);
    runs.push_back({{"solver", "direct analysis"},
                    {"seconds", seconds},
                    {"predicted_flops", factor.flops},
                    {"predicted_factor_nonzeros", factor.nonzeros}});
  }
  if (direct) {
    start = Clock::now();
    const sdc::tables::AdjustmentResult result = sdc::tables::adjust_additivity_direct(a, perturbed, weights, options);
    const double seconds = seconds_since(start);
    const double difference = block_solution.empty() ? 0.0 : largest_difference(block_solution, result.adjusted);
    std::printf(
        "direct (CHOLMOD): %.2f s (factor %.2f, solve %.2f), max |Ax| %.3g, peak %.0f MiB; largest "
        "relative difference to block-angular %.3g\n",
        seconds, result.factor_seconds, result.solve_seconds, result.max_constraint_residual, peak_mib(), difference);
    runs.push_back({{"solver", "direct"},
                    {"seconds", seconds},
                    {"factor_seconds", result.factor_seconds},
                    {"solve_seconds", result.solve_seconds},
                    {"max_constraint_residual", result.max_constraint_residual},
                    {"relative_difference", difference}});
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << nlohmann::json{{"shape", shape},      {"cells", a.columns},
                          {"equations", a.rows}, {"nonzeros", a.entry_count()},
                          {"blocks", blocks},    {"runs", runs}}
               .dump(2)
        << "\n";
  }
  return 0;
}
