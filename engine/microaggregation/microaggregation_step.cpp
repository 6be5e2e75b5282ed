#include "engine/microaggregation/microaggregation_step.h"

// Microaggregation of continuous variables (docs/microaggregation.md; docs/methods
// microaggregation.md). The records are cut into blocks (none, strata, kd-tree or PC1 order); every
// block is microaggregated on the rank that holds it (distributed/compose/microaggregation.h), and the
// masked values and group ids return to the records' ranks. The report gives the groups, their sizes
// and the information loss 100·SSE/SST on z-scores of the original file (§1 of the methods file).

#include <spdlog/spdlog.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "distributed/collective_error.h"
#include "distributed/compose/information_loss.h"
#include "distributed/compose/microaggregation.h"
#include "distributed/compose/moments.h"
#include "engine/blocking.h"
#include "engine/checkpoint.h"
#include "engine/report/run_report.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"
#include "kernels/distance/whitening.h"
#include "kernels/microaggregation/blocking.h"
#include "kernels/microaggregation/grouping.h"
#include "kernels/microaggregation/mdav.h"
#include "kernels/microaggregation/projection.h"
#include "kernels/microaggregation/two_swap.h"
#include "kernels/microaggregation/univariate_optimal.h"
#include "kernels/microaggregation/vmdav.h"
#include "kernels/utility/information_loss.h"

namespace sdc::engine {
namespace {

constexpr const char* kGroupId = "group_id";

enum class Method { kMdav, kVmdav, kUnivariateOptimal, kProjectionZScore, kProjectionPc1 };

const std::map<std::string, Method>& method_names() {
  static const std::map<std::string, Method> names{{"mdav", Method::kMdav},
                                                   {"vmdav", Method::kVmdav},
                                                   {"univariate-optimal", Method::kUnivariateOptimal},
                                                   {"projection-zscore", Method::kProjectionZScore},
                                                   {"projection-pc1", Method::kProjectionPc1}};
  return names;
}

std::string names_of(const std::map<std::string, Method>& names) {
  std::string out;
  for (const auto& [name, method] : names) out += (out.empty() ? "" : "|") + name;
  return out;
}

struct ParsedOptions {
  Method method = Method::kMdav;
  microaggregation::Aggregation aggregation = microaggregation::Aggregation::kMean;
  Blocking blocking;
  int k = 3;
};

enum class Divisor {
  kSample,      ///< n − 1: the tree and PC1 cuts
  kPopulation,  ///< n: the information-loss convention, and the blocks' standardisation
};

/// The whole file's moments (over all ranks) as a scale for microaggregation::standardise: tree cuts
/// compare spreads across variables, so every rank must scale alike.
microaggregation::Moments file_moments(const distance::Moments& moments, Divisor divisor) {
  microaggregation::Moments scale;
  const double n = static_cast<double>(moments.count);
  for (Eigen::Index j = 0; j < moments.mean.size(); ++j) {
    scale.mean.push_back(moments.mean(j));
    const double variance = moments.covariance(j, j);
    if (divisor == Divisor::kSample) {
      scale.sd.push_back(std::sqrt(variance));
    } else {
      scale.sd.push_back(n > 1.0 ? std::sqrt(variance * (n - 1.0) / n) : 0.0);
    }
  }
  return scale;
}

/// First principal component of the correlation matrix, its sign fixed so that the loading of
/// largest magnitude is positive (docs/methods microaggregation.md §5).
std::vector<double> first_component(const distance::Moments& moments) {
  const std::vector<double> sd = moments.standard_deviations();
  const auto p = static_cast<Eigen::Index>(sd.size());
  Eigen::MatrixXd correlation = Eigen::MatrixXd::Zero(p, p);
  for (Eigen::Index a = 0; a < p; ++a)
    for (Eigen::Index b = 0; b < p; ++b) {
      const double scale = sd[static_cast<std::size_t>(a)] * sd[static_cast<std::size_t>(b)];
      correlation(a, b) = scale > 0.0 ? moments.covariance(a, b) / scale : (a == b ? 1.0 : 0.0);
    }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(correlation);
  Eigen::VectorXd component = solver.eigenvectors().col(p - 1);
  Eigen::Index largest = 0;
  component.cwiseAbs().maxCoeff(&largest);
  if (component(largest) < 0.0) component = -component;
  return {component.data(), component.data() + p};
}

class MicroaggregationStepImpl final : public MicroaggregationStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const ParsedOptions parsed = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    StepFrame frame(context, "microaggregate", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "microaggregate", step.parameters, {}, std::nullopt, {}}, write_options,
                                         clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;
    Table& table = part.table;

    const ContinuousColumns continuous = continuous_columns(table, options.variables);
    const NumericColumns& original = continuous.columns;
    check_values(comm, table, original, parsed);
    if (part.summary.row_count < 2)
      throw InvalidInput(options.input.string() + ": " + std::to_string(part.summary.row_count) +
                         " records; microaggregation needs at least 2");
    const distance::Moments moments = distance_moments(comm, original);
    check_spread(moments, parsed);
    if (part.summary.row_count < parsed.k)
      throw InvalidInput(options.input.string() + ": " + std::to_string(part.summary.row_count) +
                         " records, fewer than --group-size " + std::to_string(parsed.k));
    clock.lap("moments");

    const std::vector<std::int64_t> blocks = block_of_records(comm, table, original, moments, parsed);
    clock.lap("blocks");
    const distributed::MicroaggregatedPart result = distributed::microaggregate_blocks(
        comm, table, part.range, options.variables, blocks, block_method(parsed, file_scale(moments, parsed)));
    clock.lap("microaggregation");

    // SSE/SST on z-scores of the original (population moments); `sdc utility` gives the whole battery.
    NumericColumns masked = original;
    masked.columns.clear();
    for (const auto& values : result.masked) masked.columns.emplace_back(values);
    const utility::SumOfSquares loss = loss_of(comm, original, masked);
    clock.lap("information loss");
    nlohmann::json histogram = nlohmann::json::object();
    for (std::size_t size = 0; size < result.group_size_histogram.size(); ++size)
      if (result.group_size_histogram[size] > 0) histogram[std::to_string(size)] = result.group_size_histogram[size];
    std::int64_t smallest = 0;
    for (std::size_t size = 0; size < result.group_size_histogram.size() && smallest == 0; ++size)
      if (result.group_size_histogram[size] > 0) smallest = static_cast<std::int64_t>(size);
    step.results = {{"records", part.summary.row_count},
                    {"variables", options.variables},
                    {"groups", result.groups},
                    {"smallest_group", smallest},
                    {"group_size_histogram", histogram},
                    {"blocks", result.blocks},
                    {"largest_block", result.largest_block},
                    {"sse", loss.sse},
                    {"sst", loss.sst},
                    {"il_percent", loss.il_percent}};
    SDC_CHECK(smallest >= parsed.k || part.summary.row_count < 2 * parsed.k,
              "a microaggregation group holds fewer than k records");

    for (Column& column : table.mutable_columns()) {
      const auto it = std::find(options.variables.begin(), options.variables.end(), column.name());
      if (it == options.variables.end()) continue;
      column.mutable_storage() = result.masked[static_cast<std::size_t>(it - options.variables.begin())];
    }
    std::vector<Column> added;
    added.push_back(Column::id(group_variable(), result.group_id));
    write_table_step_output(comm, options.input, opened, std::move(added), options.variables, options.output,
                            write_options, step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("microaggregate: {} records, {} variables, {} groups in {} blocks, information loss {:.4f}%",
                   part.summary.row_count, options.variables.size(), result.groups, result.blocks,
                   step.results["il_percent"].get<double>());
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kContinuous, "variables", problems);
    try {
      for (const auto& name : parse_blocking(options.blocking, true).strata)
        expect_variable(available, name, VariableType::kCategorical, "blocking", problems);
    } catch (const UsageError& error) {
      problems.push_back(error.what());
    }
  }

  std::vector<VariableInfo> added_variables() const override { return {group_variable()}; }

 private:
  static VariableInfo group_variable() {
    VariableInfo variable;
    variable.name = kGroupId;
    variable.type = VariableType::kId;
    return variable;
  }

  ParsedOptions parse() const {
    ParsedOptions parsed;
    const auto method = method_names().find(options.method);
    if (method == method_names().end())
      throw UsageError("--method: expected " + names_of(method_names()) + ", got '" + options.method + "'");
    parsed.method = method->second;
    if (options.aggregation == "mean")
      parsed.aggregation = microaggregation::Aggregation::kMean;
    else if (options.aggregation == "median")
      parsed.aggregation = microaggregation::Aggregation::kMedian;
    else
      throw UsageError("--aggregation: expected mean or median, got '" + options.aggregation + "'");
    parsed.blocking = parse_blocking(options.blocking, true);
    for (const auto& name : parsed.blocking.strata)
      if (std::find(options.variables.begin(), options.variables.end(), name) != options.variables.end())
        throw UsageError("--blocking: variable '" + name + "' is also microaggregated; a stratum keeps its values");
    parsed.k = static_cast<int>(options.group_size);
    if (options.mode == Mode::kCompat) {
      if (parsed.method != Method::kMdav)
        throw UsageError("--mode compat reproduces sdcMicro's mdav only; give --method mdav or --mode native");
      if (parsed.aggregation != microaggregation::Aggregation::kMean)
        throw UsageError("--mode compat aggregates by the mean, as sdcMicro's mdav does; drop --aggregation median");
    }
    if (parsed.method == Method::kUnivariateOptimal && options.variables.size() != 1)
      throw UsageError("--method univariate-optimal groups one variable; --variables names " +
                       std::to_string(options.variables.size()) + " (run one step per variable)");
    if (options.two_swap && parsed.aggregation != microaggregation::Aggregation::kMean)
      throw UsageError("--two-swap lowers the SSE of groups aggregated by their mean; drop --aggregation median");
    return parsed;
  }

  nlohmann::json parameters() const {
    return {{"variables", options.variables},
            {"group-size", options.group_size},
            {"method", options.method},
            {"aggregation", options.aggregation},
            {"mode", options.mode == Mode::kCompat ? "compat" : "native"},
            {"blocking", options.blocking},
            {"block-max", options.block_max},
            {"gamma", options.gamma},
            {"two-swap", options.two_swap},
            {"two-swap-passes", options.two_swap_passes}};
  }

  /// Native methods need values for every record; compat MDAV follows the reference's rule for
  /// missing values (docs/methods microaggregation.md §2). Infinite values never pass the reader.
  void check_values(const distributed::Communicator& comm, const Table& table, const NumericColumns& x,
                    const ParsedOptions& parsed) const {
    std::optional<distributed::RowProblem> first;
    if (!(options.mode == Mode::kCompat && parsed.method == Method::kMdav && !options.two_swap)) {
      for (std::size_t j = 0; j < x.variables(); ++j)
        for (std::size_t i = 0; i < x.records(); ++i)
          if (std::isnan(x.columns[j][i])) {
            const std::int64_t row = x.row_ids[i];
            if (!first || row < first->row)
              first = distributed::RowProblem{
                  row, table.source() + ": variable '" + x.names[j] + "', row id " + std::to_string(row) +
                           ": missing value; --mode native microaggregates complete records only (impute or "
                           "suppress first, or use --mode compat with --method mdav and no --two-swap)"};
            break;
          }
    }
    distributed::throw_first_row_problem(comm, first);
  }

  /// A constant variable has no z-score: every method but compat MDAV (which weighs it 1, as the
  /// reference does) would divide by zero.
  void check_spread(const distance::Moments& moments, const ParsedOptions& parsed) const {
    if (options.mode == Mode::kCompat && parsed.method == Method::kMdav) return;
    const std::vector<double> sd = moments.standard_deviations();
    for (std::size_t j = 0; j < sd.size(); ++j)
      if (!(sd[j] > 0.0))
        throw InvalidInput(options.input.string() + ": variable '" + options.variables[j] +
                           "' is constant: it cannot be standardised; leave it out of --variables");
  }

  std::vector<std::int64_t> block_of_records(const distributed::Communicator& comm, const Table& table,
                                             const NumericColumns& x, const distance::Moments& moments,
                                             const ParsedOptions& parsed) const {
    const std::size_t n = x.records();
    const std::int64_t min_block = 2 * static_cast<std::int64_t>(parsed.k);
    switch (parsed.blocking.kind) {
      case BlockingKind::kNone:
        return std::vector<std::int64_t>(n, 0);
      case BlockingKind::kStrata:
        return distributed::join_small_blocks(comm, stratum_of_records(comm, table, parsed.blocking.strata), min_block);
      case BlockingKind::kKdTree:
      case BlockingKind::kPrincipalAxisTree: {
        const NumericData z = microaggregation::standardise(x, file_moments(moments, Divisor::kSample));
        return distributed::tree_blocks(comm, z.view(), options.block_max, parsed.k,
                                        parsed.blocking.kind == BlockingKind::kKdTree
                                            ? distributed::TreeCut::kCoordinate
                                            : distributed::TreeCut::kPrincipalAxis);
      }
      case BlockingKind::kPc1: {
        const NumericData z = microaggregation::standardise(x, file_moments(moments, Divisor::kSample));
        const std::vector<double> component = first_component(moments);
        std::vector<double> score(n, 0.0);
        for (std::size_t j = 0; j < z.columns.size(); ++j)
          for (std::size_t i = 0; i < n; ++i) score[i] += component[j] * z.columns[j][i];
        return distributed::ordering_blocks(comm, score, x.row_ids, options.block_max, parsed.k);
      }
    }
    return {};
  }

  /// The records of `x` without a missing value (compat MDAV keeps missing values; the moments and
  /// the information loss are taken over complete records).
  static std::vector<std::size_t> complete_records(const NumericColumns& x) {
    std::vector<std::size_t> complete;
    for (std::size_t i = 0; i < x.records(); ++i) {
      bool any_missing = false;
      for (const auto column : x.columns) any_missing = any_missing || std::isnan(column[i]);
      if (!any_missing) complete.push_back(i);
    }
    return complete;
  }

  static NumericData records_of(const NumericColumns& x, const std::vector<std::size_t>& records) {
    NumericData kept;
    kept.names = x.names;
    kept.columns.resize(x.variables());
    for (std::size_t i : records) {
      kept.row_ids.push_back(x.row_ids[i]);
      for (std::size_t j = 0; j < x.variables(); ++j) kept.columns[j].push_back(x.columns[j][i]);
    }
    return kept;
  }

  /// Means and covariances over all ranks: the constant check and the blocking use them.
  static distance::Moments distance_moments(const distributed::Communicator& comm, const NumericColumns& x) {
    const auto complete = complete_records(x);
    if (complete.size() == x.records()) return distributed::distributed_moments(comm, distance::moments_local(x));
    return distributed::distributed_moments(comm, distance::moments_local(records_of(x, complete).view()));
  }

  static utility::SumOfSquares loss_of(const distributed::Communicator& comm, const NumericColumns& original,
                                       const NumericColumns& masked) {
    const auto complete = complete_records(original);
    if (complete.size() == original.records()) return distributed::distributed_sum_of_squares(comm, original, masked);
    return distributed::distributed_sum_of_squares(comm, records_of(original, complete).view(),
                                                   records_of(masked, complete).view());
  }

  /// The grouping of one block by the chosen method (and the two-swap search), and the group whose
  /// mean follows the reference's tail rule (compat MDAV), −1 when none.
  static microaggregation::Grouping group_block(const NumericColumns& block,
                                                const MicroaggregationStepOptions& settings,
                                                const ParsedOptions& parsed,
                                                const std::optional<microaggregation::Moments>& scale,
                                                std::int32_t& tail_group) {
    const int k = parsed.k;
    tail_group = -1;
    microaggregation::Grouping grouping;
    if (static_cast<std::int64_t>(block.records()) < 2 * static_cast<std::int64_t>(k)) {
      // Too few records to split: one group (blocks are joined until they hold 2k).
      grouping.group_of_record.assign(block.records(), 0);
      grouping.group_count = 1;
      return grouping;
    }
    switch (parsed.method) {
      case Method::kMdav: {
        const bool compat = settings.mode == Mode::kCompat;
        microaggregation::MdavResult mdav = microaggregation::mdav(
            block, k, compat ? microaggregation::MdavMode::kCompat : microaggregation::MdavMode::kNative,
            scale ? &*scale : nullptr);
        grouping = std::move(mdav.grouping);
        if (compat) tail_group = mdav.tail_group;
        break;
      }
      case Method::kVmdav:
        grouping = microaggregation::vmdav(standardised_block(block, scale).view(), k, settings.gamma);
        break;
      case Method::kUnivariateOptimal:
        grouping = microaggregation::univariate_optimal(block.columns.front(), block.row_ids, k);
        break;
      case Method::kProjectionZScore:
        grouping = microaggregation::projection(block, k, microaggregation::Projection::kZScoreSum, 0);
        break;
      case Method::kProjectionPc1:
        grouping = microaggregation::projection(block, k, microaggregation::Projection::kFirstPrincipalComponent, 0);
        break;
    }
    if (settings.two_swap) {
      grouping = microaggregation::two_swap(standardised_block(block, scale).view(), std::move(grouping),
                                            settings.two_swap_passes)
                     .grouping;
      tail_group = -1;  // the exchanges dissolve the reference's tail
    }
    return grouping;
  }

  /// The standardisation of the blocks: none without blocking (the one block is the file, and the
  /// methods standardise it themselves); with blocking the whole file's population moments, so that
  /// a block cut narrowly along one variable does not weigh that variable up (its own moments would).
  static std::optional<microaggregation::Moments> file_scale(const distance::Moments& moments,
                                                             const ParsedOptions& parsed) {
    if (parsed.blocking.kind == BlockingKind::kNone) return std::nullopt;
    return file_moments(moments, Divisor::kPopulation);
  }

  distributed::BlockMicroaggregator block_method(const ParsedOptions& parsed,
                                                 std::optional<microaggregation::Moments> scale) const {
    const MicroaggregationStepOptions settings = options;
    return [settings, parsed, scale](const NumericColumns& block) {
      distributed::BlockMicroaggregation out;
      microaggregation::AggregateOptions aggregate_options;
      if (parsed.blocking.kind == BlockingKind::kStrata &&
          static_cast<std::int64_t>(block.records()) > settings.block_max) {
        // A stratum larger than --block-max is cut further along principal axes, on the rank that
        // holds it.
        const microaggregation::Blocks parts = microaggregation::principal_axis_blocks(
            standardised_block(block, scale).view(), settings.block_max, parsed.k);
        out.part_sizes.assign(static_cast<std::size_t>(parts.block_count), 0);
        for (std::int32_t part : parts.block_of_record) ++out.part_sizes[static_cast<std::size_t>(part)];
        out.grouping = microaggregation::microaggregate_blocks(block, parts, parsed.k, [&](const NumericColumns& part) {
          std::int32_t ignored_tail = -1;
          return group_block(part, settings, parsed, scale, ignored_tail);
        });
      } else {
        out.grouping = group_block(block, settings, parsed, scale, aggregate_options.divide_by_rows_group);
      }
      out.masked = microaggregation::aggregate(block, out.grouping, parsed.aggregation, aggregate_options);
      return out;
    };
  }

  /// z-scores of a block with `scale`, or its own population moments without one.
  static NumericData standardised_block(const NumericColumns& block,
                                        const std::optional<microaggregation::Moments>& scale) {
    return microaggregation::standardise(block, scale ? *scale : microaggregation::population_moments(block));
  }
};

}  // namespace

std::unique_ptr<MicroaggregationStep> make_microaggregation_step() {
  return std::make_unique<MicroaggregationStepImpl>();
}

}  // namespace sdc::engine
