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

enum class MatrixKind { kReference, kEqual, kBand, kFrequency };

struct MatrixSpec {
  MatrixKind kind = MatrixKind::kReference;
  double p = 0.8;
  std::int64_t band = 1;
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

MatrixSpec parse_matrix_spec(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, ':');) parts.push_back(part);
  MatrixSpec spec;
  spec.text = text;
  const std::string usage = "--matrix: expected reference, nE:P, nB:P:B or nF:P, got '" + text + "'";
  if (parts.size() == 1 && parts[0] == "reference") return spec;
  if (parts.size() == 2 && parts[0] == "nE")
    spec.kind = MatrixKind::kEqual;
  else if (parts.size() == 3 && parts[0] == "nB")
    spec.kind = MatrixKind::kBand;
  else if (parts.size() == 2 && parts[0] == "nF")
    spec.kind = MatrixKind::kFrequency;
  else
    throw UsageError(usage);
  spec.p = parse_probability(parts[1], "--matrix");
  if (spec.kind == MatrixKind::kBand) {
    std::int64_t band = 0;
    const auto [end, error] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), band);
    if (error != std::errc() || end != parts[2].data() + parts[2].size() || band < 1)
      throw UsageError("--matrix nB:P:B: the band B must be a whole number >= 1, got '" + parts[2] + "'");
    spec.band = band;
  }
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

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
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
    for (const auto& name : options.variables) table.require(name, VariableType::kCategorical);
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

    nlohmann::json variables = nlohmann::json::array();
    for (std::size_t v = 0; v < options.variables.size(); ++v) {
      const std::string& name = options.variables[v];
      Column* column = nullptr;
      for (Column& c : table.mutable_columns())
        if (c.name() == name) column = &c;
      SDC_CHECK(column != nullptr, "a PRAM variable vanished from the table");
      const VariableInfo info = column->info();
      std::optional<PramMatrix> user;
      if (const auto it = flags.matrix_files.find(name); it != flags.matrix_files.end())
        user = read_matrix_file(it->second, info, options.matrix_tolerance);
      std::vector<std::int32_t> released(n);
      variables.push_back(pram_variable(comm, v, info, column->codes(), user, flags, seed.value, strata, released,
                                        changed, table.first_row_id(), context.report_min_count, step.warnings, clock));
      column->mutable_storage() = std::move(released);
    }

    const auto records_changed =
        comm.all_reduce_sum(static_cast<std::int64_t>(std::count(changed.begin(), changed.end(), std::uint8_t{1})));
    step.results = {{"records", reported_count(part.summary.row_count, context.report_min_count)},
                    {"records_changed", reported_count(records_changed, context.report_min_count)},
                    {"strata", static_cast<std::int64_t>(strata.ids.size())},
                    {"strata_listed", strata.ids.size() <= kMaxListedStrata},
                    {"risk_threshold", options.risk_threshold},
                    {"variables", std::move(variables)}};

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
  }

  bool needs_seed() const override { return true; }

  std::vector<VariableInfo> added_variables() const override { return {changed_variable()}; }

 private:
  struct ParsedFlags {
    std::map<std::string, double> pd;  ///< per variable
    MatrixSpec matrix;
    std::map<std::string, std::filesystem::path> matrix_files;
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
    flags.matrix = parse_matrix_spec(options.matrix);
    for (const auto& [name, file] : parse_assignments(options.matrix_files, "--matrix-file", options.variables))
      flags.matrix_files[name] = file;
    return flags;
  }

  nlohmann::json parameters(const ParsedFlags& flags) const {
    nlohmann::json pd = nlohmann::json::object();
    for (const auto& [name, value] : flags.pd) pd[name] = value;
    return {{"variables", options.variables},
            {"strata", options.strata},
            {"pd", pd},
            {"alpha", options.alpha},
            {"matrix", options.matrix},
            {"matrix-file", options.matrix_files},
            {"matrix-tolerance",
             options.matrix_tolerance ? nlohmann::json(*options.matrix_tolerance) : nlohmann::json(nullptr)},
            {"invariant", options.invariant},
            {"risk-threshold", options.risk_threshold}};
  }

  /// The matrices of variable `info` (position `v` in the step) in one stratum with counts `t`.
  StratumMatrices stratum_matrices(std::size_t v, const VariableInfo& info, const std::optional<PramMatrix>& user,
                                   const ParsedFlags& flags, std::uint64_t seed, std::uint64_t stratum_id,
                                   std::span<const std::int64_t> t) const {
    const auto k = static_cast<std::int64_t>(t.size());
    StratumMatrices out;
    if (!user && flags.matrix.kind == MatrixKind::kReference) {
      const auto diagonal = pram_draw_diagonal(seed, v, stratum_id, k, flags.pd.at(info.name));
      ReferencePram reference = pram_reference_matrices(diagonal, t, options.alpha);
      return {std::move(reference.p), std::move(reference.drawn)};
    }
    if (user) {
      out.p = *user;
    } else if (flags.matrix.kind == MatrixKind::kEqual) {
      out.p = pram_equal_matrix(k, flags.matrix.p);
    } else if (flags.matrix.kind == MatrixKind::kBand) {
      out.p = pram_band_matrix(k, flags.matrix.p, flags.matrix.band);
    } else {
      if (k < 3)
        throw UsageError("--matrix " + flags.matrix.text + ": the nF family needs at least 3 categories; variable '" +
                         info.name + "' has " + std::to_string(k));
      out.p = pram_frequency_matrix(t, flags.matrix.p);
    }
    out.drawn = options.invariant ? pram_blend_with_identity(pram_invariant_matrix(out.p, t), options.alpha) : out.p;
    return out;
  }

  std::string stratum_name(std::uint64_t id) const {
    if (options.strata.empty()) return "all records";
    return "stratum id " + std::to_string(id);
  }

  /// Collective: PRAM of one variable on every rank; returns its report entry.
  nlohmann::json pram_variable(const distributed::Communicator& comm, std::size_t v, const VariableInfo& info,
                               std::span<const std::int32_t> original, const std::optional<PramMatrix>& user,
                               const ParsedFlags& flags, std::uint64_t seed, const distributed::Strata& strata,
                               std::span<std::int32_t> released, std::span<std::uint8_t> changed,
                               std::int64_t first_row_id, std::int64_t min_count, std::vector<std::string>& warnings,
                               PhaseClock& clock) const {
    const auto k = static_cast<std::int32_t>(info.levels.size());
    const auto kk = static_cast<std::size_t>(k);
    const std::size_t strata_count = strata.ids.size();
    const auto before = distributed::distributed_pram_counts(comm, original, strata, k);
    const auto stratum_counts = [&](const std::vector<std::int64_t>& all, std::size_t s) {
      return std::span<const std::int64_t>(all.data() + s * kk, kk);
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
    const bool reference = !user && flags.matrix.kind == MatrixKind::kReference;
    nlohmann::json entry = {
        {"variable", info.name},
        {"levels", info.levels},
        {"matrix", user ? "file" : flags.matrix.text},
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
