#pragma once
// Synthetic instances of hierarchical tables for table protection (docs/methods tabular.md §1): the
// dimensions' equation lists, from balanced or random trees, an alternative breakdown of the root, or
// the named shapes that reproduce the sizes of public benchmark instances; leaf values; values
// aggregated up so that the table is exactly additive; frequency-rule statuses and the protection
// attributes the cell list + equation list format carries (constraint_matrix.h).
//
// Shape: element-wise in the cells. Every draw is a pure function of (seed, StepId::kTableInstance) and
// a counter keyed by the cell's column or a tree node's id (docs/rng.md), aggregation runs line by line
// with each line's cells written by one task, so an instance does not depend on the number of threads.
// Values are integers held in doubles (counts, or magnitudes rounded to whole units), so every sum is
// exact and every equation holds to the last bit.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/tables/constraint_matrix.h"

namespace sdc::tables {

/// The most codes a generated dimension may have.
inline constexpr std::int64_t kMaxGeneratedCodes = 10'000'000;

/// (a) A balanced tree: the total, `branching` children of every node down to `depth` levels below
/// the total (depth >= 1, branching >= 1), positions in preorder; one equation per internal code.
/// ParameterError when the parameters are out of range or the tree exceeds kMaxGeneratedCodes.
DimensionEquations balanced_tree_dimension(std::string name, int depth, int branching);

/// (b) A random tree: every node above `depth` has, with probability unary_probability, a single
/// child (a unary node: a subtotal equal to its one child), otherwise a number of children uniform in
/// [branching_min, branching_max].
struct RandomTreeOptions {
  int depth = 3;
  int branching_min = 2;
  int branching_max = 5;
  double unary_probability = 0.0;
};

/// Nodes are drawn breadth first; node k's draw is word 0 (unary coin: uniform < unary_probability)
/// and word 1 (branching: branching_min + index_from_bits(word, branching_max − branching_min + 1)) of
/// counter (k, 2^63 + stream, 0, 0) with RecordRng(seed, kTableInstance); `stream` tells the dimensions
/// of one instance apart. Positions in preorder. ParameterError for parameters out of range or a tree
/// larger than kMaxGeneratedCodes.
DimensionEquations random_tree_dimension(std::string name, const RandomTreeOptions& options, std::uint64_t seed,
                                         std::uint64_t stream);

/// (c) An alternative breakdown of the root (position 0): its first equation's children r_1 .. r_k are
/// split into `groups` consecutive runs (run j holds r_i for ⌊(j−1)k/g⌋ < i <= ⌊jk/g⌋), each run gets a
/// new code G_j (positions code_count .. code_count + groups − 1) with the equation G_j = Σ run, and the
/// root the second breakdown total = G_1 + ... + G_g. The table stays additive: each G_j is aggregated
/// from its run. ParameterError unless 2 <= groups <= k.
void add_alternative_root_breakdown(DimensionEquations& dimension, int groups);

/// (d) The named shapes of §1, exactly:
///   "h13": 13 codes, 7 equations, 16 child entries. Positions 0 T, 1 A, 2 B, 3 C, 4 D, 5 c11, 6 c12,
///          7 c21, 8 c22, 9..12 s1..s4; T = A + B, T = C + D, A = c11 + c12, B = c21 + c22,
///          C = c11 + c21, D = c12 + c22, c11 = s1 + s2 + s3 + s4.
///   "h16": 16 codes, 7 equations, 21 child entries (a 3 × 3 cross). Positions 0 T, 1..3 R1..R3,
///          4..6 C1..C3, 7 + 3(i−1) + (j−1) c_ij; T = R1 + R2 + R3, R_i = c_i1 + c_i2 + c_i3,
///          C_j = c_1j + c_2j + c_3j.
///   "c<r>" (r >= 2): an r × r cross, h16's shape widened: positions 0 T, 1..r R_i, r+1..2r C_j,
///          2r+1 + r(i−1) + (j−1) c_ij; T = Σ R_i, R_i = Σ_j c_ij, C_j = Σ_i c_ij (c3 has h16's sizes).
///   "f<b>" (b >= 2): a flat dimension of b codes, the total = the sum of the b − 1 others ("f7").
/// ParameterError for another name.
DimensionEquations named_dimension(std::string_view shape, std::string name);

/// A table shape "16x16x16": one dimension per 'x'-separated token, named d1, d2, ...; 13 or h13 is
/// h13, 16 or h16 is h16, c<r> and f<b> are themselves, and any other number b >= 2 is a flat dimension of b codes
/// (b − 1 leaves plus their total), so "7" is f7 and "13x7x7" is h13 × f7 × f7. ParameterError for an
/// empty shape, a token that is none of these, or more than kMaxGeneratedCodes codes in a dimension.
std::vector<DimensionEquations> shape_dimensions(std::string_view shape);

enum class LeafValues {
  kCounts,      ///< a leaf's value is its count
  kMagnitudes,  ///< a leaf's value is the sum of its count's log-normal contributions
};

struct InstanceOptions {
  LeafValues leaf_values = LeafValues::kCounts;
  double mean_count = 5.0;               ///< λ of a leaf's Poisson count (contributors)
  double density = 1.0;                  ///< δ: a leaf is empty (count 0) with probability 1 − δ
  double log_mean = 5.0;                 ///< μ of a contribution's logarithm (magnitudes)
  double log_sd = 1.0;                   ///< σ of a contribution's logarithm
  std::int64_t frequency_threshold = 3;  ///< sensitive: 1 <= count < threshold
  double protection_fraction = 0.1;      ///< of a sensitive cell's value, for both protection levels
  std::int64_t max_cells = 20'000'000;   ///< about 70 bytes a cell
};

/// A protection instance: the dimensions and, per cell in column order, the attributes of the cell
/// list. Zero cells (count 0) are kZero, 1 <= count < frequency_threshold kSensitive, others kSafe;
/// weight = max(1, value); a-priori bounds [0, 2 · the largest value] (at least [0, 2]); sensitive
/// cells get lower = upper protection min(value, max(1, ⌈protection_fraction · value⌉)), others 0;
/// sliding protection 0.
struct Instance {
  std::vector<DimensionEquations> dimensions;
  std::vector<double> values;
  std::vector<std::int64_t> counts;  ///< contributors per cell, aggregated like the values
  std::vector<CellStatus> statuses;
  std::vector<double> weights;
  std::vector<double> lower_bounds;
  std::vector<double> upper_bounds;
  std::vector<double> lower_protection;
  std::vector<double> upper_protection;
  std::vector<double> sliding_protection;

  std::size_t cell_count() const { return values.size(); }
  CellListView cells() const;
};

/// Generates the leaf cells (cells whose every position is a leaf of its dimension) and aggregates
/// them up, dimension by dimension and line by line, each parent along its first equation (codes in an
/// order where a first equation's children come before its parent). Then checks that every equation,
/// the alternative ones included, holds on every line.
/// Draws for the leaf in column c, with RecordRng(seed, kTableInstance): word 0 of counter (c, 0, 0, 0)
/// decides emptiness (empty when its uniform >= density); the count is poisson_draw (risk/loglinear.h)
/// at counter (c, 1, 0, 0); contribution j's standard normal z is normal j mod 4 of block (c, 2 + ⌊j/4⌋,
/// 0, 0) (words 0–1 and 2–3 each give a Box–Muller pair), its value max(1, round(exp(μ + σz))).
/// ParameterError: a dimension failing check_dimension, more cells than max_cells, options out of
/// range, first equations that form a cycle, an equation that does not hold after aggregation (its
/// children are no breakdown of its parent), a value above 2^53.
Instance generate_instance(std::vector<DimensionEquations> dimensions, const InstanceOptions& options,
                           std::uint64_t seed);

}  // namespace sdc::tables
