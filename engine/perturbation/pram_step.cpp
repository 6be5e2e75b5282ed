#include "engine/perturbation/pram_step.h"

// The post-randomisation method on categorical variables (docs/pram.md; docs/methods
// perturbation.md §1). Pass 1 counts records per (stratum, category) over all ranks; every rank builds
// the same transition matrices from those counts, the parameters and the seed; pass 2 draws each
// record's released category keyed by its row id. The report holds the matrices, counts before and
// after, the unbiased estimates with their standard errors, the information loss and the PRAM risk.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "distributed/compose/pram.h"
#include "engine/checkpoint.h"
#include "engine/flags.h"
#include "engine/partitioned_table.h"
#include "engine/perturbation/pram_step.h"
#include "engine/report/run_report.h"
#include "engine/report/small_counts.h"
#include "engine/table_step.h"
#include "io/csv.h"
#include "io/input_file.h"
#include "io/seed.h"
#include "io/sha256.h"
#include "kernels/core/error.h"
#include "kernels/core/exact_sum.h"
#include "kernels/perturbation/pram.h"

namespace sdc::engine {
namespace {

constexpr const char* kChanged = "pram_changed";
/// Matrices of more categories are summarised (their diagonal) in the report, not printed whole.
constexpr std::int64_t kMaxPrintedCategories = 50;
/// Strata listed one by one in the report; beyond, the report gives the per-variable totals only.
constexpr std::size_t kMaxListedStrata = 100;
/// The estimates invert a K×K matrix per stratum (O(K³)); beyond this K they are skipped with a warning.
constexpr std::int64_t kMaxEstimatedCategories = 1000;

/// Two-way tables of more strata × cells are not counted (their counts, before and after, take 8 bytes
/// per cell on every rank): the pair is reported without estimates, with a warning.
constexpr std::size_t kMaxTwoWayCells = std::size_t{1} << 22;
/// Two-way tables of more cells are summarised (their information loss) in the report, not printed whole.
constexpr std::int64_t kMaxPrintedCells = kMaxPrintedCategories * kMaxPrintedCategories;

enum class MatrixKind { kReference, kFamily, kBlock };

/// The matrix of one variable as --matrix spells it (docs/pram.md, "Matrices").
struct MatrixSpec {
  MatrixKind kind = MatrixKind::kReference;
  PramFamily family;               ///< kFamily
  std::vector<PramFamily> blocks;  ///< kBlock: the blocks in level order
  std::string text = "reference";
};

VariableInfo changed_variable() {
  VariableInfo variable;
  variable.name = kChanged;
  variable.type = VariableType::kCategorical;
  variable.levels = {"false", "true"};
  return variable;
}

std::optional<double> parse_number(const std::string& text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

double parse_probability(const std::string& text, const std::string& flag) {
  const auto value = parse_number(text);
  if (!value || *value < 0.0 || *value > 1.0)
    throw UsageError(flag + ": expected a probability in [0, 1], got '" + text + "'");
  return *value;
}

std::int64_t parse_whole_number(const std::string& text, const std::string& flag, const std::string& what) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > kMaxCount)
    throw UsageError(flag + ": " + what + " must be a whole number from 1 to " + std::to_string(kMaxCount) + ", got '" +
                     text + "'");
  return value;
}

/// nE:P, nB:P:B or nF:P; as a block of a Block matrix (`sized`) followed by its number of categories
/// (nE:P:N, nB:P:B:N, nF:P:N), or "1", a kept category.
PramFamily parse_family(const std::string& text, bool sized, const std::string& flag, const std::string& usage) {
  const std::vector<std::string> parts = split_list(text, ':');
  PramFamily family;
  if (sized && parts.size() == 1 && parts[0] == "1") {
    family.kind = PramFamilyKind::kKeep;
    return family;
  }
  const std::size_t size_field = sized ? 1 : 0;
  if (parts.size() == 2 + size_field && parts[0] == "nE")
    family.kind = PramFamilyKind::kEqual;
  else if (parts.size() == 3 + size_field && parts[0] == "nB")
    family.kind = PramFamilyKind::kBand;
  else if (parts.size() == 2 + size_field && parts[0] == "nF")
    family.kind = PramFamilyKind::kFrequency;
  else
    throw UsageError(usage);
  family.p = parse_probability(parts[1], flag);
  if (family.kind == PramFamilyKind::kBand) family.band = parse_whole_number(parts[2], flag, "the band B of nB:P:B");
  if (sized) {
    family.size = parse_whole_number(parts.back(), flag, "the size of block '" + text + "'");
    if (family.kind == PramFamilyKind::kFrequency && family.size < 3)
      throw UsageError(flag + ": block '" + text + "': the nF family needs at least 3 categories");
  }
  return family;
}

/// One matrix specification; `flag` names it in errors ("--matrix" or "--matrix marstat").
MatrixSpec parse_matrix_spec(const std::string& text, const std::string& flag) {
  MatrixSpec spec;
  spec.text = text;
  const std::string usage = flag +
                            ": expected reference, nE:P, nB:P:B, nF:P or block:B1/B2/... (each block 1, nE:P:N, "
                            "nB:P:B:N or nF:P:N, N its number of categories), got '" +
                            text + "'";
  if (text == "reference") return spec;
  constexpr std::string_view kBlockPrefix = "block:";
  if (text.starts_with(kBlockPrefix)) {
    spec.kind = MatrixKind::kBlock;
    for (const std::string& block : split_list(text.substr(kBlockPrefix.size()), '/')) {
      if (block.empty()) throw UsageError(usage);
      spec.blocks.push_back(parse_family(block, true, flag, usage));
    }
    if (spec.blocks.empty()) throw UsageError(usage);
    return spec;
  }
  spec.kind = MatrixKind::kFamily;
  spec.family = parse_family(text, false, flag, usage);
  return spec;
}

/// "name=value" pairs of a per-variable flag; every name must be one of the step's variables.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& entries, const std::string& flag,
                                                     const std::vector<std::string>& variables) {
  std::map<std::string, std::string> out;
  for (const auto& entry : entries) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      throw UsageError(flag + ": expected VAR=VALUE, got '" + entry + "'");
    const std::string name = entry.substr(0, eq);
    if (std::find(variables.begin(), variables.end(), name) == variables.end())
      throw UsageError(flag + ": variable '" + name + "' is not one of --variables");
    if (!out.emplace(name, entry.substr(eq + 1)).second)
      throw UsageError(flag + ": variable '" + name + "' given twice");
  }
  return out;
}

/// A user matrix file (docs/pram.md): a CSV whose header names the released categories and whose rows
/// start with the original category; labels are the variable's levels, each once, in any order.
/// Returns the matrix in the variable's level order. Errors name the file, the line and the label.
PramMatrix read_matrix_file(const std::filesystem::path& path, const VariableInfo& variable,
                            std::optional<double> tolerance) {
  const std::vector<io::CsvRecord> records = io::read_csv_records(path, "--matrix-file");
  const std::string where = path.string();
  const auto& levels = variable.levels;
  const auto k = static_cast<Eigen::Index>(levels.size());
  // Hand-written matrices align their columns with blanks: a label or number is read without them.
  const auto trimmed = [](const std::string& field) {
    const auto first = field.find_first_not_of(" \t\r");
    return first == std::string::npos ? std::string()
                                      : field.substr(first, field.find_last_not_of(" \t\r") - first + 1);
  };
  const auto level_of = [&](const std::string& label, std::int64_t line) {
    const auto it = std::find(levels.begin(), levels.end(), label);
    if (it == levels.end())
      throw InvalidInput(where + ": line " + std::to_string(line) + ": label '" + label +
                         "' is not a level of variable '" + variable.name + "'");
    return static_cast<Eigen::Index>(it - levels.begin());
  };
  if (records.empty()) throw InvalidInput(where + ": the file is empty");
  const io::CsvRecord& header = records.front();
  std::vector<Eigen::Index> columns;
  std::set<Eigen::Index> seen;
  for (std::size_t c = 1; c < header.fields.size(); ++c) {
    const std::string label = trimmed(header.fields[c]);
    const Eigen::Index level = level_of(label, header.line);
    if (!seen.insert(level).second)
      throw InvalidInput(where + ": line " + std::to_string(header.line) + ": label '" + label + "' appears twice");
    columns.push_back(level);
  }
  if (static_cast<Eigen::Index>(columns.size()) != k)
    throw InvalidInput(where + ": line " + std::to_string(header.line) + ": the header names " +
                       std::to_string(columns.size()) + " categories, variable '" + variable.name + "' has " +
                       std::to_string(k));
  PramMatrix matrix = PramMatrix::Zero(k, k);
  std::map<Eigen::Index, std::int64_t> row_lines;
  for (std::size_t r = 1; r < records.size(); ++r) {
    const io::CsvRecord& record = records[r];
    const std::string label = trimmed(record.fields.front());
    const Eigen::Index row = level_of(label, record.line);
    if (!row_lines.emplace(row, record.line).second)
      throw InvalidInput(where + ": line " + std::to_string(record.line) + ": row '" + label + "' appears twice");
    if (static_cast<Eigen::Index>(record.fields.size()) != k + 1)
      throw InvalidInput(where + ": line " + std::to_string(record.line) + ", row '" + label + "': " +
                         std::to_string(record.fields.size() - 1) + " probabilities, expected " + std::to_string(k));
    for (Eigen::Index c = 0; c < k; ++c) {
      const auto value = parse_number(trimmed(record.fields[static_cast<std::size_t>(c) + 1]));
      if (!value)
        throw InvalidInput(where + ": line " + std::to_string(record.line) + ", row '" + label + "', column " +
                           std::to_string(c + 2) + ": not a number");
      matrix(row, columns[static_cast<std::size_t>(c)]) = *value;
    }
  }
  for (Eigen::Index row = 0; row < k; ++row)
    if (!row_lines.contains(row))
      throw InvalidInput(where + ": no row for label '" + levels[static_cast<std::size_t>(row)] + "' of variable '" +
                         variable.name + "'");
  if (const auto problem = pram_check_matrix(matrix, tolerance.value_or(pram_default_row_sum_tolerance(k))))
    throw InvalidInput(where + ": line " + std::to_string(row_lines.at(problem->row)) + ", row '" +
                       levels[static_cast<std::size_t>(problem->row)] + "': " + problem->what);
  return matrix;
}

nlohmann::json matrix_json(const PramMatrix& m) {
  if (m.rows() > kMaxPrintedCategories) return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (Eigen::Index c = 0; c < m.cols(); ++c) row.push_back(m(r, c));
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json diagonal_json(const PramMatrix& m) {
  nlohmann::json out = nlohmann::json::array();
  for (Eigen::Index k = 0; k < m.rows(); ++k) out.push_back(m(k, k));
  return out;
}

/// What one variable's pass produced in one stratum.
struct StratumMatrices {
  PramMatrix p;      ///< the matrix of the method (reference: P from the drawn diagonal); kept for listed strata
  PramMatrix drawn;  ///< the matrix the records were drawn from
};

class PramStepImpl final : public PramStep {
 public:
  void run(const RunContext& context) override {
    const auto comm = distributed::Communicator::world();
    const ParsedFlags flags = parse_flags();
    io::ensure_output_directory_writable(options.output);
    io::Hdf5WriteOptions write_options = data_output_options(context, options.filters);
    const io::Seed seed = io::require_seed(options.seed_file, "pram");

    StepFrame frame(context, "pram", parameters(flags), comm.is_coordinator());
    auto& [report, step, timer, clock] = frame;
    report.set_seed_fingerprint(seed.fingerprint());

    // A user matrix is a parameter: its content, not only its path, identifies the step.
    nlohmann::json identity = step.parameters;
    for (const auto& [name, file] : flags.matrix_files) {
      identity["matrix-file-sha256"][name] =
          io::sha256_hex(io::read_input_file(file, "--matrix-file", io::kMaxTextInputBytes));
    }
    OpenedTable opened =
        open_table_step(comm, context, options.input, std::nullopt,
                        {"", "pram", identity, {StepId::kPramMatrix, StepId::kPram}, seed.fingerprint(), {}},
                        write_options, clock, OutputRelease::kMasked);
    if (finish_resumed_step(comm, options.resume, report, step, timer, options.input, opened, options.output,
                            options.report, OutputRelease::kMasked))
      return;
    TablePart& part = opened.part;

    Table& table = part.table;
    for (const auto& name : options.variables) {
      const Column& column = table.require(name, VariableType::kCategorical);
      check_matrix_fits(column.info(), flags.matrix.at(name));
    }
    for (const auto& [row, column] : flags.two_way) {
      table.require(row, VariableType::kCategorical);
      table.require(column, VariableType::kCategorical);
    }
    std::span<const double> target;
    if (options.regression_target)
      target = table.require(*options.regression_target, VariableType::kContinuous).values();
    KeyColumns strata_columns;
    for (const auto& name : options.strata) {
      const Column& column = table.require(name, VariableType::kCategorical);
      strata_columns.codes.push_back(column.codes());
      strata_columns.level_counts.push_back(static_cast<std::int32_t>(column.info().levels.size()));
      stratum_labels_.push_back(column.info().levels);
    }
    stratum_levels_ = strata_columns.level_counts;
    const auto n = static_cast<std::size_t>(table.row_count());
    const distributed::Strata strata = distributed::distributed_strata(comm, strata_columns, n);
    std::vector<std::uint8_t> changed(n, 0);
    clock.lap("strata");

    // The two-way tables of the original file, counted before any variable is drawn (the columns are
    // replaced one by one).
    std::vector<TwoWayTable> two_way;
    for (const auto& [row, column] : flags.two_way)
      two_way.push_back(count_two_way(comm, table, row, column, strata, step.warnings));
    clock.lap("two-way tables before");

    nlohmann::json variables = nlohmann::json::array();
    std::vector<PrammedVariable> prammed(options.variables.size());
    for (std::size_t v = 0; v < options.variables.size(); ++v) {
      const std::string& name = options.variables[v];
      Column* column = nullptr;
      for (Column& c : table.mutable_columns())
        if (c.name() == name) column = &c;
      SDC_CHECK(column != nullptr, "a PRAM variable vanished from the table");
      PrammedVariable& variable = prammed[v];
      variable.info = column->info();
      const auto k = static_cast<std::int32_t>(variable.info.levels.size());
      if (const auto it = flags.matrix_files.find(name); it != flags.matrix_files.end())
        variable.user = read_matrix_file(it->second, variable.info, options.matrix_tolerance);
      variable.before = distributed::distributed_pram_counts(comm, column->codes(), strata, k);
      if (options.regression_target)
        variable.target_before = distributed::distributed_pram_target_sums(comm, column->codes(), target, strata, k);
      std::vector<std::int32_t> released(n);
      variables.push_back(pram_variable(comm, v, variable.info, column->codes(), variable.before, variable.user, flags,
                                        seed.value, strata, released, changed, table.first_row_id(),
                                        context.report_min_count, step.warnings, clock));
      column->mutable_storage() = std::move(released);
      variables.back()["regression"] =
          options.regression_target ? regression_entry(comm, v, variable, column->codes(), target, flags, seed.value,
                                                       strata, context.report_min_count, step.warnings)
                                    : nlohmann::json(nullptr);
    }
    nlohmann::json two_way_json = nlohmann::json::array();
    for (const TwoWayTable& pair : two_way)
      two_way_json.push_back(two_way_entry(comm, table, pair, prammed, flags, seed.value, strata,
                                           context.report_min_count, step.warnings));
    clock.lap("two-way and regression estimates");

    const auto records_changed =
        comm.all_reduce_sum(static_cast<std::int64_t>(std::count(changed.begin(), changed.end(), std::uint8_t{1})));
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"records_changed", reported_count(records_changed, context.report_min_count)},
                    {"strata", static_cast<std::int64_t>(strata.ids.size())},
                    {"strata_listed", strata.ids.size() <= kMaxListedStrata},
                    {"risk_threshold", options.risk_threshold},
                    {"variables", std::move(variables)},
                    {"regression_target",
                     options.regression_target ? nlohmann::json(*options.regression_target) : nlohmann::json(nullptr)},
                    {"two_way", std::move(two_way_json)}};

    std::vector<Column> added;
    added.push_back(Column::categorical(changed_variable(), std::vector<std::int32_t>(changed.begin(), changed.end())));
    write_table_step_output(comm, options.input, opened, std::move(added), options.variables, options.output,
                            write_options, step.warnings);
    if (comm.is_coordinator()) write_checkpoint(options.output, opened.fingerprint, step.results, context.permissions);
    clock.lap("write");
    timer.stop();
    if (comm.is_coordinator())
      spdlog::info("pram: {} records, {} variables, {} strata, {} records changed", part.summary.row_count,
                   options.variables.size(), strata.ids.size(), records_changed);
    report.add_output(checkpoint_path(options.output), OutputKind::kCheckpoint);
    finish_table_step(comm, report, options.input, opened, options.output, options.report);
  }

  void check_variables(const std::vector<VariableInfo>& available, std::vector<std::string>& problems) const override {
    for (const auto& name : options.variables)
      expect_variable(available, name, VariableType::kCategorical, "variables", problems);
    for (const auto& name : options.strata)
      expect_variable(available, name, VariableType::kCategorical, "strata", problems);
    for (const auto& entry : options.two_way) {
      const auto colon = entry.find(':');
      if (colon == std::string::npos) continue;  // the step's own checks name it
      for (const auto& name : {entry.substr(0, colon), entry.substr(colon + 1)})
        if (!name.empty()) expect_variable(available, name, VariableType::kCategorical, "two-way", problems);
    }
    if (options.regression_target)
      expect_variable(available, *options.regression_target, VariableType::kContinuous, "regression-target", problems);
  }

  bool needs_seed() const override { return true; }

  std::vector<VariableInfo> added_variables() const override { return {changed_variable()}; }

 private:
  struct ParsedFlags {
    std::map<std::string, double> pd;          ///< per variable
    std::map<std::string, MatrixSpec> matrix;  ///< per variable (a variable with a matrix file keeps the default)
    std::map<std::string, std::filesystem::path> matrix_files;
    std::vector<std::pair<std::string, std::string>> two_way;  ///< the pairs of --two-way, in order
  };

  ParsedFlags parse_flags() const {
    ParsedFlags flags;
    std::set<std::string> seen;
    for (const auto& name : options.variables) {
      if (!seen.insert(name).second) throw UsageError("--variables: variable '" + name + "' is given twice");
      if (std::find(options.strata.begin(), options.strata.end(), name) != options.strata.end())
        throw UsageError("--strata: variable '" + name + "' is also PRAMmed; a stratum variable keeps its values");
    }
    double common = 0.8;
    std::map<std::string, std::string> per_variable;
    if (options.pd.size() == 1 && options.pd[0].find('=') == std::string::npos)
      common = parse_probability(options.pd[0], "--pd");
    else
      per_variable = parse_assignments(options.pd, "--pd", options.variables);
    for (const auto& name : options.variables) {
      const auto it = per_variable.find(name);
      flags.pd[name] = it == per_variable.end() ? common : parse_probability(it->second, "--pd " + name);
    }
    // --matrix SPEC for every variable, or VAR=SPEC per variable (the others keep the reference).
    MatrixSpec common_matrix;
    std::map<std::string, std::string> per_variable_matrix;
    if (options.matrix.size() == 1 && options.matrix[0].find('=') == std::string::npos)
      common_matrix = parse_matrix_spec(options.matrix[0], "--matrix");
    else
      per_variable_matrix = parse_assignments(options.matrix, "--matrix", options.variables);
    for (const auto& name : options.variables) {
      const auto it = per_variable_matrix.find(name);
      flags.matrix[name] =
          it == per_variable_matrix.end() ? common_matrix : parse_matrix_spec(it->second, "--matrix " + name);
    }
    for (const auto& [name, file] : parse_assignments(options.matrix_files, "--matrix-file", options.variables)) {
      if (per_variable_matrix.contains(name))
        throw UsageError("--matrix-file: variable '" + name + "' also has a --matrix; give it one of them");
      flags.matrix_files[name] = file;
    }
    std::set<std::pair<std::string, std::string>> pairs;
    for (const auto& entry : options.two_way) {
      const auto colon = entry.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size() ||
          entry.find(':', colon + 1) != std::string::npos)
        throw UsageError("--two-way: expected VAR1:VAR2, got '" + entry + "'");
      std::pair<std::string, std::string> pair{entry.substr(0, colon), entry.substr(colon + 1)};
      if (pair.first == pair.second)
        throw UsageError("--two-way " + entry + ": variable '" + pair.first + "' is named twice; a pair needs two");
      if (!seen.contains(pair.first) && !seen.contains(pair.second))
        throw UsageError("--two-way " + entry + ": neither '" + pair.first + "' nor '" + pair.second +
                         "' is one of --variables; at least one must be PRAMmed");
      if (!pairs.insert(pair).second) throw UsageError("--two-way: the pair " + entry + " is given twice");
      flags.two_way.push_back(std::move(pair));
    }
    if (options.regression_target && seen.contains(*options.regression_target))
      throw UsageError("--regression-target: variable '" + *options.regression_target +
                       "' is PRAMmed; the target is a continuous variable");
    return flags;
  }

  nlohmann::json parameters(const ParsedFlags& flags) const {
    nlohmann::json pd = nlohmann::json::object();
    for (const auto& [name, value] : flags.pd) pd[name] = value;
    nlohmann::json matrix = nlohmann::json::object();
    for (const auto& [name, spec] : flags.matrix) matrix[name] = flags.matrix_files.contains(name) ? "file" : spec.text;
    return {{"variables", options.variables},
            {"strata", options.strata},
            {"pd", pd},
            {"alpha", options.alpha},
            {"matrix", matrix},
            {"matrix-file", options.matrix_files},
            {"matrix-tolerance",
             options.matrix_tolerance ? nlohmann::json(*options.matrix_tolerance) : nlohmann::json(nullptr)},
            {"invariant", options.invariant},
            {"risk-threshold", options.risk_threshold},
            {"two-way", options.two_way},
            {"regression-target",
             options.regression_target ? nlohmann::json(*options.regression_target) : nlohmann::json(nullptr)}};
  }

  /// Before anything is drawn: every matrix specification fits its variable (nF needs 3 categories, the
  /// blocks of a Block matrix cover the levels exactly). Errors name the variable.
  static void check_matrix_fits(const VariableInfo& info, const MatrixSpec& spec) {
    const auto k = static_cast<std::int64_t>(info.levels.size());
    if (spec.kind == MatrixKind::kFamily && spec.family.kind == PramFamilyKind::kFrequency && k < 3)
      throw UsageError("--matrix " + spec.text + ": the nF family needs at least 3 categories; variable '" + info.name +
                       "' has " + std::to_string(k));
    if (spec.kind == MatrixKind::kBlock) {
      std::int64_t covered = 0;
      for (const PramFamily& block : spec.blocks) covered += block.size;
      if (covered != k)
        throw UsageError("--matrix " + spec.text + ": the block sizes add up to " + std::to_string(covered) +
                         ", but variable '" + info.name + "' has " + std::to_string(k) +
                         " levels; the blocks must cover them, in level order");
    }
  }

  /// The matrices of variable `info` (position `v` in the step) in one stratum with counts `t`.
  StratumMatrices stratum_matrices(std::size_t v, const VariableInfo& info, const std::optional<PramMatrix>& user,
                                   const ParsedFlags& flags, std::uint64_t seed, std::uint64_t stratum_id,
                                   std::span<const std::int64_t> t) const {
    const auto k = static_cast<std::int64_t>(t.size());
    const MatrixSpec& spec = flags.matrix.at(info.name);
    StratumMatrices out;
    if (!user && spec.kind == MatrixKind::kReference) {
      const auto diagonal = pram_draw_diagonal(seed, v, stratum_id, k, flags.pd.at(info.name));
      ReferencePram reference = pram_reference_matrices(diagonal, t, options.alpha);
      return {std::move(reference.p), std::move(reference.drawn)};
    }
    if (user)
      out.p = *user;
    else if (spec.kind == MatrixKind::kFamily)
      out.p = pram_family_matrix(spec.family, t);
    else
      out.p = pram_family_block_matrix(spec.blocks, t);
    out.drawn = options.invariant ? pram_blend_with_identity(pram_invariant_matrix(out.p, t), options.alpha) : out.p;
    return out;
  }

  /// What the report's two-way and regression estimates need of a PRAMmed variable after its draws.
  struct PrammedVariable {
    VariableInfo info;
    std::optional<PramMatrix> user;
    std::vector<std::int64_t> before;           ///< counts per (stratum, category) before the draws
    distributed::PramTargetSums target_before;  ///< with --regression-target
  };

  /// One --two-way pair and its original table per (stratum, row, column); `before` is empty when the
  /// tables would be too large to count.
  struct TwoWayTable {
    std::string row;
    std::string column;
    std::int64_t rows = 0;
    std::int64_t columns = 0;
    std::vector<std::int64_t> before;
  };

  /// The matrix the records of variable v in stratum s were drawn from: rebuilt, as the matrices are a
  /// pure function of the counts, the parameters and the seed (and kept by no one meanwhile).
  PramMatrix drawn_matrix(std::size_t v, const PrammedVariable& variable, const ParsedFlags& flags, std::uint64_t seed,
                          const distributed::Strata& strata, std::size_t s) const {
    const std::size_t k = variable.info.levels.size();
    return stratum_matrices(v, variable.info, variable.user, flags, seed, strata.ids[s],
                            std::span<const std::int64_t>(variable.before).subspan(s * k, k))
        .drawn;
  }

  /// The position of `name` in --variables, if it is PRAMmed.
  std::optional<std::size_t> prammed_position(const std::string& name) const {
    const auto it = std::find(options.variables.begin(), options.variables.end(), name);
    if (it == options.variables.end()) return std::nullopt;
    return static_cast<std::size_t>(it - options.variables.begin());
  }

  /// Collective: the original table of one --two-way pair, per stratum.
  TwoWayTable count_two_way(const distributed::Communicator& comm, const Table& table, const std::string& row,
                            const std::string& column, const distributed::Strata& strata,
                            std::vector<std::string>& warnings) const {
    const Column& a = table.require(row, VariableType::kCategorical);
    const Column& b = table.require(column, VariableType::kCategorical);
    TwoWayTable out{row,
                    column,
                    static_cast<std::int64_t>(a.info().levels.size()),
                    static_cast<std::int64_t>(b.info().levels.size()),
                    {}};
    // Level counts are below 2^31 and strata at most the records: the product is checked in steps.
    const auto cells = static_cast<std::size_t>(out.rows) * static_cast<std::size_t>(out.columns);
    if (cells > kMaxTwoWayCells || cells * strata.ids.size() > kMaxTwoWayCells) {
      warnings.push_back("--two-way " + row + ":" + column + ": " + std::to_string(strata.ids.size()) + " strata of " +
                         std::to_string(out.rows) + " x " + std::to_string(out.columns) + " cells exceed " +
                         std::to_string(kMaxTwoWayCells) + " cells; the table is not estimated");
      return out;
    }
    out.before = distributed::distributed_pram_pair_counts(comm, a.codes(), b.codes(), strata,
                                                           static_cast<std::int32_t>(out.rows),
                                                           static_cast<std::int32_t>(out.columns));
    return out;
  }

  /// A K_row×K_column table of report values, or null when it is too large to print.
  template <typename Cell>
  static nlohmann::json table_json(std::int64_t rows, std::int64_t columns, Cell&& cell) {
    if (rows * columns > kMaxPrintedCells) return nullptr;
    nlohmann::json out = nlohmann::json::array();
    for (std::int64_t r = 0; r < rows; ++r) {
      nlohmann::json line = nlohmann::json::array();
      for (std::int64_t c = 0; c < columns; ++c) line.push_back(cell(static_cast<std::size_t>(r * columns + c)));
      out.push_back(std::move(line));
    }
    return out;
  }

  /// Collective, after every draw: the report entry of one --two-way pair. T̂ = (P_X⁻¹)ᵀ T_XY P_Y⁻¹ per
  /// stratum from the released table, with that stratum's matrices (the identity for a variable that
  /// is not PRAMmed), summed over strata and compared with the original table.
  nlohmann::json two_way_entry(const distributed::Communicator& comm, const Table& table, const TwoWayTable& pair,
                               const std::vector<PrammedVariable>& prammed, const ParsedFlags& flags,
                               std::uint64_t seed, const distributed::Strata& strata, std::int64_t min_count,
                               std::vector<std::string>& warnings) const {
    const std::string name = pair.row + ":" + pair.column;
    const std::optional<std::size_t> row_variable = prammed_position(pair.row);
    const std::optional<std::size_t> column_variable = prammed_position(pair.column);
    nlohmann::json entry = {{"variables", {pair.row, pair.column}},
                            {"prammed", {row_variable.has_value(), column_variable.has_value()}},
                            {"cells", pair.rows * pair.columns},
                            {"records", nullptr},
                            {"counts_before", nullptr},
                            {"counts_after", nullptr},
                            {"estimate", nullptr},
                            {"information_loss", nullptr}};
    if (pair.before.empty()) return entry;
    const auto cells = static_cast<std::size_t>(pair.rows * pair.columns);
    const auto after = distributed::distributed_pram_pair_counts(
        comm, table.require(pair.row, VariableType::kCategorical).codes(),
        table.require(pair.column, VariableType::kCategorical).codes(), strata, static_cast<std::int32_t>(pair.rows),
        static_cast<std::int32_t>(pair.columns));
    std::vector<std::int64_t> total_before(cells, 0);
    std::vector<std::int64_t> total_after(cells, 0);
    for (std::size_t s = 0; s < strata.ids.size(); ++s)
      for (std::size_t c = 0; c < cells; ++c) {
        total_before[c] += pair.before[s * cells + c];
        total_after[c] += after[s * cells + c];
      }
    std::int64_t records = 0;
    for (std::int64_t c : total_before) records += c;
    entry["records"] = reported_count(records, min_count);
    entry["counts_before"] =
        table_json(pair.rows, pair.columns, [&](std::size_t c) { return reported_count(total_before[c], min_count); });
    entry["counts_after"] =
        table_json(pair.rows, pair.columns, [&](std::size_t c) { return reported_count(total_after[c], min_count); });

    const auto too_large = [&](const std::optional<std::size_t>& v) {
      return v && static_cast<std::int64_t>(prammed[*v].info.levels.size()) > kMaxEstimatedCategories;
    };
    if (too_large(row_variable) || too_large(column_variable)) {
      warnings.push_back("--two-way " + name + ": a variable of more than " + std::to_string(kMaxEstimatedCategories) +
                         " categories; the table is not estimated");
      return entry;
    }
    std::vector<ExactSum> estimate(cells);
    for (std::size_t s = 0; s < strata.ids.size(); ++s) {
      const PramMatrix p_row =
          row_variable ? drawn_matrix(*row_variable, prammed[*row_variable], flags, seed, strata, s) : PramMatrix();
      const PramMatrix p_column =
          column_variable ? drawn_matrix(*column_variable, prammed[*column_variable], flags, seed, strata, s)
                          : PramMatrix();
      const auto t_hat =
          pram_two_way_estimate(p_row, p_column, std::span(after).subspan(s * cells, cells), pair.rows, pair.columns);
      if (!t_hat) {
        warnings.push_back("--two-way " + name + ", " + stratum_name(strata.ids[s]) +
                           ": a transition matrix is singular; no unbiased estimate");
        return entry;
      }
      for (std::size_t c = 0; c < cells; ++c)
        estimate[c].add(
            (*t_hat)(static_cast<Eigen::Index>(c) / pair.columns, static_cast<Eigen::Index>(c) % pair.columns));
    }
    std::vector<double> t_hat(cells);
    for (std::size_t c = 0; c < cells; ++c) t_hat[c] = estimate[c].value();
    // An estimate next to a count shown as "< N" would tell what the count is.
    entry["estimate"] = table_json(pair.rows, pair.columns, [&](std::size_t c) {
      return reported_count(total_before[c], min_count).is_string() ? nlohmann::json(nullptr)
                                                                    : nlohmann::json(t_hat[c]);
    });
    const PramRelativeDifference loss = pram_relative_difference(total_before, t_hat);
    entry["information_loss"] = {
        {"rd", number_or_null(loss.rd)}, {"mrd", number_or_null(loss.mrd)}, {"infinite", loss.infinite}};
    return entry;
  }

  /// Collective, after variable v's draws: its group means of the --regression-target y against their
  /// estimates from the released file, β̃ = diag(T̂)⁻¹ (P⁻¹)ᵀ T^y_X per stratum, summed over strata.
  nlohmann::json regression_entry(const distributed::Communicator& comm, std::size_t v, const PrammedVariable& variable,
                                  std::span<const std::int32_t> released, std::span<const double> target,
                                  const ParsedFlags& flags, std::uint64_t seed, const distributed::Strata& strata,
                                  std::int64_t min_count, std::vector<std::string>& warnings) const {
    const std::size_t k = variable.info.levels.size();
    const auto after =
        distributed::distributed_pram_target_sums(comm, released, target, strata, static_cast<std::int32_t>(k));
    std::vector<std::int64_t> counts(k, 0);
    std::vector<ExactSum> sums(k);
    for (std::size_t s = 0; s < strata.ids.size(); ++s)
      for (std::size_t c = 0; c < k; ++c) {
        counts[c] += variable.target_before.counts[s * k + c];
        sums[c].merge(variable.target_before.sums[s * k + c]);
      }
    std::vector<double> original_sums(k);
    std::int64_t records = 0;
    for (std::size_t c = 0; c < k; ++c) {
      original_sums[c] = sums[c].value();
      records += counts[c];
    }
    // A mean of fewer records than the small-count rule allows would tell their values.
    const auto mean_json = [&](const std::vector<double>& means) {
      nlohmann::json out = nlohmann::json::array();
      for (std::size_t c = 0; c < k; ++c)
        out.push_back(label_may_be_printed(counts[c], min_count) ? number_or_null(means[c]) : nlohmann::json(nullptr));
      return out;
    };
    std::vector<double> beta(k);
    for (std::size_t c = 0; c < k; ++c)
      beta[c] =
          counts[c] > 0 ? original_sums[c] / static_cast<double>(counts[c]) : std::numeric_limits<double>::quiet_NaN();
    nlohmann::json entry = {{"target", *options.regression_target},
                            {"records", reported_count(records, min_count)},
                            {"mean_before", mean_json(beta)},
                            {"mean_estimate", nullptr},
                            {"information_loss", nullptr}};
    if (static_cast<std::int64_t>(k) > kMaxEstimatedCategories) return entry;  // warned with the one-way estimate
    std::vector<ExactSum> estimated_counts(k);
    std::vector<ExactSum> estimated_sums(k);
    std::vector<double> released_sums(k);
    for (std::size_t s = 0; s < strata.ids.size(); ++s) {
      const PramMatrix p = drawn_matrix(v, variable, flags, seed, strata, s);
      for (std::size_t c = 0; c < k; ++c) released_sums[c] = after.sums[s * k + c].value();
      const auto t_hat = pram_unbiased_estimate(p, std::span<const std::int64_t>(after.counts).subspan(s * k, k));
      const auto s_hat = pram_unbiased_totals(p, released_sums);
      if (!t_hat || !s_hat) {
        warnings.push_back("--regression-target " + *options.regression_target + ", variable '" + variable.info.name +
                           "', " + stratum_name(strata.ids[s]) + ": the transition matrix is singular; no estimate");
        return entry;
      }
      for (std::size_t c = 0; c < k; ++c) {
        estimated_counts[c].add((*t_hat)(static_cast<Eigen::Index>(c)));
        estimated_sums[c].add((*s_hat)(static_cast<Eigen::Index>(c)));
      }
    }
    std::vector<double> t_hat(k);
    std::vector<double> s_hat(k);
    for (std::size_t c = 0; c < k; ++c) {
      t_hat[c] = estimated_counts[c].value();
      s_hat[c] = estimated_sums[c].value();
    }
    const PramRegressionLoss loss = pram_regression_loss(counts, original_sums, t_hat, s_hat);
    entry["mean_estimate"] = mean_json(loss.beta_estimate);
    entry["information_loss"] = {{"lrd", number_or_null(loss.lrd)}, {"mlrd", number_or_null(loss.mlrd)},
                                 {"measured", loss.measured},       {"empty", loss.empty},
                                 {"zero_mean", loss.zero_mean},     {"infinite", loss.infinite}};
    return entry;
  }

  std::string stratum_name(std::uint64_t id) const {
    if (options.strata.empty()) return "all records";
    return "stratum id " + std::to_string(id);
  }

  /// Collective: PRAM of one variable on every rank, whose counts per (stratum, category) are `before`;
  /// returns its report entry.
  nlohmann::json pram_variable(const distributed::Communicator& comm, std::size_t v, const VariableInfo& info,
                               std::span<const std::int32_t> original, std::span<const std::int64_t> before,
                               const std::optional<PramMatrix>& user, const ParsedFlags& flags, std::uint64_t seed,
                               const distributed::Strata& strata, std::span<std::int32_t> released,
                               std::span<std::uint8_t> changed, std::int64_t first_row_id, std::int64_t min_count,
                               std::vector<std::string>& warnings, PhaseClock& clock) const {
    const auto k = static_cast<std::int32_t>(info.levels.size());
    const auto kk = static_cast<std::size_t>(k);
    const std::size_t strata_count = strata.ids.size();
    const auto stratum_counts = [&](std::span<const std::int64_t> all, std::size_t s) {
      return all.subspan(s * kk, kk);
    };

    std::vector<PramMatrix> drawn(strata_count);
    std::vector<PramMatrix> listed_p;
    std::vector<PramSampler> samplers;
    samplers.reserve(strata_count);
    for (std::size_t s = 0; s < strata_count; ++s) {
      StratumMatrices m = stratum_matrices(v, info, user, flags, seed, strata.ids[s], stratum_counts(before, s));
      samplers.emplace_back(m.drawn);
      drawn[s] = std::move(m.drawn);
      if (strata_count <= kMaxListedStrata) listed_p.push_back(std::move(m.p));
    }
    clock.lap(info.name + ": counts and matrices");
    const std::int64_t local_changes =
        pram_draw_in_blocks(original, strata.record_stratum, samplers, seed, v, first_row_id, released, changed);
    samplers.clear();
    clock.lap(info.name + ": draws");
    const auto after = distributed::distributed_pram_counts(comm, released, strata, k);
    const auto changes = distributed::distributed_pram_changes(comm, original, released, strata);

    // Totals over strata: counts, expectation, estimate and its variance (independent strata add).
    std::vector<std::int64_t> total_before(kk, 0);
    std::vector<std::int64_t> total_after(kk, 0);
    std::vector<ExactSum> expected(kk);
    std::vector<ExactSum> estimate(kk);
    std::vector<ExactSum> variance(kk);
    bool estimable = k <= kMaxEstimatedCategories;
    if (!estimable)
      warnings.push_back("variable '" + info.name + "': " + std::to_string(k) +
                         " categories; the unbiased estimate "
                         "and its variance are not computed above " +
                         std::to_string(kMaxEstimatedCategories));
    std::int64_t rare = 0;
    std::int64_t rare_safe = 0;
    std::int64_t strata_withheld = 0;
    nlohmann::json strata_json = nlohmann::json::array();
    for (std::size_t s = 0; s < strata_count; ++s) {
      const auto t = stratum_counts(before, s);
      const auto x = stratum_counts(after, s);
      for (std::size_t c = 0; c < kk; ++c) {
        total_before[c] += t[c];
        total_after[c] += x[c];
      }
      const Eigen::VectorXd e = pram_expected_counts(drawn[s], t);
      for (std::size_t c = 0; c < kk; ++c) expected[c].add(e(static_cast<Eigen::Index>(c)));
      std::optional<Eigen::VectorXd> t_hat;
      std::optional<Eigen::VectorXd> var;
      if (estimable) {
        t_hat = pram_unbiased_estimate(drawn[s], x);
        var = pram_estimate_variance_diagonal(drawn[s], t);
        if (!t_hat || !var) {
          estimable = false;
          warnings.push_back("variable '" + info.name + "', " + stratum_name(strata.ids[s]) +
                             ": the transition matrix is singular; no unbiased estimate");
        } else {
          for (std::size_t c = 0; c < kk; ++c) {
            estimate[c].add((*t_hat)(static_cast<Eigen::Index>(c)));
            variance[c].add((*var)(static_cast<Eigen::Index>(c)));
          }
        }
      }
      const PramRisk risk = pram_risk(drawn[s], t, options.risk_threshold);
      nlohmann::json risk_json = nlohmann::json::array();
      nlohmann::json safe_json = nlohmann::json::array();
      nlohmann::json unsafe_json = nlohmann::json::array();
      for (std::size_t c = 0; c < kk; ++c) {
        risk_json.push_back(number_or_null(risk.risk[c]));
        if (!risk.rare[c]) continue;
        ++rare;
        if (risk.safe[c]) ++rare_safe;
        if (label_may_be_printed(t[c], min_count)) (risk.safe[c] ? safe_json : unsafe_json).push_back(info.levels[c]);
      }
      if (strata_count > kMaxListedStrata) continue;
      std::int64_t records = 0;
      for (std::int64_t c : t) records += c;
      // A stratum of fewer records than the small-count rule allows is not listed: its labels would
      // name the few records that carry them.
      if (!label_may_be_printed(records, min_count)) {
        ++strata_withheld;
        continue;
      }
      nlohmann::json values = nlohmann::json::array();
      const auto codes = distributed::stratum_codes(strata.ids[s], std::span<const std::int32_t>(stratum_levels_));
      for (std::size_t j = 0; j < codes.size(); ++j)
        values.push_back(codes[j] < 0 ? nlohmann::json(nullptr)
                                      : nlohmann::json(stratum_labels_[j][static_cast<std::size_t>(codes[j])]));
      strata_json.push_back({{"values", std::move(values)},
                             {"records", reported_count(records, min_count)},
                             {"records_changed", reported_count(changes[s], min_count)},
                             {"counts_before", reported_counts(t, min_count)},
                             {"counts_after", reported_counts(x, min_count)},
                             {"p", matrix_json(listed_p[s])},
                             {"drawn", matrix_json(drawn[s])},
                             {"p_diagonal", diagonal_json(listed_p[s])},
                             {"drawn_diagonal", diagonal_json(drawn[s])},
                             {"risk", std::move(risk_json)},
                             {"rare_safe", std::move(safe_json)},
                             {"rare_unsafe", std::move(unsafe_json)}});
    }

    std::int64_t records = 0;
    for (std::int64_t c : total_before) records += c;
    nlohmann::json expected_json = nlohmann::json::array();
    for (const auto& e : expected) expected_json.push_back(e.value());
    nlohmann::json estimate_json = nullptr;
    nlohmann::json sd_json = nullptr;
    nlohmann::json loss_json = nullptr;
    if (estimable) {
      std::vector<double> t_hat(kk);
      std::vector<double> var(kk);
      estimate_json = nlohmann::json::array();
      sd_json = nlohmann::json::array();
      for (std::size_t c = 0; c < kk; ++c) {
        t_hat[c] = estimate[c].value();
        var[c] = variance[c].value();
        estimate_json.push_back(t_hat[c]);
        sd_json.push_back(std::sqrt(std::max(0.0, var[c])));
      }
      const PramInformationLoss loss = pram_information_loss(total_before, t_hat, var);
      loss_json = {{"rd", number_or_null(loss.rd)},
                   {"mrd", number_or_null(loss.mrd)},
                   {"infinite", loss.infinite},
                   {"cv", number_or_null(loss.cv)},
                   {"mcv", number_or_null(loss.mcv)}};
    }
    std::int64_t changed_total = 0;
    for (std::int64_t c : changes) changed_total += c;
    SDC_CHECK(changed_total == comm.all_reduce_sum(local_changes), "PRAM change counts disagree");
    const MatrixSpec& spec = flags.matrix.at(info.name);
    const bool reference = !user && spec.kind == MatrixKind::kReference;
    nlohmann::json entry = {
        {"variable", info.name},
        {"levels", info.levels},
        {"matrix", user ? "file" : spec.text},
        {"invariant", reference || options.invariant},
        {"alpha", reference || options.invariant ? nlohmann::json(options.alpha) : nlohmann::json(nullptr)},
        {"pd", reference ? nlohmann::json(flags.pd.at(info.name)) : nlohmann::json(nullptr)},
        {"records", reported_count(records, min_count)},
        {"records_changed", reported_count(changed_total, min_count)},
        {"counts_before", reported_counts(total_before, min_count)},
        {"counts_after", reported_counts(total_after, min_count)},
        {"expected_after", std::move(expected_json)},
        {"estimate", std::move(estimate_json)},
        {"estimate_sd", std::move(sd_json)},
        {"information_loss", std::move(loss_json)},
        {"rare_cells", rare},
        {"rare_safe_cells", rare_safe},
        {"strata", std::move(strata_json)},
        {"strata_withheld", strata_withheld}};
    if (user) entry["matrix_file"] = flags.matrix_files.at(info.name).string();
    clock.lap(info.name + ": counts after, estimates and risk");
    return entry;
  }

  std::vector<std::int32_t> stratum_levels_;
  std::vector<std::vector<std::string>> stratum_labels_;
};

}  // namespace

std::unique_ptr<PramStep> make_pram_step() { return std::make_unique<PramStepImpl>(); }

}  // namespace sdc::engine
