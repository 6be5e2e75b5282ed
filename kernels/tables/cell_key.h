#pragma once
// The cell key method (docs/methods cellkey.md §1-§3, §6-§10), apart from building and reading
// p-tables (ptable.h): record keys, cell keys, the perturbation of frequency and magnitude cells, and
// the utility measures of a perturbed table.
//
// Shapes:
//   native_record_key(s), parse_compat_record_key   element-wise: a record's key from (seed, row id)
//                                                   alone, or from its decimal text
//   CellKeySum, MagnitudeKeySum                     mergeable partials: (count, Σ K mod M); integer
//                                                   arithmetic modulo M, so any merge order gives the
//                                                   same key (tabulation.h carries them per cell)
//   perturb_frequency_cells, perturb_magnitude_cells element-wise over cells: a published value is a
//                                                   function of (count, key) alone (§7 consistency),
//                                                   threaded with TBB, the same for any thread count
//   ckm_measures_local / _merge / _finalize         mergeable partials over blocks of cells: integer
//                                                   counts and ExactSum sums; percentiles come from
//                                                   the per-cell distances (sample or distributed
//                                                   quantiles), which the finalize step takes as input
//   non_additivity                                  a function of the published cells and the table's
//                                                   relations, in integers
//
// Key arithmetic: a key K is an integer in [0, M), u = K/M, with 2 <= M <= 2^32 (native keys use
// M = 10^8 or 2^32; compat keys M = 10^d). Two keys below M add below 2^33, so a sum reduced after
// every addition never overflows, and ck = (Σ K mod M)/M is exact whatever the order.
//
// Magnitude noise (§6) follows cellKey's flex perturbation, component by component j = 1..k over the
// cell's k largest contributions x_j: the scale δ_j = ε_j·x_j·m(|x_j|) with the flex function m; a
// component larger than the cell value so far, xo, is rescaled (δ_j = xo, x_j = xo/(p_S·ε_j)); the
// noise V_j is looked up in row a = |x_j/δ_j| of the magnitude noise table (capped at its last row,
// linear interpolation between the two neighbouring rows, the same key); the component
// sign(xo)·|δ_j|·sign(V_j)·(μ + |V_j|) is added to xo (μ = μ_C for j = 1 of a sensitive cell, else 0),
// cut so that a negative noise never flips the sign of xo. Contributions below the separation point z_s = m₁/(√E·p_S)
// use δ = 1 and the small-cells table (row |x_j|) for j = 1 and get no noise for j >= 2. Native conventions, stated
// here because the references leave them open or differ:
//   * V_j comes from a magnitude p-table when one is given (MagnitudeNoiseTable, rows of type "all";
//     the even/odd types are not used); otherwise from the symmetric row (the last row, i >= I) of a
//     frequency p-table: V_j = j − I, integer noise in [−D, D] of variance V. The small-cells table is
//     a frequency p-table whose rows 0..I are read with v = j − i.
//   * Keys: the cell key for j = 1, and for j >= 2 the key of j − 1 "scrambled" once more: its first
//     decimal digit moved to the end (cellKey with same_key = TRUE). scramble_first_key scrambles the
//     first one too (tau-Argus, cellKey's default). The digits are the key's d decimals when M = 10^d,
//     else those of ⌊10^8·K/M⌋ (8 decimals), so trailing zeros count as digits (0.15 at M = 10^8 is
//     0.15000000 -> 0.50000001).
//   * A cell whose value is 0 stays 0; a zero contribution adds no component.
//
// Errors: ParameterError names the parameter at fault; InvalidInput names the row id (the caller adds
// the file and variable). No message quotes a key or a value.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/exact_sum.h"
#include "kernels/tables/constraint_matrix.h"
#include "kernels/tables/ptable.h"
#include "kernels/utility/table_distance.h"

namespace sdc::tables {

// ---- §1 Record keys ----

inline constexpr std::uint64_t kDecimalKeyModulus = 100000000;              ///< 10^8: 8 decimals (the default)
inline constexpr std::uint64_t kBinaryKeyModulus = std::uint64_t{1} << 32;  ///< 2^32: uint32 wrap-around

struct RecordKeyOptions {
  std::uint64_t modulus = kDecimalKeyModulus;  ///< M: kDecimalKeyModulus or kBinaryKeyModulus
};

/// ParameterError naming "key modulus" unless 2 <= M <= 2^32.
void check_key_modulus(std::uint64_t modulus);

/// The native key of row `row_id` (>= 0): ⌊M·w/2^64⌋ with w word 0 of RecordRng(seed,
/// StepId::kCellKeyRecordKey) at counter (row id, 0, 0, 0). Non-uniformity below M/2^64.
std::uint64_t native_record_key(std::uint64_t seed, std::int64_t row_id, std::uint64_t modulus);

/// native_record_key for rows first_row_id, first_row_id + 1, ... into `keys` (threaded).
void native_record_keys(std::uint64_t seed, std::int64_t first_row_id, std::span<std::uint64_t> keys,
                        const RecordKeyOptions& options = {});

/// A key for an empty cell, used only by the native zero_row option (empty cells have no records to
/// sum): word 0 at counter (cell index, 1, 0, 0) of the record-key step, reduced like a record key.
CellKey empty_cell_key(std::uint64_t seed, std::uint64_t cell_index, std::uint64_t modulus);

/// The modulus 10^d of compat keys with d declared decimals; ParameterError naming "decimals" unless
/// 1 <= d <= 9 (10^9 < 2^32).
std::uint64_t compat_key_modulus(int decimals);

struct ParsedRecordKey {
  std::uint64_t key = 0;  ///< in units of 10^-d, below 10^d
  bool was_one = false;   ///< the text was exactly 1, read as 0 (cellKey's rounding can produce it)
};

/// A compat key: the decimal text (blanks around it allowed; digits with an optional point, an
/// optional exponent such as 6.534e-05) read exactly, in integer arithmetic, into units of 10^-d.
/// InvalidInput naming `row_id` when it is not such a number, lies outside [0, 1], or has a non-zero
/// digit beyond the d-th decimal.
ParsedRecordKey parse_compat_record_key(std::string_view text, int decimals, std::int64_t row_id);

struct CompatKeys {
  std::vector<std::uint64_t> keys;
  std::int64_t ones_read_as_zero = 0;  ///< keys equal to 1 (the caller warns with this count)
};
/// parse_compat_record_key for rows first_row_id, first_row_id + 1, ...
CompatKeys parse_compat_record_keys(std::span<const std::string> texts, int decimals, std::int64_t first_row_id);

// ---- §2 Cell keys ----

/// (a + b) mod M for a, b < M <= 2^32.
inline std::uint64_t add_keys(std::uint64_t a, std::uint64_t b, std::uint64_t modulus) {
  const std::uint64_t sum = a + b;
  return sum >= modulus ? sum - modulus : sum;
}

/// The monoid of a frequency cell: its contributors and the sum of their keys modulo M.
struct CellKeySum {
  std::int64_t count = 0;
  std::uint64_t key_sum = 0;  ///< Σ K mod M

  /// Adds one record; `record_key` < M.
  void add(std::uint64_t record_key, std::uint64_t modulus) {
    ++count;
    key_sum = add_keys(key_sum, record_key, modulus);
  }
  void merge(const CellKeySum& other, std::uint64_t modulus) {
    count += other.count;
    key_sum = add_keys(key_sum, other.key_sum, modulus);
  }
  /// ck = key_sum / M; an empty cell has key 0.
  CellKey key(std::uint64_t modulus) const { return CellKey{key_sum, modulus}; }
};

/// The monoid of a magnitude cell: all records, and those with a non-zero value (tau-Argus
/// "CellKeyNoZeros", cellKey use_zero_rkeys = FALSE).
struct MagnitudeKeySum {
  CellKeySum all;
  CellKeySum nonzero;

  void add(std::uint64_t record_key, double value, std::uint64_t modulus) {
    all.add(record_key, modulus);
    if (value != 0.0) nonzero.add(record_key, modulus);
  }
  void merge(const MagnitudeKeySum& other, std::uint64_t modulus) {
    all.merge(other.all, modulus);
    nonzero.merge(other.nonzero, modulus);
  }
};

/// Whether ck = C/M lies below the bound UB/10^8, exactly: C·10^8 < UB·M in 128 bits.
bool key_below_bound(CellKey key, std::uint64_t upper_bound);

// ---- §3 Perturbing frequency cells ----

struct FrequencyCell {
  std::int64_t count = 0;           ///< n, unweighted contributors
  double weighted_count = 0.0;      ///< W (n for an unweighted table)
  CellKey key;                      ///< the cell key; for an empty cell only read by zero_row
  bool protected_manually = false;  ///< published unperturbed (tau-Argus "protected manually")
  bool structural_zero = false;     ///< an empty cell that zero_row leaves at 0
};

struct FrequencyPerturbationOptions {
  LookupRule rule = LookupRule::kTauArgus;
  /// Native zero_row (§7), off when empty: targets j >= 0 with increasing bounds, the last
  /// kPTableBoundScale; an empty cell that is not a structural zero publishes the target of the first
  /// entry whose bound its key lies below. Never used in compat.
  std::vector<PTableEntry> zero_row;
};

struct PerturbedFrequencyCell {
  std::int64_t noise = 0;       ///< v
  std::int64_t count = 0;       ///< n̂ = n + v
  double weighted_count = 0.0;  ///< Ŵ = (n + v)·W/n; 0 for an empty cell
};

/// ParameterError naming "zero_row" unless its entries are as FrequencyPerturbationOptions says.
void check_frequency_perturbation(const FrequencyPerturbationOptions& options);

/// One cell: n̂ = n + lookup_noise(n, ck); empty cells 0 (or zero_row), manual protection unperturbed.
PerturbedFrequencyCell perturb_frequency_cell(const FrequencyCell& cell, const PTable& table,
                                              const FrequencyPerturbationOptions& options);

/// Every cell, in parallel (each cell independent of the others).
std::vector<PerturbedFrequencyCell> perturb_frequency_cells(std::span<const FrequencyCell> cells, const PTable& table,
                                                            const FrequencyPerturbationOptions& options);

// ---- §6 Magnitude cells ----

/// Most contributions a magnitude cell's noise uses (tau-Argus and cellKey: k <= 6).
inline constexpr int kMaxMagnitudeComponents = 6;

/// A row of noise values with their cumulative bounds (round(10^8·ub), the last kPTableBoundScale).
struct MagnitudeNoiseEntry {
  double noise = 0.0;
  std::uint64_t upper_bound = 0;
};

/// Rows of noise for fractional row positions a, ascending (a magnitude p-table's rows of type all).
struct MagnitudeNoiseTable {
  std::vector<double> row_positions;  ///< increasing
  std::vector<std::vector<MagnitudeNoiseEntry>> rows;
};

/// The symmetric row of a frequency p-table as a one-row table: V = j − I for its last row I.
MagnitudeNoiseTable symmetric_noise_table(const PTable& table);
/// Every row i = 0..I of a frequency p-table at position i, V = j − i: the small-cells table.
MagnitudeNoiseTable count_noise_table(const PTable& table);

/// The noise of row position a (clamped to the table's first and last rows; between two rows, the
/// linear interpolation of both rows' noise for the same key). kTauArgus: the first entry with
/// ck < ub; kSas: the first with ck <= ub, and 0 when ck = 0.
double magnitude_noise(const MagnitudeNoiseTable& table, double row_position, CellKey key, LookupRule rule);

/// The key moved by one decimal digit: its first decimal goes to the end (see the header comment).
CellKey scramble_key(CellKey key);

/// m(z) = p_L·(1 + ((p_S·z − p_L·f)/(p_L·f))·(2f/(f + z))^q) for z >= f, p_S below f: m(f) = p_S and
/// m -> p_L for large z.
struct FlexFunction {
  double p_small = 0.0;     ///< p_S, the relative noise of small values
  double p_large = 0.0;     ///< p_L, the limit for large values
  double flex_point = 0.0;  ///< f
  double q = 3.0;           ///< the exponent, > 1 (cellKey's default 3)
  double operator()(double z) const;
};

struct MagnitudePerturbationOptions {
  FlexFunction flex;
  std::vector<double> epsilon{1.0};  ///< ε_1 = 1 >= ε_2 >= ... > 0; its size is k (1..6)
  double mu_c = 0.0;                 ///< μ_C, added to |V_1| of sensitive cells; >= 0
  LookupRule rule = LookupRule::kTauArgus;
  bool scramble_first_key = false;
};

struct MagnitudeCell {
  double total = 0.0;           ///< the cell value
  std::span<const double> top;  ///< the largest (weighted) contributions, largest first; the first k used
  CellKey key;                  ///< over the non-zero contributors (or all records, by the caller's choice)
  bool sensitive = false;       ///< adds μ_C
};

struct PerturbedMagnitudeCell {
  double value = 0.0;  ///< the published value
  double noise = 0.0;  ///< value − total
};

/// ParameterError naming the parameter (epsilon, p_small, p_large, flex_point, q, mu_c).
void check_magnitude_perturbation(const MagnitudePerturbationOptions& options);

/// The separation point z_s = m₁/(√E·p_S), m₁² = Σ v²p over the small-cells table's last row,
/// E = Σ ε_j².
double separation_point(const PTable& small_cells, const MagnitudePerturbationOptions& options);

/// One cell. `small_cells` null: no separation point (z_s = 0).
PerturbedMagnitudeCell perturb_magnitude_cell(const MagnitudeCell& cell, const MagnitudeNoiseTable& noise,
                                              const PTable* small_cells, const MagnitudePerturbationOptions& options);

/// Every cell, in parallel.
std::vector<PerturbedMagnitudeCell> perturb_magnitude_cells(std::span<const MagnitudeCell> cells,
                                                            const MagnitudeNoiseTable& noise, const PTable* small_cells,
                                                            const MagnitudePerturbationOptions& options);

// ---- §9 Utility measures ----

/// Breaks of the distributions of RAD and DR (tau-Argus, cellKey).
inline constexpr std::array<double, 9> kCkmRatioBreaks{0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 1.0};
/// The same breaks as integer hundredths, for exact comparisons of RAD = AD/n.
inline constexpr std::array<std::int64_t, 9> kCkmRatioBreakHundredths{0, 2, 5, 10, 20, 30, 40, 50, 100};
/// Percentile probabilities reported for AD, RAD and DR.
inline constexpr std::array<double, 11> kCkmPercentiles{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};

/// Per cell: AD = |n̂ − n|, RAD = AD/n (0 for an empty cell), DR = |√n̂ − √n|.
struct CellDistances {
  std::vector<double> absolute;
  std::vector<double> relative;
  std::vector<double> root;
};
CellDistances cell_distances(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed);

struct NoiseCount {
  std::int64_t noise = 0;  ///< n̂ − n
  std::int64_t cells = 0;
  friend bool operator==(const NoiseCount&, const NoiseCount&) = default;
};

/// The largest AD the measures tabulate; a larger one is no cell-key noise (ParameterError).
inline constexpr std::int64_t kMaxReportedNoise = std::int64_t{1} << 20;

struct CkmMeasurePartial {
  std::int64_t cells = 0;
  std::int64_t empty_cells = 0;  ///< n = 0
  std::int64_t cells_unchanged = 0;
  std::int64_t false_zeros = 0;     ///< n > 0, n̂ = 0
  std::int64_t false_nonzeros = 0;  ///< n = 0, n̂ != 0
  std::int64_t original_ones = 0;
  std::int64_t ones_unchanged = 0;
  std::int64_t original_twos = 0;
  std::int64_t twos_unchanged = 0;
  ExactSum absolute_all;  ///< Σ AD over all cells (integers, exact)
  ExactSum relative_all;
  ExactSum root_all;
  ExactSum absolute_nonempty;  ///< over cells with n > 0
  ExactSum relative_nonempty;
  ExactSum root_nonempty;
  std::vector<NoiseCount> noise_counts;            ///< ascending noise (AD = |noise|)
  std::array<std::int64_t, 9> relative_at_most{};  ///< cells with RAD <= break
  std::array<std::int64_t, 9> root_at_most{};      ///< cells with DR <= break
  utility::TableDistancePartial distance;          ///< Hellinger terms (both totals > 0)
};

/// Local step over one block of cells. The totals are those of the whole original and perturbed
/// tables (one reduction of the counts first), for the Hellinger distance. ParameterError when the
/// spans differ in size or a count is negative.
CkmMeasurePartial ckm_measures_local(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed,
                                     std::int64_t original_total, std::int64_t perturbed_total);
/// Merge: integer counts and exact sums, so any order gives the same bits.
void ckm_measures_merge(CkmMeasurePartial& into, const CkmMeasurePartial& from);

struct DistanceSummary {
  double mean_all = 0.0;            ///< over every cell (empty cells count with their distance)
  double mean_nonempty = 0.0;       ///< over cells with n > 0 (tau-Argus: mean_all·cells/(cells − empty))
  std::vector<double> percentiles;  ///< at kCkmPercentiles
};

struct CkmMeasures {
  std::int64_t cells = 0;
  std::int64_t empty_cells = 0;
  DistanceSummary absolute;  ///< AD
  DistanceSummary relative;  ///< RAD
  DistanceSummary root;      ///< DR
  /// The empirical distribution of AD: [a] = cells with AD <= a, a = 0 .. the largest AD (at most
  /// kMaxReportedNoise).
  std::vector<std::int64_t> absolute_at_most;
  std::array<std::int64_t, 9> relative_at_most{};  ///< cells with RAD <= kCkmRatioBreaks[b]
  std::array<std::int64_t, 9> root_at_most{};      ///< cells with DR <= kCkmRatioBreaks[b]
  std::vector<NoiseCount> noise_counts;            ///< cells per noise value, ascending
  std::int64_t cells_unchanged = 0;
  std::int64_t false_zeros = 0;
  std::int64_t false_nonzeros = 0;
  double hellinger = 0.0;  ///< between the original and perturbed counts; 0 when either table is empty
  std::int64_t original_ones = 0;
  std::int64_t ones_unchanged = 0;
  std::int64_t original_twos = 0;
  std::int64_t twos_unchanged = 0;
  double ones_unchanged_share = 0.0;  ///< ones_unchanged / original_ones; 0 without original 1s
  double twos_unchanged_share = 0.0;
};

/// Percentiles of AD, RAD and DR at kCkmPercentiles (computed by the caller over all cells).
struct CkmPercentiles {
  std::vector<double> absolute;
  std::vector<double> relative;
  std::vector<double> root;
};

/// Percentiles of the cell distances: Hyndman–Fan type 7 (R's default, as cellKey's quantile()) with
/// exact arithmetic, over all cells (kernels/bootstrap/quantiles.h; distributed_quantiles gives the
/// same bits for cells spread over ranks).
CkmPercentiles ckm_percentiles(const CellDistances& distances);

CkmMeasures ckm_measures_finalize(const CkmMeasurePartial& total, const CkmPercentiles& percentiles);

/// The whole computation on one table in one block.
CkmMeasures ckm_measures(std::span<const std::int64_t> original, std::span<const std::int64_t> perturbed);

// ---- §8 Non-additivity ----

/// One relation of the table: the parent cell equals the sum of the child cells (indices into the
/// published cells).
struct AdditivityRelation {
  std::size_t parent = 0;
  std::vector<std::size_t> children;
};

struct NonAdditivity {
  std::int64_t relations = 0;
  std::int64_t non_additive = 0;  ///< relations with a non-zero gap
  std::int64_t max_gap = 0;       ///< max |Σ children − parent|
  std::int64_t total_gap = 0;     ///< Σ |Σ children − parent|
  double mean_gap = 0.0;          ///< total_gap / relations; 0 without relations
};

/// The gaps of the published cells. InternalError for a cell index out of range.
NonAdditivity non_additivity(std::span<const std::int64_t> published, std::span<const AdditivityRelation> relations);

/// The gaps of a hierarchical table over every relation of its constraint matrix (constraint_matrix.h),
/// from its non-empty cells alone: `cells` their linear indices, ascending, `published` their published
/// counts; a cell not listed publishes 0 (an empty cell stays empty), so a relation whose parent is not
/// listed has no gap. O(cells · children · log cells) time, no memory beyond the inputs. ParameterError
/// when the spans differ in size or `cells` is not ascending within the table.
NonAdditivity table_non_additivity(std::span<const DimensionEquations> dimensions, std::span<const std::int64_t> cells,
                                   std::span<const std::int64_t> published);

}  // namespace sdc::tables
