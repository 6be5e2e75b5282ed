#pragma once
// Perturbation tables (p-tables) of the cell key method (docs/methods cellkey.md §3–§5): the
// maximum-entropy construction of the ptable package from (D, V, js, pstay, mono, optim), the lookup of
// a cell's noise from its original count and cell key, and the tau-Argus and SAS text formats.
// Shape: not a record kernel. A p-table is built once, on the coordinator, from a handful of parameters
// (cellkey.md §10), and is then read-only data that every cell lookup shares; the lookup itself is a
// pure function of (count, cell key), so cells can be perturbed in any order, on any rank.
//
// Bounds are kept as integers in units of 10⁻⁸ (the 8 decimals of every reference file), and a cell key
// as an integer fraction C/M, so that the lookup compares C·10⁸ with UB·M exactly: a double comparison
// could flip the noise of a cell whose key sits on a bound. Text in and out goes through strings and
// streams: the caller opens the files and passes their names for the messages.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace sdc::tables {

/// One target of a p-table row: published = original count + noise.
struct PTableEntry {
  std::int64_t target = 0;        ///< j (frequency tables: integer)
  double probability = 0.0;       ///< printed p = ub - lb
  std::uint64_t upper_bound = 0;  ///< round(1e8 * ub): the cumulative bound in units of 1e-8; last entry 100000000
};

inline constexpr std::uint64_t kPTableBoundScale = 100000000;  // 1e8

struct PTable {
  /// Row i = 0..I (row 0 = {0 with probability 1}); row I also serves every i > I.
  std::vector<std::vector<PTableEntry>> rows;
  std::int64_t max_noise() const;      ///< D = max |j - i|
  std::int64_t blocked_threshold = 0;  ///< js (0 when unknown)
};

/// A cell key ck = numerator / modulus in [0, 1) (modulus = M of the record keys, e.g. 1e8 or 2^32).
struct CellKey {
  std::uint64_t numerator = 0;
  std::uint64_t modulus = 100000000;
};

enum class LookupRule {
  kTauArgus,
  kSas
};  // tau-Argus/cellKey: ck in [lb, ub); SAS: lb < ck <= ub and v = 0 when ck == 0

/// The noise v for a cell of original count `count` >= 0 (0 -> 0): row min(count, I), exact comparison
/// C*1e8 < UB*M in 128-bit integers (never doubles).
std::int64_t lookup_noise(const PTable& table, std::int64_t count, CellKey key, LookupRule rule);

/// The mean and variance of the noise v = j − i of row `row` under its printed probabilities (ub − lb).
struct PTableRowMoments {
  double mean = 0.0;
  double variance = 0.0;
};
PTableRowMoments ptable_row_moments(const PTable& table, std::size_t row);

// ---- construction (cellkey.md §5) ----------------------------------------------------------------

/// The parameters of the ptable package. Rows: I = D when js = 0, else D + js + 1; row i has the targets
/// max(i − D, 0) … i + D except the blocked 1 … js, and row I (symmetric) serves every larger count.
struct PTableParameters {
  std::int64_t max_noise = 2;  ///< D: maximum |v|, >= 1
  double variance = 1.0;       ///< V: the noise variance, > 0
  std::int64_t js = 0;         ///< the blocking threshold: no published value in 1 … js
  /// A lower bound on p(v = 0): empty (none), one value, or one per row i = 1 … I; each in (0, 1).
  std::vector<double> pstay;
  /// p non-decreasing from the most negative v up to v = 0: one flag, or one per row i = 1 … I.
  std::vector<bool> mono{true};
  int optim = 1;  ///< 1: Σ v²p <= V; 4: Σ v²p = V
};

/// What a step reports per row i = 1 … I: the printed distribution's moments and how the variance
/// constraint came out. `variance_fails` is the ptable package's check, the solved variance rounded to 3
/// decimals differing from V (rounded alike); such a row had its pstay lowered by 0.05 up to 20 times.
struct PTableRowReport {
  std::int64_t i = 0;
  double mean = 0.0;             ///< of the printed distribution
  double variance = 0.0;         ///< of the printed distribution
  double solved_variance = 0.0;  ///< of the maximum-entropy optimum, before rounding
  bool variance_binds = false;   ///< the variance constraint is active at the optimum (always, with optim 4)
  bool variance_fails = false;
  bool mono = false;    ///< the monotonicity constraint applied (the row has v = 0 and its flag is set)
  double pstay = 0.0;   ///< the pstay bound finally used (0: none)
  int pstay_steps = 0;  ///< how many times pstay was lowered by 0.05
};

struct PTableBuild {
  PTable table;
  std::vector<PTableRowReport> rows;  ///< rows i = 1 … I
};

/// Builds the p-table by maximum entropy, row by row (exponential-family optimum p_v ∝ exp(λ₁v + λ₂v²)
/// on the free atoms, monotonicity pooling, bounds 10⁻⁸ <= p and pstay, Newton on the dual to 10⁻¹²),
/// then rounds like the ptable package. Throws ParameterError naming the parameter and its value when
/// the parameters are out of range or infeasible (e.g. D 2, V 1, js 1).
PTableBuild build_ptable_with_report(const PTableParameters& parameters);
PTable build_ptable(const PTableParameters& parameters);

// ---- files (cellkey.md §4) -----------------------------------------------------------------------

enum class PTableFormat {
  kTauArgus,  ///< i;j;p;v;p_int_ub
  kSas,       ///< i;j;p;v;p_int_lb;p_int_ub
};

/// Reads a frequency p-table, the format detected from the header line. Fields may carry blanks around
/// them (R's formatting); tau-Argus reads only i, j and p_int_ub, and so does this reader, but every
/// field must be a number. Throws InvalidInput naming `source` and the line: an unknown header, a bad
/// number, a missing row i (every i from 0 to I, in order), j not ascending, ub not increasing, an SAS
/// lower bound that is not the previous upper bound, a row whose probabilities (ub − lb) do not sum to 1
/// within 10⁻⁷. The last bound of each row is stored as exactly 1. `detected`, when given, receives the format.
PTable read_ptable(std::istream& in, const std::string& source, PTableFormat* detected = nullptr);
PTable parse_ptable(const std::string& text, const std::string& source, PTableFormat* detected = nullptr);

/// Writes the table with 8 decimals; reading it back gives the same rows (blocked_threshold is not stored).
void write_ptable(std::ostream& out, const PTable& table, PTableFormat format);
std::string format_ptable(const PTable& table, PTableFormat format);

}  // namespace sdc::tables
