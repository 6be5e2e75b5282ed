#include "engine/recoding/recode_step.h"

// Global recoding (docs/recoding.md; docs/methods recoding.md §1–3). Every recoding is record-local;
// what it needs from all the records is one reduction (distributed/compose/recoding.h): the values in
// use, to check them against a hierarchy; the range or the exact quantiles of a variable, for derived
// breaks. Top and bottom coding come first, then intervals, then hierarchies, so that a coded tail
// falls into the intervals. A recoded variable is categorical with the new labels, and its metadata
// says how it was made (`recoding`, `hierarchy_level`, docs/format.md).

#include <spdlog/spdlog.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "distributed/compose/recoding.h"
#include "distributed/compose/risk_merges.h"
#include "engine/checkpoint.h"
#include "engine/flags.h"
#include "engine/recoding/hierarchy_keys.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "kernels/core/error.h"
#include "kernels/recoding/interval_recoding.h"

namespace sdc::engine {
namespace {

/// Interval counts beyond any labelling a person reads.
constexpr std::int64_t kMaxIntervals = 100'000;

double parse_number(const std::string& flag, const std::string& text, const std::string& entry) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    throw UsageError(flag + ": '" + text + "' in '" + entry + "' is not a finite number");
  return value;
}

std::int64_t parse_whole(const std::string& flag, const std::string& text, const std::string& entry,
                         std::int64_t minimum, std::int64_t maximum) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < minimum || value > maximum)
    throw UsageError(flag + ": expected a whole number from " + std::to_string(minimum) + " to " +
                     std::to_string(maximum) + " in '" + entry + "', got '" + text + "'");
  return value;
}

enum class IntervalRule : std::uint8_t { kBreaks, kEquidistant, kLogarithmic, kQuantiles };

struct IntervalPlan {
  std::string variable;
  std::string spec;
  IntervalRule rule = IntervalRule::kBreaks;
  std::int32_t count = 0;
  std::vector<double> breaks;
};

struct TailPlan {
  std::string variable;
  recoding::TailSide side = recoding::TailSide::kTop;
  double threshold = 0.0;
  double replacement = 0.0;
};

struct RecodePlan {
  std::vector<TailPlan> tails;
  std::vector<IntervalPlan> intervals;
  std::vector<std::pair<std::string, std::int32_t>> levels;  ///< (variable, level)
};

class RecodeStepImpl final : public RecodeStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const RecodePlan plan = parse();
    if (plan.tails.empty() && plan.intervals.empty() && plan.levels.empty())
      throw UsageError("recode: nothing to do; give --levels, --intervals, --top-code or --bottom-code");
    std::vector<std::string> hierarchy_variables;
    for (const auto& [variable, level] : plan.levels) hierarchy_variables.push_back(variable);
    const auto files = hierarchy_files(hierarchy_variables, options.hierarchies, options.hierarchy);
    const auto hierarchies = load_hierarchies(comm, files);
    for (const auto& [variable, level] : plan.levels) {
      const auto& hierarchy = hierarchies.at(variable);
      if (level > hierarchy.height())
        throw ParameterError("--levels: level " + std::to_string(level) + " of variable '" + variable +
                             "' is beyond its hierarchy " + files.at(variable).string() + ", whose levels are 0 to " +
                             std::to_string(hierarchy.height()));
    }
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);

    nlohmann::json parameters = this->parameters();
    parameters["hierarchy-digests"] = hierarchy_digests(hierarchies);
    StepFrame frame(context, "recode", std::move(parameters), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    OpenedTable opened = open_table_step(comm, context, options.input, std::nullopt,
                                         {"", "recode", step.parameters, {}, std::nullopt, {}}, write_options, clock,
                                         OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    Table& table = opened.part.table;
    const std::int64_t min_count = context.report_min_count;

    nlohmann::json variables = nlohmann::json::array();
    std::vector<std::string> changed;
    const auto mark_changed = [&](const std::string& name) {
      if (std::find(changed.begin(), changed.end(), name) == changed.end()) changed.push_back(name);
    };
    for (const TailPlan& tail : plan.tails) {
      const char* flag = tail.side == recoding::TailSide::kTop ? "--top-code" : "--bottom-code";
      Column& column = numeric_column(table, tail.variable, flag);
      const std::int64_t replaced = comm.all_reduce_sum(
          column.type() == VariableType::kContinuous
              ? recoding::code_tail(column.mutable_values(), tail.side, tail.threshold, tail.replacement)
              : code_label_tail(column, tail, flag));
      variables.push_back({{"name", tail.variable},
                           {"method", tail.side == recoding::TailSide::kTop ? "top-code" : "bottom-code"},
                           {"threshold", tail.threshold},
                           {"replacement", tail.replacement},
                           {"replaced", reported_count(replaced, min_count)}});
      mark_changed(tail.variable);
    }
    clock.lap("tails");

    for (const IntervalPlan& interval : plan.intervals) {
      Column& column = numeric_column(table, interval.variable, "--intervals");
      const std::vector<double> values = numeric_values(column, "--intervals");
      const recoding::IntervalBreaks breaks = derive_breaks(comm, interval, values);
      std::vector<std::int32_t> codes = recoding::interval_codes(values, breaks);
      const std::int64_t missing_before = comm.all_reduce_sum(column.missing_count());
      VariableInfo info = column.info();
      info.type = VariableType::kCategorical;
      if (!role_admits_type(info.role, VariableType::kCategorical)) info.role = VariableRole::kKey;
      info.levels = breaks.labels();
      info.recoding = "intervals " + interval.spec;
      info.hierarchy_level = -1;
      column = Column::categorical(std::move(info), std::move(codes));
      const std::int64_t missing_after = comm.all_reduce_sum(column.missing_count());
      variables.push_back({{"name", interval.variable},
                           {"method", "intervals"},
                           {"rule", interval.spec},
                           {"breaks", breaks.breaks},
                           {"first_closed", breaks.first_closed},
                           {"merged_repeats", breaks.merged_repeats},
                           {"categories", column.info().levels.size()},
                           {"outside", reported_count(missing_after - missing_before, min_count)}});
      mark_changed(interval.variable);
    }
    clock.lap("intervals");

    for (const auto& [variable, level] : plan.levels) {
      Column& column = mutable_column(table, variable);
      const auto& hierarchy = hierarchies.at(variable);
      const std::size_t categories_before =
          column.type() == VariableType::kCategorical ? column.info().levels.size() : 0;
      const std::vector<std::int32_t> leaves = leaves_of(comm, options.input, table, column, hierarchy);
      recode_to_level(column, leaves, hierarchy, level);
      const auto counts = distributed::distributed_code_counts(comm, column.codes(),
                                                               static_cast<std::int32_t>(column.info().levels.size()));
      const auto used = std::count_if(counts.begin(), counts.end(), [](std::int64_t count) { return count > 0; });
      variables.push_back({{"name", variable},
                           {"method", "hierarchy"},
                           {"hierarchy", files.at(variable).filename().string()},
                           {"level", level},
                           {"height", hierarchy.height()},
                           {"categories_before", categories_before},
                           {"categories", column.info().levels.size()},
                           {"categories_used", used}});
      mark_changed(variable);
    }
    clock.lap("hierarchies");

    step.results = {{"records", reported_count(opened.part.summary.row_count, min_count)},
                    {"variables", std::move(variables)}};
    write_table_step_output(comm, options.input, opened, {}, changed, options.output, write_options, step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("recode: {} records, {} variables recoded", opened.part.summary.row_count, changed.size());
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : entry_variables(options.levels))
      expect_variable(available, name, std::nullopt, "levels", problems);
    for (const auto& name : entry_variables(options.intervals))
      expect_variable(available, name, std::nullopt, "intervals", problems);
    for (const auto& name : entry_variables(options.top_code))
      expect_variable(available, name, std::nullopt, "top-code", problems);
    for (const auto& name : entry_variables(options.bottom_code))
      expect_variable(available, name, std::nullopt, "bottom-code", problems);
  }

  std::vector<VariableInfo> added_variables() const override {
    // What later steps of a job see: the recoded variables are categorical.
    std::vector<VariableInfo> recoded;
    for (const auto& entries : {options.levels, options.intervals})
      for (const auto& name : entry_variables(entries))
        recoded.push_back({name, VariableType::kCategorical, VariableRole::kKey, 0, {}, {}, {}, -1});
    return recoded;
  }

 private:
  RecodePlan parse() const {
    RecodePlan plan;
    std::set<std::string> recoded;
    for (const auto& entry : options.levels) {
      const auto [variable, level] = split_variable_entry("--levels", entry, "VAR=LEVEL");
      if (!recoded.insert(variable).second) throw UsageError("--levels: variable '" + variable + "' is given twice");
      plan.levels.emplace_back(variable,
                               static_cast<std::int32_t>(parse_whole("--levels", level, entry, 0, 1'000'000)));
    }
    for (const auto& entry : options.intervals) {
      const auto [variable, spec] = split_variable_entry("--intervals", entry, "VAR=SPEC");
      if (!recoded.insert(variable).second)
        throw UsageError("--intervals: variable '" + variable + "' is recoded twice (by --levels or --intervals)");
      plan.intervals.push_back(parse_interval(variable, spec, entry));
    }
    for (const auto& [flag, side, entries] :
         {std::tuple{"--top-code", recoding::TailSide::kTop, &options.top_code},
          std::tuple{"--bottom-code", recoding::TailSide::kBottom, &options.bottom_code}}) {
      std::set<std::string> seen;
      for (const auto& entry : *entries) {
        const auto [variable, rule] = split_variable_entry(flag, entry, "VAR=THRESHOLD:REPLACEMENT");
        if (!seen.insert(variable).second)
          throw UsageError(std::string(flag) + ": variable '" + variable + "' is given twice");
        const auto colon = rule.find(':');
        if (colon == std::string::npos)
          throw UsageError(std::string(flag) + ": expected VAR=THRESHOLD:REPLACEMENT, got '" + entry + "'");
        plan.tails.push_back({variable, side, parse_number(flag, rule.substr(0, colon), entry),
                              parse_number(flag, rule.substr(colon + 1), entry)});
      }
    }
    return plan;
  }

  static IntervalPlan parse_interval(const std::string& variable, const std::string& spec, const std::string& entry) {
    IntervalPlan plan;
    plan.variable = variable;
    plan.spec = spec;
    const auto colon = spec.find(':');
    const std::string rule = spec.substr(0, colon);
    const std::string argument = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
    if (rule == "breaks") {
      plan.rule = IntervalRule::kBreaks;
      for (const auto& text : split_list(argument, '/'))
        plan.breaks.push_back(parse_number("--intervals", text, entry));
      if (plan.breaks.size() < 2)
        throw UsageError("--intervals: breaks:B0/B1/... needs at least two breaks, got '" + entry + "'");
      return plan;
    }
    if (rule == "equidistant")
      plan.rule = IntervalRule::kEquidistant;
    else if (rule == "logarithmic")
      plan.rule = IntervalRule::kLogarithmic;
    else if (rule == "quantiles")
      plan.rule = IntervalRule::kQuantiles;
    else
      throw UsageError("--intervals: unknown rule in '" + entry +
                       "'; expected breaks:B0/B1/..., equidistant:N, logarithmic:N or quantiles:N");
    plan.count = static_cast<std::int32_t>(parse_whole("--intervals", argument, entry, 1, kMaxIntervals));
    return plan;
  }

  /// A continuous variable, or a categorical one whose labels are numbers (ages coded 0 .. 100).
  static Column& numeric_column(Table& table, const std::string& variable, const std::string& flag) {
    Column& column = mutable_column(table, variable);
    if (column.type() == VariableType::kId)
      throw InvalidInput(flag + ": variable '" + variable + "' of " + table.source() +
                         " is an id, expected continuous or categorical with numbers as labels");
    if (column.type() == VariableType::kCategorical) (void)label_values(column, flag, table.source());
    return column;
  }

  /// The number each label of a categorical variable stands for. InvalidInput naming the first label
  /// that is no number.
  static std::vector<double> label_values(const Column& column, const std::string& flag, const std::string& source) {
    std::vector<double> values;
    for (const std::string& label : column.info().levels) {
      double value = 0.0;
      const auto [end, error] = std::from_chars(label.data(), label.data() + label.size(), value);
      if (error != std::errc() || end != label.data() + label.size() || !std::isfinite(value))
        throw InvalidInput(flag + ": variable '" + column.name() + "' of " + source +
                           " is categorical with the label '" + label +
                           "', which is no number (a categorical variable is coded by its labels' values)");
      values.push_back(value);
    }
    return values;
  }

  /// Each record's value: a continuous variable's own, a categorical one's label value (NaN missing).
  static std::vector<double> numeric_values(const Column& column, const std::string& flag) {
    if (column.type() == VariableType::kContinuous) return {column.values().begin(), column.values().end()};
    const std::vector<double> of_code = label_values(column, flag, column.name());
    std::vector<double> values(column.size(), std::numeric_limits<double>::quiet_NaN());
    const auto codes = column.codes();
    for (std::size_t r = 0; r < values.size(); ++r)
      if (codes[r] >= 0) values[r] = of_code[static_cast<std::size_t>(codes[r])];
    return values;
  }

  /// Top or bottom coding of a categorical variable with numbers as labels: the codes beyond the
  /// threshold become the code of the replacement's label (added when no label has that value). Returns
  /// the records of this rank recoded.
  static std::int64_t code_label_tail(Column& column, const TailPlan& tail, const std::string& flag) {
    const std::vector<double> of_code = label_values(column, flag, column.name());
    VariableInfo info = column.info();
    const auto existing = std::find(of_code.begin(), of_code.end(), tail.replacement);
    const auto replacement_code = static_cast<std::int32_t>(existing - of_code.begin());
    if (existing == of_code.end()) info.levels.push_back(shortest_decimal(tail.replacement));
    const auto beyond = [&](double value) {
      return tail.side == recoding::TailSide::kTop ? value > tail.threshold : value < tail.threshold;
    };
    std::vector<std::int32_t> codes(column.codes().begin(), column.codes().end());
    std::int64_t replaced = 0;
    for (std::int32_t& code : codes)
      if (code >= 0 && beyond(of_code[static_cast<std::size_t>(code)]) && code != replacement_code) {
        code = replacement_code;
        ++replaced;
      }
    info.recoding = (info.recoding.empty() ? "" : info.recoding + "; ") + flag.substr(2) +
                    (tail.side == recoding::TailSide::kTop ? " above " : " below ") + shortest_decimal(tail.threshold) +
                    " to " + shortest_decimal(tail.replacement);
    column = Column::categorical(std::move(info), std::move(codes));
    return replaced;
  }

  static recoding::IntervalBreaks derive_breaks(const distributed::Communicator& comm, const IntervalPlan& plan,
                                                std::span<const double> values) {
    if (plan.rule == IntervalRule::kBreaks) return recoding::explicit_breaks(plan.breaks);
    if (plan.rule == IntervalRule::kQuantiles) {
      std::vector<double> probabilities;
      for (std::int32_t i = 0; i <= plan.count; ++i)
        probabilities.push_back(static_cast<double>(i) / static_cast<double>(plan.count));
      // R's quantile() in doubles, as the reference's equalAmount takes them.
      const SampleQuantiles quantiles = distributed::distributed_exact_quantiles(
          comm, values, probabilities, {QuantileType::kType7, QuantileArithmetic::kCompatR});
      if (quantiles.count == 0)
        throw ParameterError("--intervals: variable '" + plan.variable + "' has no value to take quantiles of");
      return recoding::quantile_breaks(quantiles.values);
    }
    const auto range = distributed::distributed_value_range(comm, values);
    if (!range) throw ParameterError("--intervals: variable '" + plan.variable + "' has no value to take a range of");
    return recoding::equidistant_breaks(range->first, range->second, plan.count,
                                        plan.rule == IntervalRule::kLogarithmic);
  }

  nlohmann::json parameters() const {
    return {{"levels", options.levels},
            {"hierarchy", options.hierarchy},
            {"intervals", options.intervals},
            {"top-code", options.top_code},
            {"bottom-code", options.bottom_code}};
  }
};

}  // namespace

std::unique_ptr<RecodeStep> make_recode_step() { return std::make_unique<RecodeStepImpl>(); }

}  // namespace sdc::engine
