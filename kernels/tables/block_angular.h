#pragma once
// Multilevel reordering of a sparse matrix into block-angular form (docs/methods tabular.md §2,
// Castro & Baena): k diagonal blocks and a small linking part, so that a table-protection solver can
// factor the blocks independently and handle the linking part by a Schur complement.
//
// Two forms. Dual: the rows are partitioned into k blocks; a column whose non-zeros all lie in one
// block's rows belongs to that block, every other column is a linking column (placed last). Primal: the
// same on the transpose, so the columns are partitioned and a row with non-zeros in more than one
// column block is a linking row (placed last). In hypergraph terms the partitioned entities are the
// vertices and the other index's non-zero sets are the nets; the linking size l is the net-cut.
//
// The algorithm: heavy-edge matching of vertices (edge weight = shared nets) coarsens the hypergraph
// level by level; the coarsest is bisected from several initial partitions (a deterministic one and
// seeded random ones) and refined by Kernighan–Lin / Fiduccia–Mattheyses passes on net-cut gains under
// a balance limit; the bisection is projected back level by level and refined at each; k blocks come
// from recursive bisection (k = 3 splits 1 : 2), each part a multilevel bisection of its own
// sub-hypergraph. The single-level mode skips the coarsening (the comparison the paper makes).
// Where this departs from the letter of tabular.md §2, for quality or speed measured on generated
// tables (block_angular.cpp says how much at each place):
//   * in the primal form a shared net adds 1 / (pins − 1) to the edge weight rather than 1, and every
//     bisection is the best of 4 independently coarsened ones (ReorderingOptions::cycles);
//   * matching ties go by a seeded key of the (vertex, neighbour) pair, not to the smallest index;
//     a pair may weigh at most 2 × total / coarsest_vertices; vertices without nets are not counted
//     by the stopping rule;
//   * equal gains in the gain buckets go to the vertex changed last (the LIFO order of FM buckets);
//   * in the multilevel algorithm a pass ends after 1000 moves without a better prefix rather than when
//     every vertex is locked, and the coarsest level is refined by passes until one brings no
//     improvement, the others by up to two passes, not one (the single-level algorithm keeps full
//     passes until no improvement, as the method has them);
//   * nets that a bisection cuts are left out of the later bisections of its parts (they are linking
//     whatever happens there) instead of being restricted to each part;
//   * a step the method does not have: the finest level of every multilevel bisection (the best of
//     its cycles), on hypergraphs of up to 2^18 vertices, is refined further by minimum cuts in
//     corridors around the cut, alternated with FM passes (flow refinement, as in KaHyPar-MF). FM
//     moves one vertex at a time and stops in local minima that a cut moving groups of vertices
//     escapes: on the generated comparison instances it took the multilevel linking size below
//     single-level KL's in every large case (bench/RESULTS.md).
//
// Shape (c), global on one node: the matrix is not record data, and reordering is near O(nnz) per
// level. Threads (TBB) rate the matching candidates, contract the levels, compute gains, refine the
// initial partitions and split different blocks at the same time; every choice is resolved in a fixed
// order (the seeded visit order, then vertex index; the initial partition's number), so the result
// depends on the seed and never on the thread count.
//
// Memory: the hypergraph in both directions (vertex → nets, net → vertices; 4-byte ids) at every level,
// 8 bytes × nnz for the finest level. A coarser level drops the nets that fall inside one vertex and
// merges identical ones, but on a table's matrix most nets survive many levels, so until the
// uncoarsening frees them the levels can hold about 8 bytes × nnz × log2(vertices / coarsest_vertices)
// in all; plus O(rows + columns) of gains, heaps and permutations per level. The flow refinement
// (levels of up to 2^18 vertices) adds a network of at most two arcs per pin and one per net, 32
// bytes each with its reverse, while it runs.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/csr_matrix.h"

namespace sdc::tables {

enum class BlockAngularForm : std::uint8_t {
  kDual,    ///< rows in blocks, linking columns
  kPrimal,  ///< columns in blocks, linking rows
};

enum class ReorderingAlgorithm : std::uint8_t {
  kMultilevel,   ///< coarsen, partition the coarsest, uncoarsen with refinement
  kSingleLevel,  ///< Kernighan–Lin on the matrix itself
};

struct ReorderingOptions {
  std::int32_t blocks = 2;  ///< k ≥ 2, at most the number of partitioned vertices
  BlockAngularForm form = BlockAngularForm::kDual;
  ReorderingAlgorithm algorithm = ReorderingAlgorithm::kMultilevel;
  /// ε in (0, 1): every block's weight (its number of partitioned rows, or columns in the primal
  /// form) is at most (1 + ε) × total / k, rounded up to a whole vertex.
  double imbalance = 0.05;
  std::uint64_t seed = 0;
  /// Initial bisections of the coarsest level tried (the first is the index-order split, the others
  /// seeded random); the one with the smallest refined net-cut wins, ties to the smaller number.
  std::int32_t initial_partitions = 4;
  /// Independent multilevel bisections tried for every bisection, each coarsened with its own seeded
  /// matching; the one of best quality (least overweight, then smallest net-cut) wins, ties to the
  /// first. They run two at a time, and stop early when the two of a pair reach the same quality.
  /// Costs up to `cycles` times the time and twice the memory of one. 0: by the form, 1 for dual and 4
  /// for primal (whose matchings vary more); the single-level algorithm always runs one.
  std::int32_t cycles = 0;
  /// Stop coarsening at this many vertices or fewer (vertices without nets, which no matching can pair,
  /// not counted)...
  std::int64_t coarsest_vertices = 100;
  double minimum_coarsening_reduction = 0.1;  ///< ... or when a level removes less than this share of them
};

/// ParameterError naming the option: blocks < 2 or more blocks than vertices of `matrix` (in the
/// chosen form), imbalance outside (0, 1), initial_partitions < 1, coarsest_vertices < 2,
/// minimum_coarsening_reduction outside (0, 1).
void check_reordering_options(const CsrView& matrix, const ReorderingOptions& options);

/// One level of the multilevel hierarchy, finest first.
struct CoarseningLevel {
  std::int64_t vertices = 0;
  std::int64_t nets = 0;     ///< nets with at least two vertices (single-vertex nets dropped)
  std::int64_t net_cut = 0;  ///< of the bisection on this level after its refinement (first bisection)
};

/// A reordering. Blocks are numbered 0 .. k − 1; kLinking marks a linking row or column.
struct BlockAngularOrdering {
  static constexpr std::int32_t kLinking = -1;

  BlockAngularForm form = BlockAngularForm::kDual;
  std::int32_t blocks = 0;
  /// Per original row and column: its block or kLinking. In the dual form no row is linking; in the
  /// primal form no column is. A net without non-zeros (an empty column, or an empty row in the primal
  /// form) belongs to block 0.
  std::vector<std::int32_t> row_block;
  std::vector<std::int32_t> column_block;
  /// The permutations: position → original index. Block 0's rows (columns) first, then block 1's,
  /// …, the linking ones last; within a block in original order.
  std::vector<std::int64_t> row_order;
  std::vector<std::int64_t> column_order;
  std::vector<std::int64_t> block_rows;     ///< m_i, rows of each block (linking rows excluded)
  std::vector<std::int64_t> block_columns;  ///< n_i, columns of each block (linking columns excluded)
  std::int64_t linking_size = 0;            ///< l: linking columns (dual) or linking rows (primal)
  /// Linking nets that lie in one block, made linking on request (block_angular_ordering's
  /// linking_nets); 0 from reorder_block_angular, where l is the net-cut.
  std::int64_t made_linking = 0;
  /// Largest block weight over the mean block weight, minus 1 (0 = perfectly balanced).
  double imbalance = 0.0;
  /// The levels of the first bisection (the whole matrix), finest first; one level when single-level.
  std::vector<CoarseningLevel> levels;
};

/// Reorders `matrix` (its pattern; values are ignored, explicit zeros count as non-zeros) into the
/// block-angular form of `options`. Checks the options first (check_reordering_options); ParameterError
/// too for a matrix that breaks the CSR rules or has more than 2^31 − 2 rows or columns. The same
/// matrix, options and seed give the same ordering whatever the thread count.
BlockAngularOrdering reorder_block_angular(const CsrView& matrix, const ReorderingOptions& options);

/// The block-angular ordering of a given partition of the vertices (rows for the dual form, columns
/// for the primal): the nets in one block join it, the others are linking; orders, sizes, linking size
/// and imbalance as reorder_block_angular gives them, no levels. For a partition known from the
/// matrix's origin, such as a table's cells split by the codes of one dimension. The nets listed in
/// `linking_nets` are linking even where they lie in one block (counted in made_linking). ParameterError
/// when `vertex_block` does not have one entry in 0 .. blocks − 1 per vertex, or a listed net is
/// outside the nets.
BlockAngularOrdering block_angular_ordering(const CsrView& matrix, BlockAngularForm form, std::int32_t blocks,
                                            std::vector<std::int32_t> vertex_block,
                                            std::span<const std::int64_t> linking_nets = {});

/// The net-cut of a partition of the vertices: the nets (columns in the dual form, rows in the primal)
/// whose non-zeros lie in more than one block. `vertex_block` has one entry per vertex, each in
/// 0 .. blocks − 1.
std::int64_t net_cut(const CsrView& matrix, BlockAngularForm form, const std::vector<std::int32_t>& vertex_block);

/// Scans the permuted matrix and returns the first way it breaks the reported block pattern, or none:
/// the permutations are not permutations, a row and a column of different blocks share a non-zero
/// outside the linking part, a block's reported size or the linking size differs from what the
/// assignment gives, linking columns (rows) that lie in one block other than the made_linking ones,
/// or an imbalance above the one reported.
std::optional<std::string> block_pattern_problem(const CsrView& matrix, const BlockAngularOrdering& ordering);

}  // namespace sdc::tables
