#pragma once
// Resampling protection of frequency tables (docs/methods tabular.md §3–§5): Heer's bootstrap with the
// quality condition S and averaging of M tables, and the cell-oriented binomial perturbation with
// compensation of Domingo-Ferrer and Mateo-Sanz, with the exact-disclosure study of their Table 1.
//
// Shape: global on one process over a table held whole (leaf cell counts, cell i has global id i), but
// every draw is keyed by a global id, so the result does not depend on threads or on the order in which
// the tree is evaluated:
// * Heer's bootstrap: one multinomial(n, x/n) table by conditional binomial splits down a fixed binary
//   tree of cells. Heap numbering: root 1 covers cells [0, C); a node over [lo, hi) with hi - lo >= 2
//   has children 2·id over [lo, mid) and 2·id + 1 over [mid, hi), mid = lo + ceil((hi - lo) / 2); a
//   node holding c draws gives Binomial(c, x(left) / x(node)) of them to its left child. Draws of node
//   `id` for table m of regeneration a: binomial_draw (bootstrap/replicates.h) from counters
//   (id, i, m, a), i = 0, 1, ... of StepId kTableBootstrap.
// * Cell perturbation: cell c draws Bin(n, x/n) from counters (c, i, 0, r), r = the redraw, of StepId
//   kTableCellPerturbation. The compensation spreads |n' - n| units over the cells' counters by
//   conditional hypergeometric splits down the same tree shape over the cells of a slice (the whole
//   table, or one slice of the dimension whose margins are kept) in row-major order: node `id` of slice
//   s draws from counters (id, 1, 2^63 + s, j), j = 0, 1, ... (the top bit keeps them apart from the
//   cells' counters).
// Memory is O(cells): the counts, the output and one prefix-sum array; the work is O(cells) per table
// (bootstrap: per regeneration and averaged table), threaded over subtrees and fixed chunks of cells.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/core/record_rng.h"

namespace sdc::tables {

/// The default cap on regenerations (bootstrap) and on redraws of one cell (cell perturbation).
inline constexpr std::int64_t kDefaultMaxAttempts = 10000;

// ---- Quality condition (§3.2) ------------------------------------------------------------------------

/// Admissible values of a protected count: x' meets −S < (x' − x)/sd < S with sd = sqrt(x(1 − x/n)), so
/// lower = the smallest integer > x − S·sd and upper = the largest integer < x + S·sd, clamped to
/// [0, n]; sd = 0 (x = 0 or x = n) admits only x. The bounds are decided exactly (integer arithmetic on
/// d²·n < S²·x·(n − x)), so a boundary x ± S·sd that is an integer is excluded as the strict
/// inequality says.
struct QualityInterval {
  std::int64_t lower = 0;
  std::int64_t upper = 0;
  double sd = 0.0;  ///< sqrt(x(1 − x/n)), for reports
};

/// Throws ParameterError unless 0 <= count <= total < 2^53 and S > 0 is finite.
QualityInterval quality_interval(std::int64_t count, std::int64_t total, double s);

/// The same condition on the average of M tables with the un-rescaled sd (§3.3): bounds on the sum T
/// of the M counts, −S < (T/M − x)/sd < S, clamped to [0, M·n]. M = 1 gives quality_interval.
QualityInterval averaged_quality_interval(std::int64_t count, std::int64_t total, double s, std::int64_t tables);

// ---- Heer's bootstrap (§3) ---------------------------------------------------------------------------

struct HeerBootstrapOptions {
  double s = 2.0;           ///< S > 0
  std::int64_t tables = 1;  ///< M >= 1 bootstrap tables averaged (odd M recommended: no rounding ties)
  std::uint64_t seed = 0;
  std::int64_t max_attempts = kDefaultMaxAttempts;  ///< regenerations before giving up
};

struct HeerBootstrapResult {
  /// round(T/M) per cell, T the sum of the accepted M tables' counts (ties, only for even M, go up).
  std::vector<std::int64_t> released;
  std::int64_t attempts = 0;     ///< averaged tables generated, the accepted one included
  double acceptance_rate = 0.0;  ///< 1 / attempts
  double s = 0.0;
  std::int64_t tables = 1;
  std::int64_t original_total = 0;  ///< n
  /// Σ released: n for M = 1; for M > 1 the rounded average need not add up to n.
  std::int64_t released_total = 0;
};

/// Draws M bootstrap tables at a time until the condition holds for every cell with x > 0 on T/M (the
/// average before rounding, §3 "Analytic reproduction"); zero cells stay zero. For M = 1 every released
/// count lies in its quality_interval; for M > 1 round(T/M) can lie up to one half outside it. Throws
/// InvalidInput for a negative count (naming the cell id), ParameterError for S <= 0, M < 1,
/// max_attempts < 1, n >= 2^53 or M·n >= 2^62, and ParameterError "no table met the quality condition
/// in N attempts; raise S or M" when the cap is reached.
HeerBootstrapResult heer_bootstrap(std::span<const std::int64_t> counts, const HeerBootstrapOptions& options);

/// The multinomial tree of one table: its prefix sums, from which every node's split is known.
class BootstrapTree {
 public:
  /// Throws InvalidInput for a negative count, ParameterError for a total >= 2^53.
  explicit BootstrapTree(std::span<const std::int64_t> counts);

  std::size_t cells() const { return prefix_.size() - 1; }
  std::int64_t total() const { return prefix_.back(); }

  /// Adds bootstrap table `replicate` of regeneration `attempt` to `sums` (one entry per cell).
  void add_table(std::uint64_t seed, std::uint64_t replicate, std::uint64_t attempt,
                 std::span<std::int64_t> sums) const;

  /// One cell's count in that table from the nodes on its root-to-leaf path alone: O(depth).
  std::int64_t cell_count(std::uint64_t seed, std::uint64_t replicate, std::uint64_t attempt, std::size_t cell) const;

 private:
  std::vector<std::int64_t> prefix_;  ///< prefix_[i] = x_0 + ... + x_{i-1}
};

// ---- Cell perturbation with compensation (§4) --------------------------------------------------------

struct CellPerturbationOptions {
  double s = 2.0;  ///< S > 0
  std::uint64_t seed = 0;
  std::int64_t max_redraws = kDefaultMaxAttempts;  ///< binomial draws of one cell before giving up
  /// The table's shape, row-major (the last dimension varies fastest); empty = one dimension of all cells.
  std::vector<std::int64_t> dimensions;
  /// Keep the margins of this dimension: each of its slices (the cells with one code of it) is perturbed
  /// and compensated as a table of its own, with n = the slice's total. Empty: only the total is kept.
  std::optional<std::size_t> preserved_dimension;
};

struct CellPerturbationResult {
  std::vector<std::int64_t> released;  ///< x'' per cell
  std::int64_t perturbed_cells = 0;    ///< cells with x > 0
  std::int64_t draws = 0;              ///< binomial draws, redraws included
  double acceptance_rate = 1.0;        ///< perturbed_cells / draws (1 without cells to perturb)
  std::int64_t original_total = 0;     ///< n
  std::int64_t perturbed_total = 0;    ///< n' = Σ x' before the compensation
  std::int64_t units_removed = 0;      ///< Σ over slices of max(n'_s − n_s, 0)
  std::int64_t units_added = 0;        ///< Σ over slices of max(n_s − n'_s, 0)
  double s = 0.0;
};

/// Per cell with x > 0, x' ~ Bin(n, x/n) redrawn until x' lies in quality_interval(x, n, S); then
/// |n' − n| units are removed from the counters x' − lower (n' > n) or added to upper − x' (n' < n) as a
/// multivariate hypergeometric draw, so x'' keeps the total (and the margins of preserved_dimension)
/// exactly and every cell stays in its interval (always feasible: Σ lower <= n <= Σ upper). Zero cells
/// stay zero. Throws InvalidInput for a negative count, ParameterError for S <= 0, max_redraws < 1, a
/// shape that does not match the counts, a preserved dimension outside it, n >= 2^53, and when a cell
/// needs more than max_redraws draws (naming the smallest such cell id).
CellPerturbationResult perturb_cells(std::span<const std::int64_t> counts, const CellPerturbationOptions& options);

// ---- Samplers ----------------------------------------------------------------------------------------

/// Hypergeometric(draws; successes, population): the successes among `draws` units drawn without
/// replacement from `population` units of which `successes` are successes. Words from counters
/// (base.unit, base.draw, base.replicate, base.attempt + i), i = 0, 1, ... Exact up to double rounding:
/// inversion by sequential search when the support (after the symmetries draws <-> population − draws,
/// successes <-> failures) has fewer than 10 points, otherwise Stadlober's ratio of uniforms with the
/// exact mode (HRUA, Stadlober 1989, "Sampling from Poisson, binomial and hypergeometric distributions:
/// ratio of uniforms as a simple and fast alternative"), whose hat covers the whole support; the
/// log-density ratios are computed as differences of log-factorials without cancellation. Throws
/// ParameterError unless 0 <= draws, successes <= population < 2^53.
std::int64_t hypergeometric_draw(const RecordRng& rng, const DrawCounter& base, std::int64_t draws,
                                 std::int64_t successes, std::int64_t population);

/// Draws `units` units without replacement from cells holding weights[i] units each (a multivariate
/// hypergeometric draw) by conditional hypergeometric splits down the fixed tree over the cells; out[i] =
/// the units taken from cell i. Counters as the compensation's, slice `slice`, RecordRng(seed,
/// kTableCellPerturbation). Throws ParameterError when units > Σ weights or a weight is negative.
std::vector<std::int64_t> multivariate_hypergeometric_split(std::uint64_t seed, std::uint64_t slice,
                                                            std::span<const std::int64_t> weights, std::int64_t units);

// ---- Table 1 of the seed paper: exact disclosure of small counts -------------------------------------

/// The prior of the study: original counts uniform on 1..kDisclosurePriorMax.
inline constexpr std::int64_t kDisclosurePriorMax = 60;
/// Table 1's columns: M = 1, 3, 5, each with S = 3, 2, 1.5.
inline constexpr std::array<std::int64_t, 3> kTable1Tables{1, 3, 5};
inline constexpr std::array<double, 3> kTable1S{3.0, 2.0, 1.5};

/// P(X = k | X' = k) for k = 1, 2, 3 in the large-n limit (§3 "Analytic reproduction"): x uniform on
/// 1..max_count, T ~ Poisson(M·x), accepted when |T/M − x| < S·sqrt(x) (regeneration: the release's law
/// given x is conditional on acceptance), released round(T/M).
std::array<double, 3> heer_exact_disclosure(double s, std::int64_t tables,
                                            std::int64_t max_count = kDisclosurePriorMax);

/// The 3 × 9 matrix of Table 1 by the analytic model: row k − 1, column 3·(index of M) + (index of S).
std::array<std::array<double, 9>, 3> heer_table1_analytic();

enum class DisclosureMethod : std::uint8_t {
  kBootstrap,  ///< Heer: the average of M tables, regenerated until it meets the condition
  /// Domingo-Ferrer & Mateo-Sanz's perturbation stage: one draw per cell, redrawn until it meets the
  /// condition; M must be 1 (no averaging). In the large-n limit its law is that of the M = 1 bootstrap
  /// (§4.3: the M = 1 column of Table 1), drawn from the method's own counters. The compensation is left
  /// out: the units it moves depend on the whole table (the truncated draws of small counts fall short
  /// of x on average, so n' − n grows with the number of small cells), not on one cell and the prior.
  kCell,
};

struct ExactDisclosureSimulation {
  std::array<double, 3> probability{};     ///< P(X = k | X' = k), k = 1, 2, 3 (NaN when no trial released k)
  std::array<std::int64_t, 3> released{};  ///< trials released as k
  std::array<std::int64_t, 3> exact{};     ///< of those, trials whose original count was k
  std::int64_t trials = 0;
  std::int64_t attempts = 0;     ///< generations (bootstrap: averaged tables; cell: draws)
  double acceptance_rate = 0.0;  ///< trials / attempts
};

/// Monte Carlo estimate of the exact-disclosure probabilities under the analytic model's prior and
/// large-n limit (Poisson(x) counts, sd = sqrt(x)). Trial t: x = 1 + ⌊u·60⌋ from word 0 of counter
/// (t, 2^62, 0, 0); generation a draws table m's count by poisson_draw (risk/loglinear.h) from counter
/// (t, 2^63 + a, m, 0), whose attempt word carries the Poisson sampler's rejections. StepId
/// kTableBootstrap or kTableCellPerturbation by method (the kernels' counters never reach these draw
/// words). Runs on the threads of the current arena; the result does not depend on their number.
/// Throws ParameterError for S <= 0, M < 1, M != 1 with kCell, draws < 1, or a trial needing more than
/// kDefaultMaxAttempts generations.
ExactDisclosureSimulation simulate_exact_disclosure(DisclosureMethod method, double s, std::int64_t tables,
                                                    std::int64_t draws, std::uint64_t seed);

}  // namespace sdc::tables
