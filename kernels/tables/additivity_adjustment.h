#pragma once
// Restoring the additivity of a perturbed table by weighted least squares (the step after the cell key
// method or noise when published tables must add up; controlled tabular adjustment without bounds):
//
//   x* = argmin Σ_j w_j (x_j − x~_j)²  subject to  A x = 0,
//
// whose solution is x* = x~ − W⁻¹ Aᵀ y with (A W⁻¹ Aᵀ) y = A x~. A table's equations are linearly
// dependent (a 2-D table with margins has rank m − 1), so A W⁻¹ Aᵀ is singular; x* is still unique.
// Both solvers factor M_δ = A W⁻¹ Aᵀ + δ I (δ = `regularization` × the mean diagonal of A W⁻¹ Aᵀ) and
// refine x_{t+1} = x_t − W⁻¹ Aᵀ M_δ⁻¹ A x_t from x_0 = x~ until the equations hold to the tolerance;
// each refinement step shrinks the residual by about δ / (λ + δ), λ the smallest non-zero eigenvalue.
// Not getting there within max_refinements is no error: the result reports the residual reached.
//
// Two solvers of the same system:
// - block-angular (docs/methods tabular.md §2, "use in an interior-point solver"): with the columns in
//   k blocks and the linking rows last (the primal form of block_angular.h), M = [[B, C], [Cᵀ, D]] with
//   B = blockdiag(A_i W_i⁻¹ A_iᵀ) over each block's own rows, C stacking A_i W_i⁻¹ L_iᵀ, and
//   D = L W⁻¹ Lᵀ over the linking rows L. The blocks are factored independently (sparse Cholesky,
//   CHOLMOD, one block per task or rank); the linking part is solved by preconditioned conjugate gradients
//   on the Schur complement S = D − Cᵀ B⁻¹ C, the preconditioner the truncated power series
//   Σ_{i ≤ h} (D⁻¹ Cᵀ B⁻¹ C)^i D⁻¹; then B y₁ = g₁ − C y₂. C is applied block by block, never formed;
//   every process forms and factors D_δ itself from the linking rows. Conjugate gradients also stop
//   once the Schur residual r is below half the equations' threshold: the step leaves the equations
//   the residual δ y + (0, r), so a smaller r gains nothing, and reaching it would mean resolving S's
//   eigenvalues of order δ (the table's dependent equations), often hundreds of iterations.
// - direct: one sparse Cholesky (CHOLMOD) of the whole M_δ, no reordering; the reference the
//   block-angular solver is checked and timed against.
//
// Shape: blocks are the unit of work. A process builds and factors only the blocks it owns; every
// quantity that needs all blocks (the Schur product Cᵀ B⁻¹ C v, the linking residual, x* itself) is
// a per-block segment that its owner fills and an injected BlockExchange shares, and the segments are
// summed in block order, so the bits do not depend on which process or thread owns which block.
//
// Memory: block-angular: the owned blocks' A_i and L_i (16 bytes per non-zero, A once over all
// processes), their factors (the Cholesky fill of A_i W_i⁻¹ A_iᵀ), D_δ and its factor (l × l, as
// sparse as the linking rows' overlaps), and O(n + k × l) vectors (the shared segments). Direct: Aᵀ
// and A W^-1/2 in CHOLMOD's form (2 × 16 bytes × nnz) and the factor of M_δ, whose fill grows much
// faster than nnz on 3-D tables (M's separators are dense).

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/core/csr_matrix.h"
#include "kernels/tables/block_angular.h"

namespace sdc::tables {

struct AdjustmentOptions {
  /// Stop refining when max_i |(A x)_i| ≤ tolerance × max(1, max_j |x~_j|).
  double tolerance = 1e-12;
  std::int32_t max_refinements = 50;
  double regularization = 1e-10;  ///< δ relative to the mean diagonal of A W⁻¹ Aᵀ
  /// Conjugate gradients on the Schur complement stop at a relative residual below this (or earlier,
  /// once the residual is below half the equations' threshold; see above).
  double pcg_tolerance = 1e-14;
  std::int32_t max_pcg_iterations = 2000;
  std::int32_t preconditioner_terms = 0;  ///< h of the power series (0: D⁻¹ alone)
};

/// ParameterError naming the option: a tolerance or regularization not positive and finite,
/// max_refinements or max_pcg_iterations < 1, preconditioner_terms < 0.
void check_adjustment_options(const AdjustmentOptions& options);

/// Checks of the inputs: ParameterError when `perturbed` or `weights` does not have
/// one entry per column of `matrix`, or a weight is not positive and finite (naming the column), or a
/// perturbed value is not finite (naming the column). Both solvers run both checks first, and refuse a
/// matrix that breaks the CSR rules with an InternalError.
void check_adjustment_inputs(const CsrView& matrix, std::span<const double> perturbed, std::span<const double> weights);

struct AdjustmentResult {
  std::vector<double> adjusted;          ///< x*, one per column
  double max_constraint_residual = 0.0;  ///< max_i |(A x*)_i|
  double weighted_distance = 0.0;        ///< sqrt(Σ_j w_j (x*_j − x~_j)²)
  double max_absolute_change = 0.0;      ///< max_j |x*_j − x~_j|
  std::int32_t refinements = 0;          ///< solves with M_δ (0 for an additive x~)
  std::int64_t pcg_iterations = 0;       ///< summed over the refinements (0 for the direct solver)
  double factor_seconds = 0.0;           ///< building and factoring (blocks and D, or the whole M_δ)
  double solve_seconds = 0.0;            ///< refinements
};

/// The direct solver: CHOLMOD on the whole M_δ.
AdjustmentResult adjust_additivity_direct(const CsrView& matrix, std::span<const double> perturbed,
                                          std::span<const double> weights, const AdjustmentOptions& options);

/// Shares per-block segments between the processes that own the blocks. `values` is laid out block by
/// block, block b's segment at [offsets[b], offsets[b + 1]); on entry the caller's own blocks' segments
/// are filled, on return every segment is. A single process owns every block and shares nothing.
class BlockExchange {
 public:
  virtual ~BlockExchange() = default;
  virtual void share(std::span<double> values, std::span<const std::int64_t> offsets) = 0;
};

/// The exchange of a process that owns every block.
class LocalBlockExchange final : public BlockExchange {
 public:
  void share(std::span<double> /*values*/, std::span<const std::int64_t> /*offsets*/) override {}
};

/// What CHOLMOD's symbolic analysis predicts for the Cholesky factor of R W⁻¹ Rᵀ + δI, R the given
/// rows of `matrix` (the pattern only: the weights do not change it), with the ordering the solvers'
/// factorisation chooses (AMD, or METIS when AMD's fill is large).
struct FactorPrediction {
  double flops = 0.0;     ///< floating-point operations of the numeric factorisation
  double nonzeros = 0.0;  ///< non-zeros of the factor
};
FactorPrediction predict_normal_factor(const CsrView& matrix, std::span<const std::int64_t> rows);

/// Conjugate-gradient iterations the work prediction below assumes: flat and hierarchical cubes need
/// 3 to 17 (bench/RESULTS.md), nested geographies hundreds, which no structural count foresees.
inline constexpr double kPredictedSchurIterations = 20.0;

/// The predicted floating-point work of adjust_additivity_block_angular, given the factors of its
/// blocks' own rows (B, all blocks together) and of its linking rows (D): factoring both, then
/// kPredictedSchurIterations iterations, each a solve with every factor (4 operations per factor
/// non-zero) and two products with A. For comparing orderings of one matrix, not a time.
double predicted_block_angular_work(const FactorPrediction& blocks, const FactorPrediction& linking,
                                    std::int64_t matrix_nonzeros);

/// The block-angular solver. `ordering` must be of the primal form for `matrix`: InternalError when it
/// is not primal, puts a block's row on a column of another block, or reports sizes or permutations
/// that its row and column assignment does not give (what the solver relies on; unlike
/// block_pattern_problem, balance is not checked). `owned_blocks` lists, in increasing order, the
/// blocks this process factors (InternalError otherwise); over all processes every block is owned
/// exactly once.
/// Every process returns the same result bits (the adjusted values of every column), whatever the
/// owners and the thread count.
AdjustmentResult adjust_additivity_block_angular(const CsrView& matrix, std::span<const double> perturbed,
                                                 std::span<const double> weights, const BlockAngularOrdering& ordering,
                                                 std::span<const std::int32_t> owned_blocks, BlockExchange& exchange,
                                                 const AdjustmentOptions& options);

}  // namespace sdc::tables
