#pragma once
// The measures of `sdc risk` beyond the counts and the Benedetti–Franconi risks: each one adds its
// options to the command, runs collectively on the records every rank holds once the frequency counts
// are known, and returns report results and per-record columns. The command (engine/cli/
// risk_command.cpp) owns reading, the counts, the individual and household risks and writing; a
// measure owns only its method, so methods can be added without touching the others.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "distributed/comm.h"
#include "engine/flags.h"
#include "engine/path_flags.h"
#include "engine/run_context.h"
#include "engine/table_step.h"
#include "kernels/core/key_grouping.h"
#include "kernels/core/record_rng.h"
#include "kernels/core/table.h"
#include "kernels/risk/frequency_count.h"
#include "kernels/risk/individual_risk.h"

namespace sdc::engine {

/// What a measure sees: this rank's records and what the command computed for them.
struct RiskContext {
  const distributed::Communicator& comm;
  const std::string& input_name;  ///< the input file, for messages
  const Table& table;             ///< this rank's records (whole households)
  const KeyColumns& keys;
  const std::vector<std::string>& key_names;
  std::span<const double> weights;              ///< empty when the step has no weight
  std::span<const std::int64_t> household_ids;  ///< empty when the step has no household variable
  const RecordFrequencies& frequencies;         ///< fk and fk_weighted of this rank's records
  std::span<const double> individual_risk;      ///< Benedetti–Franconi risk of this rank's records
  Mode mode;
  std::optional<std::uint64_t> seed;                     ///< set when some enabled measure needs one
  const IndividualRiskOptions& individual_risk_options;  ///< as the step computed individual_risk
  std::int64_t k_anonymity;                              ///< the step's k
  const std::optional<std::string>& weight_name;         ///< the weight variable, when the step has one
  std::int64_t report_min_count;  ///< the small-count rule of the report (engine/report/small_counts.h)
};

struct RiskMeasureOutput {
  nlohmann::json results;       ///< goes under the measure's result key in the step's results
  std::vector<Column> columns;  ///< per-record columns, this rank's records in order
  std::vector<std::string> warnings;
};

class RiskMeasure {
 public:
  virtual ~RiskMeasure() = default;
  /// Adds the measure's flags to `sdc risk`, declaring in `paths` those that name files.
  virtual void add_options(CLI::App& app, PathFlags& paths) = 0;
  /// Whether the options ask for this measure; a disabled measure adds nothing to the step.
  virtual bool enabled() const = 0;
  /// The measure's parameters, merged into the step's (they enter the step fingerprint).
  virtual nlohmann::json parameters() const = 0;
  /// The files the measure reads besides the step's input, by flag name: their content digests
  /// join the step's fingerprint, and the report lists them.
  virtual std::vector<NamedInput> inputs() const { return {}; }
  /// The key of the step's results (and of the report schema) that holds this measure's results.
  virtual std::string result_key() const = 0;
  virtual std::vector<VariableInfo> added_variables() const = 0;
  /// Problems with the variables the step will see (job checks before anything runs).
  virtual void check_variables(const std::vector<VariableInfo>& /*available*/,
                               std::vector<std::string>& /*problems*/) const {}
  /// Problems with the measure's options given the step's number of key variables; found before any
  /// data is read (and, in a job, before anything runs).
  virtual void check_parameters(std::size_t /*key_count*/, std::vector<std::string>& /*problems*/) const {}
  /// The random draws of the measure; non-empty means the step needs a seed.
  virtual std::vector<StepId> draws() const { return {}; }
  /// Collective: every rank calls it with its records.
  virtual void run(const RiskContext& context, RiskMeasureOutput& output) = 0;
};

// One factory per measure, defined next to the measure.
/// --suda2: minimal sample uniques, SUDA and DIS scores (engine/risk/suda2_measure.cpp).
std::unique_ptr<RiskMeasure> make_suda2_measure();
/// --loglinear: log-linear model risk τ1, τ2 of the sample uniques (engine/risk/loglinear_measure.cpp).
std::unique_ptr<RiskMeasure> make_loglinear_measure();
/// --bootstrap: bootstrap replicates of the class-based risk statistics (engine/risk/bootstrap_measure.cpp).
std::unique_ptr<RiskMeasure> make_bootstrap_measure();
/// --external: marketer risks against an external identification file (engine/risk/marketer_measure.cpp).
std::unique_ptr<RiskMeasure> make_marketer_measure();
/// --nb-smoothing: Rinott-Shlomo negative-binomial smoothing risk (engine/risk/nb_smoothing_measure.cpp).
std::unique_ptr<RiskMeasure> make_nb_smoothing_measure();

/// Every measure `sdc risk` offers, in the order they run (engine/risk/measures.cpp).
std::vector<std::unique_ptr<RiskMeasure>> make_risk_measures();

}  // namespace sdc::engine
