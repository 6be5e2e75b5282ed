#include "engine/swapping/targeted_swap_step.h"

// Targeted record swapping of households (docs/swapping.md; docs/methods swapping.md §2). The input is
// split between households; the risk per level comes from counts over all ranks, the coordinator plans
// the swaps from one summary per household (distributed/compose/targeted_swap.h), and every rank writes
// its swapped households' new geography and carry-along values in place, with a per-record flag. The
// report counts, per level, the households at risk and those that must swap, the pairs swapped, the
// households without a donor, and the households at risk once more after swapping.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <set>

#include "distributed/collective_error.h"
#include "distributed/compose/targeted_swap.h"
#include "engine/checkpoint.h"
#include "engine/flags.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/seed.h"
#include "kernels/core/error.h"
#include "kernels/core/record_rng.h"

namespace sdc::engine {
namespace {

constexpr const char* kSwappedFlag = "trs_swapped";

VariableInfo swapped_flag_variable() {
  VariableInfo variable;
  variable.name = kSwappedFlag;
  variable.type = VariableType::kCategorical;
  variable.levels = {"false", "true"};
  return variable;
}

swapping::RecordValues record_values(const Column& column) {
  switch (column.type()) {
    case VariableType::kCategorical:
      return column.codes();
    case VariableType::kContinuous:
      return column.values();
    case VariableType::kId:
      return column.ids();
  }
  return column.ids();
}

/// Writes value_word `word` back into row `row` of `column`.
void put_word(Column& column, std::size_t row, std::uint64_t word) {
  switch (column.type()) {
    case VariableType::kCategorical:
      column.mutable_codes()[row] = static_cast<std::int32_t>(static_cast<std::int64_t>(word));
      return;
    case VariableType::kContinuous:
      column.mutable_values()[row] = std::bit_cast<double>(word);
      return;
    case VariableType::kId:
      column.mutable_ids()[row] = static_cast<std::int64_t>(word);
      return;
  }
}

class TargetedSwapStepImpl final : public TargetedSwapStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const Parsed parsed = parse();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "swap targeted");

    StepFrame frame(context, "swap targeted", parameters(), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());
    OpenedTable opened = open_table_step(comm, context, options.input, options.household,
                                         {"",
                                          "swap targeted",
                                          step.parameters,
                                          {StepId::kTargetedSwapDonor, StepId::kTargetedSwapQuota},
                                          seed.fingerprint(),
                                          {}},
                                         write_options, clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    for (const auto& warning : parsed.warnings) step.warnings.push_back(warning);
    TablePart& part = opened.part;
    Table& table = part.table;

    const auto household_ids = table.require(options.household, VariableType::kId).ids();
    const KeyColumns risk_variables = key_columns(table, options.risk_variables);
    const KeyColumns geography = key_columns(table, options.hierarchy);
    const std::string hint = "targeted swapping counts complete records: recode missing values first";
    reject_missing_codes(comm, options.input, table, geography, options.hierarchy, hint);
    reject_missing_codes(comm, options.input, table, risk_variables, options.risk_variables, hint);
    swapping::HouseholdRecords records{household_ids, geography, {}, {}, {}};
    for (const auto& name : parsed.similar_variables)
      records.similar.push_back(table.require(name, VariableType::kCategorical).codes());
    for (const auto& name : parsed.carry_along) records.carry_along.push_back(record_values(table.require(name)));
    reject_disagreeing_members(comm, table, records, parsed);
    reject_unnested_hierarchy(comm, table, geography);
    clock.lap("checks");

    std::vector<std::vector<double>> person_risk =
        distributed::distributed_person_risk(comm, risk_variables, geography);
    records.person_risk.assign(person_risk.begin(), person_risk.end());
    clock.lap("risk before");
    swapping::TargetedSwapOptions swap_options;
    swap_options.threshold =
        swapping::targeted_swap_threshold(options.risk_threshold.value_or(0.0), options.k_anonymity);
    swap_options.swap_fraction = options.swap_fraction;
    swap_options.profiles = parsed.profiles;
    const distributed::TargetedSwappedPart swapped =
        distributed::targeted_swap_households(comm, records, swap_options, seed.value);
    clock.lap("swap");

    std::vector<std::int32_t> flag(static_cast<std::size_t>(table.row_count()), 0);
    std::vector<Column*> moved;
    for (const auto& name : options.hierarchy) moved.push_back(&mutable_column(table, name));
    for (const auto& name : parsed.carry_along) moved.push_back(&mutable_column(table, name));
    for (std::size_t k = 0; k < swapped.first_rows.size(); ++k) {
      const auto first = static_cast<std::size_t>(swapped.first_rows[k]);
      for (std::size_t row = first; row < first + static_cast<std::size_t>(swapped.members[k]); ++row) {
        flag[row] = 1;
        for (std::size_t h = 0; h < swapped.levels; ++h)
          moved[h]->mutable_codes()[row] = swapped.geography[k * swapped.levels + h];
        for (std::size_t c = 0; c < swapped.carry_count; ++c)
          put_word(*moved[swapped.levels + c], row, swapped.carry[k * swapped.carry_count + c]);
      }
    }
    person_risk = distributed::distributed_person_risk(comm, risk_variables, geography);
    const std::vector<std::int64_t> risky_after =
        distributed::distributed_risky_households(comm, household_ids, person_risk, swap_options.threshold);
    clock.lap("risk after");

    const swapping::TargetedSwapPlan& plan = swapped.plan;
    const std::int64_t households = plan.households;
    const std::int64_t min_count = context.report_min_count;
    nlohmann::json levels = nlohmann::json::array();
    for (std::size_t h = 0; h < plan.levels.size(); ++h) {
      const swapping::TargetedSwapLevel& level = plan.levels[h];
      levels.push_back({{"level", h + 1},
                        {"variable", options.hierarchy[h]},
                        {"risky_households", reported_count(level.risky_households, min_count)},
                        {"must_swap_households", reported_count(level.must_swap, min_count)},
                        {"quota_households", reported_count(level.quota_added, min_count)},
                        {"swapped_pairs", reported_count(level.swapped_pairs, min_count)},
                        {"households_without_donor", reported_count(level.without_donor, min_count)},
                        {"risky_households_after", reported_count(risky_after[h], min_count)}});
    }
    step.results = {
        {"records", reported_count(part.summary.row_count, min_count)},
        {"households", reported_count(households, min_count)},
        {"threshold", swap_options.threshold},
        {"quota_pairs", plan.quota_total},
        {"swapped_households", reported_count(plan.swapped_households, min_count)},
        {"swapped_records", reported_count(plan.swapped_records, min_count)},
        {"households_without_donor", reported_count(plan.households_without_donor, min_count)},
        {"swap_rate",
         households > 0 ? static_cast<double>(plan.swapped_households) / static_cast<double>(households) : 0.0},
        {"levels", std::move(levels)}};

    std::vector<Column> added;
    added.push_back(Column::categorical(swapped_flag_variable(), std::move(flag)));
    std::vector<std::string> changed = options.hierarchy;
    changed.insert(changed.end(), parsed.carry_along.begin(), parsed.carry_along.end());
    write_table_step_output(comm, options.input, opened, std::move(added), changed, options.output, write_options,
                            step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("swap targeted: {} households, {} swapped ({} records), {} without a donor", households,
                   plan.swapped_households, plan.swapped_records, plan.households_without_donor);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    expect_variable(available, options.household, VariableType::kId, "household", problems);
    for (const auto& name : options.hierarchy)
      expect_variable(available, name, VariableType::kCategorical, "hierarchy", problems);
    for (const auto& name : options.risk_variables)
      expect_variable(available, name, VariableType::kCategorical, "risk-variables", problems);
    for (const auto& profile : options.similar)
      for (const auto& name : split_list(profile, ','))
        expect_variable(available, name, VariableType::kCategorical, "similar", problems);
    for (const auto& name : options.carry_along)
      expect_variable(available, name, std::nullopt, "carry-along", problems);
  }

  std::vector<VariableInfo> added_variables() const override { return {swapped_flag_variable()}; }

  bool needs_seed() const override { return true; }

 private:
  struct Parsed {
    std::vector<std::vector<std::size_t>> profiles;  ///< indexes into similar_variables
    std::vector<std::string> similar_variables;      ///< distinct, in order of first mention
    std::vector<std::string> carry_along;            ///< less the hierarchy
    std::vector<std::string> warnings;
  };

  Parsed parse() const {
    if (!(options.swap_fraction >= 0.0 && options.swap_fraction <= 1.0))
      throw UsageError("--swap-fraction: expected a fraction in [0, 1], got " + std::to_string(options.swap_fraction));
    if (options.k_anonymity < 0)
      throw UsageError("--k-anonymity: expected 0 (no forced swaps) or more, got " +
                       std::to_string(options.k_anonymity));
    if (options.risk_threshold && !(*options.risk_threshold > 0.0 && std::isfinite(*options.risk_threshold)))
      throw UsageError("--risk-threshold: expected a risk above 0, got " + std::to_string(*options.risk_threshold));
    if (options.hierarchy.empty() || options.hierarchy.size() > 254)
      throw UsageError("--hierarchy: give the geography variables from the coarsest to the finest (1 to 254)");
    if (options.risk_variables.empty()) throw UsageError("--risk-variables: give at least one variable");
    auto once = [](const std::vector<std::string>& names, const std::string& flag) {
      std::set<std::string> seen;
      for (const auto& name : names)
        if (!seen.insert(name).second) throw UsageError(flag + ": variable '" + name + "' is given twice");
    };
    once(options.hierarchy, "--hierarchy");
    once(options.risk_variables, "--risk-variables");
    once(options.carry_along, "--carry-along");
    auto in = [](const std::vector<std::string>& names, const std::string& name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (in(options.hierarchy, options.household))
      throw UsageError("--hierarchy: '" + options.household + "' is the household variable");
    if (in(options.carry_along, options.household))
      throw UsageError("--carry-along: '" + options.household +
                       "' is the household variable; households keep their ids, only their places move");

    Parsed parsed;
    for (const auto& name : options.carry_along) {
      if (in(options.hierarchy, name))
        parsed.warnings.push_back("--carry-along: '" + name + "' is in --hierarchy, which moves anyway");
      else
        parsed.carry_along.push_back(name);
    }
    for (const auto& text : options.similar) {
      const std::vector<std::string> names = split_list(text, ',');
      if (names.empty() || std::any_of(names.begin(), names.end(), [](const auto& n) { return n.empty(); }))
        throw UsageError("--similar: expected a comma-separated list of variables, got '" + text + "'");
      once(names, "--similar");
      std::vector<std::size_t> profile;
      for (const auto& name : names) {
        auto it = std::find(parsed.similar_variables.begin(), parsed.similar_variables.end(), name);
        if (it == parsed.similar_variables.end()) it = parsed.similar_variables.insert(it, name);
        profile.push_back(static_cast<std::size_t>(it - parsed.similar_variables.begin()));
      }
      parsed.profiles.push_back(std::move(profile));
    }
    if (parsed.profiles.size() > 255) throw UsageError("--similar: at most 255 profiles");
    if (parsed.profiles.empty()) parsed.profiles.emplace_back();
    return parsed;
  }

  /// Collective: a household whose members disagree on a hierarchy or carry-along variable is an error
  /// naming the household, the variable, both values and both rows.
  void reject_disagreeing_members(const distributed::Communicator& comm, const Table& table,
                                  const swapping::HouseholdRecords& records, const Parsed& parsed) const {
    std::optional<distributed::RowProblem> problem;
    if (const auto found = swapping::first_household_disagreement(records)) {
      const std::string& name = found->variable < options.hierarchy.size()
                                    ? options.hierarchy[found->variable]
                                    : parsed.carry_along[found->variable - options.hierarchy.size()];
      const std::int64_t first = table.first_row_id() + static_cast<std::int64_t>(found->first_row);
      const std::int64_t row = table.first_row_id() + static_cast<std::int64_t>(found->row);
      problem = {row, options.input.string() + ": row ids " + std::to_string(first) + " and " + std::to_string(row) +
                          ": members of one household (variable '" + options.household + "') disagree on '" + name +
                          "'; targeted swapping moves whole households, so --hierarchy and --carry-along "
                          "variables must be the same for every member"};
    }
    distributed::throw_first_row_problem(comm, problem);
  }

  /// Collective: an area of one level inside two areas of the level above is an error naming both.
  void reject_unnested_hierarchy(const distributed::Communicator& comm, const Table& table,
                                 const KeyColumns& geography) const {
    auto local = swapping::area_parents(geography);
    distributed::ByteWriter out;
    for (auto& pairs : local) {
      for (auto& pair : pairs) pair.row += table.first_row_id();
      out.put(static_cast<std::uint64_t>(pairs.size()));
      out.put_span(std::span<const swapping::AreaParent>(pairs));
    }
    std::vector<std::vector<swapping::AreaParent>> all(local.size());
    for (const auto& bytes : comm.all_gather_bytes(out.bytes())) {
      distributed::ByteReader in(bytes);
      for (auto& pairs : all) {
        std::vector<swapping::AreaParent> more(in.get<std::uint64_t>());
        in.get_span(std::span(more));
        pairs.insert(pairs.end(), more.begin(), more.end());
      }
    }
    for (std::size_t h = 1; h < options.hierarchy.size(); ++h) {
      auto& pairs = all[h - 1];
      std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
        return a.area != b.area ? a.area < b.area : (a.parent != b.parent ? a.parent < b.parent : a.row < b.row);
      });
      const auto conflict = swapping::first_nesting_conflict(h, pairs);
      if (!conflict) continue;
      throw InvalidInput(options.input.string() + ": the hierarchy does not nest: the " + options.hierarchy[h] +
                         " area of row ids " + std::to_string(conflict->first.row) + " and " +
                         std::to_string(conflict->second.row) + " lies in two " + options.hierarchy[h - 1] +
                         " areas; give --hierarchy from the coarsest to the finest level, each area inside one "
                         "parent");
    }
  }

  nlohmann::json parameters() const {
    return {{"household", options.household},
            {"hierarchy", options.hierarchy},
            {"risk-variables", options.risk_variables},
            {"k-anonymity", options.k_anonymity},
            {"risk-threshold", options.risk_threshold ? nlohmann::json(*options.risk_threshold) : nullptr},
            {"swap-fraction", options.swap_fraction},
            {"similar", options.similar},
            {"carry-along", options.carry_along}};
  }
};

}  // namespace

std::unique_ptr<TargetedSwapStep> make_targeted_swap_step() { return std::make_unique<TargetedSwapStepImpl>(); }

}  // namespace sdc::engine
