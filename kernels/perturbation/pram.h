#pragma once
// PRAM, the post-randomisation method (Gouweleeuw, Kooiman, Willenborg & de Wolf 1998; docs/methods
// perturbation.md §1; docs/pram.md): each record's category k of a categorical variable is replaced by a
// category drawn from row k of a Markov (transition) matrix P, p_kl = P(released l | original k).
//
// Shape: element-wise draws after a mergeable pass. Pass 1 counts records per (stratum, category)
// (integer counts, merged in any order); the matrices are pure functions of those counts, the
// parameters and the seed, so every rank builds the same ones; pass 2 draws each record's category from
// its row through an alias table, keyed by the record's global row id (docs/rng.md, kPram). The
// estimation, risk and information-loss functions work on the merged K-vectors of counts, K_X×K_Y
// two-way tables of counts, and per-category sums of a continuous variable (exact sums merged over
// ranks before they get here).

#include <Eigen/Dense>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/core/record_rng.h"

namespace sdc {

__extension__ using PramWide = unsigned __int128;  // GCC/Clang: the high word of a 64×64 product

/// A K×K transition matrix, row-major: row k is the distribution of the released category of a record
/// whose original category is k.
using PramMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---- matrix families (perturbation.md §1) ----

/// nE(p): diagonal p, off-diagonal (1 − p)/(K − 1). K = 1 gives [1].
PramMatrix pram_equal_matrix(std::int64_t categories, double p);

/// nB(p; b): diagonal p; non-zero only where |k − l| < b; the mass 1 − p shared equally by the
/// off-diagonal band entries of each row (a row without any, K = 1 or b = 1, keeps 1 on the diagonal).
PramMatrix pram_band_matrix(std::int64_t categories, double p, std::int64_t band);

/// nF(p) for K >= 3 categories with counts T (N = ΣT): p_kk = p and
/// p_kl = (1 − p)(N − T_k − T_l)/((K − 2)(N − T_k)): off-diagonal mass goes preferentially to rare
/// targets. A row whose category holds every record (N = T_k) shares 1 − p equally, the limit of equal
/// T_l. Throws std::invalid_argument for K < 3.
PramMatrix pram_frequency_matrix(std::span<const std::int64_t> counts, double p);

/// Block(m; M_1; ...; M_m): the blocks on the diagonal in order, zeros elsewhere; a 1×1 block [1] keeps
/// its category.
PramMatrix pram_block_matrix(std::span<const PramMatrix> blocks);

/// One family of perturbation.md §1 with its parameters, as a command line spells it (docs/pram.md):
/// nE(p), nB(p; b), nF(p), or kKeep (the identity: "1" in a Block keeps its category). `size` is the
/// number of categories it covers as a block of a Block matrix.
enum class PramFamilyKind { kEqual, kBand, kFrequency, kKeep };
struct PramFamily {
  PramFamilyKind kind = PramFamilyKind::kEqual;
  double p = 1.0;
  std::int64_t band = 1;
  std::int64_t size = 1;
};

/// The family's matrix over counts.size() categories; nF is built from `counts` (at least 3 of them:
/// the step checks it, the kernel throws InternalError).
PramMatrix pram_family_matrix(const PramFamily& family, std::span<const std::int64_t> counts);

/// Block(m; M_1; ...; M_m) of families: block j covers the next blocks[j].size categories in level
/// order, and nF inside a block uses the counts of that block's categories only (its own N). The sizes
/// must add up to counts.size() (the step checks it, the kernel throws InternalError).
PramMatrix pram_family_block_matrix(std::span<const PramFamily> blocks, std::span<const std::int64_t> counts);

/// P_kk = d_k, P_kl = (1 − d_k)/(K − 1): step 1 of the reference construction for a given diagonal.
PramMatrix pram_diagonal_matrix(std::span<const double> diagonal);

/// The reference construction's d_k ~ U(pd, 1), k = 0..K−1, as pd + (1 − pd)·u with u the uniform of
/// RecordRng(seed, kPramMatrix) at counter (k, stratum, variable, 0): a function of the variable's
/// position in the step, the stratum id and the category only — not of ranks, threads or order.
std::vector<double> pram_draw_diagonal(std::uint64_t seed, std::uint64_t variable, std::uint64_t stratum,
                                       std::int64_t categories, double pd);

// ---- invariant PRAM ----

/// Q_lk = P(original k | released l) = p_kl T_k / Σ_m p_ml T_m. A released category that no record can
/// reach (Σ_m p_ml T_m = 0) gets row e_l (it maps back to itself), so R = P Q stays a Markov matrix.
PramMatrix pram_backward_matrix(const PramMatrix& p, std::span<const std::int64_t> counts);

/// R = P Q: invariant, Rᵀ T = T (perturbation.md §1, "Invariant PRAM in general").
PramMatrix pram_invariant_matrix(const PramMatrix& p, std::span<const std::int64_t> counts);

/// α·R + (1 − α)·I (still invariant when R is).
PramMatrix pram_blend_with_identity(const PramMatrix& r, double alpha);

/// Steps 1–4 of the reference construction for one variable in one stratum: P from the diagonal, and
/// the matrix the records are drawn from, R_s = α·P Q + (1 − α)·I with Q from the stratum's counts.
struct ReferencePram {
  PramMatrix p;
  PramMatrix drawn;
};
ReferencePram pram_reference_matrices(std::span<const double> diagonal, std::span<const std::int64_t> counts,
                                      double alpha);

// ---- user matrices ----

/// The tolerance of a row sum for K categories: K times the double epsilon 2.2e-16 (perturbation.md
/// §1 asks for machine epsilon; K terms read from decimal text round K times).
double pram_default_row_sum_tolerance(std::int64_t categories);

/// The first row of `p` that is not a distribution: a negative or non-finite entry, or |Σ_l p_kl − 1|
/// above `tolerance` (the sum is exact before the comparison).
struct MatrixRowProblem {
  std::int64_t row = 0;
  std::string what;  ///< "entry 3 is negative", "sums to 0.99 (off by -0.01), not 1 within 4.4e-16"
};
std::optional<MatrixRowProblem> pram_check_matrix(const PramMatrix& p, double tolerance);

// ---- per-record draws ----

/// Alias tables (Walker 1977, Vose 1991) of every row of a transition matrix: O(1) per draw. Built in
/// exact integer arithmetic from weights w_kl = round(p_kl · 2^53) (at least 1 for a positive p_kl), so
/// the tables are a deterministic function of the matrix, a zero entry is never drawn, and each
/// category is drawn with probability w_kl / Σ_l w_kl up to 2^-64.
class PramSampler {
 public:
  explicit PramSampler(const PramMatrix& p);

  std::int64_t categories() const noexcept { return categories_; }

  /// The exact probability (up to the 2^-64 of the column and coin draws) that draw() takes `from` to
  /// `to`, read back from the tables: what the tests compare with the matrix.
  double probability(std::int32_t from, std::int32_t to) const;

  /// The released category of original category `from` for the two 64-bit words `column_bits` (picks a
  /// column uniformly by a 64×64 → 128-bit multiply) and `coin_bits` (keeps it or takes its alias).
  std::int32_t draw(std::int32_t from, std::uint64_t column_bits, std::uint64_t coin_bits) const {
    const auto k = static_cast<std::size_t>(categories_);
    const auto column = static_cast<std::size_t>((static_cast<PramWide>(column_bits) * k) >> 64);
    const std::size_t cell = static_cast<std::size_t>(from) * k + column;
    const auto coin =
        static_cast<std::uint64_t>((static_cast<PramWide>(coin_bits) * totals_[static_cast<std::size_t>(from)]) >> 64);
    return coin < thresholds_[cell] ? static_cast<std::int32_t>(column) : aliases_[cell];
  }

 private:
  std::int64_t categories_ = 0;
  std::vector<std::uint64_t> totals_;      ///< Σ_l w_kl per row
  std::vector<std::uint64_t> thresholds_;  ///< K×K: keep column l when coin < threshold
  std::vector<std::int32_t> aliases_;      ///< K×K: else take this category
};

/// Draws the released codes of records [0, original.size()) of one variable: record i (global row id
/// first_row_id + i) of stratum index strata[i] (empty: stratum 0 for all) is drawn by
/// samplers[stratum] from the words 0 and 1 of RecordRng(seed, kPram) at counter (row id, variable, 0,
/// 0). Missing codes stay missing. Writes `released` and sets changed[i] = 1 where the code changed
/// (changed untouched elsewhere, so several variables can share one flag vector); returns the number
/// of records whose code changed.
std::int64_t pram_draw(std::span<const std::int32_t> original, std::span<const std::int32_t> strata,
                       std::span<const PramSampler> samplers, std::uint64_t seed, std::uint64_t variable,
                       std::int64_t first_row_id, std::span<std::int32_t> released, std::span<std::uint8_t> changed);

/// pram_draw on all threads, in blocks of 65 536 records: the draws are keyed by row id, so blocks
/// and threads change nothing.
std::int64_t pram_draw_in_blocks(std::span<const std::int32_t> original, std::span<const std::int32_t> strata,
                                 std::span<const PramSampler> samplers, std::uint64_t seed, std::uint64_t variable,
                                 std::int64_t first_row_id, std::span<std::int32_t> released,
                                 std::span<std::uint8_t> changed);

// ---- estimation (perturbation.md §1, "Estimation") ----

/// E(T_X | ξ) = Pᵀ T_ξ.
Eigen::VectorXd pram_expected_counts(const PramMatrix& p, std::span<const std::int64_t> original);

/// T̂ = (P⁻¹)ᵀ T_X, unbiased for T_ξ; none when P is singular. Entries may be negative.
std::optional<Eigen::VectorXd> pram_unbiased_estimate(const PramMatrix& p, std::span<const std::int64_t> released);

/// (P⁻¹)ᵀ s for any per-category totals s of the released data, e.g. the sums of a continuous variable
/// per released category: unbiased for the totals per original category, because a record's draw does
/// not depend on the values it carries. None when P is singular.
std::optional<Eigen::VectorXd> pram_unbiased_totals(const PramMatrix& p, std::span<const double> released);

/// E(T_XY | ξ, η) = P_Xᵀ T_ξη P_Y for a K_X×K_Y table of original counts (row-major: row j holds the
/// cells of category j of the first variable), when the two variables are drawn independently given
/// the originals (distinct counters, docs/rng.md). An empty (0×0) matrix stands for the identity: a
/// variable that is not PRAMmed.
Eigen::MatrixXd pram_two_way_expected(const PramMatrix& p_row, const PramMatrix& p_column,
                                      std::span<const std::int64_t> original, std::int64_t rows, std::int64_t columns);

/// T̂ = (P_X⁻¹)ᵀ T_XY P_Y⁻¹ from a K_X×K_Y table of released counts (row-major), unbiased for the original
/// table: two solves with the K_X×K_X and K_Y×K_Y matrices, never the Kronecker product
/// (P_X ⊗ P_Y)⁻ᵀ vec(T_XY) of perturbation.md §1, which is the same. An empty (0×0) matrix stands for
/// the identity. None when a matrix is singular. Entries may be negative.
std::optional<Eigen::MatrixXd> pram_two_way_estimate(const PramMatrix& p_row, const PramMatrix& p_column,
                                                     std::span<const std::int64_t> released, std::int64_t rows,
                                                     std::int64_t columns);

/// Var(T_X | ξ) = Σ_k T_ξ(k)·(diag(p_k·) − p_k·ᵀ p_k·).
Eigen::MatrixXd pram_released_variance(const PramMatrix& p, std::span<const std::int64_t> original);

/// Var(T̂) = (P⁻¹)ᵀ Var(T_X | ξ) P⁻¹; none when P is singular.
std::optional<Eigen::MatrixXd> pram_estimate_variance(const PramMatrix& p, std::span<const std::int64_t> original);

/// The diagonal of Var(T̂) alone, Var(T̂)_kk = Σ_m T_m Σ_j p_mj (P⁻¹)_jk² − T_k (from P P⁻¹ = I): O(K²)
/// after the inverse, without the K×K products. None when P is singular.
std::optional<Eigen::VectorXd> pram_estimate_variance_diagonal(const PramMatrix& p,
                                                               std::span<const std::int64_t> original);

// ---- PRAM risk (de Wolf, after Rienstra) ----

struct PramRisk {
  std::vector<double> risk;  ///< R̂(k) = p_kk T(k) / Σ_l p_lk T(l); NaN where T(k) = 0
  std::vector<bool> rare;    ///< 0 < T(k) < τ (the classical threshold rule)
  std::vector<bool> safe;    ///< rare and R̂(k) <= T(k)/τ; false for categories that are not rare
};
PramRisk pram_risk(const PramMatrix& p, std::span<const std::int64_t> original, double tau);

// ---- information loss (perturbation.md §1, "PRAM information loss") ----

/// RD_d, mRD and #Inf of d-way cells, the table vectorised in any order (a two-way table row-major).
struct PramRelativeDifference {
  double rd = 0.0;            ///< median over T(c) > 0 of |T(c) − T̂(c)| / T(c); NaN without such cells
  double mrd = 0.0;           ///< maximum of those
  std::int64_t infinite = 0;  ///< #Inf: cells with T(c) = 0 but |T̂(c)| > 1e-9·max(1, N) (rounding of the solve)
};
PramRelativeDifference pram_relative_difference(std::span<const std::int64_t> original,
                                                std::span<const double> estimate);

struct PramInformationLoss {
  double rd = 0.0;            ///< median over T(k) > 0 of |T(k) − T̂(k)| / T(k); NaN without such cells
  double mrd = 0.0;           ///< maximum of those
  std::int64_t infinite = 0;  ///< #Inf: cells with T(k) = 0 but |T̂(k)| > 1e-9·max(1, N) (rounding of the solve)
  double cv = 0.0;            ///< median over T(k) > 0 of sqrt(Var(T̂)(k,k)) / T(k)
  double mcv = 0.0;           ///< maximum of those
};
/// `estimate` T̂ and `variance` the diagonal of Var(T̂), both of length K. Medians of an even number of
/// cells average the two middle values (R's median).
PramInformationLoss pram_information_loss(std::span<const std::int64_t> original, std::span<const double> estimate,
                                          std::span<const double> variance);

/// The group-mean regression measures of a continuous y on one PRAMmed variable: β = diag(T_ξ)⁻¹ T^y_ξ
/// (the mean of y per original category) against β̃ = diag(T̂_ξ)⁻¹ (P⁻¹)ᵀ T^y_X (its estimate from the
/// released file). Categories with T_ξ(k) = 0 have no mean, and those with β_k = 0 no relative
/// difference: both are left out (and counted).
struct PramRegressionLoss {
  std::vector<double> beta;           ///< β_k; NaN where T_ξ(k) = 0
  std::vector<double> beta_estimate;  ///< β̃_k; NaN where T̂_ξ(k) is zero up to the solve's rounding
  double lrd = 0.0;                   ///< median over the measured categories of |β − β̃| / |β|; NaN without any
  double mlrd = 0.0;                  ///< maximum of the finite ones
  std::int64_t measured = 0;          ///< categories with T_ξ(k) > 0 and β_k ≠ 0
  std::int64_t empty = 0;             ///< categories with T_ξ(k) = 0: no mean, left out
  std::int64_t zero_mean = 0;         ///< categories with T_ξ(k) > 0 and β_k = 0: no relative difference, left out
  std::int64_t infinite = 0;  ///< measured categories with T̂_ξ(k) = 0 up to rounding: |β − β̃|/|β| = ∞,
                              ///< in the median (last), not in the maximum
};
/// `counts` T_ξ and `sums` T^y_ξ of the original file; `estimated_counts` T̂_ξ and `estimated_sums`
/// (P⁻¹)ᵀ T^y_X from the released one (summed over strata), all of length K, over the same records
/// (those with both a category and a value of y). Medians as in pram_information_loss.
PramRegressionLoss pram_regression_loss(std::span<const std::int64_t> counts, std::span<const double> sums,
                                        std::span<const double> estimated_counts,
                                        std::span<const double> estimated_sums);

}  // namespace sdc
