#include "engine/tables/cell_key_step.h"

// The cell key method on a table file (docs/tables.md, "The cell key method"; docs/methods cellkey.md).
// Every rank perturbs the cells it read: a cell's published count is a function of its count and cell
// key alone (kernels/tables/cell_key.h), so the ranks need not talk for it, and a cell of two tables
// tabulated from the same keyed records gets the same noise. The coordinator then gathers every cell's
// index, count and published count (24 bytes a cell; 40 with values) for what needs the whole table:
// the utility measures with their percentiles, and the gaps of the table's relations.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "distributed/collective_error.h"
#include "engine/flags.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "engine/tables/table_cells.h"
#include "engine/tables/table_file.h"
#include "io/atomic_output.h"
#include "io/input_file.h"
#include "io/sha256.h"
#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"
#include "kernels/tables/cell_key.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/ptable.h"

namespace sdc::engine {
namespace {

/// The p-table the step uses, with how it came about.
struct ChosenPTable {
  tables::PTable table;
  std::vector<tables::PTableRowReport> rows;  ///< a built table's rows; none for a file
  std::string source;                         ///< "built" or the file's name
  /// No published count from 1 to this: js of a built table, the widest blocked range of a file's.
  std::int64_t blocked_up_to = 0;
};

/// The largest j such that no row of `table` publishes a count in 1 .. j.
std::int64_t blocked_range_of(const tables::PTable& table) {
  std::int64_t smallest_positive = std::numeric_limits<std::int64_t>::max();
  for (const auto& row : table.rows)
    for (const tables::PTableEntry& entry : row)
      if (entry.target > 0 && entry.probability > 0.0) smallest_positive = std::min(smallest_positive, entry.target);
  return smallest_positive == std::numeric_limits<std::int64_t>::max() ? 0 : smallest_positive - 1;
}

/// Each cell's published figures, in the order of the table's rows.
struct PublishedCells {
  std::vector<std::int64_t> counts;
  std::vector<double> values;  ///< the cells' values, when the values are perturbed
  std::vector<double> published_values;
};

class CellKeyStepImpl final : public CellKeyStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const tables::LookupRule rule = lookup_rule();
    const ChosenPTable ptable = choose_ptable();
    const tables::MagnitudePerturbationOptions magnitude = magnitude_options();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    StepFrame frame(context, "perturb-table ckm", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    nlohmann::json identity = step.parameters;
    identity["ptable"] = tables::format_ptable(ptable.table, tables::PTableFormat::kTauArgus);
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt,
                        {"", "perturb-table ckm", identity, {}, std::nullopt, {}}, write_options, clock);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kAnalysis, OutputKind::kTable))
      return;
    const Table& cells = opened.part.table;
    const std::string source = options.input.string();
    std::vector<TableFileDimension> dimensions;
    TableCells local;
    distributed::agree_on_error(comm, [&] {
      dimensions = table_file_dimensions(cells, source);
      require_cell_keys(cells, source);
      local = read_table_cells(cells, dimensions);
    });
    const bool magnitude_table = cells.find(cell_columns::kValue) != nullptr;
    if (!options.flex.empty() && !magnitude_table)
      throw UsageError("--flex: " + source + " is a frequency table; the magnitude flags need a table of a --value");

    PublishedCells published;
    std::vector<Column> added;
    distributed::agree_on_error(comm,
                                [&] { perturb_counts(cells, local.counts, ptable.table, rule, published, added); });
    if (magnitude_table && !options.flex.empty())
      distributed::agree_on_error(comm, [&] { perturb_values(cells, ptable.table, magnitude, published, added); });
    clock.lap("perturb");

    const TableCells all = gather_table_cells(comm, local);
    PublishedCells all_published{gather_row_values(comm, std::span<const std::int64_t>(published.counts)),
                                 gather_row_values(comm, std::span<const double>(published.values)),
                                 gather_row_values(comm, std::span<const double>(published.published_values))};
    nlohmann::json results;
    distributed::agree_on_error(comm, [&] {
      if (!comm.is_coordinator()) return;
      results = summary(context, dimensions, ptable, all, all_published, magnitude_table && !options.flex.empty());
      if (options.write_ptable) write_ptable_file(ptable.table, context);
    });
    step.results = nlohmann::json::parse(comm.broadcast_string(results.dump()));
    clock.lap("measures");

    write_options.provenance.step_results = step.results.dump();  // what --resume gives back
    write_table_step_output(comm, options.input, opened, std::move(added), {}, options.output, std::move(write_options),
                            step.warnings);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("perturb-table ckm: {} cells, {} unchanged, {} relations not additive",
                   step.results["cells"].get<std::int64_t>(),
                   step.results["measures"]["cells_unchanged"].get<std::int64_t>(),
                   step.results["non_additivity"]["non_additive"].get<std::int64_t>());
    report.add_output(options.output, OutputKind::kTable);
    if (options.write_ptable) report.add_output(*options.write_ptable, OutputKind::kMatrix);
    finish_table_step(comm, report, options.input, opened, {}, options.report);
  }

  OutputKind input_kind() const override { return OutputKind::kTable; }
  OutputKind output_kind() const override { return OutputKind::kTable; }

  std::vector<VariableInfo> added_variables() const override {
    return {cell_variable(cell_columns::kPublished), cell_variable(cell_columns::kNoise)};
  }

 private:
  tables::LookupRule lookup_rule() const {
    if (options.lookup == "tau-argus") return tables::LookupRule::kTauArgus;
    if (options.lookup == "sas") return tables::LookupRule::kSas;
    throw UsageError("--lookup: give tau-argus or sas");
  }

  ChosenPTable choose_ptable() const {
    ChosenPTable chosen;
    if (options.ptable) {
      const bool parameters_given = options.max_noise || options.variance || options.js || !options.pstay.empty() ||
                                    options.mono || options.optim;
      if (parameters_given)
        throw UsageError(
            "--ptable: give either a p-table file or its parameters (--max-noise, --variance, --js, --pstay, --mono, "
            "--optim), not both");
      const std::string text = io::read_input_file(*options.ptable, "--ptable", io::kMaxTextInputBytes);
      chosen.table = tables::parse_ptable(text, options.ptable->string());
      chosen.source = options.ptable->filename().string();
      chosen.blocked_up_to = blocked_range_of(chosen.table);
      return chosen;
    }
    tables::PTableParameters parameters;
    parameters.max_noise = options.max_noise.value_or(2);
    parameters.variance = options.variance.value_or(1.0);
    parameters.js = options.js.value_or(0);
    parameters.pstay = options.pstay;
    if (options.mono) {
      parameters.mono.clear();
      for (const std::string& item : split_list(*options.mono, ',')) {
        if (item != "true" && item != "false") throw UsageError("--mono: '" + item + "' is neither true nor false");
        parameters.mono.push_back(item == "true");
      }
    }
    parameters.optim = static_cast<int>(options.optim.value_or(1));
    try {
      tables::PTableBuild built = tables::build_ptable_with_report(parameters);
      chosen.table = std::move(built.table);
      chosen.rows = std::move(built.rows);
    } catch (const ParameterError& error) {
      throw UsageError(std::string("the p-table's parameters (--max-noise, --variance, --js, --pstay, --mono, "
                                   "--optim): ") +
                       error.what());
    }
    chosen.source = "built";
    chosen.blocked_up_to = parameters.js;
    return chosen;
  }

  tables::MagnitudePerturbationOptions magnitude_options() const {
    tables::MagnitudePerturbationOptions magnitude;
    if (options.flex.empty()) {
      if (!options.epsilon.empty() || options.mu_c != 0.0 || options.scramble_first_key)
        throw UsageError("--epsilon, --mu-c and --scramble-first-key perturb magnitude cells: give --flex too");
      return magnitude;
    }
    if (options.flex.size() != 3 && options.flex.size() != 4) throw UsageError("--flex: give p_S,p_L,F or p_S,p_L,F,q");
    magnitude.flex = {options.flex[0], options.flex[1], options.flex[2],
                      options.flex.size() == 4 ? options.flex[3] : 3.0};
    if (!options.epsilon.empty()) magnitude.epsilon = options.epsilon;
    magnitude.mu_c = options.mu_c;
    magnitude.scramble_first_key = options.scramble_first_key;
    magnitude.rule = lookup_rule();
    try {
      tables::check_magnitude_perturbation(magnitude);
    } catch (const ParameterError& error) {
      throw UsageError(std::string("--flex, --epsilon, --mu-c: ") + error.what());
    }
    return magnitude;
  }

  nlohmann::json parameters() const {
    const auto optional = [](const auto& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); };
    return {{"ptable", options.ptable ? nlohmann::json(options.ptable->filename().string()) : nlohmann::json(nullptr)},
            {"max-noise", optional(options.max_noise)},
            {"variance", optional(options.variance)},
            {"js", optional(options.js)},
            {"pstay", options.pstay},
            {"mono", optional(options.mono)},
            {"optim", optional(options.optim)},
            {"lookup", options.lookup},
            {"flex", options.flex},
            {"epsilon", options.epsilon},
            {"mu-c", options.mu_c},
            {"magnitude-keys", options.magnitude_keys},
            {"scramble-first-key", options.scramble_first_key}};
  }

  static void require_cell_keys(const Table& cells, const std::string& source) {
    for (const char* name : {cell_columns::kCellKey, cell_columns::kKeyModulus})
      if (cells.find(name) == nullptr)
        throw InvalidInput(source + ": the table has no '" + name +
                           "' variable: tabulate it with --record-key (sdc table tabulate)");
  }

  /// Every row's cell key from `key_variable` and the key modulus, each key below its modulus.
  static std::vector<tables::CellKey> cell_keys(const Table& cells, const char* key_variable) {
    const std::vector<std::int64_t> keys = whole_cell_values(cells, key_variable);
    const std::vector<std::int64_t> moduli = whole_cell_values(cells, cell_columns::kKeyModulus);
    std::vector<tables::CellKey> out(keys.size());
    for (std::size_t r = 0; r < keys.size(); ++r) {
      const auto key = static_cast<std::uint64_t>(keys[r]);
      const auto modulus = static_cast<std::uint64_t>(moduli[r]);
      if (modulus < 2 || modulus > tables::kBinaryKeyModulus || key >= modulus)
        throw InvalidInput(fmt::format("{}: variable '{}', row id {}: a cell key must lie below the key modulus",
                                       cells.source(), key_variable,
                                       cells.first_row_id() + static_cast<std::int64_t>(r)));
      out[r] = {key, modulus};
    }
    return out;
  }

  void perturb_counts(const Table& cells, std::span<const std::int64_t> counts, const tables::PTable& ptable,
                      tables::LookupRule rule, PublishedCells& out, std::vector<Column>& added) const {
    const auto n = static_cast<std::size_t>(cells.row_count());
    const Column* weighted = cells.find(cell_columns::kWeightedCount);
    const std::vector<tables::CellKey> keys = cell_keys(cells, cell_columns::kCellKey);
    std::vector<tables::FrequencyCell> inputs(n);
    for (std::size_t r = 0; r < n; ++r) {
      inputs[r].count = counts[r];
      inputs[r].weighted_count = weighted != nullptr ? weighted->values()[r] : static_cast<double>(counts[r]);
      inputs[r].key = keys[r];
    }
    tables::FrequencyPerturbationOptions frequency;
    frequency.rule = rule;
    const auto perturbed = tables::perturb_frequency_cells(inputs, ptable, frequency);
    std::vector<double> published_weighted(n);
    out.counts.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
      out.counts[r] = perturbed[r].count;
      published_weighted[r] = perturbed[r].weighted_count;
    }
    for (Column& column : published_count_columns(counts, out.counts)) added.push_back(std::move(column));
    if (weighted != nullptr)
      added.push_back(
          Column::continuous(cell_variable(cell_columns::kPublishedWeightedCount), std::move(published_weighted)));
  }

  void perturb_values(const Table& cells, const tables::PTable& ptable,
                      const tables::MagnitudePerturbationOptions& magnitude, PublishedCells& out,
                      std::vector<Column>& added) const {
    const auto n = static_cast<std::size_t>(cells.row_count());
    const std::string source = cells.source();
    const char* key_variable = options.magnitude_keys == "all" ? cell_columns::kCellKey : cell_columns::kCellKeyNonzero;
    if (cells.find(key_variable) == nullptr)
      throw InvalidInput(source + ": the table has no '" + key_variable + "' variable: tabulate it with --value and " +
                         "--record-key (sdc table tabulate)");
    // The weighted value and contributions when the table has them: the published figure is the weighted one.
    const bool weighted = cells.find(cell_columns::kWeightedValue) != nullptr;
    const auto values =
        cells.require(weighted ? cell_columns::kWeightedValue : cell_columns::kValue, VariableType::kContinuous)
            .values();
    const std::size_t k = magnitude.epsilon.size();
    std::vector<std::span<const double>> top(k);
    std::vector<std::span<const double>> top_weight(k);
    for (std::size_t j = 0; j < k; ++j) {
      const std::string name = cell_columns::kTopPrefix + std::to_string(j + 1);
      if (cells.find(name) == nullptr)
        throw InvalidInput(
            fmt::format("{}: the table has no '{}' variable: --epsilon uses the {} largest "
                        "contributions; tabulate with --top-contributions {}",
                        source, name, k, k));
      top[j] = cells.require(name, VariableType::kContinuous).values();
      if (weighted) top_weight[j] = cells.require(cell_columns::kTopWeightPrefix + std::to_string(j + 1)).values();
    }
    const Column* status = cells.find(cell_columns::kStatus);
    const std::vector<tables::CellKey> keys = cell_keys(cells, key_variable);
    std::vector<double> contributions(n * k);
    std::vector<tables::MagnitudeCell> inputs(n);
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t j = 0; j < k; ++j)
        contributions[r * k + j] = weighted ? top[j][r] * top_weight[j][r] : top[j][r];
      inputs[r].total = values[r];
      inputs[r].top = std::span<const double>(contributions).subspan(r * k, k);
      inputs[r].key = keys[r];
      inputs[r].sensitive =
          status != nullptr && tables::is_sensitive(static_cast<tables::SensitivityStatus>(status->codes()[r]));
    }
    const tables::MagnitudeNoiseTable noise_table = tables::symmetric_noise_table(ptable);
    const auto perturbed = tables::perturb_magnitude_cells(inputs, noise_table, &ptable, magnitude);
    std::vector<double> published(n);
    std::vector<double> noise(n);
    out.values.assign(values.begin(), values.end());
    out.published_values.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
      published[r] = perturbed[r].value;
      noise[r] = perturbed[r].noise;
      out.published_values[r] = perturbed[r].value;
    }
    added.push_back(Column::continuous(cell_variable(cell_columns::kPublishedValue), std::move(published)));
    added.push_back(Column::continuous(cell_variable(cell_columns::kValueNoise), std::move(noise)));
  }

  void write_ptable_file(const tables::PTable& table, const RunContext& context) const {
    io::write_stream_atomically(*options.write_ptable, context.permissions, [&](std::ostream& out) {
      tables::write_ptable(out, table, tables::PTableFormat::kTauArgus);
    });
  }

  /// On the coordinator, over every cell of the table.
  nlohmann::json summary(const RunContext& context, const std::vector<TableFileDimension>& dimensions,
                         const ChosenPTable& ptable, const TableCells& all, const PublishedCells& published,
                         bool magnitude) const {
    std::vector<tables::DimensionEquations> equations;
    std::int64_t space = 1;
    for (const TableFileDimension& dimension : dimensions) {
      equations.push_back(tables::equations_of(dimension.hierarchy));
      space *= static_cast<std::int64_t>(dimension.hierarchy.size());
    }
    const tables::CkmMeasures m = tables::ckm_measures(all.counts, published.counts);
    const tables::NonAdditivity gaps = tables::table_non_additivity(equations, all.cells, published.counts);
    std::int64_t in_blocked_range = 0;
    std::int64_t original_total = 0;
    std::int64_t published_total = 0;
    for (std::size_t c = 0; c < all.cells.size(); ++c) {
      if (published.counts[c] >= 1 && published.counts[c] <= ptable.blocked_up_to) ++in_blocked_range;
      if (all.cells[c] == 0) {  // the grand total, when the table has records
        original_total = all.counts[c];
        published_total = published.counts[c];
      }
    }
    const auto distances = [](const tables::DistanceSummary& d) {
      nlohmann::json percentiles = nlohmann::json::object();
      for (std::size_t i = 0; i < tables::kCkmPercentiles.size() && i < d.percentiles.size(); ++i)
        percentiles[fmt::format("p{}", static_cast<int>(std::lround(tables::kCkmPercentiles[i] * 100)))] =
            d.percentiles[i];
      return nlohmann::json{{"mean", d.mean_all}, {"percentiles", percentiles}};
    };
    nlohmann::json noise_counts = nlohmann::json::array();
    for (const tables::NoiseCount& entry : m.noise_counts)
      noise_counts.push_back({{"noise", entry.noise}, {"cells", entry.cells}});
    nlohmann::json rows = nlohmann::json::array();
    for (const tables::PTableRowReport& row : ptable.rows)
      rows.push_back({{"i", row.i},
                      {"mean", row.mean},
                      {"variance", row.variance},
                      {"variance_fails", row.variance_fails},
                      {"pstay", row.pstay}});
    const tables::PTableRowMoments symmetric = tables::ptable_row_moments(ptable.table, ptable.table.rows.size() - 1);
    nlohmann::json results{{"cells", static_cast<std::int64_t>(all.cells.size())},
                           {"cell_space", space},
                           {"kind", magnitude ? "magnitude" : "frequency"},
                           {"original_total", reported_count(original_total, context.report_min_count)},
                           {"published_total", reported_count(published_total, context.report_min_count)},
                           {"ptable",
                            {{"source", ptable.source},
                             {"max_noise", ptable.table.max_noise()},
                             {"variance", symmetric.variance},
                             {"rows", static_cast<std::int64_t>(ptable.table.rows.size())},
                             {"blocked_up_to", ptable.blocked_up_to},
                             {"lookup", options.lookup},
                             {"built_rows", std::move(rows)}}},
                           {"published_in_blocked_range", in_blocked_range},
                           {"measures",
                            {{"cells_unchanged", m.cells_unchanged},
                             {"false_zeros", m.false_zeros},
                             {"absolute_deviation", distances(m.absolute)},
                             {"relative_deviation", distances(m.relative)},
                             {"root_deviation", distances(m.root)},
                             {"hellinger", m.hellinger},
                             {"ones_unchanged_share", m.ones_unchanged_share},
                             {"twos_unchanged_share", m.twos_unchanged_share},
                             {"noise_counts", std::move(noise_counts)}}},
                           {"non_additivity",
                            {{"relations", gaps.relations},
                             {"non_additive", gaps.non_additive},
                             {"max_gap", gaps.max_gap},
                             {"mean_gap", gaps.mean_gap}}},
                           {"magnitude", nullptr}};
    if (magnitude) results["magnitude"] = value_deviations(published);
    return results;
  }

  /// Absolute and relative deviations of the published values (cells of value 0 have none).
  static nlohmann::json value_deviations(const PublishedCells& all) {
    ExactSum absolute;
    ExactSum relative;
    double max_relative = 0.0;
    std::int64_t nonzero = 0;
    std::int64_t sign_changes = 0;
    for (std::size_t c = 0; c < all.values.size(); ++c) {
      const double deviation = std::fabs(all.published_values[c] - all.values[c]);
      absolute.add(deviation);
      if (all.values[c] == 0.0) continue;
      ++nonzero;
      const double r = deviation / std::fabs(all.values[c]);
      relative.add(r);
      max_relative = std::max(max_relative, r);
      if ((all.values[c] > 0.0) != (all.published_values[c] > 0.0) && all.published_values[c] != 0.0) ++sign_changes;
    }
    const auto cells = static_cast<double>(all.values.size());
    return {{"mean_absolute_deviation", cells > 0 ? absolute.value() / cells : 0.0},
            {"mean_relative_deviation", nonzero > 0 ? relative.value() / static_cast<double>(nonzero) : 0.0},
            {"max_relative_deviation", max_relative},
            {"sign_changes", sign_changes}};
  }
};

}  // namespace

std::unique_ptr<CellKeyStep> make_cell_key_step() { return std::make_unique<CellKeyStepImpl>(); }

}  // namespace sdc::engine
